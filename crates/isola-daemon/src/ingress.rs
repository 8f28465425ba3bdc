//! The packet path's ingress (issue 16, first part): the daemon listens on
//! its configured UDP addresses; each datagram is matched on its 5-tuple
//! (the one matcher, `isola_model::ingress`) to a tenant's flow queue
//! (OSMOSIS' FMQ: `[[tenant.flow]]`, first rule in tenant and flow order
//! wins), and its payload runs through that flow's kernel as a task of
//! the tenant: scheduled by the core like every other task. A tenant's
//! flow queues hold at most its `queue_cap` packets taken in and not yet
//! ended; a packet beyond that is dropped and counted at ingress, before
//! it reaches the dispatcher (so a flood costs the core nothing), as is
//! one the core refuses. A
//! flow that replies sends the kernel's output back to the packet's
//! sender (`egress`). Unmatched packets are counted and dropped. An IO
//! flow's packet (`dma`, `crate::io_flow`) is two stages, its kernel and
//! a DMA transfer its header names, checked against the tenant's host
//! window as it is matched.
//!
//! The runtime's dispatcher takes the datagrams itself: each listening
//! socket is a poller it polls beside its channel (`SocketPoller`, an
//! `isola_runtime::Poller`), so that a packet goes from the socket to the
//! core with no thread hand-off; before the dispatcher blocks, a thread
//! waiting on every socket is armed to wake it (`crate::socket_wake`).
//! A poll takes up to `READS_PER_POLL` batches (one `recvmmsg` each,
//! never waiting), and each tenant's matched packets of the poll go
//! to the runtime as one batch (`TenantHandle::submit_stages_batch_calling`:
//! still one core decision and one completion per packet), and their
//! replies leave as one `sendmmsg` (`egress`). A flow's kernel
//! (`crate::kernel`) is built once, with the configuration, not per packet.
//!
//! Each flow is its own queue of its tenant in the core (its index among
//! the tenant's flows, `isola_core::Task::flow`): the core shares an
//! engine among tenants by their policy and, inside a tenant's turn, among
//! its flows by their `priority` and `weight`, so a tenant's bulk flow
//! does not delay its own latency flow. A flow's `queue_cap` bounds its
//! own packets taken in, as the tenant's bounds all of them.
//!
//! ECN (RFC 3168). Each datagram's ECN field is read with it
//! (`IP_RECVTOS`) while some tenant's queues are within a poll's
//! datagrams of its threshold (below that no packet is marked, and the
//! kernel is spared the field). From a tenant's `ecn_threshold` packets in its flow
//! queues on (or a flow's own `ecn_threshold` in that flow's queue), a
//! packet that carries ECN bits is taken in marked
//! Congestion Experienced (counted `marked`), and its reply carries the
//! mark back to the sender; a packet without them is taken in until the
//! queues are full. At `queue_cap` every packet is dropped.
//!
//! Rules follow the live tenant table: adding, changing or removing a
//! tenant (or its flows) through `isola ctl` or a reload takes effect at
//! the next packet.

use crate::config::FlowConfig;
use crate::egress::{ReplyGroup, ReplyTo};
use crate::kernel::FlowKernel;
use crate::metrics::{Metrics, PacketOutcome};
use crate::socket_wake::{SocketWake, Watch};
use crate::tenants::TenantTable;
use crate::Shared;
use isola_core::TenantId;
use isola_model::ingress::{FiveTuple, RuleSet};
use isola_ops::Operator;
use isola_runtime::{Direction, OnCompletion, Stage};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::thread::JoinHandle;

/// Largest datagram taken in: a UDP payload's maximum.
const MAX_DATAGRAM: usize = 65_535;

/// The receive buffer asked for each listening socket: 4 MiB.
const RECV_BUFFER: usize = 4 << 20;

/// Datagrams taken in one system call.
const BATCH: usize = 32;

/// The most batches one poll of a socket takes (the next only while each
/// comes full).
const READS_PER_POLL: usize = 4;

