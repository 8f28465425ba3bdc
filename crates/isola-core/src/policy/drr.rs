//! Deficit round robin (Shreedhar and Varghese, SIGCOMM 1995), and round robin
//! and weighted round robin as its special cases.
//!
//! Ready tenants wait in a ring. When a tenant's turn starts it earns a quantum
//! (times its weight, relative to the smallest weight); it is served while its
//! head costs no more than its deficit, and the turn passes on when it does or
//! when the tenant runs out of ready work, which also resets its deficit to 0.
//!
//! * `rr`: one task per turn, weights ignored (PsPIN's scheduler, OSMOSIS'
//!   baseline). With tasks of unequal cost it gives more engine time to the
//!   tenant with costlier tasks: OSMOSIS' Figure 4.
//! * `wrr`: `weight / min weight` tasks per turn (fractions carry over).
//! * `drr`: shares by predicted cost (engine time) or bytes.
//!
//! Under `charge = cost` a task is charged its predicted cost at dispatch
//! and `measured - predicted` at completion ([`Charge::correction`]): a
//! deficit driven below zero by a task that ran long is paid back by the
//! turns that follow. A credit (a task cheaper than predicted) is kept
//! only while the tenant stays in the ring, as DRR resets the deficit of
//! a tenant that leaves it; a debt is kept either way.
//!
//! Tasks served outside the ring's order (the scheduler's reservation phase,
//! at-limit `allow`) are charged to the tenant's deficit all the same, so a
//! tenant cannot gain service by being reserved.

use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{Charge, HeadInfo, Policy, PolicyContext, CHARGE_PARAM};
use crate::params::{ParamSpec, Params};
use crate::units::Nanos;
use std::collections::VecDeque;

/// Registry entry for `rr`.
pub const RR_INFO: PolicyInfo = PolicyInfo {
    name: "rr",
    aliases: &[],
    description: "Round robin over tenants with queued work, one task per turn, whatever its cost.",
    source: "PsPIN / OSMOSIS baseline",
    work_conserving: true,
    params: &[],
    build: build_rr,
};

/// Registry entry for `wrr`.
pub const WRR_INFO: PolicyInfo = PolicyInfo {
    name: "wrr",
    aliases: &[],
    description: "Weighted round robin: weight/min-weight tasks per turn, whatever their cost.",
    source: "classical WRR (OSMOSIS uses it for DMA and egress)",
    work_conserving: true,
    params: &[],
    build: build_wrr,
};

const DRR_PARAMS: &[ParamSpec] = &[
    CHARGE_PARAM,
    ParamSpec {
        name: "quantum",
        default: "auto",
        description: "deficit earned per turn by the lightest tenant, in the charge's unit; `auto` = the largest of the last 256 heads seen, which makes every turn serve at least one task",
    },
];

/// Registry entry for `drr`.
pub const DRR_INFO: PolicyInfo = PolicyInfo {
    name: "drr",
    aliases: &["dwrr"],
    description: "Deficit round robin: weighted shares of predicted engine time (or bytes).",
    source: "Shreedhar & Varghese, SIGCOMM 1995; OSMOSIS (DWRR)",
    work_conserving: true,
    params: DRR_PARAMS,
    build: build_drr,
};

fn build_rr(_: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(DeficitRoundRobin::new(s, Charge::Ops, false, Some(1.0))))
}

fn build_wrr(_: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(DeficitRoundRobin::new(s, Charge::Ops, true, Some(1.0))))
}

fn build_drr(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    let charge = p.charge()?;
    let quantum = p.auto_or_positive("quantum")?;
    Ok(Box::new(DeficitRoundRobin::new(s, charge, true, quantum)))
}

/// Heads `auto` takes its quantum from: the last 256. The largest head
/// *ever* seen would keep a quantum from tasks long gone (a task served
/// whole before its tenant's tasks were split, or charged before its
/// operator's cost was learned), and a turn of that size is how long every
/// other tenant waits.
const QUANTUM_WINDOW: u64 = 256;

