//! One shared run's figures: each tenant's SLA violations, latencies and
//! throughput read off the run recorder, the BS tenant's bandwidth against
//! its solo reference, where the LS tenant's latency went, and what the
//! host did to Isola's threads meanwhile.

use super::summary::{ms, HOST_LIMIT};
use super::{BS_ID, LS_ID, LS_WEIGHT, SLA_MULTIPLE, WINDOW_NS};
use crate::astraea::{BS, LS};
use anyhow::bail;
use isola_core::{Nanos, TenantId};
use isola_model::results::{RecordedEngine, RecordedTenant, RunEnd, SlaRule};
use isola_model::RunRecorder;
use isola_runtime::host::{MachineTimes, ThreadTimes};
use isola_runtime::record::record_completion;
use isola_runtime::{Completion, LatencyBreakdown};
use serde::Serialize;
use std::collections::BTreeMap;

/// One tenant's figures in a shared run, read off the run recorder (or
/// their medians over the rounds).
#[derive(Debug, Clone, Serialize)]
pub struct TenantSummary {
    /// Tasks completed.
    pub tasks: u64,
    /// Fraction of tasks over the SLA.
    pub sla_violation_rate: f64,
    /// Latency percentiles.
    pub latency_ns: TailLatency,
    /// Input bytes per second over its flow: first submission to last
    /// completion.
    pub throughput_bps: f64,
}

impl TenantSummary {
    /// Each figure's median over `rounds` (`None` if there are none).
    pub(super) fn median<'a>(rounds: impl Iterator<Item = &'a TenantSummary>) -> Option<TenantSummary> {
        let all: Vec<&TenantSummary> = rounds.collect();
        let med = |f: &dyn Fn(&TenantSummary) -> f64| super::summary::Spread::of(all.iter().map(|t| f(t)));
        Some(TenantSummary {
            tasks: med(&|t| t.tasks as f64)?.median as u64,
            sla_violation_rate: med(&|t| t.sla_violation_rate)?.median,
            latency_ns: TailLatency {
                p50: med(&|t| t.latency_ns.p50 as f64)?.median as Nanos,
                p99: med(&|t| t.latency_ns.p99 as f64)?.median as Nanos,
            },
            throughput_bps: med(&|t| t.throughput_bps)?.median,
        })
    }
}

/// Latency percentiles, ns.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TailLatency {
    /// Median.
    pub p50: Nanos,
    /// 99th percentile.
    pub p99: Nanos,
}

/// The solo measurements a shared run is judged against, measured so that
/// they cannot drift from it: the LS tenant alone right before and right
/// after the run, the BS tenant's own uncontended tasks at the run's end.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SoloReference {
    /// The LS tenant's SLA reference: the median service time of its
    /// tasks alone, over both solo runs.
    pub ls_service_ns: Nanos,
    /// Median service time of its tasks alone in the run before.
    pub ls_service_before_ns: Nanos,
    /// The same in the run after.
    pub ls_service_after_ns: Nanos,
    /// How far the machine's speed moved between the two: after over
    /// before, minus one.
    pub ls_drift: f64,
    /// Median service time of the LS tenant's tasks that ran whole in the
    /// shared run itself (0 if none did): against `ls_service_ns`, how much
    /// slower the engine ran while shared (the other tenant's pieces
    /// between its tasks, or the machine slowing down in the middle).
    pub ls_service_in_run_ns: Nanos,
    /// The BS tenant's SLA reference: the median service time of its tasks
    /// once the LS tenant was done (same run, uncontended), or alone if
    /// too few ran so.
    pub bs_service_ns: Nanos,
    /// Median service time of its tasks in its solo run this round.
    pub bs_service_alone_ns: Nanos,
    /// The bandwidth tenant's throughput alone.
    pub bs_throughput_bps: f64,
    /// The bandwidth tenant's share of the engine's time when alone.
    pub bs_engine_share: f64,
}

/// One shared run (one policy, one round).
#[derive(Debug, Clone, Serialize)]
pub struct RoundResult {
    /// Which round (from 1).
    pub round: usize,
    /// Per tenant.
    pub tenants: BTreeMap<String, TenantSummary>,
    /// The BS tenant alone under the policy against native, this round.
    pub overhead_ratio: f64,
    /// The BS tenant's throughput while sharing, over solo.
    pub bandwidth_vs_solo: f64,
    /// The BS tenant's share of the engine while the LS tenant runs, over
    /// its share alone.
    pub bandwidth_while_sharing: f64,
    /// The references it was judged against.
    pub solo: SoloReference,
    /// Where the LS tenant's latency went.
    pub ls_breakdown: LsBreakdown,
    /// What the host did to the run.
    pub host: HostInterference,
    /// With tenants in processes of their own (`--processes`): the LS
    /// tenant's median latency as its process saw it minus the daemon's,
    /// ns: the cross-process path's cost per task over the in-process
    /// runtime's.
    pub cross_process_ns: Option<i64>,
}

