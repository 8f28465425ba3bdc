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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreCall {
    /// `submit(now, task)`, and whether the core accepted it.
    Submit {
        /// The time passed.
        now: Nanos,
        /// The task (its id is the runtime's task id).
        task: TaskId,
        /// Its tenant.
        tenant: TenantId,
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
    /// `next(now, engine)`, and the dispatch it answered: the task and the
    /// index of its subtask (`None`: whole), or nothing.
    Next {
        /// The time passed.
        now: Nanos,
        /// The engine asked.
        engine: EngineId,
        /// What it dispatched.
        dispatched: Option<(TaskId, Option<u32>)>,
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
    /// `close()`.
    Close {
        /// When.
        now: Nanos,
    },
}
