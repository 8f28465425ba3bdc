//! Tenants and their service-level objectives.

use crate::engine::EngineKind;
use crate::units::{Nanos, Rate};
use serde::{Deserialize, Serialize};

/// A tenant's index in the scheduler's tenant table (dense, from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TenantId(pub u32);

impl TenantId {
    /// The id as an index into per-tenant arrays.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a tenant cares about, which some policies use to order work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TenantClass {
    /// Small tasks whose completion time matters (ASTRAEA's LS tenants).
    LatencySensitive,
    /// Large tasks whose throughput matters (ASTRAEA's BS tenants).
    BandwidthSensitive,
    /// No objective beyond its weighted share.
    #[default]
    BestEffort,
}

/// How long a task of this tenant may take from arrival to completion.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyObjective {
    /// A fixed bound in nanoseconds.
    Absolute(Nanos),
    /// `k` times the task's predicted service time (ASTRAEA's SLA form).
    ServiceMultiple(f64),
}

impl LatencyObjective {
    /// The latency bound for a task whose predicted service time is `predicted`.
    pub fn bound(self, predicted: Nanos) -> f64 {
        match self {
            LatencyObjective::Absolute(ns) => ns as f64,
            LatencyObjective::ServiceMultiple(k) => k * predicted as f64,
        }
    }

    /// Whether a task that took `latency` from arrival to completion, with
    /// predicted service time `predicted`, missed the objective (took
    /// longer than its bound). The one SLA comparison: policies judge
    /// tasks with it, and so does every driver's results recorder.
    pub fn violated(self, latency: Nanos, predicted: Nanos) -> bool {
        latency as f64 > self.bound(predicted)
    }
}

/// A rate with the burst it may exceed it by, for shaping.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateSpec {
    /// The sustained rate, in bytes/s or ops/s.
    pub rate: Rate,
    /// How many units (bytes or ops, the rate's unit) may go at once on top of
    /// the sustained rate. 0 means strictly paced.
    pub burst: f64,
}

/// A tenant's service-level objective. Every field but `weight` is optional.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// Relative share when engines are contended (priority). Positive, finite.
    pub weight: f64,
    /// The tenant's class.
    pub class: TenantClass,
    /// Minimum rate the tenant is served at while it has work (reservation).
    pub reservation: Option<RateSpec>,
    /// Maximum rate the tenant is served at (limit), with its burst.
    pub limit: Option<RateSpec>,
    /// Latency objective for each task.
    pub latency: Option<LatencyObjective>,
    /// Per-task service-time budget (OSMOSIS' kernel cycle limit): a task whose
    /// measured service exceeds it is reported as over budget.
    pub service_budget: Option<Nanos>,
    /// What a driver does with a task that reaches `service_budget`: flag
    /// it when it ends, or stop it there; `None`: the engine kind's
    /// default ([`BudgetAction::default_for`]).
    #[serde(default)]
    pub budget_action: Option<BudgetAction>,
    /// Maximum number of queued tasks per engine channel; more are rejected.
    pub queue_cap: usize,
    /// On-device memory quota in bytes, if any.
    pub memory_quota: Option<u64>,
    /// The tenant's flow queues on each engine, by index
    /// ([`crate::Task::flow`]); empty: one queue.
    #[serde(default)]
    pub flows: Vec<FlowQueueSpec>,
}

/// Most flow queues one tenant may have.
pub const MAX_FLOW_QUEUES: usize = 64;

/// One of a tenant's flow queues (OSMOSIS' FMQs; a leaf of DPDK
/// `rte_sched`'s or HTB's hierarchy): its place in the tenant's turn
/// ([`crate::flow_queues`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FlowQueueSpec {
    /// Its share of the tenant's turn among its queues of the same
    /// priority (positive, finite; default 1).
    pub weight: f64,
    /// Strict priority among the tenant's queues: higher goes first
    /// (default 0).
    pub priority: u8,
    /// Most tasks it holds per engine (at most the tenant's `queue_cap`;
    /// `None`: the tenant's).
    pub queue_cap: Option<usize>,
}

impl Default for FlowQueueSpec {
    fn default() -> Self {
        FlowQueueSpec {
            weight: 1.0,
            priority: 0,
            queue_cap: None,
        }
    }
}

/// Checks a weight (a tenant's or a flow queue's): from [`MIN_WEIGHT`] to
/// [`MAX_WEIGHT`].
fn check_weight(weight: f64) -> Result<(), (&'static str, String)> {
    if !(MIN_WEIGHT..=MAX_WEIGHT).contains(&weight) {
        return Err((
            "weight",
            format!("must be between {MIN_WEIGHT} and {MAX_WEIGHT}, got {weight}"),
        ));
    }
    Ok(())
}

