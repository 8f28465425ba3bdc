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
use super::{HeadInfo, Policy, PolicyContext, TenantShare};
use crate::params::{ParamSpec, Params};
use crate::ready_heap::{HeapKey, IndexedHeap};
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

/// The `guard` parameter.
fn guard(p: &Params<'_>) -> Result<f64, PolicyError> {
    use std::ops::Bound::{Excluded, Included};
    Ok(p.f64_in("guard", (Included(0.0), Excluded(1.0)))?)
}

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(SlackStealing::new(s, guard(p)?)))
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
    fn new(share: &TenantShare) -> Self {
        Tenant {
            weight: share.weight,
            defers: share.class == TenantClass::LatencySensitive,
            objective: share.latency,
            actual: 0.0,
            head: None,
            accuracy: 1.0,
        }
    }

    /// Becomes ready with `head`: as BVT, brought up to `svt` (idling
    /// earns no credit).
    fn become_ready(&mut self, head: &HeadInfo, svt: f64) {
        self.actual = self.actual.max(svt);
        self.head = Some(*head);
    }

    /// `served` went to the engine; `next` is the new head, if any.
    fn dispatched(&mut self, served: &HeadInfo, next: Option<&HeadInfo>) {
        self.actual += served.cost as f64 / self.weight;
        self.head = next.copied();
    }

    /// `served` took `measured` ns: the virtual time is corrected by the
    /// difference, and the accuracy learns the ratio.
    fn completed(&mut self, served: &HeadInfo, measured: Nanos) {
        self.actual += crate::policy::Charge::Cost.correction(served, measured) / self.weight;
        if served.cost > 0 {
            let ratio = measured as f64 / served.cost as f64;
            self.accuracy += ACCURACY_WEIGHT * (ratio - self.accuracy);
        }
    }

    /// The head's expected service: its predicted cost times the accuracy.
    fn expected_cost(&self, head: &HeadInfo) -> f64 {
        head.cost as f64 * self.accuracy
    }

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
///
/// The ready tenants are kept in indexed heaps ([`IndexedHeap`]), so that a
/// decision costs O(log n) plus O(log n) per tenant that is urgent at that
/// moment, instead of two scans over every ready tenant:
/// * by virtual time (then head sequence number), in two heaps: the
///   latency-sensitive tenants whose head has a deadline (they may wait),
///   and the others (they never wait). The smallest virtual time is the
///   smaller of their tops; the fair choice is the top of the second or an
///   urgent tenant of the first;
/// * by latest start (then sequence number), those whose head has a
///   deadline. Urgency is `latest start < now + longest other head x
///   slots`, so the urgent tenants are a prefix of this order, taken off
///   and put back at each decision;
/// * by expected head cost, largest first (then index), for the longest
///   other head.
///
/// Decisions are those of [`reference::ReferenceSlack`]: each key is the
/// value the reference compares, computed by the same expression when the
/// tenant's head, virtual time or accuracy change, ordered as the reference
/// orders it (`f64::total_cmp`, then the sequence number or index). Should
/// a virtual time, cost or latest start ever be NaN or a negative zero
/// (where `total_cmp` and `<` disagree), the policy decides by the
/// reference's scan from then on.
#[derive(Debug, Clone)]
pub struct SlackStealing {
    tenants: Vec<Tenant>,
    /// Fraction of each latency budget kept in reserve.
    guard: f64,
    /// Scheduler virtual time: the largest "smallest virtual time among
    /// the ready" seen at a decision.
    svt: f64,
    /// Ready tenants that never wait, by (virtual time, head sequence).
    free: IndexedHeap,
    /// Ready latency-sensitive tenants whose head has a deadline, by
    /// (virtual time, head sequence).
    deferring: IndexedHeap,
    /// Ready tenants whose head has a deadline, by (latest start, head
    /// sequence).
    deadlines: IndexedHeap,
    /// Ready tenants by (minus the expected head cost, index), once a
    /// deadline may occur (`deadlines_seen`): a tenant has an objective, or
    /// a head had one. Until then no decision needs it.
    longest: IndexedHeap,
    deadlines_seen: bool,
    /// Some key could not be ordered as the reference orders it.
    unordered: bool,
    /// The urgent tenants taken off `deadlines` during a decision.
    urgent: Vec<(usize, HeapKey)>,
}

impl SlackStealing {
    /// The policy for `setup`'s tenants, keeping `guard` (in [0, 1)) of
    /// each latency budget in reserve.
    pub fn new(setup: &PolicySetup<'_>, guard: f64) -> Self {
        let n = setup.tenants.len();
        SlackStealing {
            guard,
            svt: 0.0,
            tenants: setup.tenants.iter().map(Tenant::new).collect(),
            free: IndexedHeap::new(n),
            deferring: IndexedHeap::new(n),
            deadlines: IndexedHeap::new(n),
            longest: IndexedHeap::new(n),
            deadlines_seen: setup.tenants.iter().any(|t| t.latency.is_some()),
            unordered: false,
            urgent: Vec::new(),
        }
    }

