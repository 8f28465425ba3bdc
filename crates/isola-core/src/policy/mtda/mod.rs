//! MTDA's credit model and traffic-aware fair scheduling (Huang et al., IEEE
//! TSC 2024, §III-C and §III-D: eq. 7, Algorithms 1 and 2).
//!
//! Credits abstract the engine's capacity. Tenant `i` is allocated (eq. 7)
//!
//! ```text
//! Credit_i = (e^(sum_t ACC_t^i) x e^(CM_i) + Req_i) / (e^(sum_t ACC_t) x e^(CM) + sum_j Req_j) x CREDIT
//! ```
//!
//! and each request it dispatches spends one credit (Algorithm 2, steps 5-6).
//! Algorithm 2 traverses the tenants' virtual channels in order; a tenant's
//! turn dispatches its pending requests while it has credits. When a tenant
//! with pending requests has none left (EXHAUSTED), Algorithm 1 reallocates
//! every tenant's credits by eq. 7 from the current request counts,
//! accelerator dependencies and core occupancy (`currentCredit = credit =
//! eq. 7`), and the next scheduling round begins. When the credit period ends
//! (EXPIRED), Algorithm 1 renews every tenant's credits to its last
//! allocation (`currentCredit = credit`), without recomputing them.
//!
//! The paper's terms, as one engine's policy observes them:
//! * `Req_i`: requests of tenant `i`'s virtual channel in the current credit
//!   period: those dispatched since the period began plus those still queued
//!   (one per dispatch: a fragmented task counts once per fragment); with
//!   `requests = "queued"`, only those queued now ([`Requests`]).
//! * `CM_i`, the tenant's "multicore processor occupancy": the cores it is
//!   allotted, its weighted share of `cores` among the tenants with
//!   requests in the period (`w_i x CM / sum w`). Algorithm 2 takes
//!   `core[N]` as an input beside `acc[N][M]`, an allotment rather than a
//!   measurement; measuring occupancy instead puts what a tenant already
//!   holds in the exponent of eq. 7, so the tenant with the costliest
//!   requests earns exponentially more credits and holds ever more cores
//!   (tried first: it gave one of four equal-rate tenants 91% of the cores).
//!   `CM` is `cores`, by default the engine's slots (the paper's "quantity
//!   of programmable processors"), so `sum CM_i <= CM` as in constraint (5).
//! * `ACC_t^i`: each policy instance serves one engine, so `M = 1`:
//!   `ACC^i = 1` when tenant `i` has requests for this engine in the period
//!   (it relies on it), else 0, and the denominator's `sum_t ACC_t = M = 1`.
//! * `CREDIT`: the parameter `credits`, by default 300 per slot (Xen's credit
//!   scheduler, which the paper builds on, hands out 300 credits per CPU per
//!   30 ms accounting period); `period`, the credit period, defaults to those
//!   30 ms.
//!
//! Choices where the paper is ambiguous:
//! * Eq. 7 is applied literally: the credits need not add up to `CREDIT`
//!   (the denominator is not the sum of the numerators).
//! * A tenant may dispatch while its current credit is above zero, so a
//!   fractional credit buys one request (Algorithm 2, step 3, on real
//!   numbers); every tenant with requests gets a positive credit from eq. 7,
//!   so a reallocation always lets some ready tenant go: the policy is
//!   work-conserving.
//! * Algorithm 2 takes `req[N]` as input: a traversal serves, per tenant, at
//!   most the requests its channel held when the traversal began (a
//!   snapshot), which keeps a tenant whose credits keep being renewed from
//!   holding the engine forever. A traversal that visits every tenant begins
//!   the next one.
//! * "Continue the next scheduling round" after an exhaustion: the next
//!   traversal begins with the tenant after the exhausted one. Beginning
//!   again at tenant 1, as a literal `return` into a fresh `for i = 1..N`
//!   would, lets tenant 1 starve the others whenever it exhausts.
//! * A tenant held back by its rate limit (not ready) is skipped by the
//!   traversal; EXPIRED is checked before EXHAUSTED, as in Algorithm 1.
//! * Periods are rolled forward lazily at each hook: renewal only changes
//!   which requests may go, and decisions are only taken at hooks.
//! * What credits buy: turns on every slot by default; with `allot =
//!   "cores"` also a cap on the slots a tenant holds ([`Allot`]).