impl FlowQueueSpec {
    /// A tenant's flow queues as [`Slo::flows`] holds them: one queue
    /// with nothing of its own set is no list at all (both are the
    /// tenant's one default queue), so that every driver writes the same
    /// tenant the same way.
    pub fn canonical(specs: Vec<FlowQueueSpec>) -> Vec<FlowQueueSpec> {
        if specs == [FlowQueueSpec::default()] {
            Vec::new()
        } else {
            specs
        }
    }

    /// The most tasks it holds in a tenant whose queues together hold at
    /// most `tenant_cap`: its own cap, at most the tenant's.
    pub fn cap_within(&self, tenant_cap: usize) -> usize {
        self.queue_cap.unwrap_or(tenant_cap).min(tenant_cap)
    }

    /// Checks the spec; returns the offending key and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        check_weight(self.weight)?;
        if let Some(cap) = self.queue_cap {
            if !(1..=MAX_QUEUE_CAP).contains(&cap) {
                return Err((
                    "queue_cap",
                    format!("must be between 1 and {MAX_QUEUE_CAP}, got {cap}"),
                ));
            }
        }
        Ok(())
    }
}

/// What happens to a task whose service reaches its tenant's budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetAction {
    /// It runs to its end and is reported over budget (an `OverBudget`
    /// event live; aborted in a run's results).
    #[default]
    Flag,
    /// It is stopped at the budget (within one chunk of its operator's
    /// work) and ends with an over-budget error, its output discarded.
    Stop,
}

impl BudgetAction {
    /// What a budget does on an engine of `kind` when the tenant does not
    /// say: processing units stop the task (OSMOSIS' watchdog kills a
    /// kernel at its cycle limit, and a WebAssembly kernel runs out of
    /// fuel), other engines flag it.
    pub fn default_for(kind: crate::EngineKind) -> BudgetAction {
        match kind {
            crate::EngineKind::ProcessingUnits => BudgetAction::Stop,
            _ => BudgetAction::Flag,
        }
    }

    /// The action a configuration names (`flag`, `stop`); `None` otherwise.
    pub fn from_name(name: &str) -> Option<BudgetAction> {
        match name {
            "flag" => Some(BudgetAction::Flag),
            "stop" => Some(BudgetAction::Stop),
            _ => None,
        }
    }
}

impl std::fmt::Display for BudgetAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BudgetAction::Flag => "flag",
            BudgetAction::Stop => "stop",
        })
    }
}

/// Smallest weight accepted: far enough from zero that `charge / weight`
/// stays finite for any task.
pub const MIN_WEIGHT: f64 = 1e-6;
/// Largest weight accepted.
pub const MAX_WEIGHT: f64 = 1e6;

/// Default per-channel queue cap when a scenario does not give one.
pub const DEFAULT_QUEUE_CAP: usize = 1024;

/// Most tasks one channel may hold: 2^20. With every task's predicted cost
/// at most [`crate::MAX_TASK_COST_NS`], a channel's queued cost stays
/// inside a `u64`.
pub const MAX_QUEUE_CAP: usize = 1 << 20;

impl Default for Slo {
    fn default() -> Self {
        Slo {
            weight: 1.0,
            class: TenantClass::BestEffort,
            reservation: None,
            limit: None,
            latency: None,
            service_budget: None,
            budget_action: None,
            queue_cap: DEFAULT_QUEUE_CAP,
            memory_quota: None,
            flows: Vec::new(),
        }
    }
}

/// A live run's time scale: how a driver that cannot run a scenario at
/// its own speed (too few cores, real kernels costlier than modelled)
/// keeps an SLO in force relative to the run. Rates (reservations,
/// limits) are divided by `rates_over`, as the run's arrival rates are;
/// times that a service takes (absolute latency objectives, service
/// budgets) are multiplied by `times_by`, as its service times are.
/// Weights, classes, bursts, queue caps, memory quotas and latency
/// multiples of predicted service are unchanged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeScale {
    /// What the run's rates are divided by (1: as written).
    pub rates_over: f64,
    /// What the run's service times are multiplied by (1: as written).
    pub times_by: f64,
}

impl TimeScale {
    /// No scaling.
    pub const NONE: TimeScale = TimeScale {
        rates_over: 1.0,
        times_by: 1.0,
    };

    /// A tenant's SLO and per-engine changes as a run at this scale
    /// enforces them ([`Slo::scaled`], [`SloOverride::scaled`]).
    pub fn tenant(
        self,
        slo: &Slo,
        overrides: &[(EngineSelector, SloOverride)],
    ) -> (Slo, Vec<(EngineSelector, SloOverride)>) {
        (
            slo.scaled(self),
            overrides
                .iter()
                .map(|(on, o)| (on.clone(), o.scaled(self)))
                .collect(),
        )
    }

