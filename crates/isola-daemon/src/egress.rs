//! The packet path's egress (issue 16): the replies to one poll's
//! packets of one tenant are collected as their tasks complete and sent
//! together with one `sendmmsg` by whichever runtime thread completes the
//! group's last task; no thread of its own, no hand-off. Every packet of
//! the group is counted in exactly one outcome here: replied (its reply
//! sent), dropped (refused by the core, or its reply refused by the
//! socket), aborted (its kernel failed or was stopped at a limit, its DMA
//! request was refused, or the task was never taken), consumed (its kernel
//! ran and no reply was asked for). A built-in
//! kernel's output is its reply; a WebAssembly kernel's output says what
//! it asked for (`crate::kernel`): a reply, DMA writes to its tenant's
//! host region (`crate::host_write`).
//!
//! A group is one tenant's, so a reply waits at most for that tenant's
//! own later packets of the same poll (the core serves a tenant's tasks
//! in their order), never for another tenant's.
//!
//! With an egress engine (`kind = "egress"`), replies are not sent with
//! the group: each is a task of its tenant on that engine
//! (`Stage::Reply`), ordered by the engine's policy (WRR by default, as
//! OSMOSIS' egress) and cut into the engine's `split`-sized pieces, each
//! sent from the socket its packet arrived on to the packet's sender in
//! datagrams of at most 1472 B. The packet is counted replied when its
//! reply task completes, dropped if the core refuses it or the socket
//! does.

use crate::aborts::Cause;
use crate::metrics::PacketOutcome;
use crate::udp_batch::Outgoing;
use crate::Shared;
use isola_core::EngineKind;
use isola_kernels::KernelOutput;
use isola_ops::OpError;
use isola_runtime::{Completion, ReplyRoute, Stage, TaskError};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Where a packet's reply goes and what its flow does with its kernel's
/// output.
#[derive(Clone, Copy)]
pub(crate) struct ReplyTo {
    /// The packet's sender.
    pub(crate) from: SocketAddr,
    /// The flow's index among its tenant's flows (events name it so).
    pub(crate) flow: usize,
    /// Its kernel is a tenant's WebAssembly module.
    pub(crate) wasm: bool,
    /// The flow sends replies.
    pub(crate) reply: bool,
    /// The flow tells the sender of a packet it aborts
    /// ([`crate::aborts::error_reply`]).
    pub(crate) error_reply: bool,
    /// The ECN field its reply carries: CE where the packet was marked at
    /// ingress, else 0.
    pub(crate) ecn: u8,
}

