//! Egress: an egress engine's workers send a task's bytes as UDP datagrams
//! ([`EgressPort`]), cut into datagrams of at most the port's MTU payload
//! (1472 B by default: a 1500 B Ethernet MTU less the IPv4 and UDP
//! headers) and, where a send takes several, handed to the kernel in
//! batches with `sendmmsg(2)` (one system call a batch, not one a
//! datagram). A [`crate::Stage::Egress`] goes to the port's own
//! destination; a [`crate::Stage::Reply`] goes back to a packet's sender
//! from the socket the packet arrived on ([`ReplyRoute`]: the packet
//! path's replies, isolad). [`EgressSink`] is the other end for a run
//! that owns its destination (`isola run`, the tests): a bound socket
//! drained by a thread that counts what arrives.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Default datagram payload: 1472 B (1500 B MTU - 20 B IPv4 - 8 B UDP).
pub const DEFAULT_MTU_PAYLOAD: usize = 1472;

/// Datagrams handed to one `sendmmsg` call at most.
const BATCH: usize = 64;

/// Where a reply goes: back to a packet's sender, from the socket the
/// packet arrived on (so it comes from the address the sender sent to).
#[derive(Debug, Clone)]
pub struct ReplyRoute {
    /// The socket the packet arrived on.
    pub socket: Arc<UdpSocket>,
    /// The packet's sender.
    pub to: SocketAddr,
    /// The ECN field the reply's IP header carries (RFC 3168; 3 echoes a
    /// Congestion Experienced mark; 0 leaves the socket's own).
    pub ecn: u8,
}

/// What an egress engine sends on: a UDP socket connected to its
/// destination (for [`crate::Stage::Egress`]), or none, for an engine that
/// only sends replies on the sockets their packets arrived on
/// ([`crate::Stage::Reply`]); and the datagram size it cuts sends to.
#[derive(Debug)]
pub struct EgressPort {
    /// Its own socket and destination, if it has them.
    target: Option<(UdpSocket, SocketAddr)>,
    mtu: usize,
    /// What it handed the kernel so far: datagrams and payload bytes.
    datagrams: AtomicU64,
    bytes: AtomicU64,
}

impl EgressPort {
    /// A port sending to `dest` in datagrams of at most `mtu` payload bytes
    /// (at least 1), from an ephemeral port on the unspecified address of
    /// `dest`'s family.
    pub fn connect(dest: SocketAddr, mtu: usize) -> io::Result<EgressPort> {
        check_mtu(mtu)?;
        let local: SocketAddr = if dest.is_ipv4() {
            "0.0.0.0:0".parse().expect("a literal address")
        } else {
            "[::]:0".parse().expect("a literal address")
        };
        let socket = UdpSocket::bind(local)?;
        socket.connect(dest)?;
        Ok(EgressPort {
            target: Some((socket, dest)),
            mtu,
            datagrams: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        })
    }

    /// A port with no destination of its own, sending replies
    /// ([`EgressPort::reply`]) in datagrams of at most `mtu` payload bytes.
    pub fn replies(mtu: usize) -> io::Result<EgressPort> {
        check_mtu(mtu)?;
        Ok(EgressPort {
            target: None,
            mtu,
            datagrams: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        })
    }

    /// Where it sends, if it has a destination of its own.
    pub fn dest(&self) -> Option<SocketAddr> {
        self.target.as_ref().map(|(_, d)| *d)
    }

    /// Its datagram payload limit.
    pub fn mtu(&self) -> usize {
        self.mtu
    }

    /// Sends `bytes` in order to its destination as datagrams of at most
    /// the MTU (nothing for no bytes); returns how many datagrams went out.
    /// A port made by [`EgressPort::replies`] has no destination: an error.
    pub fn send(&self, bytes: &[u8]) -> io::Result<usize> {
        let Some((socket, _)) = &self.target else {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "this egress engine sends replies only: it has no destination of its own",
            ));
        };
        self.send_on(socket, None, bytes)
    }

    /// Sends `bytes` in order to `route`'s address from its socket, as
    /// [`EgressPort::send`] does.
    pub fn reply(&self, route: &ReplyRoute, bytes: &[u8]) -> io::Result<usize> {
        self.send_on(&route.socket, Some((route.to, route.ecn)), bytes)
    }

    fn send_on(&self, socket: &UdpSocket, to: Option<(SocketAddr, u8)>, bytes: &[u8]) -> io::Result<usize> {
        let chunks: Vec<&[u8]> = bytes.chunks(self.mtu).collect();
        for batch in chunks.chunks(BATCH) {
            send_batch(socket, to, batch)?;
            self.count(batch.len(), batch.iter().map(|b| b.len()).sum());
        }
        Ok(chunks.len())
    }

    fn count(&self, datagrams: usize, bytes: usize) {
        self.datagrams.fetch_add(datagrams as u64, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// What it has sent so far (handed to the kernel).
    pub fn sent(&self) -> SinkCounts {
        SinkCounts {
            datagrams: self.datagrams.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}

/// An MTU payload outside what one UDP datagram can carry is refused.
fn check_mtu(mtu: usize) -> io::Result<()> {
    if mtu == 0 || mtu > 65_507 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("an egress MTU payload of {mtu} bytes is outside 1..=65507"),
        ));
    }
    Ok(())
}

