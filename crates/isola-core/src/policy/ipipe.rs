//! iPipe's hybrid FCFS + DRR scheduler (Liu et al., SIGCOMM 2019, §4.2), as
//! MTDA's paper describes it ("iPipe ... directing requests into a DRR
//! runnable queue when latency exceeds the pre-defined threshold"; "heavy-
//! weight actors are executed on DRR cores, while lightweight actors run on
//! FCFS cores"), with tenants in the place of iPipe's actors.
//!
//! Every tenant starts in the FCFS group, served first come, first served.
//! Each tenant's task latencies (`now - arrival`) and measured service times
//! are kept over its last `window` completions. When an FCFS tenant's tail
//! latency (the `percentile`-th percentile of its window) exceeds
//! `tail_threshold`, the FCFS tenant with the highest service-time dispersion
//! (the largest `percentile`-th percentile service time: the heavy-weight one
//! that holds the others up) moves to the DRR group. A DRR tenant whose tail
//! latency falls under `return_threshold` moves back to FCFS (hysteresis:
//! `return_threshold < tail_threshold`). The FCFS group and the DRR group
//! (deficit round robin over predicted cost, weighted, `quantum`) take
//! turns on free slots while both have work. With no tenant
//! in the DRR group this is plain FCFS.
//!
//! Choices (iPipe's cores are split between the groups; here the groups
//! share the engine's slots):
//! * iPipe gives each group cores of its own; here the groups share the
//!   engine's slots and, while both have work, take turns (one dispatch
//!   each, a group at most 4 turns ahead), so a steady FCFS load cannot
//!   starve a demoted tenant (whose return needs its own completions), and
//!   a DRR backlog cannot hold up the FCFS tenants by more than a task.
//! * Dispersion is measured as the tenant's tail service time, which is
//!   largest both for a tenant of uniformly large tasks and for one with
//!   occasional huge ones.
//! * Both decisions need at least `window / 4` samples (at least 1) taken
//!   since the tenant last changed group; a move clears the windows of the
//!   tenants it concerns (the mover, and for a demotion every FCFS tenant,
//!   whose latencies were measured with the mover among them), so the next
//!   decision is taken on fresh samples.
//! * Defaults: `tail_threshold` 100 us, `percentile` 99 (iPipe's tail is the
//!   99th percentile), `window` 128 completions, `quantum` `auto` (the
//!   largest head seen, as `drr`), `return_threshold` `auto` = 0.8 x
//!   `tail_threshold`.
//! * DRR uses the tenants' weights (iPipe's actors have none; equal weights
//!   give iPipe's plain DRR).

use super::drr::DeficitRoundRobin;
use super::fcfs::Fcfs;
use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{Charge, HeadInfo, Policy, PolicyContext};
use crate::params::{ParamSpec, Params};
use crate::units::Nanos;
use std::collections::VecDeque;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "tail_threshold",
        default: "100000",
        description: "tail latency (ns) above which an FCFS tenant's latency is too high: the FCFS tenant with the most dispersed service moves to DRR",
    },
    ParamSpec {
        name: "percentile",
        default: "99",
        description: "percentile of latency (and of service time, for dispersion) that counts as the tail, in (0, 100]",
    },
    ParamSpec {
        name: "window",
        default: "128",
        description: "completions per tenant over which the tail is measured",
    },
    ParamSpec {
        name: "quantum",
        default: "auto",
        description: "DRR quantum (ns of predicted cost) of the lightest tenant; `auto` = the largest head seen",
    },
    ParamSpec {
        name: "return_threshold",
        default: "auto",
        description: "tail latency (ns) under which a DRR tenant returns to FCFS; `auto` = 0.8 x tail_threshold",
    },
];

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "ipipe",
    aliases: &[],
    description: "iPipe hybrid: FCFS while tail latency is low; the most dispersed tenant moves to a DRR group when an FCFS tail exceeds the threshold, and back when its tail falls.",
    source: "iPipe (Liu et al., SIGCOMM 2019), as described by MTDA (IEEE TSC 2024)",
    work_conserving: true,
    params: PARAMS,
    build,
};

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    use std::ops::Bound::{Excluded, Included};
    let tail_threshold = p.u64_in("tail_threshold", 1..=u64::MAX / 2)?;
    let percentile = p.f64_in("percentile", (Excluded(0.0), Included(100.0)))?;
    let window = p.u64_in("window", 1..=1 << 20)? as usize;
    let quantum = p.auto_or_positive("quantum")?;
    let return_threshold = match p.auto_or_positive("return_threshold")? {
        None => 0.8 * tail_threshold as f64,
        Some(r) if r <= tail_threshold as f64 => r,
        Some(_) => {
            return Err(p
                .bad(
                    "return_threshold",
                    "`auto` or a number of ns > 0 and <= tail_threshold",
                )
                .into())
        }
    };
    Ok(Box::new(Ipipe::new(
        s,
        IpipeParams {
            tail_threshold: tail_threshold as f64,
            return_threshold,
            percentile,
            window,
            quantum,
        },
    )))
}