/// The largest of the last [`QUANTUM_WINDOW`] values pushed, kept as a
/// monotonic queue (O(1) amortised a push). Written by hand: a few lines,
/// where a crate would bring a general windowed-aggregate structure.
#[derive(Debug, Clone, Default)]
struct RecentMax {
    pushed: u64,
    /// (index, value), values decreasing from the front.
    queue: VecDeque<(u64, f64)>,
}

impl RecentMax {
    /// Adds `value`; answers the largest of the last window.
    fn push(&mut self, value: f64) -> f64 {
        while self.queue.back().is_some_and(|&(_, v)| v <= value) {
            self.queue.pop_back();
        }
        self.queue.push_back((self.pushed, value));
        self.pushed += 1;
        while self
            .queue
            .front()
            .is_some_and(|&(i, _)| i + QUANTUM_WINDOW < self.pushed)
        {
            self.queue.pop_front();
        }
        debug_assert!(
            self.queue.len() as u64 <= QUANTUM_WINDOW,
            "the window holds at most its length"
        );
        self.queue.front().map_or(value, |&(_, v)| v)
    }
}

/// Deficit round robin with a configurable charge and quantum.
#[derive(Debug, Clone)]
pub struct DeficitRoundRobin {
    charge: Charge,
    /// Quantum of the lightest tenant; `None` while `auto` has seen no head.
    quantum: Option<f64>,
    /// Under `auto`: the heads seen lately, as a sliding-window maximum.
    recent: Option<RecentMax>,
    /// Per tenant: quantum multiplier (weight / min weight, or 1).
    scale: Vec<f64>,
    deficit: Vec<f64>,
    head_amount: Vec<f64>,
    /// Ring of (tenant, generation); entries whose generation is stale are
    /// skipped, so a tenant leaving mid-ring costs O(1).
    ring: VecDeque<(u32, u32)>,
    generation: Vec<u32>,
    listed: Vec<bool>,
    /// Whether the tenant at the front of the ring has been given its quantum.
    turn_open: bool,
}

impl DeficitRoundRobin {
    /// DRR for `setup`'s tenants. `quantum = None` means `auto`.
    pub fn new(setup: &PolicySetup<'_>, charge: Charge, weighted: bool, quantum: Option<f64>) -> Self {
        let n = setup.tenants.len();
        let min_w = setup
            .tenants
            .iter()
            .map(|t| t.weight)
            .fold(f64::INFINITY, f64::min);
        let scale = setup
            .tenants
            .iter()
            .map(|t| if weighted { t.weight / min_w } else { 1.0 })
            .collect();
        DeficitRoundRobin {
            charge,
            recent: quantum.is_none().then(RecentMax::default),
            quantum,
            scale,
            deficit: vec![0.0; n],
            head_amount: vec![0.0; n],
            ring: VecDeque::with_capacity(n),
            generation: vec![0; n],
            listed: vec![false; n],
            turn_open: false,
        }
    }

    fn set_head(&mut self, tenant: usize, head: &HeadInfo) {
        let amount = self.charge.amount(head);
        self.head_amount[tenant] = amount;
        if let Some(recent) = &mut self.recent {
            self.quantum = Some(recent.push(amount));
        }
    }

    /// Every listed tenant needs `k_t` more quanta before its head fits;
    /// gives each `min k - 1` quanta, the rounds in which nobody is served.
    fn skip_idle_rounds(&mut self, quantum: f64) {
        let live = |&(t, g): &(u32, u32)| self.listed[t as usize] && self.generation[t as usize] == g;
        let rounds = self
            .ring
            .iter()
            .filter(|e| live(e))
            .map(|&(t, _)| {
                let t = t as usize;
                ((self.head_amount[t] - self.deficit[t]) / (quantum * self.scale[t])).ceil()
            })
            .fold(f64::INFINITY, f64::min);
        if rounds.is_finite() && rounds > 1.0 {
            let live: Vec<usize> = self
                .ring
                .iter()
                .filter(|e| live(e))
                .map(|&(t, _)| t as usize)
                .collect();
            for t in live {
                self.deficit[t] += (rounds - 1.0) * quantum * self.scale[t];
            }
        }
    }

