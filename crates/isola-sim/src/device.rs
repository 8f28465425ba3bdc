//! Device models: what happens to a dispatch once the scheduler hands it to
//! an engine. Each model says what it models and what it leaves out.
//!
//! Devices are driven by the simulator like the scheduler is: `start` work
//! at `now`, and `fire` the timers the device asked for; they answer with
//! finished work and new timers. Timers carry a device-chosen token.

use isola_core::{DispatchId, Nanos, NANOS_PER_SEC};
use isola_model::scenario::{Direction, DmaSpec, ServiceCost, ServiceSpec};
use slab::Slab;
use std::collections::VecDeque;

/// How long a task takes on a compute engine: the scenario's service model,
/// its mean ([`ServiceCost`], the prediction) and the draws around it.
#[derive(Debug, Clone)]
pub struct ServiceModel {
    cost: ServiceCost,
    /// Exponentially distributed around the mean (else always the mean).
    exponential: bool,
}

impl ServiceModel {
    /// The model for `spec` on an engine clocked at `clock_hz`.
    pub fn new(spec: &ServiceSpec, clock_hz: f64) -> Self {
        ServiceModel {
            cost: ServiceCost::new(spec, clock_hz),
            exponential: matches!(spec, ServiceSpec::Exponential(_)),
        }
    }

    /// Mean service time of a task of `bytes` bytes (the prediction).
    pub fn mean(&self, bytes: u64) -> f64 {
        self.cost.mean(bytes)
    }

    /// One service time; `unit_exp` is the task's draw from Exp(1), used by
    /// the exponential model (drawn per task so every policy sees the same).
    pub fn sample(&self, bytes: u64, unit_exp: f64) -> Nanos {
        self.sample_of_mean(self.mean(bytes), unit_exp)
    }

    /// [`ServiceModel::sample`] of a task whose mean, `mean`, is known.
    #[inline]
    pub fn sample_of_mean(&self, mean: f64, unit_exp: f64) -> Nanos {
        let ns = if self.exponential { mean * unit_exp } else { mean };
        crate::round_ns(ns)
    }
}

/// What a device serves: one dispatch.
#[derive(Debug, Clone, Copy)]
pub struct DeviceWork {
    /// The scheduler's dispatch.
    pub dispatch: DispatchId,
    /// Bytes moved or processed.
    pub bytes: u64,
    /// Service time on a compute device (ignored by links, which derive it).
    pub service: Nanos,
    /// Abort after this much service (processing units' watchdog).
    pub budget: Option<Nanos>,
    /// DMA direction.
    pub direction: Direction,
    /// The hardware queue it arrives on (its tenant's), for links that
    /// arbitrate per queue (`isola_sim::pcie`).
    pub queue: u32,
    /// The RSS hash of the packet's 5-tuple ([`crate::rss`]; devices that
    /// do not steer by flow ignore it).
    pub flow_hash: u64,
}

/// Work the device is done with.
#[derive(Debug, Clone, Copy)]
pub struct Finished {
    /// The scheduler's dispatch.
    pub dispatch: DispatchId,
    /// When the device started serving it.
    pub started: Nanos,
    /// Time in service (what the scheduler is told was measured).
    pub service: Nanos,
    /// Whether the watchdog aborted it.
    pub aborted: bool,
}

/// A device timer to schedule: fire `token` at `at`.
pub type Timer = (Nanos, u64);

/// FIFO lanes: an accelerator's hardware queue and lanes, a cluster of
/// run-to-completion processing units, or an egress link (one lane whose
/// service time is the serialisation time).
///
/// Models: first-come-first-served order of dispatched jobs, `lanes` jobs in
/// service at once, each for its service time, and a per-dispatch budget after
/// which the work is aborted (OSMOSIS' watchdog; the lane is freed at the
/// budget), and a fixed `overhead` a dispatch holds its lane before its
/// service starts (the dispatch path: doorbell, descriptor fetch, a core's
/// hand-off), which is neither service nor charged to the tenant. Leaves
/// out: memory contention between lanes.
#[derive(Debug, Clone)]
pub struct FifoLanes {
    lanes: u32,
    busy: u32,
    overhead: Nanos,
    waiting: VecDeque<DeviceWork>,
    serving: Slab<InLane>,
}

