//! The zlib interposer (`adapters/zlib`, `libisola_zlib.so`) under
//! programs no one here wrote or that only call zlib: Python's `zlib`
//! module and a small C program (`adapters/zlib/tests/zlib_calls.c`),
//! against a real isolad in a child process. Every test checks through
//! isolad's metrics (and the interposer's `ISOLA_STATS` line) where the
//! work ran: a test whose calls silently stayed in software fails.
//!
//! The answers are checked against the stock zlib: Python's and the C
//! program's results run without the interposer, and `gzip -t`.

mod common;

use common::adapters::{adapters, engine, root, run_bounded, stats_lines, tenant, Adapters, Isolad};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The Python script that drives the zlib module.
fn script() -> PathBuf {
    root().join("adapters/zlib/tests/zlib_check.py")
}

/// Whether python3 runs here (CI installs it; elsewhere its absence skips
/// the Python tests, unless ISOLA_REQUIRE_ADAPTERS=1).
fn python_here() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("ISOLA_REQUIRE_ADAPTERS").as_deref() != Ok("1"),
            "no python3, and ISOLA_REQUIRE_ADAPTERS=1"
        );
        eprintln!("skipped: no python3 on the PATH");
    }
    ok
}

/// How a program is run: under the interposer as a tenant of a daemon
/// (its socket) or of none, or without the interposer (stock zlib).
enum Under<'a> {
    Interposer {
        socket: &'a Path,
        env: &'a [(&'a str, &'a str)],
        stats: &'a Path,
    },
    Stock,
}

/// `cmd` run under `under`, bounded in time. A call waits up to 30 s for
/// isolad (a loaded test machine must not turn into fallbacks the tests
/// count as failures; the kill test checks the bound).
fn run(a: &Adapters, mut cmd: Command, under: Under<'_>) -> Output {
    if let Under::Interposer { socket, env, stats } = under {
        cmd.env("LD_PRELOAD", &a.zlib)
            .env("ISOLA_SOCKET", socket)
            .env("ISOLA_TENANT", "z")
            .env("ISOLA_STATS", stats)
            .env("ISOLA_TIMEOUT_MS", "30000");
        for (k, v) in env {
            cmd.env(k, v);
        }
    }
    run_bounded(&mut cmd, b"", Duration::from_secs(300))
}

/// The Python script with `args`.
fn python(args: &[&str]) -> Command {
    let mut cmd = Command::new("python3");
    cmd.arg(script()).args(args);
    cmd
}

/// A successful run's stdout, as JSON (its last line).
fn json_of(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or("")).unwrap()
}

/// The interposer's counters of its one stats line in `file`.
fn stats(file: &Path) -> serde_json::Value {
    let lines = stats_lines(file);
    assert_eq!(lines.len(), 1, "one ISOLA_STATS line: {lines:?}");
    assert_eq!(lines[0]["adapter"], "zlib");
    lines[0].clone()
}

