//! The scheduler: per-tenant virtual channels on each engine, one policy
//! instance per engine, rate shapers for reservations and limits, and
//! accounting. It is driven, never drives:
//!
//! * [`Scheduler::submit`] queues a task (or rejects it with a typed reason
//!   and hands it back: nothing is dropped silently);
//! * [`Scheduler::next`] is called when an engine has a free slot and returns
//!   the next dispatch, or `None`;
//! * [`Scheduler::complete`] reports a dispatch finished, with its measured
//!   service time;
//! * [`Scheduler::next_wakeup`] says when `next` may have something new even
//!   though nothing was submitted or completed (a shaper releasing a tenant,
//!   a policy's period).
//!
//! Order of service on a free slot: first the ready tenant whose reservation
//! is most overdue (mClock's constraint phase), then the policy's pick among
//! ready tenants, and, if the policy says `AtLimit::Allow`, the limited tenant
//! that would be released soonest. A tenant is *ready* when its channel is
//! non-empty and its limit shaper lets its head go now; otherwise it is
//! *throttled* until the shaper's release time.

/// A closure that builds the policy context from an engine's fields
/// (disjoint borrows, so the policy itself can be borrowed mutably beside
/// it), for the policy's calls to build when the policy may read it.
macro_rules! cx {
    ($e:expr) => {
        || $crate::policy::PolicyContext {
            tenants: &$e.shares,
            slots: $e.spec.slots,
            in_flight: &$e.in_flight,
            queued: &$e.queued,
        }
    };
}

mod batch;
mod builder;
mod engine;
mod entry;
mod live;
pub use live::SloChangeError;
#[cfg(test)]
mod plain_tests;
mod plan;
mod static_policy;
pub use plan::MAX_SUBTASKS_PER_TASK;
mod types;

pub use builder::{EnginePolicy, SchedulerBuilder};
pub use types::{
    BuildError, ChannelStats, Completed, Dispatch, DispatchId, DispatchReason, DispatchedTask, RejectReason,
    Rejection, SchedulerError,
};

use crate::engine::{EngineId, EngineSpec};
use crate::flow_queues::Refusal;
use crate::ready_heap::IndexedHeap;
use crate::task::Task;
use crate::tenant::{Tenant, TenantId};
use crate::units::{Bytes, Nanos};
use engine::{ChannelState, EngineState};
use entry::Queued;

/// Channels + policy + shapers + accounting for a set of engines and tenants.
/// See the module documentation for how a driver uses it.
pub struct Scheduler {
    tenants: Vec<Tenant>,
    engines: Vec<EngineState>,
    /// Dispatches in service, on every engine (each engine keeps their
    /// records: a task's last dispatch in its queue entry, issue 34).
    in_service: usize,
    next_seq: u64,
    next_generation: u32,
    closed: bool,
    /// Per tenant: bytes of its tasks queued or in service, on every engine
    /// (what its memory quota bounds).
    /// Kept in `u128`: 2^20 queued tasks of up to 2^64 bytes each cannot
    /// wrap it.
    held: Vec<u128>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("tenants", &self.tenants.len())
            .field("engines", &self.engines.len())
            .field("in_service", &self.in_service)
            .finish()
    }
}

impl Scheduler {
    /// The tenants, by id.
    pub fn tenants(&self) -> &[Tenant] {
        &self.tenants
    }

    /// The engine `id`'s configuration.
    pub fn engine(&self, id: EngineId) -> Option<&EngineSpec> {
        self.engines.get(id.index()).map(|e| &e.spec)
    }

    /// Number of engines.
    pub fn engine_count(&self) -> usize {
        self.engines.len()
    }

