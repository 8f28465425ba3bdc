//! Batched UDP receive (`recvmmsg(2)` with `MSG_WAITFORONE`) and send
//! (`sendmmsg(2)`): one system call takes every datagram waiting, up to the
//! batch's size, or sends a whole batch of replies, instead of one call a
//! datagram. Neither the standard library nor rustix offers `recvmmsg`, so
//! both are called through `libc` here, their buffers owned and checked by
//! this module.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, BorrowedFd};

use isola_runtime::ip_tos::{ECN_MASK, RECV_CONTROL as CONTROL};

/// One datagram of a [`RecvBatch`].
pub(crate) struct Datagram<'a> {
    /// Its payload.
    pub bytes: &'a [u8],
    /// Its IPv4 sender (`None` for another family).
    pub from: Option<SocketAddr>,
    /// It was cut short to the batch's room.
    pub truncated: bool,
    /// The ECN field of its IP header (0 where the socket was not asked
    /// for it, or the kernel gave none).
    pub ecn: u8,
}

/// Room for `count` datagrams of up to `size` bytes each, with their
/// senders and IP TOS bytes.
pub(crate) struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    iovecs: Vec<libc::iovec>,
    addrs: Vec<libc::sockaddr_in>,
    /// Per datagram, its ancillary data (u64s: aligned as `cmsghdr` is).
    controls: Vec<[u64; CONTROL / 8]>,
    msgs: Vec<libc::mmsghdr>,
    /// Datagrams the last `recv` took.
    got: usize,
}

// SAFETY: the raw pointers in `iovecs` and `msgs` point into this value's
// own heap buffers (`bufs`, `iovecs`, `addrs`, `controls`), which move
// with it.
unsafe impl Send for RecvBatch {}

impl RecvBatch {
    /// A batch of `count` datagrams of up to `size` bytes.
    pub(crate) fn new(count: usize, size: usize) -> RecvBatch {
        assert!(
            count > 0 && size > 0,
            "a batch holds at least one byte of one datagram"
        );
        let mut bufs: Vec<Vec<u8>> = (0..count).map(|_| vec![0u8; size]).collect();
        let mut iovecs: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: sockaddr_in and mmsghdr are plain C structs for which
        // all-zero bytes are a valid value.
        let mut addrs: Vec<libc::sockaddr_in> = (0..count).map(|_| unsafe { std::mem::zeroed() }).collect();
        let mut controls = vec![[0u64; CONTROL / 8]; count];
        let msgs = (0..count)
            .map(|i| {
                // SAFETY: as above.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_in).cast();
                m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
                m.msg_hdr.msg_iov = &mut iovecs[i];
                m.msg_hdr.msg_iovlen = 1;
                m.msg_hdr.msg_control = controls[i].as_mut_ptr().cast();
                m.msg_hdr.msg_controllen = CONTROL;
                m
            })
            .collect();
        RecvBatch {
            bufs,
            iovecs,
            addrs,
            controls,
            msgs,
            got: 0,
        }
    }

    /// Takes every datagram waiting, up to the batch's size; returns how
    /// many. With `wait`, waits (up to the socket's read timeout) for the
    /// first; without, never waits (`WouldBlock` when none waits), whatever
    /// the socket's own blocking mode (which a socket shared with a sender
    /// keeps). A datagram larger than the room is cut to it (`MSG_TRUNC`
    /// marks it: [`RecvBatch::get`] reports it as such).
    pub(crate) fn recv(&mut self, socket: BorrowedFd<'_>, wait: bool) -> io::Result<usize> {
        let flags = if wait {
            libc::MSG_WAITFORONE
        } else {
            libc::MSG_DONTWAIT
        };
        for (i, m) in self.msgs.iter_mut().enumerate() {
            m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            m.msg_hdr.msg_controllen = CONTROL;
            m.msg_hdr.msg_flags = 0;
            m.msg_len = 0;
            debug_assert!(
                std::ptr::eq(m.msg_hdr.msg_iov, &self.iovecs[i]),
                "the batch's pointers are its own"
            );
        }
        // SAFETY: `msgs` holds `msgs.len()` initialised headers whose name
        // and iovec pointers point at this batch's own buffers, of the
        // lengths given; the kernel writes only within them.
        let n = unsafe {
            libc::recvmmsg(
                socket.as_raw_fd(),
                self.msgs.as_mut_ptr(),
                self.msgs.len() as libc::c_uint,
                flags,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            self.got = 0;
            return Err(io::Error::last_os_error());
        }
        self.got = n as usize;
        Ok(self.got)
    }

    /// Datagram `i` of the last `recv`.
    pub(crate) fn get(&self, i: usize) -> Option<Datagram<'_>> {
        if i >= self.got {
            return None;
        }
        let m = &self.msgs[i];
        let len = (m.msg_len as usize).min(self.bufs[i].len());
        let a = &self.addrs[i];
        let from = (a.sin_family == libc::AF_INET as libc::sa_family_t).then(|| {
            SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            ))
        });
        let truncated = m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        Some(Datagram {
            bytes: &self.bufs[i][..len],
            from,
            truncated,
            ecn: self.tos(i) & ECN_MASK,
        })
    }

    /// The IP TOS byte the kernel gave with datagram `i` (0 if none).
    fn tos(&self, i: usize) -> u8 {
        let hdr = &self.msgs[i].msg_hdr;
        debug_assert!(std::ptr::eq(
            hdr.msg_control.cast::<u64>(),
            self.controls[i].as_ptr()
        ));
        // SAFETY: `hdr`'s control data is this batch's own room for
        // datagram `i`, of CONTROL bytes, its length set by the last recv.
        unsafe { isola_runtime::ip_tos::tos_in(hdr, CONTROL) }
    }
}

