//! Changes to a running scheduler: a tenant's SLO changed while its work
//! is queued (an operator's live reconfiguration), and a tenant's queued
//! work withdrawn (its process died).
//!
//! Both can change what an engine's policy was told (a new share; a
//! channel's head withdrawn), and then the engine builds its policy anew
//! from its recipe with the tenants' current shares and tell
//! it which tenants are ready with their heads: the policy's history
//! (virtual times, deficits, demand estimates) starts afresh at the
//! change, as at a new busy period, and the next decision already follows
//! the new shares. Dispatches in service are not touched: they finish and
//! are completed as before (a policy that counts its own dispatches in
//! service only undercounts those until they complete).

use super::engine::{latency_sensitive, ChannelState, EngineState};
use super::static_policy::StaticPolicy;
use super::Scheduler;
use crate::policy::registry::{PolicyInfo, PolicySetup};
use crate::policy::{Params, PolicyError, TenantShare};
use crate::shaper::RateShaper;
use crate::task::{Task, TaskId};
use crate::tenant::{EngineSelector, Slo, SloOverride, TenantId};
use crate::units::Nanos;
use std::collections::BTreeMap;

/// How an engine's policy was built, to build it again.
#[derive(Clone)]
pub(super) struct PolicyRecipe {
    pub(super) info: PolicyInfo,
    pub(super) params: BTreeMap<String, String>,
}

impl PolicyRecipe {
    /// A new instance for `setup`, with the recipe's checked parameters.
    pub(super) fn build(&self, setup: &PolicySetup<'_>) -> Result<StaticPolicy, PolicyError> {
        let checked = Params::new(
            format!("policy `{}`", self.info.name),
            self.info.params,
            &self.params,
        )?;
        StaticPolicy::build(&self.info, &checked, setup)
    }
}

/// Why a live SLO change was refused (nothing was changed).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SloChangeError {
    /// No such tenant.
    #[error("no tenant {0:?}")]
    UnknownTenant(TenantId),
    /// The new SLO is inconsistent on some engine.
    #[error("tenant `{tenant}`: {field}: {reason}")]
    InvalidSlo {
        /// Tenant name.
        tenant: String,
        /// Offending SLO field.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// An engine's policy cannot serve the tenants with the new SLO (a
    /// static partition with a slot for every tenant, say).
    #[error("engine `{engine}`: {source}")]
    Policy {
        /// The engine.
        engine: String,
        /// The policy's refusal.
        source: PolicyError,
    },
}

impl Scheduler {
    /// Replaces `tenant`'s SLO and its per-engine overrides, effective at
    /// the next decision of every engine. The whole change is checked
    /// first (each engine's resulting SLO, each engine's policy built for
    /// the new shares); if any part is refused nothing changes.
    ///
    /// On each engine the tenant's limit and reservation restart with a
    /// full burst, its queue cap applies to later submissions (tasks
    /// already queued beyond it stay), and the memory quota applies to
    /// later submissions.
    pub fn set_slo(
        &mut self,
        now: Nanos,
        tenant: TenantId,
        slo: Slo,
        overrides: Vec<(EngineSelector, SloOverride)>,
    ) -> Result<(), SloChangeError> {
        let t = tenant.index();
        let Some(current) = self.tenants.get(t) else {
            return Err(SloChangeError::UnknownTenant(tenant));
        };
        let mut changed = current.clone();
        changed.slo = slo;
        changed.overrides = overrides;
        let mut staged = Vec::with_capacity(self.engines.len());
        for e in &self.engines {
            let on = changed.slo_on(&e.spec.name, e.spec.kind);
            on.validate()
                .map_err(|(field, reason)| SloChangeError::InvalidSlo {
                    tenant: changed.name.clone(),
                    field,
                    reason: format!("{reason} (on engine `{}`)", e.spec.name),
                })?;
            let mut shares = e.shares.clone();
            shares[t] = TenantShare {
                weight: on.weight,
                class: on.class,
                latency: on.latency,
            };
            let policy = e
                .recipe
                .build(&PolicySetup {
                    tenants: &shares,
                    slots: e.spec.slots,
                })
                .map_err(|source| SloChangeError::Policy {
                    engine: e.spec.name.clone(),
                    source,
                })?;
            staged.push((on, shares, policy));
        }
        for (e, (on, shares, policy)) in self.engines.iter_mut().zip(staged) {
            assert_eq!(shares.len(), self.tenants.len(), "a share per tenant");
            e.apply_slo(now, t, &on, shares, policy);
            e.debug_check(t);
        }
        self.tenants[t] = changed;
        Ok(())
    }