    fn rate(self, spec: RateSpec) -> RateSpec {
        RateSpec {
            rate: spec.rate.divided(self.rates_over),
            burst: spec.burst,
        }
    }

    fn time(self, ns: Nanos) -> Nanos {
        if !(self.times_by.is_finite() && self.times_by > 0.0) {
            return ns;
        }
        (ns as f64 * self.times_by).round().clamp(1.0, u64::MAX as f64) as Nanos
    }
}

impl Slo {
    /// This SLO on engine `name` of kind `kind` under `overrides`: changed
    /// by the overrides for its kind, then by those naming it (a setting for
    /// the engine beats one for its kind, which beats the tenant-wide one).
    pub fn on_engine(
        &self,
        overrides: &[(EngineSelector, SloOverride)],
        name: &str,
        kind: EngineKind,
    ) -> Slo {
        let mut slo = self.clone();
        for (_, o) in overrides.iter().filter(|(s, _)| *s == EngineSelector::Kind(kind)) {
            o.apply_to(&mut slo);
        }
        for (_, o) in overrides.iter().filter(|(s, _)| s.names(name)) {
            o.apply_to(&mut slo);
        }
        slo
    }

    /// This SLO as a run at time scale `scale` must enforce it.
    pub fn scaled(&self, scale: TimeScale) -> Slo {
        Slo {
            reservation: self.reservation.map(|r| scale.rate(r)),
            limit: self.limit.map(|l| scale.rate(l)),
            latency: match self.latency {
                Some(LatencyObjective::Absolute(ns)) => Some(LatencyObjective::Absolute(scale.time(ns))),
                other => other,
            },
            service_budget: self.service_budget.map(|b| scale.time(b)),
            ..self.clone()
        }
    }

    /// An SLO with only a weight; everything else default.
    pub fn weighted(weight: f64) -> Self {
        Slo {
            weight,
            ..Slo::default()
        }
    }

    /// Checks the SLO's own consistency; returns the offending field and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        check_weight(self.weight)?;
        if !(1..=MAX_QUEUE_CAP).contains(&self.queue_cap) {
            return Err((
                "queue_cap",
                format!("must be between 1 and {MAX_QUEUE_CAP}, got {}", self.queue_cap),
            ));
        }
        if self.flows.len() > MAX_FLOW_QUEUES {
            return Err((
                "flows",
                format!("at most {MAX_FLOW_QUEUES} flow queues, got {}", self.flows.len()),
            ));
        }
        for f in &self.flows {
            f.validate()?;
        }
        for (field, spec) in [("reservation", self.reservation), ("limit", self.limit)] {
            if let Some(s) = spec {
                if !(s.burst.is_finite() && s.burst >= 0.0) {
                    return Err((field, format!("burst must be >= 0, got {}", s.burst)));
                }
            }
        }
        if let (Some(r), Some(l)) = (self.reservation, self.limit) {
            if r.rate.unit() == l.rate.unit() && r.rate.per_sec() > l.rate.per_sec() {
                return Err((
                    "reservation",
                    format!("reservation {} exceeds limit {}", r.rate, l.rate),
                ));
            }
        }
        if let Some(LatencyObjective::ServiceMultiple(k)) = self.latency {
            if !(k.is_finite() && k > 0.0) {
                return Err(("latency_multiple", format!("must be > 0, got {k}")));
            }
        }
        Ok(())
    }
}

/// A tenant: who it is and what it was promised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tenant {
    /// Dense id, assigned by the scheduler builder in insertion order.
    pub id: TenantId,
    /// Human-readable unique name.
    pub name: String,
    /// The tenant's service-level objective, on every engine unless an
    /// override says otherwise.
    pub slo: Slo,
    /// Per-engine (or per-kind) changes to `slo`, in the order given.
    pub overrides: Vec<(EngineSelector, SloOverride)>,
}

impl Tenant {
    /// The tenant's SLO on engine `name` of kind `kind`: the tenant-wide
    /// one, changed by the overrides for its kind, then by those naming it
    /// (a setting for the engine beats one for its kind, which beats the
    /// tenant's).
    pub fn slo_on(&self, name: &str, kind: EngineKind) -> Slo {
        self.slo.on_engine(&self.overrides, name, kind)
    }
}

/// Which engines a per-resource setting applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineSelector {
    /// The engine with this name.
    Named(String),
    /// Every engine of this kind.
    Kind(EngineKind),
}

impl EngineSelector {
    /// Whether it is [`EngineSelector::Named`] `name`.
    pub fn names(&self, name: &str) -> bool {
        matches!(self, EngineSelector::Named(n) if n == name)
    }

