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
//!   hardware compares every FMQ in a comparator tree; here the ready
//!   tenants' values are kept as blocks of arrays and scanned
//!   data-parallel (`lanes.rs`), O(ready tenants) per decision at a few
//!   tenths of a nanosecond each (see docs/perf.md, issue 17).

mod lanes;
pub mod reference;

use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{HeadInfo, Policy, PolicyContext};
use crate::params::Params;
use crate::units::Nanos;
use lanes::{Lane, ReadyLanes, LIMIT_EPSILON};

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

/// One tenant's WLBVT accounting (the source of truth; a ready tenant's
/// [`Lane`] is a copy the scan reads).
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
    /// Position in the ready lanes, or `NOT_LISTED`.
    ready_pos: u32,
}

impl Fmq {
    /// The scan's copy of this tenant's state.
    fn lane(&self, tenant: usize) -> Lane {
        Lane {
            tenant: tenant as u32,
            updated: self.updated as f64,
            occupancy: self.occupancy,
            active_time: self.active_time,
            running: self.running as f64,
            weight: self.weight,
            head_seq: {
                debug_assert!(self.head_seq < 1 << 53, "sequence numbers stay exact as f64");
                self.head_seq as f64
            },
        }
    }
}

/// WLBVT state for one engine.
#[derive(Debug, Clone)]
pub struct WeightLimitedBvt {
    slots: f64,
    fmqs: Vec<Fmq>,
    /// Ready tenants, densely, as the scan reads them.
    ready: ReadyLanes,
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
            ready: ReadyLanes::with_capacity(setup.tenants.len()),
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

    /// Copies tenant `t`'s accounting into its lane, if it is ready.
    #[inline]
    fn sync_lane(&mut self, t: usize) {
        let f = &self.fmqs[t];
        if f.ready_pos != NOT_LISTED {
            self.ready.set(f.ready_pos as usize, f.lane(t));
        }
    }

    fn unlist(&mut self, t: usize) {
        let p = self.fmqs[t].ready_pos as usize;
        if let Some(moved) = self.ready.swap_remove(p) {
            self.fmqs[moved as usize].ready_pos = p as u32;
        }
        self.fmqs[t].ready_pos = NOT_LISTED;
        self.ready_weight = if self.ready.is_empty() {
            0.0
        } else {
            self.ready_weight - self.fmqs[t].weight
        };
    }

    /// `running < ceil(slots x w / W)` is `running < slots x w / W` for an
    /// integer `running`; the epsilon absorbs rounding of an exact integer.
    /// Returns `slots / W`, the factor of `w` in the limit.
    #[inline]
    fn share(&self) -> f64 {
        self.slots / self.ready_weight
    }
}

impl Policy for WeightLimitedBvt {
    fn on_ready(&mut self, now: Nanos, tenant: usize, head: &HeadInfo, _: &PolicyContext<'_>) {
        self.advance(tenant, now);
        let f = &mut self.fmqs[tenant];
        f.head_seq = head.seq;
        let lane = f.lane(tenant);
        f.ready_pos = self.ready.push(lane) as u32;
        self.ready_weight += f.weight;
    }

    fn admits(&self, tenant: usize, _: &PolicyContext<'_>) -> bool {
        let f = &self.fmqs[tenant];
        f.running as f64 + LIMIT_EPSILON < self.share() * f.weight
    }

    fn pick(&mut self, now: Nanos, _: &PolicyContext<'_>) -> Option<usize> {
        let share = self.share();
        self.ready.pick(now, share)
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
            Some(h) => {
                self.fmqs[tenant].head_seq = h.seq;
                self.sync_lane(tenant);
            }
            None => self.unlist(tenant),
        }
    }

    fn on_complete(&mut self, now: Nanos, tenant: usize, _: &HeadInfo, _: Nanos, _: &PolicyContext<'_>) {
        self.advance(tenant, now);
        let f = &mut self.fmqs[tenant];
        f.running = f.running.saturating_sub(1);
        self.sync_lane(tenant);
    }
}

#[cfg(test)]
mod tests;
