//! The run recorder: computes a [`PolicyResult`] from what a driver saw,
//! whatever the driver (the simulator, the live harness, the demo, a
//! daemon). A driver tells it, as they happen:
//!
//! - each piece of engine time a tenant used ([`EngineTime`]: a dispatch,
//!   a fragment, a pipeline stage; or a live task's total, spread over the
//!   time it was served in, [`RunRecorder::engine_time_spread`]), for
//!   shares, Jain's index and the per-window series;
//! - each task once, when it leaves the system or is still in it at the
//!   end ([`TaskRecord`]: completed, rejected, aborted, unmatched at
//!   ingress, in flight), for counts, latency, throughput and the SLA;
//! - each engine's queued work when a metrics window ends
//!   ([`RunRecorder::record_backlog`]), for Jain's index under demand (a
//!   run without them, a live one, has none);
//!
//! and asks for the result at the end ([`RunRecorder::finish`]). Before
//! the end it can also read figures over a tenant's flow (its first arrival
//! to its last completion): its throughput while it ran, and a tenant's
//! share of the engines while another ran. Tasks
//! should be recorded in completion order: a window's latency percentiles
//! are kept once a later window starts (a completion for a window already
//! kept counts everywhere but in that window's p99).

use super::sla::SlaRule;
use super::window_sums::WindowSums;
use super::{LatencyStats, PolicyResult, SeriesPoint, TenantResult};
use crate::scenario::Scenario;
use isola_core::metrics::{fair1, jain_normalized, LatencySamples, WindowIndex, WindowedService};
use isola_core::{EngineId, Nanos, TenantId, NANOS_PER_SEC};
use std::collections::BTreeMap;

/// A tenant as the recorder needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedTenant {
    /// Its name.
    pub name: String,
    /// Its weight (entitlement in the fairness indices).
    pub weight: f64,
    /// Its SLA, if it has one.
    pub sla: Option<SlaRule>,
    /// Whether it takes part in the run (submits work). A solo run leaves
    /// the others out of the run's Jain index and Fair1.
    pub active: bool,
}

/// An engine as the recorder needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedEngine {
    /// Its name.
    pub name: String,
    /// Dispatches it serves at once (its capacity per unit of time).
    pub slots: u32,
}

/// Engine time one tenant used: one slot of `engine` busy for `service` ns
/// from `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineTime {
    /// The tenant served.
    pub tenant: TenantId,
    /// The engine.
    pub engine: EngineId,
    /// When the service began.
    pub start: Nanos,
    /// How long it lasted (measured).
    pub service: Nanos,
}

/// How a task left the system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It went through every stage and produced its result.
    Completed,
    /// It was refused because a channel (queue) was full.
    Rejected,
    /// It ended without a result: aborted by the watchdog (over its
    /// service budget) or failed.
    Aborted,
    /// It was dropped at ingress: no matching rule took it (recorded
    /// against the tenant that generated it).
    Unmatched,
    /// It was still in the system when the run ended.
    InFlight,
}

/// One task, recorded once, when it left the system (or at the run's end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRecord {
    /// The tenant it belongs to.
    pub tenant: TenantId,
    /// The tenant's flow queue it came through (0 for a tenant with one).
    pub flow: u32,
    /// Its payload size.
    pub bytes: u64,
    /// When it arrived.
    pub arrival: Nanos,
    /// When it left the system: completed, refused, aborted; for a task in
    /// flight, when the run ended.
    pub end: Nanos,
    /// Its predicted service time (what a `PredictedMultiple` SLA is judged
    /// against; for a pipeline, all stages together).
    pub predicted: Nanos,
    /// How it ended.
    pub outcome: Outcome,
}

/// How the run ended, for [`RunRecorder::finish`].
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnd {
    /// The run's label.
    pub label: String,
    /// The registered policy it ran.
    pub policy_name: String,
    /// The measured interval; `None`: until the last completion.
    pub duration: Option<Nanos>,
    /// Events the driver processed.
    pub events: u64,
}

