//! A PCIe link at the transaction and data-link layers: what a DMA engine
//! with an `[engine.pcie]` table runs on (AaaS Sec. 3.3-3.4).
//!
//! Models, device to host ("up", posted writes and read requests) and host
//! to device ("down", completions):
//! - each direction is a wire carrying one TLP at a time, `(payload +
//!   tlp_overhead) / bandwidth` each (a read request is header only), plus
//!   one ACK and one UpdateFC DLLP per `ack_every` TLPs received, sent the
//!   other way;
//! - the device's transmitter takes the transfers in service in turn, one
//!   TLP each (round robin across queues, obs. 4), into a one-TLP queue: a
//!   TLP waiting there for its flow-control credits (posted header and data
//!   credits for writes, non-posted header credits for reads) holds up every
//!   TLP behind it, as the ordering rules require (a read must not pass a
//!   posted write);
//! - a read request needs one of the device's tags and room for its data in
//!   the completion buffer, reserved until its last completion arrives; a
//!   transfer that cannot get them gives its turn up until one frees; with
//!   `reads_per_transfer`, a transfer with that many requests outstanding
//!   waits for one to complete;
//! - the root complex handles posted writes in order, taking `rmw` for each
//!   write covering part of a cache line (its read-modify-write), and
//!   returns credits `credit_return` after it is done with a TLP; a read is
//!   answered `read_latency` after the earlier posted writes are done, with
//!   completions of at most `max_payload`, in order;
//! - a transfer may start with a descriptor read and end with a completion
//!   entry written (the ring-buffer protocol, AaaS Sec. 2).
//!
//! A write transfer is done when its last TLP leaves the device; a read when
//! its last completion arrives (or, with a completion entry, when that
//! leaves). Leaves out: link-layer replays, propagation delay, relaxed
//! ordering, the read completion boundary, IOMMU, host-side contention for
//! memory beyond the root complex's in-order write pipeline, merging of
//! posted writes, and a root-complex cost that depends on how much of a
//! line a partial write covers (every partial write pays one `rmw`).

use crate::device::{DeviceWork, Finished, Timer};
use isola_core::{Nanos, NANOS_PER_SEC};
use isola_model::scenario::{Arbitration, Direction, DmaSpec, PcieSpec, CREDIT_BYTES};
use slab::Slab;
use std::collections::{BTreeMap, VecDeque};

/// What a TLP from the device is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// A posted write of `bytes`.
    Write,
    /// A read request for `bytes` (the descriptor's, when `descriptor`).
    Read { descriptor: bool },
}

/// A TLP from the device, of transfer `xfer`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Tlp {
    xfer: usize,
    kind: Kind,
    bytes: u64,
    /// The transfer is done when this TLP leaves.
    last: bool,
}

/// What the host-to-device wire carries.
#[derive(Debug, Clone, Copy)]
enum Down {
    /// A completion of `bytes` for transfer `xfer`; `ends` the request of
    /// `request` bytes when it is its last.
    Completion {
        xfer: usize,
        bytes: u64,
        ends: Option<u64>,
        descriptor: bool,
    },
    /// ACK and UpdateFC DLLPs.
    Dllps,
}

/// What happens at a time.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// The up wire finished sending this (a TLP, or DLLPs when `None`).
    UpSent(Option<Tlp>),
    /// The down wire finished sending this.
    DownSent(Down),
    /// Credits come back to the device: posted header and data, non-posted.
    Credits { posted: u32, data: u32, nonposted: u32 },
    /// A read's data is ready at the root complex.
    ReadReady {
        xfer: usize,
        bytes: u64,
        descriptor: bool,
    },
}

/// One transfer (a dispatch) in service.
#[derive(Debug, Clone, Copy)]
struct Xfer {
    work: DeviceWork,
    started: Nanos,
    /// Descriptor still to request / requested and not yet arrived.
    descriptor_due: bool,
    descriptor_pending: bool,
    /// Data bytes not yet in a TLP or request.
    to_issue: u64,
    /// Read bytes requested and not yet arrived.
    in_flight: u64,
    /// Data read requests outstanding, and whether the transfer waits for
    /// one to complete (`reads_per_transfer`).
    reads_out: u32,
    held: bool,
    /// Completion entry still to write.
    entry_due: bool,
}

