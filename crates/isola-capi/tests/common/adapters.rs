//! What the adapters' tests share: the adapters built with `make` against
//! the libisola this test run built, a real isolad in a child process
//! (so a test can kill it with SIGKILL and start it again), its metrics
//! read over HTTP, and programs run with a bound on their time.
//!
//! Without a C compiler, `make`, or OpenSSL's and zlib's headers the
//! tests say so and pass, unless `ISOLA_REQUIRE_ADAPTERS=1` (as CI sets),
//! when they fail.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// This process's user id.
pub fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// The folder holding the `libisola.so` this test run built (cargo builds
/// the library with all its crate types for the tests, into `deps`, beside
/// the test's binary), checked to be newer than every source file.
pub fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().to_path_buf();
    let lib = dir.join("libisola.so");
    let built = std::fs::metadata(&lib)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}", lib.display()));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for f in std::fs::read_dir(&src).unwrap() {
        let f = f.unwrap().path();
        let changed = std::fs::metadata(&f).unwrap().modified().unwrap();
        assert!(
            changed <= built,
            "{} is older than {}",
            lib.display(),
            f.display()
        );
    }
    dir
}

/// The built adapters.
#[derive(Debug, Clone)]
pub struct Adapters {
    /// The folder holding the OpenSSL provider `isola.so`
    /// (`-provider-path`, or `OPENSSL_MODULES`).
    pub provider_dir: PathBuf,
    /// The zlib interposer, for `LD_PRELOAD`.
    pub zlib: PathBuf,
    /// The common layer's test driver (`adapters/common/tests/adapter_probe.c`).
    pub probe: PathBuf,
    /// Where libisola is.
    pub lib_dir: PathBuf,
}

/// What is missing to build the adapters here, if anything.
fn missing_prerequisites() -> Option<String> {
    let works = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !works("cc", &["--version"]) {
        return Some("no working `cc` on the PATH".into());
    }
    if !works("make", &["--version"]) {
        return Some("no `make` on the PATH".into());
    }
    let headers = Command::new("cc")
        .args(["-E", "-x", "c", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .and_then(|mut c| {
            c.stdin
                .take()
                .unwrap()
                .write_all(b"#include <openssl/core_dispatch.h>\n#include <zlib.h>\n")?;
            c.wait()
        })
        .is_ok_and(|s| s.success());
    (!headers).then(|| "no OpenSSL 3 or zlib headers (Debian: libssl-dev, zlib1g-dev)".into())
}

/// The adapters, built once per test binary; `None` (the test is skipped,
/// saying why) where they cannot be built here, unless
/// `ISOLA_REQUIRE_ADAPTERS=1`. A build that fails with everything present
/// fails the test.
pub fn adapters() -> Option<Adapters> {
    static BUILT: OnceLock<Option<Adapters>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if let Some(why) = missing_prerequisites() {
                if std::env::var("ISOLA_REQUIRE_ADAPTERS").as_deref() == Ok("1") {
                    panic!("{why}, and ISOLA_REQUIRE_ADAPTERS=1");
                }
                eprintln!("skipped: {why} (set ISOLA_REQUIRE_ADAPTERS=1 to make this a failure)");
                return None;
            }
            let lib_dir = library_dir();
            let out = lib_dir.join("../adapters");
            let made = Command::new("make")
                .arg("-C")
                .arg(root().join("adapters"))
                .arg(format!("ISOLA_LIB={}", lib_dir.display()))
                .arg(format!("OUT={}", out.display()))
                .args(["all", "probe"])
                .output()
                .unwrap();
            assert!(
                made.status.success(),
                "make -C adapters failed:\n{}{}",
                String::from_utf8_lossy(&made.stdout),
                String::from_utf8_lossy(&made.stderr)
            );
            let out = out.canonicalize().unwrap();
            Some(Adapters {
                provider_dir: out.clone(),
                zlib: out.join("libisola_zlib.so"),
                probe: out.join("adapter_probe"),
                lib_dir,
            })
        })
        .clone()
}

/// The environment variable that makes a test binary run a daemon
/// (`isolad_child`) instead of its tests.
const CHILD_CONFIG: &str = "ISOLA_TEST_ISOLAD_CONFIG";