/// The replies of one tenant's packets of one poll of a socket.
pub(crate) struct ReplyGroup {
    socket: Arc<UdpSocket>,
    shared: Arc<Shared>,
    tenant: usize,
    /// Packets whose outcome is not known yet.
    pending: AtomicUsize,
    /// Replies waiting for the group's last outcome.
    replies: Mutex<Vec<Outgoing>>,
    /// Error replies (`error_reply = true`) to aborted packets, likewise.
    errors: Mutex<Vec<Outgoing>>,
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
            errors: Mutex::new(Vec::new()),
        }
    }

    /// Takes the completion of a packet's task: a reply to send (if its
    /// flow replies and its kernel gave one), or the reason it has none.
    pub(crate) fn settle(&self, to: &ReplyTo, c: Completion) {
        self.shared.settle_packet_task(&c);
        match c.result {
            Ok(out) => self.answer(to, out),
            Err(TaskError::Rejected(_)) => self.count(PacketOutcome::Dropped, 1),
            Err(TaskError::Operator(OpError::KernelStopped { cause, reason, .. })) => self.abort(
                to,
                Cause {
                    code: u64::from(cause),
                    reason: format!("its kernel was stopped: {reason}"),
                },
            ),
            // An IO flow's DMA stage found no place (its window withdrawn).
            Err(TaskError::Transfer(e)) => self.abort(to, unplaced(&e.to_string())),
            Err(e) => self.abort(
                to,
                Cause {
                    code: 0,
                    reason: format!("its task failed: {e}"),
                },
            ),
        }
        self.one_done(to.flow);
    }

    /// Packet `to` ends without its reply, for `cause`: counted, its
    /// tenant told, the log told ([`crate::aborts`]); and its sender
    /// told, if its flow asks for error replies.
    fn abort(&self, to: &ReplyTo, cause: Cause) {
        self.shared.packet_aborted(self.tenant, to.flow, to.from, &cause);
        if to.error_reply {
            if let Ok(mut errors) = self.errors.lock() {
                errors.push(Outgoing {
                    to: to.from,
                    bytes: crate::aborts::error_reply(cause.code, &cause.reason),
                    ecn: to.ecn,
                });
            }
        }
    }

    /// Takes a kernel's output `out`: its reply, kept for the group's
    /// send; a WebAssembly kernel's DMA requests, carried out now.
    fn answer(&self, to: &ReplyTo, out: Vec<u8>) {
        let reply = if to.wasm {
            let Some(asked) = KernelOutput::from_bytes(&out) else {
                return self.abort(
                    to,
                    Cause {
                        code: 0,
                        reason: "its kernel's output could not be read".to_string(),
                    },
                );
            };
            if !crate::host_write::carry_out(&self.shared, self.tenant, to.flow as u64, asked.dma) {
                return self.abort(to, unplaced("a DMA write it asked for"));
            }
            asked.reply
        } else {
            Some(out)
        };
        // A flow without replies (or a kernel that asked for none): its
        // packet ends with its kernel.
        match (to.reply, reply, self.shared.engine_of(EngineKind::Egress)) {
            (true, Some(reply), Some(engine)) => self.schedule_reply(engine, to, reply),
            (true, Some(bytes), None) => {
                if let Ok(mut replies) = self.replies.lock() {
                    replies.push(Outgoing {
                        to: to.from,
                        bytes,
                        ecn: to.ecn,
                    });
                }
            }
            _ => self.count(PacketOutcome::Consumed, 1),
        }
    }

    /// Submits `reply` to `to`'s sender as its tenant's task on egress
    /// engine `engine`; the packet's outcome is counted when it completes.
    fn schedule_reply(&self, engine: isola_core::EngineId, to: &ReplyTo, reply: Vec<u8>) {
        let route = ReplyRoute {
            socket: Arc::clone(&self.socket),
            to: to.from,
            ecn: to.ecn,
        };
        let (shared, tenant) = (Arc::clone(&self.shared), self.tenant);
        let on_done: isola_runtime::OnCompletion = Arc::new(move |c| {
            shared.settle_packet_task(&c);
            let outcome = match c.result {
                Ok(_) => PacketOutcome::Replied,
                Err(_) => PacketOutcome::Dropped,
            };
            shared.packets.count(&shared.metrics, tenant, outcome, 1);
        });
        // The reply waits in its packet's own flow queue.
        let handle = self
            .shared
            .runtime
            .tenant(isola_core::TenantId(tenant as u32))
            .in_flow(to.flow as u32);
        let stages = vec![Stage::Reply { engine, route }];
        if handle.submit_stages_calling(stages, reply, on_done).is_err() {
            self.count(PacketOutcome::Dropped, 1);
        }
    }

    /// Packet `to`, whose task was never taken (the runtime refused the
    /// submission): aborted.
    pub(crate) fn refused(&self, to: &ReplyTo) {
        self.abort(
            to,
            Cause {
                code: 0,
                reason: "the runtime refused its task".to_string(),
            },
        );
        self.one_done(to.flow);
    }

    /// One of the group's packets, of flow `flow`, has ended.
    fn one_done(&self, flow: usize) {
        self.shared.packets.release(self.tenant, flow);
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.flush();
        }
    }

    /// Sends every reply collected; a reply the socket refuses is the
    /// sender's loss, as on the wire, and counted dropped. Error replies
    /// go too, uncounted (their packets were counted aborted).
    fn flush(&self) {
        let errors = self
            .errors
            .lock()
            .map(|mut e| std::mem::take(&mut *e))
            .unwrap_or_default();
        if !errors.is_empty() {
            crate::udp_batch::send_batch(std::os::fd::AsFd::as_fd(&*self.socket), &errors);
        }
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

/// The cause of a packet whose DMA transfer (`what`) found no place in
/// its tenant's host window.
fn unplaced(what: &str) -> Cause {
    Cause {
        code: crate::host_write::UNPLACED_WRITE,
        reason: format!("{what} found no place in its tenant's host window"),
    }
}