/// One flow queue as the matcher finds it.
struct Flow {
    tenant: usize,
    /// Its index among the tenant's flows (an event names it so).
    index: usize,
    kernel: FlowKernel,
    /// What each packet's first stage runs: the kernel, or for an IO flow
    /// the kernel ahead of its DMA (`crate::io_flow::IoStage`).
    operator: Arc<dyn Operator>,
    /// An IO flow's transfer direction.
    dma: Option<Direction>,
    reply: bool,
    error_reply: bool,
    /// Its own cost model ([`FlowConfig::cost`]), if it has one.
    cost: Option<Arc<dyn isola_core::CostModel>>,
}

/// One flow queue's occupancy at ingress, and its bounds.
#[derive(Debug, Default)]
struct FlowOccupancy {
    /// Packets taken in and not yet ended.
    in_flight: AtomicU64,
    /// The most it holds: its `queue_cap` (else its tenant's).
    depth: AtomicU64,
    /// From this many on, ECN-capable packets are marked (its own
    /// `ecn_threshold`; `u64::MAX` without one).
    mark_from: AtomicU64,
}

/// A tenant's packet counters (they outlive its flows), and its flow
/// queues' occupancy.
#[derive(Debug, Default)]
struct TenantPackets {
    received: AtomicU64,
    replied: AtomicU64,
    dropped: AtomicU64,
    aborted: AtomicU64,
    consumed: AtomicU64,
    marked: AtomicU64,
    /// Packets taken in and not yet ended (queued in the core or running).
    in_flight: AtomicU64,
    /// The most packets its flow queues hold: its `queue_cap`. A packet
    /// beyond it is dropped at ingress, before it costs the dispatcher
    /// anything (OSMOSIS' matching engine drops at a full FMQ).
    depth: AtomicU64,
    /// From this many packets in its flow queues on, a packet that
    /// carries ECN bits is taken in marked CE (its `ecn_threshold`).
    mark_from: AtomicU64,
    /// Each flow queue's own, by index (room for the most a tenant has).
    flows: Vec<FlowOccupancy>,
}

impl TenantPackets {
    fn new() -> TenantPackets {
        TenantPackets {
            flows: (0..isola_core::tenant::MAX_FLOW_QUEUES)
                .map(|_| FlowOccupancy::default())
                .collect(),
            ..TenantPackets::default()
        }
    }
}

impl TenantPackets {
    fn counter(&self, outcome: PacketOutcome) -> &AtomicU64 {
        match outcome {
            PacketOutcome::Received => &self.received,
            PacketOutcome::Replied => &self.replied,
            PacketOutcome::Dropped => &self.dropped,
            PacketOutcome::Aborted => &self.aborted,
            PacketOutcome::Consumed => &self.consumed,
            PacketOutcome::Marked => &self.marked,
        }
    }
}

/// The packet path's counters, as [`crate::Daemon::packet_counts`] gives
/// them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PacketCounts {
    /// Datagrams no flow matched (dropped).
    pub unmatched: u64,
    /// Per tenant seat: (received, replied, dropped for a full queue or
    /// a reply the socket refused, aborted by its kernel).
    pub tenants: Vec<(u64, u64, u64, u64)>,
    /// Per tenant seat: packets that ended with their kernel, no reply
    /// asked for. With the replied, dropped and aborted ones, every
    /// received packet is counted once.
    pub consumed: Vec<u64>,
    /// Per tenant seat: packets taken in marked Congestion Experienced
    /// (each also counted in one of the outcomes above).
    pub marked: Vec<u64>,
}

/// The matcher and the counters, shared by the socket pollers and the
/// tenant table.
pub(crate) struct PacketPath {
    rules: RwLock<RuleSet<Flow>>,
    unmatched: AtomicU64,
    tenants: Vec<TenantPackets>,
}

