//! MTDA as it was before issue 17, kept as the reference the incremental
//! implementation ([`super::Mtda`]) is tested and benchmarked against
//! (`next_ref/mtda/N` in `benches/scheduler_next.rs`).
//!
//! Each reallocation (Algorithm 1) builds eq. 7's inputs and computes every
//! tenant's credits; each traversal (Algorithm 2) copies every channel's
//! request count and then visits the tenants one at a time. The rule is the
//! module's ([`super`]); only the bookkeeping differs.

use super::{allot_cores, credit_allocation, usable, Allot, Config, Requests};
use crate::policy::registry::{PolicyInfo, PolicySetup};
use crate::policy::{HeadInfo, Params, Policy, PolicyContext, PolicyError};
use crate::units::Nanos;

/// Registry entry, for registering with
/// [`crate::SchedulerBuilder::register_policy`]; not in [`crate::POLICIES`].
pub const INFO: PolicyInfo = PolicyInfo {
    name: "mtda_reference",
    description: "MTDA computing eq. 7 for every tenant at each reallocation (the pre-issue-17 implementation; reference for tests and benchmarks).",
    build,
    ..super::INFO
};

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    let c = Config::parse(p, s)?;
    Ok(Box::new(
        ReferenceMtda::new(s, c.period, c.credits, c.cores)
            .counting(c.requests)
            .allotting(c.allot),
    ))
}

/// MTDA as first written: every reallocation computes eq. 7 for every
/// tenant, every traversal walks the tenants one by one.
#[derive(Debug, Clone)]
pub struct ReferenceMtda {
    requests: Requests,
    allot: Allot,
    /// Slots each tenant may hold at once (`Allot::Cores`; else unbounded).
    cap: Vec<u32>,
    period: Nanos,
    total: f64,
    cores: f64,
    /// Tenants' weights (their core allotment `CM_i` is their share).
    weights: Vec<f64>,
    /// Last allocation (`credit` in Algorithm 1).
    credit: Vec<f64>,
    /// Credits left (`currentCredit`).
    current: Vec<f64>,
    ready: Vec<bool>,
    /// Requests each tenant may still dispatch in this traversal (`req[i]`).
    snapshot: Vec<u64>,
    /// The traversal visits tenants `start, start + 1, ...` (mod n); `step`
    /// of them have had their turn.
    start: usize,
    step: usize,
    started: bool,
    period_end: Nanos,
    /// Dispatches in this credit period.
    dispatched: Vec<u64>,
    reallocations: u64,
}

impl ReferenceMtda {
    /// MTDA for `setup`'s tenants: credit period `period` ns, `total`
    /// credits (CREDIT), `cores` processors (CM).
    pub fn new(setup: &PolicySetup<'_>, period: Nanos, total: f64, cores: f64) -> Self {
        let n = setup.tenants.len();
        ReferenceMtda {
            requests: Requests::Period,
            allot: Allot::Time,
            cap: vec![u32::MAX; n],
            period,
            total,
            cores,
            weights: setup.tenants.iter().map(|t| t.weight).collect(),
            credit: vec![0.0; n],
            current: vec![0.0; n],
            ready: vec![false; n],
            snapshot: vec![0; n],
            start: 0,
            step: n,
            started: false,
            period_end: 0,
            dispatched: vec![0; n],
            reallocations: 0,
        }
    }

    /// This policy with eq. 7's `Req_i` counting `requests`.
    pub fn counting(mut self, requests: Requests) -> Self {
        self.requests = requests;
        self
    }

    /// This policy with its credits buying `allot`.
    pub fn allotting(mut self, allot: Allot) -> Self {
        self.allot = allot;
        self
    }

    /// Slots each tenant may hold at once (`u32::MAX`: no cap).
    pub fn caps(&self) -> &[u32] {
        &self.cap
    }

    /// `Allot::Cores`: each tenant with requests gets its credit share of
    /// `slots`, largest remainders first, at least one.
    fn allot_cores(&mut self, req: &[f64], slots: u32) {
        allot_cores(&self.credit, req, slots, &mut self.cap);
    }

    /// Whether tenant `i` may take a slot now: ready, with requests left in
    /// this traversal, and under its cap.
    fn eligible(&self, i: usize, cx: &PolicyContext<'_>) -> bool {
        self.ready[i] && self.snapshot[i] > 0 && cx.in_flight[i] < self.cap[i]
    }

    /// The last allocation (eq. 7), per tenant.
    pub fn credits(&self) -> &[f64] {
        &self.credit
    }

    /// Credits left, per tenant.
    pub fn current(&self) -> &[f64] {
        &self.current
    }