    /// Queues `task`. On rejection the task comes back with the reason, and
    /// the rejection is counted when it is the channel's.
    pub fn submit(&mut self, now: Nanos, mut task: Task) -> Result<(), Rejection> {
        let reject = |reason, task| {
            Err(Rejection {
                reason,
                task: Box::new(task),
            })
        };
        if self.closed {
            return reject(RejectReason::Closed, task);
        }
        let t = task.tenant.index();
        if t >= self.tenants.len() {
            return reject(RejectReason::UnknownTenant(task.tenant), task);
        }
        let Some(e) = self.engines.get_mut(task.engine.index()) else {
            return reject(RejectReason::UnknownEngine(task.engine), task);
        };
        // What the engine learned of the operator beats any prediction:
        // it is what such tasks took here.
        let learned = e.learned.as_ref().and_then(|l| l.predict(&task.op, task.bytes));
        let cost = match learned
            .or(task.predicted_cost)
            .or_else(|| e.spec.cost.predict(&task.op.name, task.bytes))
        {
            Some(c) => c,
            None => {
                let op = task.op.name.clone();
                return reject(
                    RejectReason::NoCostModel {
                        engine: task.engine,
                        op,
                    },
                    task,
                );
            }
        };
        if cost > crate::MAX_TASK_COST_NS {
            let limit = crate::MAX_TASK_COST_NS;
            return reject(RejectReason::CostTooLarge { cost, limit }, task);
        }
        task.predicted_cost = Some(cost);
        let bytes = task.bytes;
        if let Some(quota) = self.tenants[t].slo.memory_quota {
            let held = self.held[t];
            if held + u128::from(bytes) > u128::from(quota) {
                e.tenants[t].stats.over_quota += 1;
                let tenant = task.tenant;
                return reject(
                    RejectReason::OverQuota {
                        tenant,
                        quota,
                        held: Bytes::try_from(held).unwrap_or(Bytes::MAX),
                        bytes,
                    },
                    task,
                );
            }
        }
        let (plan, split) = e.plan(now, t, &task);
        let head = plan.head(&task, self.next_seq, 0, 0);
        let count = plan.count();
        let flow = task.flow;
        let tn = &mut e.tenants[t];
        // Checked before the entry is built, so that it is written once,
        // into the channel (issue 34).
        match tn.channel.refuses(flow as usize) {
            None => {}
            Some(Refusal::Full { cap }) => {
                tn.stats.rejected += 1;
                let reason = RejectReason::ChannelFull {
                    tenant: task.tenant,
                    engine: task.engine,
                    cap,
                };
                return reject(reason, task);
            }
            Some(Refusal::UnknownFlow) => {
                let tenant = task.tenant;
                return reject(RejectReason::UnknownFlow { tenant, flow }, task);
            }
        }
        let key = e.entries.insert(Queued {
            task,
            next: head.into(),
            sent: 0,
            index: 0,
            plan,
            split: entry::split_key(split),
            group: None,
        });
        tn.channel.push_admitted(flow as usize, key);
        tn.last_active = Some(now);
        tn.stats.submitted += 1;
        self.next_seq += 1;
        self.held[t] += u128::from(bytes);
        e.queued[t] += count as u64;
        e.queued_cost[t] += head.remaining_cost;
        match tn.state {
            ChannelState::Empty => {
                // The channel was empty: the tenant was idle until now.
                tn.backlogged_since = now;
                e.admit_head(now, t);
            }
            // Its other flow queues wait for ordered subtasks; this one
            // may go.
            ChannelState::Blocked => e.admit_head(now, t),
            // One more task may fill its batch.
            ChannelState::Gathering => {
                e.gathering.remove(t);
                e.admit_head(now, t);
            }
            ChannelState::Ready | ChannelState::Throttled => {}
        }
        // Postconditions: the task is queued within the channel's cap, its
        // cost bounded, and the tenant's bookkeeping consistent.
        debug_assert!(
            {
                let tn = &e.tenants[t];
                tn.channel.len() <= tn.channel.cap() && tn.state != ChannelState::Empty
            },
            "an accepted task is queued within its channel's cap"
        );
        debug_assert!(cost <= crate::MAX_TASK_COST_NS);
        e.debug_check(t);
        Ok(())
    }

