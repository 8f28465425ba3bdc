//! ASTRAEA's workload-guided scheduling (Peng et al., SIGCOMM 2025 poster,
//! §2 "Workload-Guided Task Scheduling").
//!
//! The poster: per-application task queues per accelerator (the scheduler's
//! channels); "at the beginning of each scheduling period, the scheduler
//! traverses task queues across all applications for each accelerator and
//! allocates resources to applications according to priority and fairness
//! policies"; "latency-sensitive tasks obtain execution priority"; the
//! scheduler "monitors consumption via EWMA, building a predictive model for
//! future demands" that "guide task allocations, redirecting resources to
//! active apps"; the predictions "inform the task splitter's granularity
//! decisions — maintaining larger task sizes when latency-sensitive workloads
//! are minimal and an application is projected to consume substantial
//! resources, thus reducing splitting overhead"; and "ASTRAEA reserves a small portion of resources, which can
//! be allocated to applications experiencing SLA violations".
//!
//! As implemented, per engine:
//!
//! * Every `period` ns the budget `C = period x slots` of predicted engine
//!   time is shared out. Each tenant's demand `d_i` is an EWMA,
//!   `d_i = alpha x sample + (1 - alpha) x d_i`, of its consumption in the
//!   period that ended (the predicted cost of what it dispatched).
//! * `(1 - reserve) x C` goes out by priority and fairness: first each
//!   latency-sensitive tenant is given its demand up to its weighted share
//!   (`w_i / sum of w over tenants with demand`) of it, then the budget is
//!   water-filled by weight over the demands (weighted max-min fairness, no
//!   tenant below what it was first given): [`allocate`].
//! * `reserve x C` goes, by weight, to the tenants that violated their SLA in
//!   the period that ended: a completed task whose latency (`now - arrival`)
//!   exceeded its tenant's latency objective for the task's predicted cost.
//! * What nobody was given forms a shared pool.
//! * A free slot goes to a ready tenant that has budget left or can draw on
//!   the pool: latency-sensitive tenants first; then tenants spending their
//!   own budget before those drawing on the pool; then the one that used the
//!   smallest fraction of its budget; then the oldest head. Once every ready
//!   tenant's budget and the pool are spent, it goes to the ready tenant with
//!   the least service per weight in this period (a fair order): the policy
//!   never leaves a slot idle while work waits.
//! * [`Policy::split_bytes`]: a tenant's tasks are split in chunks
//!   `idle_split_factor` times the configured size when no latency-sensitive
//!   work of *another* tenant is present or predicted (queued, in service,
//!   dispatched this period, or a predicted demand of at least `ls_idle x
//!   C`) *and* the tenant is projected to consume substantial resources (a
//!   predicted demand of at least `substantial x C`); at the configured size
//!   otherwise.
//!
//! Choices where the poster is silent or ambiguous (it gives no numbers):
//! * Defaults: `period` 1 ms (several split subtasks of the poster's EC
//!   experiment per period), `alpha` 0.2 (a customary EWMA weight), `reserve`
//!   0.1 ("a small portion"), `idle_split_factor` 8, `ls_idle` 0.01,
//!   `substantial` 0.5 (half the engine).
//! * A tenant still backlogged (ready) when a period ends samples the whole
//!   budget `C` as its demand: its consumption was capped by the competition,
//!   not by what it wanted, and an EWMA of consumption alone would freeze the
//!   shares of the period before. Demand is unknown before the first period
//!   ends and counts as `C` then (so the first period shares by weight); the
//!   first sample replaces it.
//! * Consumption is the predicted cost charged when a task is dispatched, the
//!   quantity budgets are in; it counts in the period the dispatch starts.
//!   At completion it is corrected by `measured - predicted` in the period
//!   the completion falls in (the paper budgets predicted time; a task that
//!   ran long is charged what it used, so a tenant whose tasks are
//!   mispredicted cannot keep more than its budget).
//! * A budget overdraws by at most one task (a tenant with any budget left may
//!   start one); budgets do not carry over from one period to the next.
//! * Priority is the order of service within budgets: a latency-sensitive
//!   tenant goes first while it has budget or the pool lasts, so its bursts
//!   beyond the prediction use the unassigned budget first, but it cannot
//!   take more than its allocation plus the pool in a period, so the others'
//!   allocations are met within the period; the work-conserving fall-back is
//!   fair (no class priority).
//! * SLA checks use the whole task's predicted cost for `k x service` bounds
//!   and run on every completion, fragments included: a fragment finishing
//!   past the task's bound means the task does, and the last fragment's check
//!   is the task's. (The live runtime submits subtasks as tasks of their own,
//!   each checked against its own cost and submission time.)
//! * "Larger task sizes when latency-sensitive workloads are minimal": the
//!   size depends on latency-sensitive work of the *other* tenants, so a
//!   latency-sensitive tenant alone is not split finely either ("skipping
//!   unnecessary splitting for single apps", §3), if it uses a substantial
//!   part of the engine. "Substantial" is `substantial x C` of predicted
//!   demand (default half the engine); a light tenant keeps the configured
//!   size even alone, as the poster's second condition reads, at the cost of
//!   some splitting overhead on work that is light anyway.
//! * Periods are rolled forward lazily in every hook (idle periods decay the
//!   demands as zero samples), so an idle engine needs no wake-ups; the
//!   policy is work-conserving, so no decision waits for a period boundary.
//!
//! Implementation (issue 17): the ready tenants are kept in heaps by their
//! order of service (`index.rs`), refiled when a hook changes their state and
//! all at once when a period starts, so a decision costs O(1) and a hook
//! O(log n) in the tenants, not a scan of them all; [`mod@reference`] keeps the
//! scan, which the tests check the heaps against.

