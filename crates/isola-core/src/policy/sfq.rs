//! Start-time fair queuing (Goyal, Vin and Cheng, SIGCOMM 1996), with weights.
//!
//! Each task gets a start tag `S = max(v, F_prev)` and a finish tag
//! `F = S + charge / weight`, where `F_prev` is the finish tag of the tenant's
//! previous task and `v`, the virtual time, is the start tag of the task most
//! recently put in service. The ready task with the smallest start tag goes
//! next (ties: the older task). At the end of a busy period (no tenant ready)
//! `v` jumps to the largest finish tag handed out, as in the paper.
//!
//! A task's finish tag is set from its predicted cost at dispatch and
//! corrected by `measured - predicted` (over the weight) at completion
//! ([`Charge::correction`]): the tenant's next start tag moves with it, so a
//! tenant whose tasks cost more than predicted is charged what they used,
//! and one whose tasks cost less is credited what it paid too much (never
//! more: an idle tenant still earns nothing).
//!
//! Tags are assigned when a task becomes its channel's head rather than at
//! arrival, as `max(v when the tenant became ready, F_prev)`: for a
//! backlogged tenant that is the paper's tag (`F_prev >= v`), a tenant that
//! was idle starts at `v` either way, and a backlogged tenant credited by a
//! correction keeps the credit even where it falls below the current `v`.

use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{Charge, HeadInfo, Policy, PolicyContext, CHARGE_PARAM};
use crate::params::Params;
use crate::ready_heap::{HeapKey, IndexedHeap};
use crate::units::Nanos;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "sfq",
    aliases: &["wfq"],
    description: "Start-time fair queuing: weighted fair shares of engine time by virtual start tags.",
    source: "Goyal, Vin & Cheng, SIGCOMM 1996",
    work_conserving: true,
    params: &[CHARGE_PARAM],
    build,
};

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(build_sfq(p, s)?))
}

/// SFQ from its checked parameters, by value (the scheduler holds the
/// built-in `sfq` so and calls it statically).
pub(crate) fn build_sfq(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<StartTimeFairQueuing, PolicyError> {
    let charge = p.charge()?;
    Ok(StartTimeFairQueuing::new(s, charge))
}

/// SFQ state for one engine.
#[derive(Debug, Clone)]
pub struct StartTimeFairQueuing {
    charge: Charge,
    weight: Vec<f64>,
    /// Finish tag of each tenant's last tagged task.
    finish: Vec<f64>,
    /// The virtual time when each ready tenant last became ready: its
    /// heads are tagged `max(this, finish)` while it stays backlogged, and
    /// again after a correction.
    ready_since: Vec<f64>,
    /// Ready tenants keyed by their head's start tag.
    ready: IndexedHeap,
    virtual_time: f64,
    max_finish: f64,
}

impl StartTimeFairQueuing {
    /// SFQ for `setup`'s tenants, advancing tags by `charge`.
    pub fn new(setup: &PolicySetup<'_>, charge: Charge) -> Self {
        let n = setup.tenants.len();
        StartTimeFairQueuing {
            charge,
            weight: setup.tenants.iter().map(|t| t.weight).collect(),
            finish: vec![0.0; n],
            ready_since: vec![0.0; n],
            ready: IndexedHeap::new(n),
            virtual_time: 0.0,
            max_finish: 0.0,
        }
    }

    fn tag(&mut self, tenant: usize, head: &HeadInfo) {
        let start = self.ready_since[tenant].max(self.finish[tenant]);
        self.ready.set(tenant, HeapKey::new(start, head.seq));
    }
}

impl Policy for StartTimeFairQueuing {
    fn on_ready(&mut self, _: Nanos, tenant: usize, head: &HeadInfo, _: &PolicyContext<'_>) {
        if self.ready.is_empty() {
            self.virtual_time = self.virtual_time.max(self.max_finish);
        }
        self.ready_since[tenant] = self.virtual_time;
        self.tag(tenant, head);
    }

    fn pick(&mut self, _: Nanos, _: &PolicyContext<'_>) -> Option<usize> {
        self.ready.peek().map(|(t, _)| t)
    }

    fn on_dispatch(
        &mut self,
        _: Nanos,
        tenant: usize,
        served: &HeadInfo,
        next: Option<&HeadInfo>,
        _: &PolicyContext<'_>,
    ) {
        // v is the smallest ready start tag, i.e. the served one unless the
        // scheduler served someone out of order (reservations).
        self.virtual_time = self
            .ready
            .min_tag()
            .map_or(self.virtual_time, |t| self.virtual_time.max(t));
        let start = self
            .ready
            .key(tenant)
            .map_or(self.ready_since[tenant].max(self.finish[tenant]), |k| k.tag());
        let finish = start + self.charge.amount(served) / self.weight[tenant];
        self.finish[tenant] = finish;
        self.max_finish = self.max_finish.max(finish);
        match next {
            Some(h) => self.tag(tenant, h),
            None => self.ready.remove(tenant),
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
        let owed = self.charge.correction(served, measured) / self.weight[tenant];
        if owed == 0.0 {
            return;
        }
        self.finish[tenant] += owed;
        self.max_finish = self.max_finish.max(self.finish[tenant]);
        if let Some(key) = self.ready.key(tenant) {
            // The head was tagged max(v then, old finish); it is now
            // max(v then, new finish).
            let start = self.ready_since[tenant].max(self.finish[tenant]);
            self.ready.set(tenant, HeapKey::new(start, key.tie()));
        }
    }
}
