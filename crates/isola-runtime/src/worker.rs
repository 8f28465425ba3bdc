//! Engine workers: threads that take work from their engine's FIFO queue,
//! run the operator, time it, and report back to the dispatcher. A panic in
//! an operator fails that piece of work, never the worker.

use crate::job::{Completion, JobInput, PartOutput, Reply, TaskError};
use crate::placed::PlacedOutput;
use crate::runtime::Shared;
use isola_core::Subtask;
use isola_ops::Carry;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// One piece of work: a whole task, or one subtask of it.
pub(crate) struct WorkItem {
    /// The dispatcher's handle on this piece (echoed back).
    pub token: u64,
    /// Whose work it is (index of the tenant).
    pub tenant: usize,
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
    /// The watchdog, where the tenant's budget stops its tasks: the
    /// task's budget and the service it may still take (this piece runs
    /// watched, and stops once it has run that long).
    pub watchdog: Option<Watchdog>,
}

/// What the dispatcher hands an engine's workers in one message: a piece
/// of work, or a batch of a tenant's small tasks ([`isola_core::BatchRule`]),
/// which one worker runs one after another, completing each on its own:
/// one hand-off and one wake-up for all of them.
// `One` goes by value, as a bare `WorkItem` did before batches: boxing it
// would cost every unbatched task an allocation.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Handoff {
    /// One piece.
    One(WorkItem),
    /// A batch's tasks, in the order the core dispatched them.
    Batch(Vec<WorkItem>),
}

/// A piece's stop at its tenant's budget ([`isola_core::BudgetAction::Stop`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Watchdog {
    /// The tenant's budget for the whole task, ns.
    pub budget_ns: u64,
    /// Of it, what this piece may still take, ns (the task's earlier
    /// subtasks took the rest).
    pub left_ns: u64,
}

impl Watchdog {
    /// The error of a piece stopped at the budget, having run since `started`.
    fn over_budget(self, started: Instant) -> TaskError {
        TaskError::OverBudget {
            budget_ns: self.budget_ns,
            ran_ns: (self.budget_ns - self.left_ns).saturating_add(started.elapsed().as_nanos() as u64),
        }
    }
}

/// Asked by the operator between chunks of its work: stop once the
/// clock passes the deadline (one vDSO clock read a chunk).
struct Deadline(Instant);

impl isola_ops::Watch for Deadline {
    fn should_stop(&self) -> bool {
        Instant::now() >= self.0
    }
}

/// A run within a limit (`work_within`): stops at its budget's deadline,
/// if any, or once it has run `limit` from its first look at the watch,
/// whichever comes first. Counting from the first look, not from when
/// the piece was taken, keeps a preemption of the thread before the
/// operator starts (a tick on a machine with more threads than cores)
/// from stopping a task that then takes nanoseconds: a one-chunk task is
/// asked only then, and always runs to its end.
struct WithinLimit {
    budget: Option<Instant>,
    limit: std::time::Duration,
    first_look: std::sync::OnceLock<Instant>,
}

impl WithinLimit {
    /// Whether the limit (not the budget) is what stopped it.
    fn limit_passed(&self) -> bool {
        self.first_look
            .get()
            .is_some_and(|&at| at.elapsed() >= self.limit)
    }
}

impl isola_ops::Watch for WithinLimit {
    fn should_stop(&self) -> bool {
        let now = Instant::now();
        let first = *self.first_look.get_or_init(|| now);
        self.budget.is_some_and(|b| now >= b) || now.duration_since(first) >= self.limit
    }
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
    /// Its engine's busy time when the task was submitted.
    pub busy_at_submit: crate::attribution::BusyReading,
    /// From the task's submission to the dispatcher taking it, ns.
    pub handoff_ns: u64,
    /// Where it goes.
    pub reply: Reply,
    /// The tenant's service budget.
    pub budget: Option<u64>,
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
    /// Of that, how long the worker was off its CPU.
    pub off_cpu_ns: u64,
    /// It ran on the dispatcher's thread.
    pub on_dispatcher: bool,
}

/// Where a worker works: its engine and its place among the engine's
/// workers, and what the runtime's threads share.
pub(crate) struct WorkerPlace {
    pub engine: usize,
    pub index: usize,
    pub shared: Arc<Shared>,
    /// It is the dispatcher's thread, not a worker of the engine's own.
    pub dispatcher: bool,
}