/// What [`FifoLanes`] keeps of work in a lane until it ends: a third of
/// the [`DeviceWork`], written once when its service begins (issue 34).
#[derive(Debug, Clone, Copy)]
struct InLane {
    dispatch: DispatchId,
    started: Nanos,
    /// Whether the watchdog stops it (its budget is below its service).
    aborted: bool,
}

impl FifoLanes {
    /// `lanes` parallel servers, each dispatch holding its lane `overhead`
    /// before its service.
    pub fn new(lanes: u32, overhead: Nanos) -> Self {
        FifoLanes {
            lanes: lanes.max(1),
            busy: 0,
            overhead,
            waiting: VecDeque::new(),
            serving: Slab::new(),
        }
    }

    fn begin(&mut self, now: Nanos, work: DeviceWork, timers: &mut Vec<Timer>) {
        self.busy += 1;
        let run = work.budget.map_or(work.service, |b| work.service.min(b));
        let started = now.saturating_add(self.overhead);
        let token = self.serving.insert(InLane {
            dispatch: work.dispatch,
            started,
            aborted: work.budget.is_some_and(|b| work.service > b),
        }) as u64;
        timers.push((started.saturating_add(run), token));
    }

    fn start(&mut self, now: Nanos, work: DeviceWork, timers: &mut Vec<Timer>) {
        if self.busy < self.lanes {
            self.begin(now, work, timers);
        } else {
            self.waiting.push_back(work);
        }
    }

    fn fire(&mut self, now: Nanos, token: u64, done: &mut Vec<Finished>, timers: &mut Vec<Timer>) {
        let Some(InLane {
            dispatch,
            started,
            aborted,
        }) = self.serving.try_remove(token as usize)
        else {
            return;
        };
        self.busy -= 1;
        done.push(Finished {
            dispatch,
            started,
            service: now - started,
            aborted,
        });
        if let Some(next) = self.waiting.pop_front() {
            self.begin(now, next, timers);
        }
    }
}

/// A full-duplex PCIe/DMA link (AaaS section 3).
///
/// Models: writes and reads travel on separate directions that never contend
/// (observation 9); a transfer is cut into TLPs of at most `max_payload`
/// bytes (writes) or read requests of at most `max_read_request` bytes
/// (reads, returned as completions of `max_payload` bytes, each with its own
/// header); each TLP occupies its direction for `(payload + overhead) /
/// bandwidth`, and at least `1 / tlp_rate` when a TLP rate is set, which is
/// how the root complex's posted-header credits throttle floods of tiny TLPs
/// (observation 10); the transfers in service take turns TLP by TLP (round
/// robin across queues, observation 4). A dispatch is one queue's transfer
/// and one DMA request: its first TLP also carries the request's setup,
/// `request_overhead` ns on its direction (command processing and the bus
/// handshake; OSMOSIS Sec. 6.3), so a transfer cut into N fragments pays it
/// N times. Leaves out: link-layer retries, flow-control credit values per se (their
/// steady-state effect is the TLP rate), IOMMU and memory latency.
#[derive(Debug, Clone)]
pub struct DmaLink {
    spec: DmaSpec,
    transfers: Slab<Transfer>,
    /// Per direction (write = 0, read = 1): transfers waiting for a turn, and
    /// the one whose TLP is on the wire with its size.
    turns: [VecDeque<usize>; 2],
    on_wire: [Option<(usize, u64)>; 2],
}

#[derive(Debug, Clone, Copy)]
struct Transfer {
    work: DeviceWork,
    remaining: u64,
    started: Nanos,
    /// Whether its request's setup is still to be paid (before its first TLP).
    setup: bool,
}

impl DmaLink {
    /// A link with `spec`.
    pub fn new(spec: DmaSpec) -> Self {
        DmaLink {
            spec,
            transfers: Slab::new(),
            turns: [VecDeque::new(), VecDeque::new()],
            on_wire: [None, None],
        }
    }