/// Not a test: the body of the child process [`Isolad::start`] runs (this
/// test binary again, asked for this ignored test alone, with the
/// configuration's path in the environment). It serves until killed.
#[test]
#[ignore = "the daemon process of the adapters' tests, run by Isolad::start"]
fn isolad_child() {
    let Ok(path) = std::env::var(CHILD_CONFIG) else {
        return;
    };
    let path = PathBuf::from(path);
    let text = std::fs::read_to_string(&path).unwrap();
    let config = isola_daemon::DaemonConfig::parse(&text, &path).unwrap_or_else(|e| panic!("{e}"));
    let _daemon = isola_daemon::Daemon::start(config).unwrap_or_else(|e| panic!("{e}"));
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// A real isolad in a child process.
#[derive(Debug)]
pub struct Isolad {
    /// Its folder (configuration, sockets).
    pub dir: PathBuf,
    /// The tenants' socket.
    pub socket: PathBuf,
    /// The admin socket.
    pub admin: PathBuf,
    /// Where it serves its metrics.
    pub metrics: SocketAddr,
    config: PathBuf,
    child: Option<Child>,
}

impl Isolad {
    /// Starts a daemon in a fresh folder named after `name`, configured by
    /// `body` (its engines and tenants; the `[daemon]` table is written
    /// here), and waits until it serves.
    pub fn start(name: &str, body: &str) -> Isolad {
        let dir = std::env::temp_dir().join(format!("isola-adapters-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A free port, chosen now and kept across restarts.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = dir.join("isolad.toml");
        std::fs::write(
            &config,
            format!("[daemon]\nsocket = \"isolad.sock\"\nmetrics = \"127.0.0.1:{port}\"\n\n{body}"),
        )
        .unwrap();
        let mut d = Isolad {
            socket: dir.join("isolad.sock"),
            admin: dir.join("isolad.sock.admin"),
            metrics: SocketAddr::from(([127, 0, 0, 1], port)),
            dir,
            config,
            child: None,
        };
        d.restart();
        d
    }

    /// Starts the daemon again (after [`Isolad::kill9`]), and waits until it
    /// serves.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "the daemon is already running");
        let _ = std::fs::remove_file(&self.socket);
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "common::adapters::isolad_child",
                "--ignored",
                "--nocapture",
            ])
            .env(CHILD_CONFIG, &self.config)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !(self.socket.exists() && TcpStream::connect(self.metrics).is_ok()) {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("isolad exited at start: {status}");
            }
            assert!(Instant::now() < deadline, "isolad did not start within 20 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the daemon with SIGKILL (nothing drains, nothing is answered).
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops (SIGSTOP) or continues (SIGCONT) the daemon: a daemon that
    /// hangs.
    pub fn freeze(&self, frozen: bool) {
        let pid = self.child.as_ref().expect("the daemon is running").id();
        let signal = if frozen { "-STOP" } else { "-CONT" };
        let ok = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// The metrics, as Prometheus' text.
    pub fn scrape(&self) -> String {
        let mut s = TcpStream::connect(self.metrics).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: isolad\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text.split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
            .unwrap_or_default()
    }

    /// The sum of counter `metric` (`isola_tasks_completed_total`, ...) over
    /// the series of `tenant` whose labels also include every one of
    /// `labels` (`reason="absent"`, ...).
    pub fn counter(&self, metric: &str, tenant: &str, labels: &[&str]) -> f64 {
        let tenant_label = format!("tenant=\"{tenant}\"");
        self.scrape()
            .lines()
            .filter(|l| l.starts_with(&format!("{metric}{{")))
            .filter(|l| l.contains(&tenant_label) && labels.iter().all(|x| l.contains(x)))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// Tasks of `tenant` isolad completed with their output.
    pub fn completed(&self, tenant: &str) -> f64 {
        self.counter("isola_tasks_completed_total", tenant, &[])
    }
}

impl Drop for Isolad {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
        }
        self.kill9();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A tenant table granting `name` to this user, with `extra` keys.
pub fn tenant(name: &str, extra: &str) -> String {
    format!("[[tenant]]\nname = \"{name}\"\nusers = [{}]\n{extra}\n", uid())
}

/// One engine `acc` under `policy`, with one worker.
pub fn engine(policy: &str) -> String {
    format!("[[engine]]\nname = \"acc\"\npolicy = \"{policy}\"\n\n")
}

/// Runs `cmd` with `stdin`, failing the test if it runs past `limit` (a
/// hang): its output.
pub fn run_bounded(cmd: &mut Command, stdin: &[u8], limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} ran past {limit:?}: it hung");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = feeder.join();
    Output {
        status,
        stdout: reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

/// A command with none of the adapters' settings inherited.
pub fn clean(program: &str) -> Command {
    let mut cmd = Command::new(program);
    for var in [
        "ISOLA_SOCKET",
        "ISOLA_TENANT",
        "ISOLA_FALLBACK",
        "ISOLA_TIMEOUT_MS",
        "ISOLA_RETRY_MS",
        "ISOLA_MIN_BYTES",
        "ISOLA_STATS",
        "OPENSSL_CONF",
        "OPENSSL_MODULES",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// `openssl ARGS` with the provider loaded by flags, as `tenant` of the
/// daemon on `socket`, offloading from `min_bytes`. The flags come right
/// after the command's name (`speed` fetches its `-evp` algorithm as it
/// reads that option, with the property query read so far), and prefer
/// the provider (`-propquery`: without it OpenSSL takes `default`, the
/// provider whose name sorts first).
pub fn openssl_as(a: &Adapters, socket: &Path, tenant: &str, min_bytes: i64, args: &[&str]) -> Command {
    let mut cmd = clean("openssl");
    cmd.arg(args[0])
        .arg("-provider-path")
        .arg(&a.provider_dir)
        .args([
            "-provider",
            "isola",
            "-provider",
            "default",
            "-propquery",
            "?provider=isola",
        ])
        .args(&args[1..])
        .env("ISOLA_SOCKET", socket)
        .env("ISOLA_TENANT", tenant)
        .env("ISOLA_MIN_BYTES", min_bytes.to_string());
    cmd
}

/// An openssl.cnf activating the provider (module in `a`, `settings` in
/// its section) and the default provider, preferring isola.
pub fn openssl_conf(dir: &Path, a: &Adapters, settings: &str) -> PathBuf {
    let path = dir.join("openssl.cnf");
    std::fs::write(
        &path,
        format!(
            "openssl_conf = openssl_init\n\n[openssl_init]\nproviders = provider_sect\n\
             alg_section = algorithm_sect\n\n[provider_sect]\nisola = isola_sect\n\
             default = default_sect\n\n[isola_sect]\nmodule = {}\nactivate = 1\n{settings}\n\n\
             [default_sect]\nactivate = 1\n\n[algorithm_sect]\ndefault_properties = ?provider=isola\n",
            a.provider_dir.join("isola.so").display()
        ),
    )
    .unwrap();
    path
}

/// The ISOLA_STATS lines an adapter wrote to `file`, parsed.
pub fn stats_lines(file: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}