    /// The next task for a free slot of `engine` at `now`, or `None` when the
    /// engine is full, nothing is ready, or the policy holds back. On an
    /// engine that batches, [`Scheduler::next_batch`] is what fills a slot
    /// with a batch; `next` hands out one task a slot.
    #[inline]
    pub fn next(&mut self, now: Nanos, engine: EngineId) -> Option<Dispatch> {
        let (t, reason) = self.choose_for_slot(now, engine)?;
        Some(self.take(now, engine, t, reason, None))
    }

    /// The tenant a free slot of `engine` serves at `now`, and why, with
    /// its head chosen and planned for the dispatch; `None` when the
    /// engine is full or nothing may go.
    #[inline]
    fn choose_for_slot(&mut self, now: Nanos, engine: EngineId) -> Option<(usize, DispatchReason)> {
        if self.closed {
            return None;
        }
        let e = self.engines.get_mut(engine.index())?;
        if e.busy >= e.spec.slots {
            return None;
        }
        let (t, reason) = e.choose(now)?;
        // Which of the tenant's flow queues goes is decided now, at its
        // turn: work that came to a queue that goes first meanwhile does.
        // (On the plain path a tenant has one flow queue: it is the one.)
        if !e.plain {
            e.select_at_dispatch(now, t, reason);
        }
        // Whether and how finely a task is split is decided now, at its
        // dispatch: a task that became its channel's head while its tenant
        // was alone is split if another tenant has arrived since.
        e.replan_head(now, t);
        Some((t, reason))
    }

    /// Takes ready tenant `t`'s head on `engine` as a dispatch: in a slot
    /// of its own, or, with `batch`, in that batch's slot.
    #[inline]
    fn take(
        &mut self,
        now: Nanos,
        engine: EngineId,
        t: usize,
        reason: DispatchReason,
        batch: Option<u32>,
    ) -> Dispatch {
        let generation = self.next_generation;
        self.next_generation = self.next_generation.wrapping_add(1);
        let e = &mut self.engines[engine.index()];
        let dispatch = e.take_head(now, engine, t, reason, batch, generation);
        // Postconditions: the dispatch is of an existing tenant's task on
        // this engine, within its slots, and the tenant's bookkeeping holds.
        debug_assert!(
            dispatch.task.tenant.index() == t && t < self.tenants.len(),
            "a dispatch serves the tenant chosen"
        );
        debug_assert!(e.busy <= e.spec.slots && e.in_flight[t] > 0);
        e.debug_check(t);
        self.in_service += 1;
        dispatch
    }

    /// Records that dispatch `id` finished at `now` after `measured` ns of service.
    pub fn complete(
        &mut self,
        now: Nanos,
        id: DispatchId,
        measured: Nanos,
    ) -> Result<Completed, SchedulerError> {
        let Some(e) = self.engines.get(id.engine as usize) else {
            return Err(SchedulerError::UnknownDispatch(id));
        };
        // Each kind of record is read in place, and each in its own copy
        // of the rest (`finish`, inlined twice): where one copy took
        // either, what it read was merged through memory, 40 instructions
        // a completion (issue 34).
        let served = if id.piece {
            e.served_piece(id).map(|s| self.finish(now, id, measured, s))
        } else {
            e.served_entry(id).map(|s| self.finish(now, id, measured, s))
        };
        served.ok_or(SchedulerError::UnknownDispatch(id))
    }

