//! The IP header's TOS byte (IPv4) or traffic class (IPv6) per datagram,
//! whose low two bits are ECN's field (RFC 3168): set on a send as
//! ancillary data ([`TosControl`]), read on a receive with `IP_RECVTOS`
//! ([`set_recv_tos`], [`tos_in`], [`recv_with_tos`]). Neither the
//! standard library nor rustix carries a per-datagram TOS, so the
//! `cmsg(3)` handling is written here, once, for the packet path's
//! ingress and egress and for the packet generator.

use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;

/// The ECN field of a TOS byte: 0 not ECN-capable, 1 ECT(1), 2 ECT(0),
/// 3 Congestion Experienced.
pub const ECN_MASK: u8 = 0b11;

/// ECN's ECN-Capable Transport (0) codepoint.
pub const ECN_ECT0: u8 = 0b10;

/// ECN's Congestion Experienced codepoint.
pub const ECN_CE: u8 = 0b11;

/// Bytes of ancillary data room for one received TOS byte (with room to
/// spare for the header and alignment).
pub const RECV_CONTROL: usize = 64;

/// Ancillary data room for one IP TOS (IPv4) or traffic class (IPv6)
/// value on a send, aligned as `cmsghdr` is. Neither the standard library
/// nor rustix sets a per-datagram TOS, so it is written here by hand.
#[derive(Debug, Clone, Default)]
pub struct TosControl([u64; 4]);

impl TosControl {
    /// Points `hdr`'s ancillary data at this room, holding `tos` as the
    /// datagram's `IP_TOS` (or, with `v6`, `IPV6_TCLASS`). `self` must
    /// outlive the send `hdr` is used for.
    pub fn attach(&mut self, hdr: &mut libc::msghdr, tos: u8, v6: bool) {
        let (level, kind) = if v6 {
            (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
        } else {
            (libc::IPPROTO_IP, libc::IP_TOS)
        };
        let value = libc::c_int::from(tos);
        // SAFETY: the room is 32 bytes, aligned for `cmsghdr`, and
        // CMSG_SPACE(size_of::<c_int>()) is 24 on 64-bit Linux (checked
        // below); CMSG_FIRSTHDR of a header whose control
        // points at it and whose length is that space is its start.
        unsafe {
            let space = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize;
            assert!(
                space <= std::mem::size_of::<Self>(),
                "an int's cmsg fits the room"
            );
            hdr.msg_control = self.0.as_mut_ptr().cast();
            hdr.msg_controllen = space as _;
            let c = libc::CMSG_FIRSTHDR(hdr);
            (*c).cmsg_level = level;
            (*c).cmsg_type = kind;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), value);
        }
    }
}

/// Asks the kernel to give (`on`), or no longer give, each IPv4 datagram
/// received on `socket` its TOS byte as ancillary data (`IP_RECVTOS`).
pub fn set_recv_tos(socket: &impl AsRawFd, on: bool) -> io::Result<()> {
    set_ip_option(socket, libc::IP_RECVTOS, libc::c_int::from(on))
}

/// Sets the TOS byte (and so the ECN field) of every IPv4 datagram
/// `socket` sends (`IP_TOS`).
pub fn set_send_tos(socket: &impl AsRawFd, tos: u8) -> io::Result<()> {
    set_ip_option(socket, libc::IP_TOS, libc::c_int::from(tos))
}

fn set_ip_option(socket: &impl AsRawFd, option: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: a valid socket, and a c_int option value of its size.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The TOS byte in the ancillary data a receive wrote through `hdr`, or 0
/// if there is none (or it was cut short).
///
/// # Safety
/// `hdr.msg_control` must point at `room` bytes the caller owns, and
/// `hdr.msg_controllen` be what the kernel wrote there.
pub unsafe fn tos_in(hdr: &libc::msghdr, room: usize) -> u8 {
    if hdr.msg_control.is_null() || hdr.msg_controllen > room || hdr.msg_flags & libc::MSG_CTRUNC != 0 {
        return 0;
    }
    // SAFETY: by the caller's promise the control data lies within its
    // room, of the length the kernel wrote; the CMSG macros walk only
    // within `msg_controllen`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::IPPROTO_IP
                && (*c).cmsg_type == libc::IP_TOS
                && (*c).cmsg_len as usize >= libc::CMSG_LEN(1) as usize
            {
                return *libc::CMSG_DATA(c);
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    0
}

/// Receives one datagram on `socket` (connected or not) into `buf`:
/// its length and its TOS byte (0 unless [`set_recv_tos`] was called).
pub fn recv_with_tos(socket: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, u8)> {
    let mut control = [0u64; RECV_CONTROL / 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is a plain C struct for which all-zero bytes are a
    // valid value.
    let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    hdr.msg_control = control.as_mut_ptr().cast();
    hdr.msg_controllen = RECV_CONTROL;
    // SAFETY: `hdr` points at `buf` and `control`, alive for the call, of
    // the lengths given; the kernel writes only within them.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut hdr, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the control room is `control`, and the kernel set its length.
    Ok((n as usize, unsafe { tos_in(&hdr, RECV_CONTROL) }))
}
