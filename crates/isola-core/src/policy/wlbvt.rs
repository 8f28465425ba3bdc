//! Weight-limited borrowed virtual time (WLBVT), OSMOSIS' processing-unit
//! scheduler (Listing 1 of the paper), in continuous time.
//!
//! For each tenant (an FMQ in the paper) the policy integrates its slot
//! occupancy (`total_pu_occup`, slots x ns) and its active time (`bvt`, ns in
//! which it had queued work or work in service); `tput = occupancy / active
//! time`. When a slot frees, among ready tenants whose occupancy is under
//! their limit `ceil(slots x w_i / sum of w over tenants with queued work)`,
//! the one with the lowest `tput / w_i` gets the slot.
//!
//! Choices where the listing is ambiguous or hardware-specific:
//! * The listing's limit multiplies by `len(FMQs)`; we multiply by the number
//!   of slots (processing units), which is what the text describes ("upper
//!   limit of weighted PU occupation") and what makes the limit meaningful.
//! * The hardware updates every clock cycle; we integrate exactly between
//!   events, which is the same quantity without the per-cycle work.
//! * A tenant with no active time yet has `tput = 0`.
//! * A tenant held back by its rate limit (the scheduler's shaper) counts as
//!   inactive: it accrues no active time and its weight is left out of the
//!   limit's sum, as if its queue were empty, since it cannot take a slot.
//! * Ties (equal `tput / w`, e.g. at start): the tenant whose head task is the
//!   oldest wins. The listing's strict `<` over FMQ indices would always favour
//!   the lowest index, an artefact of hardware order we do not copy.
//! * Finding the minimum scans the ready tenants: every tenant's `tput` moves
//!   with time, so no precomputed order stays valid between events. The
//!   hardware does the same scan with a comparator tree; cost is O(ready
//!   tenants) per decision (see docs/perf.md).

use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{HeadInfo, Policy, PolicyContext};
use crate::params::Params;
use crate::units::Nanos;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "wlbvt",
    aliases: &[],
    description: "OSMOSIS WLBVT: lowest occupancy-per-active-time / weight first, each tenant capped at its weighted share of slots.",
    source: "OSMOSIS (Listing 1)",
    work_conserving: true,
    params: &[],
    build,
};

fn build(_: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(WeightLimitedBvt::new(s)))
}

const NOT_LISTED: u32 = u32::MAX;

/// One tenant's WLBVT state, kept together so the scan reads one cache line.
#[derive(Debug, Clone, Copy, Default)]
struct Fmq {
    weight: f64,
    /// Integral of slots occupied over time (slot x ns).
    occupancy: f64,
    /// Time with queued work or work in service (ns).
    active_time: f64,
    /// When `occupancy` and `active_time` were last brought up to date.
    updated: Nanos,
    /// Oldest queued task, for ties.
    head_seq: u64,
    /// Dispatches in service.
    running: u32,
    /// Position in the ready list, or `NOT_LISTED`.
    ready_pos: u32,
}

/// WLBVT state for one engine.
#[derive(Debug, Clone)]
pub struct WeightLimitedBvt {
    slots: f64,
    fmqs: Vec<Fmq>,
    /// Ready tenants, densely.
    ready: Vec<u32>,
    /// Sum of the weights of ready tenants.
    ready_weight: f64,
}

impl WeightLimitedBvt {
    /// WLBVT for `setup`'s tenants and slots.
    pub fn new(setup: &PolicySetup<'_>) -> Self {
        WeightLimitedBvt {
            slots: setup.slots as f64,
            fmqs: setup
                .tenants
                .iter()
                .map(|t| Fmq {
                    weight: t.weight,
                    ready_pos: NOT_LISTED,
                    ..Fmq::default()
                })
                .collect(),
            ready: Vec::with_capacity(setup.tenants.len()),
            ready_weight: 0.0,
        }
    }

    /// Brings tenant `t`'s integrals up to `now` (its state was constant since).
    #[inline]
    fn advance(&mut self, t: usize, now: Nanos) {
        let f = &mut self.fmqs[t];
        let dt = now.saturating_sub(f.updated) as f64;
        f.occupancy += f.running as f64 * dt;
        if f.ready_pos != NOT_LISTED || f.running > 0 {
            f.active_time += dt;
        }
        f.updated = now;
    }

    fn unlist(&mut self, t: usize) {
        let p = self.fmqs[t].ready_pos as usize;
        self.ready.swap_remove(p);
        if let Some(&moved) = self.ready.get(p) {
            self.fmqs[moved as usize].ready_pos = p as u32;
        }
        self.fmqs[t].ready_pos = NOT_LISTED;
        self.ready_weight = if self.ready.is_empty() {
            0.0
        } else {
            self.ready_weight - self.fmqs[t].weight
        };
    }
}

impl Policy for WeightLimitedBvt {
    fn on_ready(&mut self, now: Nanos, tenant: usize, head: &HeadInfo, _: &PolicyContext<'_>) {
        self.advance(tenant, now);
        let f = &mut self.fmqs[tenant];
        f.head_seq = head.seq;
        f.ready_pos = self.ready.len() as u32;
        self.ready.push(tenant as u32);
        self.ready_weight += f.weight;
    }

    fn admits(&self, tenant: usize, _: &PolicyContext<'_>) -> bool {
        let f = &self.fmqs[tenant];
        f.running as f64 + 1e-9 < self.slots * f.weight / self.ready_weight
    }

    fn pick(&mut self, now: Nanos, _: &PolicyContext<'_>) -> Option<usize> {
        // `running < ceil(slots x w / W)` is `running < slots x w / W` for an
        // integer `running`; the epsilon absorbs rounding of an exact integer.
        let share = self.slots / self.ready_weight;
        let mut best: Option<usize> = None;
        let (mut best_num, mut best_den, mut best_seq) = (0.0, 1.0, 0);
        for &t in &self.ready {
            let f = &self.fmqs[t as usize];
            let running = f.running as f64;
            if running + 1e-9 >= share * f.weight {
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
        _: &HeadInfo,
        next: Option<&HeadInfo>,
        _: &PolicyContext<'_>,
    ) {
        self.advance(tenant, now);
        self.fmqs[tenant].running += 1;
        match next {
            Some(h) => self.fmqs[tenant].head_seq = h.seq,
            None => self.unlist(tenant),
        }
    }

    fn on_complete(&mut self, now: Nanos, tenant: usize, _: &HeadInfo, _: Nanos, _: &PolicyContext<'_>) {
        self.advance(tenant, now);
        let f = &mut self.fmqs[tenant];
        f.running = f.running.saturating_sub(1);
    }
}