/// What one tenant got so far.
#[derive(Debug, Clone)]
struct TenantTally {
    /// Latencies of its completed tasks (kept as samples while they are
    /// few: a tenant among many completes a few dozen in a short run,
    /// where a histogram's buckets take 13-22 KiB).
    latency: LatencySamples,
    completed: u64,
    bytes: u64,
    violations: u64,
    rejected: u64,
    aborted: u64,
    unmatched: u64,
    in_flight: u64,
    first_arrival: Option<Nanos>,
    last_completion: Option<Nanos>,
    /// Engine time per engine.
    busy: Vec<u64>,
    /// Its flow queues' own counts and latencies.
    flows: super::flows::FlowTallies,
}

/// Computes a [`PolicyResult`] from a driver's records (see the module docs).
#[derive(Debug, Clone)]
pub struct RunRecorder {
    tenants: Vec<RecordedTenant>,
    engines: Vec<RecordedEngine>,
    /// The metrics window's length, and the window of a completion.
    completion_window: WindowIndex,
    tally: Vec<TenantTally>,
    /// Per engine: service per tenant per window, and the backlogs.
    engine_service: Vec<WindowedService>,
    /// Per engine: its service in the current window, not yet in
    /// `engine_service` (added once per window, to the same figures).
    window_sums: Vec<WindowSums>,
    /// When the next metrics window ends (backlogs are due from then on).
    next_window_end: Nanos,
    /// Whether the driver recorded backlogs (else the run has no Jain's
    /// index under demand).
    backlogs: bool,
    /// Per window, per tenant: bytes of the tasks completed in it.
    bytes_done: Vec<Vec<f64>>,
    /// Per tenant: latencies of the tasks completed in `latency_window`
    /// (kept as samples: a window holds few per tenant, and reading a
    /// histogram's p99 scans all its buckets).
    window_latency: Vec<LatencySamples>,
    /// The tenants with a latency in `latency_window`, each once: the only
    /// ones whose p99 is read and whose samples are cleared when it is kept.
    window_tenants: Vec<usize>,
    latency_window: usize,
    /// Per kept window, per tenant: the 99th-percentile latency.
    window_p99: Vec<Vec<Nanos>>,
    last_completion: Nanos,
    /// Time tasks spent in the system, added up (task x ns).
    sojourn: u128,
}

impl RunRecorder {
    /// A recorder for `tenants` on `engines`, with metrics windows of
    /// `window` ns (at least 1).
    pub fn new(tenants: Vec<RecordedTenant>, engines: Vec<RecordedEngine>, window: Nanos) -> Self {
        let window = window.max(1);
        let (n, e) = (tenants.len(), engines.len());
        let tally = TenantTally {
            latency: LatencySamples::new(),
            completed: 0,
            bytes: 0,
            violations: 0,
            rejected: 0,
            aborted: 0,
            unmatched: 0,
            in_flight: 0,
            first_arrival: None,
            last_completion: None,
            busy: vec![0; e],
            flows: Default::default(),
        };
        RunRecorder {
            tenants,
            engines,
            completion_window: WindowIndex::new(window),
            tally: vec![tally; n],
            engine_service: vec![WindowedService::new(window, n); e],
            window_sums: vec![WindowSums::new(window, n); e],
            next_window_end: 0,
            backlogs: false,
            bytes_done: Vec::new(),
            window_latency: vec![LatencySamples::new(); n],
            window_tenants: Vec::new(),
            latency_window: 0,
            window_p99: Vec::new(),
            last_completion: 0,
            sojourn: 0,
        }
    }

    /// A recorder for `scenario`'s tenants (SLAs from their latency
    /// objectives; `active` says which take part) and engines, with its
    /// metrics window.
    pub fn for_scenario(scenario: &Scenario, active: impl Fn(usize) -> bool) -> Self {
        let tenants = scenario
            .tenants
            .iter()
            .enumerate()
            .map(|(i, t)| RecordedTenant {
                name: t.name.clone(),
                weight: t.slo.weight,
                sla: t.slo.latency.map(SlaRule::from),
                active: active(i),
            })
            .collect();
        let engines = scenario
            .engines
            .iter()
            .map(|e| RecordedEngine {
                name: e.name.clone(),
                slots: e.slots,
            })
            .collect();
        RunRecorder::new(tenants, engines, scenario.run.window)
    }