/// Whole tasks predicted to take less than this (50 us) are not timed on
/// the thread's CPU clock: reading it is a system call (0.3-2 us on this
/// project's virtual machine, two a task), as much as a small packet
/// kernel's whole service time; such a task's off-CPU time is reported as
/// none (its wall time, the service time, is measured as always).
pub(crate) const CPU_CLOCK_FROM_NS: u64 = 50_000;

/// Messages a worker sends to the dispatcher.
pub(crate) type DoneSender = crossbeam_channel::Sender<crate::dispatcher::Msg>;

/// Runs items from `queue` until it closes. Once the runtime is cancelled,
/// items still queued are answered `Cancelled` without running.
pub(crate) fn run_worker(queue: crossbeam_channel::Receiver<Handoff>, done: DoneSender, place: WorkerPlace) {
    let mut reports: Vec<WorkDone> = Vec::with_capacity(REPORT_BATCH);
    loop {
        // Held reports go out before the worker waits: the queue is shared
        // with the engine's other workers, so the items that justified
        // holding them may have gone to another.
        let next = match queue.try_recv() {
            Ok(item) => Ok(item),
            Err(crossbeam_channel::TryRecvError::Disconnected) => break,
            Err(crossbeam_channel::TryRecvError::Empty) => {
                if !report(&done, &mut reports) {
                    return;
                }
                crate::spin::recv(&queue, place.shared.thread_spin(), None)
            }
        };
        let Ok(handoff) = next else {
            break;
        };
        let delivered = match handoff {
            Handoff::One(item) => run_one(item, &place, &mut reports),
            Handoff::Batch(items) => {
                // Every item runs, whatever the ones before gave.
                let mut all = true;
                for item in items {
                    all &= run_one(item, &place, &mut reports);
                }
                all
            }
        };
        // While more work waits in the queue than reports are held (the
        // core dispatched ahead), reports of whole tasks gather, up to
        // REPORT_BATCH: the dispatcher learns of them together, woken
        // once instead of once a task. Their tenants were told above, as
        // each task ended; only the core's bookkeeping waits, and the
        // queue stays at least half full meanwhile; they go out, at the
        // latest, when the queue is found empty. A piece the
        // dispatcher must act on (a subtask, a pipeline's stage) is
        // reported at once, with any held (in a batch: once the batch's
        // last task has run).
        if delivered && reports.len() < REPORT_BATCH.min(queue.len()) {
            continue;
        }
        if !report(&done, &mut reports) {
            return;
        }
    }
    // The queue closed (shutdown): whatever is held is still reported.
    report(&done, &mut reports);
}

/// Runs `item` at `place` and keeps its report in `reports`; whether its
/// completion was delivered already (a whole task's).
fn run_one(item: WorkItem, place: &WorkerPlace, reports: &mut Vec<WorkDone>) -> bool {
    let work = work(item, place);
    let delivered = matches!(work.output, Ok(PartOutput::Delivered));
    reports.push(work);
    delivered
}

/// Runs one piece of work at `place`, timed and charged to its engine's
/// busy time; a whole task's completion is delivered here (its report
/// then says `Delivered`). A worker thread runs each item it takes so; the
/// dispatcher runs an engine's items so itself where the engine has no
/// threads of its own ([`crate::EngineConfig::on_dispatcher`]).
pub(crate) fn work(item: WorkItem, place: &WorkerPlace) -> WorkDone {
    match run_timed(item, place, None) {
        Ok(run) => run.done,
        Err(_) => unreachable!("only a run with a limit stops at it"),
    }
}

/// Runs whole task `item` at `place` as [`work`] does, stopping it if it
/// runs longer than `limit` (the dispatcher's run of a small task:
/// `inline.rs`): then it is given back, as it was handed in, to be run
/// elsewhere from the start. A task the operator never asks about again
/// (one chunk of work) runs to its end, and is reported late if it took
/// longer. The operator must be stoppable ([`isola_ops::Operator::stoppable`]).
pub(crate) fn work_within(
    item: WorkItem,
    place: &WorkerPlace,
    limit: std::time::Duration,
) -> Result<RunWithin, Box<WorkItem>> {
    debug_assert!(item.part.is_none(), "only whole tasks run within a limit");
    run_timed(item, place, Some(limit))
}

