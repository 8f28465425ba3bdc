//! A real daemon with its metrics endpoint on a loopback port, tenants
//! attaching through the client crate: what a plain HTTP scrape shows,
//! read with a Prometheus text-format parser (and checked by `promtool`
//! where it is installed), matches what each tenant submitted and was
//! answered, and stays when the tenant leaves.

use isola_client::{Client, CompletionStatus};
use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::Submission;
use prometheus_parse::{Scrape, Value};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A daemon serving metrics on a free loopback port: engine `acc` runs
/// `crc32c`, `hash` runs `sha256`; tenant `a` has a latency objective of
/// 1 ns (every task misses it), `c` none.
fn daemon(name: &str) -> (Daemon, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("isolad-metrics-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let uid = rustix::process::getuid().as_raw();
    let text = format!(
        r#"[daemon]
socket = "isolad.sock"
metrics = "127.0.0.1:0"

[[engine]]
name = "acc"
ops = ["crc32c"]
cost = {{ base = "1us", per_byte_ns = 0.5 }}

[[engine]]
name = "hash"
ops = ["sha256"]

[[tenant]]
name = "a"
memory_quota = "64KiB"
users = [{uid}]
latency = "1ns"
sq_entries = 16
cq_entries = 16

[[tenant]]
name = "c"
memory_quota = "64KiB"
users = [{uid}]
"#
    );
    let path = dir.join("isolad.toml");
    let config = DaemonConfig::parse(&text, &path).unwrap();
    let d = Daemon::start(config).unwrap();
    let socket = d.socket().to_path_buf();
    (d, socket, path)
}

/// Sends `request` and reads the whole answer: status line, head, body.
fn http(addr: SocketAddr, request: &str) -> (String, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP response");
    let (status, head) = head.split_once("\r\n").unwrap_or((head, ""));
    (status.to_string(), head.to_string(), body.to_string())
}

/// A plain scrape, as `curl` does it: Prometheus' text format.
fn scrape_text(addr: SocketAddr) -> String {
    let (status, head, body) = http(addr, "GET /metrics HTTP/1.1\r\nHost: isolad\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK", "{head}");
    assert!(head.contains("Content-Type: text/plain; version=0.0.4"), "{head}");
    body
}

fn parse(text: &str) -> Scrape {
    Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap()
}

/// The value of the sample `name` with exactly `labels`.
fn value(s: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<_> = s
        .samples
        .iter()
        .filter(|x| x.metric == name && x.labels.len() == labels.len())
        .filter(|x| labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .collect();
    assert_eq!(found.len(), 1, "{name} {labels:?}: {found:?}");
    match &found[0].value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        Value::Histogram(buckets) => buckets
            .iter()
            .find(|b| b.less_than.is_infinite())
            .map(|b| b.count)
            .unwrap(),
        other => panic!("{name}: {other:?}"),
    }
}

fn te<'a>(tenant: &'a str, engine: &'a str) -> [(&'a str, &'a str); 2] {
    [("tenant", tenant), ("engine", engine)]
}

fn reason<'a>(tenant: &'a str, engine: &'a str, reason: &'a str) -> [(&'a str, &'a str); 3] {
    [("tenant", tenant), ("engine", engine), ("reason", reason)]
}

/// Checks `text` with `promtool check metrics` where it is installed
/// (required with ISOLA_REQUIRE_PROMETHEUS=1).
fn promtool_check(text: &str) {
    let child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            assert!(
                std::env::var_os("ISOLA_REQUIRE_PROMETHEUS").is_none(),
                "ISOLA_REQUIRE_PROMETHEUS is set but promtool cannot run: {e}"
            );
            eprintln!(
                "skipping promtool check metrics: promtool cannot run ({e}); apt-get install prometheus"
            );
            return;
        }
    };
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What the tenant saw of each kind, to compare the metrics with.
#[derive(Debug, Default)]
struct Seen {
    ok: u64,
    over_quota: u64,
}

fn submission(handle: u32, input_len: u64, output_cap: u64, tag: u64) -> Submission {
    Submission {
        handle,
        flags: 0,
        input_offset: 0,
        input_len,
        output_offset: 60 << 10,
        output_cap,
        tag,
    }
}

