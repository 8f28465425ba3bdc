//! ASTRAEA's ready tenants kept in their order of service (issue 17), so a
//! decision reads the heads of a few heaps instead of scanning every tenant.
//!
//! The order ([`super::reference::scan`]): with pool left, by class rank,
//! then tenants within their own budget before those drawing on the pool,
//! each by the fraction of its budget used; with the pool spent, tenants
//! within their budget by class and fraction as before, then every other
//! ready tenant by service per weight; ties to the older head. A tenant's
//! key changes only when one of its own hooks changes it (readiness, head,
//! `used`), or for everyone when a period starts (budgets, `used` reset);
//! the pool only decides which heaps are read. So each heap holds the
//! ready tenants of one kind keyed by the very `f64` the scan compares
//! ([`HeapKey`] orders tags as `f64::total_cmp` does), with the head's
//! sequence number as the tie; sequence numbers are unique among ready
//! tenants (one per task), so the heaps' order is the scan's exactly.

use super::Tenant;
use crate::ready_heap::{HeapKey, IndexedHeap};

/// The ready tenants, filed by kind (see the module documentation).
#[derive(Debug, Clone)]
pub(super) struct ReadyIndex {
    /// Within their own budget, per class rank (latency-sensitive first):
    /// by `used / budget`.
    own: [IndexedHeap; 2],
    /// Past their budget, per class rank: by `used / max(budget, MIN_POSITIVE)`
    /// (the order while the pool lasts).
    over: [IndexedHeap; 2],
    /// Past their budget, every class: by `used / weight` (the fair order
    /// once the pool is spent).
    fair: IndexedHeap,
}

impl ReadyIndex {
    /// An empty index for `n` tenants.
    pub(super) fn new(n: usize) -> Self {
        ReadyIndex {
            own: [IndexedHeap::new(n), IndexedHeap::new(n)],
            over: [IndexedHeap::new(n), IndexedHeap::new(n)],
            fair: IndexedHeap::new(n),
        }
    }

    /// Files tenant `i` by its state `t`: out of the index if it is not
    /// ready, else in the heaps of its kind with its current keys. A
    /// tenant's class is fixed for the policy's life (a new SLO builds a
    /// new policy), so it is only ever in its own rank's heaps.
    pub(super) fn place(&mut self, i: usize, t: &Tenant) {
        let rank = usize::from(!t.latency_sensitive);
        if !t.ready {
            self.own[rank].remove(i);
            self.over[rank].remove(i);
            self.fair.remove(i);
        } else if t.used < t.budget {
            self.own[rank].set(i, HeapKey::new(t.used / t.budget, t.head_seq));
            self.over[rank].remove(i);
            self.fair.remove(i);
        } else {
            self.own[rank].remove(i);
            let over = t.used / t.budget.max(f64::MIN_POSITIVE);
            self.over[rank].set(i, HeapKey::new(over, t.head_seq));
            self.fair.set(i, HeapKey::new(t.used / t.weight, t.head_seq));
        }
    }

    /// The ready tenant first in the order of service with `pool` left.
    pub(super) fn pick(&self, pool: f64) -> Option<usize> {
        let first = |heap: &IndexedHeap| heap.peek().map(|(i, _)| i);
        if pool > 0.0 {
            (0..2).find_map(|rank| first(&self.own[rank]).or_else(|| first(&self.over[rank])))
        } else {
            first(&self.own[0])
                .or_else(|| first(&self.own[1]))
                .or_else(|| first(&self.fair))
        }
    }
}