/// iPipe's parameters (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IpipeParams {
    /// Tail latency (ns) that moves the most dispersed FCFS tenant to DRR.
    pub tail_threshold: f64,
    /// Tail latency (ns) under which a DRR tenant returns to FCFS.
    pub return_threshold: f64,
    /// Percentile taken as the tail, in (0, 100].
    pub percentile: f64,
    /// Completions per tenant in the measurement window.
    pub window: usize,
    /// DRR quantum; `None`: the largest head seen.
    pub quantum: Option<f64>,
}

/// The `p`-th percentile (nearest rank) of `samples`; 0 if there are none.
/// `scratch` is reused between calls.
fn percentile(samples: &VecDeque<Nanos>, p: f64, scratch: &mut Vec<Nanos>) -> Nanos {
    if samples.is_empty() {
        return 0;
    }
    scratch.clear();
    scratch.extend(samples.iter().copied());
    let rank = ((p / 100.0 * scratch.len() as f64).ceil() as usize).clamp(1, scratch.len());
    *scratch.select_nth_unstable(rank - 1).1
}

/// iPipe state for one engine.
pub struct Ipipe {
    params: IpipeParams,
    fcfs: Fcfs,
    drr: DeficitRoundRobin,
    in_drr: Vec<bool>,
    /// Each ready tenant's head (to move it between the groups).
    head: Vec<Option<HeadInfo>>,
    /// Ready tenants per group: `[FCFS, DRR]`.
    ready: [usize; 2],
    latency: Vec<VecDeque<Nanos>>,
    service: Vec<VecDeque<Nanos>>,
    scratch: Vec<Nanos>,
    /// FCFS minus DRR dispatches made while both groups had work: the next
    /// contended pick goes to the DRR group when it is below zero.
    turns: i64,
}

/// How far one group may get ahead of the other in turns.
const MAX_TURN_DEBT: i64 = 4;

impl std::fmt::Debug for Ipipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ipipe")
            .field("params", &self.params)
            .field("in_drr", &self.in_drr)
            .finish_non_exhaustive()
    }
}

impl Ipipe {
    /// iPipe for `setup`'s tenants.
    pub fn new(setup: &PolicySetup<'_>, params: IpipeParams) -> Self {
        let n = setup.tenants.len();
        Ipipe {
            params,
            fcfs: Fcfs::new(n),
            drr: DeficitRoundRobin::new(setup, Charge::Cost, true, params.quantum),
            in_drr: vec![false; n],
            head: vec![None; n],
            ready: [0; 2],
            latency: vec![VecDeque::new(); n],
            service: vec![VecDeque::new(); n],
            scratch: Vec::with_capacity(params.window),
            turns: 0,
        }
    }

    /// Whether `tenant` is in the DRR group.
    pub fn in_drr(&self, tenant: usize) -> bool {
        self.in_drr[tenant]
    }