mod index;
pub mod reference;
#[cfg(test)]
mod tests;

use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{Charge, HeadInfo, Policy, PolicyContext};
use crate::metrics::fairness::water_fill;
use crate::params::{ParamSpec, Params};
use crate::tenant::{LatencyObjective, TenantClass};
use crate::units::{Bytes, Nanos};
use index::ReadyIndex;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "period",
        default: "1000000",
        description: "scheduling period (ns): budgets of predicted engine time (period x slots) are shared out at each period's start",
    },
    ParamSpec {
        name: "alpha",
        default: "0.2",
        description: "EWMA weight of the newest period's consumption in each tenant's predicted demand, in (0, 1]",
    },
    ParamSpec {
        name: "reserve",
        default: "0.1",
        description: "fraction of each period's budget, in [0, 1), reserved for tenants that violated their SLA in the period before",
    },
    ParamSpec {
        name: "idle_split_factor",
        default: "8",
        description: "split size multiplier while no latency-sensitive work of another tenant is present or predicted",
    },
    ParamSpec {
        name: "ls_idle",
        default: "0.01",
        description: "predicted latency-sensitive demand, as a fraction of a period's budget, under which none is expected",
    },
    ParamSpec {
        name: "substantial",
        default: "0.5",
        description: "predicted demand, as a fraction of a period's budget, from which a tenant's tasks may be split larger",
    },
];

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "astraea",
    aliases: &[],
    description: "ASTRAEA: per-period budgets from EWMA-predicted demand, latency-sensitive first, a reserve for SLA violators, larger splits when no latency-sensitive work is expected.",
    source: "ASTRAEA (Peng et al., SIGCOMM 2025 poster, §2)",
    work_conserving: true,
    params: PARAMS,
    build,
};

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(Astraea::new(s, params(p)?)))
}