    /// Puts tenant `i` in the heaps its state belongs to, with its keys, or
    /// takes it out of all when it is not ready.
    fn relist(&mut self, i: usize) {
        let t = &self.tenants[i];
        let Some(h) = t.head else {
            self.free.remove(i);
            self.deferring.remove(i);
            self.deadlines.remove(i);
            self.longest.remove(i);
            return;
        };
        let latest_start = t.latest_start(self.guard);
        let cost = t.expected_cost(&h);
        let odd = |x: f64| x.is_nan() || x.to_bits() == (-0.0f64).to_bits();
        self.unordered |= odd(t.actual) || odd(cost) || latest_start.is_some_and(odd);
        let by_actual = HeapKey::new(t.actual, h.seq);
        if t.defers && latest_start.is_some() {
            self.deferring.set(i, by_actual);
            self.free.remove(i);
        } else {
            self.free.set(i, by_actual);
            self.deferring.remove(i);
        }
        match latest_start {
            Some(ls) => self.deadlines.set(i, HeapKey::new(ls, h.seq)),
            None => self.deadlines.remove(i),
        }
        if self.deadlines_seen {
            self.longest.set(i, HeapKey::new(-cost, i as u64));
        } else if latest_start.is_some() {
            // The first deadline: every ready tenant's head from now on.
            self.deadlines_seen = true;
            for (j, t) in self.tenants.iter().enumerate() {
                if let Some(h) = t.head {
                    self.longest.set(j, HeapKey::new(-t.expected_cost(&h), j as u64));
                }
            }
        }
    }

    /// The smallest virtual time among the ready tenants.
    fn min_actual(&self) -> Option<f64> {
        match (self.free.min_tag(), self.deferring.min_tag()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The longest expected head among the ready tenants other than
    /// `tenant`, the longest of all: 0 if none is longer.
    fn second_longest(&mut self, tenant: usize) -> f64 {
        let Some(key) = self.longest.key(tenant) else {
            return 0.0;
        };
        self.longest.remove(tenant);
        let second = self.longest.min_tag().map_or(0.0, |c| -c);
        self.longest.set(tenant, key);
        second
    }
}

/// Whether starting at `start` misses `latest_start` (the reference's
/// comparison: false if either is NaN).
#[inline]
fn too_late(start: f64, latest_start: f64) -> bool {
    start > latest_start
}

/// The better of two candidates: the smaller key ([`HeapKey`]'s order, tag
/// by `f64::total_cmp` then tie, as the reference's `better` compares), the
/// first on equal keys.
fn best(a: Option<(usize, HeapKey)>, b: Option<(usize, HeapKey)>) -> Option<(usize, HeapKey)> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.1 < x.1 { y } else { x }),
        (x, y) => x.or(y),
    }
}

impl Policy for SlackStealing {
    fn on_ready(&mut self, _: Nanos, tenant: usize, head: &HeadInfo, _: &PolicyContext<'_>) {
        // As BVT: the smallest virtual time among the ready, or the last
        // one seen when nobody is ready (idling earns no credit).
        let svt = self.min_actual().unwrap_or(self.svt);
        self.tenants[tenant].become_ready(head, svt);
        self.relist(tenant);
    }

    fn pick(&mut self, now: Nanos, cx: &PolicyContext<'_>) -> Option<usize> {
        if self.unordered {
            return reference::scan(&self.tenants, self.guard, &mut self.svt, now, cx.slots);
        }
        let min_actual = self.min_actual()?;
        if min_actual.is_finite() {
            self.svt = self.svt.max(min_actual);
        }
        if self.deadlines.is_empty() {
            // No deadline: nobody is urgent or waits; the smallest virtual time goes.
            return self.free.peek().map(|(i, _)| i);
        }
        // The longest head (the first tenant of the largest expected cost),
        // if any is longer than 0: every other tenant's "longest other head".
        let (longest_tenant, longest) = match self.longest.peek() {
            Some((i, k)) if -k.tag() > 0.0 => (i, -k.tag()),
            _ => (usize::MAX, 0.0),
        };
        let slots = f64::from(cx.slots.max(1));
        let horizon = now as f64 + longest * slots;
        // Urgent: serving the longest other head first (once per slot)
        // would start it too late. Only a latest start before `horizon`
        // can be; the longest tenant's own horizon is the second longest's.
        while let Some((i, key)) = self.deadlines.peek() {
            if !too_late(horizon, key.tag()) {
                break;
            }
            self.deadlines.remove(i);
            self.urgent.push((i, key));
        }
        let mut urgent_best: Option<(usize, HeapKey)> = None;
        let mut deferring_best: Option<(usize, HeapKey)> = None;
        for k in 0..self.urgent.len() {
            let (i, key) = self.urgent[k];
            if i == longest_tenant {
                let own = now as f64 + self.second_longest(i) * slots;
                if !too_late(own, key.tag()) {
                    continue;
                }
            }
            let t = &self.tenants[i];
            if t.actual <= min_actual {
                urgent_best = best(urgent_best, Some((i, key)));
            }
            if t.defers {
                let seq = key.tie();
                deferring_best = best(deferring_best, Some((i, HeapKey::new(t.actual, seq))));
            }
        }
        for (i, key) in self.urgent.drain(..) {
            self.deadlines.set(i, key);
        }
        if let Some((i, _)) = urgent_best {
            return Some(i);
        }
        // Those that cannot wait: every tenant but the deferring ones with
        // slack. If only those are ready, the earliest latest start.
        best(self.free.peek(), deferring_best)
            .or(self.deadlines.peek())
            .map(|(i, _)| i)
    }

    fn on_dispatch(
        &mut self,
        _: Nanos,
        tenant: usize,
        served: &HeadInfo,
        next: Option<&HeadInfo>,
        _: &PolicyContext<'_>,
    ) {
        self.tenants[tenant].dispatched(served, next);
        self.relist(tenant);
    }

    fn on_complete(
        &mut self,
        _: Nanos,
        tenant: usize,
        served: &HeadInfo,
        measured: Nanos,
        _: &PolicyContext<'_>,
    ) {
        self.tenants[tenant].completed(served, measured);
        self.relist(tenant);
    }
}

pub mod reference;
#[cfg(test)]
mod tests;
