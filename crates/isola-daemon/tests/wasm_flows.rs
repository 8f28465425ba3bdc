//! Tenant WebAssembly kernels on the packet path (issue 16, kernels b),
//! on real UDP sockets with the example kernels of `examples/kernels`: a
//! flow's kernel keeps its state across packets and replies; a kernel
//! that loops, reads out of bounds or grows past its memory cap is
//! stopped on that packet, the packet is counted as aborted, the tenant
//! hears `KernelAborted` on its event ring, and the next packet (its own
//! and every other tenant's) is served.

use isola_client::Client;
use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::EventKind;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn kernels() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/kernels")
}

fn client() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn port(s: &UdpSocket) -> u16 {
    s.local_addr().unwrap().port()
}

/// Sends `packet` and waits for the answer.
fn ask(s: &UdpSocket, to: SocketAddr, packet: &[u8]) -> Vec<u8> {
    s.send_to(packet, to).unwrap();
    let mut buf = [0u8; 2048];
    let (n, _) = s.recv_from(&mut buf).unwrap();
    buf[..n].to_vec()
}

/// Waits until `cond` holds (10 s at most).
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(10), "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn wasm_kernels_keep_state_reply_and_are_stopped_at_their_limits() {
    let dir = std::env::temp_dir().join(format!("isolad-wasm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let k = kernels();
    let (counter, spin, oob, grow) = (client(), client(), client(), client());
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:0\"]\n\
         [[engine]]\nname = \"pu\"\nworkers = 2\npolicy = \"wlbvt\"\n\
         [[tenant]]\nname = \"good\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {} }}\nkernel = \"wasm:{}/counter.wat\"\n\
         [[tenant]]\nname = \"bad\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {} }}\nkernel = \"wasm:{}/spin.wat\"\nfuel = 20000\n\
         [[tenant.flow]]\nmatch = {{ src_port = {} }}\nkernel = \"wasm:{}/out_of_bounds.wat\"\n\
         [[tenant.flow]]\nmatch = {{ src_port = {} }}\nkernel = \"wasm:{}/grow.wat\"\nkernel_memory = \"128KiB\"\n",
        port(&counter),
        k.display(),
        port(&spin),
        k.display(),
        port(&oob),
        k.display(),
        port(&grow),
        k.display(),
    );
    let config = DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap();
    let d = Daemon::start(config).unwrap();
    let to = d.udp_addrs()[0];
    let mut bad = Client::connect(&dir.join("isolad.sock"), "bad").unwrap();

    // State across packets: the counter's first two fields count packets
    // and bytes so far.
    for (i, packet) in [&b"ab"[..], b"cde", b"a"].iter().enumerate() {
        let reply = ask(&counter, to, packet);
        assert_eq!(reply.len(), 20, "{reply:?}");
        let seen = u64::from_le_bytes(reply[..8].try_into().unwrap());
        assert_eq!(seen, i as u64 + 1);
    }
    let reply = ask(&counter, to, b"abcd");
    assert_eq!(
        u64::from_le_bytes(reply[8..16].try_into().unwrap()),
        2 + 3 + 1 + 4
    );
    // Its third field: packets so far starting with this one's first byte.
    assert_eq!(u32::from_le_bytes(reply[16..20].try_into().unwrap()), 3);

    // Each bad kernel: an ordinary packet is echoed; the hostile one is
    // stopped (no reply) and the next ordinary one is echoed again.
    let cases: [(&UdpSocket, &[u8], u64, u32); 3] = [
        (&spin, &[0xff, 1], 0, 1), // out of fuel
        (&oob, &[0x01, 2], 1, 2),  // trap
        (&grow, &[0x03], 2, 3),    // memory cap: 1 + 3 pages > 128 KiB
    ];
    for (n, (s, hostile, flow, cause)) in cases.into_iter().enumerate() {
        if flow < 2 {
            assert_eq!(ask(s, to, b"\x00hello"), b"\x00hello");
        }
        s.send_to(hostile, to).unwrap();
        eventually("the packet counted as aborted", || {
            d.packet_counts().tenants[1].3 == n as u64 + 1
        });
        let mut told = None;
        eventually("the tenant told", || {
            while let Some(e) = bad.event().unwrap() {
                if e.kind == EventKind::KernelAborted {
                    told = Some((e.value, e.detail));
                }
            }
            told.is_some()
        });
        assert_eq!(told, Some((flow, u64::from(cause))), "flow {flow}");
        if flow < 2 {
            assert_eq!(ask(s, to, b"\x00again"), b"\x00again");
        }
    }
    // Growing within the cap is fine: one page more (2 of 2).
    let reply = ask(&grow, to, &[0x01]);
    assert_eq!(reply[4..8], 2i32.to_le_bytes(), "{reply:?}");
    // The other tenant's kernel was never disturbed: its state runs on.
    let reply = ask(&counter, to, b"z");
    assert_eq!(u64::from_le_bytes(reply[..8].try_into().unwrap()), 5);
    assert_eq!(d.packet_counts().tenants[0].3, 0, "the good tenant lost nothing");
}