    /// Time the next unit of `bytes` occupies direction `dir`, and its size.
    fn unit(spec: &DmaSpec, dir: usize, remaining: u64) -> (u64, f64) {
        let ns_per_byte = NANOS_PER_SEC as f64 / spec.bytes_per_sec;
        let (size, headers) = if dir == 0 {
            (remaining.min(spec.max_payload), 1)
        } else {
            let size = remaining.min(spec.max_read_request);
            (size, size.div_ceil(spec.max_payload).max(1))
        };
        let wire = (size + headers * spec.tlp_overhead) as f64 * ns_per_byte;
        let floor = spec
            .tlp_rate
            .map_or(0.0, |r| headers as f64 * NANOS_PER_SEC as f64 / r);
        (size, wire.max(floor))
    }

    /// Predicted time of a transfer of `bytes` alone on the link.
    pub fn alone(spec: &DmaSpec, direction: Direction, bytes: u64) -> f64 {
        // Every unit but the last is full and takes the same time, so this
        // is closed-form: a transfer of a petabyte costs what one of a page
        // does.
        if let Some(pcie) = &spec.pcie {
            return crate::pcie::PcieLink::alone(spec, pcie, direction, bytes);
        }
        let dir = direction as usize;
        let bytes = bytes.max(1);
        let (full, ns_full) = Self::unit(spec, dir, u64::MAX);
        let (count, rest) = (bytes / full, bytes % full);
        let tail = if rest > 0 {
            Self::unit(spec, dir, rest).1
        } else {
            0.0
        };
        spec.request_overhead as f64 + count as f64 * ns_full + tail
    }

    fn send_next(&mut self, now: Nanos, dir: usize, timers: &mut Vec<Timer>) {
        if self.on_wire[dir].is_some() {
            return;
        }
        let Some(k) = self.turns[dir].pop_front() else {
            return;
        };
        let t = &mut self.transfers[k];
        let (size, mut ns) = Self::unit(&self.spec, dir, t.remaining);
        if std::mem::take(&mut t.setup) {
            ns += self.spec.request_overhead as f64;
        }
        self.on_wire[dir] = Some((k, size));
        // At least 1 ns per TLP, so time always advances.
        timers.push((now.saturating_add(crate::round_ns(ns).max(1)), dir as u64));
    }

    fn start(&mut self, now: Nanos, work: DeviceWork, timers: &mut Vec<Timer>) {
        let dir = work.direction as usize;
        let k = self.transfers.insert(Transfer {
            work,
            remaining: work.bytes.max(1),
            started: now,
            setup: true,
        });
        self.turns[dir].push_back(k);
        self.send_next(now, dir, timers);
    }

    fn fire(&mut self, now: Nanos, token: u64, done: &mut Vec<Finished>, timers: &mut Vec<Timer>) {
        let dir = (token as usize).min(1);
        let Some((k, size)) = self.on_wire[dir].take() else {
            return;
        };
        let t = &mut self.transfers[k];
        t.remaining = t.remaining.saturating_sub(size);
        if t.remaining == 0 {
            let t = self.transfers.remove(k);
            done.push(Finished {
                dispatch: t.work.dispatch,
                started: t.started,
                service: now - t.started,
                aborted: false,
            });
        } else {
            self.turns[dir].push_back(k);
        }
        self.send_next(now, dir, timers);
    }
}

/// Any device. (One per engine, built once and never moved in the event
/// loop: the variants' sizes do not matter.)
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Device {
    /// FIFO lanes (accelerator, processing units, egress).
    Lanes(FifoLanes),
    /// PCIe/DMA link.
    Dma(DmaLink),
    /// PCIe link with credits, root complex and device limits.
    Pcie(crate::pcie::PcieLink),
    /// Cores fed by RSS-steered receive rings ([`crate::rss`]).
    Rss(crate::rss::RssCores),
}

