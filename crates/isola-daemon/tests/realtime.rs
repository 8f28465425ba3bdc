//! isolad's real-time mode (issue 34, part 3) and the kernel that answers
//! as a sockperf server: the dispatcher, the thread that wakes it for
//! datagrams and the workers run at one real-time priority (as the kernel
//! reports each thread's class; threads that share lock-free channels at
//! different priorities can spin on each other for good, `isola-runtime`'s
//! `threads.rs`), and Mellanox's sockperf client, a real one, gets its
//! answers through isolad.

mod config_file;

use isola_daemon::Daemon;
use std::time::Duration;

/// The tests here start daemons whose threads have the same names, and
/// one looks its threads up by name: one at a time.
static ONE_DAEMON: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn config(name: &str, daemon_keys: &str) -> isola_daemon::DaemonConfig {
    let kernels = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/kernels");
    config_file::parse(
        name,
        &format!(
            "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:0\"]\n{daemon_keys}\n\
             [[engine]]\nname = \"pu\"\nkind = \"pu\"\nops = [\"wasm\"]\n\
             [[tenant]]\nname = \"victim\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
             [[tenant.flow]]\nmatch = {{ proto = 17 }}\nkernel = \"wasm:{kernels}/sockperf_server.wat\"\n"
        ),
    )
}

/// The calling process's threads named `name`: each one's class and
/// priority, as the kernel reports them.
fn classes_of(name: &str) -> Vec<(i32, i32)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = task.unwrap().path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        // The kernel keeps 15 bytes of a thread's name.
        if comm.trim_end() != &name[..name.len().min(15)] {
            continue;
        }
        let tid: libc::pid_t = dir.file_name().unwrap().to_str().unwrap().parse().unwrap();
        let mut param = libc::sched_param { sched_priority: 0 };
        // SAFETY: plain queries of a thread of this process; `param` is writable.
        let class = unsafe { libc::sched_getscheduler(tid) };
        // SAFETY: as above.
        assert_eq!(unsafe { libc::sched_getparam(tid, &mut param) }, 0);
        out.push((class, param.sched_priority));
    }
    out
}

#[test]
fn the_dispatcher_its_waker_and_the_workers_share_one_priority() {
    let _alone = ONE_DAEMON.lock();
    let d = Daemon::start(config("rt-classes", "realtime = true")).unwrap();
    let worker = classes_of("isola-pu-0");
    assert_eq!(worker.len(), 1, "one worker thread");
    if worker[0].0 != libc::SCHED_FIFO {
        eprintln!("skipped: this system refuses real-time classes");
        d.stop();
        return;
    }
    assert_eq!(worker, [(libc::SCHED_FIFO, 10)]);
    assert_eq!(classes_of("isola-dispatcher"), [(libc::SCHED_FIFO, 10)]);
    assert_eq!(classes_of("isola-delivery"), [(libc::SCHED_FIFO, 10)]);
    // The waker names itself and enters its class as it starts, after
    // the daemon has started: wait for it.
    let started = std::time::Instant::now();
    while classes_of("isolad-udp-wake") != [(libc::SCHED_FIFO, 10)] {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the waker: {:?}",
            classes_of("isolad-udp-wake")
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    d.stop();
}

/// sockperf's ping-pong client, run against the flow's kernel, gets an
/// answer to every message it sends, in order, and none twice.
#[test]
fn a_sockperf_client_gets_its_answers_through_isolad() {
    let _alone = ONE_DAEMON.lock();
    let found = std::process::Command::new("sockperf")
        .arg("--version")
        .output()
        .is_ok();
    if !found {
        assert!(
            std::env::var_os("ISOLA_REQUIRE_SOCKPERF").is_none(),
            "ISOLA_REQUIRE_SOCKPERF is set but sockperf is not found"
        );
        eprintln!("skipped: sockperf not found (Debian's package `sockperf`)");
        return;
    }
    let d = Daemon::start(config("rt-sockperf", "")).unwrap();
    let addr = d.udp_addrs()[0];
    let out = std::process::Command::new("sockperf")
        .args([
            "ping-pong",
            "-i",
            "127.0.0.1",
            "-p",
            &addr.port().to_string(),
            "-t",
            "1",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |key: &str| -> u64 {
        let at = text
            .rfind(key)
            .unwrap_or_else(|| panic!("no `{key}` in:\n{text}"))
            + key.len();
        text[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (sent, received) = (field("SentMessages="), field("ReceivedMessages="));
    assert!(received > 100, "{received} answers:\n{text}");
    assert!(sent - received <= 1, "sent {sent}, answered {received}:\n{text}");
    for counter in [
        "# dropped messages = ",
        "# duplicated messages = ",
        "# out-of-order messages = ",
    ] {
        assert_eq!(field(counter), 0, "{counter}\n{text}");
    }
    let served = d.packet_counts().tenants[0];
    d.stop();
    // Every answer came from the tenant's kernel through the core.
    assert!(served.0 >= received, "{served:?} against {received} answers");
}