    /// Records engine time (ignored for a tenant or engine the recorder
    /// does not know).
    #[inline]
    pub fn engine_time(&mut self, t: EngineTime) {
        let (tenant, engine) = (t.tenant.index(), t.engine.index());
        let (Some(tally), Some(service), Some(sums)) = (
            self.tally.get_mut(tenant),
            self.engine_service.get_mut(engine),
            self.window_sums.get_mut(engine),
        ) else {
            return;
        };
        let busy = &mut tally.busy[engine];
        *busy += t.service;
        sums.add(service, tenant, t.start, t.start.saturating_add(t.service), *busy);
    }

    /// Records engine time served in pieces among other work between
    /// `t.start` and `end`, known only as its total `t.service` (the live
    /// runtime's completion of a split task: its subtasks' measured service
    /// added up, from its first subtask's start to its completion): the
    /// service is spread evenly over that interval. Ignored for a tenant or
    /// engine the recorder does not know.
    pub fn engine_time_spread(&mut self, t: EngineTime, end: Nanos) {
        let (tenant, engine) = (t.tenant.index(), t.engine.index());
        let (Some(tally), Some(service)) = (self.tally.get_mut(tenant), self.engine_service.get_mut(engine))
        else {
            return;
        };
        tally.busy[engine] += t.service;
        self.window_sums[engine].stop_summing(service);
        service.add_spread(tenant, t.service as f64, t.start, end.max(t.start));
    }

    /// Records a task that left the system, or is in it at the run's end
    /// (ignored for a tenant the recorder does not know).
    pub fn task(&mut self, r: TaskRecord) {
        let n = self.tally.len();
        let t = r.tenant.index();
        let Some(tally) = self.tally.get_mut(t) else {
            return;
        };
        if r.outcome != Outcome::Unmatched {
            self.sojourn += u128::from(r.end.saturating_sub(r.arrival));
        }
        let figures = super::flows::TenantFigures {
            latency: &tally.latency,
            completed: tally.completed,
            bytes: tally.bytes,
            rejected: tally.rejected,
        };
        tally.flows.record(&r, figures);
        match r.outcome {
            Outcome::Rejected => tally.rejected += 1,
            Outcome::Aborted => tally.aborted += 1,
            Outcome::Unmatched => tally.unmatched += 1,
            Outcome::InFlight => tally.in_flight += 1,
            Outcome::Completed => {
                let latency = r.end.saturating_sub(r.arrival);
                tally.latency.record(latency);
                tally.completed += 1;
                tally.bytes += r.bytes;
                if self.tenants[t]
                    .sla
                    .is_some_and(|s| s.violated(latency, r.predicted))
                {
                    tally.violations += 1;
                }
                tally.first_arrival = Some(tally.first_arrival.map_or(r.arrival, |f| f.min(r.arrival)));
                tally.last_completion = Some(tally.last_completion.map_or(r.end, |l| l.max(r.end)));
                self.last_completion = self.last_completion.max(r.end);
                let w = self.completion_window.of(r.end) as usize;
                while self.bytes_done.len() <= w {
                    self.bytes_done.push(vec![0.0; n]);
                }
                self.bytes_done[w][t] += r.bytes as f64;
                if w > self.latency_window {
                    self.keep_latency_window();
                    self.latency_window = w;
                }
                if w == self.latency_window {
                    let samples = &mut self.window_latency[t];
                    if samples.count() == 0 {
                        self.window_tenants.push(t);
                    }
                    samples.record(latency);
                }
            }
        }
    }

    /// Whether a metrics window has ended at `now` since the backlogs were
    /// last recorded: the driver then records each engine's backlog
    /// before anything at `now` changes it.
    pub fn backlog_due(&self, now: Nanos) -> bool {
        now >= self.next_window_end
    }

    /// Records `queued`, each tenant's work waiting on `engine` (in ns of
    /// predicted service), as its value at the end of every window that
    /// ended by `now` (see `WindowedService::record_backlog`).
    pub fn record_backlog(&mut self, now: Nanos, engine: EngineId, queued: &[Nanos]) {
        if let Some(service) = self.engine_service.get_mut(engine.index()) {
            service.record_backlog(now, queued);
        }
        let window = self.completion_window.window();
        self.next_window_end = (now / window + 1).saturating_mul(window);
        self.backlogs = true;
    }

    /// A tenant's flow so far: its first arrival to its last completion,
    /// over the tasks it completed (`None` before it completed one).
    pub fn flow(&self, tenant: TenantId) -> Option<(Nanos, Nanos)> {
        let t = self.tally.get(tenant.index())?;
        t.first_arrival.zip(t.last_completion)
    }

