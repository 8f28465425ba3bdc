//! Building a [`Scheduler`]: tenants, engines and the policy, checked.

use super::engine::EngineState;
use super::{BuildError, Scheduler};
use crate::engine::{EngineId, EngineSpec};
use crate::policy::registry::PolicySetup;
use crate::policy::{build_policy, TenantShare};
use crate::tenant::{Slo, Tenant, TenantId};
use slab::Slab;
use std::collections::BTreeMap;

/// Builds a [`Scheduler`].
#[derive(Debug, Default)]
pub struct SchedulerBuilder {
    tenants: Vec<Tenant>,
    engines: Vec<EngineSpec>,
    policy: String,
    params: BTreeMap<String, String>,
}

impl SchedulerBuilder {
    /// A builder with policy `fcfs` and no tenants or engines.
    pub fn new() -> Self {
        SchedulerBuilder {
            policy: "fcfs".into(),
            ..Default::default()
        }
    }

    /// Adds a tenant; ids are given in insertion order from 0.
    pub fn tenant(&mut self, name: impl Into<String>, slo: Slo) -> TenantId {
        let id = TenantId(self.tenants.len() as u32);
        self.tenants.push(Tenant {
            id,
            name: name.into(),
            slo,
        });
        id
    }

    /// Adds an engine; ids are given in insertion order from 0.
    pub fn engine(&mut self, spec: EngineSpec) -> EngineId {
        self.engines.push(spec);
        EngineId(self.engines.len() as u32 - 1)
    }

    /// Uses policy `name` (see [`crate::policy::POLICIES`]) with `params`.
    pub fn policy(&mut self, name: impl Into<String>, params: BTreeMap<String, String>) -> &mut Self {
        self.policy = name.into();
        self.params = params;
        self
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
        let shares: Vec<TenantShare> = self
            .tenants
            .iter()
            .map(|t| TenantShare {
                weight: t.slo.weight,
                class: t.slo.class,
                latency: t.slo.latency,
            })
            .collect();
        let mut engines = Vec::with_capacity(self.engines.len());
        for (i, spec) in self.engines.into_iter().enumerate() {
            if engines[..i]
                .iter()
                .any(|e: &EngineState| e.spec.name == spec.name)
            {
                return Err(BuildError::DuplicateEngine(spec.name));
            }
            if spec.slots == 0 {
                return Err(BuildError::NoSlots(spec.name));
            }
            let setup = PolicySetup {
                tenants: &shares,
                slots: spec.slots,
            };
            let policy =
                build_policy(&self.policy, &self.params, &setup).map_err(|source| BuildError::Policy {
                    engine: spec.name.clone(),
                    source,
                })?;
            engines.push(EngineState::new(spec, policy, &self.tenants, shares.clone()));
        }
        Ok(Scheduler {
            tenants: self.tenants,
            engines,
            in_service: Slab::new(),
            next_seq: 0,
            next_generation: 0,
            closed: false,
        })
    }
}
