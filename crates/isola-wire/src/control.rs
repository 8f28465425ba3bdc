//! The control path: messages on a Unix `SOCK_SEQPACKET` socket (one
//! message per send, boundaries kept, a descriptor passed with
//! `SCM_RIGHTS` travelling with its message). A message is a JSON object
//! of at most [`MAX_MESSAGE_BYTES`]; a longer one, or one whose descriptor
//! space overflowed, is an error, never a partial read.
//!
//! The conversation: the tenant says `Hello` (the tenant it acts as); the
//! daemon, having read the peer's kernel credentials, answers `Welcome`
//! with the region's descriptor, or `Refused`. Then `Register` (an
//! operator and its parameters) is answered `Registered` (its handle) or
//! `Failed`; `HostWindow` (where packet kernels' DMA writes land in the
//! arena) is answered `WindowSet` or `Failed`; `Kick` tells the daemon the
//! submission ring has entries, and the daemon's `Kick` tells the tenant
//! its completion ring has.

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketAddrUnix, SocketType,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::path::Path;

/// Version of the conversation, in `Hello`.
pub const PROTOCOL_VERSION: u32 = 1;

/// Largest control message, bytes.
pub const MAX_MESSAGE_BYTES: usize = 64 << 10;

/// What a tenant asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Attach as `tenant`.
    Hello {
        /// The tenant to act as (the configuration's name).
        tenant: String,
        /// [`PROTOCOL_VERSION`].
        version: u32,
    },
    /// Register operator `op` with `params` on this connection.
    Register {
        /// The operator's name (`isola op --list`).
        op: String,
        /// Its parameters.
        #[serde(default)]
        params: BTreeMap<String, String>,
    },
    /// The submission ring has new entries.
    Kick,
    /// Packet kernels of this tenant may DMA-write into the arena's bytes
    /// `offset..offset + len`: its host region (OSMOSIS' host memory), a
    /// kernel's host offset 0 being `offset`. The latest connection of a
    /// tenant to set one receives the writes; `len` 0 withdraws it.
    HostWindow {
        /// Where it starts in the arena, bytes.
        offset: u64,
        /// Its length, bytes.
        len: u64,
    },
    /// `count` calls meant for the daemon ran in the tenant's own process
    /// instead (an adapter's fallback), for `reason`, an index into
    /// [`FALLBACK_REASONS`] (any other counts as its last, `failed`). No
    /// reply: the daemon only counts them.
    Fallbacks {
        /// Why, as an index into [`FALLBACK_REASONS`].
        reason: u32,
        /// How many calls.
        count: u64,
    },
}

/// Why an adapter's call meant for the daemon ran in its own process: the
/// `reason` of [`Request::Fallbacks`] indexes this list, and the daemon's
/// metric `isola_tenant_fallbacks_total` is labelled by these names (the
/// C ABI's `ISOLA_FALLBACK_*`, in this order).
pub const FALLBACK_REASONS: [&str; 10] = [
    "unconfigured",
    "absent",
    "refused",
    "over_quota",
    "channel_full",
    "ring_full",
    "no_arena",
    "disconnected",
    "timeout",
    "failed",
];

/// What the daemon answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Reply {
    /// Attached: the region's descriptor comes with this message.
    Welcome {
        /// The tenant's index in the daemon.
        tenant: u32,
        /// Largest input of one task, bytes.
        max_input: u64,
    },
    /// Not attached, and why.
    Refused {
        /// Why.
        reason: String,
    },
    /// The operator's handle for submissions.
    Registered {
        /// The handle.
        handle: u32,
    },
    /// The host window is set (or withdrawn).
    WindowSet,
    /// A request failed (the connection stays).
    Failed {
        /// Why.
        reason: String,
    },
    /// The completion or event ring has new entries.
    Kick,
}

/// Why a control message could not be sent or received.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        /// The call.
        what: &'static str,
        /// Its error.
        source: rustix::io::Errno,
    },
    /// The peer closed the connection.
    #[error("the peer closed the connection")]
    Closed,
    /// The message was longer than MAX_MESSAGE_BYTES, or carried more
    /// descriptors than expected.
    #[error("a message too long or with too many descriptors")]
    Truncated,
    /// The message is not one this version knows.
    #[error("a malformed message: {0}")]
    Malformed(String),
}