    /// A tenant's completed payload bytes per second over its own flow
    /// (first arrival to last completion; 0 before it completed a task):
    /// its throughput while it ran, where the run's figure
    /// (`TenantResult::throughput_bps`) is over the whole run.
    pub fn flow_throughput_bps(&self, tenant: TenantId) -> f64 {
        match (self.flow(tenant), self.tally.get(tenant.index())) {
            (Some((first, last)), Some(t)) => {
                t.bytes as f64 * NANOS_PER_SEC as f64 / last.saturating_sub(first).max(1) as f64
            }
            _ => 0.0,
        }
    }

    /// The share of every engine's capacity (slots x time) that `tenant`
    /// used during `other`'s flow (0 before `other` completed a task), its
    /// engine time taken as spread evenly over each metrics window. With
    /// `other == tenant`, its share while it ran; with another tenant, its
    /// share while that one ran: a bandwidth tenant's service while a
    /// latency tenant competes, which its share over the whole run hides
    /// when the competition is short.
    pub fn engine_share_during_flow(&self, tenant: TenantId, other: TenantId) -> f64 {
        let Some((from, to)) = self.flow(other) else {
            return 0.0;
        };
        let served: f64 = self
            .engine_service
            .iter()
            .zip(&self.window_sums)
            .map(|(s, sums)| sums.with_sums(s).service_between(tenant.index(), from, to))
            .sum();
        let slots: u64 = self.engines.iter().map(|e| u64::from(e.slots)).sum();
        served / (slots.max(1) as f64 * to.saturating_sub(from).max(1) as f64)
    }

    /// Keeps the current latency window's per-tenant p99s (0 for a tenant
    /// with no latency in it) and starts afresh.
    fn keep_latency_window(&mut self) {
        let w = self.latency_window;
        if self.window_p99.len() <= w {
            self.window_p99.resize(w + 1, Vec::new());
        }
        let mut p99 = vec![0; self.window_latency.len()];
        for &t in &self.window_tenants {
            let samples = &mut self.window_latency[t];
            p99[t] = samples.quantile(0.99);
            samples.clear();
        }
        self.window_tenants.clear();
        self.window_p99[w] = p99;
    }

    /// The run's result.
    pub fn finish(mut self, end: RunEnd) -> PolicyResult {
        self.keep_latency_window();
        for (sums, service) in self.window_sums.iter_mut().zip(&mut self.engine_service) {
            sums.flush(service);
        }
        let interval = end.duration.unwrap_or(self.last_completion).max(1);
        let secs = interval as f64 / NANOS_PER_SEC as f64;
        let n = self.tenants.len();
        let busy: Vec<u64> = self.tally.iter().map(|t| t.busy.iter().sum()).collect();
        let total_busy: u64 = busy.iter().sum();
        // Engine time per engine, over every tenant (once, not per tenant).
        let engine_busy: Vec<u64> = (0..self.engines.len())
            .map(|e| self.tally.iter().map(|t| t.busy[e]).sum())
            .collect();
        let tenants: Vec<TenantResult> = (0..n)
            .map(|i| self.tenant_result(i, secs, total_busy, &engine_busy))
            .collect();
        let active: Vec<usize> = (0..n).filter(|&i| self.tenants[i].active).collect();
        let active_busy: Vec<f64> = active.iter().map(|&i| busy[i] as f64).collect();
        let weights: Vec<f64> = active.iter().map(|&i| self.tenants[i].weight).collect();
        let jain = jain_normalized(&active_busy, &weights).unwrap_or(1.0);
        let tput: Vec<f64> = active.iter().map(|&i| tenants[i].throughput_bps).collect();
        let w_total: f64 = weights.iter().sum();
        let expected: Vec<f64> = weights.iter().map(|w| w / w_total).collect();
        let fair1 = fair1(&tput, &expected).unwrap_or(0.0);
        PolicyResult {
            policy: end.label,
            policy_name: end.policy_name,
            jain,
            fair1,
            fair2: None,
            duration_ns: interval,
            mean_in_system: self.sojourn as f64 / interval as f64,
            events: end.events,
            tenants,
            series: self.series(interval),
            warnings: Vec::new(),
            migrations: Vec::new(),
        }
    }

