//! Faults with real processes: tenants killed with SIGKILL while their
//! work is queued and running, a thousand times, leave the daemon with the
//! descriptors and mappings it had and every task it accepted answered
//! once; a daemon killed with SIGKILL gives its client an error on the
//! outstanding and the later calls, and a restarted daemon takes the
//! client back.
//!
//! The tenant processes are this test binary run again: the ignored test
//! `tenant_process` is their `main` (`--ignored --exact tenant_process`).

use isola_client::{Client, ClientError, CompletionStatus};
use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::admin::{AdminReply, AdminRequest};
use isola_wire::{control, Submission};
use rustix::fd::AsFd;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The tests that count this process's descriptors and mappings run
/// alone (`write`); the others (`read`) open sockets and pipes too.
static ALONE: std::sync::RwLock<()> = std::sync::RwLock::new(());

const INPUT: u64 = 64 * 1024;

fn config(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let uid = rustix::process::getuid().as_raw();
    let path = dir.join("isolad.toml");
    std::fs::write(
        &path,
        format!(
            "[daemon]\nsocket = \"isolad.sock\"\n[[engine]]\nname = \"acc\"\n\
             [[tenant]]\nname = \"a\"\nmemory_quota = \"64MiB\"\nusers = [{uid}]\nmax_connections = 4\n\
             [[tenant]]\nname = \"b\"\nmemory_quota = \"64MiB\"\nusers = [{uid}]\n"
        ),
    )
    .unwrap();
    path
}

/// SHA-256 of the arena's first 64 KiB into slot `i`'s 32 bytes.
fn sha(handle: u32, i: u64) -> Submission {
    Submission {
        handle,
        flags: 0,
        input_offset: 0,
        input_len: INPUT,
        output_offset: INPUT + i * 32,
        output_cap: 32,
        tag: i,
    }
}

/// A tenant process: attaches to `ISOLA_TEST_SOCKET` as `a`, submits
/// `ISOLA_TEST_TASKS` tasks, says so on stdout, and waits to be killed.
#[test]
#[ignore = "a tenant process for the other tests, not a test"]
fn tenant_process() {
    let Ok(socket) = std::env::var("ISOLA_TEST_SOCKET") else {
        return;
    };
    let tasks: u64 = std::env::var("ISOLA_TEST_TASKS").unwrap().parse().unwrap();
    let mut c = Client::connect(Path::new(&socket), "a").unwrap();
    let h = c.register("sha256", &BTreeMap::new()).unwrap();
    c.write(0, &vec![3u8; INPUT as usize]).unwrap();
    let batch: Vec<Submission> = (0..tasks).map(|i| sha(h, i)).collect();
    c.submit_all(&batch).unwrap();
    println!("submitted");
    std::thread::sleep(Duration::from_secs(60));
}

fn spawn_tenant(socket: &Path, tasks: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "tenant_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("ISOLA_TEST_SOCKET", socket)
        .env("ISOLA_TEST_TASKS", tasks.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits for the child to say it submitted; false if it ended first.
fn until_submitted(child: &mut Child) -> bool {
    use std::io::BufRead;
    let out = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(out).lines();
    while let Some(Ok(line)) = lines.next() {
        if line.contains("submitted") {
            return true;
        }
    }
    false
}

fn kill9(child: &mut Child) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    let _ = child.wait();
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn memfd_mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.contains("memfd:"))
        .count()
}

