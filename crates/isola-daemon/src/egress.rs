//! The packet path's egress (issue 16): the replies to one received batch's
//! packets of one tenant are collected as their tasks complete and sent
//! together with one `sendmmsg` by whichever runtime thread completes the
//! group's last task; no thread of its own, no hand-off. Every packet of
//! the group is counted in exactly one outcome here: replied (its reply
//! sent), dropped (refused by the core, or its reply refused by the
//! socket), aborted (its kernel failed or the task was never taken).
//!
//! A group is one tenant's, so a reply waits at most for that tenant's
//! own later packets of the same batch (the core serves a tenant's tasks
//! in their order), never for another tenant's.

use crate::metrics::PacketOutcome;
use crate::Shared;
use isola_runtime::TaskError;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The replies of one tenant's packets of one received batch.
pub(crate) struct ReplyGroup {
    socket: Arc<UdpSocket>,
    shared: Arc<Shared>,
    tenant: usize,
    /// Packets whose outcome is not known yet.
    pending: AtomicUsize,
    /// Replies waiting for the group's last outcome.
    replies: Mutex<Vec<(SocketAddr, Vec<u8>)>>,
}

impl ReplyGroup {
    /// A group of `packets` packets of `tenant`, answered on `socket`.
    pub(crate) fn new(
        socket: &Arc<UdpSocket>,
        shared: &Arc<Shared>,
        tenant: usize,
        packets: usize,
    ) -> ReplyGroup {
        ReplyGroup {
            socket: Arc::clone(socket),
            shared: Arc::clone(shared),
            tenant,
            pending: AtomicUsize::new(packets),
            replies: Mutex::new(Vec::with_capacity(packets)),
        }
    }

    /// Takes the outcome of the task of a packet from `from`: a reply to
    /// send (if its flow `reply`s), or the reason it has none.
    pub(crate) fn settle(&self, from: SocketAddr, reply: bool, result: Result<Vec<u8>, TaskError>) {
        match result {
            Ok(out) if reply => {
                if let Ok(mut replies) = self.replies.lock() {
                    replies.push((from, out));
                }
            }
            // A flow without replies: its packet ends with its kernel.
            Ok(_) => {}
            Err(TaskError::Rejected(_)) => self.count(PacketOutcome::Dropped, 1),
            Err(_) => self.count(PacketOutcome::Aborted, 1),
        }
        self.one_done();
    }

    /// A packet whose task was never taken (the runtime refused the
    /// submission): aborted.
    pub(crate) fn refused(&self) {
        self.count(PacketOutcome::Aborted, 1);
        self.one_done();
    }

    fn one_done(&self) {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.flush();
        }
    }

    /// Sends every reply collected; a reply the socket refuses is the
    /// sender's loss, as on the wire, and counted dropped.
    fn flush(&self) {
        let replies = match self.replies.lock() {
            Ok(mut r) => std::mem::take(&mut *r),
            Err(_) => return,
        };
        if replies.is_empty() {
            return;
        }
        let sent = crate::udp_batch::send_batch(std::os::fd::AsFd::as_fd(&*self.socket), &replies);
        self.count(PacketOutcome::Replied, sent);
        self.count(PacketOutcome::Dropped, replies.len() - sent);
    }

    fn count(&self, outcome: PacketOutcome, n: usize) {
        self.shared
            .packets
            .count(&self.shared.metrics, self.tenant, outcome, n);
    }
}