    /// Tenant `i`'s result over a run of `secs` seconds, with `total_busy`
    /// the engine time of every tenant on every engine and `engine_busy`
    /// that on each engine.
    fn tenant_result(&mut self, i: usize, secs: f64, total_busy: u64, engine_busy: &[u64]) -> TenantResult {
        let latency = &mut self.tally[i].latency;
        let (latency_ns, latency_cdf) = (LatencyStats::from(latency.summary()), latency.cdf());
        let flows = self.tally[i].flows.results(secs);
        let (spec, t) = (&self.tenants[i], &self.tally[i]);
        let busy: u64 = t.busy.iter().sum();
        let engine_shares = self
            .engines
            .iter()
            .enumerate()
            .map(|(e, m)| {
                let all = engine_busy[e];
                let share = if all == 0 {
                    0.0
                } else {
                    t.busy[e] as f64 / all as f64
                };
                (m.name.clone(), share)
            })
            .collect::<BTreeMap<String, f64>>();
        TenantResult {
            name: spec.name.clone(),
            weight: spec.weight,
            completed: t.completed,
            rejected: t.rejected,
            aborted: t.aborted,
            unmatched: t.unmatched,
            incomplete: t.in_flight,
            throughput_ops: t.completed as f64 / secs,
            throughput_bps: t.bytes as f64 / secs,
            latency_ns,
            latency_cdf,
            sla_violation_rate: if t.completed == 0 {
                0.0
            } else {
                t.violations as f64 / t.completed as f64
            },
            engine_time_share: if total_busy == 0 {
                0.0
            } else {
                busy as f64 / total_busy as f64
            },
            engine_shares,
            flow_completion_ns: match (t.first_arrival, t.last_completion) {
                (Some(f), Some(l)) => l.saturating_sub(f),
                _ => 0,
            },
            slowdown: None,
            flows,
        }
    }

