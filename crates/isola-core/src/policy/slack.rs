//! Slack stealing over borrowed virtual time: latency-bound work waits for as
//! long as its deadline allows, and the rest shares the engine by weight
//! meanwhile (Lehoczky and Ramos-Thuel, RTSS 1992, "slack stealing", on Duda
//! and Cheriton's BVT, SOSP 1999). Isola's own policy, not a paper's.
//!
//! Why: weighted fair sharing gives a latency-sensitive tenant its share
//! *early*, whether or not it needs the engine that soon, so meeting a latency
//! objective takes a weight that also hands it more of the engine than it
//! needs. Here the weight only caps how much a tenant may take; its deadlines
//! decide *when* it is served. A tenant's task is served as late as it can be
//! and still meet its deadline; until then the engine goes to everyone else by
//! weight.
//!
//! As implemented, per engine:
//!
//! * Virtual time: each tenant's `A` advances by the service it receives over
//!   its weight (predicted cost at dispatch, corrected by `measured -
//!   predicted` at completion); a tenant that becomes ready is brought up to
//!   the smallest `A` among the ready, or, when nobody is ready, to the
//!   scheduler virtual time last seen at a decision (idling earns no
//!   credit), as in [`super::bvt`].
//! * A ready tenant's head task has a deadline when the tenant has a latency
//!   objective (`arrival + bound(whole task's predicted cost)`) or the task
//!   carries one (the earlier of the two). Its *latest start* is the deadline
//!   less `guard` of its latency budget (`deadline - arrival`, kept in reserve
//!   against service-time jitter) less the task's predicted work not yet
//!   dispatched (its fragments left, [`HeadInfo::remaining_cost`]).
//! * It is *urgent* when serving other ready tenants' heads first would start
//!   it after its latest start: the longest such head (tasks run to completion)
//!   once per slot of the engine, since each slot may hold a piece ahead of it
//!   (lanes busy, or a hardware queue). An urgent tenant goes first, least
//!   latest start first, as long as its `A` is no larger than every other ready
//!   tenant's: its weight caps its share, so a tenant with unreachable
//!   deadlines cannot starve the others.
//! * Otherwise the slot goes to the smallest `A` among the ready tenants,
//!   except latency-sensitive ones (by class) with a deadline that are not
//!   urgent: those wait while they have slack. If only they are ready, the
//!   earliest latest start goes (the engine is never left idle while work
//!   waits). Deadlines of other tenants only make them urgent; they do not
//!   defer them.
//!
//! Choices: the predicted work left and the predicted heads that could block
//! are corrected by each tenant's measured over predicted service (an EWMA over
//! its completions, weight 1/8), since serving just in time needs the real
//! service time; the deadline itself is not, as the objective is stated on the
//! predicted cost. Counting a blocking head once per slot is pessimistic
//! on an engine with several lanes (the tenant is served earlier than it could
//! be, never later).

use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{HeadInfo, Policy, PolicyContext};
use crate::params::{ParamSpec, Params};
use crate::tenant::{LatencyObjective, TenantClass};
use crate::units::Nanos;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "slack",
    aliases: &[],
    description: "Slack stealing: a tenant's task with a deadline waits while it can still make it, the others share by weight meanwhile; weights cap every tenant's share.",
    source: "Isola; slack stealing (Lehoczky & Ramos-Thuel, RTSS 1992) over BVT (Duda & Cheriton, SOSP 1999)",
    work_conserving: true,
    params: &[ParamSpec {
        name: "guard",
        default: "0.1",
        description: "fraction of each deadline's latency budget kept in reserve against service-time jitter, in [0, 1)",
    }],
    build,
};

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    use std::ops::Bound::{Excluded, Included};
    let guard = p.f64_in("guard", (Included(0.0), Excluded(1.0)))?;
    Ok(Box::new(SlackStealing::new(s, guard)))
}

#[derive(Debug, Clone)]
struct Tenant {
    weight: f64,
    /// Latency-sensitive: waits while its head task has a deadline and
    /// slack.
    defers: bool,
    objective: Option<LatencyObjective>,
    /// Virtual time: service received over weight.
    actual: f64,
    /// The head task while the tenant is ready.
    head: Option<HeadInfo>,
    /// Measured over predicted service of its completed dispatches (EWMA).
    accuracy: f64,
}