/// Waits (a bounded while) until a scrape satisfies `ready`.
fn scrape_until(addr: SocketAddr, ready: impl Fn(&Scrape) -> bool) -> (Scrape, String) {
    let start = Instant::now();
    loop {
        let text = scrape_text(addr);
        let s = parse(&text);
        if ready(&s) {
            return (s, text);
        }
        assert!(start.elapsed() < Duration::from_secs(20), "never ready:\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Submits `s` as `c` with the next tag and waits for its answer.
fn run(c: &mut Client, tag: &mut u64, s: Submission) -> CompletionStatus {
    *tag += 1;
    c.submit(&Submission { tag: *tag, ..s }).unwrap();
    c.wait().unwrap().outcome
}

/// Tenant `a`'s work, checking each answer: 10 crc32c and 4 sha256 tasks,
/// 3 bad entries, 3 tasks for an operator no engine serves, and 10 rounds
/// of 3 tasks of 40 KiB at once against its 64 KiB quota. Returns its
/// client (still connected) and what it saw of the rounds.
fn tenant_a(socket: &Path, tag: &mut u64) -> (Client, Seen) {
    let mut a = Client::connect(socket, "a").unwrap();
    let crc = a.register("crc32c", &BTreeMap::new()).unwrap();
    let sha = a.register("sha256", &BTreeMap::new()).unwrap();
    let md5 = a.register("md5", &BTreeMap::new()).unwrap();
    a.write(0, b"123456789").unwrap();
    for _ in 0..10 {
        assert_eq!(run(&mut a, tag, submission(crc, 9, 4, 0)), CompletionStatus::Ok);
    }
    for _ in 0..4 {
        assert_eq!(run(&mut a, tag, submission(sha, 9, 32, 0)), CompletionStatus::Ok);
    }
    // Bad entries: two with an unknown handle (no engine), one whose
    // input lies outside the arena (on `acc`, crc32c's engine).
    for _ in 0..2 {
        assert!(matches!(
            run(&mut a, tag, submission(99, 9, 4, 0)),
            CompletionStatus::BadEntry(_)
        ));
    }
    let outside = Submission {
        input_offset: 1 << 40,
        ..submission(crc, 9, 4, 0)
    };
    assert!(matches!(run(&mut a, tag, outside), CompletionStatus::BadEntry(_)));
    // An operator no engine serves.
    for _ in 0..3 {
        assert_eq!(
            run(&mut a, tag, submission(md5, 9, 16, 0)),
            CompletionStatus::Rejected(3)
        );
    }
    // Over quota: three tasks of 40 KiB at once against a 64 KiB quota.
    let mut seen = Seen::default();
    for round in 0..10u64 {
        let big = |i: u64| submission(crc, 40 << 10, 4, 1000 + 3 * round + i);
        a.submit_all(&[big(0), big(1), big(2)]).unwrap();
        for _ in 0..3 {
            match a.wait().unwrap().outcome {
                CompletionStatus::Ok => seen.ok += 1,
                CompletionStatus::Rejected(2) => seen.over_quota += 1,
                other => panic!("{other:?}"),
            }
        }
    }
    assert!(seen.over_quota > 0, "{seen:?}");
    (a, seen)
}

/// One expected sample: its name, its labels and its value.
type Expected = (&'static str, Vec<(&'static str, &'static str)>, u64);

/// Every counter and gauge after [`tenant_a`] (which saw `seen`) and `c`'s
/// 5 crc32c tasks, both still connected.
fn expected(seen: &Seen) -> Vec<Expected> {
    let acc_done = 10 + seen.ok;
    vec![
        (
            "isola_tasks_submitted_total",
            te("a", "acc").to_vec(),
            10 + 30 + 1,
        ),
        ("isola_tasks_completed_total", te("a", "acc").to_vec(), acc_done),
        ("isola_tasks_submitted_total", te("a", "hash").to_vec(), 4),
        ("isola_tasks_completed_total", te("a", "hash").to_vec(), 4),
        ("isola_tasks_submitted_total", te("a", "none").to_vec(), 5),
        ("isola_tasks_submitted_total", te("c", "acc").to_vec(), 5),
        ("isola_tasks_completed_total", te("c", "acc").to_vec(), 5),
        ("isola_tasks_submitted_total", te("c", "hash").to_vec(), 0),
        (
            "isola_tasks_rejected_total",
            reason("a", "acc", "over_quota").to_vec(),
            seen.over_quota,
        ),
        (
            "isola_tasks_rejected_total",
            reason("a", "acc", "bad_entry").to_vec(),
            1,
        ),
        (
            "isola_tasks_rejected_total",
            reason("a", "acc", "channel_full").to_vec(),
            0,
        ),
        (
            "isola_tasks_rejected_total",
            reason("a", "none", "bad_entry").to_vec(),
            2,
        ),
        (
            "isola_tasks_rejected_total",
            reason("a", "none", "no_engine").to_vec(),
            3,
        ),
        (
            "isola_tasks_failed_total",
            reason("a", "acc", "operator").to_vec(),
            0,
        ),
        (
            "isola_task_input_bytes_total",
            te("a", "acc").to_vec(),
            10 * 9 + 30 * (40 << 10),
        ),
        ("isola_task_input_bytes_total", te("a", "hash").to_vec(), 4 * 9),
        (
            "isola_task_output_bytes_total",
            te("a", "acc").to_vec(),
            4 * acc_done,
        ),
        ("isola_task_output_bytes_total", te("a", "hash").to_vec(), 4 * 32),
        ("isola_task_latency_seconds", te("a", "acc").to_vec(), acc_done),
        ("isola_task_latency_seconds", te("c", "acc").to_vec(), 5),
        // `a`'s objective is 1 ns: every task it completed missed it; `c`
        // has none, so nothing is counted.
        ("isola_sla_violations_total", te("a", "acc").to_vec(), acc_done),
        ("isola_sla_violations_total", te("a", "hash").to_vec(), 4),
        ("isola_sla_violations_total", te("c", "acc").to_vec(), 0),
        ("isola_queue_depth", te("a", "acc").to_vec(), 0),
        ("isola_tenant_connections", vec![("tenant", "a")], 1),
        ("isola_tenant_connections", vec![("tenant", "c")], 1),
    ]
}

#[test]
fn counters_match_what_each_tenant_submitted_and_outlive_its_connection() {
    let (d, socket, config_path) = daemon("counts");
    let addr = d.metrics_addr().expect("metrics are served");
    // Before any task, every series is there at zero.
    let s = parse(&scrape_text(addr));
    assert_eq!(value(&s, "isola_tasks_submitted_total", &te("a", "acc")), 0.0);
    assert_eq!(value(&s, "isola_tenant_connections", &[("tenant", "a")]), 0.0);

    let mut tag = 0;
    let (a, seen) = tenant_a(&socket, &mut tag);
    // Tenant `c`, without a latency objective.
    let mut c = Client::connect(&socket, "c").unwrap();
    let crc_c = c.register("crc32c", &BTreeMap::new()).unwrap();
    c.write(0, b"123456789").unwrap();
    for _ in 0..5 {
        assert_eq!(
            run(&mut c, &mut tag, submission(crc_c, 9, 4, 0)),
            CompletionStatus::Ok
        );
    }

    // The fairness index is recomputed every second.
    std::thread::sleep(Duration::from_millis(1100));
    let text = scrape_text(addr);
    let s = parse(&text);
    let expected = expected(&seen);
    for (name, labels, want) in &expected {
        assert_eq!(value(&s, name, labels), *want as f64, "{name} {labels:?}\n{text}");
    }
    // Every series with an engine label names a configured engine, or none.
    assert!(s
        .samples
        .iter()
        .filter_map(|x| x.labels.get("engine"))
        .all(|e| ["acc", "hash", "none"].contains(&e)));
    assert!(value(&s, "isola_engine_busy_seconds_total", &te("a", "acc")) > 0.0);
    let jain = value(&s, "isola_engine_fairness_jain", &[("engine", "acc")]);
    assert!(jain > 0.0 && jain <= 1.0, "{jain}");
    let info = [
        ("version", env!("CARGO_PKG_VERSION")),
        ("config", config_path.to_str().unwrap()),
    ];
    assert_eq!(value(&s, "isola_daemon_info", &info), 1.0);
    promtool_check(&text);

    // `a` leaves: its connection is counted down, its counters stay.
    drop(a);
    let (after, text) = scrape_until(addr, |s| {
        value(s, "isola_tenant_connections", &[("tenant", "a")]) == 0.0
    });
    for (name, labels, want) in expected.iter().filter(|(n, ..)| *n != "isola_tenant_connections") {
        assert_eq!(
            value(&after, name, labels),
            *want as f64,
            "{name} {labels:?}\n{text}"
        );
    }
    assert_eq!(value(&after, "isola_tenant_connections", &[("tenant", "c")]), 1.0);
}

#[test]
fn openmetrics_is_served_to_who_asks_and_anything_else_is_refused() {
    let (d, _socket, _) = daemon("http");
    let addr = d.metrics_addr().unwrap();
    let (status, head, body) = http(
        addr,
        "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n\r\n",
    );
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        head.contains("Content-Type: application/openmetrics-text; version=1.0.0"),
        "{head}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert!(body.contains("# TYPE isola_tasks_submitted counter\n"), "{body}");
    assert!(body.contains("# TYPE isola_daemon info\n"), "{body}");
    let (status, _, body) = http(addr, "HEAD /metrics HTTP/1.1\r\n\r\n");
    assert_eq!((status.as_str(), body.as_str()), ("HTTP/1.1 200 OK", ""));
    assert_eq!(http(addr, "GET / HTTP/1.1\r\n\r\n").0, "HTTP/1.1 404 Not Found");
    assert_eq!(
        http(addr, "GET /metricsx HTTP/1.1\r\n\r\n").0,
        "HTTP/1.1 404 Not Found"
    );
    let (status, head, _) = http(addr, "POST /metrics HTTP/1.1\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 405 Method Not Allowed");
    assert!(head.contains("Allow: GET, HEAD"), "{head}");
    assert_eq!(http(addr, "nonsense\r\n\r\n").0, "HTTP/1.1 400 Bad Request");
    // A head larger than the daemon reads.
    let huge = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "x".repeat(10_000));
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = s.write_all(huge.as_bytes());
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(
        answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large"),
        "{answer}"
    );
}

#[test]
fn slow_clients_do_not_hold_up_a_scrape() {
    let (d, _socket, _) = daemon("slow");
    let addr = d.metrics_addr().unwrap();
    // Clients that connect and send half a request, or nothing, and hold
    // their connection open.
    let mut slow: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(addr).unwrap()).collect();
    for s in &mut slow[..2] {
        s.write_all(b"GET /metr").unwrap();
    }
    let start = Instant::now();
    for _ in 0..5 {
        scrape_text(addr);
    }
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    drop(slow);
    // Stopping the daemon stops the endpoint.
    drop(d);
    assert!(TcpStream::connect(addr).is_err(), "still listening");
}

#[test]
fn a_metrics_address_in_use_is_an_error_that_names_it() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = std::env::temp_dir().join(format!("isolad-metrics-inuse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\nmetrics = \"127.0.0.1:{port}\"\n[[engine]]\nname = \"acc\"\n\
         [[tenant]]\nname = \"a\"\nmemory_quota = \"64KiB\"\nusers = [0]\n"
    );
    let config = DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap();
    let socket = config.socket.clone();
    let err = Daemon::start(config).err().expect("the port is taken");
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(!socket.exists(), "the socket was left behind");
    // A malformed address is a configuration error at its line.
    let bad = text.replace(&format!("127.0.0.1:{port}"), "localhost");
    let e = DaemonConfig::parse(&bad, Path::new("d.toml")).unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (3, Some("metrics")), "{e}");
    let e = DaemonConfig::parse(
        &text.replace(
            "users = [0]",
            "users = [0]\nlatency = \"1ms\"\nlatency_multiple = 3.0",
        ),
        Path::new("d.toml"),
    )
    .unwrap_err();
    assert_eq!(e.key.as_deref(), Some("latency_multiple"), "{e}");
}

#[test]
fn a_tenant_added_live_gets_its_series_and_keeps_them_once_removed() {
    let (d, socket, _) = daemon("live");
    let addr = d.metrics_addr().unwrap();
    let admin = isola_wire::control::connect(d.admin_socket()).unwrap();
    let ask = |request: &isola_wire::admin::AdminRequest| {
        use rustix::fd::AsFd;
        isola_wire::control::send(admin.as_fd(), request, None).unwrap();
        let (reply, _) = isola_wire::control::recv::<isola_wire::admin::AdminReply>(admin.as_fd()).unwrap();
        assert!(
            matches!(reply, isola_wire::admin::AdminReply::Done { .. }),
            "{reply:?}"
        );
    };
    let uid = rustix::process::getuid().as_raw();
    let table = format!("name = \"n\"\nmemory_quota = \"64KiB\"\nusers = [{uid}]\nweight = 2.0\n");
    ask(&isola_wire::admin::AdminRequest::AddTable {
        table,
        origin: "isola ctl add".into(),
    });
    let mut c = Client::connect(&socket, "n").unwrap();
    let h = c.register("crc32c", &BTreeMap::new()).unwrap();
    c.write(0, b"123456789").unwrap();
    c.submit_all(&[submission(h, 9, 4, 1), submission(h, 9, 4, 2)])
        .unwrap();
    for _ in 0..2 {
        assert_eq!(c.wait().unwrap().outcome, CompletionStatus::Ok);
    }
    let (s, _) = scrape_until(addr, |s| {
        s.samples
            .iter()
            .any(|x| x.metric == "isola_tasks_completed_total" && x.labels.get("tenant") == Some("n"))
    });
    assert_eq!(value(&s, "isola_tasks_completed_total", &te("n", "acc")), 2.0);
    assert_eq!(value(&s, "isola_tenant_connections", &[("tenant", "n")]), 1.0);
    drop(c);
    ask(&isola_wire::admin::AdminRequest::Remove { tenant: "n".into() });
    let (s, _) = scrape_until(addr, |s| {
        value(s, "isola_tenant_connections", &[("tenant", "n")]) == 0.0
    });
    assert_eq!(
        value(&s, "isola_tasks_completed_total", &te("n", "acc")),
        2.0,
        "counters stay"
    );
}
