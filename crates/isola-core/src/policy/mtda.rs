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

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    let period = p.u64_in("period", 1..=u64::MAX / 2)?;
    let credits = p.auto_or_positive("credits")?.unwrap_or(300.0 * s.slots as f64);
    let cores = p.auto_or_positive("cores")?.unwrap_or(s.slots as f64);
    let requests = p.choice(
        "requests",
        &[("period", Requests::Period), ("queued", Requests::Queued)],
    )?;
    let allot = p.choice("allot", &[("time", Allot::Time), ("cores", Allot::Cores)])?;
    Ok(Box::new(
        Mtda::new(s, period, credits, cores)
            .counting(requests)
            .allotting(allot),
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
    let denominator = accelerators.exp() * cores.exp() + req.iter().sum::<f64>();
    (0..req.len())
        .map(|i| (acc[i].exp() * cm[i].exp() + req[i]) / denominator * total)
        .collect()
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
        let active: Vec<usize> = (0..req.len()).filter(|&i| req[i] > 0.0).collect();
        let total: f64 = active.iter().map(|&i| self.credit[i]).sum();
        self.cap.iter_mut().for_each(|c| *c = 1);
        if active.is_empty() || !(total.is_finite() && total > 0.0) {
            return;
        }
        let exact: Vec<(usize, f64)> = active
            .iter()
            .map(|&i| (i, slots as f64 * self.credit[i] / total))
            .collect();
        let mut given = 0u32;
        for &(i, x) in &exact {
            self.cap[i] = (x.floor() as u32).max(1);
            given += self.cap[i];
        }
        let mut by_remainder = exact.clone();
        by_remainder.sort_by(|a, b| (b.1 - b.1.floor()).total_cmp(&(a.1 - a.1.floor())));
        for &(i, _) in by_remainder.iter().cycle().take(active.len()) {
            if given >= slots {
                break;
            }
            self.cap[i] += 1;
            given += 1;
        }
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
            if !(c.is_finite() && *c > 0.0) {
                *c = f64::MIN_POSITIVE;
            }
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

impl Policy for Mtda {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineId, EngineKind};
    use crate::scheduler::Scheduler;

    use crate::tenant::Slo;

    #[test]
    fn eq_7_by_hand() {
        // Two tenants on an engine with 2 slots (CM = 2), M = 1:
        // numerators e^1 x e^1.5 + 30 = 42.1825 and e^1 x e^0.5 + 10 = 14.4817,
        // denominator e^1 x e^2 + 40 = 60.0855; CREDIT = 600.
        let c = credit_allocation(&[30.0, 10.0], &[1.0, 1.0], &[1.5, 0.5], 1.0, 2.0, 600.0);
        assert!((c[0] - 421.2236).abs() < 1e-3, "{c:?}");
        assert!((c[1] - 144.6101).abs() < 1e-3, "{c:?}");
        // A tenant with no request and no dependency still gets e^0 x e^0.
        let c = credit_allocation(&[0.0, 10.0], &[0.0, 1.0], &[0.0, 0.0], 1.0, 1.0, 100.0);
        assert!((c[0] - 100.0 / (std::f64::consts::E.powi(2) + 10.0)).abs() < 1e-9);
    }

    use crate::policy::test_support::submit;

    fn scheduler(tenants: usize, slots: u32, params: &[(&str, &str)]) -> Scheduler {
        let slos = vec![Slo::weighted(1.0); tenants];
        crate::policy::test_support::scheduler(
            "mtda",
            EngineKind::ProcessingUnits,
            slots,
            None,
            &slos,
            params,
        )
    }

    /// One slot, each task takes 1000 ns; the tenants served, in order.
    fn serve_one_slot(s: &mut Scheduler, dispatches: usize) -> Vec<usize> {
        let mut now = 0;
        let mut order = Vec::new();
        for _ in 0..dispatches {
            let Some(d) = s.next(now, EngineId(0)) else { break };
            now += 1_000;
            s.complete(now, d.id, 1_000).unwrap();
            order.push(d.task.tenant.index());
        }
        order
    }

    /// Lengths of the runs of equal tenants in `order`.
    fn runs(order: &[usize]) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        for &t in order {
            match out.last_mut() {
                Some((u, n)) if *u == t => *n += 1,
                _ => out.push((t, 1)),
            }
        }
        out
    }

    /// Tenant 0 queues 30 tasks and tenant 1 10, one slot, CREDIT = 10, a
    /// credit period longer than the run (no expiry). With `M = 1` and
    /// `CM = 1` the denominator is `e^2 + 40 = 47.389`; both tenants have
    /// requests, so each is allotted `CM_i = 0.5`:
    /// * t = 0: Req = (30, 10): credits (e^1.5 + 30, e^1.5 + 10) / 47.389
    ///   x 10 = (7.276, 3.056): tenant 0 dispatches 8 (the 8th from 0.276);
    /// * t = 8 us, tenant 0 exhausted: Req = (8 + 22, 0 + 10), the same
    ///   credits: tenant 1's turn, 4 requests (the 4th from 0.056);
    /// * and so on: Req stays (30, 10) while both have work.
    #[test]
    fn credits_follow_eq_7_and_are_reallocated_when_exhausted() {
        let mut s = scheduler(2, 1, &[("credits", "10"), ("period", "1000000000")]);
        let mut id = 0;
        for (t, n) in [(0, 30), (1, 10)] {
            for _ in 0..n {
                submit(&mut s, 0, id, t, 1_000);
                id += 1;
            }
        }
        let order = serve_one_slot(&mut s, 40);
        assert_eq!(runs(&order)[..5], [(0, 8), (1, 4), (0, 8), (1, 4), (0, 8)]);
        assert_eq!(order.len(), 40);
    }

    /// The same queues with `Req_i` read as the requests queued now
    /// (`requests = "queued"`): eq. 7 by hand, CM_i = 0.5 each, CREDIT = 10.
    /// * Req = (30, 10): (7.276, 3.056): tenant 0 dispatches 8;
    /// * Req = (22, 10): (6.723, 3.677): tenant 1 dispatches 4;
    /// * Req = (22, 6): (7.483, 2.962): tenant 0 dispatches 8;
    /// * Req = (14, 6): (6.748, 3.829): tenant 1 dispatches 4;
    /// * Req = (14, 2): (7.902, 2.772): tenant 0 dispatches 8;
    /// * Req = (6, 2): (6.811, 4.212): tenant 1 sends its last 2, then
    ///   tenant 0 its last 6 (fewer than its credits).
    ///
    /// (Read as the period's requests, Req stays (30, 10) and the turns
    /// happen to be the same: `the_readings_differ_after_a_dispatch`.)
    #[test]
    fn queued_reading_counts_only_the_channels_contents() {
        let run = |requests: &str| {
            let mut s = scheduler(
                2,
                1,
                &[
                    ("credits", "10"),
                    ("period", "1000000000"),
                    ("requests", requests),
                ],
            );
            let mut id = 0;
            for (t, n) in [(0, 30), (1, 10)] {
                for _ in 0..n {
                    submit(&mut s, 0, id, t, 1_000);
                    id += 1;
                }
            }
            runs(&serve_one_slot(&mut s, 40))
        };
        let queued = run("queued");
        assert_eq!(queued, [(0, 8), (1, 4), (0, 8), (1, 4), (0, 8), (1, 2), (0, 6)]);
    }

    /// One slot, CREDIT = 1, tenant 0 alone with 5 queued: it is allotted
    /// the core (CM_0 = 1) and 1 credit, dispatches one request and
    /// exhausts. Reallocated with 4 queued, the idle tenant 1 gets
    /// `e^0 e^0 / (e^1 e^1 + Req)`: 1 / (e^2 + 4) read as queued requests,
    /// 1 / (e^2 + 1 + 4) read as the period's (the dispatched one counts).
    #[test]
    fn the_readings_differ_after_a_dispatch() {
        let tenants = [crate::policy::TenantShare {
            weight: 1.0,
            class: crate::TenantClass::BestEffort,
            latency: None,
        }; 2];
        let setup = PolicySetup {
            tenants: &tenants,
            slots: 1,
        };
        let head = HeadInfo {
            seq: 0,
            arrival: 0,
            bytes: 1,
            cost: 100,
            remaining_cost: 100,
            task_cost: 100,
            deadline: None,
        };
        for (requests, req) in [(Requests::Queued, 4.0), (Requests::Period, 5.0)] {
            let mut p = Mtda::new(&setup, 1_000_000, 1.0, 1.0).counting(requests);
            let in_flight = [0u32; 2];
            let cx = |queued: &'static [u64; 2]| PolicyContext {
                tenants: &tenants,
                slots: 1,
                in_flight: &in_flight,
                queued,
            };
            p.on_ready(0, 0, &head, &cx(&[5, 0]));
            assert_eq!(p.pick(0, &cx(&[5, 0])), Some(0));
            p.on_dispatch(0, 0, &head, Some(&head), &cx(&[4, 0]));
            p.on_complete(100, 0, &head, 100, &cx(&[4, 0]));
            assert_eq!(p.pick(100, &cx(&[4, 0])), Some(0));
            assert_eq!(p.reallocations(), 2, "{requests:?}");
            let want = 1.0 / (2f64.exp() + req);
            assert!(
                (p.credits()[1] - want).abs() < 1e-12,
                "{requests:?}: {:?}",
                p.credits()
            );
        }
    }

    /// `allot = "cores"`, 4 slots, CREDIT 10, Req read as queued: tenant 0
    /// queues 60, tenant 1 one. Eq. 7 (CM = 4, CM_i = 2 each, M = 1):
    /// numerators e^3 + 60 = 80.09 and e^3 + 1 = 21.09 over e^5 + 61 =
    /// 209.41: credits 3.825 and 1.007, so slot shares 4 x 3.825 / 4.832 =
    /// 3.17 and 0.83: caps 3 and 1. Tenant 0 takes 3 slots, tenant 1 the
    /// fourth; when tenant 1's request completes its slot stays idle (tenant
    /// 0 is at its cap until the next reallocation). Allotting time instead,
    /// tenant 0's 3.825 credits take all four slots.
    #[test]
    fn cores_are_capped_at_the_credit_share() {
        let run = |allot: &str| {
            let mut s = scheduler(
                2,
                4,
                &[("credits", "10"), ("requests", "queued"), ("allot", allot)],
            );
            let mut id = 0;
            for (t, n) in [(0, 60), (1, 1)] {
                for _ in 0..n {
                    submit(&mut s, 0, id, t, 1_000);
                    id += 1;
                }
            }
            let mut first = Vec::new();
            while let Some(d) = s.next(0, EngineId(0)) {
                first.push(d);
            }
            (s, first)
        };
        let (_, time) = run("time");
        assert_eq!(
            time.iter().map(|d| d.task.tenant.index()).collect::<Vec<_>>(),
            [0, 0, 0, 0]
        );
        let (mut s, cores) = run("cores");
        assert_eq!(
            cores.iter().map(|d| d.task.tenant.index()).collect::<Vec<_>>(),
            [0, 0, 0, 1]
        );
        s.complete(500, cores[3].id, 500).unwrap();
        assert!(s.next(500, EngineId(0)).is_none(), "tenant 0 is at its cap of 3");
    }

    /// Same start, but the credit period ends at 9.5 us, in tenant 1's turn
    /// (which began at 8 us with 3.056 credits and had spent 2 by 10 us):
    /// EXPIRED renews its credits to the last allocation, 3.056, so its
    /// turn dispatches 2 + 4 = 6 requests instead of 4.
    #[test]
    fn credits_are_renewed_when_the_period_expires() {
        let mut s = scheduler(2, 1, &[("credits", "10"), ("period", "9500")]);
        let mut id = 0;
        for (t, n) in [(0, 30), (1, 10)] {
            for _ in 0..n {
                submit(&mut s, 0, id, t, 1_000);
                id += 1;
            }
        }
        let order = serve_one_slot(&mut s, 14);
        assert_eq!(runs(&order), [(0, 8), (1, 6)]);
    }

    #[test]
    fn renewal_restores_the_last_allocation_without_recomputing_it() {
        let tenants = [crate::policy::TenantShare {
            weight: 1.0,
            class: crate::TenantClass::BestEffort,
            latency: None,
        }; 2];
        let setup = PolicySetup {
            tenants: &tenants,
            slots: 1,
        };
        let mut p = Mtda::new(&setup, 1_000, 10.0, 1.0);
        let (in_flight, queued) = ([0u32; 2], [5u64, 0]);
        let cx = PolicyContext {
            tenants: &tenants,
            slots: 1,
            in_flight: &in_flight,
            queued: &queued,
        };
        let head = HeadInfo {
            seq: 0,
            arrival: 0,
            bytes: 1,
            cost: 100,
            remaining_cost: 100,
            task_cost: 100,
            deadline: None,
        };
        p.on_ready(0, 0, &head, &cx);
        assert_eq!(p.reallocations(), 0);
        assert_eq!(p.pick(0, &cx), Some(0));
        // The first allocation, when scheduling begins: Req = (5, 0), only
        // tenant 0 relies on the engine, so it is allotted the one core.
        let first = p.credits().to_vec();
        assert!((first[0] - 10.0).abs() < 1e-9);
        assert!((first[1] - 10.0 / (2f64.exp() + 5.0)).abs() < 1e-9);
        p.on_dispatch(0, 0, &head, Some(&head), &cx);
        p.on_complete(900, 0, &head, 900, &cx);
        assert!((p.current()[0] - (first[0] - 1.0)).abs() < 1e-9);
        // The period ends: current = credit, and credit is what it was
        // (eq. 7 now would see Req_0 = 1 + 5).
        assert_eq!(p.pick(1_000, &cx), Some(0));
        assert_eq!(p.credits(), &first[..]);
        assert_eq!(p.current(), &first[..]);
        assert_eq!(p.reallocations(), 1);
    }

    /// A sanity check, not a test of what sets MTDA apart (FCFS does the
    /// same here): the credit machinery (reallocations, renewals, snapshots)
    /// does not skew symmetric tenants. Each keeps within 1% of a quarter of
    /// the engine over 20,000 dispatches, on 1 and 4 slots.
    #[test]
    fn the_credit_machinery_keeps_symmetric_tenants_even() {
        for slots in [1u32, 4] {
            let mut s = scheduler(4, slots, &[]);
            let mut id = 0;
            let outstanding = slots as usize + 4;
            for t in 0..4 {
                for _ in 0..outstanding {
                    submit(&mut s, 0, id, t, 1_000);
                    id += 1;
                }
            }
            let mut served = [0u64; 4];
            let mut running: Vec<(Nanos, crate::DispatchId, usize)> = Vec::new();
            let mut now = 0;
            let mut total = 0;
            while total < 20_000 {
                while let Some(d) = s.next(now, EngineId(0)) {
                    running.push((now + 1_000, d.id, d.task.tenant.index()));
                    total += 1;
                }
                now = running.iter().map(|r| r.0).min().unwrap();
                let (done, rest): (Vec<_>, Vec<_>) = running.into_iter().partition(|r| r.0 <= now);
                running = rest;
                for (_, d, t) in done {
                    s.complete(now, d, 1_000).unwrap();
                    served[t] += 1;
                    submit(&mut s, now, id, t, 1_000);
                    id += 1;
                }
            }
            let sum: u64 = served.iter().sum();
            for (t, &n) in served.iter().enumerate() {
                let share = n as f64 / sum as f64;
                assert!(
                    (share - 0.25).abs() < 0.01,
                    "{slots} slots: tenant {t} share {share}"
                );
            }
        }
    }
}
