//! Building a [`Scheduler`]: tenants (with per-engine SLO overrides),
//! engines and their policies (one by default, overridable per engine kind
//! or per engine), checked.

use super::engine::EngineState;
use super::live::PolicyRecipe;
use super::{BuildError, Scheduler};
use crate::engine::{EngineId, EngineKind, EngineSpec};
use crate::policy::registry::{check_unique, find_policy_in, PolicyInfo, PolicySetup};
use crate::policy::TenantShare;
use crate::tenant::{EngineSelector, Slo, SloOverride, Tenant, TenantId};
use std::collections::BTreeMap;

/// A policy for some engines instead of the scheduler's default.
#[derive(Debug, Clone, PartialEq)]
pub struct EnginePolicy {
    /// The engines it runs on.
    pub on: EngineSelector,
    /// Registered policy name.
    pub name: String,
    /// Its parameters.
    pub params: BTreeMap<String, String>,
}

impl EnginePolicy {
    /// The policy among `policies` that engine `name` of kind `kind` runs,
    /// by the one rule every driver follows: one named for the engine
    /// beats one for its kind; `None` if neither is given (the run's
    /// default then, else the kind's, [`EngineKind::default_policy`]).
    pub fn choose<'a>(
        policies: &'a [EnginePolicy],
        name: &str,
        kind: EngineKind,
    ) -> Option<&'a EnginePolicy> {
        policies
            .iter()
            .find(|p| p.on.names(name))
            .or_else(|| policies.iter().find(|p| p.on == EngineSelector::Kind(kind)))
    }
}

/// No parameters: a kind's default policy runs with its own defaults.
static NO_PARAMS: BTreeMap<String, String> = BTreeMap::new();

/// Builds a [`Scheduler`].
#[derive(Debug, Default)]
pub struct SchedulerBuilder {
    tenants: Vec<Tenant>,
    engines: Vec<EngineSpec>,
    /// The policy of every engine not given one of its own (`None`: each
    /// engine's kind's default).
    policy: Option<(String, BTreeMap<String, String>)>,
    /// Policies for some engines, by kind or name.
    engine_policies: Vec<EnginePolicy>,
    /// Policies the caller registered beside the built-in ones.
    registered: Vec<PolicyInfo>,
}

impl SchedulerBuilder {
    /// A builder with no tenants or engines, each engine to run its
    /// kind's default policy ([`EngineKind::default_policy`]) unless
    /// [`SchedulerBuilder::policy`] or [`SchedulerBuilder::engine_policy`]
    /// says otherwise.
    pub fn new() -> Self {
        SchedulerBuilder::default()
    }

    /// Adds a tenant; ids are given in insertion order from 0.
    pub fn tenant(&mut self, name: impl Into<String>, slo: Slo) -> TenantId {
        let id = TenantId(self.tenants.len() as u32);
        self.tenants.push(Tenant {
            id,
            name: name.into(),
            slo,
            overrides: Vec::new(),
        });
        id
    }

    /// Changes tenant `tenant`'s SLO on the engines `on` selects (see
    /// [`Tenant::slo_on`] for which setting wins). Ignored for a tenant
    /// not added.
    pub fn tenant_on(&mut self, tenant: TenantId, on: EngineSelector, change: SloOverride) -> &mut Self {
        if let Some(t) = self.tenants.get_mut(tenant.index()) {
            t.overrides.push((on, change));
        }
        self
    }

    /// Adds an engine; ids are given in insertion order from 0.
    pub fn engine(&mut self, spec: EngineSpec) -> EngineId {
        self.engines.push(spec);
        EngineId(self.engines.len() as u32 - 1)
    }

    /// Registers policy `info` (from any crate: its fields are public, its
    /// `build` a plain function) beside the built-in ones, so that
    /// [`SchedulerBuilder::policy`] and [`SchedulerBuilder::engine_policy`]
    /// can name it. A name or alias already taken is an error at
    /// [`SchedulerBuilder::build`]. See docs/adding-a-policy.md.
    pub fn register_policy(&mut self, info: PolicyInfo) -> &mut Self {
        self.registered.push(info);
        self
    }

