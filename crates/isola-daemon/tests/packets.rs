//! The packet path's first part (issue 16), on real UDP sockets: a
//! datagram is matched on its 5-tuple to a tenant's flow queue, its
//! kernel runs as a task of that tenant and the reply carries the
//! kernel's output; unmatched datagrams are counted and dropped; a flow
//! added live through the control plane takes packets at once.

mod config_file;

use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::admin::{AdminReply, AdminRequest};
use isola_wire::control;
use rustix::fd::AsFd;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

/// Waits (10 s at most) until the first tenants' packet counts are
/// `want`: a reply is counted right after it is sent, so a client may
/// read it first.
fn wait_for_counts(d: &Daemon, want: &[(u64, u64, u64, u64)]) {
    let start = Instant::now();
    while d.packet_counts().tenants[..want.len()] != *want {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            d.packet_counts()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn client() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

#[test]
fn datagrams_go_to_their_tenants_kernel_and_the_reply_carries_its_output() {
    let dir = std::env::temp_dir().join(format!("isolad-packets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b, stranger) = (client(), client(), client());
    let (pa, pb) = (a.local_addr().unwrap().port(), b.local_addr().unwrap().port());
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:0\"]\nmetrics = \"127.0.0.1:0\"\n\
         [[engine]]\nname = \"pu\"\nworkers = 1\npolicy = \"wlbvt\"\n\
         [[tenant]]\nname = \"a\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {pa}, proto = 17 }}\nkernel = \"crc32c\"\n\
         [[tenant]]\nname = \"b\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {pb} }}\nkernel = \"sha256\"\n"
    );
    let config = DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap();
    let d = Daemon::start(config).unwrap();
    let ingress = d.udp_addrs()[0];
    let mut reply = [0u8; 2048];
    for _ in 0..10 {
        a.send_to(b"123456789", ingress).unwrap();
        let (n, from) = a.recv_from(&mut reply).unwrap();
        assert_eq!(from, ingress);
        // CRC-32C of "123456789", the published check value.
        assert_eq!(&reply[..n], &0xE306_9283u32.to_be_bytes());
    }
    b.send_to(b"abc", ingress).unwrap();
    let (n, _) = b.recv_from(&mut reply).unwrap();
    // SHA-256("abc"), FIPS 180-2's example.
    assert_eq!(
        reply[..n].iter().map(|x| format!("{x:02x}")).collect::<String>(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    // A datagram no flow takes is counted, never answered.
    stranger.send_to(b"nobody's", ingress).unwrap();
    let start = Instant::now();
    while d.packet_counts().unmatched < 1 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the unmatched datagram was not counted"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // A reply is counted right after it is sent: the client may read it
    // first.
    let start = Instant::now();
    while d.packet_counts().tenants[..2] != [(10, 10, 0, 0), (1, 1, 0, 0)]
        && start.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let counts = d.packet_counts();
    assert_eq!(counts.tenants[0], (10, 10, 0, 0));
    assert_eq!(counts.tenants[1], (1, 1, 0, 0));
    // The same in Prometheus' exposition.
    let scrape = {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(d.metrics_addr().unwrap()).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    };
    for line in [
        "isola_packets_total{tenant=\"a\",outcome=\"replied\"} 10",
        "isola_packets_total{tenant=\"b\",outcome=\"received\"} 1",
        "isola_packets_unmatched_total 1",
    ] {
        assert!(scrape.lines().any(|l| l == line), "{line} not in:\n{scrape}");
    }
    // The kernels' engine time is the tenants' busy time, as a socket
    // task's is.
    for tenant in ["a", "b"] {
        let series = format!("isola_engine_busy_seconds_total{{tenant=\"{tenant}\",engine=\"pu\"}} ");
        let busy: f64 = scrape
            .lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .unwrap_or_else(|| panic!("{series} not in:\n{scrape}"))
            .parse()
            .unwrap();
        assert!(busy > 0.0, "{series}{busy}");
    }
    // A flow added live (tenant c, taking the stranger's packets).
    let admin = control::connect(d.admin_socket()).unwrap();
    let ps = stranger.local_addr().unwrap().port();
    let table = format!(
        "name = \"c\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[flow]]\nmatch = {{ src_port = {ps} }}\nkernel = \"crc32c\"\n"
    );
    control::send(
        admin.as_fd(),
        &AdminRequest::AddTable {
            table,
            origin: "isola ctl add".into(),
        },
        None,
    )
    .unwrap();
    let (answer, _) = control::recv::<AdminReply>(admin.as_fd()).unwrap();
    assert!(matches!(answer, AdminReply::Done { .. }), "{answer:?}");
    stranger.send_to(b"123456789", ingress).unwrap();
    let (n, _) = stranger.recv_from(&mut reply).unwrap();
    assert_eq!(&reply[..n], &0xE306_9283u32.to_be_bytes());
}

#[test]
fn a_bad_flow_is_refused_at_its_line() {
    let text = "[daemon]\nsocket = \"s\"\nudp = [\"nowhere\"]\n[[engine]]\nname = \"pu\"\n\
                [[tenant]]\nname = \"a\"\nmemory_quota = \"1MiB\"\nusers = [0]\n";
    let e = DaemonConfig::parse(text, std::path::Path::new("d.toml")).unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (3, Some("udp")), "{e}");
    let text = "[daemon]\nsocket = \"s\"\nudp = [\"127.0.0.1:9000\"]\n[[engine]]\nname = \"pu\"\n\
                [[tenant]]\nname = \"a\"\nmemory_quota = \"1MiB\"\nusers = [0]\n\
                [[tenant.flow]]\nkernel = \"teleport\"\n";
    let e = DaemonConfig::parse(text, std::path::Path::new("d.toml")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("kernel"), "{e}");
}

/// A flow that no `[daemon] udp` address can ever hand a packet (another
/// port, another address, another protocol, or no listener at all) is
/// refused at its line with the key `match`, from the file and from
/// `isola ctl add` alike; one that a listener serves is taken.
#[test]
fn a_flow_no_listener_serves_is_refused_at_its_line() {
    let config = |udp: &str, rule: &str| {
        format!(
            "[daemon]\nsocket = \"s\"\n{udp}\n[[engine]]\nname = \"pu\"\n\
             [[tenant]]\nname = \"a\"\nmemory_quota = \"1MiB\"\nusers = [0]\n\n\
             [[tenant.flow]]\nmatch = {rule}\nkernel = \"crc32c\"\n"
        )
    };
    let path = std::path::Path::new("d.toml");
    for (udp, rule, says) in [
        ("udp = [\"127.0.0.1:9000\"]", "{ dst_port = 9001 }", "port 9001"),
        (
            "udp = [\"127.0.0.1:9000\"]",
            "{ dst_ip = \"10.0.0.1\", dst_port = 9000 }",
            "10.0.0.1:9000",
        ),
        (
            "udp = [\"127.0.0.1:9000\"]",
            "{ dst_port = 9000, proto = 6 }",
            "proto = 6",
        ),
        ("", "{ dst_port = 9000 }", "listens for no packets"),
    ] {
        let e = DaemonConfig::parse(&config(udp, rule), path).unwrap_err();
        assert_eq!(
            (e.line, e.key.as_deref()),
            (12, Some("match")),
            "{udp} {rule}: {e}"
        );
        assert!(e.to_string().contains(says), "{udp} {rule}: {e}");
    }
    for (udp, rule) in [
        (
            "udp = [\"127.0.0.1:9000\", \"127.0.0.1:9001\"]",
            "{ dst_port = 9001, proto = 17 }",
        ),
        (
            "udp = [\"0.0.0.0:9000\"]",
            "{ dst_ip = \"10.0.0.1\", dst_port = 9000 }",
        ),
        ("udp = [\"127.0.0.1:0\"]", "{ dst_port = 4242 }"),
        ("udp = [\"127.0.0.1:9000\"]", "{ src_port = 5000 }"),
    ] {
        DaemonConfig::parse(&config(udp, rule), path).unwrap_or_else(|e| panic!("{udp} {rule}: {e}"));
    }
    // `isola ctl add` checks a new tenant's flows against the same listeners.
    let daemon =
        DaemonConfig::parse(&config("udp = [\"127.0.0.1:9000\"]", "{ dst_port = 9000 }"), path).unwrap();
    let added = "name = \"b\"\nmemory_quota = \"1MiB\"\nusers = [0]\n\
                 [[flow]]\nmatch = { dst_port = 9002 }\nkernel = \"crc32c\"\n";
    let e = daemon.parse_tenant(added, "isola ctl add").unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (5, Some("match")), "{e}");
}

#[test]
fn malformed_datagrams_are_counted_and_never_stop_the_path() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let dir = std::env::temp_dir().join(format!("isolad-malformed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (sender, good) = (client(), client());
    let (ps, pg) = (
        sender.local_addr().unwrap().port(),
        good.local_addr().unwrap().port(),
    );
    // flow-monitor parses its payload as a batch of IPv4 packets: random
    // bytes are malformed packets to it.
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:0\"]\n\
         [[engine]]\nname = \"pu\"\nworkers = 1\npolicy = \"wlbvt\"\n\
         [[tenant]]\nname = \"a\"\nmemory_quota = \"4MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {ps} }}\nkernel = \"flow-monitor\"\n\
         [[tenant]]\nname = \"b\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {pg} }}\nkernel = \"crc32c\"\n"
    );
    let d = Daemon::start(DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap()).unwrap();
    let ingress = d.udp_addrs()[0];
    let sent = std::cell::Cell::new(0u64);
    let mut runner = TestRunner::new(Config {
        cases: 300,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(any::<u8>(), 0..3000), |bytes| {
            sender.send_to(&bytes, ingress).unwrap();
            sent.set(sent.get() + 1);
            // Paced, so that the socket's buffer never overflows (the
            // kernel would drop, unseen by the daemon).
            if sent.get() % 16 == 0 {
                let start = Instant::now();
                while d.packet_counts().tenants[0].0 < sent.get() && start.elapsed() < Duration::from_secs(10)
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            Ok(())
        })
        .unwrap();
    let sent = sent.get();
    // Each ended once: answered, or aborted by its kernel; none lost.
    let start = Instant::now();
    loop {
        let (received, replied, dropped, aborted) = d.packet_counts().tenants[0];
        if received == sent && replied + dropped + aborted == received {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "sent {sent}: received {received}, replied {replied}, dropped {dropped}, aborted {aborted}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The other tenant is served as before.
    good.send_to(b"123456789", ingress).unwrap();
    let mut reply = [0u8; 64];
    let (n, _) = good.recv_from(&mut reply).unwrap();
    assert_eq!(&reply[..n], &0xE306_9283u32.to_be_bytes());
}

#[test]
fn a_burst_of_two_tenants_is_answered_packet_for_packet_and_counted_once() {
    // Sent back to back, the two tenants' datagrams share received batches:
    // each tenant's replies leave as their own group, each carries its own
    // kernel's output, and each packet is counted once.
    let dir = std::env::temp_dir().join(format!("isolad-burst-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (client(), client());
    let (pa, pb) = (a.local_addr().unwrap().port(), b.local_addr().unwrap().port());
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:0\"]\n\
         [[engine]]\nname = \"pu\"\nworkers = 1\nqueue_depth = 8\npolicy = \"wlbvt\"\n\
         [[tenant]]\nname = \"a\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {pa} }}\nkernel = \"crc32c\"\n\
         [[tenant]]\nname = \"b\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {pb} }}\nkernel = \"sha256\"\n"
    );
    let d = Daemon::start(DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap()).unwrap();
    let ingress = d.udp_addrs()[0];
    let n = 64;
    for _ in 0..n {
        a.send_to(b"123456789", ingress).unwrap();
        b.send_to(b"abc", ingress).unwrap();
    }
    let mut reply = [0u8; 64];
    for _ in 0..n {
        let (len, _) = a.recv_from(&mut reply).unwrap();
        // CRC-32C of "123456789", the published check value.
        assert_eq!(&reply[..len], &0xE306_9283u32.to_be_bytes());
        let (len, _) = b.recv_from(&mut reply).unwrap();
        // SHA-256("abc"), FIPS 180-2's example.
        assert_eq!(
            reply[..len]
                .iter()
                .map(|x| format!("{x:02x}"))
                .collect::<String>(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
    wait_for_counts(&d, &[(n, n, 0, 0), (n, n, 0, 0)]);
    // Nothing more came back than was sent.
    a.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    assert!(a.recv_from(&mut reply).is_err());
}

#[test]
fn an_engines_kind_sets_its_default_policy() {
    let engine = |keys: &str| {
        format!(
            "[daemon]\nsocket = \"s\"\n[[engine]]\nname = \"e\"\n{keys}\n\
             [[tenant]]\nname = \"a\"\nmemory_quota = \"1MiB\"\nusers = [0]\n"
        )
    };
    let parse = |text: &str| DaemonConfig::parse(text, std::path::Path::new("d.toml"));
    let policy = |keys: &str| parse(&engine(keys)).unwrap().engines[0].policy.clone();
    // OSMOSIS' processing units run WLBVT; an accelerator fair queuing.
    assert_eq!(policy("kind = \"pu\""), "wlbvt");
    assert_eq!(policy(""), "sfq");
    assert_eq!(policy("kind = \"pu\"\npolicy = \"drr\""), "drr");
    // Its DMA and egress engines weighted round robin.
    assert_eq!(policy("kind = \"dma\""), "wrr");
    assert_eq!(policy("kind = \"egress\""), "wrr");
    for (keys, key, says) in [
        ("kind = \"warp\"", "kind", "unknown engine kind"),
        ("kind = \"egress\"\nops = [\"crc32c\"]", "ops", "runs no operator"),
    ] {
        let e = parse(&engine(keys)).unwrap_err();
        assert_eq!(e.key.as_deref(), Some(key), "{e}");
        assert!(e.to_string().contains(says), "{e}");
    }
}

/// `s`'s bytes, two hex digits each.
fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// NIST SP 800-38A, F.5.1 (CTR-AES128.Encrypt): four blocks of plaintext
/// (with the key and counter block in [`egress_daemon`]'s flow)...
const CTR_PLAINTEXT: &str = "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51\
     30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710";
/// ...and their ciphertext.
const CTR_BLOCKS: [&str; 4] = [
    "874d6191b620e3261bef6864990db6ce",
    "9806f66b7970fdff8617187bb9fffdff",
    "5ae4df3edbd5d35e5b4f09020db03eab",
    "1e031dda2fbe03d1792170a0f3009cee",
];

/// A daemon in `dir` with a processing-unit engine and an egress engine
/// that cuts replies into 16-byte pieces; tenant `a`'s flow, the packets
/// from port `pa`, runs AES-CTR with F.5.1's key and counter block.
fn egress_daemon(dir: &std::path::Path, pa: u16) -> Daemon {
    let text = format!(
        r#"[daemon]
socket = "isolad.sock"
udp = ["127.0.0.1:0"]
[[engine]]
name = "pu"
kind = "pu"
workers = 1
[[engine]]
name = "out"
kind = "egress"
split = "16B"
[[tenant]]
name = "a"
memory_quota = "1MiB"
users = ["self"]
[[tenant.flow]]
match = {{ src_port = {pa} }}
kernel = "aes-ctr"
params = {{ key = "2b7e151628aed2a6abf7158809cf4f3c", iv = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff" }}
"#
    );
    Daemon::start(DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap()).unwrap()
}

#[test]
fn with_an_egress_engine_a_reply_is_a_task_the_core_cuts_into_datagrams() {
    // NIST SP 800-38A, F.5.1 (CTR-AES128.Encrypt): four blocks of
    // plaintext and their ciphertext. The egress engine cuts each reply
    // into 16-byte pieces (its `split`), so the reply comes back as the
    // four ciphertext blocks, in order, from the port the packet went to.
    let plaintext = hex(CTR_PLAINTEXT);
    let blocks = CTR_BLOCKS;
    let dir = std::env::temp_dir().join(format!("isolad-egress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = client();
    let pa = a.local_addr().unwrap().port();
    let d = egress_daemon(&dir, pa);
    d.record_completions(true);
    let ingress = d.udp_addrs()[0];
    let packets = 3;
    for _ in 0..packets {
        a.send_to(&plaintext, ingress).unwrap();
        let mut buf = [0u8; 2048];
        for block in blocks {
            let (n, from) = a.recv_from(&mut buf).unwrap();
            assert_eq!(from, ingress);
            assert_eq!(buf[..n], hex(block)[..]);
        }
    }
    wait_for_counts(&d, &[(packets, packets, 0, 0)]);
    // Each reply was its tenant's task on the egress engine (engine 1),
    // in four pieces.
    let sends: Vec<_> = d
        .take_completions()
        .into_iter()
        .filter(|c| c.op == "egress")
        .collect();
    assert_eq!(sends.len(), packets as usize);
    assert!(sends
        .iter()
        .all(|c| c.engine.index() == 1 && c.subtasks == 4 && c.bytes == 64 && c.result.is_ok()));
}

#[test]
fn a_congested_flow_queue_marks_ecn_capable_packets_and_their_replies_carry_the_mark() {
    // Two tenants send the same burst of costly packets to one engine
    // worker; `a`'s carry ECT(0), `b`'s no ECN bits. With an ECN threshold
    // of 1, an ECN-capable packet that finds another of its tenant's
    // packets in the flow queues is taken in marked Congestion Experienced
    // (RFC 3168), and its reply comes back with CE in its IP header, as
    // the receiving kernel reads it; `b`'s packets are never marked.
    use isola_runtime::ip_tos::{self, ECN_CE, ECN_ECT0, ECN_MASK};
    let dir = std::env::temp_dir().join(format!("isolad-ecn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (client(), client());
    ip_tos::set_send_tos(&a, ECN_ECT0).unwrap();
    for s in [&a, &b] {
        ip_tos::set_recv_tos(s, true).unwrap();
    }
    let (pa, pb) = (a.local_addr().unwrap().port(), b.local_addr().unwrap().port());
    let tenant = |name: &str, port: u16| {
        format!(
            "[[tenant]]\nname = \"{name}\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
             queue_cap = 64\necn_threshold = 1\n\
             [[tenant.flow]]\nmatch = {{ src_port = {port} }}\nkernel = \"sha256\"\n"
        )
    };
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:0\"]\n\
         [[engine]]\nname = \"pu\"\nkind = \"pu\"\nworkers = 1\n{}{}",
        tenant("a", pa),
        tenant("b", pb)
    );
    let d = Daemon::start(DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap()).unwrap();
    let ingress = d.udp_addrs()[0];
    // 16 packets of 4 KiB from each: well within a socket's default
    // receive buffer, so every one reaches the packet path.
    let (n, payload) = (16u64, vec![7u8; 4096]);
    for _ in 0..n {
        a.send_to(&payload, ingress).unwrap();
        b.send_to(&payload, ingress).unwrap();
    }
    let mut buf = [0u8; 64];
    let ce = |s: &UdpSocket, buf: &mut [u8]| {
        (0..n)
            .filter(|_| {
                let (len, tos) = ip_tos::recv_with_tos(s, buf).unwrap();
                assert_eq!(len, 32, "a SHA-256 digest");
                tos & ECN_MASK == ECN_CE
            })
            .count() as u64
    };
    let (ce_a, ce_b) = (ce(&a, &mut buf), ce(&b, &mut buf));
    wait_for_counts(&d, &[(n, n, 0, 0), (n, n, 0, 0)]);
    let marked = d.packet_counts().marked;
    assert!(
        marked[0] >= 1,
        "no packet of the burst found a congested queue: {marked:?}"
    );
    assert_eq!(
        (ce_a, ce_b),
        (marked[0], 0),
        "every marked packet's reply, and only those, carry CE"
    );
    assert_eq!(marked[1], 0, "packets without ECN bits are never marked");
}

#[test]
fn an_ecn_threshold_outside_the_queue_is_refused_at_its_line() {
    let text = "[daemon]\nsocket = \"s\"\n[[engine]]\nname = \"e\"\n\
                [[tenant]]\nname = \"a\"\nmemory_quota = \"1MiB\"\nusers = [0]\nqueue_cap = 8\n\
                ecn_threshold = 9\n";
    let e = DaemonConfig::parse(text, std::path::Path::new("d.toml")).unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (10, Some("ecn_threshold")), "{e}");
}

/// A flow with its own cost model (`FlowConfig::cost`,
/// set by code) has its packets predicted by it; a flow without one by
/// its engine's model: two tenants' kernels that cost differently are
/// charged differently at dispatch, as a scenario's tenants are by their
/// own service models.
#[test]
fn a_flows_own_cost_model_predicts_its_packets() {
    let (a, b) = (client(), client());
    let (pa, pb) = (a.local_addr().unwrap().port(), b.local_addr().unwrap().port());
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:0\"]\n\
         [[engine]]\nname = \"pu\"\nworkers = 1\nlearn = false\n\
         [[tenant]]\nname = \"a\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {pa}, proto = 17 }}\nkernel = \"crc32c\"\n\
         [[tenant]]\nname = \"b\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {pb}, proto = 17 }}\nkernel = \"crc32c\"\n"
    );
    let mut config = config_file::parse("flow-cost", &text);
    // The engine's model: 1 us + 2 ns a byte; tenant a's flow: 40 us a packet.
    config.engines[0].base_ns = 1_000.0;
    config.engines[0].per_byte_ns = 2.0;
    config.tenants[0].flows[0].cost = Some(isola_core::AffineCost::constant(40_000));
    let d = Daemon::start(config).unwrap();
    d.record_completions(true);
    let ingress = d.udp_addrs()[0];
    let mut reply = [0u8; 2048];
    for (socket, payload) in [(&a, &b"123456789"[..]), (&b, &[7u8; 100][..])] {
        socket.send_to(payload, ingress).unwrap();
        socket.recv_from(&mut reply).unwrap();
    }
    let start = Instant::now();
    let mut done = Vec::new();
    while done.len() < 2 {
        assert!(start.elapsed() < Duration::from_secs(10), "{done:?}");
        done.extend(
            d.take_completions()
                .into_iter()
                .map(|c| (c.tenant.0, c.predicted_ns)),
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    done.sort();
    // a: its flow's 40 us; b: the engine's 1 us + 2 ns x 100 B.
    assert_eq!(done, vec![(0, 40_000), (1, 1_200)]);
}
