//! The packet path's first part (issue 16), on real UDP sockets: a
//! datagram is matched on its 5-tuple to a tenant's flow queue, its
//! kernel runs as a task of that tenant and the reply carries the
//! kernel's output; unmatched datagrams are counted and dropped; a flow
//! added live through the control plane takes packets at once.

use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::admin::{AdminReply, AdminRequest};
use isola_wire::control;
use rustix::fd::AsFd;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

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
    // A flow added live (tenant c, taking the stranger's packets).
    let admin = control::connect(d.admin_socket()).unwrap();
    let ps = stranger.local_addr().unwrap().port();
    let table = format!(
        "name = \"c\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[flow]]\nmatch = {{ src_port = {ps} }}\nkernel = \"crc32c\"\n"
    );
    control::send(admin.as_fd(), &AdminRequest::Add { table }, None).unwrap();
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
    let text = "[daemon]\nsocket = \"s\"\n[[engine]]\nname = \"pu\"\n\
                [[tenant]]\nname = \"a\"\nmemory_quota = \"1MiB\"\nusers = [0]\n\
                [[tenant.flow]]\nkernel = \"teleport\"\n";
    let e = DaemonConfig::parse(text, std::path::Path::new("d.toml")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("kernel"), "{e}");
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
    let start = Instant::now();
    while d.packet_counts().tenants[..2] != [(n, n, 0, 0), (n, n, 0, 0)] {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            d.packet_counts()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
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
    // Its DMA engine weighted round robin.
    assert_eq!(policy("kind = \"dma\""), "wrr");
    for (keys, says) in [
        ("kind = \"warp\"", "unknown engine kind"),
        ("kind = \"egress\"", "does not run live"),
    ] {
        let e = parse(&engine(keys)).unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (5, Some("kind")), "{e}");
        assert!(e.to_string().contains(says), "{e}");
    }
}