impl PacketPath {
    /// The rules of `table`'s tenants.
    pub(crate) fn new(table: &TenantTable) -> PacketPath {
        let path = PacketPath {
            rules: RwLock::new(RuleSet::new(Vec::new())),
            unmatched: AtomicU64::new(0),
            tenants: (0..table.seats.len()).map(|_| TenantPackets::new()).collect(),
        };
        path.rebuild(table);
        path
    }

    /// Takes the rules, and each tenant's flow queue depth, from `table`
    /// again (after a live change).
    pub(crate) fn rebuild(&self, table: &TenantTable) {
        for (seat, packets) in table.seats.iter().zip(&self.tenants) {
            let depth = seat.config.as_ref().map_or(0, |c| c.slo().queue_cap as u64);
            packets.depth.store(depth, Ordering::Relaxed);
            let mark_from = seat.config.as_ref().map_or(0, |c| c.tenant.ecn_threshold as u64);
            packets.mark_from.store(mark_from, Ordering::Relaxed);
            let flows = seat.config.as_ref().map_or(&[][..], |c| &c.flows[..]);
            for (i, occupancy) in packets.flows.iter().enumerate() {
                let f = flows.get(i);
                let own = f.map_or(depth, |f| f.queue.cap_within(depth as usize) as u64);
                occupancy.depth.store(own, Ordering::Relaxed);
                let mark = f.and_then(|f| f.ecn_threshold).map_or(u64::MAX, |m| m as u64);
                occupancy.mark_from.store(mark, Ordering::Relaxed);
            }
        }
        let rules = table
            .seats
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.removing)
            .filter_map(|(t, s)| s.config.as_ref().map(|c| (t, &c.flows)))
            .flat_map(|(t, flows)| {
                flows
                    .iter()
                    .enumerate()
                    .map(move |(i, f): (usize, &FlowConfig)| (f.rule, flow(t, i, f)))
            })
            .collect();
        if let Ok(mut r) = self.rules.write() {
            *r = RuleSet::new(rules);
        }
    }

    /// The counters now.
    pub(crate) fn counts(&self) -> PacketCounts {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        PacketCounts {
            unmatched: n(&self.unmatched),
            tenants: self
                .tenants
                .iter()
                .map(|t| (n(&t.received), n(&t.replied), n(&t.dropped), n(&t.aborted)))
                .collect(),
            consumed: self.tenants.iter().map(|t| n(&t.consumed)).collect(),
            marked: self.tenants.iter().map(|t| n(&t.marked)).collect(),
        }
    }

    /// Counts `n` packets of tenant seat `tenant` with `outcome`, here and
    /// in `metrics`.
    pub(crate) fn count(&self, metrics: &Metrics, tenant: usize, outcome: PacketOutcome, n: usize) {
        if n == 0 {
            return;
        }
        if let Some(t) = self.tenants.get(tenant) {
            t.counter(outcome).fetch_add(n as u64, Ordering::Relaxed);
        }
        metrics.packets(tenant, outcome, n as u64);
    }

    /// Takes up to `n` packets of flow `flow` of tenant seat `tenant`
    /// into its queue, as many as the flow's queue and the tenant's queues
    /// together have room for; answers how many, and the position among
    /// them from which a packet finds its flow's queue or its tenant's at
    /// or past its ECN threshold (a packet there carrying ECN bits is
    /// marked).
    fn admit(&self, tenant: usize, flow: usize, n: usize) -> Admitted {
        let none = Admitted {
            taken: 0,
            mark_from: 0,
        };
        let Some((t, f)) = self
            .tenants
            .get(tenant)
            .and_then(|t| Some((t, t.flows.get(flow)?)))
        else {
            return none;
        };
        let (flow_taken, flow_before) = take_up_to(&f.in_flight, f.depth.load(Ordering::Relaxed), n as u64);
        let (taken, before) = take_up_to(&t.in_flight, t.depth.load(Ordering::Relaxed), flow_taken);
        // What the tenant had no room for leaves the flow's count again.
        f.in_flight.fetch_sub(flow_taken - taken, Ordering::AcqRel);
        let mark_from = t
            .mark_from
            .load(Ordering::Relaxed)
            .saturating_sub(before)
            .min(f.mark_from.load(Ordering::Relaxed).saturating_sub(flow_before));
        Admitted {
            taken: taken as usize,
            mark_from: mark_from.min(taken) as usize,
        }
    }

    /// Whether a packet of a batch of `batch` could be marked: some
    /// tenant's flow queues hold at least its ECN threshold less `batch`.
    fn may_mark(&self, batch: usize) -> bool {
        let near = |in_flight: &AtomicU64, from: &AtomicU64| {
            in_flight.load(Ordering::Relaxed).saturating_add(batch as u64) >= from.load(Ordering::Relaxed)
        };
        self.tenants.iter().any(|t| {
            t.depth.load(Ordering::Relaxed) > 0
                && (near(&t.in_flight, &t.mark_from)
                    || t.flows.iter().any(|f| near(&f.in_flight, &f.mark_from)))
        })
    }

    /// One packet of flow `flow` of tenant seat `tenant` has ended
    /// (whatever its outcome).
    pub(crate) fn release(&self, tenant: usize, flow: usize) {
        if let Some(t) = self.tenants.get(tenant) {
            let before = t.in_flight.fetch_sub(1, Ordering::AcqRel);
            debug_assert!(before > 0, "a packet ended that was never admitted");
            if let Some(f) = t.flows.get(flow) {
                // Admitted and released on the same index, so never below
                // zero; after a live change renumbers the flows, packets
                // of the old numbering count against the new flow at their
                // index until they end (saturating all the same: a count
                // must never wrap and shut a flow out).
                let _ = f
                    .in_flight
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| Some(n.saturating_sub(1)));
            }
        }
    }

    fn unmatched(&self, metrics: &Metrics) {
        self.unmatched.fetch_add(1, Ordering::Relaxed);
        metrics.unmatched();
    }
}