/// The parameters given in `p`, checked.
fn params(p: &Params<'_>) -> Result<AstraeaParams, PolicyError> {
    use std::ops::Bound::{Excluded, Included};
    let period = p.u64_in("period", 1..=u64::MAX / 2)?;
    let alpha = p.f64_in("alpha", (Excluded(0.0), Included(1.0)))?;
    let reserve = p.f64_in("reserve", (Included(0.0), Excluded(1.0)))?;
    let idle_split_factor = p.u64_in("idle_split_factor", 1..=u32::MAX as u64)?;
    let ls_idle = p.f64_at_least("ls_idle", 0.0)?;
    let substantial = p.f64_at_least("substantial", 0.0)?;
    Ok(AstraeaParams {
        period,
        alpha,
        reserve,
        idle_split_factor,
        ls_idle,
        substantial,
    })
}

/// ASTRAEA's parameters (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AstraeaParams {
    /// Scheduling period, ns.
    pub period: Nanos,
    /// EWMA weight of the newest sample.
    pub alpha: f64,
    /// Fraction of the budget reserved for SLA violators.
    pub reserve: f64,
    /// Split size multiplier while no latency-sensitive work is expected.
    pub idle_split_factor: u64,
    /// Predicted latency-sensitive demand (fraction of the budget) under
    /// which none is expected.
    pub ls_idle: f64,
    /// Predicted demand (fraction of the budget) from which a tenant is
    /// projected to consume substantial resources.
    pub substantial: f64,
}

impl Default for AstraeaParams {
    fn default() -> Self {
        AstraeaParams {
            period: 1_000_000,
            alpha: 0.2,
            reserve: 0.1,
            idle_split_factor: 8,
            ls_idle: 0.01,
            substantial: 0.5,
        }
    }
}

#[derive(Debug, Clone)]
struct Tenant {
    weight: f64,
    latency_sensitive: bool,
    objective: Option<LatencyObjective>,
    ready: bool,
    head_seq: u64,
    in_flight: u32,
    /// Predicted demand (ns of engine time per period); `None` before the
    /// first sample.
    demand: Option<f64>,
    /// Predicted cost dispatched in the current period.
    used: f64,
    /// This period's budget (allocation plus reserve).
    budget: f64,
    /// An SLA violation completed in the current period.
    violated: bool,
}

/// ASTRAEA state for one engine.
#[derive(Debug, Clone)]
pub struct Astraea {
    params: AstraeaParams,
    /// Budget per period, `period x slots` (ns).
    capacity: f64,
    tenants: Vec<Tenant>,
    started: bool,
    period_end: Nanos,
    /// Budget of this period that nobody was given.
    pool: f64,
    /// The ready tenants in their order of service, so a decision reads a
    /// few heaps' heads; `None` in [`reference`], which scans them all.
    index: Option<ReadyIndex>,
    /// The latency-sensitive tenants, in index order.
    latency_sensitive: Vec<usize>,
}

impl Astraea {
    /// ASTRAEA for `setup`'s tenants and slots.
    pub fn new(setup: &PolicySetup<'_>, params: AstraeaParams) -> Self {
        Self::with_index(setup, params, true)
    }

    /// ASTRAEA deciding through the ready index (`indexed`) or by scanning
    /// every tenant, as [`reference`] does.
    fn with_index(setup: &PolicySetup<'_>, params: AstraeaParams, indexed: bool) -> Self {
        let n = setup.tenants.len();
        Astraea {
            capacity: params.period as f64 * setup.slots as f64,
            params,
            tenants: setup
                .tenants
                .iter()
                .map(|t| Tenant {
                    weight: t.weight,
                    latency_sensitive: t.class == TenantClass::LatencySensitive,
                    objective: t.latency,
                    ready: false,
                    head_seq: 0,
                    in_flight: 0,
                    demand: None,
                    used: 0.0,
                    budget: 0.0,
                    violated: false,
                })
                .collect(),
            started: false,
            period_end: 0,
            pool: 0.0,
            index: indexed.then(|| ReadyIndex::new(n)),
            latency_sensitive: (0..n)
                .filter(|&i| setup.tenants[i].class == TenantClass::LatencySensitive)
                .collect(),
        }
    }