    /// [`Scheduler::complete`] of dispatch `id`, in service, which served `s`.
    #[inline(always)]
    fn finish(&mut self, now: Nanos, id: DispatchId, measured: Nanos, s: entry::Served) -> Completed {
        // Read in place and freed at the end: moving the entry out first
        // copied it to the stack and stalled on reading it back (issue 17).
        let e = &mut self.engines[id.engine as usize];
        let engine = EngineId(id.engine);
        let t = s.task.tenant.index();
        debug_assert!(
            e.busy > 0 && e.in_flight[t] > 0,
            "a dispatch in service holds a slot"
        );
        // A batch's slot is free once its last dispatch is done.
        let frees_slot = match s.batch {
            None => true,
            Some(b) => {
                let left = &mut e.batches[b as usize];
                debug_assert!(*left > 0, "a batch's dispatches complete once each");
                *left -= 1;
                let last = *left == 0;
                if last {
                    e.batches.remove(b as usize);
                }
                last
            }
        };
        if frees_slot {
            e.busy -= 1;
            e.in_flight[t] -= 1;
        }
        let task_done = match s.group {
            None => true,
            // A group missing after `close` means the rest was handed back.
            Some(g) => match e.subtasks_left.get_mut(g) {
                Some(left) => {
                    debug_assert!(*left > 0, "a split task's subtasks complete once each");
                    *left -= 1;
                    let done = *left == 0;
                    if done {
                        e.subtasks_left.remove(g);
                    }
                    done
                }
                None => false,
            },
        };
        let tn = &mut e.tenants[t];
        // A tenant whose work just ended is still active (for
        // `SplitWhen`'s window): a closed loop submits again right after.
        tn.last_active = Some(now);
        let over_budget = tn.budget.is_some_and(|b| measured > b);
        let st = &mut tn.stats;
        st.completed += 1;
        st.tasks_completed += task_done as u64;
        st.bytes_completed += s.head.bytes;
        st.busy_ns = st.busy_ns.saturating_add(measured);
        st.predicted_ns = st.predicted_ns.saturating_add(s.head.cost);
        st.over_budget += over_budget as u64;
        e.policy.on_complete(now, t, &s.head, measured, cx!(e));
        if let Some(learned) = &mut e.learned {
            learned.record(&s.op, s.head.bytes, s.head.cost, measured);
        }
        if task_done {
            debug_assert!(
                self.held[t] >= u128::from(s.task.bytes),
                "a task's bytes are held until it is done"
            );
            self.held[t] -= u128::from(s.task.bytes);
        }
        if !task_done && s.subtask.is_some_and(|st| st.ordered) {
            e.unblock(now, t, s.task.flow as usize);
        }
        let completed = Completed {
            task: s.task.id,
            tenant: s.task.tenant,
            flow: s.task.flow,
            engine,
            bytes: s.head.bytes,
            arrival: s.head.arrival,
            dispatched: s.dispatched,
            completed: now,
            predicted: s.head.cost,
            task_predicted: s.task.predicted_cost,
            measured,
            over_budget,
            subtask: s.subtask,
            task_done,
        };
        e.debug_check(t);
        e.release(id);
        self.in_service -= 1;
        completed
    }

    /// The earliest time `next` may return work although nothing was
    /// submitted or completed in between, over every engine with a free
    /// slot: what a driver should wait for. (A full engine dispatches at its
    /// next completion anyway.)
    pub fn next_wakeup(&self) -> Option<Nanos> {
        self.engines.iter().filter_map(EngineState::next_wakeup).min()
    }

    /// [`Scheduler::next_wakeup`] for one engine.
    pub fn next_wakeup_of(&self, engine: EngineId) -> Option<Nanos> {
        self.engines.get(engine.index())?.next_wakeup()
    }

    /// Counters of `tenant` on `engine`.
    pub fn stats(&self, engine: EngineId, tenant: TenantId) -> Option<&ChannelStats> {
        self.engines
            .get(engine.index())?
            .tenants
            .get(tenant.index())
            .map(|tn| &tn.stats)
    }

    /// Predicted cost of the dispatches waiting on `engine`, per tenant
    /// (work queued, not yet dispatched; empty for an unknown engine).
    pub fn queued_cost(&self, engine: EngineId) -> &[Nanos] {
        self.engines.get(engine.index()).map_or(&[], |e| &e.queued_cost)
    }

    /// Tasks queued for `tenant` on `engine`.
    pub fn queued(&self, engine: EngineId, tenant: TenantId) -> usize {
        self.engines
            .get(engine.index())
            .and_then(|e| e.tenants.get(tenant.index()))
            .map_or(0, |tn| tn.channel.len())
    }

