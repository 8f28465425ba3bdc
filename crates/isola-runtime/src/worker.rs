//! Engine workers: threads that take work from their engine's FIFO queue,
//! run the operator, time it, and report back to the dispatcher. A panic in
//! an operator fails that piece of work, never the worker.

use crate::job::{Completion, JobInput, PartOutput, Reply, TaskError};
use crate::placed::PlacedOutput;
use crate::runtime::Shared;
use isola_core::Subtask;
use isola_ops::Carry;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// One piece of work: a whole task, or one subtask of it.
pub(crate) struct WorkItem {
    /// The dispatcher's handle on this piece (echoed back).
    pub token: u64,
    /// The job's operator and input.
    pub job: Arc<JobInput>,
    /// The subtask, if the task was split.
    pub part: Option<Subtask>,
    /// For ordered subtasks: the previous subtask's carry.
    pub previous: Option<Carry>,
    /// For subtasks of a placed task: where in the shared output they write.
    pub placed: Option<PlacedPart>,
    /// For a whole task: its completion, filled in and delivered by the
    /// worker itself (one thread hand-off less on every small task).
    pub direct: Option<Direct>,
}

/// A placed subtask's share of its task's output.
pub(crate) struct PlacedPart {
    /// The task's output.
    pub output: Arc<PlacedOutput>,
    /// The ranges this subtask writes (checked disjoint by `PlacedOutput::new`).
    pub regions: Vec<std::ops::Range<usize>>,
}

/// What a worker needs to complete a whole task itself.
pub(crate) struct Direct {
    /// The completion with everything but the outcome and timings.
    pub completion: Completion,
    /// Where it goes.
    pub reply: Reply,
    /// The tenant's service budget.
    pub budget: Option<u64>,
    /// Counters and the clock.
    pub shared: Arc<Shared>,
}

/// What a worker reports.
pub(crate) struct WorkDone {
    /// The item's token.
    pub token: u64,
    /// Its output.
    pub output: Result<PartOutput, TaskError>,
    /// When it started.
    pub started: Instant,
    /// How long it ran.
    pub measured_ns: u64,
}

/// Messages a worker sends to the dispatcher.
pub(crate) type DoneSender = crossbeam_channel::Sender<crate::dispatcher::Msg>;

/// Runs items from `queue` until it closes. Once `cancelled` is set, items
/// still queued are answered `Cancelled` without running.
pub(crate) fn run_worker(
    queue: crossbeam_channel::Receiver<WorkItem>,
    done: DoneSender,
    cancelled: Arc<AtomicBool>,
    spin: std::time::Duration,
) {
    while let Ok(mut item) = crate::spin::recv(&queue, spin, None) {
        let token = item.token;
        let direct = item.direct.take();
        let started = Instant::now();
        let mut output = if cancelled.load(Ordering::Acquire) {
            // Dropped before reporting, like a run item: the dispatcher may
            // take a placed output back as soon as it hears of the last piece.
            drop(item);
            Err(TaskError::Cancelled)
        } else {
            execute(item)
        };
        let measured_ns = started.elapsed().as_nanos() as u64;
        if let Some(d) = direct {
            let result = match output {
                Ok(PartOutput::Whole(out)) => Ok(out),
                Ok(_) => Err(TaskError::Internal("a whole task gave a subtask's result".into())),
                Err(e) => Err(e),
            };
            let ns = |at: Instant| at.duration_since(d.shared.epoch).as_nanos() as u64;
            let ran = !matches!(result, Err(TaskError::Cancelled));
            let completion = Completion {
                result,
                started_ns: ran.then(|| ns(started)),
                finished_ns: ns(Instant::now()),
                service_ns: measured_ns,
                over_budget: d.budget.is_some_and(|b| measured_ns > b),
                ..d.completion
            };
            d.shared.complete(completion, &d.reply);
            output = Ok(PartOutput::Delivered);
        }
        let report = WorkDone {
            token,
            output,
            started,
            measured_ns,
        };
        if done.send(crate::dispatcher::Msg::Done(report)).is_err() {
            // The dispatcher is gone: nobody is left to report to.
            return;
        }
    }
}

/// Runs one item (ordered subtasks get the previous carry by value),
/// turning a panic into a typed error.
fn execute(item: WorkItem) -> Result<PartOutput, TaskError> {
    let WorkItem {
        job,
        part,
        previous,
        placed,
        ..
    } = item;
    let op = job.op.as_ref();
    let run = || -> Result<PartOutput, TaskError> {
        match part {
            None => Ok(PartOutput::Whole(op.run(&job.input)?)),
            Some(part) if placed.is_some() => {
                let placed = placed.as_ref().expect("checked by the guard");
                let placement = op
                    .placement()
                    .ok_or(isola_ops::OpError::NotSplittable { op: op.name() })?;
                // SAFETY: this subtask's ranges, checked disjoint from every
                // other subtask's when the task was split; it runs once.
                let mut slices = unsafe { placed.output.regions(&placed.regions) };
                Ok(PartOutput::Part(placement.run_part_into(
                    &part,
                    &job.input,
                    &mut slices,
                )?))
            }
            Some(part) => {
                let split = op
                    .splitter()
                    .ok_or(isola_ops::OpError::NotSplittable { op: op.name() })?;
                Ok(PartOutput::Part(split.run_part(&part, &job.input, previous)?))
            }
        }
    };
    guarded(op.name(), run)
}

/// Runs operator code (a subtask on a worker; a splitter's plan or
/// reassembly on the dispatcher thread), turning a panic into the task's
/// [`TaskError::Panicked`] instead of the end of the thread, or runtime.
pub(crate) fn guarded<T>(op: &str, f: impl FnOnce() -> Result<T, TaskError>) -> Result<T, TaskError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        Err(TaskError::Panicked {
            op: op.to_string(),
            message: panic_message(panic.as_ref()),
        })
    })
}

/// The text of a panic payload.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_string()
    }
}