/// Adds up to `n` to `count` while it stays at most `depth`; answers how
/// much was added, and the count before.
fn take_up_to(count: &AtomicU64, depth: u64, n: u64) -> (u64, u64) {
    let (mut taken, mut before) = (0, 0);
    let _ = count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
        taken = depth.saturating_sub(now).min(n);
        before = now;
        Some(now + taken)
    });
    (taken, before)
}

/// What [`PacketPath::admit`] took of a batch.
struct Admitted {
    /// How many packets, the batch's first.
    taken: usize,
    /// The first of them taken into queues at or past the ECN threshold.
    mark_from: usize,
}

fn flow(tenant: usize, index: usize, f: &FlowConfig) -> Flow {
    let kernel = Arc::clone(f.kernel.operator());
    let operator: Arc<dyn Operator> = match f.dma {
        Some(direction) => Arc::new(crate::io_flow::IoStage::new(kernel, direction)),
        None => kernel,
    };
    Flow {
        tenant,
        index,
        kernel: f.kernel.clone(),
        operator,
        dma: f.dma,
        reply: f.reply,
        error_reply: f.error_reply,
        cost: f.cost.map(|c| Arc::new(c) as Arc<dyn isola_core::CostModel>),
    }
}

/// The listening sockets, each polled by the dispatcher
/// ([`SocketPoller`]), and the thread that wakes it for them.
pub(crate) struct Ingress {
    addrs: Vec<SocketAddr>,
    shared: Arc<Shared>,
    waker: Option<JoinHandle<()>>,
}

