//! A record of every call the dispatcher makes on the isolation core, with
//! the times it passes, kept when the runtime is built with
//! [`crate::RuntimeBuilder::record_core_calls`] (read through
//! [`crate::Runtime::core_log`]). Replaying it into a
//! scheduler built from the same configuration
//! ([`crate::RuntimeBuilder::scheduler`]) gives the same dispatches in the
//! same order: the evidence that the runtime decides nothing itself.

use isola_core::{Bytes, EngineId, Nanos, TaskId, TenantId};
use std::sync::{Arc, Mutex};

/// A runtime's core log, readable after the runtime is gone (its last
/// calls, made at shutdown, included).
#[derive(Debug, Clone, Default)]
pub struct CoreLog(pub(crate) Arc<Mutex<Vec<CoreCall>>>);

impl CoreLog {
    /// The calls so far, in the order they were made.
    pub fn calls(&self) -> Vec<CoreCall> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }

    pub(crate) fn push(&self, call: CoreCall) {
        if let Ok(mut log) = self.0.lock() {
            log.push(call);
        }
    }
}

/// One call on the core.
#[derive(Debug, Clone, PartialEq)]
pub enum CoreCall {
    /// `submit(now, task)`, and whether the core accepted it.
    Submit {
        /// The time passed.
        now: Nanos,
        /// The task (its id is the runtime's task id).
        task: TaskId,
        /// Its tenant.
        tenant: TenantId,
        /// The tenant's flow queue it waits in.
        flow: u32,
        /// Its engine.
        engine: EngineId,
        /// Its operator's name.
        op: String,
        /// Its input size.
        bytes: Bytes,
        /// Its arrival (when its tenant submitted it; `now` may be later).
        arrival: Nanos,
        /// Its predicted cost.
        predicted: Nanos,
        /// Whether the core queued it.
        accepted: bool,
    },
    /// `next_batch(now, engine, ..)`, and the dispatches it answered: the
    /// first one's task and the index of its subtask (`None`: whole), or
    /// nothing, and those that joined its batch.
    Next {
        /// The time passed.
        now: Nanos,
        /// The engine asked.
        engine: EngineId,
        /// What it dispatched first.
        dispatched: Option<(TaskId, Option<u32>)>,
        /// The tasks that joined the first in its batch (empty on an
        /// engine that does not batch).
        batched: Vec<(TaskId, Option<u32>)>,
    },
    /// `complete(now, dispatch, measured)` for this task's subtask.
    Complete {
        /// The time passed.
        now: Nanos,
        /// The task.
        task: TaskId,
        /// Its subtask's index (`None`: whole).
        subtask: Option<u32>,
        /// The measured service time passed.
        measured: Nanos,
    },
    /// `set_slo(now, tenant, slo, overrides)` (whether it was accepted
    /// the replay finds out again).
    SetSlo {
        /// The time passed.
        now: Nanos,
        /// The tenant.
        tenant: TenantId,
        /// Its new SLO and per-engine overrides.
        slo: Box<(
            isola_core::Slo,
            Vec<(isola_core::EngineSelector, isola_core::SloOverride)>,
        )>,
    },
    /// `withdraw(now, tenant, ..)`, and the tasks it handed back.
    Withdraw {
        /// The time passed.
        now: Nanos,
        /// The tenant.
        tenant: TenantId,
        /// The tasks withdrawn.
        tasks: Vec<TaskId>,
    },
    /// `close()`.
    Close {
        /// When.
        now: Nanos,
    },
}

/// How a replay went: the dispatches it checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replayed {
    /// Dispatches of whole tasks.
    pub whole: u64,
    /// Dispatches of subtasks.
    pub subtasks: u64,
}

/// Replays `calls` into `core` (a scheduler built for the same tenants and
/// engines, e.g. [`crate::RuntimeBuilder::scheduler`] or the simulator's
/// for the same scenario): each submission at its time with its recorded
/// arrival and predicted cost (and the planner `planner` gives for its
/// operator), each completion at its time with its measured service, and
/// checks that every `next` gives the dispatch the runtime got. The error
/// says at which call the two first differ.
pub fn replay(
    calls: &[CoreCall],
    core: &mut isola_core::Scheduler,
    planner: impl Fn(&str) -> Option<isola_core::PlannerRef>,
) -> Result<Replayed, String> {
    use isola_core::{DispatchId, OpSpec, Task};
    use std::collections::HashMap;
    let mut in_service: HashMap<(TaskId, Option<u32>), DispatchId> = HashMap::new();
    let mut done = Replayed::default();
    for (i, call) in calls.iter().enumerate() {
        match call {
            CoreCall::Submit {
                now,
                task,
                tenant,
                flow,
                engine,
                op,
                bytes,
                arrival,
                predicted,
                accepted,
            } => {
                let t = Task {
                    id: *task,
                    tenant: *tenant,
                    engine: *engine,
                    op: OpSpec::named(op.as_str()),
                    bytes: *bytes,
                    arrival: *arrival,
                    deadline: None,
                    predicted_cost: Some(*predicted),
                    planner: planner(op),
                    flow: *flow,
                };
                if core.submit(*now, t).is_ok() != *accepted {
                    return Err(format!("call {i}: {task:?} accepted {} live, not here", accepted));
                }
            }
            CoreCall::Next {
                now,
                engine,
                dispatched,
                batched,
            } => {
                let mut batch = Vec::new();
                core.next_batch(*now, *engine, &mut batch);
                let mut got = batch.iter().map(|d| (d.task.id, d.subtask.map(|s| s.index)));
                let (first, rest) = (got.next(), got.collect::<Vec<_>>());
                if first != *dispatched || rest != *batched {
                    return Err(format!(
                        "call {i} at {now} ns: {first:?} + {rest:?} here, {dispatched:?} + {batched:?} live"
                    ));
                }
                for d in batch {
                    match d.subtask {
                        Some(_) => done.subtasks += 1,
                        None => done.whole += 1,
                    }
                    in_service.insert((d.task.id, d.subtask.map(|s| s.index)), d.id);
                }
            }
            CoreCall::Complete {
                now,
                task,
                subtask,
                measured,
            } => {
                let id = in_service
                    .remove(&(*task, *subtask))
                    .ok_or_else(|| format!("call {i}: {task:?} completed, never dispatched here"))?;
                core.complete(*now, id, *measured)
                    .map_err(|e| format!("call {i}: {e}"))?;
            }
            CoreCall::SetSlo { now, tenant, slo } => {
                let (slo, overrides) = slo.as_ref().clone();
                // A refused change is refused here too; both change nothing.
                let _ = core.set_slo(*now, *tenant, slo, overrides);
            }
            CoreCall::Withdraw { now, tenant, tasks } => {
                let back: Vec<TaskId> = core
                    .withdraw(*now, *tenant, |id| tasks.contains(&id))
                    .iter()
                    .map(|t| t.id)
                    .collect();
                if back != *tasks {
                    return Err(format!("call {i}: withdrew {back:?} here, {tasks:?} live"));
                }
            }
            CoreCall::Close { .. } => {
                core.close();
            }
        }
    }
    if !in_service.is_empty() {
        return Err(format!("{} dispatches never completed", in_service.len()));
    }
    Ok(done)
}