impl Tenant {
    /// The head task's latest start: its deadline, less `guard` of its
    /// latency budget, less its predicted work not yet dispatched. `None`
    /// without a deadline.
    fn latest_start(&self, guard: f64) -> Option<f64> {
        let h = self.head?;
        let service = |predicted: Nanos| predicted as f64 * self.accuracy;
        let by_objective = self.objective.map(|o| h.arrival as f64 + o.bound(h.task_cost));
        let deadline = match (by_objective, h.deadline) {
            (Some(a), Some(b)) => a.min(b as f64),
            (a, b) => a.or(b.map(|b| b as f64))?,
        };
        let deadline = h.arrival as f64 + (1.0 - guard) * (deadline - h.arrival as f64);
        Some(deadline - service(h.remaining_cost))
    }
}

/// Weight of each completion in a tenant's measured/predicted ratio.
const ACCURACY_WEIGHT: f64 = 0.125;

/// Slack-stealing state for one engine.
#[derive(Debug, Clone)]
pub struct SlackStealing {
    tenants: Vec<Tenant>,
    /// Fraction of each latency budget kept in reserve.
    guard: f64,
    /// Scheduler virtual time: the largest "smallest virtual time among
    /// the ready" seen at a decision.
    svt: f64,
}

impl SlackStealing {
    /// The policy for `setup`'s tenants, keeping `guard` (in [0, 1)) of
    /// each latency budget in reserve.
    pub fn new(setup: &PolicySetup<'_>, guard: f64) -> Self {
        SlackStealing {
            guard,
            svt: 0.0,
            tenants: setup
                .tenants
                .iter()
                .map(|t| Tenant {
                    weight: t.weight,
                    defers: t.class == TenantClass::LatencySensitive,
                    objective: t.latency,
                    actual: 0.0,
                    head: None,
                    accuracy: 1.0,
                })
                .collect(),
        }
    }

    fn ready(&self) -> impl Iterator<Item = (usize, &Tenant, HeadInfo)> {
        self.tenants
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Some((i, t, t.head?)))
    }
}

impl Policy for SlackStealing {
    fn on_ready(&mut self, _: Nanos, tenant: usize, head: &HeadInfo, _: &PolicyContext<'_>) {
        // As BVT: the smallest virtual time among the ready, or the last
        // one seen when nobody is ready (idling earns no credit).
        let svt = self
            .ready()
            .map(|(_, t, _)| t.actual)
            .reduce(f64::min)
            .unwrap_or(self.svt);
        let t = &mut self.tenants[tenant];
        t.actual = t.actual.max(svt);
        t.head = Some(*head);
    }

    fn pick(&mut self, now: Nanos, cx: &PolicyContext<'_>) -> Option<usize> {
        // First pass: the smallest virtual time, and the two longest heads
        // (expected service), so each tenant's "longest other head" is known.
        let mut min_actual = f64::INFINITY;
        let (mut longest, mut second) = ((usize::MAX, 0.0f64), 0.0f64);
        for (i, t, h) in self.ready() {
            min_actual = min_actual.min(t.actual);
            let cost = h.cost as f64 * t.accuracy;
            if cost > longest.1 {
                second = longest.1;
                longest = (i, cost);
            } else if cost > second {
                second = cost;
            }
        }
        if min_actual.is_finite() {
            self.svt = self.svt.max(min_actual);
        }
        let slots = f64::from(cx.slots.max(1));
        // Second pass: the best urgent tenant within its share (least latest
        // start), the best by virtual time among those that cannot wait,
        // and the earliest latest start of all.
        let mut urgent_best: Option<(f64, u64, usize)> = None;
        let mut fair_best: Option<(f64, u64, usize)> = None;
        let mut earliest: Option<(f64, u64, usize)> = None;
        let better = |best: &Option<(f64, u64, usize)>, key: (f64, u64)| {
            best.is_none_or(|b| key.0.total_cmp(&b.0).then(key.1.cmp(&b.1)).is_lt())
        };
        for (i, t, h) in self.ready() {
            let latest_start = t.latest_start(self.guard);
            // Serving the longest other head first (once per slot) would
            // start it too late.
            let other = if longest.0 == i { second } else { longest.1 };
            let urgent = latest_start.is_some_and(|ls| now as f64 + other * slots > ls);
            let ls = latest_start.unwrap_or(f64::INFINITY);
            if urgent && t.actual <= min_actual && better(&urgent_best, (ls, h.seq)) {
                urgent_best = Some((ls, h.seq, i));
            }
            let waits = t.defers && latest_start.is_some() && !urgent;
            if !waits && better(&fair_best, (t.actual, h.seq)) {
                fair_best = Some((t.actual, h.seq, i));
            }
            if better(&earliest, (ls, h.seq)) {
                earliest = Some((ls, h.seq, i));
            }
        }
        urgent_best.or(fair_best).or(earliest).map(|b| b.2)
    }

