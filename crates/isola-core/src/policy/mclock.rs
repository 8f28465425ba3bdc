//! mClock (Gulati, Merchant and Varman, OSDI 2010), as in dmClock.
//!
//! mClock gives each tenant three tags: reservation (R), limit (L) and
//! proportional share (P). In Isola the R and L tags are the scheduler's rate
//! shapers (GCRA, [`crate::shaper`]), which every policy is subject to: a
//! tenant whose R tag is due is served first (the constraint-based phase), and
//! a tenant past its L tag is held back. As in mClock, a task served in the
//! constraint phase still consumes its P tag (so a tenant gets the larger of
//! its reservation and its weighted share, not their sum), and a task served
//! in the weight phase does not use up the reservation. This struct is the
//! weight-based phase: P tags and the at-limit behaviour.
//!
//! P tags: `P_k = P_(k-1) + charge_k / w`, and the ready tenant with the
//! smallest P tag goes next (ties: the older task). A tenant that becomes
//! ready after idling gets `P = max(P_prev + charge / w, v)`, where `v`,
//! the virtual time, is the largest smallest-ready-tag seen at a dispatch
//! (the tag last served, before that dispatch was charged). That is
//! mClock's idle-tag adjustment (shift every active tag so the smallest
//! equals now) expressed without shifting: idling earns no credit, and a
//! returning tenant goes before a backlogged tenant's next task (whose tag
//! was charged already for the one in service), as it would at `now`.
//! Each P tag is corrected at completion by what the task really took
//! ([`Charge::correction`]). Tags are kept in virtual rather than wall time,
//! so a backlogged tenant's tags never collapse onto the clock when the tags
//! advance slower than it (which would turn the weight phase into FIFO).
//!
//! `at_limit = allow` is dmClock's limit break: when every tenant with work
//! is at its limit and a slot is free, the one whose limit frees soonest is
//! served anyway. The limit bound (limit x window + burst + one task) then
//! holds only while other tenants want the slots; it is exact under `wait`.

use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{AtLimit, Charge, HeadInfo, Policy, PolicyContext, CHARGE_PARAM};
use crate::params::{ParamSpec, Params};
use crate::ready_heap::{HeapKey, IndexedHeap};
use crate::units::Nanos;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "mclock",
    aliases: &["dmclock"],
    description: "mClock: reservations first, then weighted shares by P tags, limits held (or broken when idle with at_limit=allow).",
    source: "Gulati, Merchant & Varman, OSDI 2010 (mClock); dmClock",
    work_conserving: true,
    params: &[
        ParamSpec {
            name: "at_limit",
            default: "wait",
            description: "when every tenant with work is at its limit: `wait` (limits are hard) or `allow` (serve anyway)",
        },
        CHARGE_PARAM,
    ],
    build,
};

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    let at_limit = p.choice("at_limit", &[("wait", AtLimit::Wait), ("allow", AtLimit::Allow)])?;
    let charge = p.charge()?;
    Ok(Box::new(MClock::new(s, charge, at_limit)))
}

/// mClock's weight-based phase for one engine.
#[derive(Debug, Clone)]
pub struct MClock {
    charge: Charge,
    at_limit: AtLimit,
    weight: Vec<f64>,
    /// P tag of the tenant's last served task.
    served_tag: Vec<f64>,
    /// Ready tenants keyed by their head's P tag.
    ready: IndexedHeap,
    /// Largest smallest-ready-tag seen at a dispatch: the floor for tenants
    /// returning when nobody else is ready.
    virtual_time: f64,
}

impl MClock {
    /// mClock for `setup`'s tenants.
    pub fn new(setup: &PolicySetup<'_>, charge: Charge, at_limit: AtLimit) -> Self {
        let n = setup.tenants.len();
        MClock {
            charge,
            at_limit,
            weight: setup.tenants.iter().map(|t| t.weight).collect(),
            served_tag: vec![0.0; n],
            ready: IndexedHeap::new(n),
            virtual_time: 0.0,
        }
    }

    fn next_tag(&self, tenant: usize, head: &HeadInfo) -> f64 {
        self.served_tag[tenant] + self.charge.amount(head) / self.weight[tenant]
    }
}

impl Policy for MClock {
    fn on_ready(&mut self, _: Nanos, tenant: usize, head: &HeadInfo, _: &PolicyContext<'_>) {
        // Floored at the tag last served (mClock's "current time" in tag
        // units), not at the smallest tag now ready: that one was charged
        // already for the task in service, and a tenant returning from idle
        // would tie with (and queue behind) a backlogged tenant's next task.
        let tag = self.next_tag(tenant, head).max(self.virtual_time);
        self.ready.set(tenant, HeapKey::new(tag, head.seq));
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
        self.virtual_time = self
            .ready
            .min_tag()
            .map_or(self.virtual_time, |t| self.virtual_time.max(t));
        self.served_tag[tenant] = match self.ready.key(tenant) {
            Some(k) => k.tag(),
            // Served without being ready (at-limit allow): charge it all the same.
            None => self.next_tag(tenant, served),
        };
        match next {
            Some(h) => {
                let tag = self.next_tag(tenant, h);
                self.ready.set(tenant, HeapKey::new(tag, h.seq));
            }
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
        // The P tag advanced by the prediction at dispatch; it is corrected
        // by what the task really took (see `Charge::correction`).
        let owed = self.charge.correction(served, measured) / self.weight[tenant];
        if owed == 0.0 {
            return;
        }
        self.served_tag[tenant] += owed;
        if let Some(key) = self.ready.key(tenant) {
            self.ready.set(tenant, HeapKey::new(key.tag() + owed, key.tie()));
        }
    }

    fn at_limit(&self) -> AtLimit {
        self.at_limit
    }
}
