//! Slack stealing as it was before issue 17, kept as the reference the
//! indexed implementation ([`super::SlackStealing`]) is tested and
//! benchmarked against (`next_ref/slack/N` in `benches/scheduler_next.rs`),
//! and as its decision for states the heaps do not order (a NaN).
//!
//! Each decision walks the ready tenants twice: once for the smallest
//! virtual time and the two longest heads, once to judge every tenant's
//! urgency and keep the best urgent, fair and earliest tenants. The
//! accounting (virtual times, accuracy, latest starts) is the module's.

use super::Tenant;
use crate::policy::registry::{PolicyInfo, PolicySetup};
use crate::policy::{HeadInfo, Params, Policy, PolicyContext, PolicyError};
use crate::units::Nanos;

/// Registry entry, for registering with
/// [`crate::SchedulerBuilder::register_policy`]; not in [`crate::POLICIES`].
pub const INFO: PolicyInfo = PolicyInfo {
    name: "slack_reference",
    description: "Slack stealing deciding by two scans over the ready tenants (the pre-issue-17 implementation; reference for tests and benchmarks).",
    build,
    ..super::INFO
};

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(ReferenceSlack::new(s, super::guard(p)?)))
}

/// Slack stealing deciding by scanning every ready tenant.
#[derive(Debug, Clone)]
pub struct ReferenceSlack {
    tenants: Vec<Tenant>,
    /// Fraction of each latency budget kept in reserve.
    guard: f64,
    /// Scheduler virtual time: the largest "smallest virtual time among
    /// the ready" seen at a decision.
    svt: f64,
}

impl ReferenceSlack {
    /// The policy for `setup`'s tenants, keeping `guard` (in [0, 1)) of
    /// each latency budget in reserve.
    pub fn new(setup: &PolicySetup<'_>, guard: f64) -> Self {
        ReferenceSlack {
            guard,
            svt: 0.0,
            tenants: setup.tenants.iter().map(Tenant::new).collect(),
        }
    }
}

fn ready(tenants: &[Tenant]) -> impl Iterator<Item = (usize, &Tenant, HeadInfo)> {
    tenants
        .iter()
        .enumerate()
        .filter_map(|(i, t)| Some((i, t, t.head?)))
}

/// The decision among `tenants` at `now` on an engine with `slots`, raising
/// the scheduler virtual time `svt` to the smallest among the ready.
pub(super) fn scan(tenants: &[Tenant], guard: f64, svt: &mut f64, now: Nanos, slots: u32) -> Option<usize> {
    // First pass: the smallest virtual time, and the two longest heads
    // (expected service), so each tenant's "longest other head" is known.
    let mut min_actual = f64::INFINITY;
    let (mut longest, mut second) = ((usize::MAX, 0.0f64), 0.0f64);
    for (i, t, h) in ready(tenants) {
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
        *svt = svt.max(min_actual);
    }
    let slots = f64::from(slots.max(1));
    // Second pass: the best urgent tenant within its share (least latest
    // start), the best by virtual time among those that cannot wait,
    // and the earliest latest start of all.
    let mut urgent_best: Option<(f64, u64, usize)> = None;
    let mut fair_best: Option<(f64, u64, usize)> = None;
    let mut earliest: Option<(f64, u64, usize)> = None;
    let better = |best: &Option<(f64, u64, usize)>, key: (f64, u64)| {
        best.is_none_or(|b| key.0.total_cmp(&b.0).then(key.1.cmp(&b.1)).is_lt())
    };
    for (i, t, h) in ready(tenants) {
        let latest_start = t.latest_start(guard);
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

impl Policy for ReferenceSlack {
    fn on_ready(&mut self, _: Nanos, tenant: usize, head: &HeadInfo, _: &PolicyContext<'_>) {
        // As BVT: the smallest virtual time among the ready, or the last
        // one seen when nobody is ready (idling earns no credit).
        let svt = ready(&self.tenants)
            .map(|(_, t, _)| t.actual)
            .reduce(f64::min)
            .unwrap_or(self.svt);
        self.tenants[tenant].become_ready(head, svt);
    }

    fn pick(&mut self, now: Nanos, cx: &PolicyContext<'_>) -> Option<usize> {
        scan(&self.tenants, self.guard, &mut self.svt, now, cx.slots)
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
    }
}