    fn min_samples(&self) -> usize {
        (self.params.window / 4).max(1)
    }

    fn group(&mut self, tenant: usize) -> &mut dyn Policy {
        if self.in_drr[tenant] {
            &mut self.drr
        } else {
            &mut self.fcfs
        }
    }

    /// Moves `tenant` to the DRR group (`to_drr`) or back to FCFS, with its
    /// head if it is ready, and clears its windows.
    fn move_tenant(&mut self, now: Nanos, tenant: usize, to_drr: bool, cx: &PolicyContext<'_>) {
        if self.in_drr[tenant] == to_drr {
            return;
        }
        if let Some(h) = self.head[tenant] {
            self.group(tenant).on_dispatch(now, tenant, &h, None, cx);
            self.in_drr[tenant] = to_drr;
            self.group(tenant).on_ready(now, tenant, &h, cx);
            self.ready[usize::from(!to_drr)] -= 1;
            self.ready[usize::from(to_drr)] += 1;
        }
        self.in_drr[tenant] = to_drr;
        self.latency[tenant].clear();
        self.service[tenant].clear();
    }
}

impl Policy for Ipipe {
    fn on_ready(&mut self, now: Nanos, tenant: usize, head: &HeadInfo, cx: &PolicyContext<'_>) {
        self.head[tenant] = Some(*head);
        self.ready[usize::from(self.in_drr[tenant])] += 1;
        self.group(tenant).on_ready(now, tenant, head, cx);
    }

    fn pick(&mut self, now: Nanos, cx: &PolicyContext<'_>) -> Option<usize> {
        let [fcfs_ready, drr_ready] = self.ready;
        if fcfs_ready == 0 {
            return self.drr.pick(now, cx);
        }
        if drr_ready == 0 {
            return self.fcfs.pick(now, cx);
        }
        // Both groups have work. iPipe runs them on cores of their own; on
        // shared slots they take turns, so neither can starve the other.
        if self.turns < 0 {
            self.drr.pick(now, cx).or_else(|| self.fcfs.pick(now, cx))
        } else {
            self.fcfs.pick(now, cx)
        }
    }

    fn on_dispatch(
        &mut self,
        now: Nanos,
        tenant: usize,
        served: &HeadInfo,
        next: Option<&HeadInfo>,
        cx: &PolicyContext<'_>,
    ) {
        if self.ready.iter().all(|&n| n > 0) {
            // A turn taken while both groups had work. FCFS turns count up,
            // DRR turns down; bounded, so a group that was alone for a
            // while cannot then monopolise the slots.
            let step = if self.in_drr[tenant] { -1 } else { 1 };
            self.turns = (self.turns + step).clamp(-MAX_TURN_DEBT, MAX_TURN_DEBT);
        }
        self.group(tenant).on_dispatch(now, tenant, served, next, cx);
        self.head[tenant] = next.copied();
        if next.is_none() {
            self.ready[usize::from(self.in_drr[tenant])] -= 1;
        }
    }

