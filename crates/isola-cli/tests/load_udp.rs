//! `isola load udp` as a user runs it: a real daemon started in this test
//! process with a packet address and tenants' flows matching the source
//! ports the generator is given, the built `isola` binary sending to it
//! from its own process; a closed port, the echo baseline, mistakes and
//! Ctrl-C.

use isola_daemon::{Daemon, DaemonConfig};
use std::net::UdpSocket;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `n` consecutive UDP ports free on 127.0.0.1 now; the first.
fn free_ports(n: u16) -> u16 {
    for _ in 0..1000 {
        let first = UdpSocket::bind("127.0.0.1:0").unwrap();
        let p = first.local_addr().unwrap().port();
        if u32::from(p) + u32::from(n) > 65_535 {
            continue;
        }
        let rest: Result<Vec<_>, _> = (1..n).map(|i| UdpSocket::bind(("127.0.0.1", p + i))).collect();
        if rest.is_ok() {
            return p;
        }
    }
    panic!("no {n} consecutive free ports");
}

/// A daemon listening for packets on a port of its choosing, with one
/// tenant per port from `first` (`a`, `b`, ...), each a flow matching
/// that source port and running crc32c.
fn daemon(name: &str, first: u16, tenants: u16) -> Daemon {
    let dir = std::env::temp_dir().join(format!("isola-load-udp-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:0\"]\n\
                    [[engine]]\nname = \"pu\"\nworkers = 1\npolicy = \"wlbvt\"\n"
        .to_string();
    for i in 0..tenants {
        text.push_str(&format!(
            "[[tenant]]\nname = \"{}\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
             [[tenant.flow]]\nmatch = {{ src_port = {}, proto = 17 }}\nkernel = \"crc32c\"\n",
            char::from(b'a' + i as u8),
            first + i
        ));
    }
    let config = DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap();
    Daemon::start(config).unwrap()
}

fn isola(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_isola"))
        .args(args)
        .output()
        .expect("isola runs")
}

/// Runs `isola load udp --json` with `args`; its report. A reply may
/// take up to 5 s (a loaded test machine) unless `args` say otherwise.
fn load_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["load", "udp", "--json"];
    if !args.contains(&"--timeout") {
        all.extend_from_slice(&["--timeout", "5s"]);
    }
    all.extend_from_slice(args);
    let out = isola(&all);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

/// Waits (a little) for the daemon's counters to reach `want` replies.
fn replied(d: &Daemon, tenant: usize, want: u64) -> (u64, u64, u64, u64) {
    let start = Instant::now();
    loop {
        let c = d.packet_counts().tenants[tenant];
        if c.1 >= want || start.elapsed() > Duration::from_secs(5) {
            return c;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn every_packet_through_the_daemon_is_answered_and_the_daemon_agrees() {
    let port = free_ports(2);
    let d = daemon("all", port, 2);
    let to = d.udp_addrs()[0].to_string();
    let p = port.to_string();
    let r = load_json(&[
        "--to",
        &to,
        "--src-port",
        &p,
        "--flows",
        "2",
        "--count",
        "1000",
        "--rate",
        "max",
    ]);
    let t = &r["total"];
    assert_eq!(
        (t["sent"].as_u64(), t["received"].as_u64(), t["lost"].as_u64()),
        (Some(1000), Some(1000), Some(0)),
        "{r}"
    );
    assert_eq!(t["loss_pct"], 0.0, "{r}");
    assert_eq!(t["late"], 0, "{r}");
    // crc32c answers 4 bytes.
    assert_eq!(t["received_bytes"], 4000, "{r}");
    assert_eq!(t["sent_bytes"], 64_000, "{r}");
    assert_eq!(t["latency"]["count"], 1000, "{r}");
    assert!(t["latency"]["p50_ns"].as_u64().unwrap() > 0, "{r}");
    assert!(t["throughput"]["received_pps"].as_f64().unwrap() > 0.0, "{r}");
    assert_eq!(
        (r["stopped"].as_str(), r["matching"].as_str()),
        (Some("count"), Some("fifo"))
    );
    assert_eq!(r["pace"]["window"], 64);
    // Round robin: each flow, from its own port, sent half.
    let flows = r["flows"].as_array().unwrap();
    for (i, f) in flows.iter().enumerate() {
        assert_eq!(f["src"], format!("127.0.0.1:{}", port + i as u16), "{r}");
        assert_eq!(
            (f["sent"].as_u64(), f["received"].as_u64()),
            (Some(500), Some(500)),
            "{r}"
        );
    }
    // The daemon saw the same: each tenant's flow took its 500.
    assert_eq!(replied(&d, 0, 500), (500, 500, 0, 0));
    assert_eq!(replied(&d, 1, 500), (500, 500, 0, 0));
    assert_eq!(d.packet_counts().unmatched, 0);
}

#[test]
fn a_rate_with_bursts_and_drawn_sizes_is_answered_too() {
    let port = free_ports(1);
    let d = daemon("rate", port, 1);
    let to = d.udp_addrs()[0].to_string();
    let p = port.to_string();
    let r = load_json(&[
        "--to",
        &to,
        "--src-port",
        &p,
        "--count",
        "200",
        "--rate",
        "5k/s",
        "--arrivals",
        "bursts:5",
        "--size",
        "uniform:64B-512B",
        "--warmup",
        "20ms",
    ]);
    let t = &r["total"];
    assert_eq!(
        (t["sent"].as_u64(), t["received"].as_u64(), t["lost"].as_u64()),
        (Some(200), Some(200), Some(0)),
        "{r}"
    );
    let mean = r["mean_size_bytes"].as_f64().unwrap();
    assert!((64.0..=512.0).contains(&mean) && mean != 64.0, "{r}");
    assert_eq!(
        (r["pace"]["arrivals"].as_str(), r["pace"]["burst"].as_u64()),
        (Some("bursts"), Some(5))
    );
    // The warm-up's packets went through the daemon too, uncounted here.
    assert!(replied(&d, 0, 201).1 > 200);
}

#[test]
fn a_closed_port_loses_every_packet_and_the_run_still_ends() {
    let closed = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let start = Instant::now();
    let r = load_json(&[
        "--timeout",
        "200ms",
        "--to",
        &closed,
        "--count",
        "200",
        "--rate",
        "max",
        "--flows",
        "2",
    ]);
    assert!(start.elapsed() < Duration::from_secs(20), "{r}");
    let t = &r["total"];
    assert_eq!(
        (t["sent"].as_u64(), t["received"].as_u64(), t["lost"].as_u64()),
        (Some(200), Some(0), Some(200)),
        "{r}"
    );
    assert_eq!(t["loss_pct"], 100.0, "{r}");
    assert!(r["unreachable"].as_u64().unwrap() > 0, "{r}");
    // The table says it too.
    let out = isola(&["load", "udp", "--to", &closed, "--count", "10", "--rate", "1k/s"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.contains("100.00%") && table.contains("nothing listens"),
        "{table}"
    );
}

#[test]
fn the_echo_baseline_answers_every_packet_by_its_number() {
    let dir = std::env::temp_dir().join(format!("isola-load-udp-echo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("report.json");
    let out = isola(&[
        "load",
        "udp",
        "--echo-baseline",
        "--flows",
        "3",
        "--count",
        "3000",
        "--window",
        "16",
        "--timeout",
        "5s",
        "--size",
        "lognormal:256B,0.5",
        "--json",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.contains("reply latency") && table.contains("echo server"),
        "{table}"
    );
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let t = &r["total"];
    assert_eq!(
        (t["sent"].as_u64(), t["received"].as_u64()),
        (Some(3000), Some(3000)),
        "{r}"
    );
    // An echo: the same bytes back.
    assert_eq!(t["received_bytes"], t["sent_bytes"], "{r}");
    assert_eq!(
        (r["matching"].as_str(), r["echoed"].as_u64()),
        (Some("echo"), Some(3000)),
        "{r}"
    );
}

/// `isola load udp` with `args` fails; its standard error.
fn refused(args: &[&str]) -> String {
    let out = isola(&[&["load", "udp"][..], args].concat());
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Each `(args, flag)`: `isola load udp` with `args` fails naming `flag`.
fn each_names_its_flag(cases: &[(&[&str], &str)]) {
    for (args, flag) in cases {
        let e = refused(args);
        assert!(e.contains(flag), "{args:?}: {e}");
    }
}

/// A run that would be sent to the discard port, with `extra`.
fn to_discard<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let base: [&'a str; 6] = ["--to", "127.0.0.1:9", "--rate", "max", "--count", "5"];
    [&base[..], extra].concat()
}

#[test]
fn mistakes_in_where_to_send_name_their_flag() {
    let bad_src_port = to_discard(&["--src-port", "65535", "--flows", "2"]);
    let bad_bind = to_discard(&["--bind", "10.255.255.1"]);
    each_names_its_flag(&[
        (&["--to", "nowhere", "--rate", "max", "--count", "5"], "--to"),
        (&["--rate", "max", "--count", "5"], "--to"),
        (&["--to", "127.0.0.1:0", "--rate", "max", "--count", "5"], "--to"),
        (&["--to", "[::1]:9", "--rate", "max", "--count", "5"], "--bind"),
        (&bad_src_port, "--src-port"),
        (&bad_bind, "--bind"),
        (
            &[
                "--echo-baseline",
                "--to",
                "127.0.0.1:9",
                "--rate",
                "max",
                "--count",
                "5",
            ],
            "--to",
        ),
    ]);
    // A source port taken: the message names the flag and the address.
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let e = refused(&to_discard(&["--src-port", &port]));
    assert!(e.contains("--src-port") && e.contains(&port), "{e}");
}

#[test]
fn mistakes_in_how_fast_name_their_flag() {
    let to = ["--to", "127.0.0.1:9"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        ([&to[..], &["--rate", "10", "--count", "5"]].concat(), "--rate"),
        ([&to[..], &["--rate", "1GB/s", "--count", "5"]].concat(), "--rate"),
        ([&to[..], &["--rate", "fast", "--count", "5"]].concat(), "--rate"),
        (to_discard(&["--window", "0"]), "--window"),
        (
            [&to[..], &["--rate", "1k/s", "--count", "5", "--window", "8"]].concat(),
            "--window",
        ),
        (to_discard(&["--arrivals", "poisson"]), "--arrivals"),
        (
            [
                &to[..],
                &["--rate", "1k/s", "--count", "5", "--arrivals", "bursts:0"],
            ]
            .concat(),
            "--arrivals",
        ),
    ];
    let cases: Vec<(&[&str], &str)> = cases.iter().map(|(a, f)| (&a[..], *f)).collect();
    each_names_its_flag(&cases);
}

#[test]
fn mistakes_in_what_and_how_long_name_their_flag() {
    let to = ["--to", "127.0.0.1:9"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        ([&to[..], &["--rate", "max"]].concat(), "--count"),
        ([&to[..], &["--rate", "max", "--count", "0"]].concat(), "--count"),
        (
            [&to[..], &["--rate", "max", "--duration", "5"]].concat(),
            "--duration",
        ),
        (to_discard(&["--flows", "0"]), "--flows"),
        (to_discard(&["--size", "64"]), "--size"),
        (to_discard(&["--size", "70000B"]), "--size"),
        (to_discard(&["--size", "uniform:9B"]), "--size"),
        (to_discard(&["--echo", "--size", "4B"]), "--size"),
        (to_discard(&["--timeout", "1m"]), "--timeout"),
        (to_discard(&["--warmup", "2d"]), "--warmup"),
    ];
    let cases: Vec<(&[&str], &str)> = cases.iter().map(|(a, f)| (&a[..], *f)).collect();
    each_names_its_flag(&cases);
}

#[test]
fn ctrl_c_stops_sending_and_still_reports() {
    let child = Command::new(env!("CARGO_BIN_EXE_isola"))
        .args([
            "load",
            "udp",
            "--echo-baseline",
            "--rate",
            "2k/s",
            "--duration",
            "60s",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(r["stopped"], "interrupted", "{r}");
    let t = &r["total"];
    let (sent, received, lost) = (
        t["sent"].as_u64().unwrap(),
        t["received"].as_u64().unwrap(),
        t["lost"].as_u64().unwrap(),
    );
    assert!(sent > 0 && sent == received + lost, "{r}");
    assert!(r["measured_s"].as_f64().unwrap() < 30.0, "{r}");
}