    /// Files tenant `i` in the ready index after its state changed.
    fn place(&mut self, i: usize) {
        if let Some(index) = &mut self.index {
            index.place(i, &self.tenants[i]);
        }
    }

    /// Files every tenant again: a period started, every key changed.
    fn reindex(&mut self) {
        if let Some(index) = &mut self.index {
            for (i, t) in self.tenants.iter().enumerate() {
                index.place(i, t);
            }
        }
    }

    /// Tenant `i`'s demand once the periods ended by `now` are sampled,
    /// without changing anything: the period in progress contributes its
    /// consumption (or `C` if the tenant is backlogged), later whole periods
    /// contribute `C` if it is still backlogged, else zero.
    fn demand_at(&self, i: usize, now: Nanos) -> f64 {
        let t = &self.tenants[i];
        let c = self.capacity;
        let unknown = t.demand.unwrap_or(c);
        if !self.started || now < self.period_end {
            return unknown;
        }
        let ended = (now - self.period_end) / self.params.period + 1;
        let sample = if t.ready { c } else { t.used.min(c) };
        let a = self.params.alpha;
        let first = match t.demand {
            None => sample,
            Some(d) => a * sample + (1.0 - a) * d,
        };
        // The periods after the first saw no event: constant samples.
        let rest = if t.ready { c } else { 0.0 };
        let keep = (1.0 - a).powf((ended - 1) as f64);
        rest + keep * (first - rest)
    }

    /// Ends every period that ended by `now` and shares out the budget of
    /// the one `now` is in. Called first in every hook.
    fn roll(&mut self, now: Nanos) {
        if !self.started {
            self.started = true;
            self.period_end = now.saturating_add(self.params.period);
            self.share_out(&vec![false; self.tenants.len()]);
            self.reindex();
            return;
        }
        if now < self.period_end {
            return;
        }
        let ended = (now - self.period_end) / self.params.period + 1;
        let demand: Vec<f64> = (0..self.tenants.len()).map(|i| self.demand_at(i, now)).collect();
        // Violations of the last period that ended; periods after the first
        // one saw no completion.
        let violators: Vec<bool> = self.tenants.iter().map(|t| ended == 1 && t.violated).collect();
        for (t, d) in self.tenants.iter_mut().zip(demand) {
            t.demand = Some(d);
            t.used = 0.0;
            t.violated = false;
        }
        self.period_end = self
            .period_end
            .saturating_add(ended.saturating_mul(self.params.period));
        self.share_out(&violators);
        self.reindex();
    }

    /// Budgets for the period that starts.
    fn share_out(&mut self, violators: &[bool]) {
        let c = self.capacity;
        let demand: Vec<f64> = self.tenants.iter().map(|t| t.demand.unwrap_or(c)).collect();
        let weight: Vec<f64> = self.tenants.iter().map(|t| t.weight).collect();
        let ls: Vec<bool> = self.tenants.iter().map(|t| t.latency_sensitive).collect();
        let mut budget = allocate((1.0 - self.params.reserve) * c, &demand, &weight, &ls);
        let violating_weight: f64 = (0..budget.len())
            .filter(|&i| violators[i])
            .map(|i| weight[i])
            .sum();
        if violating_weight > 0.0 {
            for (i, b) in budget.iter_mut().enumerate() {
                if violators[i] {
                    *b += self.params.reserve * c * weight[i] / violating_weight;
                }
            }
        }
        self.pool = (c - budget.iter().sum::<f64>()).max(0.0);
        for (t, b) in self.tenants.iter_mut().zip(budget) {
            t.budget = b;
        }
    }

    /// Whether latency-sensitive work of a tenant other than `tenant` is
    /// present or predicted at `now`.
    fn others_latency_sensitive(&self, now: Nanos, tenant: usize) -> bool {
        let threshold = self.params.ls_idle * self.capacity;
        self.latency_sensitive.iter().any(|&i| {
            let t = &self.tenants[i];
            i != tenant
                && (t.ready
                    || t.in_flight > 0
                    || (self.started && now < self.period_end && t.used > 0.0)
                    || self.demand_at(i, now) >= threshold)
        })
    }
}