/// Where the LS tenant's latency went: the mean of each part over all its
/// tasks and over those that violated their SLA.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct LsBreakdown {
    /// Tasks.
    pub tasks: u64,
    /// Of which violated the SLA.
    pub violating: u64,
    /// Mean over all tasks, ns.
    pub mean_all: LatencyBreakdown,
    /// Mean over violating tasks, ns (zeros if none).
    pub mean_violating: LatencyBreakdown,
}

impl LsBreakdown {
    /// The breakdown of `done`, violating when over `sla_ns`.
    fn of(done: &[&Completion], sla_ns: Nanos) -> LsBreakdown {
        let violating: Vec<&Completion> = done.iter().copied().filter(|c| c.latency_ns() > sla_ns).collect();
        LsBreakdown {
            tasks: done.len() as u64,
            violating: violating.len() as u64,
            mean_all: mean(done.iter().map(|c| (&c.breakdown, 1))),
            mean_violating: mean(violating.iter().map(|c| (&c.breakdown, 1))),
        }
    }

    /// The breakdown over several runs.
    pub(super) fn merged<'a>(runs: impl Iterator<Item = &'a LsBreakdown> + Clone) -> LsBreakdown {
        LsBreakdown {
            tasks: runs.clone().map(|r| r.tasks).sum(),
            violating: runs.clone().map(|r| r.violating).sum(),
            mean_all: mean(runs.clone().map(|r| (&r.mean_all, r.tasks))),
            mean_violating: mean(runs.map(|r| (&r.mean_violating, r.violating))),
        }
    }
}

/// The weighted mean of breakdowns.
fn mean<'a>(items: impl Iterator<Item = (&'a LatencyBreakdown, u64)>) -> LatencyBreakdown {
    let mut sum = [0u128; 7];
    let mut n = 0u128;
    for (b, w) in items {
        let w = w as u128;
        n += w;
        for (s, v) in sum.iter_mut().zip(parts(b)) {
            *s += v as u128 * w;
        }
    }
    let m = |i: usize| sum[i].checked_div(n).unwrap_or(0) as Nanos;
    LatencyBreakdown {
        service_ns: m(0),
        service_off_cpu_ns: m(1),
        behind_own_ns: m(2),
        behind_others_ns: m(3),
        engine_idle_ns: m(4),
        delivery_ns: m(5),
        handoff_ns: m(6),
    }
}

fn parts(b: &LatencyBreakdown) -> [Nanos; 7] {
    [
        b.service_ns,
        b.service_off_cpu_ns,
        b.behind_own_ns,
        b.behind_others_ns,
        b.engine_idle_ns,
        b.delivery_ns,
        b.handoff_ns,
    ]
}

/// What the host did during one shared run.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct HostInterference {
    /// The run's wall time, ns.
    pub wall_ns: Nanos,
    /// The machine's CPUs.
    pub cpus: usize,
    /// Time the hypervisor ran something else on this machine's CPUs, ns
    /// (summed over CPUs).
    pub steal_ns: Nanos,
    /// CPU time of everything on this machine but the run's threads, ns
    /// (other programs, the kernel).
    pub others_cpu_ns: Nanos,
    /// The dispatcher thread.
    pub dispatcher: ThreadTimes,
    /// The engine's worker threads.
    pub workers: ThreadTimes,
    /// The tenants' threads.
    pub tenants: ThreadTimes,
    /// Time workers were off their CPU in the middle of a piece, ns.
    pub service_off_cpu_ns: Nanos,
    /// When the workers run in a real-time class: how long the kernel's
    /// real-time throttling may keep them waiting over the run, ns (not
    /// counted as the host's doing).
    pub realtime_throttle_ns: Nanos,
}

impl HostInterference {
    /// The largest share of the run's time the host took from one of
    /// Isola's threads (waiting runnable, or stolen by the hypervisor).
    pub fn took_fraction(&self) -> f64 {
        let wall = self.wall_ns.max(1) as f64;
        let steal_per_cpu = self.steal_ns as f64 / self.cpus.max(1) as f64;
        let beyond_throttle = |ns: Nanos| ns.saturating_sub(self.realtime_throttle_ns) as f64;
        [
            self.dispatcher.run_delay_ns as f64,
            beyond_throttle(self.workers.run_delay_ns),
            beyond_throttle(self.service_off_cpu_ns),
            steal_per_cpu,
        ]
        .into_iter()
        .fold(0.0, f64::max)
            / wall
    }

