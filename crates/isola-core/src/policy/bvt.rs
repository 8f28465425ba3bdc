//! Borrowed virtual time (Duda and Cheriton, SOSP 1999), non-preemptive.
//!
//! Each tenant has an actual virtual time `A`, advanced by the service it
//! receives divided by its weight: by the predicted cost when a task is
//! dispatched, corrected by `measured - predicted` when it completes, so the
//! scheduler neither waits for completions nor trusts predictions. The ready
//! tenant with the smallest effective virtual time `E = A - warp` goes next
//! (ties: the older head); latency-sensitive tenants get the `warp`, which lets
//! them borrow ahead of their share. A tenant that becomes ready after idling
//! is brought up to the scheduler virtual time `SVT`, `A = max(A, SVT)`, so
//! idling earns no credit. `SVT` is the smallest `A` among ready tenants as
//! it stood at the last dispatch, before that dispatch was charged: the
//! paper's running thread advances its `A` as it runs, so a thread that
//! wakes meanwhile finds `SVT` below the running thread's end; here the
//! whole predicted cost is charged at dispatch, and taking `SVT` after it
//! would put a tenant returning from idle level with (and, on the tie,
//! behind) a backlogged tenant whose task is still running.
//!
//! Left out, because tasks run to completion: the context-switch allowance
//! and the warp time limit that bound preemption in the paper.

use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{Charge, HeadInfo, Policy, PolicyContext};
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
        self.actual[tenant] = self.actual[tenant].max(self.svt);
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
        self.actual[tenant] += Charge::Cost.correction(served, measured) / self.weight[tenant];
        if self.is_ready(tenant) {
            self.key(tenant);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::TenantShare;
    use proptest::prelude::*;

    /// BVT's rule with every minimum found by scanning the ready tenants:
    /// the reference for the heaps (one when no tenant warps, two otherwise).
    struct Scan {
        weight: Vec<f64>,
        warp: Vec<f64>,
        actual: Vec<f64>,
        /// Head sequence number of each ready tenant.
        ready: Vec<Option<u64>>,
        svt: f64,
    }

    impl Scan {
        fn min_actual(&self) -> Option<f64> {
            self.ready
                .iter()
                .zip(&self.actual)
                .filter_map(|(r, &a)| r.map(|_| a))
                .min_by(f64::total_cmp)
        }

        fn pick(&self) -> Option<usize> {
            (0..self.ready.len())
                .filter_map(|t| self.ready[t].map(|s| (t, HeapKey::new(self.actual[t] - self.warp[t], s))))
                .min_by(|a, b| a.1.tag().total_cmp(&b.1.tag()).then(a.1.tie().cmp(&b.1.tie())))
                .map(|(t, _)| t)
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// A tenant that is not ready becomes ready.
        Ready(usize),
        /// The policy's pick is dispatched; it stays ready if `true`.
        Dispatch(bool, u16),
        /// The oldest dispatch in service completes after `measured` ns.
        Complete(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0usize..12).prop_map(Op::Ready),
            (any::<bool>(), 1u16..5000).prop_map(|(s, c)| Op::Dispatch(s, c)),
            (1u16..5000).prop_map(Op::Complete),
        ]
    }

    fn head(seq: u64, cost: u16) -> HeadInfo {
        HeadInfo {
            seq,
            arrival: 0,
            bytes: cost as u64,
            cost: cost as Nanos,
            remaining_cost: cost as Nanos,
            task_cost: cost as Nanos,
            deadline: None,
        }
    }

    proptest! {
        /// With and without warping tenants, the heaps pick what a scan of
        /// the ready tenants picks, after any sequence of events.
        #[test]
        fn heaps_pick_what_a_scan_picks(
            classes in prop::collection::vec((1u8..5, any::<bool>()), 12),
            warp in prop::sample::select(vec![0.0, 500.0, 3000.0]),
            ops in prop::collection::vec(op(), 0..300),
        ) {
            let shares: Vec<TenantShare> = classes
                .iter()
                .map(|&(w, ls)| TenantShare {
                    weight: w as f64 / 2.0,
                    class: if ls { TenantClass::LatencySensitive } else { TenantClass::BestEffort },
                    latency: None,
                })
                .collect();
            let n = shares.len();
            let mut bvt = BorrowedVirtualTime::new(&PolicySetup { tenants: &shares, slots: 1 }, warp);
            prop_assert_eq!(bvt.by_actual.is_some(), warp > 0.0 && classes.iter().any(|c| c.1));
            let mut scan = Scan {
                weight: shares.iter().map(|s| s.weight).collect(),
                warp: bvt.warp.clone(),
                actual: vec![0.0; n],
                ready: vec![None; n],
                svt: 0.0,
            };
            let (in_flight, queued) = (vec![0; n], vec![0; n]);
            let cx = PolicyContext { tenants: &shares, slots: 1, in_flight: &in_flight, queued: &queued };
            let mut seq = 0u64;
            let mut service: std::collections::VecDeque<(usize, HeadInfo)> = Default::default();
            for o in ops {
                match o {
                    Op::Ready(t) if scan.ready[t].is_none() => {
                        seq += 1;
                        bvt.on_ready(0, t, &head(seq, 1000), &cx);
                        scan.actual[t] = scan.actual[t].max(scan.svt);
                        scan.ready[t] = Some(seq);
                    }
                    Op::Ready(_) => {}
                    Op::Dispatch(stays, cost) => {
                        let t = bvt.pick(0, &cx);
                        prop_assert_eq!(t, scan.pick());
                        let Some(t) = t else { continue };
                        let served = head(scan.ready[t].expect("picked a ready tenant"), cost);
                        seq += 1;
                        let next = stays.then(|| head(seq, 1000));
                        bvt.on_dispatch(0, t, &served, next.as_ref(), &cx);
                        scan.svt = scan.min_actual().map_or(scan.svt, |m| scan.svt.max(m));
                        scan.actual[t] += served.cost as f64 / scan.weight[t];
                        scan.ready[t] = next.map(|h| h.seq);
                        service.push_back((t, served));
                    }
                    Op::Complete(measured) => {
                        let Some((t, served)) = service.pop_front() else { continue };
                        bvt.on_complete(0, t, &served, measured as Nanos, &cx);
                        scan.actual[t] += (measured as f64 - served.cost as f64) / scan.weight[t];
                    }
                }
            }
            prop_assert_eq!(bvt.pick(0, &cx), scan.pick());
        }
    }
}