impl Device {
    /// `work` enters the device at `now`; timers to schedule go to `timers`.
    pub fn start(&mut self, now: Nanos, work: DeviceWork, timers: &mut Vec<Timer>) {
        match self {
            Device::Lanes(d) => d.start(now, work, timers),
            Device::Dma(d) => d.start(now, work, timers),
            Device::Pcie(d) => d.start(now, work, timers),
            Device::Rss(d) => d.start(now, work, timers),
        }
    }

    /// Whether `work` finds room: only an RSS core's full ring refuses it
    /// (the NIC drops the packet); the other devices queue whatever the
    /// scheduler dispatches.
    pub fn admits(&self, work: &DeviceWork) -> bool {
        match self {
            Device::Rss(d) => d.admits(work.flow_hash),
            _ => true,
        }
    }

    /// Timer `token` fired at `now`.
    pub fn fire(&mut self, now: Nanos, token: u64, done: &mut Vec<Finished>, timers: &mut Vec<Timer>) {
        match self {
            Device::Lanes(d) => d.fire(now, token, done, timers),
            Device::Dma(d) => d.fire(now, token, done, timers),
            Device::Pcie(d) => d.fire(now, token, done, timers),
            Device::Rss(d) => d.fire(now, token, done, timers),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(k: usize, bytes: u64, service: Nanos, direction: Direction) -> DeviceWork {
        // DispatchIds come from a scheduler; build real ones.
        let _ = k;
        DeviceWork {
            dispatch: dispatch_ids()[k],
            bytes,
            service,
            budget: None,
            direction,
            queue: 0,
            flow_hash: 0,
        }
    }

    fn dispatch_ids() -> Vec<DispatchId> {
        use isola_core::*;
        use std::sync::Arc;
        let mut b = SchedulerBuilder::new();
        let e = b.engine(EngineSpec::new(
            "e",
            EngineKind::Dma,
            8,
            Arc::new(AffineCost::constant(1)),
        ));
        let t = b.tenant("t", Slo::default());
        let mut s = b.build().unwrap();
        (0..8)
            .map(|i| {
                s.submit(
                    0,
                    Task {
                        id: TaskId(i),
                        tenant: t,
                        engine: e,
                        op: OpSpec::named("x"),
                        bytes: 1,
                        arrival: 0,
                        deadline: None,
                        predicted_cost: None,
                        planner: None,
                        flow: 0,
                    },
                )
                .unwrap();
                s.next(0, e).unwrap().id
            })
            .collect()
    }

    fn drive(dev: &mut Device, starts: Vec<(Nanos, DeviceWork)>) -> Vec<(DispatchId, Nanos)> {
        let mut timers: Vec<Timer> = Vec::new();
        let mut done = Vec::new();
        let mut out = Vec::new();
        let mut pending: Vec<(Nanos, u64)> = Vec::new();
        let mut starts = starts.into_iter().peekable();
        loop {
            let next_timer = pending.iter().map(|t| t.0).min();
            let next_start = starts.peek().map(|s| s.0);
            let now = match (next_timer, next_start) {
                (None, None) => break,
                (a, b) => a.into_iter().chain(b).min().unwrap(),
            };
            while starts.peek().is_some_and(|s| s.0 == now) {
                let (_, j) = starts.next().unwrap();
                dev.start(now, j, &mut timers);
            }
            pending.append(&mut timers);
            if let Some(i) = pending.iter().position(|t| t.0 == now) {
                let (_, token) = pending.remove(i);
                dev.fire(now, token, &mut done, &mut timers);
                pending.append(&mut timers);
                out.extend(done.drain(..).map(|f| (f.dispatch, now)));
            }
        }
        out
    }

    #[test]
    fn lanes_serve_in_order_and_watchdog_aborts() {
        let mut d = FifoLanes::new(1, 0);
        let mut timers = Vec::new();
        let mut j = work(0, 1, 500, Direction::Write);
        j.budget = Some(100);
        d.start(0, j, &mut timers);
        assert_eq!(timers, vec![(100, 0)]);
        let mut done = Vec::new();
        d.fire(100, 0, &mut done, &mut timers);
        assert!(done[0].aborted);
        assert_eq!(done[0].service, 100);
        let mut dev = Device::Lanes(FifoLanes::new(2, 0));
        let ids = dispatch_ids();
        let out = drive(
            &mut dev,
            vec![
                (0, work(0, 1, 10, Direction::Write)),
                (0, work(1, 1, 10, Direction::Write)),
                (0, work(2, 1, 10, Direction::Write)),
            ],
        );
        assert_eq!(out, vec![(ids[0], 10), (ids[1], 10), (ids[2], 20)]);
    }

    fn link() -> DmaSpec {
        // 1 byte per ns, 256 B payloads, 24 B of overhead per TLP.
        DmaSpec {
            bytes_per_sec: 1e9,
            max_payload: 256,
            max_read_request: 512,
            tlp_overhead: 24,
            tlp_rate: None,
            request_overhead: 0,
            pcie: None,
        }
    }

    #[test]
    fn dma_cuts_tlps_and_round_robins_them() {
        assert_eq!(DmaLink::alone(&link(), Direction::Write, 1024), 4.0 * 280.0);
        // A read of 512 B is one request whose completions carry two headers.
        assert_eq!(DmaLink::alone(&link(), Direction::Read, 512), 512.0 + 48.0);
        // Two 512 B writes on the link at once alternate TLPs: both finish
        // around 4 TLP times; the 64 B write that joins gets the next turn.
        let ids = dispatch_ids();
        let mut dev = Device::Dma(DmaLink::new(link()));
        let out = drive(
            &mut dev,
            vec![
                (0, work(0, 512, 0, Direction::Write)),
                (0, work(1, 512, 0, Direction::Write)),
                (1, work(2, 64, 0, Direction::Write)),
            ],
        );
        assert_eq!(out[0], (ids[2], 280 + 280 + 88));
        assert_eq!(out[1], (ids[0], 280 * 3 + 88));
        assert_eq!(out[2], (ids[1], 280 * 4 + 88));
    }

    #[test]
    fn dma_directions_do_not_contend() {
        let ids = dispatch_ids();
        let mut dev = Device::Dma(DmaLink::new(link()));
        let out = drive(
            &mut dev,
            vec![
                (0, work(0, 256, 0, Direction::Write)),
                (0, work(1, 512, 0, Direction::Read)),
            ],
        );
        assert!(out.contains(&(ids[0], 280)));
        assert!(out.contains(&(ids[1], 560)));
    }

    #[test]
    fn tlp_rate_floors_small_tlps() {
        let spec = DmaSpec {
            tlp_rate: Some(1e7),
            ..link()
        }; // 100 ns per TLP at least
        assert_eq!(DmaLink::alone(&spec, Direction::Write, 16), 100.0);
        assert_eq!(DmaLink::alone(&spec, Direction::Write, 256), 280.0);
    }

    /// A request's setup is paid once per dispatch: a 1 KiB write alone
    /// takes setup + 4 TLPs; in four 256 B dispatches, 4 x (setup + 1 TLP),
    /// the closed form of OSMOSIS' "N additional protocol handshakes".
    #[test]
    fn request_setup_is_paid_per_fragment() {
        let spec = DmaSpec {
            request_overhead: 50,
            ..link()
        };
        assert_eq!(DmaLink::alone(&spec, Direction::Write, 1024), 50.0 + 4.0 * 280.0);
        let ids = dispatch_ids();
        let whole = drive(
            &mut Device::Dma(DmaLink::new(spec)),
            vec![(0, work(0, 1024, 0, Direction::Write))],
        );
        assert_eq!(whole, vec![(ids[0], 50 + 4 * 280)]);
        // Four fragments issued back to back, as a fragmenting engine does.
        let mut dev = Device::Dma(DmaLink::new(spec));
        let out = drive(
            &mut dev,
            (0..4).map(|k| (0, work(k, 256, 0, Direction::Write))).collect(),
        );
        assert_eq!(out.last().map(|o| o.1), Some(4 * (50 + 280)));
    }
}