/// `addr` as the C socket address `sendmmsg` takes, and its length.
fn raw_addr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is a plain C struct for which all-zero
    // bytes are a valid value; it is large and aligned enough for either
    // family's address, written through the matching type below.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            // SAFETY: see above.
            let sin =
                unsafe { &mut *(&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from(*a.ip()).to_be();
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            // SAFETY: see above.
            let sin6 =
                unsafe { &mut *(&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_flowinfo = a.flowinfo();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            sin6.sin6_scope_id = a.scope_id();
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Sends every datagram of `batch` on `socket` (to `to`'s address with
/// its ECN field, else to the socket's connected peer) with
/// `sendmmsg(2)`, calling again for the rest of a partial send.
fn send_batch(socket: &UdpSocket, to: Option<(SocketAddr, u8)>, batch: &[&[u8]]) -> io::Result<()> {
    let mut tos = vec![crate::ip_tos::TosControl::default(); batch.len()];
    let ecn = to.map_or(0, |(_, ecn)| ecn);
    let v6 = to.is_some_and(|(a, _)| a.is_ipv6());
    let to = to.map(|(a, _)| raw_addr(a));
    let mut iovecs: Vec<libc::iovec> = batch
        .iter()
        .map(|b| libc::iovec {
            // The kernel only reads through it (a send).
            iov_base: b.as_ptr() as *mut libc::c_void,
            iov_len: b.len(),
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = iovecs
        .iter_mut()
        .zip(tos.iter_mut())
        .map(|(iov, tos)| {
            // SAFETY: mmsghdr is a plain C struct; all-zero bytes are valid
            // (no address: the socket is connected).
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            if let Some((addr, len)) = &to {
                // The kernel only reads the address (a send).
                m.msg_hdr.msg_name = (addr as *const libc::sockaddr_storage).cast_mut().cast();
                m.msg_hdr.msg_namelen = *len;
            }
            if ecn != 0 {
                tos.attach(&mut m.msg_hdr, ecn, v6);
            }
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    let mut sent = 0;
    while sent < msgs.len() {
        let rest = &mut msgs[sent..];
        // SAFETY: `rest` holds initialised headers whose iovecs point at
        // `batch`'s slices, whose names (if any) at `to`'s address and
        // whose control data (if any) at `tos`' rooms, all alive and
        // unmoved for this call; the kernel only reads them.
        let n = unsafe {
            libc::sendmmsg(
                socket.as_raw_fd(),
                rest.as_mut_ptr(),
                rest.len() as libc::c_uint,
                0,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "sendmmsg sent no datagram",
            ));
        }
        sent += n as usize;
    }
    Ok(())
}

/// Datagrams and payload bytes an [`EgressSink`] received (or an
/// [`EgressPort`] sent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinkCounts {
    /// Datagrams.
    pub datagrams: u64,
    /// Payload bytes.
    pub bytes: u64,
}

/// A local UDP socket (on 127.0.0.1, an ephemeral port) drained by its own
/// thread, counting datagrams and bytes; with `keep`, it also keeps every
/// datagram's bytes in arrival order (for tests).
pub struct EgressSink {
    addr: SocketAddr,
    datagrams: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
    kept: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for EgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressSink")
            .field("addr", &self.addr)
            .field("received", &self.received())
            .finish_non_exhaustive()
    }
}

impl EgressSink {
    /// Binds 127.0.0.1:0 (with a receive buffer of up to 8 MiB, as the
    /// system allows) and starts draining it.
    pub fn bind(keep: bool) -> io::Result<EgressSink> {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        let addr = socket.local_addr()?;
        socket.set_read_timeout(Some(Duration::from_millis(20)))?;
        let size: libc::c_int = 8 << 20;
        // SAFETY: a valid socket and a c_int option value of its size. A
        // refusal leaves the default buffer, which only makes loss likelier
        // under a flood; the counts say what arrived.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        let (datagrams, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let kept = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (d, b, k, s) = (
            Arc::clone(&datagrams),
            Arc::clone(&bytes),
            Arc::clone(&kept),
            Arc::clone(&stop),
        );
        let thread = std::thread::Builder::new()
            .name("isola-egress-sink".into())
            .spawn(move || {
                let mut buf = vec![0u8; 65_536];
                while !s.load(Ordering::Acquire) {
                    match socket.recv(&mut buf) {
                        Ok(n) => {
                            if keep {
                                if let Ok(mut k) = k.lock() {
                                    k.push(buf[..n].to_vec());
                                }
                            }
                            b.fetch_add(n as u64, Ordering::Relaxed);
                            d.fetch_add(1, Ordering::Release);
                        }
                        // A timeout (to look at `stop`), or an ICMP error of
                        // an earlier send: go on.
                        Err(_) => continue,
                    }
                }
            })?;
        Ok(EgressSink {
            addr,
            datagrams,
            bytes,
            kept,
            stop,
            thread: Some(thread),
        })
    }

    /// Its address (the destination to give an [`EgressPort`]).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What it received so far.
    pub fn received(&self) -> SinkCounts {
        SinkCounts {
            datagrams: self.datagrams.load(Ordering::Acquire),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }

    /// Waits until it has received at least `bytes` bytes or `timeout`
    /// passed; returns what it received.
    pub fn wait_for(&self, bytes: u64, timeout: Duration) -> SinkCounts {
        let end = Instant::now() + timeout;
        while self.received().bytes < bytes && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.received()
    }

    /// Stops draining; returns the counts and (with `keep`) every datagram.
    pub fn stop(mut self) -> (SinkCounts, Vec<Vec<u8>>) {
        self.halt();
        let kept = self
            .kept
            .lock()
            .map(|mut k| std::mem::take(&mut *k))
            .unwrap_or_default();
        (self.received(), kept)
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for EgressSink {
    fn drop(&mut self) {
        self.halt();
    }
}