use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{HeadInfo, Policy, PolicyContext};
use crate::params::{ParamSpec, Params};
use crate::units::Nanos;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "period",
        default: "30000000",
        description: "credit period (ns): when it ends, credits are renewed to the last allocation (EXPIRED, Algorithm 1)",
    },
    ParamSpec {
        name: "credits",
        default: "auto",
        description: "CREDIT of eq. 7, the total amount of credits; `auto` = 300 per slot",
    },
    ParamSpec {
        name: "requests",
        default: "period",
        description: "Req_i of eq. 7: `period` = requests dispatched in the credit period plus those queued, `queued` = those in the virtual channel now (Algorithm 2's req[N])",
    },
    ParamSpec {
        name: "allot",
        default: "time",
        description: "what the credits buy: `time` = turns on every slot (each request one credit), `cores` = also a cap on the tenant's slots in use, its credit share of them, reset at each reallocation (§III-C: \"we allocate certain amounts of cores to each tenant\")",
    },
    ParamSpec {
        name: "cores",
        default: "auto",
        description: "CM of eq. 7, the processors the credits abstract (each tenant's CM_i is its weighted allotment of them); `auto` = the engine's slots",
    },
];

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "mtda",
    aliases: &[],
    description: "MTDA: credits per eq. 7 from requests, accelerator dependency and core occupancy; reallocated when a tenant exhausts them, renewed when the credit period expires.",
    source: "MTDA (Huang et al., IEEE TSC 2024, eq. 7, Algorithms 1-2)",
    work_conserving: true,
    params: PARAMS,
    build,
};

/// The policy's parameters, as read from a scenario.
#[derive(Debug, Clone, Copy)]
struct Config {
    period: Nanos,
    credits: f64,
    cores: f64,
    requests: Requests,
    allot: Allot,
}

impl Config {
    fn parse(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Self, PolicyError> {
        Ok(Config {
            period: p.u64_in("period", 1..=u64::MAX / 2)?,
            credits: p.auto_or_positive("credits")?.unwrap_or(300.0 * s.slots as f64),
            cores: p.auto_or_positive("cores")?.unwrap_or(s.slots as f64),
            requests: p.choice(
                "requests",
                &[("period", Requests::Period), ("queued", Requests::Queued)],
            )?,
            allot: p.choice("allot", &[("time", Allot::Time), ("cores", Allot::Cores)])?,
        })
    }
}

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    let c = Config::parse(p, s)?;
    Ok(Box::new(
        Mtda::new(s, c.period, c.credits, c.cores)
            .counting(c.requests)
            .allotting(c.allot),
    ))
}

/// Eq. 7 for every tenant: `req[i]` requests, `acc[i]` = sum over
/// accelerators of tenant `i`'s dependencies, `cm[i]` its core occupancy;
/// `accelerators` = M (the denominator's `sum_t ACC_t`), `cores` = CM,
/// `total` = CREDIT.
pub fn credit_allocation(
    req: &[f64],
    acc: &[f64],
    cm: &[f64],
    accelerators: f64,
    cores: f64,
    total: f64,
) -> Vec<f64> {
    let denominator = exp_product(accelerators, cores) + req.iter().sum::<f64>();
    (0..req.len())
        .map(|i| credit_share(exp_product(acc[i], cm[i]), req[i], denominator, total))
        .collect()
}

/// `e^a x e^b`, the exponential factor of eq. 7's numerators and
/// denominator. One out-of-line function, so that every caller gets the same
/// bits for the same inputs (no call site folds a constant argument
/// differently).
#[inline(never)]
fn exp_product(a: f64, b: f64) -> f64 {
    a.exp() * b.exp()
}