    /// The per-window series of a run that lasted `interval` ns.
    fn series(&self, interval: Nanos) -> Vec<SeriesPoint> {
        let n = self.tenants.len();
        let weights: Vec<f64> = self.tenants.iter().map(|t| t.weight).collect();
        // Engine time over every engine, for shares and the index by weight.
        let service = WindowedService::merged(&self.engine_service);
        let jains = service.jain_series(&weights);
        // Fair on every engine: the worst engine's index in each window.
        let per_engine: Vec<Vec<f64>> = self
            .engine_service
            .iter()
            .zip(&self.engines)
            .map(|(ws, e)| ws.jain_of_demand_series(&weights, e.slots, interval))
            .collect();
        let demand_jain = |w: usize| {
            per_engine
                .iter()
                .filter_map(|s| s.get(w).copied())
                .fold(1.0, f64::min)
        };
        let window = service.window();
        let windows = service.windows().max(self.bytes_done.len());
        (0..windows)
            .map(|w| {
                let bytes = self.bytes_done.get(w);
                SeriesPoint {
                    start_ns: w as Nanos * window,
                    jain: jains.get(w).copied().unwrap_or(1.0),
                    jain_of_demand: self.backlogs.then(|| demand_jain(w)),
                    throughput_bps: (0..n)
                        .map(|t| bytes.map_or(0.0, |b| b[t]) * NANOS_PER_SEC as f64 / window as f64)
                        .collect(),
                    engine_share: service.shares(w),
                    p99_ns: (0..n)
                        .map(|t| {
                            self.window_p99
                                .get(w)
                                .and_then(|p| p.get(t))
                                .copied()
                                .unwrap_or(0)
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(name: &str, weight: f64, sla: Option<SlaRule>, active: bool) -> RecordedTenant {
        RecordedTenant {
            name: name.into(),
            weight,
            sla,
            active,
        }
    }

    fn recorder(tenants: Vec<RecordedTenant>) -> RunRecorder {
        let engines = vec![RecordedEngine {
            name: "acc".into(),
            slots: 1,
        }];
        RunRecorder::new(tenants, engines, 100)
    }

    fn task(
        tenant: u32,
        bytes: u64,
        arrival: Nanos,
        end: Nanos,
        predicted: Nanos,
        outcome: Outcome,
    ) -> TaskRecord {
        TaskRecord {
            tenant: TenantId(tenant),
            flow: 0,
            bytes,
            arrival,
            end,
            predicted,
            outcome,
        }
    }

    fn served(tenant: u32, start: Nanos, service: Nanos) -> EngineTime {
        EngineTime {
            tenant: TenantId(tenant),
            engine: EngineId(0),
            start,
            service,
        }
    }

    fn end(duration: Option<Nanos>) -> RunEnd {
        RunEnd {
            label: "run".into(),
            policy_name: "fcfs".into(),
            duration,
            events: 9,
        }
    }

    #[test]
    fn counts_throughput_latency_sla_shares_and_time_in_system() {
        let mut r = recorder(vec![
            tenant("a", 1.0, Some(SlaRule::PredictedMultiple(2.0)), true),
            tenant("b", 2.0, Some(SlaRule::PredictedMultiple(2.0)), true),
        ]);
        assert!(r.backlog_due(0));
        r.record_backlog(0, EngineId(0), &[0, 0]);
        assert!(!r.backlog_due(99) && r.backlog_due(100));
        r.engine_time(served(0, 0, 50));
        r.task(task(0, 1000, 0, 50, 50, Outcome::Completed)); // 50 <= 2 x 50
        r.engine_time(served(1, 50, 100));
        r.record_backlog(100, EngineId(0), &[0, 30]);
        r.task(task(1, 500, 60, 150, 40, Outcome::Completed)); // 90 > 2 x 40
        r.task(task(1, 64, 30, 30, 40, Outcome::Rejected));
        r.task(task(0, 64, 20, 60, 40, Outcome::Aborted));
        r.task(task(1, 64, 70, 70, 0, Outcome::Unmatched));
        r.task(task(0, 64, 120, 200, 40, Outcome::InFlight));
        r.engine_time(served(7, 0, 10)); // unknown tenant: ignored
        r.task(task(7, 1, 0, 1, 1, Outcome::Completed));
        let p = r.finish(end(Some(200)));
        assert_eq!(
            (p.policy.as_str(), p.policy_name.as_str(), p.events),
            ("run", "fcfs", 9)
        );
        assert_eq!(p.duration_ns, 200);
        let (a, b) = (&p.tenants[0], &p.tenants[1]);
        let counts = |t: &TenantResult| (t.completed, t.rejected, t.aborted, t.unmatched, t.incomplete);
        assert_eq!(counts(a), (1, 0, 1, 0, 1));
        assert_eq!(counts(b), (1, 1, 0, 1, 0));
        // 1000 B and one task in 200 ns.
        assert_eq!((a.throughput_bps, a.throughput_ops), (5e9, 5e6));
        assert_eq!((a.sla_violation_rate, b.sla_violation_rate), (0.0, 1.0));
        assert_eq!((a.latency_ns.mean, b.latency_ns.max), (50.0, 90));
        assert_eq!(b.flow_completion_ns, 90);
        assert_eq!(a.engine_shares["acc"], 1.0 / 3.0);
        assert_eq!(b.engine_time_share, 2.0 / 3.0);
        // Served in proportion to the weights.
        assert_eq!(p.jain, 1.0);
        // In the system: 50 + 90 + 40 (aborted) + 80 (in flight) task x ns.
        assert_eq!(p.mean_in_system, 260.0 / 200.0);
        assert_eq!(p.series.len(), 2);
        assert_eq!(p.series[0].throughput_bps, vec![1e10, 0.0]);
        assert_eq!(p.series[1].throughput_bps, vec![0.0, 5e9]);
        assert_eq!(
            (p.series[0].p99_ns.clone(), p.series[1].p99_ns.clone()),
            (vec![50, 0], vec![0, 90])
        );
        assert_eq!(p.series[0].engine_share, vec![0.5, 0.5]);
        // Window 0: b (weight 2) got 50 and had 30 more waiting, so its
        // fair share of 100 was 66.7 and a's 33.3: a got 1.5x its share, b
        // 0.75x, an index of 2.25^2 / (2 x (1.5^2 + 0.75^2)) = 0.9. By
        // weight alone, among the tenants served, it looks the same.
        assert!(
            (p.series[0].jain_of_demand.unwrap() - 0.9).abs() < 1e-12,
            "{:?}",
            p.series[0].jain_of_demand
        );
        // Window 1 has no backlog recorded: b got all it asked for.
        assert_eq!(p.series[1].jain_of_demand, Some(1.0));
        assert_eq!(p.window_mean(|s| s.start_ns as f64), Some(50.0));
    }

    #[test]
    fn solo_rule_inactive_tenants_and_the_interval_without_a_duration() {
        let mut r = recorder(vec![
            tenant(
                "a",
                1.0,
                Some(SlaRule::SoloMultiple { k: 2.0, solo_ns: 10 }),
                true,
            ),
            tenant("idle", 1.0, None, false),
        ]);
        r.engine_time(served(0, 0, 30));
        // Judged against the tenant's solo time, not the task's prediction.
        r.task(task(0, 100, 0, 21, 1_000, Outcome::Completed));
        r.task(task(0, 100, 0, 20, 1, Outcome::Completed));
        let p = r.finish(end(None));
        // Until the last completion.
        assert_eq!(p.duration_ns, 21);
        assert_eq!(p.tenants[0].sla_violation_rate, 0.5);
        // The idle tenant is left out of the run's index: one tenant is fair.
        assert_eq!(p.jain, 1.0);
        assert_eq!(p.tenants[1].completed, 0);
        assert_eq!(p.tenants[1].engine_shares["acc"], 0.0);
        // An empty run lasts at least 1 ns and divides nothing by zero.
        let empty = recorder(vec![tenant("a", 1.0, None, true)]).finish(end(None));
        assert_eq!((empty.duration_ns, empty.tenants[0].throughput_bps), (1, 0.0));
        assert!(empty.series.is_empty());
    }

    #[test]
    fn flows_spread_engine_time_and_shares_during_another_flow() {
        let mut r = recorder(vec![tenant("bs", 1.0, None, true), tenant("ls", 1.0, None, true)]);
        assert_eq!(
            (r.flow(TenantId(0)), r.flow_throughput_bps(TenantId(0))),
            (None, 0.0)
        );
        // bs: 40 ns of service spread over [0, 200), 20 in each half.
        r.engine_time_spread(served(0, 0, 40), 200);
        r.task(task(0, 1000, 0, 200, 40, Outcome::Completed));
        // ls: its flow is [100, 200).
        r.engine_time_spread(served(1, 100, 50), 200);
        r.task(task(1, 10, 100, 200, 50, Outcome::Completed));
        assert_eq!(r.flow(TenantId(1)), Some((100, 200)));
        // 1000 B over bs's 200 ns flow; 10 B over ls's 100 ns.
        assert_eq!(r.flow_throughput_bps(TenantId(0)), 5e9);
        assert_eq!(r.flow_throughput_bps(TenantId(1)), 1e8);
        // bs used 40 of its own 200 ns, 20 of ls's 100 ns.
        assert_eq!(r.engine_share_during_flow(TenantId(0), TenantId(0)), 0.2);
        assert_eq!(r.engine_share_during_flow(TenantId(0), TenantId(1)), 0.2);
        assert_eq!(r.engine_share_during_flow(TenantId(1), TenantId(1)), 0.5);
        assert_eq!(r.engine_share_during_flow(TenantId(7), TenantId(1)), 0.0);
        let p = r.finish(end(Some(200)));
        // Spread engine time counts in the shares like any other.
        assert_eq!(p.tenants[0].engine_time_share, 40.0 / 90.0);
        assert_eq!(p.series[1].engine_share, vec![20.0 / 70.0, 50.0 / 70.0]);
        // No backlogs recorded: no index under demand.
        assert_eq!(
            (p.series[1].jain_of_demand, p.mean_jain_of_demand()),
            (None, None)
        );
    }

    #[test]
    fn a_late_completion_counts_everywhere_but_its_kept_window() {
        let mut r = recorder(vec![tenant("a", 1.0, None, true)]);
        r.task(task(0, 10, 150, 160, 1, Outcome::Completed));
        r.task(task(0, 10, 0, 50, 1, Outcome::Completed));
        let p = r.finish(end(Some(200)));
        assert_eq!(p.tenants[0].completed, 2);
        assert_eq!(p.series[0].throughput_bps, vec![1e8]);
        assert_eq!(p.series[0].p99_ns, vec![0]);
        assert_eq!(p.series[1].p99_ns, vec![10]);
    }
}
