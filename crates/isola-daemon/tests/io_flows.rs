//! OSMOSIS' IO kernels over real UDP packets (issue 16, `dma` flows): an
//! io-write's data lands in the tenant's host window (read back through
//! the client's own mapping of its arena), an io-read's reply is the
//! window's bytes, both through the daemon's DMA engine in fragments; a
//! request with no place in the window (or no window, or a hostile
//! length) is aborted, counted, and its tenant told, and the daemon goes
//! on serving.

use isola_client::Client;
use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::EventKind;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

fn socket() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn port(s: &UdpSocket) -> u16 {
    s.local_addr().unwrap().port()
}

/// Waits until `cond` holds (10 s at most).
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(10), "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits for the next `KernelAborted` on `c`'s event ring: (flow, code).
fn next_abort(c: &mut Client) -> (u64, u64) {
    let mut found = None;
    eventually("a KernelAborted event", || {
        while found.is_none() {
            match c.event().unwrap() {
                Some(e) if e.kind == EventKind::KernelAborted => found = Some((e.value, e.detail)),
                Some(_) => {}
                None => break,
            }
        }
        found.is_some()
    });
    found.unwrap()
}

fn write_request(addr: u64, data: &[u8]) -> Vec<u8> {
    let mut p = addr.to_be_bytes().to_vec();
    p.extend_from_slice(data);
    p
}

fn read_request(addr: u64, len: u32) -> Vec<u8> {
    let mut p = addr.to_be_bytes().to_vec();
    p.extend_from_slice(&len.to_be_bytes());
    p
}

fn config(writer: u16, reader: u16, dir: &std::path::Path) -> DaemonConfig {
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:0\"]\n\
         [[engine]]\nname = \"pu\"\nkind = \"pu\"\nops = [\"crc32\"]\n\
         [[engine]]\nname = \"axi\"\nkind = \"dma\"\nsplit = \"512B\"\n\
         [[tenant]]\nname = \"t\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {writer} }}\nkernel = \"crc32\"\ndma = \"write\"\nreply = false\n\
         [[tenant.flow]]\nmatch = {{ src_port = {reader} }}\nkernel = \"crc32\"\ndma = \"read\"\n"
    );
    DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap()
}