impl Ingress {
    /// Binds every address of `addrs` and has the dispatcher poll each.
    pub(crate) fn start(
        addrs: &[SocketAddr],
        shared: &Arc<Shared>,
        stopping: &Arc<AtomicBool>,
    ) -> std::io::Result<Ingress> {
        let mut wake = SocketWake::new()?;
        let mut bound = Vec::new();
        let mut pollers = Vec::new();
        for addr in addrs {
            let socket = UdpSocket::bind(addr)?;
            // Room for bursts (the system may cap it at net.core.rmem_max).
            let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&socket, RECV_BUFFER);
            let local = socket.local_addr()?;
            bound.push(local);
            let watch = wake.watch();
            pollers.push(SocketPoller {
                socket: Arc::new(socket),
                local,
                shared: Arc::downgrade(shared),
                stopping: Arc::clone(stopping),
                batch: crate::udp_batch::RecvBatch::new(BATCH, MAX_DATAGRAM),
                per_tenant: (0..shared.packets.tenants.len()).map(|_| Vec::new()).collect(),
                watch,
                ecn_read: false,
                ecn_warned: false,
            });
        }
        for p in pollers {
            shared
                .runtime
                .add_poller(Box::new(p))
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        let runtime = Arc::clone(shared);
        let realtime = shared.runtime.dispatcher_realtime();
        let waker = wake.spawn(Arc::clone(stopping), realtime, move || {
            runtime.runtime.wake_dispatcher()
        })?;
        Ok(Ingress {
            addrs: bound,
            shared: Arc::clone(shared),
            waker: Some(waker),
        })
    }

    /// The addresses bound (the ports chosen where the configuration said 0).
    pub(crate) fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Waits (after `stopping` was set) for the waker, and wakes the
    /// dispatcher so that it drops the pollers (they find `stopping` set)
    /// and with them the sockets. They hold the daemon's state only
    /// weakly, so nothing waits for that.
    pub(crate) fn join(mut self) {
        if let Some(t) = self.waker.take() {
            let _ = t.join();
        }
        self.shared.runtime.wake_dispatcher();
    }
}

/// A matched packet on its way to its tenant's batch.
struct Matched {
    /// Its task's stages, or why it cannot run (an IO flow's request with
    /// no place: the code its tenant is told).
    stages: Result<Vec<Stage>, u64>,
    payload: Vec<u8>,
    /// The ECN field of its IP header.
    ecn: u8,
    /// Its flow's own cost model, if it has one.
    cost: Option<Arc<dyn isola_core::CostModel>>,
    to: ReplyTo,
}

/// One listening socket, polled by the runtime's dispatcher on its own
/// thread (`isola_runtime::Poller`): each poll takes up to
/// `READS_PER_POLL` batches of datagrams (one `recvmmsg` each) to their
/// flows.
struct SocketPoller {
    socket: Arc<UdpSocket>,
    local: SocketAddr,
    /// The daemon's state, not held: the dispatcher owns this poller, and
    /// must never be the thread that drops the daemon (and so the runtime
    /// it runs in).
    shared: Weak<Shared>,
    stopping: Arc<AtomicBool>,
    batch: crate::udp_batch::RecvBatch,
    /// Per tenant seat: its packets of the batch at hand.
    per_tenant: Vec<Vec<Matched>>,
    watch: Watch,
    /// Whether the kernel gives each datagram's ECN field now
    /// (`IP_RECVTOS`; see [`SocketPoller::read_ecn_if_needed`]).
    ecn_read: bool,
    /// Whether asking for the ECN field failed once (said once, not at
    /// every poll).
    ecn_warned: bool,
}

impl SocketPoller {
    /// Has the kernel give each datagram's ECN field only while a packet
    /// of the next poll could be marked: while some tenant's flow queues
    /// are within a poll's datagrams of its ECN threshold. The field costs
    /// the kernel a control message per datagram; below every threshold no
    /// packet is marked, so nobody needs it. (A poll taken before the field
    /// is asked for again carries none: its packets are taken in unmarked,
    /// or dropped at a full queue, as packets without ECN bits are.)
    fn read_ecn_if_needed(&mut self, shared: &Shared) {
        let wanted = shared.packets.may_mark(BATCH * READS_PER_POLL);
        if wanted != self.ecn_read {
            match isola_runtime::ip_tos::set_recv_tos(&*self.socket, wanted) {
                Ok(()) => self.ecn_read = wanted,
                Err(e) if !self.ecn_warned => {
                    self.ecn_warned = true;
                    eprintln!("isolad: udp {}: reading the ECN field: {e}", self.local);
                }
                Err(_) => {}
            }
        }
    }