#[test]
fn a_thousand_tenant_processes_killed_mid_run_leak_nothing_and_lose_no_answer() {
    let _alone = ALONE.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = std::env::temp_dir().join(format!("isolad-kill9-{}", std::process::id()));
    let d = Daemon::start(DaemonConfig::load(&config(&dir)).unwrap()).unwrap();
    let admin = control::connect(d.admin_socket()).unwrap();
    let figures = |name: &str| {
        control::send(admin.as_fd(), &AdminRequest::List { from: 0 }, None).unwrap();
        match control::recv::<AdminReply>(admin.as_fd()).unwrap().0 {
            AdminReply::Tenants { tenants, .. } => tenants.into_iter().find(|t| t.name == name).unwrap(),
            other => panic!("{other:?}"),
        }
    };
    // A bystander tenant in this process, served all along.
    let mut b = Client::connect(d.socket(), "b").unwrap();
    let hb = b.register("crc32c", &BTreeMap::new()).unwrap();
    b.write(0, b"123456789").unwrap();
    let crc = Submission {
        handle: hb,
        flags: 0,
        input_offset: 0,
        input_len: 9,
        output_offset: 64,
        output_cap: 4,
        tag: 0,
    };
    let (fds, maps) = (open_fds(), memfd_mappings());
    let cycles = 1_000;
    for i in 0..cycles {
        // Up to 40 tasks of ~50-500 us each: killed with work queued and running.
        let mut child = spawn_tenant(d.socket(), 1 + i % 40);
        assert!(until_submitted(&mut child), "tenant process {i} did not submit");
        kill9(&mut child);
        if i % 50 == 0 {
            b.submit(&crc).unwrap();
            let done = b.wait().unwrap();
            assert_eq!(done.outcome, CompletionStatus::Ok);
            assert_eq!(b.read(64, 4).unwrap(), 0xE306_9283u32.to_be_bytes());
        }
    }
    // Every task a's processes submitted ended exactly once, the queued
    // ones cancelled.
    let start = Instant::now();
    let a = loop {
        let a = figures("a");
        let f = a.figures;
        if a.connections == 0 && f.succeeded + f.failed + f.rejected + f.cancelled == f.submitted {
            break a;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "a's tasks never all ended: {a:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(a.figures.submitted > 0 && a.figures.cancelled > 0, "{a:?}");
    assert_eq!(figures("b").figures.succeeded, cycles / 50);
    // The daemon (this process) holds what it held before.
    assert_eq!(open_fds(), fds, "descriptors leaked");
    assert_eq!(memfd_mappings(), maps, "shared-memory regions leaked");
}

#[test]
fn a_killed_daemon_fails_its_client_and_a_restarted_one_takes_it_back() {
    let _beside = ALONE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = std::env::temp_dir().join(format!("isolad-restart-{}", std::process::id()));
    let path = config(&dir);
    let socket = dir.join("isolad.sock");
    let start_daemon = || {
        let child = Command::new(env!("CARGO_BIN_EXE_isolad"))
            .arg("--config")
            .arg(&path)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let c = (0..500)
            .find_map(|_| {
                std::thread::sleep(Duration::from_millis(10));
                Client::connect(&socket, "a").ok()
            })
            .expect("isolad did not start");
        (child, c)
    };
    let (mut daemon, mut c) = start_daemon();
    let h = c.register("sha256", &BTreeMap::new()).unwrap();
    c.write(0, &vec![1u8; INPUT as usize]).unwrap();
    let batch: Vec<Submission> = (0..200).map(|i| sha(h, i)).collect();
    c.submit_all(&batch).unwrap();
    kill9(&mut daemon);
    // The outstanding tasks: what was answered before reads as answered,
    // then an error, never a hang.
    let failed = (0..=200).find_map(|_| c.wait().err());
    assert!(matches!(failed, Some(ClientError::Control(_))), "{failed:?}");
    std::thread::sleep(isola_client::LIVENESS_CHECK * 2);
    assert!(matches!(c.submit(&sha(h, 0)), Err(ClientError::Control(_))));
    std::thread::sleep(isola_client::LIVENESS_CHECK * 2);
    assert!(matches!(c.poll(), Err(ClientError::Control(_))));
    assert!(c.register("crc32c", &BTreeMap::new()).is_err());
    // A restarted daemon (its socket was left behind by the kill).
    let (mut daemon, mut c) = start_daemon();
    let h = c.register("sha256", &BTreeMap::new()).unwrap();
    c.write(0, &vec![1u8; INPUT as usize]).unwrap();
    c.submit(&sha(h, 0)).unwrap();
    assert_eq!(c.wait().unwrap().outcome, CompletionStatus::Ok);
    kill9(&mut daemon);
}

#[test]
fn sighup_reloads_the_file_on_the_real_binary() {
    let _beside = ALONE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = std::env::temp_dir().join(format!("isolad-sighup-{}", std::process::id()));
    let path = config(&dir);
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_isolad"))
        .arg("--config")
        .arg(&path)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let admin_path = dir.join("isolad.sock.admin");
    let admin = (0..500)
        .find_map(|_| {
            std::thread::sleep(Duration::from_millis(10));
            control::connect(&admin_path).ok()
        })
        .expect("isolad did not start");
    let weight_of_b = || {
        control::send(admin.as_fd(), &AdminRequest::List { from: 0 }, None).unwrap();
        match control::recv::<AdminReply>(admin.as_fd()).unwrap().0 {
            AdminReply::Tenants { tenants, .. } => {
                tenants.iter().find(|t| t.name == "b").map(|t| t.slo.weight)
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(weight_of_b(), Some(1.0));
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = text.replace("name = \"b\"\n", "name = \"b\"\nweight = 5.0\n");
    std::fs::write(&path, changed).unwrap();
    let pid = rustix::process::Pid::from_raw(daemon.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::HUP).unwrap();
    let start = Instant::now();
    while weight_of_b() != Some(5.0) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "SIGHUP did not reload the file"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    kill9(&mut daemon);
}