    /// Uses policy `name` (see [`crate::policy::POLICIES`], and those
    /// registered) with `params`.
    pub fn policy(&mut self, name: impl Into<String>, params: BTreeMap<String, String>) -> &mut Self {
        self.policy = Some((name.into(), params));
        self
    }

    /// Uses policy `name` with `params` on the engines `on` selects instead
    /// of the default: a policy named for an engine beats one for its
    /// kind, which beats the default ([`SchedulerBuilder::policy`]). A
    /// later call for the same selector replaces an earlier one.
    pub fn engine_policy(
        &mut self,
        on: EngineSelector,
        name: impl Into<String>,
        params: BTreeMap<String, String>,
    ) -> &mut Self {
        self.engine_policies.retain(|p| p.on != on);
        self.engine_policies.push(EnginePolicy {
            on,
            name: name.into(),
            params,
        });
        self
    }

    /// The policy and parameters engine `spec` runs.
    fn policy_of(&self, spec: &EngineSpec) -> (&str, &BTreeMap<String, String>) {
        match (
            EnginePolicy::choose(&self.engine_policies, &spec.name, spec.kind),
            &self.policy,
        ) {
            (Some(p), _) => (&p.name, &p.params),
            (None, Some((name, params))) => (name, params),
            (None, None) => (spec.kind.default_policy(), &NO_PARAMS),
        }
    }

    /// Checks everything and builds one policy instance per engine.
    pub fn build(self) -> Result<Scheduler, BuildError> {
        if self.tenants.is_empty() || self.engines.is_empty() {
            return Err(BuildError::Empty);
        }
        for (i, t) in self.tenants.iter().enumerate() {
            if self.tenants[..i].iter().any(|o| o.name == t.name) {
                return Err(BuildError::DuplicateTenant(t.name.clone()));
            }
            t.slo
                .validate()
                .map_err(|(field, reason)| BuildError::InvalidSlo {
                    tenant: t.name.clone(),
                    field,
                    reason,
                })?;
        }
        for (i, info) in self.registered.iter().enumerate() {
            check_unique(info, &self.registered[..i]).map_err(BuildError::Registry)?;
        }
        for p in &self.engine_policies {
            if !self.engines.iter().any(|e| p.on.selects(&e.name, e.kind)) {
                return Err(BuildError::NoSuchEngine(p.on.to_string()));
            }
        }
        let mut engines = Vec::with_capacity(self.engines.len());
        for (i, spec) in self.engines.iter().enumerate() {
            if self.engines[..i].iter().any(|e| e.name == spec.name) {
                return Err(BuildError::DuplicateEngine(spec.name.clone()));
            }
            if spec.slots == 0 {
                return Err(BuildError::NoSlots(spec.name.clone()));
            }
            // Each tenant's SLO on this engine, checked as a whole.
            let mut slos = Vec::with_capacity(self.tenants.len());
            for t in &self.tenants {
                let slo = t.slo_on(&spec.name, spec.kind);
                slo.validate().map_err(|(field, reason)| BuildError::InvalidSlo {
                    tenant: t.name.clone(),
                    field,
                    reason: format!("{reason} (on engine `{}`)", spec.name),
                })?;
                slos.push(slo);
            }
            let shares: Vec<TenantShare> = slos
                .iter()
                .map(|slo| TenantShare {
                    weight: slo.weight,
                    class: slo.class,
                    latency: slo.latency,
                })
                .collect();
            let setup = PolicySetup {
                tenants: &shares,
                slots: spec.slots,
            };
            let (name, params) = self.policy_of(spec);
            let policy_error = |source| BuildError::Policy {
                engine: spec.name.clone(),
                source,
            };
            let recipe = PolicyRecipe {
                info: *find_policy_in(&self.registered, name).map_err(policy_error)?,
                params: params.clone(),
            };
            let policy = recipe.build(&setup).map_err(policy_error)?;
            engines.push(EngineState::new(spec.clone(), policy, recipe, &slos, shares));
        }
        let tenants = self.tenants;
        Ok(Scheduler {
            held: vec![0; tenants.len()],
            tenants,
            engines,
            in_service: 0,
            next_seq: 0,
            next_generation: 0,
            closed: false,
        })
    }
}