    /// Reallocations so far (Algorithm 1, EXHAUSTED, and the first one).
    pub fn reallocations(&self) -> u64 {
        self.reallocations
    }

    /// EXPIRED: every credit period that ended by `now` renews the credits.
    /// The first hook starts the first period.
    fn roll(&mut self, now: Nanos) {
        if !self.started {
            self.started = true;
            self.period_end = now.saturating_add(self.period);
            return;
        }
        if now < self.period_end {
            return;
        }
        let ended = (now - self.period_end) / self.period + 1;
        self.period_end = self.period_end.saturating_add(ended.saturating_mul(self.period));
        self.dispatched.iter_mut().for_each(|d| *d = 0);
        self.current.clone_from(&self.credit);
    }

    /// Algorithm 1, EXHAUSTED (and the first allocation): eq. 7 from what
    /// was observed in this credit period.
    fn reallocate(&mut self, cx: &PolicyContext<'_>) {
        let req: Vec<f64> = (0..self.credit.len())
            .map(|i| match self.requests {
                Requests::Period => (self.dispatched[i] + cx.queued[i]) as f64,
                Requests::Queued => cx.queued[i] as f64,
            })
            .collect();
        let acc: Vec<f64> = req.iter().map(|&r| if r > 0.0 { 1.0 } else { 0.0 }).collect();
        let active_weight: f64 = (0..acc.len())
            .filter(|&i| acc[i] > 0.0)
            .map(|i| self.weights[i])
            .sum();
        let cm: Vec<f64> = (0..acc.len())
            .map(|i| {
                if acc[i] > 0.0 {
                    self.weights[i] * self.cores / active_weight
                } else {
                    0.0
                }
            })
            .collect();
        self.credit = credit_allocation(&req, &acc, &cm, 1.0, self.cores, self.total);
        // Eq. 7 overflows for hundreds of cores (e^CM): a tenant left with
        // no finite positive credit may still dispatch one request.
        for c in &mut self.credit {
            *c = usable(*c);
        }
        self.current.clone_from(&self.credit);
        if self.allot == Allot::Cores {
            self.allot_cores(&req, cx.slots);
        }
        self.reallocations += 1;
    }

    /// Begins a traversal at tenant `start` with the channels' request counts.
    fn begin_traversal(&mut self, start: usize, cx: &PolicyContext<'_>) {
        self.start = start % self.snapshot.len();
        self.step = 0;
        self.snapshot.copy_from_slice(cx.queued);
    }
}

impl Policy for ReferenceMtda {
    fn on_ready(&mut self, now: Nanos, tenant: usize, _: &HeadInfo, _: &PolicyContext<'_>) {
        self.roll(now);
        self.ready[tenant] = true;
    }

    fn pick(&mut self, now: Nanos, cx: &PolicyContext<'_>) -> Option<usize> {
        self.roll(now);
        if self.reallocations == 0 {
            // The first allocation, when scheduling begins.
            self.reallocate(cx);
        }
        let n = self.snapshot.len();
        if self.allot == Allot::Cores && !(0..n).any(|i| self.ready[i] && cx.in_flight[i] < self.cap[i]) {
            // Every tenant with work holds its share of the slots.
            return None;
        }
        // At most: finish this traversal, a fresh one up to an exhausted
        // tenant, and a fresh one after the reallocation.
        for _ in 0..=3 * (n + 1) {
            if self.step >= n {
                let next = self.start + n;
                self.begin_traversal(next, cx);
                if !self.ready.iter().any(|&r| r) {
                    return None;
                }
            }
            let i = (self.start + self.step) % n;
            if self.eligible(i, cx) {
                if self.current[i] > 0.0 {
                    return Some(i);
                }
                // EXHAUSTED: reallocate, then the next round.
                self.reallocate(cx);
                self.begin_traversal(i + 1, cx);
                continue;
            }
            self.step += 1;
        }
        debug_assert!(
            self.allot == Allot::Cores,
            "mtda: no pick although a tenant is ready"
        );
        None
    }

    fn on_dispatch(
        &mut self,
        now: Nanos,
        tenant: usize,
        _: &HeadInfo,
        next: Option<&HeadInfo>,
        _: &PolicyContext<'_>,
    ) {
        self.roll(now);
        self.current[tenant] -= 1.0;
        self.snapshot[tenant] = self.snapshot[tenant].saturating_sub(1);
        self.dispatched[tenant] += 1;
        self.ready[tenant] = next.is_some();
    }

    fn on_complete(&mut self, now: Nanos, _: usize, _: &HeadInfo, _: Nanos, _: &PolicyContext<'_>) {
        self.roll(now);
    }
}