    /// Takes `tenant`'s queued tasks for which `which` says yes off every
    /// engine and hands them back, oldest first per engine, for the driver
    /// to complete (as cancelled). A task partly dispatched stays: its
    /// pieces in service finish and the rest of it runs, as work in flight
    /// does. Unknown tenant: none.
    pub fn withdraw(
        &mut self,
        now: Nanos,
        tenant: TenantId,
        mut which: impl FnMut(TaskId) -> bool,
    ) -> Vec<Task> {
        let t = tenant.index();
        if t >= self.tenants.len() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for e in &mut self.engines {
            if e.tenants[t].channel.is_empty() {
                continue;
            }
            // Built before anything is taken: should it fail (a
            // registered policy's constructor), nothing is withdrawn here
            // and the tasks run as queued, each still ending once.
            let Ok(policy) = e.recipe.build(&PolicySetup {
                tenants: &e.shares,
                slots: e.spec.slots,
            }) else {
                continue;
            };
            let head_before = e.head_of(t).map(|q| q.task.id);
            // A task partly dispatched (only ever a flow queue's head) stays.
            let entries = &e.entries;
            let withdrawn = e.tenants[t].channel.take_where(|&key| {
                let q = &entries[key as usize].queued;
                q.group.is_none() && which(q.task.id)
            });
            for key in withdrawn {
                let q = e.entries.remove(key as usize);
                // Nothing of a withdrawn task was dispatched: all of its
                // dispatches and bytes are counted as queued and held.
                assert!(q.group.is_none(), "only the head may be partly dispatched");
                assert!(
                    e.queued[t] >= q.plan.count() as u64
                        && e.queued_cost[t] >= q.next.remaining_cost
                        && self.held[t] >= u128::from(q.task.bytes),
                    "a withdrawn task was counted as queued and held"
                );
                e.queued[t] -= q.plan.count() as u64;
                e.queued_cost[t] -= q.next.remaining_cost;
                self.held[t] -= u128::from(q.task.bytes);
                out.push(q.task);
            }
            if e.head_of(t).map(|q| q.task.id) == head_before {
                // Its head is the same: nothing the policy knows changed.
                e.debug_check(t);
                continue;
            }
            // Its head went: the policy is started afresh without it, then
            // told of the new head, if any, as a channel that fills.
            e.throttled.remove(t);
            e.gathering.remove(t);
            e.reservation_due.remove(t);
            let blocked = e.tenants[t].state == ChannelState::Blocked;
            if !blocked {
                e.tenants[t].state = ChannelState::Empty;
            }
            e.restart_policy(now, policy);
            if !blocked && !e.tenants[t].channel.is_empty() {
                e.tenants[t].channel.select();
                e.replan_head(now, t);
                e.admit_head(now, t);
            }
            e.debug_check(t);
        }
        out
    }
}

impl EngineState {
    /// Applies tenant `t`'s new SLO on this engine (`slo`, already
    /// checked), with the shares and the policy built for them.
    fn apply_slo(&mut self, now: Nanos, t: usize, slo: &Slo, shares: Vec<TenantShare>, policy: StaticPolicy) {
        self.shares = shares;
        let tn = &mut self.tenants[t];
        tn.limit = slo.limit.map(RateShaper::new);
        tn.reservation = slo.reservation.map(RateShaper::new);
        tn.budget = slo.service_budget;
        tn.budget_action = slo
            .budget_action
            .unwrap_or(crate::tenant::BudgetAction::default_for(self.spec.kind));
        tn.channel.configure(slo.queue_cap, &slo.flows);
        tn.latency_sensitive = latency_sensitive(slo);
        // Its head is judged again under its new limit.
        self.throttled.remove(t);
        self.gathering.remove(t);
        self.reservation_due.remove(t);
        let was = self.tenants[t].state;
        let waits = matches!(
            was,
            ChannelState::Ready | ChannelState::Throttled | ChannelState::Gathering
        );
        if waits {
            self.tenants[t].state = ChannelState::Empty;
        }
        // The path is chosen again before the head is judged: a limit or
        // a reservation takes the general one.
        self.plain = self.is_plain();
        self.restart_policy(now, policy);
        if waits {
            self.admit_head(now, t);
        }
    }

    /// Replaces the policy with `policy`, told of every ready tenant's head.
    fn restart_policy(&mut self, now: Nanos, policy: StaticPolicy) {
        self.policy = policy;
        for u in 0..self.tenants.len() {
            if self.tenants[u].state != ChannelState::Ready {
                continue;
            }
            if let Some(head) = self.head_of(u).map(super::entry::Queued::head) {
                self.policy.on_ready(now, u, &head, cx!(self));
            }
        }
    }
}
