//! Delivering a split task's completion off the dispatcher thread.
//!
//! A split task's output is built when its last subtask ends: reassembled
//! from its pieces, or finished in place, then handed to its submitter,
//! which may copy it somewhere (isolad copies it into the tenant's arena).
//! For a task of megabytes that is a millisecond of copying. Done on the
//! dispatcher thread, it is a millisecond in which no tenant's submission
//! is taken (isolad's rings are polled by the dispatcher), no completion
//! reported and no slot filled: one tenant's large outputs become every
//! tenant's latency (measured: a crc32c tenant's median went from 80 us to
//! 1.8 ms beside 8 MiB erasure-coding tasks). So the last stage of a split
//! task is reassembled and delivered on a thread of its own, in the order
//! the dispatcher finished them; the dispatcher only hands it over.
//! Whole tasks are delivered by the worker that ran them, as before.

use super::{reassemble, Dispatcher, TaskInFlight};
use crate::job::{Completion, TaskError};
use crate::runtime::Shared;
use isola_core::Nanos;
use std::sync::Arc;

/// A task to reassemble and deliver, with what its completion needs.
pub(crate) struct Delivery {
    task: TaskInFlight,
    /// The tenant's service budget on the task's engine.
    budget: Option<Nanos>,
}

/// Delivers each task it is given until the dispatcher is gone.
pub(crate) fn run_delivery(shared: Arc<Shared>, rx: crossbeam_channel::Receiver<Delivery>) {
    loop {
        let d = match rx.try_recv() {
            Ok(d) => d,
            Err(crossbeam_channel::TryRecvError::Disconnected) => break,
            Err(crossbeam_channel::TryRecvError::Empty) => {
                crate::threads::waits();
                let got = rx.recv();
                crate::threads::woke();
                match got {
                    Ok(d) => d,
                    Err(_) => break,
                }
            }
        };
        let mut task = d.task;
        let result = take_result(&mut task);
        let now = shared.epoch.elapsed().as_nanos() as Nanos;
        complete(&shared, task, result, now, d.budget);
    }
}

/// The task's output or error: what it ended with, else its pieces
/// reassembled.
pub(super) fn take_result(task: &mut TaskInFlight) -> Result<Vec<u8>, TaskError> {
    match (task.error.take(), task.output.take()) {
        (Some(e), _) => Err(e),
        (None, Some(out)) => Ok(out),
        (None, None) => reassemble(task),
    }
}

/// Sends `task`'s one completion with `result`, finished at `now`, and
/// counts it.
pub(super) fn complete(
    shared: &Shared,
    task: TaskInFlight,
    result: Result<Vec<u8>, TaskError>,
    now: Nanos,
    budget: Option<Nanos>,
) {
    let completion = task.completion(result, now);
    let completion = Completion {
        over_budget: budget.is_some_and(|b| task.service_ns > b),
        ..completion
    };
    shared.complete(completion, &task.reply);
}

impl Dispatcher {
    /// Hands the last stage of split task `task` to the delivery thread;
    /// gives it back if there is none (it is then finished here).
    pub(super) fn deliver_elsewhere(&mut self, task: TaskInFlight) -> Option<TaskInFlight> {
        let Some(tx) = &self.delivery else {
            return Some(task);
        };
        let budget = self
            .scheduler
            .service_budget(isola_core::EngineId(task.engine as u32), task.tenant);
        match tx.send(Delivery { task, budget }) {
            Ok(()) => None,
            Err(back) => Some(back.0.task),
        }
    }
}
