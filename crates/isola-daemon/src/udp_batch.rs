//! Batched UDP receive (`recvmmsg(2)` with `MSG_WAITFORONE`): one system
//! call takes every datagram waiting, up to the batch's size, instead of
//! one call a datagram. Neither the standard library nor rustix offers
//! `recvmmsg`, so it is called through `libc` here, its buffers owned and
//! checked by this type.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, BorrowedFd};

/// Room for `count` datagrams of up to `size` bytes each, with their
/// senders.
pub(crate) struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    iovecs: Vec<libc::iovec>,
    addrs: Vec<libc::sockaddr_in>,
    msgs: Vec<libc::mmsghdr>,
    /// Datagrams the last `recv` took.
    got: usize,
}

// SAFETY: the raw pointers in `iovecs` and `msgs` point into this value's
// own heap buffers (`bufs`, `iovecs`, `addrs`), which move with it.
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
        let msgs = (0..count)
            .map(|i| {
                // SAFETY: as above.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_in).cast();
                m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
                m.msg_hdr.msg_iov = &mut iovecs[i];
                m.msg_hdr.msg_iovlen = 1;
                m
            })
            .collect();
        RecvBatch {
            bufs,
            iovecs,
            addrs,
            msgs,
            got: 0,
        }
    }

    /// Waits (up to the socket's read timeout) for at least one datagram
    /// and takes every one waiting, up to the batch's size; returns how
    /// many. A datagram larger than the room is cut to it (`MSG_TRUNC`
    /// marks it: [`RecvBatch::get`] reports it as such).
    pub(crate) fn recv(&mut self, socket: BorrowedFd<'_>) -> io::Result<usize> {
        for (i, m) in self.msgs.iter_mut().enumerate() {
            m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
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
                libc::MSG_WAITFORONE,
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

    /// Datagram `i` of the last `recv`: its bytes, its IPv4 sender (`None`
    /// for another family) and whether it was cut short.
    pub(crate) fn get(&self, i: usize) -> Option<(&[u8], Option<SocketAddr>, bool)> {
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
        Some((&self.bufs[i][..len], from, truncated))
    }
}