    fn on_dispatch(
        &mut self,
        _: Nanos,
        tenant: usize,
        served: &HeadInfo,
        next: Option<&HeadInfo>,
        _: &PolicyContext<'_>,
    ) {
        let t = &mut self.tenants[tenant];
        t.actual += served.cost as f64 / t.weight;
        t.head = next.copied();
    }

    fn on_complete(
        &mut self,
        _: Nanos,
        tenant: usize,
        served: &HeadInfo,
        measured: Nanos,
        _: &PolicyContext<'_>,
    ) {
        let t = &mut self.tenants[tenant];
        t.actual += (measured as f64 - served.cost as f64) / t.weight;
        if served.cost > 0 {
            let ratio = measured as f64 / served.cost as f64;
            t.accuracy += ACCURACY_WEIGHT * (ratio - t.accuracy);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineId, EngineKind};
    use crate::policy::test_support::{serve, serve_with, submit};
    use crate::scheduler::Scheduler;
    use crate::tenant::{Slo, TenantClass};

    const LS: usize = 0;
    const BS: usize = 1;

    fn scheduler(policy: &str, ls_weight: f64, multiple: f64) -> Scheduler {
        let slos = [
            Slo {
                class: TenantClass::LatencySensitive,
                latency: Some(LatencyObjective::ServiceMultiple(multiple)),
                queue_cap: 100_000,
                ..Slo::weighted(ls_weight)
            },
            Slo {
                class: TenantClass::BandwidthSensitive,
                queue_cap: 100_000,
                ..Slo::weighted(1.0)
            },
        ];
        crate::policy::test_support::scheduler(policy, EngineKind::Accelerator, 1, Some(1_000), &slos, &[])
    }

    /// ASTRAEA's experiment in miniature: a closed-loop latency-sensitive
    /// tenant (8,000 ns tasks, one outstanding, objective `multiple` x
    /// service) beside a backlogged bandwidth tenant, tasks split into
    /// 1,000 ns fragments, every dispatch taking `stretch` times its
    /// prediction. Returns the LS tasks' latencies and the BS tenant's share
    /// of the engine while the LS tenant ran.
    fn astraea_like(policy: &str, ls_weight: f64, multiple: f64, stretch: f64) -> (Vec<Nanos>, f64) {
        let mut s = scheduler(policy, ls_weight, multiple);
        for k in 0..400 {
            submit(&mut s, 0, 1_000_000 + k, BS, 64_000);
        }
        let mut ls_arrival = 0;
        let mut ls_next_id = 0u64;
        let mut latencies = Vec::new();
        submit(&mut s, 0, ls_next_id, LS, 8_000);
        let mut out = Vec::new();
        let mut now = 0;
        while latencies.len() < 100 {
            let (end, mut step) = serve_with(
                &mut s,
                now,
                now + 1,
                |_, _| {},
                |d| (d.predicted as f64 * stretch) as Nanos,
            );
            now = end;
            // An LS task is done when its last fragment is.
            if let Some((_, t, d)) = step.last() {
                if *t == LS && d.subtask.is_none_or(|f| f.index + 1 == f.count) {
                    latencies.push(now - ls_arrival);
                    ls_arrival = now;
                    ls_next_id += 1;
                    submit(&mut s, now, ls_next_id, LS, 8_000);
                }
            }
            out.append(&mut step);
        }
        let bs: f64 = out
            .iter()
            .filter(|o| o.1 == BS)
            .map(|o| o.2.predicted as f64 * stretch)
            .sum();
        (latencies, bs / now as f64)
    }

    #[test]
    fn latency_tenant_served_just_in_time_leaves_the_rest_to_the_others() {
        // Objective 2x: the LS tenant needs half the engine; slack stealing
        // meets every deadline and gives the BS tenant close to the other
        // half (less its guard and a fragment of blocking per task), whatever the LS
        // tenant's weight.
        for weight in [2.0, 16.0] {
            let (lat, bs) = astraea_like("slack", weight, 2.0, 1.0);
            assert!(lat.iter().all(|&l| l <= 16_000), "weight {weight}: {lat:?}");
            assert!(bs >= 0.4, "weight {weight}: BS share {bs}");
        }
        // Weighted fair sharing at the same weight meets the deadlines only
        // by serving the LS tenant early, at the BS tenant's expense.
        let (lat, bs_bvt) = astraea_like("bvt", 2.0, 2.0, 1.0);
        assert!(lat.iter().all(|&l| l <= 16_000), "{lat:?}");
        let (_, bs_slack) = astraea_like("slack", 2.0, 2.0, 1.0);
        assert!(bs_slack > bs_bvt + 0.05, "slack {bs_slack} vs bvt {bs_bvt}");
    }

    #[test]
    fn weight_caps_a_tenant_whose_deadlines_cannot_be_met() {
        // Objective 1x cannot be met beside any other work (every task
        // waits for the fragment in service); at weight 1 the LS tenant
        // still gets only about half the engine, and the BS tenant is not
        // starved.
        let (lat, bs) = astraea_like("slack", 1.0, 1.0, 1.0);
        let late = lat.iter().filter(|&&l| l > 8_000).count();
        assert!(late > 90, "{late} of {} late", lat.len());
        assert!((0.4..=0.6).contains(&bs), "BS share {bs}");
    }

    #[test]
    fn service_slower_than_predicted_is_learnt() {
        // Every dispatch takes 1.25x its prediction: the deadline (2x the
        // predicted 8,000) stays, the work left is stretched. After the
        // first few tasks (the EWMA learning) no deadline is missed.
        let (lat, bs) = astraea_like("slack", 4.0, 2.0, 1.25);
        let late = lat[10..].iter().filter(|&&l| l > 16_000).count();
        assert_eq!(late, 0, "{lat:?}");
        assert!(bs > 0.2, "BS share {bs}");
    }

    #[test]
    fn a_latency_sensitive_tenant_without_deadlines_is_not_deferred() {
        // Class latency-sensitive but no objective: it shares by weight.
        let slos = [
            Slo {
                class: TenantClass::LatencySensitive,
                ..Slo::weighted(1.0)
            },
            Slo::weighted(1.0),
        ];
        let mut s =
            crate::policy::test_support::scheduler("slack", EngineKind::Accelerator, 1, None, &slos, &[]);
        for k in 0..200 {
            submit(&mut s, 0, k, (k % 2) as usize, 1_000);
        }
        let (_, out) = serve(&mut s, 0, 100_000, |_, _| {});
        let ls = out.iter().filter(|o| o.1 == 0).count();
        assert!((45..=55).contains(&ls), "{ls} of {}", out.len());
    }

    #[test]
    fn without_deadlines_it_shares_by_weight() {
        let slos = [Slo::weighted(1.0), Slo::weighted(3.0)];
        let mut s =
            crate::policy::test_support::scheduler("slack", EngineKind::Accelerator, 1, None, &slos, &[]);
        for k in 0..2_000 {
            submit(&mut s, 0, k, (k % 2) as usize, 1_000);
        }
        let (_, out) = serve(&mut s, 0, 400_000, |_, _| {});
        let a = out.iter().filter(|o| o.1 == 0).count() as f64;
        let b = out.iter().filter(|o| o.1 == 1).count() as f64;
        assert!((b / (a + b) - 0.75).abs() < 0.02, "{a} vs {b}");
    }

    #[test]
    fn an_explicit_deadline_makes_a_task_urgent() {
        let slos = [Slo::weighted(1.0), Slo::weighted(1.0)];
        let mut s =
            crate::policy::test_support::scheduler("slack", EngineKind::Accelerator, 1, None, &slos, &[]);
        // Tenant 1 has a backlog of 1,000 ns tasks. At 2,000 tenant 0
        // submits a 500 ns task due at 3,000: it must start by 2,500, so it
        // cannot wait behind one of tenant 1's tasks, though tenant 1's
        // head is older and their virtual times are equal.
        for k in 0..10 {
            submit(&mut s, 0, 100 + k, 1, 1_000);
        }
        let (now, _) = serve(&mut s, 0, 2_000, |_, _| {});
        s.submit(
            now,
            crate::task::Task {
                id: crate::task::TaskId(1),
                tenant: crate::tenant::TenantId(0),
                engine: EngineId(0),
                op: crate::task::OpSpec::named("generic"),
                bytes: 500,
                arrival: now,
                deadline: Some(now + 1_000),
                predicted_cost: None,
                planner: None,
            },
        )
        .unwrap();
        let d = s.next(now, EngineId(0)).unwrap();
        assert_eq!(d.task.tenant.index(), 0);
    }
}