impl Xfer {
    fn is_read(&self) -> bool {
        self.work.direction == Direction::Read
    }
}

/// One direction's wire: the exact time it frees (fractional nanoseconds,
/// so that back-to-back TLPs do not drift by rounding) and whether it is
/// sending.
#[derive(Debug, Clone, Copy, Default)]
struct Wire {
    free_at: f64,
    busy: bool,
}

impl Wire {
    /// Starts sending `bytes` at `now`; the event time. A TLP sent as the
    /// last one's event fires starts when that one ended (the event time is
    /// rounded to the nanosecond, up to half of one late).
    fn send(&mut self, now: Nanos, bytes: u64, ns_per_byte: f64) -> Nanos {
        let start = self.free_at.max(now as f64 - 0.5);
        self.free_at = start + bytes as f64 * ns_per_byte;
        self.busy = true;
        crate::round_ns(self.free_at).max(now + 1)
    }
}

/// The link (see the module's documentation).
#[derive(Debug, Clone)]
pub struct PcieLink {
    dma: DmaSpec,
    p: PcieSpec,
    ns_per_byte: f64,
    xfers: Slab<Xfer>,
    events: Slab<Event>,
    /// Per queue (a transfer's own, or its tenant's, by `arbitrate`): its
    /// transfers with a TLP to send now, in order.
    queues: BTreeMap<u64, VecDeque<usize>>,
    /// Queues with a transfer to send, in turn.
    turns: VecDeque<u64>,
    /// Queues whose first transfer waits for a tag or buffer room.
    parked: Vec<u64>,
    /// The TLP picked next, waiting for credits or the wire.
    head: Option<Tlp>,
    up: Wire,
    down: Wire,
    down_queue: VecDeque<Down>,
    /// DLLP bytes owed to the up wire (acknowledging completions).
    up_dllps: u64,
    /// TLPs received, per direction, towards the next ACK.
    received: [u32; 2],
    posted: u32,
    data: u32,
    nonposted: u32,
    tags: u32,
    buffer: u64,
    /// When the root complex's posted-write pipeline is next free.
    rc_free_at: Nanos,
}

impl PcieLink {
    /// A link with `dma`'s wire and `pcie`'s transaction layer.
    pub fn new(dma: DmaSpec, pcie: PcieSpec) -> Self {
        PcieLink {
            dma,
            p: pcie,
            ns_per_byte: NANOS_PER_SEC as f64 / dma.bytes_per_sec,
            xfers: Slab::new(),
            events: Slab::new(),
            queues: BTreeMap::new(),
            turns: VecDeque::new(),
            parked: Vec::new(),
            head: None,
            up: Wire::default(),
            down: Wire::default(),
            down_queue: VecDeque::new(),
            up_dllps: 0,
            received: [0, 0],
            posted: pcie.posted_headers,
            data: pcie.posted_data,
            nonposted: pcie.nonposted_headers,
            tags: pcie.tags,
            buffer: pcie.completion_buffer,
            rc_free_at: 0,
        }
    }