/// One tenant's credits by eq. 7: `(factor + req) / denominator x total`.
#[inline]
fn credit_share(factor: f64, req: f64, denominator: f64, total: f64) -> f64 {
    (factor + req) / denominator * total
}

/// Eq. 7 overflows for hundreds of cores (e^CM): a tenant left with no
/// finite positive credit may still dispatch one request.
#[inline]
fn usable(credit: f64) -> f64 {
    if credit.is_finite() && credit > 0.0 {
        credit
    } else {
        f64::MIN_POSITIVE
    }
}

/// `Allot::Cores`: each tenant with requests (`req[i] > 0`) gets its credit
/// share of `slots` in `cap`, largest remainders first, at least one; the
/// others one.
fn allot_cores(credit: &[f64], req: &[f64], slots: u32, cap: &mut [u32]) {
    let active: Vec<usize> = (0..req.len()).filter(|&i| req[i] > 0.0).collect();
    let total: f64 = active.iter().map(|&i| credit[i]).sum();
    cap.iter_mut().for_each(|c| *c = 1);
    if active.is_empty() || !(total.is_finite() && total > 0.0) {
        return;
    }
    let mut exact: Vec<(usize, f64)> = active
        .iter()
        .map(|&i| (i, slots as f64 * credit[i] / total))
        .collect();
    let mut given = 0u32;
    for &(i, x) in &exact {
        cap[i] = (x.floor() as u32).max(1);
        given += cap[i];
    }
    // The leftover slots, one each, largest remainder first (a stable sort:
    // ties keep the order of `active`).
    exact.sort_by(|a, b| (b.1 - b.1.floor()).total_cmp(&(a.1 - a.1.floor())));
    for &(i, _) in &exact {
        if given >= slots {
            break;
        }
        cap[i] += 1;
        given += 1;
    }
}

/// What `Req_i` of eq. 7 counts (the paper: "the number of requests from
/// Tenant_i's virtual channel").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requests {
    /// Those dispatched since the credit period began plus those queued:
    /// what the tenant asked of the engine in the period. It feeds back
    /// what a tenant was already served: a tenant that dispatched more in
    /// the period is allotted more at the next reallocation.
    Period,
    /// Those in the channel now (Algorithm 2's input `req[N]`, which its
    /// steps 2-5 count down as they dispatch).
    Queued,
}

/// What a tenant's credits buy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allot {
    /// Turns: while its credits last, a tenant's requests take every slot
    /// that frees (time division of the whole engine).
    Time,
    /// Turns as with `Time`, and at most its share of the slots at once:
    /// `slots x credit_i / sum credit_j` over the tenants with requests
    /// (largest remainders, at least one each), recomputed at each
    /// reallocation. §III-C: "if the available multicore processors can
    /// satisfy the tenant demands, we allocate certain amounts of cores to
    /// each tenant to avoid frequent context switching". A tenant at its
    /// share waits even when another's slot is idle (not work-conserving).
    Cores,
}

