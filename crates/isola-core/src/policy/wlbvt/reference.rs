//! WLBVT's decision as a sequential scan: the implementation before issue 17,
//! kept as the reference the data-parallel scan (`lanes.rs`) is tested
//! and benchmarked against (`next_ref/wlbvt/N` in `benches/scheduler_next.rs`).
//!
//! It walks the ready tenants in order and keeps the best so far, comparing
//! `num_a / den_a < num_b / den_b` as `num_a x den_b < num_b x den_a`
//! (no division), ties to the older head. The accounting (occupancy, active
//! time, the slot limit) is [`WeightLimitedBvt`]'s own; only the scan differs.

use super::{WeightLimitedBvt, LIMIT_EPSILON};
use crate::policy::registry::{PolicyInfo, PolicySetup};
use crate::policy::{HeadInfo, Params, Policy, PolicyContext, PolicyError};
use crate::units::Nanos;

/// Registry entry, for registering with
/// [`crate::SchedulerBuilder::register_policy`]; not in [`crate::POLICIES`].
pub const INFO: PolicyInfo = PolicyInfo {
    name: "wlbvt_sequential",
    aliases: &[],
    description: "OSMOSIS WLBVT with the pre-issue-17 sequential scan (reference for tests and benchmarks).",
    source: "OSMOSIS (Listing 1)",
    work_conserving: true,
    params: &[],
    build,
};

fn build(_: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(SequentialWlbvt::new(s)))
}

/// WLBVT deciding by a sequential scan over the ready tenants.
#[derive(Debug, Clone)]
pub struct SequentialWlbvt {
    inner: WeightLimitedBvt,
}

impl SequentialWlbvt {
    /// Sequential-scan WLBVT for `setup`'s tenants and slots.
    pub fn new(setup: &PolicySetup<'_>) -> Self {
        SequentialWlbvt {
            inner: WeightLimitedBvt::new(setup),
        }
    }
}

impl Policy for SequentialWlbvt {
    fn on_ready(&mut self, now: Nanos, tenant: usize, head: &HeadInfo, cx: &PolicyContext<'_>) {
        self.inner.on_ready(now, tenant, head, cx);
    }

    fn admits(&self, tenant: usize, cx: &PolicyContext<'_>) -> bool {
        self.inner.admits(tenant, cx)
    }

    fn pick(&mut self, now: Nanos, _: &PolicyContext<'_>) -> Option<usize> {
        let share = self.inner.share();
        let mut best: Option<usize> = None;
        let (mut best_num, mut best_den, mut best_seq) = (0.0, 1.0, 0);
        for &t in self.inner.ready.tenants() {
            let f = &self.inner.fmqs[t as usize];
            let running = f.running as f64;
            if running + LIMIT_EPSILON >= share * f.weight {
                continue;
            }
            let dt = now.saturating_sub(f.updated) as f64;
            let active = f.active_time + dt;
            let (num, den) = if active > 0.0 {
                (f.occupancy + running * dt, active * f.weight)
            } else {
                (0.0, 1.0)
            };
            // num/den < best_num/best_den, without dividing.
            let (lhs, rhs) = (num * best_den, best_num * den);
            if best.is_none() || lhs < rhs || (lhs == rhs && f.head_seq < best_seq) {
                best = Some(t as usize);
                (best_num, best_den, best_seq) = (num, den, f.head_seq);
            }
        }
        best
    }

    fn on_dispatch(
        &mut self,
        now: Nanos,
        tenant: usize,
        served: &HeadInfo,
        next: Option<&HeadInfo>,
        cx: &PolicyContext<'_>,
    ) {
        self.inner.on_dispatch(now, tenant, served, next, cx);
    }

    fn on_complete(
        &mut self,
        now: Nanos,
        tenant: usize,
        served: &HeadInfo,
        measured: Nanos,
        cx: &PolicyContext<'_>,
    ) {
        self.inner.on_complete(now, tenant, served, measured, cx);
    }
}
