//! A policy run's policy on some engines (`on = { NAME = "policy" }`),
//! where NAME is an engine's name or an engine kind (`accelerator`, `pu`,
//! `dma`, `egress`), as a tenant's `[tenant.on.NAME]` names them
//! (`crate::tenant`). Also how a driver
//! configures the core for a run: both drivers call
//! [`Scenario::configure_core`], so the simulator and `isola run` build
//! the same scheduler.

use super::raw::value_text;
use super::source::Source;
use super::{PolicyRun, Scenario, ScenarioError, TenantSpec};
use crate::tenant::{selector, EngineRef};
use isola_core::params::Params;
use isola_core::policy::find_policy;
use isola_core::{EnginePolicy, SchedulerBuilder};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ops::Range;

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