/// [`work`], with an optional limit on its run past which the item is
/// given back.
fn run_timed(
    mut item: WorkItem,
    place: &WorkerPlace,
    limit: Option<std::time::Duration>,
) -> Result<RunWithin, Box<WorkItem>> {
    let shared = &place.shared;
    let busy = &shared.busy[place.engine];
    let since_epoch = |at: Instant| at.duration_since(shared.epoch).as_nanos() as u64;
    let (token, tenant) = (item.token, item.tenant);
    let direct = item.direct.take();
    // A small whole task is not timed on the thread's CPU clock (see
    // `CPU_CLOCK_FROM_NS`): its off-CPU time is taken as none.
    let timed = direct
        .as_ref()
        .is_none_or(|d| d.completion.predicted_ns >= CPU_CLOCK_FROM_NS);
    let cpu_before = timed.then(crate::host::thread_cpu_ns).flatten();
    let started = Instant::now();
    busy.start(place.index, tenant, since_epoch(started));
    let ran = if shared.cancelled.load(Ordering::Acquire) {
        Ran::Output(Err(TaskError::Cancelled))
    } else {
        if !place.dispatcher {
            // A worker in debt runs the operator, and only the operator,
            // in the normal class (`threads.rs`).
            crate::threads::task_starts();
            let ran = execute(&mut item, started, limit);
            crate::threads::task_ends();
            ran
        } else {
            execute(&mut item, started, limit)
        }
    };
    let ended = Instant::now();
    let measured_ns = ended.duration_since(started).as_nanos() as u64;
    busy.end(place.index, tenant, measured_ns);
    if !place.dispatcher {
        // Before the completion goes out: see `EngineBusy::handed`.
        busy.piece_ended();
    }
    let (mut output, late) = match ran {
        Ran::Output(output) => (output, false),
        Ran::Late(output) => (output, true),
        Ran::OverLimit => {
            item.direct = direct;
            return Err(Box::new(item));
        }
    };
    // Dropped before reporting: the dispatcher may take a placed output
    // back as soon as it hears of the last piece.
    drop(item);
    let off_cpu_ns = match (cpu_before, cpu_before.and_then(|_| crate::host::thread_cpu_ns())) {
        (Some(a), Some(b)) => measured_ns.saturating_sub(b.saturating_sub(a)),
        _ => 0,
    };
    if let Some(d) = direct {
        let result = match output {
            Ok(PartOutput::Whole(out)) => Ok(out),
            Ok(_) => Err(TaskError::Internal("a whole task gave a subtask's result".into())),
            Err(e) => Err(e),
        };
        let ran = !matches!(result, Err(TaskError::Cancelled));
        // The completion is stamped as the run ended: it is built and
        // delivered right here, with no delivery in between to measure.
        let finished_ns = since_epoch(ended);
        let at_end = busy.read(finished_ns, tenant);
        let times = crate::attribution::TaskTimes {
            latency: finished_ns.saturating_sub(d.completion.submitted_ns),
            service: measured_ns,
            off_cpu: off_cpu_ns,
            delivery: 0,
            handoff: d.handoff_ns,
        };
        let breakdown = crate::LatencyBreakdown::attribute(times, d.busy_at_submit, at_end, busy.workers());
        let completion = Completion {
            result,
            started_ns: ran.then(|| since_epoch(started)),
            finished_ns,
            service_ns: measured_ns,
            over_budget: d.budget.is_some_and(|b| measured_ns > b),
            breakdown,
            on_dispatcher: place.dispatcher,
            ..d.completion
        };
        shared.complete(completion, &d.reply);
        output = Ok(PartOutput::Delivered);
    }
    let done = WorkDone {
        token,
        output,
        started,
        measured_ns,
        off_cpu_ns,
        on_dispatcher: place.dispatcher,
    };
    Ok(RunWithin { done, late })
}

/// What running an item gave.
enum Ran {
    /// Its output, or why there is none.
    Output(Result<PartOutput, TaskError>),
    /// A run within a limit ended, but after the limit had passed.
    Late(Result<PartOutput, TaskError>),
    /// It ran past the limit of a run within one, and was stopped.
    OverLimit,
}

