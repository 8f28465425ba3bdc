//! Nothing counted twice two ways, nothing silent (issue 28): what
//! `isola ctl list` shows for a tenant is what a Prometheus scrape shows,
//! with ring tasks and packets apart in both; a packet its kernel was
//! stopped on is answered with an error datagram where its flow asks for
//! one, and with nothing where it does not.

use isola_client::{Client, CompletionStatus};
use isola_daemon::{Daemon, DaemonConfig, ERROR_REPLY_PREFIX};
use isola_wire::admin::{AdminReply, AdminRequest, TenantStatus};
use isola_wire::{control, Submission};
use prometheus_parse::{Scrape, Value};
use rustix::fd::AsFd;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A UDP socket on a port of its own, reads timing out after 2 s.
fn socket() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s
}

fn port(s: &UdpSocket) -> u16 {
    s.local_addr().unwrap().port()
}

/// A daemon in its own folder from `text`.
fn start(name: &str, text: &str) -> Daemon {
    let dir = std::env::temp_dir().join(format!("isolad-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Daemon::start(DaemonConfig::parse(text, &dir.join("isolad.toml")).unwrap()).unwrap()
}

/// Tenant `name` as `isola ctl list` shows it.
fn listed(d: &Daemon, name: &str) -> TenantStatus {
    let admin = control::connect(d.admin_socket()).unwrap();
    control::send(admin.as_fd(), &AdminRequest::List { from: 0 }, None).unwrap();
    match control::recv::<AdminReply>(admin.as_fd()).unwrap().0 {
        AdminReply::Tenants { tenants, .. } => tenants.into_iter().find(|t| t.name == name).unwrap(),
        other => panic!("{other:?}"),
    }
}

/// A scrape of the daemon's metrics, parsed.
fn scrape(addr: SocketAddr) -> Scrape {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: isolad\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let body = answer.split_once("\r\n\r\n").expect("an HTTP response").1;
    Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap()
}

/// The sum of `name`'s samples whose labels include `labels`.
fn sum(s: &Scrape, name: &str, labels: &[(&str, &str)]) -> u64 {
    s.samples
        .iter()
        .filter(|x| x.metric == name && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .map(|x| match &x.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v as u64,
            other => panic!("{name}: {other:?}"),
        })
        .sum()
}

#[test]
fn ctl_list_and_prometheus_give_one_count_per_thing() {
    let sender = socket();
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:0\"]\nmetrics = \"127.0.0.1:0\"\n\
         [[engine]]\nname = \"acc\"\nworkers = 1\n\
         [[tenant]]\nname = \"a\"\nmemory_quota = \"64KiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {} }}\nkernel = \"crc32c\"\n",
        port(&sender)
    );
    let d = start("one-count", &text);
    let metrics = d.metrics_addr().unwrap();
    // 7 ring tasks, 2 of them refused (an unknown handle)...
    let mut a = Client::connect(d.socket(), "a").unwrap();
    let crc = a.register("crc32c", &BTreeMap::new()).unwrap();
    a.write(0, b"123456789").unwrap();
    for (tag, handle) in [crc, crc, 99, crc, crc, 99, crc].into_iter().enumerate() {
        let s = Submission {
            handle,
            flags: 0,
            input_offset: 0,
            input_len: 9,
            output_offset: 1024,
            output_cap: 4,
            tag: tag as u64,
        };
        a.submit(&s).unwrap();
        let outcome = a.wait().unwrap().outcome;
        assert_eq!(outcome == CompletionStatus::Ok, handle == crc, "{outcome:?}");
    }
    // ... and 11 packets, each answered.
    let mut reply = [0u8; 64];
    for _ in 0..11 {
        sender.send_to(b"123456789", d.udp_addrs()[0]).unwrap();
        let (n, _) = sender.recv_from(&mut reply).unwrap();
        assert_eq!(&reply[..n], &0xE306_9283u32.to_be_bytes());
    }
    // A reply is counted right after it is sent: wait for the last.
    let start = Instant::now();
    let (row, s) = loop {
        let (row, s) = (listed(&d, "a"), scrape(metrics));
        if row.figures.packets_replied == 11
            && sum(&s, "isola_packets_total", &[("outcome", "replied")]) == 11
        {
            break (row, s);
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{row:?}");
        std::thread::sleep(Duration::from_millis(10));
    };
    let f = row.figures;
    let a = [("tenant", "a")];
    assert_eq!(
        (f.submitted, f.succeeded, f.rejected, f.failed),
        (7, 5, 2, 0),
        "{f:?}"
    );
    assert_eq!(f.submitted, sum(&s, "isola_tasks_submitted_total", &a));
    assert_eq!(f.succeeded, sum(&s, "isola_tasks_completed_total", &a));
    assert_eq!(f.rejected, sum(&s, "isola_tasks_rejected_total", &a));
    assert_eq!(f.failed + f.cancelled, sum(&s, "isola_tasks_failed_total", &a));
    assert_eq!(f.bytes, sum(&s, "isola_task_input_bytes_total", &a));
    for (figure, outcome) in [
        (f.packets_received, "received"),
        (f.packets_replied, "replied"),
        (f.packets_dropped, "dropped"),
        (f.packets_aborted, "aborted"),
    ] {
        let labels = [("tenant", "a"), ("outcome", outcome)];
        assert_eq!(figure, sum(&s, "isola_packets_total", &labels), "{outcome}");
    }
    assert_eq!(f.packets_received, 11);
}

#[test]
fn a_packet_stopped_by_fuel_is_logged_and_answered_where_its_flow_asks() {
    let kernels = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/kernels");
    let (told, silent) = (socket(), socket());
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:0\"]\n\
         [[engine]]\nname = \"pu\"\nkind = \"pu\"\nworkers = 1\n\
         [[tenant]]\nname = \"t\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {} }}\nkernel = \"wasm:{k}/spin.wat\"\nfuel = 20000\nerror_reply = true\n\
         [[tenant.flow]]\nmatch = {{ src_port = {} }}\nkernel = \"wasm:{k}/spin.wat\"\nfuel = 20000\n",
        port(&told),
        port(&silent),
        k = kernels.display()
    );
    let d = start("error-reply", &text);
    let to = d.udp_addrs()[0];
    let mut reply = [0u8; 1024];
    // A packet the kernel serves is echoed, error replies or not.
    told.send_to(b"hello", to).unwrap();
    let (n, _) = told.recv_from(&mut reply).unwrap();
    assert_eq!(&reply[..n], b"hello");
    // One it loops on is stopped by fuel (cause 1) and the sender told.
    told.send_to(&[0xff, 1, 2], to).unwrap();
    let (n, _) = told.recv_from(&mut reply).unwrap();
    let text = String::from_utf8_lossy(&reply[..n]).to_string();
    assert!(reply[..n].starts_with(ERROR_REPLY_PREFIX), "{text}");
    assert_eq!(
        text,
        "ISOLA-ABORTED 1 its kernel was stopped: kernel ran out of fuel (limit 20000 per packet)"
    );
    // Without `error_reply`, the sender hears nothing, as before.
    silent.send_to(&[0xff], to).unwrap();
    silent.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    assert!(
        silent.recv_from(&mut reply).is_err(),
        "no reply to a stopped packet"
    );
    // Both were counted aborted (and told the tenant).
    let start = Instant::now();
    while d.packet_counts().tenants[0].3 != 2 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            d.packet_counts()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// isolad's log names each aborted packet's tenant, flow, sender and
/// cause, at most once a second per tenant, counting those it did not
/// name (the real binary, its standard error read).
#[test]
fn the_log_tells_of_aborted_packets_at_most_once_a_second() {
    use std::io::BufRead;
    let kernels = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/kernels");
    let dir = std::env::temp_dir().join(format!("isolad-abort-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A free port for the daemon's listener (bound and released).
    let free = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let sender = socket();
    let config = dir.join("isolad.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"{free}\"]\n\
             [[engine]]\nname = \"pu\"\nkind = \"pu\"\nworkers = 1\n\
             [[tenant]]\nname = \"hostile\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
             [[tenant.flow]]\nmatch = {{ src_port = {} }}\nkernel = \"wasm:{}/spin.wat\"\nfuel = 20000\n",
            port(&sender),
            kernels.display()
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_isolad"))
        .arg("--config")
        .arg(&config)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    // The daemon is up once it says where it serves.
    while !line.contains("serving tenants") {
        line.clear();
        assert!(log.read_line(&mut line).unwrap() > 0, "isolad ended");
    }
    // A served packet proves the listener is up: the kernel echoes it.
    let mut reply = [0u8; 64];
    sender.send_to(b"up", free).unwrap();
    assert_eq!(sender.recv_from(&mut reply).unwrap().0, 2);
    for _ in 0..5 {
        sender.send_to(&[0xff], free).unwrap();
    }
    std::thread::sleep(Duration::from_millis(1200));
    sender.send_to(&[0xff], free).unwrap();
    // Read the log until its second line about them (a watchdog ends the
    // daemon, and so the log, if it never comes).
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let done = std::sync::Arc::clone(&done);
        std::thread::spawn(move || {
            let start = Instant::now();
            // The child is not reaped before `done`, so its pid is its own.
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                if start.elapsed() > Duration::from_secs(20) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let mut rest = String::new();
    while rest.matches("aborted (cause").count() < 2 {
        line.clear();
        if log.read_line(&mut line).unwrap() == 0 {
            break;
        }
        rest.push_str(&line);
    }
    // None more comes of them before the daemon is stopped.
    std::thread::sleep(Duration::from_millis(300));
    done.store(true, std::sync::atomic::Ordering::Release);
    watchdog.join().unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    log.read_to_string(&mut rest).unwrap();
    assert!(
        child.wait().unwrap().success(),
        "isolad was stopped by the watchdog:\n{rest}"
    );
    let aborted: Vec<&str> = rest.lines().filter(|l| l.contains("aborted (cause")).collect();
    let from = format!("packet from {}", sender.local_addr().unwrap());
    assert_eq!(aborted.len(), 2, "one line, then one a second later:\n{rest}");
    for l in &aborted {
        assert!(
            l.starts_with("isolad: tenant `hostile` flow 0: ")
                && l.contains(&from)
                && l.contains("aborted (cause 1): its kernel was stopped: kernel ran out of fuel"),
            "{l}"
        );
    }
    assert!(
        aborted[1].ends_with("(4 more of its packets aborted since the last such line)"),
        "{}",
        aborted[1]
    );
}