    /// The subtask size `engine`'s policy wants now for `tenant`'s tasks
    /// when the configured size is `default` ([`crate::Policy::split_bytes`]):
    /// ASTRAEA enlarges it while no latency-sensitive work is expected.
    /// Engines with a split rule apply it when they plan a task; this is for
    /// observing it. `default` for an unknown engine or tenant.
    pub fn split_bytes(&self, now: Nanos, engine: EngineId, tenant: TenantId, default: u64) -> u64 {
        match self.engines.get(engine.index()) {
            Some(e) if tenant.index() < self.tenants.len() => {
                e.policy.split_bytes(now, tenant.index(), default).max(1)
            }
            _ => default,
        }
    }

    /// Bytes of `tenant`'s tasks queued or in service, on every engine:
    /// what its memory quota bounds (0 for an unknown tenant).
    pub fn held(&self, tenant: TenantId) -> Bytes {
        // At most the quota, or the sum of sizes the caller handed in.
        self.held
            .get(tenant.index())
            .map_or(0, |&h| Bytes::try_from(h).unwrap_or(Bytes::MAX))
    }

    /// `tenant`'s per-task service budget on `engine` (its SLO there, with
    /// its per-engine overrides), if it has one.
    pub fn service_budget(&self, engine: EngineId, tenant: TenantId) -> Option<Nanos> {
        self.engines
            .get(engine.index())?
            .tenants
            .get(tenant.index())?
            .budget
    }

    /// What `tenant`'s tasks that reach their budget on `engine` get.
    pub fn budget_action(&self, engine: EngineId, tenant: TenantId) -> crate::tenant::BudgetAction {
        self.engines
            .get(engine.index())
            .and_then(|e| e.tenants.get(tenant.index()).map(|tn| tn.budget_action))
            .unwrap_or_default()
    }

    /// What `engine` learned of its operators' costs (empty when it does
    /// not learn them), sorted by operator.
    pub fn learned_costs(&self, engine: EngineId) -> Vec<crate::cost_fit::OpCostReport> {
        self.engines
            .get(engine.index())
            .and_then(|e| e.learned.as_ref())
            .map_or_else(Vec::new, |l| l.report())
    }

    /// Dispatches in service on `engine`.
    pub fn busy(&self, engine: EngineId) -> u32 {
        self.engines.get(engine.index()).map_or(0, |e| e.busy)
    }

    /// Dispatches in service on every engine.
    pub fn in_service(&self) -> usize {
        self.in_service
    }

    /// Stops accepting and dispatching work and returns every queued task,
    /// oldest first per channel, so the driver can complete each one (as
    /// cancelled). Dispatches in service can still be completed.
    pub fn close(&mut self) -> Vec<Task> {
        self.closed = true;
        let mut out = Vec::new();
        for e in &mut self.engines {
            for (t, tn) in e.tenants.iter_mut().enumerate() {
                for key in tn.channel.drain() {
                    let q = e.entries.remove(key as usize);
                    // A partly dispatched task is handed back whole; its
                    // subtasks in service will not report it done.
                    if let Some(g) = q.group {
                        e.subtasks_left.try_remove(g as usize);
                    }
                    assert!(
                        self.held[t] >= u128::from(q.task.bytes),
                        "a queued task's bytes are held"
                    );
                    self.held[t] -= u128::from(q.task.bytes);
                    out.push(q.task);
                }
                tn.state = ChannelState::Empty;
                e.queued[t] = 0;
                e.queued_cost[t] = 0;
            }
            e.throttled = IndexedHeap::new(e.tenants.len());
            e.gathering = IndexedHeap::new(e.tenants.len());
            e.reservation_due = IndexedHeap::new(e.tenants.len());
            for t in 0..e.tenants.len() {
                e.debug_check(t);
            }
        }
        out
    }
}