/// A run within a limit that ran to its end ([`work_within`]).
pub(crate) struct RunWithin {
    /// Its report.
    pub done: WorkDone,
    /// It ended after the limit had passed (counted from its first look
    /// at the watch): it stands, but ran longer than it was allowed.
    pub late: bool,
}

/// Sends the dispatcher every report in `reports` (emptied), as one
/// message; `false` if the dispatcher is gone (nobody is left to report
/// to).
fn report(done: &DoneSender, reports: &mut Vec<WorkDone>) -> bool {
    let msg = match reports.len() {
        0 => return true,
        1 => crate::dispatcher::Msg::Done(reports.pop().expect("one report")),
        _ => crate::dispatcher::Msg::DoneBatch(std::mem::take(reports)),
    };
    // Never from the normal class (the dispatcher may spin on a send half
    // done, `threads.rs`): the worker is back in its class as each
    // operator returns.
    done.send(msg).is_ok()
}

/// The most reports a worker gathers before it tells the dispatcher.
const REPORT_BATCH: usize = 16;

/// Runs one item (ordered subtasks get the previous carry by value),
/// turning a panic into a typed error; a whole task run within `limit`
/// is stopped there ([`Ran::OverLimit`]), the item kept for another run.
/// `started` is when the item began (its watchdog's deadline counts from it).
fn execute(item: &mut WorkItem, started: Instant, limit: Option<std::time::Duration>) -> Ran {
    let (job, part, watchdog) = (Arc::clone(&item.job), item.part, item.watchdog);
    let (previous, placed) = (item.previous.take(), item.placed.take());
    let deadline = watchdog.map(|w| started + std::time::Duration::from_nanos(w.left_ns));
    if let (Some(limit), Some(op)) = (limit, job.work.operator()) {
        let watch = WithinLimit {
            budget: deadline,
            limit,
            first_look: std::sync::OnceLock::new(),
        };
        return match guarded(op.name(), || Ok(op.run_watched(&job.input, &watch))) {
            Ok(Err(isola_ops::OpError::Stopped { .. })) if deadline.is_none_or(|d| Instant::now() < d) => {
                debug_assert!(
                    watch.limit_passed(),
                    "a run within a limit stops at the limit or the budget"
                );
                Ran::OverLimit
            }
            Ok(Err(isola_ops::OpError::Stopped { .. })) => {
                let w = watchdog.expect("a budget's deadline comes from a watchdog");
                Ran::Output(Err(w.over_budget(started)))
            }
            // Run to its end, but past the limit (a task of one chunk is
            // asked only before it starts): it stands, and says so.
            Ok(result) if watch.limit_passed() => {
                Ran::Late(result.map(PartOutput::Whole).map_err(TaskError::Operator))
            }
            Ok(result) => Ran::Output(result.map(PartOutput::Whole).map_err(TaskError::Operator)),
            Err(e) => Ran::Output(Err(e)),
        };
    }
    Ran::Output(execute_piece(
        job, part, previous, placed, watchdog, deadline, started,
    ))
}

/// Runs one piece to its end (or its budget's `deadline`).
fn execute_piece(
    job: Arc<JobInput>,
    part: Option<Subtask>,
    previous: Option<Carry>,
    placed: Option<PlacedPart>,
    watchdog: Option<Watchdog>,
    deadline: Option<Instant>,
    started: Instant,
) -> Result<PartOutput, TaskError> {
    // A stop by the watch is the tenant's budget, not the operator's failure.
    let over = |e: isola_ops::OpError| match (e, watchdog) {
        (isola_ops::OpError::Stopped { .. }, Some(w)) => w.over_budget(started),
        (e, _) => TaskError::Operator(e),
    };
    let Some(op) = job.work.operator() else {
        return guarded(job.work.name(), || {
            crate::pipeline::run_transfer(&job.work, &job.input, part.as_ref())
        });
    };
    let run = || -> Result<PartOutput, TaskError> {
        match part {
            None => Ok(PartOutput::Whole(match deadline {
                Some(at) => op.run_watched(&job.input, &Deadline(at)).map_err(over)?,
                None => op.run(&job.input)?,
            })),
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
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_string()
    }
}