    /// Predicted time of a transfer of `bytes` alone on the link: its
    /// descriptor's round trip, its data at the wire's rate (reads: one
    /// round trip more, and at most `tags` requests per round trip, by
    /// Little's law), its completion entry. Ignores credits and the root
    /// complex's costs (they bind only under floods of small writes).
    pub fn alone(dma: &DmaSpec, p: &PcieSpec, direction: Direction, bytes: u64) -> f64 {
        let ns = NANOS_PER_SEC as f64 / dma.bytes_per_sec;
        let o = dma.tlp_overhead;
        let tlps = |b: u64| b.div_ceil(dma.max_payload).max(1);
        let round_trip = |b: u64| (o + b + tlps(b) * o) as f64 * ns + p.read_latency as f64;
        let bytes = bytes.max(1);
        let mut t = 0.0;
        if p.descriptor > 0 {
            t += round_trip(p.descriptor);
        }
        t += match direction {
            Direction::Write => (bytes + tlps(bytes) * o) as f64 * ns,
            Direction::Read => {
                let requests = bytes.div_ceil(dma.max_read_request);
                let outstanding = (p.tags as u64)
                    .min(p.completion_buffer / dma.max_read_request)
                    .min(p.reads_per_transfer.map_or(u64::MAX, u64::from))
                    .max(1);
                let wire = (bytes + tlps(bytes) * o) as f64 * ns;
                let little = requests.div_ceil(outstanding) as f64 * round_trip(dma.max_read_request);
                wire.max(little) + round_trip(0) - o as f64 * ns
            }
        };
        if p.completion_entry > 0 {
            t += (p.completion_entry + o) as f64 * ns;
        }
        t
    }

    fn schedule(&mut self, at: Nanos, event: Event, timers: &mut Vec<Timer>) {
        let key = self.events.insert(event);
        timers.push((at, key as u64));
    }

    /// `work` enters at `now`.
    pub fn start(&mut self, now: Nanos, work: DeviceWork, timers: &mut Vec<Timer>) {
        let k = self.xfers.insert(Xfer {
            work,
            started: now,
            descriptor_due: self.p.descriptor > 0,
            descriptor_pending: false,
            to_issue: work.bytes.max(1),
            in_flight: 0,
            reads_out: 0,
            held: false,
            entry_due: self.p.completion_entry > 0,
        });
        self.ready(k);
        self.pump_up(now, timers);
    }

    /// Timer `token` fired at `now`.
    pub fn fire(&mut self, now: Nanos, token: u64, done: &mut Vec<Finished>, timers: &mut Vec<Timer>) {
        let Some(event) = self.events.try_remove(token as usize) else {
            return;
        };
        match event {
            Event::UpSent(tlp) => {
                self.up.busy = false;
                if let Some(tlp) = tlp {
                    self.arrive_up(now, tlp, done, timers);
                }
            }
            Event::DownSent(item) => {
                self.down.busy = false;
                if let Down::Completion {
                    xfer,
                    bytes,
                    ends,
                    descriptor,
                } = item
                {
                    self.arrive_down(now, xfer, bytes, ends, descriptor, done);
                }
            }
            Event::Credits {
                posted,
                data,
                nonposted,
            } => {
                self.posted += posted;
                self.data += data;
                self.nonposted += nonposted;
            }
            Event::ReadReady {
                xfer,
                bytes,
                descriptor,
            } => {
                let mut left = bytes;
                while left > 0 {
                    let chunk = left.min(self.dma.max_payload);
                    left -= chunk;
                    let ends = (left == 0).then_some(bytes);
                    self.down_queue.push_back(Down::Completion {
                        xfer,
                        bytes: chunk,
                        ends,
                        descriptor,
                    });
                }
            }
        }
        self.pump_down(now, timers);
        self.pump_up(now, timers);
    }

    fn finish(&mut self, now: Nanos, k: usize, done: &mut Vec<Finished>) {
        let x = self.xfers.remove(k);
        done.push(Finished {
            dispatch: x.work.dispatch,
            started: x.started,
            service: now - x.started,
            aborted: false,
        });
    }