    /// Takes one batch (one `recvmmsg`, never waiting), each datagram
    /// matched to its tenant's list; how many datagrams.
    fn read_batch(&mut self, shared: &Shared) -> usize {
        let got = match self.batch.recv(self.socket.as_fd(), false) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) =>
            {
                return 0
            }
            Err(e) => {
                eprintln!("isolad: udp {}: {e}", self.local);
                return 0;
            }
        };
        classify(&self.batch, got, self.local, shared, &mut self.per_tenant);
        got
    }
}

impl isola_runtime::Poller for SocketPoller {
    fn poll(&mut self) -> usize {
        let Some(shared) = self
            .shared
            .upgrade()
            .filter(|_| !self.stopping.load(Ordering::Acquire))
        else {
            return 0;
        };
        self.read_ecn_if_needed(&shared);
        // Up to READS_PER_POLL batches while they come full: the socket is
        // read faster than the engines run (a dispatcher running a PU
        // engine itself runs a batch between looks), so that a flood is
        // dropped at its own tenant's flow queues, not at the socket every
        // tenant shares. What one poll takes goes to the core as one batch
        // per tenant, whose replies leave together.
        let mut taken = 0;
        for _ in 0..READS_PER_POLL {
            let got = self.read_batch(&shared);
            taken += got;
            if got < BATCH {
                break;
            }
        }
        for (tenant, packets) in self.per_tenant.iter_mut().enumerate() {
            if !packets.is_empty() {
                deliver(&self.socket, &shared, tenant, packets);
            }
        }
        taken
    }

    fn sleep(&mut self) -> bool {
        !self.stopping.load(Ordering::Acquire) && self.watch.sleep(self.socket.as_fd())
    }

    fn wake(&mut self) {
        self.watch.wake(self.socket.as_fd());
    }

    fn done(&self) -> bool {
        self.stopping.load(Ordering::Acquire) || self.shared.strong_count() == 0
    }
}

/// Matches the `got` datagrams of `batch` (received on `local`), each to
/// its tenant's list in `per_tenant`; counts the unmatched.
fn classify(
    batch: &crate::udp_batch::RecvBatch,
    got: usize,
    local: SocketAddr,
    shared: &Shared,
    per_tenant: &mut [Vec<Matched>],
) {
    let path = &shared.packets;
    let Ok(rules) = path.rules.read() else {
        return;
    };
    for i in 0..got {
        let Some(datagram) = batch.get(i) else {
            continue;
        };
        let (Some(from), false) = (datagram.from, datagram.truncated) else {
            // Cut short, or from no IPv4 sender: nothing to match.
            path.unmatched(&shared.metrics);
            continue;
        };
        let (IpAddr::V4(src_ip), IpAddr::V4(dst_ip)) = (from.ip(), local.ip()) else {
            // IPv4 rules only: anything else matches no flow.
            path.unmatched(&shared.metrics);
            continue;
        };
        let tuple = FiveTuple {
            src_ip,
            dst_ip,
            src_port: from.port(),
            dst_port: local.port(),
            proto: 17,
        };
        let Some(flow) = rules.classify(&tuple) else {
            path.unmatched(&shared.metrics);
            continue;
        };
        let Some(list) = per_tenant.get_mut(flow.tenant) else {
            path.unmatched(&shared.metrics);
            continue;
        };
        let stages = match flow.dma {
            None => Ok(vec![Stage::Run {
                operator: Arc::clone(&flow.operator),
                engine: None,
            }]),
            Some(d) => crate::io_flow::stages(shared, flow.tenant, d, &flow.operator, datagram.bytes),
        };
        list.push(Matched {
            stages,
            payload: datagram.bytes.to_vec(),
            ecn: datagram.ecn,
            cost: flow.cost.clone(),
            to: ReplyTo {
                from,
                flow: flow.index,
                wasm: flow.kernel.is_wasm(),
                reply: flow.reply,
                error_reply: flow.error_reply,
                ecn: 0,
            },
        });
    }
}