/// The sum of the fallbacks of a stats line.
fn fallbacks(s: &serde_json::Value) -> u64 {
    s["fallbacks"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum()
}

/// Waits (at most 30 s) until isolad has completed `at_least` tasks of z.
fn completed_at_least(d: &Isolad, at_least: f64) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n = d.completed("z");
        if n >= at_least || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A daemon with tenant z (`quota` of memory) on one engine.
fn daemon(name: &str, quota: &str) -> Isolad {
    Isolad::start(
        name,
        &(engine("fcfs") + &tenant("z", &format!("memory_quota = \"{quota}\""))),
    )
}

/// A fresh folder for a test's files.
fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("isola-zlib-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Python's zlib under the interposer, every call offloaded
/// (ISOLA_MIN_BYTES=0): round trips of 0 B to 1 MiB, compressible and
/// random, in the zlib, raw and gzip formats (and wbits 47 to read), with
/// compressobj/decompressobj streaming beside; the stock zlib (and `gzip
/// -t`) reads what the interposer made, and the checksums are the stock's.
#[test]
fn python_zlib_runs_on_isolad_with_stock_answers() {
    let Some(a) = adapters() else { return };
    if !python_here() {
        return;
    }
    let d = daemon("zlib-python", "64MiB");
    let dir = folder("python");
    let stats_file = dir.join("stats");
    let out = run(
        &a,
        python(&["emit", dir.to_str().unwrap()]),
        Under::Interposer {
            socket: &d.socket,
            env: &[("ISOLA_MIN_BYTES", "0")],
            stats: &stats_file,
        },
    );
    let offloadable = json_of(&out)["offloadable"].as_u64().unwrap();
    assert!(offloadable > 300, "{offloadable}");
    let s = stats(&stats_file);
    assert_eq!(fallbacks(&s), 0, "{s}");
    assert!(s["offloaded"].as_u64().unwrap() >= offloadable, "{s}");
    let done = completed_at_least(&d, offloadable as f64);
    assert!(
        done >= offloadable as f64,
        "isolad completed {done} of {offloadable} tasks"
    );

    let verified = run(&a, python(&["verify", dir.to_str().unwrap()]), Under::Stock);
    assert_eq!(json_of(&verified)["verified"], true);
    let mut gz = 0;
    for f in std::fs::read_dir(&dir).unwrap() {
        let f = f.unwrap().path();
        if f.extension().is_some_and(|e| e == "gz") {
            let t = run_bounded(
                Command::new("gzip").arg("-t").arg(&f),
                b"",
                Duration::from_secs(60),
            );
            assert!(
                t.status.success(),
                "gzip -t {}: {}",
                f.display(),
                String::from_utf8_lossy(&t.stderr)
            );
            gz += 1;
        }
    }
    assert_eq!(gz, 12);
    let _ = std::fs::remove_dir_all(&dir);
}

/// With the default thresholds, small calls stay in the process and large
/// ones go to isolad.
#[test]
fn small_calls_stay_local_by_default() {
    let Some(a) = adapters() else { return };
    if !python_here() {
        return;
    }
    let d = daemon("zlib-thresholds", "64MiB");
    let dir = folder("thresholds");
    let stats_file = dir.join("stats");
    let code = "import zlib, random\n\
                small = b'x' * 100\n\
                assert zlib.decompress(zlib.compress(small)) == small\n\
                zlib.crc32(small); zlib.adler32(small)\n\
                big = random.Random(1).randbytes(1 << 20)\n\
                assert zlib.decompress(zlib.compress(big)) == big\n\
                zlib.crc32(big); zlib.adler32(big)\n";
    let mut cmd = Command::new("python3");
    cmd.args(["-c", code]);
    let out = run(
        &a,
        cmd,
        Under::Interposer {
            socket: &d.socket,
            env: &[],
            stats: &stats_file,
        },
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = stats(&stats_file);
    assert_eq!(s["offloaded"], 4, "{s}");
    assert!(s["local"].as_u64().unwrap() >= 4, "{s}");
    assert_eq!(completed_at_least(&d, 4.0), 4.0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The C program, compiled here as strictly as CI compiles C.
fn zlib_calls(dir: &Path) -> PathBuf {
    let exe = dir.join("zlib_calls");
    let cc = Command::new("cc")
        .args(["-Wall", "-Wextra", "-Werror", "-std=c11", "-O2", "-o"])
        .arg(&exe)
        .arg(root().join("adapters/zlib/tests/zlib_calls.c"))
        .arg("-lz")
        .output()
        .unwrap();
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    exe
}

/// A C program calling compress2/uncompress/uncompress2 and
/// deflate/inflate streams (whole, in small output pieces, damaged) prints
/// exactly what it prints with the stock zlib, its work done on isolad.
#[test]
fn c_program_answers_as_stock_zlib() {
    let Some(a) = adapters() else { return };
    let d = daemon("zlib-c", "64MiB");
    let dir = folder("c");
    let exe = zlib_calls(&dir);
    let stock = run(&a, Command::new(&exe), Under::Stock);
    assert!(
        stock.status.success(),
        "{}",
        String::from_utf8_lossy(&stock.stdout)
    );
    let stats_file = dir.join("stats");
    let out = run(
        &a,
        Command::new(&exe),
        Under::Interposer {
            socket: &d.socket,
            env: &[("ISOLA_MIN_BYTES", "0")],
            stats: &stats_file,
        },
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&stock.stdout)
    );
    let s = stats(&stats_file);
    assert_eq!(fallbacks(&s), 0, "{s}");
    let done = completed_at_least(&d, 400.0);
    assert!(done >= 400.0, "isolad completed {done} tasks: {s}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// No isolad: every answer is still right (the real libz's), each
/// fallback counted.
#[test]
fn isolad_absent_falls_back_to_software() {
    let Some(a) = adapters() else { return };
    let dir = folder("absent");
    let socket = dir.join("no-isolad.sock");
    let stats_file = dir.join("stats");
    let exe = zlib_calls(&dir);
    let stock = run(&a, Command::new(&exe), Under::Stock);
    let out = run(
        &a,
        Command::new(&exe),
        Under::Interposer {
            socket: &socket,
            env: &[("ISOLA_MIN_BYTES", "0")],
            stats: &stats_file,
        },
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.stdout, stock.stdout);
    let s = stats(&stats_file);
    assert_eq!(s["offloaded"], 0, "{s}");
    assert!(s["fallbacks"]["absent"].as_u64().unwrap() > 100, "{s}");
    if python_here() {
        let stats_file = dir.join("stats-python");
        let out = run(
            &a,
            python(&["emit", dir.to_str().unwrap()]),
            Under::Interposer {
                socket: &socket,
                env: &[],
                stats: &stats_file,
            },
        );
        json_of(&out);
        let verified = run(&a, python(&["verify", dir.to_str().unwrap()]), Under::Stock);
        assert_eq!(json_of(&verified)["verified"], true);
        let s = stats(&stats_file);
        assert!(s["fallbacks"]["absent"].as_u64().unwrap() > 0, "{s}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// ISOLA_FALLBACK=error with no isolad: the calls that cannot run fail
/// with zlib's codes (compress2/uncompress: Z_MEM_ERROR; deflate/inflate:
/// Z_STREAM_ERROR with strm->msg saying why), Python raises zlib.error,
/// and the checksums, which cannot fail, are still right.
#[test]
fn fallback_error_fails_with_zlib_codes() {
    let Some(a) = adapters() else { return };
    let dir = folder("error");
    let socket = dir.join("no-isolad.sock");
    let stats_file = dir.join("stats");
    let exe = zlib_calls(&dir);
    let env = [("ISOLA_FALLBACK", "error")];
    let mut cmd = Command::new(&exe);
    cmd.arg("fail");
    let out = run(
        &a,
        cmd,
        Under::Interposer {
            socket: &socket,
            env: &env,
            stats: &stats_file,
        },
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut cmd = Command::new(&exe);
    cmd.arg("fail");
    let stock = String::from_utf8_lossy(&run(&a, cmd, Under::Stock).stdout).to_string();
    let msg = "isolad could not run the call and ISOLA_FALLBACK=error";
    assert!(text.contains("compress2 -4\n"), "{text}");
    assert!(text.contains("uncompress -4\n"), "{text}");
    assert!(text.contains(&format!("deflate -2 {msg}\n")), "{text}");
    assert!(text.contains(&format!("inflate -2 {msg}\n")), "{text}");
    let crc = |t: &str| t.lines().find(|l| l.starts_with("crc32")).map(str::to_string);
    assert_eq!(crc(&text), crc(&stock));
    assert!(stock.contains("compress2 0\n"), "{stock}");
    let s = stats(&stats_file);
    assert!(s["fallbacks"]["absent"].as_u64().unwrap() >= 4, "{s}");
    if python_here() {
        let stats_file = dir.join("stats-python");
        let out = run(
            &a,
            python(&["fail"]),
            Under::Interposer {
                socket: &socket,
                env: &env,
                stats: &stats_file,
            },
        );
        let got = json_of(&out);
        assert!(got["compress"].as_str().unwrap().contains(msg), "{got}");
        assert!(got["decompress"].as_str().unwrap().contains(msg), "{got}");
        let want = json_of(&run(&a, python(&["sums"]), Under::Stock));
        assert_eq!(got["sums"], want["sums"]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// isolad killed with SIGKILL in the middle of a loop of compressions:
/// the loop goes on (in software, every answer right, no call waiting
/// past its bound), and once isolad is back its calls go there again.
#[test]
fn isolad_killed_mid_run_then_restarted() {
    let Some(a) = adapters() else { return };
    if !python_here() {
        return;
    }
    let mut d = daemon("zlib-kill", "64MiB");
    let dir = folder("kill");
    let stats_file = dir.join("stats");
    let stop = dir.join("stop");
    let mut child = Command::new("python3")
        .arg(script())
        .args(["loop", "240"])
        .env("LD_PRELOAD", &a.zlib)
        .env("ISOLA_SOCKET", &d.socket)
        .env("ISOLA_TENANT", "z")
        .env("ISOLA_STATS", &stats_file)
        .env("ISOLA_TIMEOUT_MS", "2000")
        .env("ISOLA_RETRY_MS", "100")
        .env("STOP_FILE", &stop)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Each round is printed: the loop's progress, read on a thread.
    let lines = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for l in lines.lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let wait_rounds = |n: usize, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        for _ in 0..n {
            let left = deadline.saturating_duration_since(Instant::now());
            rx.recv_timeout(left)
                .unwrap_or_else(|_| panic!("no round of the loop within 60 s ({what}): a hang"));
        }
    };
    let done = completed_at_least(&d, 8.0);
    assert!(done >= 8.0, "the loop is not running on isolad: {done}");
    d.kill9();
    while rx.try_recv().is_ok() {}
    wait_rounds(3, "isolad killed");
    d.restart();
    let deadline = Instant::now() + Duration::from_secs(30);
    while d.completed("z") < 4.0 {
        assert!(
            Instant::now() < deadline,
            "offloading did not resume on the restarted isolad"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(&stop, b"").unwrap();
    let limit = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < limit, "the loop did not stop: a hang");
        std::thread::sleep(Duration::from_millis(20));
    };
    reader.join().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "the loop failed (a wrong answer?): {err}");
    let s = stats(&stats_file);
    assert!(fallbacks(&s) > 0, "{s}");
    assert!(s["offloaded"].as_u64().unwrap() > 8, "{s}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tenant whose memory quota cannot hold the call's buffers: the call
/// runs in software with the right answer, counted; smaller calls still go
/// to isolad.
#[test]
fn over_quota_runs_in_software() {
    let Some(a) = adapters() else { return };
    if !python_here() {
        return;
    }
    let d = daemon("zlib-quota", "256KiB");
    let dir = folder("quota");
    let stats_file = dir.join("stats");
    let code = "import zlib, random\n\
                big = random.Random(2).randbytes(1 << 20)\n\
                c = zlib.compress(big)\n\
                assert zlib.decompress(c) == big\n\
                assert zlib.crc32(big) == zlib.crc32(big[1:], zlib.crc32(big[:1]))\n\
                small = random.Random(3).randbytes(20000)\n\
                assert zlib.decompress(zlib.compress(small)) == small\n";
    let mut cmd = Command::new("python3");
    cmd.args(["-c", code]);
    let out = run(
        &a,
        cmd,
        Under::Interposer {
            socket: &d.socket,
            env: &[("ISOLA_MIN_BYTES", "1000")],
            stats: &stats_file,
        },
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = stats(&stats_file);
    let quota = s["fallbacks"]["no_arena"].as_u64().unwrap() + s["fallbacks"]["over_quota"].as_u64().unwrap();
    assert!(quota >= 3, "{s}");
    assert!(completed_at_least(&d, 2.0) >= 2.0, "{s}");
    // The stock answer of the same calls, for the record: zlib's own.
    let verify = "import zlib, random\n\
                  big = random.Random(2).randbytes(1 << 20)\n\
                  assert zlib.decompress(zlib.compress(big)) == big\n";
    let mut cmd = Command::new("python3");
    cmd.args(["-c", verify]);
    assert!(run(&a, cmd, Under::Stock).status.success());
    let _ = std::fs::remove_dir_all(&dir);
}