    fn front_is(&self, tenant: usize) -> bool {
        self.ring.front().is_some_and(|&(t, _)| t as usize == tenant)
    }
}

impl Policy for DeficitRoundRobin {
    fn on_ready(&mut self, _: Nanos, tenant: usize, head: &HeadInfo, _: &PolicyContext<'_>) {
        self.set_head(tenant, head);
        if !self.listed[tenant] {
            self.listed[tenant] = true;
            self.generation[tenant] = self.generation[tenant].wrapping_add(1);
            self.ring.push_back((tenant as u32, self.generation[tenant]));
        }
    }

    fn pick(&mut self, _: Nanos, _: &PolicyContext<'_>) -> Option<usize> {
        // A zero quantum (every head so far free) would never advance a deficit.
        let quantum = self.quantum.unwrap_or(1.0).max(f64::MIN_POSITIVE);
        let mut misses = 0;
        loop {
            if misses > 0 && misses >= self.ring.len() {
                // A whole round passed and nobody could be served: add at once
                // the quanta of the rounds that would pass the same way, so a
                // quantum much smaller than the tasks costs one division, not
                // a loop per round. Same outcome as turning the ring.
                self.skip_idle_rounds(quantum);
                misses = 0;
            }
            let &(t, generation) = self.ring.front()?;
            let t = t as usize;
            if !self.listed[t] || self.generation[t] != generation {
                self.ring.pop_front();
                self.turn_open = false;
                continue;
            }
            if !self.turn_open {
                self.deficit[t] += quantum * self.scale[t];
                self.turn_open = true;
            }
            if self.head_amount[t] <= self.deficit[t] {
                return Some(t);
            }
            // Not enough deficit for the head: the turn passes on.
            self.ring.rotate_left(1);
            self.turn_open = false;
            misses += 1;
        }
    }

    fn on_dispatch(
        &mut self,
        _: Nanos,
        tenant: usize,
        served: &HeadInfo,
        next: Option<&HeadInfo>,
        _: &PolicyContext<'_>,
    ) {
        self.deficit[tenant] -= self.charge.amount(served);
        match next {
            Some(h) => self.set_head(tenant, h),
            None => {
                self.listed[tenant] = false;
                // An idle tenant keeps no credit (DRR), but keeps a debt:
                // a dispatch the policy did not pick (a batch's tasks, a
                // reservation) can take it below zero, and forgiving that
                // when the queue empties would let a tenant whose batches
                // empty its queue run over its share every round.
                self.deficit[tenant] = self.deficit[tenant].min(0.0);
                if self.front_is(tenant) {
                    self.ring.pop_front();
                    self.turn_open = false;
                }
            }
        }
    }

    fn on_complete(
        &mut self,
        _: Nanos,
        tenant: usize,
        served: &HeadInfo,
        measured: Nanos,
        _: &PolicyContext<'_>,
    ) {
        let owed = self.charge.correction(served, measured);
        self.deficit[tenant] -= owed;
        if !self.listed[tenant] {
            self.deficit[tenant] = self.deficit[tenant].min(0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The monotonic queue answers what a scan of the last window answers.
        #[test]
        fn recent_max_is_the_windows_maximum(values in proptest::collection::vec(0u32..1000, 1..1200)) {
            let mut recent = RecentMax::default();
            for (i, &v) in values.iter().enumerate() {
                let got = recent.push(f64::from(v));
                let from = (i + 1).saturating_sub(QUANTUM_WINDOW as usize);
                let want = values[from..=i].iter().copied().max().unwrap();
                prop_assert_eq!(got, f64::from(want));
            }
        }
    }
}
