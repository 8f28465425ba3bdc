//! A plain batched UDP echo server, the baseline of `--echo-baseline`: one
//! thread on one socket takes a datagram (waiting for it), then whatever
//! else is waiting without waiting (up to a batch), and sends them all
//! back to their senders with one `sendmmsg`. No matching, no scheduling,
//! no copy beyond the kernel's: what a packet path costs at the least on
//! this machine.

use rustix::net::{recvfrom, sendmmsg, MMsgHdr, RecvFlags, SendAncillaryBuffer, SendFlags, SocketAddrAny};
use std::io::IoSlice;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Datagrams taken before they are sent back at once.
const BATCH: usize = 32;

/// How often the thread looks whether it should stop.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// The echo server: its address and its thread.
pub struct EchoServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<u64>,
}

impl EchoServer {
    /// Binds a port the system picks on `ip` and starts echoing.
    pub fn start(ip: IpAddr) -> std::io::Result<EchoServer> {
        let socket = UdpSocket::bind(SocketAddr::new(ip, 0))?;
        socket.set_read_timeout(Some(STOP_CHECK))?;
        let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&socket, super::RECV_BUFFER);
        let addr = socket.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("echo".into())
            .spawn(move || serve(&socket, &flag))?;
        Ok(EchoServer { addr, stop, thread })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops it; how many datagrams it sent back.
    pub fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or(0)
    }
}

/// Echoes datagrams on `socket` until `stop`; how many it sent back.
fn serve(socket: &UdpSocket, stop: &AtomicBool) -> u64 {
    let mut bufs = vec![vec![0u8; 1 << 16]; BATCH];
    let mut echoed = 0;
    while !stop.load(Ordering::Relaxed) {
        let mut taken: Vec<(usize, SocketAddrAny)> = Vec::with_capacity(BATCH);
        for (i, buf) in bufs.iter_mut().enumerate() {
            // The first waits (up to STOP_CHECK); the rest only take what is there.
            let flags = if i == 0 {
                RecvFlags::empty()
            } else {
                RecvFlags::DONTWAIT
            };
            match recvfrom(socket, &mut buf[..], flags) {
                Ok((_, len, Some(from))) => taken.push((len.min(buf.len()), from)),
                Ok((_, _, None)) => {}
                Err(_) => break,
            }
        }
        echoed += send_back(socket, &bufs, &taken);
    }
    echoed
}

/// Sends `taken` (lengths of `bufs` and their senders) back with
/// `sendmmsg`; how many went. A datagram that cannot be sent is dropped,
/// as on the wire.
fn send_back(socket: &UdpSocket, bufs: &[Vec<u8>], taken: &[(usize, SocketAddrAny)]) -> u64 {
    let iovs: Vec<[IoSlice<'_>; 1]> = taken
        .iter()
        .zip(bufs)
        .map(|((len, _), buf)| [IoSlice::new(&buf[..*len])])
        .collect();
    let mut controls: Vec<SendAncillaryBuffer<'_, '_, '_>> =
        taken.iter().map(|_| SendAncillaryBuffer::default()).collect();
    let mut msgs: Vec<MMsgHdr<'_>> = taken
        .iter()
        .zip(&iovs)
        .zip(&mut controls)
        .map(|(((_, to), iov), control)| MMsgHdr::new_with_addr(to, iov, control))
        .collect();
    let mut sent = 0;
    while sent < msgs.len() {
        match sendmmsg(socket, &mut msgs[sent..], SendFlags::empty()) {
            Ok(0) | Err(_) => sent += 1,
            Ok(n) => sent += n,
        }
    }
    // The kernel sets the length of each message it sent.
    msgs.iter().filter(|m| m.bytes_sent() > 0).count() as u64
}