    /// Whether the host took more than `HOST_LIMIT` (2%) of the run.
    pub fn disturbed(&self) -> bool {
        self.took_fraction() > HOST_LIMIT
    }

    /// What the host took, and what else ran, in a sentence.
    pub fn describe(&self) -> String {
        let share = |ns: Nanos| ns as f64 / self.wall_ns.max(1) as f64 * 100.0;
        format!(
            "over {} the worker waited runnable for {} ({:.1}%, {} involuntary switches{}) and was off its \
             CPU mid-task for {}, the dispatcher waited runnable for {} ({:.1}%), the tenants' threads for {}, \
             the hypervisor stole {}; other programs used {:.2} of the {} CPUs",
            ms(self.wall_ns),
            ms(self.workers.run_delay_ns),
            share(self.workers.run_delay_ns),
            self.workers.involuntary_switches,
            if self.realtime_throttle_ns > 0 {
                format!("; real-time throttling may account for {}", ms(self.realtime_throttle_ns))
            } else {
                String::new()
            },
            ms(self.service_off_cpu_ns),
            ms(self.dispatcher.run_delay_ns),
            share(self.dispatcher.run_delay_ns),
            ms(self.tenants.run_delay_ns),
            ms(self.steal_ns),
            self.others_cpu_ns as f64 / self.wall_ns.max(1) as f64,
            self.cpus,
        )
    }
}

/// Counters read before a shared run, to measure the host over it.
pub(super) struct HostBefore {
    at: std::time::Instant,
    machine: Option<MachineTimes>,
    threads: Vec<Option<ThreadTimes>>,
}

impl HostBefore {
    /// Reads the machine's and `rt`'s threads' counters now.
    pub(super) fn read(rt: &isola_runtime::Runtime) -> HostBefore {
        HostBefore {
            at: std::time::Instant::now(),
            machine: MachineTimes::now(),
            threads: rt.threads().iter().map(|t| t.times()).collect(),
        }
    }

    /// What the host did since, to `rt` (the dispatcher first, then
    /// workers, as `Runtime::threads` lists them) and to the tenants'
    /// threads `tenants`, with the run's completions `done`.
    pub(super) fn since(
        self,
        rt: &isola_runtime::Runtime,
        realtime: bool,
        tenants: &[Option<ThreadTimes>],
        done: &[&Completion],
    ) -> HostInterference {
        let wall_ns = self.at.elapsed().as_nanos() as Nanos;
        let now: Vec<Option<ThreadTimes>> = rt.threads().iter().map(|t| t.times()).collect();
        let delta = |i: usize| match (
            now.get(i).copied().flatten(),
            self.threads.get(i).copied().flatten(),
        ) {
            (Some(a), Some(b)) => a.since(&b),
            _ => ThreadTimes::default(),
        };
        let dispatcher = delta(0);
        let workers = (1..now.len())
            .map(delta)
            .fold(ThreadTimes::default(), |a, b| a.plus(&b));
        let tenants = tenants
            .iter()
            .flatten()
            .fold(ThreadTimes::default(), |a, b| a.plus(b));
        let machine = match (MachineTimes::now(), self.machine) {
            (Some(a), Some(b)) => a.since(&b),
            _ => MachineTimes::default(),
        };
        let ours = dispatcher.cpu_ns + workers.cpu_ns + tenants.cpu_ns;
        HostInterference {
            wall_ns,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            steal_ns: machine.steal_ns,
            others_cpu_ns: machine.busy_ns.saturating_sub(ours),
            dispatcher,
            workers,
            tenants,
            service_off_cpu_ns: done.iter().map(|c| c.breakdown.service_off_cpu_ns).sum(),
            realtime_throttle_ns: if realtime {
                (isola_runtime::host::realtime_throttle_share().unwrap_or(0.0) * wall_ns as f64) as Nanos
            } else {
                0
            },
        }
    }
}

/// A run recorder fed with a run's completions, each tenant's SLA `slas`
/// (LS, BS) if any; an error if a task failed.
pub(super) fn recorded(done: &[&Completion], slas: Option<[SlaRule; 2]>) -> anyhow::Result<RunRecorder> {
    if let Some(c) = done.iter().find(|c| c.result.is_err()) {
        let name = if c.tenant == LS_ID { LS } else { BS };
        bail!("a {name} task failed: {:?}", c.result.as_ref().err());
    }
    let ran = |t: TenantId| done.iter().any(|c| c.tenant == t);
    let tenant = |name: &str, id: TenantId, weight: f64| RecordedTenant {
        name: name.to_string(),
        weight,
        sla: slas.map(|s| s[id.index()]),
        active: ran(id),
    };
    let tenants = vec![tenant(LS, LS_ID, LS_WEIGHT), tenant(BS, BS_ID, 1.0)];
    let engine = RecordedEngine {
        name: "ec".into(),
        slots: 1,
    };
    let mut recorder = RunRecorder::new(tenants, vec![engine], WINDOW_NS);
    // In completion order, as the recorder wants them.
    let mut all = done.to_vec();
    all.sort_by_key(|c| c.finished_ns);
    for c in all {
        record_completion(&mut recorder, c);
    }
    Ok(recorder)
}

