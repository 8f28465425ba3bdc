//! A pipeline's next stage: when a task's stage is done and stages remain,
//! the dispatcher submits the next one to the core on its engine, with the
//! stage's output as its input (a DMA write's or a send's input, which
//! they pass on unchanged), as the simulator does; the task's one
//! completion comes after its last stage, its latency from its first
//! submission. A stage the core refuses ends the task with the refusal;
//! once shutdown has begun, the next stage is not started and the task
//! ends `Cancelled`.

use super::{Dispatcher, TaskInFlight};
use crate::job::{JobInput, TaskError};
use std::sync::Arc;

impl Dispatcher {
    /// Starts `task`'s next stage on `out`, the output of the stage it
    /// finished.
    pub(super) fn next_stage(&mut self, mut task: TaskInFlight, out: Vec<u8>) {
        let now = self.now();
        if self.shutdown_ack.is_some() {
            return self.finish(task, Err(TaskError::Cancelled));
        }
        let Some(next) = task.rest.pop_front() else {
            unreachable!("a task goes to its next stage only while it has one");
        };
        let input = if task.input.work.passes_input_on() {
            Arc::clone(&task.input.input)
        } else {
            Arc::new(out)
        };
        let bytes = input.len() as u64;
        // The model is guarded (a panic is no prediction); without one the
        // stage is charged nothing rather than refused halfway.
        task.stage_predicted_ns =
            isola_core::CostModel::predict(&*next.cost, next.work.name(), bytes).unwrap_or(0);
        task.engine = next.engine;
        task.input = Arc::new(JobInput {
            work: next.work,
            input,
        });
        task.cost = next.cost;
        task.planner = None;
        task.subtasks = 1;
        task.carries.clear();
        task.placed = None;
        task.regions.clear();
        task.output = None;
        task.delivered = false;
        task.settled = false;
        task.error = None;
        task.workers = self.shared.engines[next.engine].workers;
        // Its queueing on this stage's engine is what the breakdown sees
        // from here on.
        task.busy_at_submit = self.shared.busy[next.engine].read(now, task.tenant.index());
        task.busy_at_end = task.busy_at_submit;
        self.submit_stage(now, task, now);
    }
}