    /// A TLP reached the root complex.
    fn arrive_up(&mut self, now: Nanos, tlp: Tlp, done: &mut Vec<Finished>, timers: &mut Vec<Timer>) {
        self.acknowledge(0);
        match tlp.kind {
            Kind::Write => {
                let line = self.p.cache_line;
                let partial = u64::from(tlp.bytes % line != 0);
                let begin = self.rc_free_at.max(now);
                self.rc_free_at = begin + partial * self.p.rmw;
                let credits = Event::Credits {
                    posted: 1,
                    data: tlp.bytes.div_ceil(CREDIT_BYTES) as u32,
                    nonposted: 0,
                };
                self.schedule(self.rc_free_at + self.p.credit_return, credits, timers);
            }
            Kind::Read { descriptor } => {
                let credits = Event::Credits {
                    posted: 0,
                    data: 0,
                    nonposted: 1,
                };
                self.schedule(now + self.p.credit_return, credits, timers);
                let ready = Event::ReadReady {
                    xfer: tlp.xfer,
                    bytes: tlp.bytes,
                    descriptor,
                };
                self.schedule(self.rc_free_at.max(now) + self.p.read_latency, ready, timers);
            }
        }
        if tlp.last {
            self.finish(now, tlp.xfer, done);
        }
    }

    /// A completion reached the device.
    fn arrive_down(
        &mut self,
        now: Nanos,
        k: usize,
        bytes: u64,
        ends: Option<u64>,
        descriptor: bool,
        done: &mut Vec<Finished>,
    ) {
        self.acknowledge(1);
        if !descriptor {
            self.xfers[k].in_flight -= bytes;
        }
        let Some(request) = ends else {
            return;
        };
        self.tags += 1;
        self.buffer += request;
        for q in std::mem::take(&mut self.parked) {
            self.turns.push_back(q);
        }
        let x = &mut self.xfers[k];
        if descriptor {
            x.descriptor_pending = false;
            self.ready(k);
            return;
        }
        x.reads_out -= 1;
        if x.held {
            x.held = false;
            self.ready(k);
        } else if x.in_flight == 0 && x.to_issue == 0 {
            if x.entry_due {
                self.ready(k);
            } else {
                self.finish(now, k, done);
            }
        }
    }

    /// Counts a TLP received in direction `dir` (0 up, 1 down) and owes the
    /// other direction an ACK and an UpdateFC every `ack_every`.
    fn acknowledge(&mut self, dir: usize) {
        self.received[dir] += 1;
        if self.received[dir] >= self.p.ack_every {
            self.received[dir] = 0;
            if dir == 0 {
                self.down_queue.push_back(Down::Dllps);
            } else {
                self.up_dllps += 2 * self.p.dllp_bytes;
            }
        }
    }

    /// Transfer `k`'s queue.
    fn queue_of(&self, k: usize) -> u64 {
        match self.p.arbitrate {
            Arbitration::Transfer => k as u64,
            Arbitration::Tenant => self.xfers[k].work.queue as u64,
        }
    }

    /// Transfer `k` has a TLP to send: it joins its queue, and the queue the
    /// turns if it was idle.
    fn ready(&mut self, k: usize) {
        let q = self.queue_of(k);
        let queue = self.queues.entry(q).or_default();
        queue.push_back(k);
        if queue.len() == 1 && !self.parked.contains(&q) {
            self.turns.push_back(q);
        }
    }