/// The median service time of `done` (0 if empty).
pub(super) fn median_service(done: &[&Completion]) -> Nanos {
    let mut v: Vec<Nanos> = done.iter().map(|c| c.service_ns).collect();
    isola_core::metrics::median(&mut v).unwrap_or(0)
}

/// The shared run `both` against its references. A task violates its SLA
/// when it completed later than twice its tenant's solo service time
/// (ASTRAEA's "2x hardware time"; for the bandwidth tenant, the per-task
/// form of "at least half its solo bandwidth").
pub(super) fn compare(
    round: usize,
    both: &[&Completion],
    solo: SoloReference,
    overhead_ratio: f64,
    host: HostInterference,
) -> anyhow::Result<RoundResult> {
    let sla = |solo_ns| SlaRule::SoloMultiple {
        k: SLA_MULTIPLE,
        solo_ns,
    };
    let recorder = recorded(both, Some([sla(solo.ls_service_ns), sla(solo.bs_service_ns)]))?;
    let throughput = [LS_ID, BS_ID].map(|t| recorder.flow_throughput_bps(t));
    let bs_while_ls = recorder.engine_share_during_flow(BS_ID, LS_ID);
    let run = recorder.finish(RunEnd {
        label: "both".into(),
        policy_name: "both".into(),
        duration: None,
        events: 0,
    });
    let tenants: BTreeMap<String, TenantSummary> = [LS_ID, BS_ID]
        .into_iter()
        .zip(run.tenants)
        .map(|(id, t)| {
            let summary = TenantSummary {
                tasks: t.completed,
                sla_violation_rate: t.sla_violation_rate,
                latency_ns: TailLatency {
                    p50: t.latency_ns.p50,
                    p99: t.latency_ns.p99,
                },
                throughput_bps: throughput[id.index()],
            };
            (t.name, summary)
        })
        .collect();
    let ls: Vec<&Completion> = both.iter().copied().filter(|c| c.tenant == LS_ID).collect();
    let whole: Vec<&Completion> = ls.iter().copied().filter(|c| c.subtasks == 1).collect();
    let solo = SoloReference {
        ls_service_in_run_ns: median_service(&whole),
        ..solo
    };
    let ls_sla_ns = (solo.ls_service_ns as f64 * SLA_MULTIPLE) as Nanos;
    Ok(RoundResult {
        round,
        bandwidth_vs_solo: throughput[BS_ID.index()] / solo.bs_throughput_bps.max(f64::MIN_POSITIVE),
        bandwidth_while_sharing: bs_while_ls / solo.bs_engine_share.max(f64::MIN_POSITIVE),
        tenants,
        overhead_ratio,
        solo,
        ls_breakdown: LsBreakdown::of(&ls, ls_sla_ns),
        host,
        cross_process_ns: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breakdowns_merge_weighted_by_their_tasks() {
        let part = |ns| LatencyBreakdown {
            service_ns: ns,
            ..LatencyBreakdown::default()
        };
        let a = LsBreakdown {
            tasks: 3,
            violating: 1,
            mean_all: part(100),
            mean_violating: part(400),
        };
        let b = LsBreakdown {
            tasks: 1,
            violating: 0,
            mean_all: part(500),
            mean_violating: part(0),
        };
        let m = LsBreakdown::merged([a, b].iter());
        assert_eq!((m.tasks, m.violating), (4, 1));
        assert_eq!(m.mean_all.service_ns, 200);
        assert_eq!(m.mean_violating.service_ns, 400);
    }

    #[test]
    fn the_host_disturbed_a_run_when_it_took_over_the_limit_from_a_thread() {
        let mut h = HostInterference {
            wall_ns: 1_000_000_000,
            cpus: 2,
            ..HostInterference::default()
        };
        h.workers.run_delay_ns = 10_000_000;
        assert!(!h.disturbed(), "1% is within the limit");
        h.dispatcher.run_delay_ns = 30_000_000;
        assert!(h.disturbed());
        assert!((h.took_fraction() - 0.03).abs() < 1e-12);
        assert!(h
            .describe()
            .contains("the dispatcher waited runnable for 30.0 ms (3.0%)"));
    }
}
