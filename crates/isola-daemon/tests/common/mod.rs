//! What the packet-path tests share: a victim tenant's reply latencies
//! measured on real UDP sockets.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A UDP socket on a port of its own, reads timing out after 2 s.
pub fn socket() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s
}

/// Sends `packet` to `to` at `rate` per second from `from` until `stop`,
/// in bursts every ms; replies are read and thrown away. Answers how many
/// were sent.
pub fn send_at_rate(
    to: SocketAddr,
    from: UdpSocket,
    packet: Vec<u8>,
    rate: f64,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        from.set_nonblocking(true).unwrap();
        let mut reply = [0u8; 2048];
        let (start, mut sent) = (Instant::now(), 0u64);
        while !stop.load(Ordering::Relaxed) {
            let due = (start.elapsed().as_secs_f64() * rate) as u64;
            while sent < due {
                // A full socket buffer drops the packet, as a wire would.
                let _ = from.send_to(&packet, to);
                sent += 1;
            }
            while from.recv_from(&mut reply).is_ok() {}
            std::thread::sleep(Duration::from_millis(1));
        }
        sent
    })
}

/// The victim's reply latencies over `n` packets sent one every 2 ms,
/// sorted; a packet unanswered 1 s after the last was sent counts as
/// `Duration::MAX`. Replies are matched to packets by their content (each
/// packet is distinct, and the reply is its CRC-32C).
pub fn victim_latencies(to: SocketAddr, victim: &UdpSocket, n: usize) -> Vec<Duration> {
    let crc = isola_ops::build_operator("crc32c", &Default::default()).unwrap();
    victim.set_nonblocking(true).unwrap();
    let mut sent_at = std::collections::HashMap::new();
    let mut latencies = Vec::with_capacity(n);
    let mut reply = [0u8; 64];
    let mut collect = |sent_at: &mut std::collections::HashMap<Vec<u8>, Instant>| {
        while let Ok((len, _)) = victim.recv_from(&mut reply) {
            if let Some(at) = sent_at.remove(&reply[..len]) {
                latencies.push(at.elapsed());
            }
        }
    };
    let start = Instant::now();
    for i in 0..n {
        let packet = (i as u64).to_le_bytes().repeat(8);
        sent_at.insert(crc.run(&packet).unwrap(), Instant::now());
        victim.send_to(&packet, to).unwrap();
        collect(&mut sent_at);
        let due = start + Duration::from_millis(2 * (i as u64 + 1));
        while Instant::now() < due {
            collect(&mut sent_at);
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    let last = Instant::now();
    while !sent_at.is_empty() && last.elapsed() < Duration::from_secs(1) {
        collect(&mut sent_at);
        std::thread::sleep(Duration::from_micros(100));
    }
    latencies.extend(std::iter::repeat_n(Duration::MAX, sent_at.len()));
    latencies.sort();
    latencies
}

/// The 99th percentile of `sorted`.
pub fn p99(sorted: &[Duration]) -> Duration {
    sorted[(sorted.len() * 99).div_ceil(100) - 1]
}