    fn on_complete(
        &mut self,
        now: Nanos,
        tenant: usize,
        served: &HeadInfo,
        measured: Nanos,
        cx: &PolicyContext<'_>,
    ) {
        let window = self.params.window;
        let push = |q: &mut VecDeque<Nanos>, v| {
            if q.len() == window {
                q.pop_front();
            }
            q.push_back(v);
        };
        push(&mut self.latency[tenant], now.saturating_sub(served.arrival));
        push(&mut self.service[tenant], measured);
        if self.latency[tenant].len() < self.min_samples() {
            return;
        }
        let tail = percentile(&self.latency[tenant], self.params.percentile, &mut self.scratch) as f64;
        if self.in_drr[tenant] {
            if tail < self.params.return_threshold {
                self.move_tenant(now, tenant, false, cx);
            }
            return;
        }
        if tail <= self.params.tail_threshold {
            return;
        }
        // The FCFS tenant with the most dispersed service (ties: lowest index).
        let p = self.params.percentile;
        let mut culprit: Option<(usize, Nanos)> = None;
        for t in 0..self.in_drr.len() {
            if self.in_drr[t] || self.service[t].is_empty() {
                continue;
            }
            let s = percentile(&self.service[t], p, &mut self.scratch);
            if culprit.is_none_or(|(_, b)| s > b) {
                culprit = Some((t, s));
            }
        }
        if let Some((culprit, _)) = culprit {
            self.move_tenant(now, culprit, true, cx);
            for t in 0..self.in_drr.len() {
                if !self.in_drr[t] {
                    self.latency[t].clear();
                    self.service[t].clear();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineId, EngineKind};
    use crate::scheduler::Scheduler;

    use crate::tenant::Slo;

    use crate::policy::test_support::submit;

    fn scheduler(tenants: usize, params: &[(&str, &str)]) -> Scheduler {
        let slo = Slo {
            queue_cap: 100_000,
            ..Slo::weighted(1.0)
        };
        crate::policy::test_support::scheduler(
            "ipipe",
            EngineKind::ProcessingUnits,
            1,
            None,
            &vec![slo; tenants],
            params,
        )
    }

    /// Serves one slot, each task taking its predicted cost, submitting what
    /// `arrivals` gives (time, tenant, cost) when its time comes; returns
    /// (dispatch time, task id, tenant) in order.
    fn run(s: &mut Scheduler, arrivals: &[(Nanos, usize, u64)]) -> Vec<(Nanos, u64, usize)> {
        let mut out = Vec::new();
        let mut next = 0;
        let mut now = 0;
        loop {
            while next < arrivals.len() && arrivals[next].0 <= now {
                let (at, t, cost) = arrivals[next];
                submit(s, at, next as u64, t, cost);
                next += 1;
            }
            if let Some(d) = s.next(now, EngineId(0)) {
                out.push((now, d.task.id.0, d.task.tenant.index()));
                now += d.predicted;
                s.complete(now, d.id, d.predicted).unwrap();
            } else if next < arrivals.len() {
                now = arrivals[next].0;
            } else {
                return out;
            }
        }
    }

    #[test]
    fn first_come_first_served_while_latency_is_low() {
        let mut s = scheduler(3, &[("tail_threshold", "1000000")]);
        // Bursts from three tenants, interleaved, more than one slot can take
        // at once: queues form, and are served in arrival order.
        let arrivals: Vec<_> = (0..300u64)
            .map(|k| (k / 10 * 5_000, (k * 7 % 3) as usize, 1_000 + (k % 4) * 200))
            .collect();
        let out = run(&mut s, &arrivals);
        let ids: Vec<u64> = out.iter().map(|o| o.1).collect();
        assert_eq!(ids, (0..300).collect::<Vec<_>>());
    }

    /// Tenant 1 floods 10 us tasks (twice what the slot can serve) while
    /// tenant 0 sends a 1 us task every 25 us. Under FCFS tenant 0 waits
    /// behind the growing flood; once tail latency passes 50 us, tenant 1
    /// (the most dispersed service) moves to DRR and tenant 0 waits for at
    /// most the task in service. When the flood has drained and tenant 1
    /// sends small tasks, its tail falls and it returns to FCFS: a burst from
    /// both tenants is then served in arrival order.
    #[test]
    fn a_tenant_with_a_high_tail_moves_to_drr_and_back() {
        let mut arrivals = Vec::new();
        for k in 0..300u64 {
            arrivals.push((k * 5_000, 1, 10_000));
        }
        for k in 0..60u64 {
            arrivals.push((1_000 + k * 25_000, 0, 1_000));
        }
        let calm = 4_000_000;
        for k in 0..100u64 {
            arrivals.push((calm + k * 10_000, (k % 2) as usize, 1_000));
        }
        let burst = 6_000_000;
        for k in 0..40u64 {
            arrivals.push((burst + k / 8 * 100, (k % 2) as usize, 1_000));
        }
        arrivals.sort_by_key(|a| a.0);
        let burst_ids: Vec<u64> = (0..arrivals.len() as u64)
            .filter(|&i| arrivals[i as usize].0 >= burst)
            .collect();
        let params = [("tail_threshold", "50000"), ("window", "8")];
        let run_with = |extra: &[(&str, &str)]| {
            let mut p = params.to_vec();
            p.extend_from_slice(extra);
            run(&mut scheduler(2, &p), &arrivals)
        };
        let wait = |o: &(Nanos, u64, usize)| o.0 - arrivals[o.1 as usize].0;
        let light_waits = |out: &[(Nanos, u64, usize)]| -> Vec<Nanos> {
            out.iter().filter(|o| o.2 == 0 && o.0 < calm).map(wait).collect()
        };
        let burst_order = |out: &[(Nanos, u64, usize)]| -> Vec<u64> {
            out.iter().filter(|o| o.0 >= burst).map(|o| o.1).collect()
        };

        let out = run_with(&[]);
        let waits = light_waits(&out);
        assert_eq!(waits.len(), 60);
        // FCFS at first: tenant 0 waits behind more than one flood task...
        assert!(waits[..3].iter().any(|&w| w > 10_000), "{waits:?}");
        // ...then only for the task in service.
        assert!(waits[5..].iter().all(|&w| w <= 10_000), "{waits:?}");
        // Tenant 1 came back: the burst is served in arrival order.
        assert_eq!(burst_order(&out), burst_ids);

        // Controls. A threshold nobody reaches keeps FCFS: tenant 0 waits
        // behind the whole flood.
        let fcfs = run_with(&[("tail_threshold", "1000000000")]);
        assert!(light_waits(&fcfs)[30..].iter().all(|&w| w > 100_000));
        assert_eq!(burst_order(&fcfs), burst_ids);
        // Without the way back, tenant 1 stays in DRR and the FCFS group
        // (tenant 0) goes first in the burst.
        let stuck = run_with(&[("return_threshold", "1")]);
        assert_ne!(burst_order(&stuck), burst_ids);
        let first_half: Vec<usize> = stuck
            .iter()
            .filter(|o| o.0 >= burst)
            .take(20)
            .map(|o| o.2)
            .collect();
        assert!(first_half.iter().all(|&t| t == 0), "{first_half:?}");
    }

    /// A demoted tenant is not starved by a steady FCFS load: tenant 0's
    /// 1 us tasks arrive as fast as the slot serves them, so it always has
    /// work; tenant 1 sends a 200 us task every ms and is moved to DRR by
    /// the tail it causes. Each of its tasks still goes within one of
    /// tenant 0's tasks plus one of its own (before the groups took turns,
    /// it got one task in 200 ms).
    #[test]
    fn a_demoted_tenant_is_not_starved_by_a_steady_fcfs_load() {
        let mut arrivals: Vec<(Nanos, usize, u64)> = (0..40_000u64).map(|k| (k * 1_000, 0, 1_000)).collect();
        arrivals.extend((0..30u64).map(|k| (500 + k * 1_000_000, 1, 200_000)));
        arrivals.sort_by_key(|a| a.0);
        let out = run(&mut scheduler(2, &[]), &arrivals);
        let heavy: Vec<Nanos> = out
            .iter()
            .filter(|o| o.2 == 1)
            .map(|o| o.0 - arrivals[o.1 as usize].0)
            .collect();
        assert_eq!(heavy.len(), 30);
        assert!(heavy.iter().all(|&w| w <= 201_000), "{heavy:?}");
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let q: VecDeque<Nanos> = (1..=100).rev().collect();
        let mut scratch = Vec::new();
        assert_eq!(percentile(&q, 99.0, &mut scratch), 99);
        assert_eq!(percentile(&q, 100.0, &mut scratch), 100);
        assert_eq!(percentile(&q, 50.0, &mut scratch), 50);
        assert_eq!(percentile(&VecDeque::new(), 99.0, &mut scratch), 0);
    }
}