/// Runs `packets` (emptied) through their flows' kernels as one batch of
/// tasks of tenant seat `tenant`; their replies leave together
/// ([`ReplyGroup`]).
fn deliver(socket: &Arc<UdpSocket>, shared: &Arc<Shared>, tenant: usize, packets: &mut Vec<Matched>) {
    let path = &shared.packets;
    path.count(&shared.metrics, tenant, PacketOutcome::Received, packets.len());
    // IO requests with no place are aborted here, never run (an error
    // reply, if the flow asks for one, leaves at once).
    packets.retain(|p| match p.stages {
        Ok(_) => true,
        Err(code) => {
            let cause = crate::aborts::Cause {
                code,
                reason: "its IO request found no place in its tenant's host window".to_string(),
            };
            shared.packet_aborted(tenant, p.to.flow, p.to.from, &cause);
            if p.to.error_reply {
                let reply = crate::aborts::error_reply(cause.code, &cause.reason);
                // The sender's loss if refused, as any reply.
                let _ = socket.send_to(&reply, p.to.from);
            }
            false
        }
    });
    // Each flow's packets go to its own queue, in the order they came.
    packets.sort_by_key(|p| p.to.flow);
    for run in packets.chunk_by_mut(|a, b| a.to.flow == b.to.flow) {
        deliver_flow(socket, shared, tenant, run);
    }
    packets.clear();
}

/// Runs `packets`, all of one flow of tenant seat `tenant`, through its
/// kernel as one batch of tasks in the flow's queue.
fn deliver_flow(socket: &Arc<UdpSocket>, shared: &Arc<Shared>, tenant: usize, packets: &mut [Matched]) {
    let path = &shared.packets;
    let flow = packets.first().map_or(0, |p| p.to.flow);
    let cost = packets.first().and_then(|p| p.cost.clone());
    // A full flow queue drops the batch's latest packets here; a
    // congested one marks those that carry ECN bits (RFC 3168: mark
    // rather than drop while there is room), and their replies echo it.
    let admitted = path.admit(tenant, flow, packets.len());
    path.count(
        &shared.metrics,
        tenant,
        PacketOutcome::Dropped,
        packets.len() - admitted.taken,
    );
    let packets = &mut packets[..admitted.taken];
    let mut marked = 0;
    for p in packets.iter_mut().skip(admitted.mark_from) {
        if p.ecn != 0 {
            p.to.ecn = isola_runtime::ip_tos::ECN_CE;
            marked += 1;
        }
    }
    path.count(&shared.metrics, tenant, PacketOutcome::Marked, marked);
    if packets.is_empty() {
        return;
    }
    let group = Arc::new(ReplyGroup::new(socket, shared, tenant, packets.len()));
    // Every packet left has its stages (the unplaced were taken out
    // above); one without would be refused by the runtime (no stages) and
    // counted aborted, never skipped: the group waits for each packet.
    // Each packet's stages and payload are taken for its task; its reply
    // route stays, for a refusal's answer.
    let tasks = packets.iter_mut().map(|p| {
        let (g, to) = (Arc::clone(&group), p.to);
        let on_done: OnCompletion = Arc::new(move |c| g.settle(&to, c));
        let stages = std::mem::replace(&mut p.stages, Ok(Vec::new())).unwrap_or_default();
        (stages, Arc::new(std::mem::take(&mut p.payload)), on_done)
    });
    let mut handle = shared
        .runtime
        .tenant(TenantId(tenant as u32))
        .in_flow(flow as u32);
    if let Some(cost) = cost {
        handle = handle.with_cost(cost);
    }
    let submitted = handle.submit_stages_batch_calling(tasks);
    for (submitted, p) in submitted.iter().zip(packets.iter()) {
        if submitted.is_err() {
            group.refused(&p.to);
        }
    }
}