    /// Whether it selects engine `name` of kind `kind`.
    pub fn selects(&self, name: &str, kind: EngineKind) -> bool {
        self.names(name) || *self == EngineSelector::Kind(kind)
    }
}

impl std::fmt::Display for EngineSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineSelector::Named(n) => write!(f, "engine `{n}`"),
            EngineSelector::Kind(k) => write!(f, "{k} engines"),
        }
    }
}

/// Changes to a tenant's SLO on some engines (OSMOSIS' per-resource
/// priorities, Table 2; dmClock's per-server reservation, weight and
/// limit): each field that is set replaces the tenant-wide value there.
/// The latency objective, class, queue cap and memory quota stay the
/// tenant's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SloOverride {
    /// Relative share on those engines.
    pub weight: Option<f64>,
    /// Minimum rate on each of those engines.
    pub reservation: Option<RateSpec>,
    /// Maximum rate on each of those engines.
    pub limit: Option<RateSpec>,
    /// Per-task service budget on those engines (a kernel cycle limit).
    pub service_budget: Option<Nanos>,
    /// What happens at that budget on those engines.
    #[serde(default)]
    pub budget_action: Option<BudgetAction>,
}

impl SloOverride {
    /// This change as a run at time scale `scale` must enforce it (see
    /// [`Slo::scaled`]).
    pub fn scaled(&self, scale: TimeScale) -> SloOverride {
        SloOverride {
            reservation: self.reservation.map(|r| scale.rate(r)),
            limit: self.limit.map(|l| scale.rate(l)),
            service_budget: self.service_budget.map(|b| scale.time(b)),
            ..*self
        }
    }

    /// Applies the fields that are set to `slo`.
    pub fn apply_to(&self, slo: &mut Slo) {
        if let Some(w) = self.weight {
            slo.weight = w;
        }
        if let Some(r) = self.reservation {
            slo.reservation = Some(r);
        }
        if let Some(l) = self.limit {
            slo.limit = Some(l);
        }
        if let Some(b) = self.service_budget {
            slo.service_budget = Some(b);
        }
        if let Some(a) = self.budget_action {
            slo.budget_action = Some(a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_validation_names_the_field() {
        assert_eq!(Slo::weighted(0.0).validate().unwrap_err().0, "weight");
        let ops = |r| RateSpec {
            rate: Rate::ops_per_sec(r).unwrap(),
            burst: 0.0,
        };
        let s = Slo {
            reservation: Some(ops(10.0)),
            limit: Some(ops(5.0)),
            ..Slo::default()
        };
        assert_eq!(s.validate().unwrap_err().0, "reservation");
        let s = Slo {
            queue_cap: 0,
            ..Slo::default()
        };
        assert_eq!(s.validate().unwrap_err().0, "queue_cap");
        let s = Slo {
            limit: Some(RateSpec {
                burst: -1.0,
                ..ops(5.0)
            }),
            ..Slo::default()
        };
        assert_eq!(s.validate().unwrap_err().0, "limit");
    }

    #[test]
    fn an_engine_setting_beats_its_kinds_which_beats_the_tenants() {
        let t = Tenant {
            id: TenantId(0),
            name: "t".into(),
            slo: Slo {
                service_budget: Some(7),
                ..Slo::weighted(1.0)
            },
            overrides: vec![
                (
                    EngineSelector::Named("pu0".into()),
                    SloOverride {
                        weight: Some(3.0),
                        ..Default::default()
                    },
                ),
                (
                    EngineSelector::Kind(EngineKind::ProcessingUnits),
                    SloOverride {
                        weight: Some(2.0),
                        service_budget: Some(9),
                        ..Default::default()
                    },
                ),
            ],
        };
        let pu0 = t.slo_on("pu0", EngineKind::ProcessingUnits);
        assert_eq!((pu0.weight, pu0.service_budget), (3.0, Some(9)));
        let pu1 = t.slo_on("pu1", EngineKind::ProcessingUnits);
        assert_eq!((pu1.weight, pu1.service_budget), (2.0, Some(9)));
        let dma = t.slo_on("dma", EngineKind::Dma);
        assert_eq!((dma.weight, dma.service_budget), (1.0, Some(7)));
    }

    #[test]
    fn latency_objective_bounds() {
        assert_eq!(LatencyObjective::Absolute(500).bound(10), 500.0);
        assert_eq!(LatencyObjective::ServiceMultiple(2.0).bound(10), 20.0);
        assert!(!LatencyObjective::ServiceMultiple(2.0).violated(20, 10));
        assert!(LatencyObjective::ServiceMultiple(2.0).violated(21, 10));
        assert!(LatencyObjective::Absolute(500).violated(501, 1_000_000));
    }
}
