//! DPUBench's end-to-end programs through a real isolad: raw IPv4/UDP
//! packets (built by etherparse, a stock builder) sent in datagrams to the
//! daemon's packet path, each program's replies checked against
//! references (the flow counters against counting by hand, the hash
//! against sha2, the compressed payload against the stock `lz4` tool);
//! then `isola load udp --frame ipv4 --payloads` and `isola dpubench e2e`
//! as a user runs them, on a small scale.

use isola_daemon::{Daemon, DaemonConfig};
use sha2::Digest;
use std::net::{SocketAddr, UdpSocket};
use std::process::Command;
use std::time::Duration;

/// A daemon with the flow table on its first UDP address and application
/// recognition on its second.
fn daemon(name: &str) -> (Daemon, SocketAddr, SocketAddr) {
    let dir = std::env::temp_dir().join(format!("isola-dpubench-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = |s: UdpSocket| s.local_addr().unwrap().port();
    let ft = port(UdpSocket::bind("127.0.0.1:0").unwrap());
    let ar = port(UdpSocket::bind("127.0.0.1:0").unwrap());
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:{ft}\", \"127.0.0.1:{ar}\"]\n\
         [[engine]]\nname = \"pu\"\nkind = \"pu\"\nworkers = 1\npolicy = \"wlbvt\"\n\
         [[tenant]]\nname = \"ft\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ dst_port = {ft} }}\nkernel = \"flow-table\"\n\
         params = {{ capacity = \"1024\", shards = \"4\", table = \"{name}\" }}\n\
         [[tenant]]\nname = \"ar\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ dst_port = {ar} }}\nkernel = \"app-recognition\"\n"
    );
    let config = DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap();
    let d = Daemon::start(config).unwrap();
    let addrs = d.udp_addrs();
    let (a, b) = (addrs[0], addrs[1]);
    (d, a, b)
}

fn client() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// An IPv4/UDP packet from `src:sport` to 10.0.0.1:80 carrying `payload`.
fn packet(src: [u8; 4], sport: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    etherparse::PacketBuilder::ipv4(src, [10, 0, 0, 1], 64)
        .udp(sport, 80)
        .write(&mut out, payload)
        .unwrap();
    out
}

fn ask(s: &UdpSocket, to: SocketAddr, datagram: &[u8]) -> Vec<u8> {
    s.send_to(datagram, to).unwrap();
    let mut buf = vec![0u8; 65_536];
    let (n, _) = s.recv_from(&mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn counters(reply: &[u8]) -> (u64, u64, u32) {
    assert_eq!(reply.len(), 20, "a flow-table reply is 20 bytes");
    (
        u64::from_be_bytes(reply[0..8].try_into().unwrap()),
        u64::from_be_bytes(reply[8..16].try_into().unwrap()),
        u32::from_be_bytes(reply[16..20].try_into().unwrap()),
    )
}

#[test]
fn the_flow_table_counts_each_inner_5_tuple_across_packets() {
    let (d, ft, _) = daemon("ft");
    let s = client();
    // Three flows (by inner source address and port), interleaved; the
    // datagram's own 5-tuple is the same for all: the table keys on the
    // packet it carries.
    let flows = [
        ([192, 0, 2, 1], 1000u16),
        ([192, 0, 2, 2], 1000),
        ([192, 0, 2, 1], 1001),
    ];
    let mut expect = [(0u64, 0u64); 3];
    let mut seen = 0u32;
    for round in 0..5usize {
        for (i, &(src, sport)) in flows.iter().enumerate() {
            let p = packet(src, sport, &vec![b'x'; 10 * round + i]);
            if expect[i].0 == 0 {
                seen += 1;
            }
            expect[i].0 += 1;
            expect[i].1 += p.len() as u64;
            assert_eq!(counters(&ask(&s, ft, &p)), (expect[i].0, expect[i].1, seen));
        }
    }
    // Not an IPv4 packet: the kernel refuses it, the daemon counts it and
    // answers the next one.
    s.send_to(b"not a packet", ft).unwrap();
    let p = packet([192, 0, 2, 9], 7, b"");
    assert_eq!(counters(&ask(&s, ft, &p)), (1, 28, 4));
    assert_eq!(d.packet_counts().tenants[0].3, 1, "one packet aborted");
    d.stop();
}

#[test]
fn app_recognition_answers_each_rules_action() {
    let (d, _, ar) = daemon("ar");
    let s = client();
    // Hash: SHA-256 of the whole packet.
    let http = packet(
        [192, 0, 2, 1],
        5000,
        b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert_eq!(ask(&s, ar, &http), sha2::Sha256::digest(&http).to_vec());
    // Echo: a TLS record, and a payload no rule matches (the default).
    let tls = packet([192, 0, 2, 1], 5000, b"\x16\x03\x01\x00\x05hello");
    assert_eq!(ask(&s, ar, &tls), tls);
    let other = packet([192, 0, 2, 1], 5000, b"plain text");
    assert_eq!(ask(&s, ar, &other), other);
    // Compress: an LZ4 frame of the payload, read back by the stock tool.
    let json = [&b"{\"tenant\": "[..], &[b'1'; 600], b"}"].concat();
    let reply = ask(&s, ar, &packet([192, 0, 2, 1], 5000, &json));
    assert!(reply.len() < json.len() / 2, "{} bytes", reply.len());
    let dir = std::env::temp_dir().join(format!("isola-dpubench-lz4-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("reply.lz4");
    std::fs::write(&file, &reply).unwrap();
    match Command::new("lz4").arg("-dc").arg(&file).output() {
        Ok(o) => {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert_eq!(o.stdout, json);
        }
        Err(_) => eprintln!("lz4 is not installed: the frame was not read back"),
    }
    let _ = std::fs::remove_dir_all(&dir);
    d.stop();
}

fn isola(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_isola"))
        .args(args)
        .output()
        .expect("isola runs")
}

#[test]
fn the_generator_frames_packets_that_the_kernels_read() {
    let (d, ft, ar) = daemon("gen");
    // Flow table: 4 flows, 40 packets of 100 B: the table ends with 4
    // entries, and every packet is answered.
    let out = isola(&[
        "load",
        "udp",
        "--json",
        "--to",
        &ft.to_string(),
        "--frame",
        "ipv4",
        "--flows",
        "4",
        "--size",
        "100B",
        "--count",
        "40",
        "--rate",
        "max",
        "--window",
        "1",
        "--timeout",
        "5s",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["total"]["received"], 40, "{r}");
    assert_eq!(r["total"]["received_bytes"], 40 * 20, "{r}");
    // App recognition: HTTP heads only: every reply is a 32-byte digest.
    let dir = std::env::temp_dir().join(format!("isola-dpubench-heads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let heads = dir.join("heads.txt");
    std::fs::write(&heads, "GET / HTTP/1.1\\r\\n\n").unwrap();
    let out = isola(&[
        "load",
        "udp",
        "--json",
        "--to",
        &ar.to_string(),
        "--frame",
        "ipv4",
        "--payloads",
        heads.to_str().unwrap(),
        "--size",
        "200B",
        "--count",
        "20",
        "--rate",
        "max",
        "--window",
        "1",
        "--timeout",
        "5s",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["total"]["received_bytes"], 20 * 32, "{r}");
    let counts = d.packet_counts();
    assert_eq!(
        (counts.tenants[0].3, counts.tenants[1].3),
        (0, 0),
        "no packet aborted"
    );
    let _ = std::fs::remove_dir_all(&dir);
    d.stop();
}

#[test]
fn dpubench_e2e_runs_both_programs_on_a_small_scale() {
    let out = isola(&[
        "dpubench",
        "e2e",
        "--json",
        "--sizes",
        "64B,1500B",
        "--gaps",
        "1ms",
        "--app-sizes",
        "128B",
        "--app-gaps",
        "1ms",
        "--duration",
        "200ms",
        "--warmup",
        "50ms",
        "--flows",
        "4",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = r["points"].as_array().unwrap();
    // 2 flow-table points, then the mix and each of its 4 lines alone.
    assert_eq!(points.len(), 2 + 1 + 4, "{r}");
    for p in points {
        // 1000 packets/s for 200 ms: about 200 sent, nearly all answered
        // on an idle loopback, none refused by a kernel.
        assert!(p["sent"].as_u64().unwrap() >= 100, "{p}");
        assert!(
            p["received"].as_u64().unwrap() * 10 >= p["sent"].as_u64().unwrap() * 9,
            "{p}"
        );
        assert_eq!(p["aborted"], 0, "{p}");
        assert!(p["p50_ns"].as_u64().unwrap() > 0, "{p}");
    }
    assert_eq!(points[0]["program"], "flow-table");
    assert_eq!(points[2]["payloads"], "mix");
    let bad = isola(&["dpubench", "e2e", "--sizes", "32B"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--sizes"));
}