/// A reply to send: to whom, its bytes, and the ECN field its IP header
/// carries (0: the socket's own).
pub(crate) struct Outgoing {
    /// Its receiver.
    pub to: SocketAddr,
    /// Its payload.
    pub bytes: Vec<u8>,
    /// Its ECN field (`ip_tos::ECN_CE` echoes a congestion mark).
    pub ecn: u8,
}

/// Sends each datagram of `datagrams` with as few `sendmmsg` calls as
/// the kernel allows (one, unless it stops early); returns how many were
/// sent. A datagram the kernel refuses (its error is about that one
/// message: no route, too large) is skipped and the rest still go, so the
/// count is exact. IPv4 receivers only; another family's datagram is not
/// sent.
pub(crate) fn send_batch(socket: BorrowedFd<'_>, datagrams: &[Outgoing]) -> usize {
    let v4: Vec<(libc::sockaddr_in, &Outgoing)> = datagrams
        .iter()
        .filter_map(|d| match d.to {
            SocketAddr::V4(a) => Some((sockaddr_v4(&a), d)),
            SocketAddr::V6(_) => None,
        })
        .collect();
    let mut iovecs: Vec<libc::iovec> = v4
        .iter()
        .map(|(_, d)| libc::iovec {
            iov_base: d.bytes.as_ptr().cast_mut().cast(),
            iov_len: d.bytes.len(),
        })
        .collect();
    let mut tos = vec![isola_runtime::ip_tos::TosControl::default(); v4.len()];
    let mut msgs: Vec<libc::mmsghdr> = v4
        .iter()
        .zip(iovecs.iter_mut())
        .zip(tos.iter_mut())
        .map(|(((addr, d), iov), tos)| {
            // SAFETY: mmsghdr is a plain C struct for which all-zero bytes
            // are a valid value.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_name = (addr as *const libc::sockaddr_in).cast_mut().cast();
            m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
            if d.ecn != 0 {
                tos.attach(&mut m.msg_hdr, d.ecn, false);
            }
            m
        })
        .collect();
    let (mut at, mut sent) = (0, 0);
    while at < msgs.len() {
        let rest = &mut msgs[at..];
        // SAFETY: `rest` holds initialised headers whose name, iovec and
        // control pointers point at `v4`'s addresses, `datagrams`' bytes
        // and `tos`' rooms, alive and unmoved for this call, of the lengths given; the kernel only
        // reads them (and writes each header's `msg_len`).
        let n = unsafe {
            libc::sendmmsg(
                socket.as_raw_fd(),
                rest.as_mut_ptr(),
                rest.len().min(libc::c_uint::MAX as usize) as libc::c_uint,
                // Never blocks: it runs in completion callbacks, on the
                // runtime's threads (a full send buffer drops, as below).
                libc::MSG_DONTWAIT,
            )
        };
        match n {
            n if n > 0 => {
                at += n as usize;
                sent += n as usize;
            }
            // The first message of `rest` failed (or nothing went, which
            // the kernel does not do): it is lost, as on the wire; retried
            // only if the call was interrupted.
            _ => match io::Error::last_os_error().kind() {
                io::ErrorKind::Interrupted => {}
                // The send buffer is full: the rest are lost, as on a
                // congested wire.
                io::ErrorKind::WouldBlock => break,
                _ => at += 1,
            },
        }
    }
    sent
}

