//! Per-resource settings (OSMOSIS Table 2; dmClock's per-server r/w/l): a
//! tenant's weight, reservation, limit and budget on some engines
//! (`[tenant.on.NAME]`), and a policy run's policy on some engines
//! (`on = { NAME = "policy" }`), where NAME is an engine's name or an
//! engine kind (`accelerator`, `pu`, `dma`, `egress`). Also how a driver
//! configures the core for a run: both drivers call
//! [`Scenario::configure_core`], so the simulator and `isola run` build
//! the same scheduler.

use super::raw::value_text;
use super::slo::EngineRef;
use super::source::Source;
use super::{PolicyRun, Scenario, ScenarioError, TenantSpec};
use crate::quantity::{Duration, RateValue, Size};
use isola_core::params::Params;
use isola_core::policy::find_policy;
use isola_core::{
    EngineKind, EnginePolicy, EngineSelector, RateSpec, SchedulerBuilder, Slo, SloOverride, TenantId,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;

/// `[tenant.on.NAME]`: the SLO fields that may differ per engine, as
/// read (checked by [`super::slo::check_slo`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOverride {
    weight: Option<f64>,
    reservation: Option<RateValue>,
    reservation_burst: Option<f64>,
    limit: Option<RateValue>,
    burst: Option<Size>,
    budget: Option<Duration>,
    budget_action: Option<String>,
}

/// A policy run's `on = { NAME = ... }` value: a policy name, or a table
/// `{ name, params }`.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawPolicyChoice {
    Name(String),
    Table {
        name: String,
        #[serde(default)]
        params: BTreeMap<String, toml::Value>,
    },
}

/// What `NAME` selects: the engine of that name, else every engine of
/// that kind (there must be one).
fn selector(
    src: &Source<'_>,
    span: Range<usize>,
    key: &str,
    name: &str,
    engines: &[EngineRef<'_>],
) -> Result<EngineSelector, ScenarioError> {
    if engines.iter().any(|e| e.name == name) {
        return Ok(EngineSelector::Named(name.to_string()));
    }
    match EngineKind::from_name(name) {
        Some(k) if engines.iter().any(|e| e.kind == k) => Ok(EngineSelector::Kind(k)),
        _ => {
            let known: Vec<&str> = engines.iter().map(|e| e.name).collect();
            Err(src.at(
                span,
                Some(key),
                format!(
                    "`{name}` is neither an engine ({}) nor the kind of one (accelerator, pu, dma, egress)",
                    known.join(", ")
                ),
            ))
        }
    }
}

/// A tenant's `on` tables, checked: each names engines, and the tenant's
/// SLO with them applied is valid on every engine.
pub(super) fn check_overrides(
    src: &Source<'_>,
    raw: BTreeMap<String, Spanned<RawOverride>>,
    engines: &[EngineRef<'_>],
    name: &str,
    slo: &Slo,
) -> Result<Vec<(EngineSelector, SloOverride)>, ScenarioError> {
    let mut out = Vec::new();
    for (key, o) in raw {
        let span = o.span();
        let on = selector(src, span.clone(), "on", &key, engines)?;
        let o = o.into_inner();
        let burst = |b: Option<f64>, key: &str| match b {
            Some(b) if !(b.is_finite() && b >= 0.0) => Err(src.at(span.clone(), Some(key), "must be >= 0")),
            b => Ok(b.unwrap_or(0.0)),
        };
        let reservation_burst = burst(o.reservation_burst, "reservation_burst")?;
        let limit_burst = o.burst.map_or(0.0, |b| b.0 as f64);
        let change = SloOverride {
            weight: o.weight,
            reservation: o.reservation.map(|r| RateSpec {
                rate: r.0,
                burst: reservation_burst,
            }),
            limit: o.limit.map(|l| RateSpec {
                rate: l.0,
                burst: limit_burst,
            }),
            service_budget: o.budget.map(|b| b.0),
            budget_action: match o.budget_action.as_deref() {
                None => None,
                Some(a) => Some(isola_core::BudgetAction::from_name(a).ok_or_else(|| {
                    src.at(span.clone(), Some("budget_action"), "must be `flag` or `stop`")
                })?),
            },
        };
        out.push((on, change));
        // Checked as the scheduler will see it, on each engine it reaches.
        let tenant = isola_core::Tenant {
            id: TenantId(0),
            name: name.to_string(),
            slo: slo.clone(),
            overrides: out.clone(),
        };
        for e in engines {
            if let Err((field, reason)) = tenant.slo_on(e.name, e.kind).validate() {
                return Err(src.at(span, Some(field), format!("{reason} (on engine `{}`)", e.name)));
            }
        }
    }
    Ok(out)
}

/// A policy run's `on` table, checked: each key names engines, each value
/// a registered policy with valid parameters.
pub(super) fn check_policy_on(
    src: &Source<'_>,
    span: Range<usize>,
    raw: BTreeMap<String, RawPolicyChoice>,
    engines: &[EngineRef<'_>],
) -> Result<Vec<EnginePolicy>, ScenarioError> {
    let mut out = Vec::new();
    for (key, choice) in raw {
        let on = selector(src, span.clone(), "on", &key, engines)?;
        let (name, params) = match choice {
            RawPolicyChoice::Name(n) => (n, BTreeMap::new()),
            RawPolicyChoice::Table { name, params } => (
                name,
                params.into_iter().map(|(k, v)| (k, value_text(v))).collect(),
            ),
        };
        let info = find_policy(&name).map_err(|e| src.at(span.clone(), Some("on"), e.to_string()))?;
        Params::new(format!("policy `{}`", info.name), info.params, &params)
            .map_err(|e| src.at(span.clone(), Some("on"), e.to_string()))?;
        out.push(EnginePolicy { on, name, params });
    }
    Ok(out)
}

/// Adds `tenants` (SLOs and per-engine overrides) and `run`'s policies
/// (its default and those per engine) to `b`.
pub(super) fn configure(tenants: &[TenantSpec], run: &PolicyRun, b: &mut SchedulerBuilder) {
    for t in tenants {
        let id = b.tenant(t.name.clone(), t.slo.clone());
        for (on, change) in &t.overrides {
            b.tenant_on(id, on.clone(), *change);
        }
    }
    b.policy(run.name.clone(), run.params.clone());
    for p in &run.on {
        b.engine_policy(p.on.clone(), p.name.clone(), p.params.clone());
    }
}

impl Scenario {
    /// Configures the core for policy run `run`: the tenants in scenario
    /// order (ids from 0) with their SLOs and per-engine overrides, and the
    /// run's policies. The driver adds the engines first, with its own
    /// cost models (`EngineModel::core_slots` slots each). Both drivers
    /// build their scheduler this way.
    pub fn configure_core(&self, run: &PolicyRun, b: &mut SchedulerBuilder) {
        configure(&self.tenants, run, b);
    }
}