/// Shares `budget` among tenants with predicted `demand`s: each
/// latency-sensitive tenant is first given its demand up to its weighted
/// share of the budget (weights of the tenants with demand); then the budget
/// is water-filled by weight (weighted max-min fairness): every tenant ends
/// with `clamp(L x w_i, first_i, d_i)` for the level `L` that spends the
/// budget, or its whole demand when the demands fit. Nobody gets more than
/// its demand; what is left is unassigned.
pub fn allocate(budget: f64, demand: &[f64], weight: &[f64], latency_sensitive: &[bool]) -> Vec<f64> {
    let n = demand.len();
    let mut first = vec![0.0; n];
    let active_weight: f64 = (0..n).filter(|&i| demand[i] > 0.0).map(|i| weight[i]).sum();
    if active_weight <= 0.0 || budget <= 0.0 {
        return first;
    }
    for i in 0..n {
        if latency_sensitive[i] && demand[i] > 0.0 {
            first[i] = demand[i].min(budget * weight[i] / active_weight);
        }
    }
    water_fill(budget, demand, weight, &first)
}

impl Policy for Astraea {
    fn on_ready(&mut self, now: Nanos, tenant: usize, head: &HeadInfo, _: &PolicyContext<'_>) {
        self.roll(now);
        let t = &mut self.tenants[tenant];
        t.ready = true;
        t.head_seq = head.seq;
        self.place(tenant);
    }

    fn pick(&mut self, now: Nanos, _: &PolicyContext<'_>) -> Option<usize> {
        self.roll(now);
        match &self.index {
            Some(index) => index.pick(self.pool),
            None => reference::scan(&self.tenants, self.pool),
        }
    }

    fn on_dispatch(
        &mut self,
        now: Nanos,
        tenant: usize,
        served: &HeadInfo,
        next: Option<&HeadInfo>,
        _: &PolicyContext<'_>,
    ) {
        self.roll(now);
        let t = &mut self.tenants[tenant];
        let cost = served.cost as f64;
        // The part beyond the tenant's own budget comes out of the pool.
        let over = (t.used + cost - t.used.max(t.budget)).max(0.0);
        t.used += cost;
        t.in_flight += 1;
        match next {
            Some(h) => t.head_seq = h.seq,
            None => t.ready = false,
        }
        self.pool = (self.pool - over).max(0.0);
        self.place(tenant);
    }

    fn on_complete(
        &mut self,
        now: Nanos,
        tenant: usize,
        served: &HeadInfo,
        measured: Nanos,
        _: &PolicyContext<'_>,
    ) {
        self.roll(now);
        let t = &mut self.tenants[tenant];
        t.in_flight = t.in_flight.saturating_sub(1);
        // Consumption was charged at the prediction; what the task really
        // took beyond it is charged now (into the current period), and
        // what it took less is given back.
        let owed = Charge::Cost.correction(served, measured);
        let over = (t.used + owed - t.used.max(t.budget)).max(0.0);
        t.used = (t.used + owed).max(0.0);
        self.pool = (self.pool - over).max(0.0);
        if owed != 0.0 {
            self.place(tenant);
        }
        let t = &mut self.tenants[tenant];
        if let Some(objective) = t.objective {
            if objective.violated(now.saturating_sub(served.arrival), served.task_cost) {
                t.violated = true;
            }
        }
    }

    fn split_bytes(&self, now: Nanos, tenant: usize, default: Bytes) -> Bytes {
        let substantial = self.demand_at(tenant, now) >= self.params.substantial * self.capacity;
        if substantial && !self.others_latency_sensitive(now, tenant) {
            default.saturating_mul(self.params.idle_split_factor)
        } else {
            default
        }
    }
}
