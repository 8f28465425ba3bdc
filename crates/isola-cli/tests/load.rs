//! `isola load` as a user runs it: a real daemon started in this test
//! process (its tenant granted to this process's user), the built `isola`
//! binary attaching to it from its own process.

use isola_daemon::{Daemon, DaemonConfig};
use std::path::PathBuf;
use std::process::{Command, Output};

/// A daemon with tenant `a` granted to this user and `b` to another.
fn daemon(name: &str) -> (Daemon, PathBuf) {
    let dir = std::env::temp_dir().join(format!("isola-load-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let uid = rustix::process::getuid().as_raw();
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\n[[engine]]\nname = \"acc\"\n\
         cost = {{ base = \"1us\", per_byte_ns = 0.5 }}\n\
         [[tenant]]\nname = \"a\"\nmemory_quota = \"256KiB\"\nusers = [{uid}]\nsq_entries = 16\ncq_entries = 16\n\
         [[tenant]]\nname = \"b\"\nmemory_quota = \"64KiB\"\nusers = [{}]\n",
        uid.wrapping_add(1)
    );
    let config = DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap();
    let d = Daemon::start(config).unwrap();
    let socket = d.socket().to_path_buf();
    (d, socket)
}

fn isola(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_isola"))
        .args(args)
        .output()
        .expect("isola runs")
}

/// Runs `isola load --json` with `args`; its report.
fn load_json(socket: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec![
        "load",
        "--socket",
        socket.to_str().unwrap(),
        "--tenant",
        "a",
        "--json",
    ];
    all.extend_from_slice(args);
    let out = isola(&all);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

#[test]
fn a_closed_loop_submits_its_count_and_every_task_is_answered() {
    let (_d, socket) = daemon("closed");
    let r = load_json(
        &socket,
        &[
            "--op",
            "crc32c",
            "--sizes",
            "64B,4KiB",
            "--concurrency",
            "4",
            "--count",
            "300",
        ],
    );
    let c = &r["counts"];
    assert_eq!(c["submitted"], 300, "{r}");
    assert_eq!(c["ok"], 300, "{r}");
    assert_eq!(
        (c["rejected"].as_u64(), c["failed"].as_u64()),
        (Some(0), Some(0)),
        "{r}"
    );
    assert_eq!(c["unanswered"], 0, "{r}");
    assert_eq!(r["stopped"], "count");
    assert_eq!(r["mode"]["in_flight_limit"], 4);
    // Both clocks timed every task; the daemon's time is within the client's.
    let (client, daemon) = (&r["latency"]["client"], &r["latency"]["daemon"]);
    assert_eq!(
        (client["count"].as_u64(), daemon["count"].as_u64()),
        (Some(300), Some(300))
    );
    assert!(
        client["p50_ns"].as_u64().unwrap() >= daemon["p50_ns"].as_u64().unwrap(),
        "{r}"
    );
    for p in ["p50_ns", "p90_ns", "p99_ns", "p999_ns"] {
        assert!(
            client[p].as_u64().unwrap() <= client["max_ns"].as_u64().unwrap(),
            "{r}"
        );
    }
    // Sizes taken in turn.
    let by_size = r["by_size"].as_array().unwrap();
    assert_eq!(
        (by_size[0]["ok"].as_u64(), by_size[1]["ok"].as_u64()),
        (Some(150), Some(150))
    );
    assert_eq!(by_size[1]["input_bytes"], 4096);
    assert!(r["throughput"]["tasks_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn an_open_loop_loses_no_task_when_the_ring_is_full() {
    let (_d, socket) = daemon("open");
    // Far more than one tenant process gets through on a test machine,
    // with rings of 16: tasks wait for room, none is dropped.
    let r = load_json(
        &socket,
        &[
            "--op",
            "crc32c",
            "--rate",
            "1M/s",
            "--arrivals",
            "constant",
            "--count",
            "2000",
            "--warmup",
            "10ms",
        ],
    );
    let c = &r["counts"];
    assert_eq!(
        (c["submitted"].as_u64(), c["ok"].as_u64()),
        (Some(2000), Some(2000)),
        "{r}"
    );
    assert_eq!(c["unanswered"], 0, "{r}");
    assert!(r["backpressure"]["delays"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["mode"]["in_flight_limit"], 32, "{r}");
    assert!(r["latency"]["from_due"]["count"].as_u64() == Some(2000), "{r}");
}

#[test]
fn the_json_can_go_to_a_file_beside_the_table() {
    let (_d, socket) = daemon("file");
    let file = socket.with_file_name("report.json");
    let out = isola(&[
        "load",
        "--socket",
        socket.to_str().unwrap(),
        "--tenant",
        "a",
        "--op",
        "sha256",
        "--sizes",
        "1KiB",
        "--concurrency",
        "2",
        "--count",
        "50",
        "--json",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.contains("latency of ok tasks") && table.contains("submitted"),
        "{table}"
    );
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(r["counts"]["ok"], 50);
}

#[test]
fn mistakes_name_their_flag_the_socket_or_the_daemons_reason() {
    let (_d, socket) = daemon("mistakes");
    let s = socket.to_str().unwrap();
    let stderr = |args: &[&str]| {
        let out = isola(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let base = ["load", "--socket", s, "--tenant", "a", "--op", "crc32c"];
    for (extra, flag) in [
        (&["--rate", "10", "--count", "5"][..], "--rate"),
        (&["--rate", "1GB/s", "--count", "5"][..], "--rate"),
        (&["--rate", "0.00001/s", "--count", "5"][..], "--rate"),
        (&["--concurrency", "0", "--count", "5"][..], "--concurrency"),
        (&["--concurrency", "2", "--count", "0"][..], "--count"),
        (&["--concurrency", "2", "--duration", "5"][..], "--duration"),
        (
            &["--concurrency", "2", "--count", "5", "--warmup", "2d"][..],
            "--warmup",
        ),
        (
            &["--concurrency", "2", "--count", "5", "--sizes", "64"][..],
            "--sizes",
        ),
        (
            &["--concurrency", "2", "--count", "5", "--sizes", "1MiB"][..],
            "--sizes",
        ),
        (
            &["--concurrency", "2", "--count", "5", "--param", "x"][..],
            "--param",
        ),
        (
            &["--concurrency", "2", "--count", "5", "--arrivals", "constant"][..],
            "--arrivals",
        ),
        (
            &["--rate", "1k/s", "--concurrency", "2", "--count", "5"][..],
            "--concurrency",
        ),
        (&["--concurrency", "2"][..], "--count"),
    ] {
        let e = stderr(&[&base[..], extra].concat());
        assert!(e.contains(flag), "{extra:?}: {e}");
    }
    let e = stderr(&[
        "load",
        "--socket",
        s,
        "--tenant",
        "a",
        "--op",
        "frobnicate",
        "--concurrency",
        "1",
        "--count",
        "1",
    ]);
    assert!(e.contains("--op"), "{e}");
    // No daemon there: the message names the socket.
    let gone = socket.with_file_name("nobody.sock");
    let e = stderr(&[
        "load",
        "--socket",
        gone.to_str().unwrap(),
        "--tenant",
        "a",
        "--op",
        "crc32c",
        "--concurrency",
        "1",
        "--count",
        "1",
    ]);
    assert!(
        e.contains("nobody.sock") && e.contains("is the daemon running"),
        "{e}"
    );
    // Refused: the daemon's reason.
    let e = stderr(&[
        "load",
        "--socket",
        s,
        "--tenant",
        "b",
        "--op",
        "crc32c",
        "--concurrency",
        "1",
        "--count",
        "1",
    ]);
    assert!(
        e.contains("refused tenant `b`") && e.contains("may not act as tenant"),
        "{e}"
    );
}

#[test]
fn ctrl_c_stops_early_and_still_reports() {
    let (_d, socket) = daemon("interrupt");
    let child = Command::new(env!("CARGO_BIN_EXE_isola"))
        .args([
            "load",
            "--socket",
            socket.to_str().unwrap(),
            "--tenant",
            "a",
            "--op",
            "crc32c",
            "--concurrency",
            "2",
            "--duration",
            "60s",
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(r["stopped"], "interrupted", "{r}");
    let c = &r["counts"];
    assert!(c["ok"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(c["submitted"], c["ok"], "every task taken was answered: {r}");
    assert!(r["measured_s"].as_f64().unwrap() < 30.0, "{r}");
}
