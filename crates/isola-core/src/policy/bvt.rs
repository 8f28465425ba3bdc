//! Borrowed virtual time (Duda and Cheriton, SOSP 1999), non-preemptive.
//!
//! Each tenant has an actual virtual time `A`, advanced by the service it
//! receives divided by its weight: by the predicted cost when a task is
//! dispatched, corrected by `measured - predicted` when it completes, so the
//! scheduler neither waits for completions nor trusts predictions. The ready
//! tenant with the smallest effective virtual time `E = A - warp` goes next
//! (ties: the older head); latency-sensitive tenants get the `warp`, which lets
//! them borrow ahead of their share. A tenant that becomes ready after idling
//! is brought up to the scheduler virtual time `SVT` (the smallest `A` among
//! ready tenants), `A = max(A, SVT)`, so idling earns no credit.
//!
//! Left out, because tasks run to completion: the context-switch allowance
//! and the warp time limit that bound preemption in the paper.

use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{HeadInfo, Policy, PolicyContext};
use crate::params::{ParamSpec, Params};
use crate::ready_heap::{HeapKey, IndexedHeap};
use crate::tenant::TenantClass;
use crate::units::Nanos;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "bvt",
    aliases: &[],
    description: "Borrowed virtual time: least weighted measured service first; latency-sensitive tenants may warp ahead.",
    source: "Duda & Cheriton, SOSP 1999",
    work_conserving: true,
    params: &[ParamSpec {
        name: "warp",
        default: "0",
        description: "virtual time (ns of weighted service) latency-sensitive tenants borrow ahead",
    }],
    build,
};

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    let warp = p.f64_at_least("warp", 0.0)?;
    Ok(Box::new(BorrowedVirtualTime::new(s, warp)))
}

/// BVT state for one engine.
#[derive(Debug, Clone)]
pub struct BorrowedVirtualTime {
    weight: Vec<f64>,
    warp: Vec<f64>,
    actual: Vec<f64>,
    head_seq: Vec<u64>,
    /// Ready tenants by effective virtual time.
    by_effective: IndexedHeap,
    /// Ready tenants by actual virtual time (for SVT); `None` when no tenant
    /// warps, as `by_effective` then holds the same keys.
    by_actual: Option<IndexedHeap>,
    svt: f64,
}

impl BorrowedVirtualTime {
    /// BVT for `setup`'s tenants; latency-sensitive ones warp by `warp`.
    pub fn new(setup: &PolicySetup<'_>, warp: f64) -> Self {
        let n = setup.tenants.len();
        let warp: Vec<f64> = setup
            .tenants
            .iter()
            .map(|t| {
                if t.class == TenantClass::LatencySensitive {
                    warp
                } else {
                    0.0
                }
            })
            .collect();
        BorrowedVirtualTime {
            weight: setup.tenants.iter().map(|t| t.weight).collect(),
            by_actual: warp.iter().any(|&w| w != 0.0).then(|| IndexedHeap::new(n)),
            warp,
            actual: vec![0.0; n],
            head_seq: vec![0; n],
            by_effective: IndexedHeap::new(n),
            svt: 0.0,
        }
    }

    /// (Re)inserts ready tenant `t` with its current virtual times.
    fn key(&mut self, t: usize) {
        let seq = self.head_seq[t];
        self.by_effective
            .set(t, HeapKey::new(self.actual[t] - self.warp[t], seq));
        if let Some(h) = &mut self.by_actual {
            h.set(t, HeapKey::new(self.actual[t], seq));
        }
    }

    /// The smallest actual virtual time among ready tenants.
    fn min_actual(&self) -> Option<f64> {
        self.by_actual.as_ref().unwrap_or(&self.by_effective).min_tag()
    }

    /// Whether ready tenant `t` is keyed.
    fn is_ready(&self, t: usize) -> bool {
        self.by_effective.contains(t)
    }
}

impl Policy for BorrowedVirtualTime {
    fn on_ready(&mut self, _: Nanos, tenant: usize, head: &HeadInfo, _: &PolicyContext<'_>) {
        let svt = self.min_actual().unwrap_or(self.svt);
        self.actual[tenant] = self.actual[tenant].max(svt);
        self.head_seq[tenant] = head.seq;
        self.key(tenant);
    }

    fn pick(&mut self, _: Nanos, _: &PolicyContext<'_>) -> Option<usize> {
        self.by_effective.peek().map(|(t, _)| t)
    }

    fn on_dispatch(
        &mut self,
        _: Nanos,
        tenant: usize,
        served: &HeadInfo,
        next: Option<&HeadInfo>,
        _: &PolicyContext<'_>,
    ) {
        self.svt = self.min_actual().map_or(self.svt, |t| self.svt.max(t));
        self.actual[tenant] += served.cost as f64 / self.weight[tenant];
        match next {
            Some(h) => {
                self.head_seq[tenant] = h.seq;
                self.key(tenant);
            }
            None => {
                if let Some(h) = &mut self.by_actual {
                    h.remove(tenant);
                }
                self.by_effective.remove(tenant);
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
        self.actual[tenant] += (measured as f64 - served.cost as f64) / self.weight[tenant];
        if self.is_ready(tenant) {
            self.key(tenant);
        }
    }
}