#[test]
fn io_writes_land_in_the_window_and_io_reads_return_them() {
    let dir = std::env::temp_dir().join(format!("isolad-io-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (writer, reader) = (socket(), socket());
    let d = Daemon::start(config(port(&writer), port(&reader), &dir)).unwrap();
    let to: SocketAddr = d.udp_addrs()[0];
    d.record_completions(true);
    let mut host = Client::connect(&dir.join("isolad.sock"), "t").unwrap();
    let consumed = |n: u64| d.packet_counts().consumed[0] >= n;
    let aborted = || d.packet_counts().tenants[0].3;

    // No window yet: the write has nowhere to go.
    // (A request answered: the connection is served, and hears events.)
    host.register("crc32", &Default::default()).unwrap();
    writer.send_to(&write_request(0, b"early"), to).unwrap();
    assert_eq!(next_abort(&mut host), (0, 7));
    assert_eq!(aborted(), 1);

    let (base, size) = (4096u64, 8192u64);
    host.host_window(base, size).unwrap();
    // 1,500 bytes at window offset 100: three 512-byte DMA fragments.
    let data: Vec<u8> = (0..1500u32).map(|i| (i * 7 + 3) as u8).collect();
    writer.send_to(&write_request(100, &data), to).unwrap();
    eventually("the write consumed", || consumed(1));
    assert_eq!(host.read(base + 100, 1500).unwrap(), data);
    assert!(host.read(base, 100).unwrap().iter().all(|&b| b == 0));
    assert!(host.read(base + 1600, 1000).unwrap().iter().all(|&b| b == 0));

    // Read back, across the same fragments, and a part of it.
    let mut buf = vec![0u8; 65_536];
    for (addr, len) in [(100u64, 1500u32), (612, 300)] {
        reader.send_to(&read_request(addr, len), to).unwrap();
        let (n, _) = reader.recv_from(&mut buf).unwrap();
        let at = (addr - 100) as usize;
        assert_eq!(&buf[..n], &data[at..at + len as usize], "read {len} at {addr}");
    }
    // Each packet's task: the kernel on the PU, then the DMA in fragments.
    let tasks = d.take_completions();
    assert!(tasks.iter().any(|c| c.subtasks >= 3), "{tasks:?}");

    // Outside the window, hostile lengths, a short header: aborted, the
    // tenant told (7: no place; 5: longer than a reply), nothing written.
    let before = host.read(base, size).unwrap();
    writer.send_to(&write_request(size - 10, &[9; 20]), to).unwrap();
    assert_eq!(next_abort(&mut host), (0, 7));
    writer
        .send_to(&write_request(u64::MAX - 3, &[9; 20]), to)
        .unwrap();
    assert_eq!(next_abort(&mut host), (0, 7));
    writer.send_to(&[1, 2, 3], to).unwrap();
    assert_eq!(next_abort(&mut host), (0, 7));
    reader.send_to(&read_request(size - 1, 2), to).unwrap();
    assert_eq!(next_abort(&mut host), (1, 7));
    reader.send_to(&read_request(0, u32::MAX), to).unwrap();
    assert_eq!(next_abort(&mut host), (1, 5));
    eventually("six packets aborted", || aborted() == 6);
    assert_eq!(host.read(base, size).unwrap(), before);

    // And the daemon goes on: a last write at the window's very end lands.
    writer.send_to(&write_request(size - 4, b"tail"), to).unwrap();
    eventually("the last write consumed", || consumed(2));
    assert_eq!(host.read(base + size - 4, 4).unwrap(), b"tail");
    d.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn io_flows_are_refused_at_their_key() {
    let dir = std::env::temp_dir();
    let base = "[daemon]\nsocket = \"s.sock\"\nudp = [\"127.0.0.1:0\"]\n\
                [[engine]]\nname = \"pu\"\nkind = \"pu\"\nops = [\"crc32\"]\n";
    let tenant = "[[tenant]]\nname = \"t\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n[[tenant.flow]]\n";
    let dma = "[[engine]]\nname = \"axi\"\nkind = \"dma\"\n";
    for (engines, flow, says) in [
        (
            "",
            "kernel = \"crc32\"\ndma = \"write\"\n",
            "needs a `kind = \"dma\"` engine",
        ),
        (dma, "kernel = \"crc32\"\ndma = \"sideways\"\n", "unknown variant"),
        (
            dma,
            "kernel = \"wasm:x.wat\"\ndma = \"read\"\n",
            "WebAssembly kernel asks for its own",
        ),
    ] {
        let text = format!("{base}{engines}{tenant}{flow}");
        let e = DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap_err();
        assert!(e.to_string().contains(says), "{flow}: {e}");
        if !says.starts_with("unknown") {
            assert_eq!(e.key.as_deref(), Some("dma"), "{flow}: {e}");
        }
    }
}

#[test]
fn a_dma_engines_bandwidth_paces_its_copies() {
    let dir = std::env::temp_dir().join(format!("isolad-io-link-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let writer = socket();
    // 1 MB/s: 20,000 bytes take at least 20 ms on the link.
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:0\"]\n\
         [[engine]]\nname = \"pu\"\nkind = \"pu\"\nops = [\"crc32\"]\n\
         [[engine]]\nname = \"axi\"\nkind = \"dma\"\nbandwidth = \"1MB/s\"\n\
         [[tenant]]\nname = \"t\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {} }}\nkernel = \"crc32\"\ndma = \"write\"\nreply = false\n",
        port(&writer)
    );
    let d = Daemon::start(DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap()).unwrap();
    d.record_completions(true);
    let mut host = Client::connect(&dir.join("isolad.sock"), "t").unwrap();
    host.host_window(0, 65_536).unwrap();
    writer
        .send_to(&write_request(0, &[5; 20_000]), d.udp_addrs()[0])
        .unwrap();
    eventually("the write consumed", || d.packet_counts().consumed[0] == 1);
    let tasks = d.take_completions();
    let dma_ns: u64 = tasks.iter().map(|c| c.service_ns).sum();
    assert!(dma_ns >= 20_000_000, "{dma_ns} ns: {tasks:?}");
    assert_eq!(host.read(0, 20_000).unwrap(), vec![5; 20_000]);
    d.stop();
    // Only a DMA engine has a link.
    let bad = text.replace(
        "ops = [\"crc32\"]\n",
        "ops = [\"crc32\"]\nbandwidth = \"1MB/s\"\n",
    );
    let e = DaemonConfig::parse(&bad, &dir.join("isolad.toml")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("bandwidth"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