/// MTDA state for one engine.
///
/// What a decision costs: a reallocation reads every channel's request
/// count (eq. 7's `sum_j Req_j` and the next traversal's `req[N]`; the
/// scheduler reports submissions to a ready channel to no policy, so the
/// counts must be read) in one pass that copies and adds them, and computes
/// no tenant's credits: a tenant's are computed from its `Req_i`, still in
/// the traversal's snapshot, when the traversal reaches it
/// (`Mtda::settle`). The traversal skips tenants that are not ready with a
/// bit set, a word of 64 tenants at a time. Decisions are those of
/// [`reference::ReferenceMtda`], bit for bit: `sum_j Req_j` is added up in
/// integers, which is exact and equal to the floating-point sum the
/// reference forms while the total is below 2^53 (every partial sum is
/// then an integer a `f64` holds exactly; above, the reference's sum is
/// formed); `sum w` over the tenants with requests is formed as the
/// reference does, again whenever that set changes; the rest are the same
/// expressions on the same values.
#[derive(Debug, Clone)]
pub struct Mtda {
    requests: Requests,
    allot: Allot,
    /// Slots each tenant may hold at once (`Allot::Cores`; else unbounded).
    cap: Vec<u32>,
    period: Nanos,
    total: f64,
    cores: f64,
    /// Tenants' weights (their core allotment `CM_i` is their share).
    weights: Vec<f64>,
    /// `e^1 x e^CM`: eq. 7's denominator without the requests (`M = 1`).
    base: f64,
    /// `e^0 x e^0`: the factor of a tenant without requests.
    idle_factor: f64,
    /// `e^1 x e^(CM_i)` of each tenant with requests, for the set of such
    /// tenants of generation `factor_of[i]`.
    factor: Vec<f64>,
    factor_of: Vec<u64>,
    /// Tenants with requests at the last reallocation, how many had none,
    /// the sum of the weights of those with, and how many times that set
    /// changed.
    active: Bits,
    idle: usize,
    active_weight: f64,
    generation: u64,
    /// Eq. 7's denominator at the last reallocation.
    denominator: f64,
    /// Last allocation (`credit` in Algorithm 1), and credits left
    /// (`currentCredit`), of each tenant whose `settled` is the current
    /// reallocation (`settled_count` of them); the others' are computed when
    /// first needed.
    credit: Vec<f64>,
    current: Vec<f64>,
    settled: Vec<u64>,
    settled_count: usize,
    ready: Bits,
    /// Requests each tenant may still dispatch in this traversal
    /// (`req[i]`). An unsettled tenant's is its channel's count at the
    /// last reallocation: a tenant is settled before it dispatches and
    /// before a traversal copies the counts again.
    snapshot: Vec<u64>,
    /// The traversal visits tenants `start, start + 1, ...` (mod n); `step`
    /// of them have had their turn.
    start: usize,
    step: usize,
    started: bool,
    period_end: Nanos,
    /// Dispatches in this credit period, and their sum.
    dispatched: Vec<u64>,
    dispatched_total: u64,
    reallocations: u64,
}