#[test]
fn bad_wasm_flows_are_refused_at_their_key() {
    let k = kernels();
    let base = "[daemon]\nsocket = \"s\"\nudp = [\"127.0.0.1:0\"]\n[[engine]]\nname = \"pu\"\n\
                [[tenant]]\nname = \"a\"\nmemory_quota = \"1MiB\"\nusers = [0]\n[[tenant.flow]]\n";
    let dir = std::env::temp_dir().join(format!("isolad-wasm-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("junk.wasm"), b"\0asm\x01\0\0\0junk").unwrap();
    // A syntax error in WebAssembly text: named by file, line and column.
    std::fs::write(
        dir.join("typo.wat"),
        "(module\n  (func (result i32)\n    (i32.cnst 0)))\n",
    )
    .unwrap();
    let typo_at = format!("{}:3:6", dir.join("typo.wat").display());
    for (flow, key, says) in [
        (
            "kernel = \"wasm:nowhere.wasm\"".to_string(),
            "kernel",
            "nowhere.wasm",
        ),
        (
            "kernel = \"wasm:junk.wasm\"".to_string(),
            "kernel",
            "bad kernel module",
        ),
        (
            "kernel = \"wasm:typo.wat\"".to_string(),
            "kernel",
            typo_at.as_str(),
        ),
        (
            format!("kernel = \"wasm:{}/echo.wat\"\nfuel = 0", k.display()),
            "fuel",
            "at least 1",
        ),
        (
            format!(
                "kernel = \"wasm:{}/echo.wat\"\nkernel_memory = \"2MiB\"",
                k.display()
            ),
            "kernel_memory",
            "memory_quota",
        ),
        (
            "kernel = \"crc32c\"\nfuel = 10".to_string(),
            "fuel",
            "WebAssembly",
        ),
        (
            format!("kernel = \"wasm:{}/echo.wat\"\nparams = {{ x = 1 }}", k.display()),
            "params",
            "no params",
        ),
    ] {
        let text = format!("{base}{flow}\n");
        let e = DaemonConfig::parse(&text, &dir.join("d.toml")).unwrap_err();
        assert_eq!(e.key.as_deref(), Some(key), "{flow}: {e}");
        assert!(e.to_string().contains(says), "{flow}: {e}");
    }
}

/// Waits for the next event of `kind` on `c`'s event ring: (value, detail).
fn next_event(c: &mut Client, kind: EventKind) -> (u64, u64) {
    let mut found = None;
    eventually(&format!("a {kind:?} event"), || {
        while let Some(e) = c.event().unwrap() {
            if e.kind == kind && found.is_none() {
                found = Some((e.value, e.detail));
            }
        }
        found.is_some()
    });
    found.unwrap()
}

#[test]
fn kernels_dma_writes_land_in_the_tenants_host_window_in_fragments() {
    let dir = std::env::temp_dir().join(format!("isolad-dma-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sender = client();
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\nudp = [\"127.0.0.1:0\"]\n\
         [[engine]]\nname = \"pu\"\nkind = \"pu\"\nops = [\"wasm\"]\n\
         [[engine]]\nname = \"axi\"\nkind = \"dma\"\nsplit = \"512B\"\n\
         [[tenant]]\nname = \"t\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n\
         [[tenant.flow]]\nmatch = {{ src_port = {} }}\nkernel = \"wasm:{}/counter.wat\"\n",
        port(&sender),
        kernels().display()
    );
    let config = DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap();
    assert_eq!(config.engines[1].policy, "wrr", "OSMOSIS' DMA engine: WRR");
    let d = Daemon::start(config).unwrap();
    let to = d.udp_addrs()[0];
    d.record_completions(true);
    let mut host = Client::connect(&dir.join("isolad.sock"), "t").unwrap();
    // A window outside the arena is refused; one inside is taken.
    assert!(host.host_window(u64::MAX - 10, 100).is_err());
    host.host_window(4096, 2048).unwrap();
    // The counter kernel DMA-writes its histogram of first bytes (256
    // little-endian u32 bins, 1 KiB) at host offset 0 every 16th packet.
    for i in 0..16u8 {
        ask(&sender, to, &[i % 4, 0xaa]);
    }
    assert_eq!(next_event(&mut host, EventKind::HostWritten), (0, 1024));
    let bins = host.read(4096, 1024).unwrap();
    for (b, bin) in bins.chunks_exact(4).enumerate() {
        let count = u32::from_le_bytes(bin.try_into().unwrap());
        assert_eq!(count, if b < 4 { 4 } else { 0 }, "bin {b}");
    }
    // Written in two 512 B fragments, each its own dispatch of the core.
    let writes: Vec<_> = d
        .take_completions()
        .into_iter()
        .filter(|c| c.op == "dma-write")
        .collect();
    assert_eq!(writes.len(), 1);
    assert_eq!((writes[0].bytes, writes[0].subtasks), (1024, 2));
    // The bytes around the window are untouched.
    assert!(host.read(4096 + 1024, 1024).unwrap().iter().all(|&b| b == 0));
    // A window too small for the write: the packet is aborted, its reply
    // not sent, and the tenant told why (7: a write with no place).
    host.host_window(4096, 512).unwrap();
    for i in 0..15u8 {
        ask(&sender, to, &[i]);
    }
    sender.send_to(&[0], to).unwrap();
    assert_eq!(next_event(&mut host, EventKind::KernelAborted), (0, 7));
    eventually("the packet counted as aborted", || {
        d.packet_counts().tenants[0].3 == 1
    });
}