/// `a` as the C structure the kernel reads.
fn sockaddr_v4(a: &SocketAddrV4) -> libc::sockaddr_in {
    // SAFETY: sockaddr_in is a plain C struct for which all-zero bytes are
    // a valid value.
    let mut s: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    s.sin_family = libc::AF_INET as libc::sa_family_t;
    s.sin_port = a.port().to_be();
    s.sin_addr.s_addr = u32::from(*a.ip()).to_be();
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsFd;

    /// A sender, a receiver (reads time out after 5 s) and its address.
    fn pair() -> (UdpSocket, UdpSocket, SocketAddr) {
        let (tx, rx) = (
            UdpSocket::bind("127.0.0.1:0").unwrap(),
            UdpSocket::bind("127.0.0.1:0").unwrap(),
        );
        rx.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let to = rx.local_addr().unwrap();
        (tx, rx, to)
    }

    /// What `send_batch` sends is what a receiver takes, datagram for
    /// datagram, in order; `RecvBatch` takes them back with their sender.
    #[test]
    fn a_batch_sent_is_the_batch_received() {
        let (tx, rx, to) = pair();
        let datagrams: Vec<Outgoing> = (0..40u8)
            .map(|i| Outgoing {
                to,
                bytes: vec![i; 1 + usize::from(i) * 30],
                ecn: 0,
            })
            .collect();
        assert_eq!(send_batch(tx.as_fd(), &datagrams), 40);
        let mut batch = RecvBatch::new(16, 2048);
        let mut seen = Vec::new();
        while seen.len() < 40 {
            let n = batch.recv(rx.as_fd(), true).unwrap();
            for i in 0..n {
                let d = batch.get(i).unwrap();
                assert_eq!((d.from, d.truncated), (Some(tx.local_addr().unwrap()), false));
                seen.push(d.bytes.to_vec());
            }
        }
        let sent: Vec<Vec<u8>> = datagrams.into_iter().map(|d| d.bytes).collect();
        assert_eq!(seen, sent);
    }

    /// A datagram the kernel refuses (larger than UDP allows) is skipped
    /// and counted out; the others still go.
    #[test]
    fn a_refused_datagram_is_skipped_and_the_rest_go() {
        let (tx, rx, to) = pair();
        let datagrams: Vec<Outgoing> = [(1u8, 10), (2, 70_000), (3, 10)]
            .into_iter()
            .map(|(b, n)| Outgoing {
                to,
                bytes: vec![b; n],
                ecn: 0,
            })
            .collect();
        assert_eq!(send_batch(tx.as_fd(), &datagrams), 2);
        let mut buf = [0u8; 64];
        assert_eq!(rx.recv(&mut buf).unwrap(), 10);
        assert_eq!(buf[0], 1);
        assert_eq!(rx.recv(&mut buf).unwrap(), 10);
        assert_eq!(buf[0], 3);
    }
}

#[cfg(test)]
mod ecn_tests {
    use super::*;
    use isola_runtime::ip_tos::{ECN_CE, ECN_ECT0};
    use std::net::UdpSocket;
    use std::os::fd::AsFd;

    /// A reply sent with an ECN field arrives with it, read back through
    /// `IP_RECVTOS` (the kernel's own header, not ours): CE stays CE and
    /// a reply sent without one arrives not ECN-capable.
    #[test]
    fn the_ecn_field_a_reply_is_sent_with_is_the_one_received() {
        let (tx, rx) = (
            UdpSocket::bind("127.0.0.1:0").unwrap(),
            UdpSocket::bind("127.0.0.1:0").unwrap(),
        );
        rx.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        isola_runtime::ip_tos::set_recv_tos(&rx, true).unwrap();
        let to = rx.local_addr().unwrap();
        let out = [ECN_CE, 0, ECN_ECT0].map(|ecn| Outgoing {
            to,
            bytes: vec![ecn; 8],
            ecn,
        });
        assert_eq!(send_batch(tx.as_fd(), &out), 3);
        let mut batch = RecvBatch::new(4, 64);
        let mut seen = Vec::new();
        while seen.len() < 3 {
            let n = batch.recv(rx.as_fd(), true).unwrap();
            seen.extend((0..n).map(|i| {
                let d = batch.get(i).unwrap();
                (d.bytes[0], d.ecn)
            }));
        }
        assert_eq!(seen, vec![(ECN_CE, ECN_CE), (0, 0), (ECN_ECT0, ECN_ECT0)]);
    }
}