fn os(what: &'static str) -> impl FnOnce(rustix::io::Errno) -> ControlError {
    move |source| ControlError::Os { what, source }
}

/// A new `SOCK_SEQPACKET` Unix socket, and the address of `path`.
fn seqpacket(path: &Path) -> Result<(OwnedFd, SocketAddrUnix), ControlError> {
    let fd = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    )
    .map_err(os("socket"))?;
    let addr = SocketAddrUnix::new(path).map_err(os("socket path"))?;
    Ok((fd, addr))
}

/// A listening socket at `path` (a stale socket file there is replaced).
pub fn listen(path: &Path) -> Result<OwnedFd, ControlError> {
    let (fd, addr) = seqpacket(path)?;
    let _ = std::fs::remove_file(path);
    rustix::net::bind(&fd, &addr).map_err(os("bind"))?;
    rustix::net::listen(&fd, 64).map_err(os("listen"))?;
    Ok(fd)
}

/// A connection to the daemon's socket at `path`.
pub fn connect(path: &Path) -> Result<OwnedFd, ControlError> {
    let (fd, addr) = seqpacket(path)?;
    rustix::net::connect(&fd, &addr).map_err(os("connect"))?;
    Ok(fd)
}

/// Sends `message`, with `fd` attached if given.
pub fn send<T: Serialize>(
    socket: BorrowedFd<'_>,
    message: &T,
    fd: Option<BorrowedFd<'_>>,
) -> Result<(), ControlError> {
    let bytes = serde_json::to_vec(message).map_err(|e| ControlError::Malformed(e.to_string()))?;
    if bytes.len() > MAX_MESSAGE_BYTES {
        return Err(ControlError::Truncated);
    }
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds;
    if let Some(fd) = fd {
        fds = [fd];
        control.push(SendAncillaryMessage::ScmRights(&fds));
    }
    rustix::net::sendmsg(socket, &[IoSlice::new(&bytes)], &mut control, SendFlags::NOSIGNAL)
        .map_err(os("sendmsg"))?;
    Ok(())
}

/// Sends `message` without waiting: a peer whose socket buffer is full
/// (it stopped reading) does not hold the sender up; returns whether it
/// was sent (a wake-up the peer already has queued is as good as another).
pub fn send_now<T: Serialize>(socket: BorrowedFd<'_>, message: &T) -> bool {
    let Ok(bytes) = serde_json::to_vec(message) else {
        return false;
    };
    rustix::net::send(socket, &bytes, SendFlags::NOSIGNAL | SendFlags::DONTWAIT).is_ok()
}

/// Receives one message, and the descriptor that came with it, if any.
pub fn recv<T: for<'de> Deserialize<'de>>(
    socket: BorrowedFd<'_>,
) -> Result<(T, Option<OwnedFd>), ControlError> {
    thread_local! {
        /// One receive buffer per thread: a message is read into it and
        /// parsed out of it, so a wake-up costs no 64 KiB allocation.
        static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; MAX_MESSAGE_BYTES + 1]);
    }
    BUF.with(|buf| recv_into(socket, &mut buf.borrow_mut()))
}

/// [`recv`] into `buf`.
fn recv_into<T: for<'de> Deserialize<'de>>(
    socket: BorrowedFd<'_>,
    buf: &mut [u8],
) -> Result<(T, Option<OwnedFd>), ControlError> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        socket,
        &mut [IoSliceMut::new(buf)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(os("recvmsg"))?;
    // Descriptors are taken (and so closed if unwanted) whatever follows.
    let mut fds: Vec<OwnedFd> = Vec::new();
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = m {
            fds.extend(received);
        }
    }
    if got.bytes == 0 {
        return Err(ControlError::Closed);
    }
    if got.bytes > MAX_MESSAGE_BYTES
        || got.flags.intersects(ReturnFlags::TRUNC | ReturnFlags::CTRUNC)
        || fds.len() > 1
    {
        return Err(ControlError::Truncated);
    }
    let message =
        serde_json::from_slice(&buf[..got.bytes]).map_err(|e| ControlError::Malformed(e.to_string()))?;
    Ok((message, fds.pop()))
}

/// The peer's kernel credentials (`SO_PEERCRED`): process, user, group.
pub fn peer(socket: impl AsFd) -> Result<rustix::net::UCred, ControlError> {
    rustix::net::sockopt::socket_peercred(socket).map_err(os("SO_PEERCRED"))
}