impl Mtda {
    /// MTDA for `setup`'s tenants: credit period `period` ns, `total`
    /// credits (CREDIT), `cores` processors (CM).
    pub fn new(setup: &PolicySetup<'_>, period: Nanos, total: f64, cores: f64) -> Self {
        let n = setup.tenants.len();
        Mtda {
            requests: Requests::Period,
            allot: Allot::Time,
            cap: vec![u32::MAX; n],
            period,
            total,
            cores,
            weights: setup.tenants.iter().map(|t| t.weight).collect(),
            base: exp_product(1.0, cores),
            idle_factor: exp_product(0.0, 0.0),
            factor: vec![0.0; n],
            factor_of: vec![0; n],
            active: Bits::new(n),
            idle: usize::MAX,
            active_weight: 0.0,
            generation: 0,
            denominator: 1.0,
            credit: vec![0.0; n],
            current: vec![0.0; n],
            settled: vec![0; n],
            settled_count: n,
            ready: Bits::new(n),
            snapshot: vec![0; n],
            start: 0,
            step: n,
            started: false,
            period_end: 0,
            dispatched: vec![0; n],
            dispatched_total: 0,
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

    /// The last allocation (eq. 7), per tenant.
    pub fn credits(&self) -> Vec<f64> {
        (0..self.credit.len())
            .map(|i| self.credit_and_current(i).0)
            .collect()
    }

    /// Credits left, per tenant.
    pub fn current(&self) -> Vec<f64> {
        (0..self.credit.len())
            .map(|i| self.credit_and_current(i).1)
            .collect()
    }

    /// Reallocations so far (Algorithm 1, EXHAUSTED, and the first one).
    pub fn reallocations(&self) -> u64 {
        self.reallocations
    }

    /// Unsettled tenant `i`'s `Req_i` at the last reallocation.
    #[inline]
    fn requests_of(&self, i: usize) -> u64 {
        match self.requests {
            Requests::Period => self.snapshot[i] + self.dispatched[i],
            Requests::Queued => self.snapshot[i],
        }
    }

    /// Tenant `i`'s `e^(ACC_i) x e^(CM_i)` at the last reallocation, with
    /// `req` requests then.
    #[inline]
    fn factor(&self, i: usize, req: u64) -> f64 {
        if req == 0 {
            self.idle_factor
        } else if self.factor_of[i] == self.generation {
            self.factor[i]
        } else {
            exp_product(1.0, self.weights[i] * self.cores / self.active_weight)
        }
    }

    /// Tenant `i`'s allocation and credits left.
    fn credit_and_current(&self, i: usize) -> (f64, f64) {
        if self.settled[i] == self.reallocations {
            return (self.credit[i], self.current[i]);
        }
        let req = self.requests_of(i);
        let c = usable(credit_share(
            self.factor(i, req),
            req as f64,
            self.denominator,
            self.total,
        ));
        (c, c)
    }

    /// Brings tenant `i`'s credits up to the last reallocation: eq. 7 with
    /// its `Req_i` then, `currentCredit = credit`. Every hook that spends,
    /// renews or recounts a tenant's credits or requests settles it first.
    #[inline]
    fn settle(&mut self, i: usize) {
        if self.settled[i] == self.reallocations {
            return;
        }
        let req = self.requests_of(i);
        if req > 0 && self.factor_of[i] != self.generation {
            self.factor[i] = self.factor(i, req);
            self.factor_of[i] = self.generation;
        }
        let (c, _) = self.credit_and_current(i);
        self.credit[i] = c;
        self.current[i] = c;
        self.settled[i] = self.reallocations;
        self.settled_count += 1;
    }

    /// Settles every tenant (before what settling reads changes for all).
    fn settle_all(&mut self) {
        if self.settled_count < self.credit.len() {
            for i in 0..self.credit.len() {
                self.settle(i);
            }
        }
    }

    /// Whether tenant `i` may take a slot now: ready, with requests left in
    /// this traversal, and under its cap.
    #[inline]
    fn eligible(&self, i: usize, cx: &PolicyContext<'_>) -> bool {
        self.ready.get(i) && self.snapshot[i] > 0 && cx.in_flight[i] < self.cap[i]
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
        self.settle_all();
        self.dispatched.iter_mut().for_each(|d| *d = 0);
        self.dispatched_total = 0;
        self.current.clone_from(&self.credit);
    }

    /// Algorithm 1, EXHAUSTED (and the first allocation): eq. 7 from what
    /// was observed in this credit period, computed per tenant when needed;
    /// then a traversal begins at tenant `start` with these counts.
    fn reallocate(&mut self, start: usize, cx: &PolicyContext<'_>) {
        // Every tenant's credits are replaced: those not settled since the
        // last reallocation never will be.
        self.reallocations += 1;
        self.settled_count = 0;
        self.begin_traversal(start);
        // One pass: the counts copied, their sum, a bound on each, and the
        // tenants without requests.
        let dispatched = (self.requests == Requests::Period).then_some(&self.dispatched[..]);
        let Counts { queued, any, idle } = copy_and_count(&mut self.snapshot, cx.queued, dispatched);
        // The set of tenants with requests changed unless all had some
        // then and have some now.
        if idle != 0 || self.idle != 0 {
            let changed = match self.requests {
                Requests::Period => self
                    .active
                    .fill_with(|i| self.snapshot[i] + self.dispatched[i] > 0),
                Requests::Queued => self.active.fill_with(|i| self.snapshot[i] > 0),
            };
            if changed || self.reallocations == 1 {
                self.active_weight = self.active.iter().map(|i| self.weights[i]).sum();
                self.generation += 1;
            }
        }
        self.idle = idle;
        let dispatched = match self.requests {
            Requests::Period => self.dispatched_total,
            Requests::Queued => 0,
        };
        // Every count is at most `any`, so the sum did not wrap and is
        // below 2^53 if `n x any + dispatched` is.
        let n = self.snapshot.len() as u128;
        let exact = n * u128::from(any) + u128::from(dispatched) < 1 << 53;
        let requests = match queued.checked_add(dispatched) {
            Some(sum) if exact => sum as f64,
            _ => (0..self.snapshot.len())
                .map(|i| self.requests_of(i) as f64)
                .sum::<f64>(),
        };
        self.denominator = self.base + requests;
        if self.allot == Allot::Cores {
            self.settle_all();
            let req: Vec<f64> = (0..self.snapshot.len())
                .map(|i| self.requests_of(i) as f64)
                .collect();
            allot_cores(&self.credit, &req, cx.slots, &mut self.cap);
        }
    }

    /// Begins a traversal at tenant `start`; the caller copies the
    /// channels' request counts into the snapshot.
    fn begin_traversal(&mut self, start: usize) {
        self.start = start % self.snapshot.len();
        self.step = 0;
    }

    /// The traversal step of the next ready tenant at or after step `from`,
    /// or `n` if none is before the traversal's end.
    #[inline]
    fn next_ready(&self, from: usize) -> usize {
        let n = self.snapshot.len();
        if from >= n {
            return n;
        }
        // Steps `from..n` are tenants `p..n` then `0..wrap`.
        let p = (self.start + from) % n;
        let first = (n - p).min(n - from);
        if let Some(i) = self.ready.next(p, p + first) {
            return from + (i - p);
        }
        let wrap = n - from - first;
        match self.ready.next(0, wrap) {
            Some(i) => from + first + i,
            None => n,
        }
    }
}

impl Policy for Mtda {
    fn on_ready(&mut self, now: Nanos, tenant: usize, _: &HeadInfo, _: &PolicyContext<'_>) {
        self.roll(now);
        self.ready.set(tenant, true);
    }

    fn pick(&mut self, now: Nanos, cx: &PolicyContext<'_>) -> Option<usize> {
        self.roll(now);
        let n = self.snapshot.len();
        if n == 0 {
            return None;
        }
        if self.reallocations == 0 {
            // The first allocation, when scheduling begins. Its traversal
            // begins below, as a fresh one: the counts are copied again,
            // after the cap check (which may end this decision first).
            self.reallocate(0, cx);
            self.step = n;
        }
        if self.allot == Allot::Cores && !self.ready.iter().any(|i| cx.in_flight[i] < self.cap[i]) {
            // Every tenant with work holds its share of the slots.
            return None;
        }
        // The reference's bound on its loop, in turns: at most finish this
        // traversal, a fresh one up to an exhausted tenant, and a fresh one
        // after the reallocation. Tenants that are not ready are skipped
        // together, each counted as the turn it would have taken.
        let mut turns = 3 * (n + 1) + 1;
        while turns > 0 {
            turns -= 1;
            if self.step >= n {
                let next = self.start + n;
                // The counts are read again: settle the tenants first.
                self.settle_all();
                self.begin_traversal(next);
                self.snapshot.copy_from_slice(cx.queued);
                // No tenant ready: nothing to traverse.
                self.ready.next(0, n)?;
            }
            let i = (self.start + self.step) % n;
            if self.eligible(i, cx) {
                self.settle(i);
                if self.current[i] > 0.0 {
                    return Some(i);
                }
                // EXHAUSTED: reallocate, then the next round.
                self.reallocate(i + 1, cx);
                continue;
            }
            let skipped = self.next_ready(self.step + 1) - self.step - 1;
            if skipped > turns {
                self.step += 1 + turns;
                break;
            }
            turns -= skipped;
            self.step += 1 + skipped;
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
        self.settle(tenant);
        self.current[tenant] -= 1.0;
        self.snapshot[tenant] = self.snapshot[tenant].saturating_sub(1);
        self.dispatched[tenant] += 1;
        self.dispatched_total += 1;
        self.ready.set(tenant, next.is_some());
    }

    fn on_complete(&mut self, now: Nanos, _: usize, _: &HeadInfo, _: Nanos, _: &PolicyContext<'_>) {
        self.roll(now);
    }
}

mod bits;
mod counts;
pub mod reference;
#[cfg(test)]
mod tests;

use bits::Bits;
use counts::{copy_and_count, Counts};