    /// The next TLP of transfer `k`, updating its state as sent, and
    /// whether it has another to send without waiting; `Err(true)` when it
    /// waits for a tag or buffer room, `Err(false)` when for completions.
    fn next_tlp(&mut self, k: usize) -> Result<(Tlp, bool), bool> {
        let (mps, mrrs) = (self.dma.max_payload, self.dma.max_read_request);
        let x = self.xfers[k];
        let read = |bytes: u64, descriptor: bool| Tlp {
            xfer: k,
            kind: Kind::Read { descriptor },
            bytes,
            last: false,
        };
        let tlp = if x.descriptor_pending {
            return Err(false);
        } else if x.descriptor_due {
            read(self.p.descriptor, true)
        } else if x.to_issue > 0 && x.is_read() {
            if x.reads_out >= self.p.reads_per_transfer.unwrap_or(u32::MAX) {
                self.xfers[k].held = true;
                return Err(false);
            }
            read(x.to_issue.min(mrrs), false)
        } else if x.to_issue > 0 {
            let bytes = x.to_issue.min(mps);
            let last = bytes == x.to_issue && !x.entry_due;
            Tlp {
                xfer: k,
                kind: Kind::Write,
                bytes,
                last,
            }
        } else if x.in_flight == 0 && x.entry_due {
            Tlp {
                xfer: k,
                kind: Kind::Write,
                bytes: self.p.completion_entry,
                last: true,
            }
        } else {
            return Err(false);
        };
        if let Kind::Read { .. } = tlp.kind {
            if self.tags == 0 || self.buffer < tlp.bytes {
                return Err(true);
            }
            self.tags -= 1;
            self.buffer -= tlp.bytes;
        }
        let x = &mut self.xfers[k];
        match tlp.kind {
            Kind::Read { descriptor: true } => {
                x.descriptor_due = false;
                x.descriptor_pending = true;
            }
            Kind::Read { descriptor: false } => {
                x.to_issue -= tlp.bytes;
                x.in_flight += tlp.bytes;
                x.reads_out += 1;
            }
            Kind::Write if x.to_issue > 0 => x.to_issue -= tlp.bytes,
            Kind::Write => x.entry_due = false,
        }
        let more =
            !tlp.last && !x.descriptor_pending && (x.to_issue > 0 || (x.entry_due && x.in_flight == 0));
        Ok((tlp, more))
    }

    /// Picks the next TLP: the queue whose turn it is sends its first
    /// transfer's next TLP, and takes its next turn if it has more.
    fn pick(&mut self) -> Option<Tlp> {
        while let Some(q) = self.turns.pop_front() {
            let Some(&k) = self.queues.get(&q).and_then(|queue| queue.front()) else {
                continue;
            };
            let picked = self.next_tlp(k);
            if picked == Err(true) {
                self.parked.push(q);
                continue;
            }
            let queue = self.queues.get_mut(&q).expect("looked up above");
            if !matches!(picked, Ok((_, true))) {
                queue.pop_front();
            }
            if queue.is_empty() {
                self.queues.remove(&q);
            } else {
                self.turns.push_back(q);
            }
            if let Ok((tlp, _)) = picked {
                return Some(tlp);
            }
        }
        None
    }

    /// Sends what the up wire can send now: owed DLLPs first, then the head
    /// TLP once its credits are there.
    fn pump_up(&mut self, now: Nanos, timers: &mut Vec<Timer>) {
        if self.up.busy {
            return;
        }
        if self.up_dllps > 0 {
            let at = self.up.send(now, self.up_dllps, self.ns_per_byte);
            self.up_dllps = 0;
            self.schedule(at, Event::UpSent(None), timers);
            return;
        }
        if self.head.is_none() {
            self.head = self.pick();
        }
        let Some(tlp) = self.head else {
            return;
        };
        let wire = match tlp.kind {
            Kind::Write => {
                let data = tlp.bytes.div_ceil(CREDIT_BYTES) as u32;
                if self.posted == 0 || self.data < data {
                    return;
                }
                self.posted -= 1;
                self.data -= data;
                tlp.bytes + self.dma.tlp_overhead
            }
            Kind::Read { .. } => {
                if self.nonposted == 0 {
                    return;
                }
                self.nonposted -= 1;
                self.dma.tlp_overhead
            }
        };
        self.head = None;
        let at = self.up.send(now, wire, self.ns_per_byte);
        self.schedule(at, Event::UpSent(Some(tlp)), timers);
    }

    /// Sends the next completion or DLLPs down.
    fn pump_down(&mut self, now: Nanos, timers: &mut Vec<Timer>) {
        if self.down.busy {
            return;
        }
        let Some(item) = self.down_queue.pop_front() else {
            return;
        };
        let bytes = match item {
            Down::Completion { bytes, .. } => bytes + self.dma.tlp_overhead,
            Down::Dllps => 2 * self.p.dllp_bytes,
        };
        let at = self.down.send(now, bytes, self.ns_per_byte);
        self.schedule(at, Event::DownSent(item), timers);
    }
}
