//! The dispatcher thread: owns the isolation core's `Scheduler`, submits
//! each tenant task to it, hands what it dispatches (whole tasks or the
//! subtasks it split them into) to the engines' worker queues, or runs it
//! itself for an engine with no workers (`dispatch`), reports each back
//! with its measured service time, and turns the results into each task's
//! one completion.
//!
//! It decides nothing: whether and how finely a task is split, in what
//! order tenants are served and how many dispatches an engine holds are the
//! core's (native mode is the core's `fcfs` on whole tasks). It owns
//! threads, buffers and carries: the operator's plan of the subtasks (asked
//! by the core through [`OperatorPlanner`]), the shared output placed
//! subtasks write into, and the carries it reassembles.
//!
//! Code it runs but did not write cannot stop it: cost models and
//! planners are guarded where they are called (`guard`), and a panic in
//! the scheduler itself (a policy's) takes that engine out of service: its
//! tasks end with `TaskError::CoreFailed`, and the other engines go on.

mod control;
mod costs;
mod delivery;
pub(crate) use delivery::{run_delivery, Delivery};
mod dispatch;
mod inline;
pub use inline::INLINE_OVERRUN;
mod shutdown;
mod stages;
pub(crate) use control::Control;
pub use control::ControlError;

use crate::attribution::{BusyReading, LatencyBreakdown, TaskTimes};
use crate::guard::catch;
use crate::job::{Completion, JobInput, PartOutput, Reply, TaskError};
use crate::pipeline::{StagePlan, Work};
use crate::placed::PlacedOutput;
use crate::runtime::Shared;
use crate::worker::{guarded, Handoff, WorkDone, WorkerPlace};
use foldhash::HashMap;
use isola_core::{
    Bytes, DispatchId, EngineId, Nanos, OpSpec, PlannerRef, Scheduler, Subtask, SubtaskPlanner, Task, TaskId,
    TenantId,
};
use isola_ops::Carry;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The most messages the dispatcher takes, once woken, before it fills
/// the engines again.
const DRAIN: usize = 64;

/// What the dispatcher is told.
pub(crate) enum Msg {
    /// A tenant's task.
    Submit(Submission),
    /// A tenant's tasks, sent at once (`TenantHandle::submit_batch_calling`):
    /// each submitted to the core in turn, then dispatched as one.
    SubmitBatch(Vec<Submission>),
    /// A worker finished a piece of work.
    Done(WorkDone),
    /// A worker finished several pieces of work back to back (its queue
    /// still held more, so it reported them together: one wake-up of the
    /// dispatcher instead of one a piece).
    DoneBatch(Vec<WorkDone>),
    /// Cancel what is queued, finish what runs until the deadline (then
    /// abandon it), then stop; acknowledge.
    Shutdown(crossbeam_channel::Sender<()>, Duration),
    /// A withdrawal of queued work (`Control::Withdraw`): on the data
    /// path, behind the submissions it must see.
    Control(Control),
    /// Poll this too, from now on.
    AddPoller(Box<dyn crate::Poller>),
    /// Something for a poller arrived while the dispatcher slept.
    Wake,
}

/// A task as a tenant submitted it (already checked by its handle).
pub(crate) struct Submission {
    pub id: u64,
    pub tenant: TenantId,
    /// The tenant's flow queue it waits in.
    pub flow: u32,
    /// The name its completion carries (its first stage's).
    pub op_name: String,
    /// Its first stage: engine, work, and the model its costs are
    /// predicted with (its tenant's, else its engine's; guarded): the
    /// whole stage's and each subtask's alike.
    pub stage: StagePlan,
    /// The stages after it, in order.
    pub rest: VecDeque<StagePlan>,
    pub input: Arc<Vec<u8>>,
    /// The first stage's predicted cost, and every stage's summed.
    pub predicted_ns: Nanos,
    pub predicted_total_ns: Nanos,
    pub submitted: Instant,
    pub reply: Reply,
    /// Its engine's busy time when it was submitted.
    pub busy_at_submit: BusyReading,
}

/// Plans a task's subtasks with its operator's [`isola_ops::Splitter`]
/// when the core decides to split it, and keeps the plan: the dispatcher
/// needs every subtask's output ranges before the first one runs.
pub(crate) struct OperatorPlanner {
    input: Arc<JobInput>,
    cost: Arc<dyn isola_core::CostModel>,
    /// The plan last given to the core: the one its subtasks come from.
    planned: Mutex<Option<Vec<Subtask>>>,
}

impl SubtaskPlanner for OperatorPlanner {
    fn plan(&self, task: &Task, split: Bytes) -> Option<Vec<Subtask>> {
        let op = self.input.work.operator()?;
        let splitter = op.splitter()?;
        let len = self.input.input.len();
        // A plan that fails or panics leaves the task whole: the operator
        // then meets the input whole and reports what is wrong with it.
        let plan = guarded(op.name(), || {
            splitter
                .plan(task.id, len, usize::try_from(split).unwrap_or(usize::MAX))
                .map_err(TaskError::Operator)
        })
        .ok()
        .map(|mut parts| {
            let ordered = splitter.ordered();
            parts.iter_mut().for_each(|p| p.ordered = ordered);
            parts
        });
        if let Ok(mut planned) = self.planned.lock() {
            planned.clone_from(&plan);
        }
        plan
    }

    fn predict(&self, _task: &Task, bytes: Bytes) -> Option<Nanos> {
        self.cost
            .predict(self.input.work.name(), bytes)
            .filter(|&ns| ns > 0)
    }
}

/// A submitted task until its completion is sent.
struct TaskInFlight {
    id: u64,
    tenant: TenantId,
    /// Its current stage's engine.
    engine: usize,
    op_name: String,
    /// Its current stage's work and input.
    input: Arc<JobInput>,
    /// Its stages still to run, in order (a pipeline's).
    rest: VecDeque<StagePlan>,
    /// Its input's size as submitted (its first stage's).
    bytes: u64,
    planner: Option<Arc<OperatorPlanner>>,
    /// The tenant's flow queue it waits in, at every stage.
    flow: u32,
    reply: Reply,
    submitted_ns: Nanos,
    started_ns: Option<Nanos>,
    service_ns: Nanos,
    predicted_ns: Nanos,
    /// How many subtasks the core split it into (1: whole).
    subtasks: u32,
    /// Unordered subtasks: each one's carry. Ordered: the latest in slot 0.
    carries: Vec<Option<Carry>>,
    /// For operators with a `Placement`: the output every subtask writes
    /// its share of in place, and each subtask's ranges of it.
    placed: Option<Arc<PlacedOutput>>,
    regions: Vec<Vec<Range<usize>>>,
    /// A whole task's output (when its worker did not deliver it).
    output: Option<Vec<u8>>,
    /// Its worker delivered its completion itself.
    delivered: bool,
    /// Dispatches handed to workers and not yet reported back.
    running: usize,
    /// The core is done with it: its last dispatch completed, or it was
    /// handed back at shutdown.
    settled: bool,
    error: Option<TaskError>,
    /// Its engine's busy time when it was submitted, and when its latest
    /// piece was reported ended.
    busy_at_submit: BusyReading,
    busy_at_end: BusyReading,
    /// When its latest piece ended, ns.
    ended_ns: Option<Nanos>,
    /// Time its workers were off their CPU while serving it, ns.
    off_cpu_ns: Nanos,
    /// Its engine's worker count.
    workers: usize,
    /// Its latest piece ran on the dispatcher's thread.
    on_dispatcher: bool,
    /// From its submission to the dispatcher taking it, ns.
    handoff_ns: Nanos,
    /// Its current stage's predicted cost, and its cost model.
    stage_predicted_ns: Nanos,
    cost: Arc<dyn isola_core::CostModel>,
}

/// A dispatch on a worker queue.
struct Running {
    task: u64,
    dispatch: DispatchId,
    subtask: Option<Subtask>,
}

pub(crate) struct Dispatcher {
    shared: Arc<Shared>,
    rx: crossbeam_channel::Receiver<Msg>,
    /// Live changes: taken before anything of `rx` (`control.rs`).
    controls: crossbeam_channel::Receiver<Control>,
    scheduler: Scheduler,
    queues: Vec<crossbeam_channel::Sender<Handoff>>,
    tasks: HashMap<u64, TaskInFlight>,
    running: HashMap<u64, Running>,
    next_token: u64,
    shutdown_ack: Option<crossbeam_channel::Sender<()>>,
    /// The planner of every task whose operator cannot be split.
    unsplittable: PlannerRef,
    /// Engines whose scheduling core failed (a policy panicked), and why.
    failed: Vec<Option<String>>,
    /// Whether an engine learns its operators' costs (see `costs.rs`).
    learns: bool,
    /// When the learned costs were last published.
    costs_published: Nanos,
    /// Where split tasks' last stages go to be delivered (`delivery.rs`);
    /// dropped with the dispatcher, which ends the delivery thread.
    delivery: Option<crossbeam_channel::Sender<Delivery>>,
    /// When shutdown gives up on what still runs.
    shutdown_deadline: Option<Instant>,
    /// How long shutdown lets running work finish.
    shutdown_grace: Duration,
    /// Sources polled beside the channel.
    pollers: Vec<Box<dyn crate::Poller>>,
    /// Per engine run on this thread ([`crate::EngineConfig::on_dispatcher`]):
    /// its one place; `None` for an engine with workers of its own.
    places: Vec<Option<WorkerPlace>>,
    /// Per engine with workers whose small tasks may run on this thread
    /// ([`crate::EngineConfig::inline_below`]): which do, and its worker
    /// 0's place, where they run (`inline.rs`).
    inline: Vec<Option<(inline::Inline, WorkerPlace)>>,
    /// The last pump stopped at its budget of work run on this thread,
    /// more perhaps left to run: the next turn looks at arrivals without
    /// waiting for them.
    more_here: bool,
    /// What the core hands out for one slot (reused).
    batch: Vec<isola_core::Dispatch>,
    /// Work run on this thread since the dispatcher last looked at
    /// arrivals: how many pieces, and from when (`dispatch::RUN_HERE`).
    turn: (usize, Option<Nanos>),
    /// The latest time given to the core: its clock never goes back, even
    /// where a time read earlier is passed on (see [`Dispatcher::at_least`]).
    latest: std::cell::Cell<Nanos>,
}

impl Dispatcher {
    pub(crate) fn new(
        shared: Arc<Shared>,
        (rx, controls): (
            crossbeam_channel::Receiver<Msg>,
            crossbeam_channel::Receiver<Control>,
        ),
        scheduler: Scheduler,
        queues: Vec<crossbeam_channel::Sender<Handoff>>,
        delivery: Option<crossbeam_channel::Sender<Delivery>>,
    ) -> Self {
        Dispatcher {
            rx,
            controls,
            scheduler,
            queues,
            tasks: HashMap::default(),
            running: HashMap::default(),
            next_token: 0,
            shutdown_ack: None,
            unsplittable: PlannerRef(Arc::new(isola_core::Unsplittable)),
            failed: vec![None; shared.engines.len()],
            learns: shared.engines.iter().any(|e| e.learn.is_some()),
            costs_published: 0,
            delivery,
            shutdown_deadline: None,
            shutdown_grace: Duration::ZERO,
            pollers: Vec::new(),
            places: shared
                .engines
                .iter()
                .enumerate()
                .map(|(engine, e)| {
                    e.on_dispatcher.then(|| WorkerPlace {
                        engine,
                        index: 0,
                        shared: Arc::clone(&shared),
                        dispatcher: true,
                    })
                })
                .collect(),
            inline: shared
                .engines
                .iter()
                .enumerate()
                .map(|(engine, e)| {
                    let computes = matches!(e.device, crate::EngineDevice::Compute);
                    let rule =
                        inline::Inline::new(e.inline_below).filter(|_| computes && !e.on_dispatcher)?;
                    let place = WorkerPlace {
                        engine,
                        index: 0,
                        shared: Arc::clone(&shared),
                        dispatcher: true,
                    };
                    Some((rule, place))
                })
                .collect(),
            more_here: false,
            batch: Vec::new(),
            turn: (0, None),
            latest: std::cell::Cell::new(0),
            shared,
        }
    }

    /// Adds `call` to the core log, if one is kept.
    fn log(&self, call: impl FnOnce() -> crate::CoreCall) {
        if let Some(log) = &self.shared.core_log {
            log.push(call());
        }
    }

    /// The time now, for the core (never earlier than a time given it
    /// before).
    fn now(&self) -> Nanos {
        self.at_least(self.shared.epoch.elapsed().as_nanos() as Nanos)
    }

    /// `t`, or the latest time the core was given if later: a time read
    /// once for a batch, or a run's end, passed on after something in
    /// between read the clock afresh (a pipeline's next stage, submitted
    /// at its own reading) must not take the core's clock back.
    fn at_least(&self, t: Nanos) -> Nanos {
        let t = t.max(self.latest.get());
        self.latest.set(t);
        t
    }

    /// The dispatcher looks at arrivals: a new turn of work run here.
    fn new_turn(&mut self) {
        self.turn = (0, None);
    }

    /// Runs until shut down and drained.
    pub(crate) fn run(mut self) {
        loop {
            self.take_controls();
            // A full engine's completion is a message anyway.
            let wakeup = catch(|| self.scheduler.next_wakeup())
                .ok()
                .flatten()
                .map(|at| self.shared.epoch + Duration::from_nanos(at));
            let deadline = match (wakeup, self.shutdown_deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let received = if std::mem::take(&mut self.more_here) {
                // Work picked to run here waits: take what has arrived
                // (into the core, where the policy orders it with the
                // rest), without waiting for more.
                crate::poller::poll_all(&mut self.pollers);
                self.new_turn();
                self.rx.try_recv().map_err(|e| match e {
                    crossbeam_channel::TryRecvError::Empty => crossbeam_channel::RecvTimeoutError::Timeout,
                    crossbeam_channel::TryRecvError::Disconnected => {
                        crossbeam_channel::RecvTimeoutError::Disconnected
                    }
                })
            } else if self.pollers.is_empty() {
                // Arrivals are the channel's, taken now.
                self.new_turn();
                crate::spin::recv(&self.rx, self.shared.thread_spin(), deadline)
            } else {
                let mut polled = false;
                let got = crate::poller::recv(
                    &self.rx,
                    self.shared.thread_spin(),
                    deadline,
                    &mut self.pollers,
                    &mut polled,
                );
                if polled {
                    self.new_turn();
                }
                got
            };
            let msg = match received {
                Ok(m) => Some(m),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
            };
            if let Some(msg) = msg {
                // A change that came while it waited goes first.
                self.take_controls();
                self.handle(msg);
                // Workers' reports that arrived meanwhile are taken before
                // the engines are filled again: one pump for them all. Any
                // other message first sees the engines filled (a task is
                // dispatched before the next is submitted, as one at a
                // time would be).
                for _ in 1..DRAIN {
                    match self.rx.try_recv() {
                        Ok(msg) => {
                            self.take_controls();
                            if !matches!(msg, Msg::Done(_) | Msg::DoneBatch(_) | Msg::Wake) {
                                self.pump();
                            }
                            self.handle(msg);
                        }
                        Err(_) => break,
                    }
                }
            }
            if self.shutdown_deadline.is_some_and(|d| Instant::now() >= d) {
                self.abandon_running();
            }
            self.pump();
            if self.shutdown_ack.is_some() && self.tasks.is_empty() {
                debug_assert!(self.running.is_empty(), "no dispatch outlives its task");
                // Closing the queues stops the workers.
                self.queues.clear();
                if let Some(ack) = self.shutdown_ack.take() {
                    // The runtime waits on the other end; if it is gone,
                    // nobody is left to tell.
                    ack.send(()).ok();
                }
                return;
            }
        }
    }

    /// Acts on one message.
    fn handle(&mut self, msg: Msg) {
        match msg {
            // A batch is taken at one reading of the clock.
            Msg::Submit(s) => self.submit(s, self.now()),
            Msg::SubmitBatch(batch) => {
                let now = self.now();
                for s in batch {
                    let at = self.at_least(now);
                    self.submit(s, at);
                }
            }
            Msg::Done(d) => self.done(d, self.now()),
            Msg::DoneBatch(ds) => {
                let now = self.now();
                for d in ds {
                    let at = self.at_least(now);
                    self.done(d, at);
                }
            }
            Msg::Control(c) => self.control(c),
            Msg::AddPoller(p) => self.pollers.push(p),
            Msg::Wake => {}
            Msg::Shutdown(ack, grace) => {
                self.shutdown_deadline = Some(Instant::now() + grace);
                self.shutdown_grace = grace;
                self.begin_shutdown(ack);
            }
        }
    }

    /// Takes submission `s` at `now`.
    fn submit(&mut self, s: Submission, now: Nanos) {
        let submitted_ns = s.submitted.duration_since(self.shared.epoch).as_nanos() as Nanos;
        let bytes = s.input.len() as u64;
        let task = TaskInFlight {
            id: s.id,
            tenant: s.tenant,
            engine: s.stage.engine,
            op_name: s.op_name,
            input: Arc::new(JobInput {
                work: s.stage.work,
                input: s.input,
            }),
            rest: s.rest,
            bytes,
            planner: None,
            flow: s.flow,
            reply: s.reply,
            submitted_ns,
            started_ns: None,
            service_ns: 0,
            predicted_ns: s.predicted_total_ns,
            subtasks: 1,
            carries: Vec::new(),
            placed: None,
            regions: Vec::new(),
            output: None,
            delivered: false,
            running: 0,
            settled: false,
            error: None,
            busy_at_submit: s.busy_at_submit,
            busy_at_end: s.busy_at_submit,
            ended_ns: None,
            off_cpu_ns: 0,
            workers: self.shared.engines[s.stage.engine].workers,
            on_dispatcher: false,
            handoff_ns: now.saturating_sub(submitted_ns),
            stage_predicted_ns: s.predicted_ns,
            cost: s.stage.cost,
        };
        self.submit_stage(now, task, submitted_ns.min(now));
    }

    /// Submits `task`'s current stage to the core, arrived at `arrival`.
    fn submit_stage(&mut self, now: Nanos, mut task: TaskInFlight, arrival: Nanos) {
        let id = task.id;
        let input = &task.input;
        // A planner only where the core may split: on an engine with a
        // split rule (none is built per task otherwise).
        let splits = self.shared.engines[task.engine].split_bytes.is_some();
        task.planner = (splits && input.work.operator().and_then(|op| op.splitter()).is_some()).then(|| {
            Arc::new(OperatorPlanner {
                input: Arc::clone(input),
                cost: Arc::clone(&task.cost),
                planned: Mutex::new(None),
            })
        });
        let planner = match (&task.planner, &input.work) {
            (Some(p), _) => Some(PlannerRef(Arc::clone(p) as Arc<dyn SubtaskPlanner>)),
            (None, Work::Op(_)) => Some(self.unsplittable.clone()),
            (None, transfer) => transfer.transfer_planner(),
        };
        // An engine that learns costs learns them per operator and
        // parameters; the others need only the name.
        let op = match &input.work {
            Work::Op(op) if self.shared.engines[task.engine].learn.is_some() => self.shared.op_spec(op),
            work => OpSpec::named(work.name()),
        };
        let core_task = Task {
            id: TaskId(id),
            tenant: task.tenant,
            engine: EngineId(task.engine as u32),
            op,
            bytes: input.input.len() as u64,
            arrival,
            deadline: None,
            predicted_cost: Some(task.stage_predicted_ns),
            planner,
            flow: task.flow,
        };
        let (tenant, engine, bytes) = (core_task.tenant, core_task.engine, core_task.bytes);
        if let Some(message) = self.failed[task.engine].clone() {
            let engine = self.shared.engines[task.engine].name.clone();
            return self.finish(task, Err(TaskError::CoreFailed { engine, message }));
        }
        // A transfer that does not fit its region fails before the core
        // sees it: no fragment of it is copied.
        if let Work::Dma { region, offset, .. } = &input.work {
            if let Err(e) = crate::region::bounds(*offset, bytes, region.len()) {
                return self.finish(task, Err(TaskError::Transfer(e)));
            }
        }
        let accepted = match catch(|| self.scheduler.submit(now, core_task)) {
            Ok(accepted) => accepted,
            Err(message) => {
                let e = task.engine;
                self.tasks.insert(id, task);
                self.fail_engine(e, message);
                return;
            }
        };
        self.log(|| crate::CoreCall::Submit {
            now,
            task: TaskId(id),
            tenant,
            flow: task.flow,
            engine,
            op: task.input.work.name().to_string(),
            bytes,
            arrival,
            predicted: task.stage_predicted_ns,
            accepted: accepted.is_ok(),
        });
        match accepted {
            Ok(()) => {
                self.tasks.insert(id, task);
            }
            // A full channel, an over-quota tenant, a closed scheduler: the
            // task's one completion says which.
            Err(rejection) => self.finish(task, Err(TaskError::Rejected(rejection.reason))),
        }
    }

    /// Takes report `d`, heard at `now`.
    fn done(&mut self, d: WorkDone, now: Nanos) {
        let Some(run) = self.running.remove(&d.token) else {
            unreachable!("a worker reported work {} the dispatcher never sent", d.token);
        };
        let started = d.started.duration_since(self.shared.epoch).as_nanos() as Nanos;
        let Some(task) = self.tasks.get_mut(&run.task) else {
            unreachable!("task {} ended while one of its dispatches ran", run.task);
        };
        task.running -= 1;
        task.on_dispatcher = d.on_dispatcher;
        task.service_ns = task.service_ns.saturating_add(d.measured_ns);
        task.off_cpu_ns = task.off_cpu_ns.saturating_add(d.off_cpu_ns);
        let ended = started.saturating_add(d.measured_ns);
        if task.ended_ns.is_none_or(|e| e <= ended) {
            task.ended_ns = Some(ended);
            task.busy_at_end = self.shared.busy[task.engine].read(now, task.tenant.index());
        }
        if !matches!(d.output, Err(TaskError::Cancelled)) {
            task.started_ns = Some(task.started_ns.map_or(started, |s| s.min(started)));
        }
        match d.output {
            Ok(PartOutput::Whole(out)) => task.output = Some(out),
            Ok(PartOutput::Delivered) => task.delivered = true,
            Ok(PartOutput::Part(carry)) => {
                let slot = match run.subtask {
                    Some(s) if !s.ordered => s.index as usize,
                    _ => 0,
                };
                task.carries[slot] = Some(carry);
            }
            Err(e) => {
                task.error.get_or_insert(e);
            }
        }
        self.settle(now, run.task, run.dispatch, d.measured_ns);
    }

    /// Reports dispatch `dispatch` of task `id` complete to the core, and
    /// finishes the task if that was the last of it.
    fn settle(&mut self, now: Nanos, id: u64, dispatch: DispatchId, measured: Nanos) {
        let engine = self.tasks.get(&id).map(|t| t.engine);
        if engine.is_some_and(|e| self.failed[e].is_some()) {
            // Its engine's core is out of service: the task was failed with it.
            self.finish_if_settled(id);
            return;
        }
        let done = match catch(|| self.scheduler.complete(now, dispatch, measured)) {
            Err(message) => {
                if let Some(e) = engine {
                    self.fail_engine(e, message);
                }
                return;
            }
            Ok(Ok(c)) => {
                self.log(|| crate::CoreCall::Complete {
                    now,
                    task: c.task,
                    subtask: c.subtask.map(|s| s.index),
                    measured,
                });
                c.task_done
            }
            Ok(Err(e)) => unreachable!("the core's own dispatch was refused: {e}"),
        };
        self.publish_costs(now);
        let Some(task) = self.tasks.get_mut(&id) else {
            unreachable!("task {id} ended before its last dispatch");
        };
        task.settled |= done;
        self.finish_if_settled(id);
    }

    /// Sends task `id`'s completion once the core is done with it and no
    /// dispatch of it runs.
    fn finish_if_settled(&mut self, id: u64) {
        match self.tasks.get(&id) {
            Some(t) if t.settled && t.running == 0 => {}
            _ => return,
        }
        let Some(mut task) = self.tasks.remove(&id) else {
            unreachable!("looked up above");
        };
        if task.delivered {
            // A whole task its worker completed itself.
            return;
        }
        // The last stage of a split task: its output is built and handed
        // over on the delivery thread (`delivery.rs`).
        if task.rest.is_empty() && task.subtasks > 1 && task.error.is_none() {
            match self.deliver_elsewhere(task) {
                None => return,
                Some(back) => task = back,
            }
        }
        let result = delivery::take_result(&mut task);
        match result {
            Ok(out) if !task.rest.is_empty() => self.next_stage(task, out),
            result => self.finish(task, result),
        }
    }

    /// Sends a task's one completion and counts it.
    fn finish(&mut self, task: TaskInFlight, result: Result<Vec<u8>, TaskError>) {
        let budget = self
            .scheduler
            .service_budget(EngineId(task.engine as u32), task.tenant);
        delivery::complete(&self.shared, task, result, self.now(), budget);
    }
}

impl TaskInFlight {
    /// The task's completion with `result`, finished at `finished_ns`.
    fn completion(&self, result: Result<Vec<u8>, TaskError>, finished_ns: Nanos) -> Completion {
        let latency = finished_ns.saturating_sub(self.submitted_ns);
        let delivery = self.ended_ns.map_or(0, |e| finished_ns.saturating_sub(e));
        Completion {
            task: self.id,
            tenant: self.tenant,
            flow: self.flow,
            engine: EngineId(self.engine as u32),
            op: self.op_name.clone(),
            bytes: self.bytes,
            result,
            submitted_ns: self.submitted_ns,
            started_ns: self.started_ns,
            finished_ns,
            service_ns: self.service_ns,
            predicted_ns: self.predicted_ns,
            subtasks: self.subtasks,
            over_budget: false,
            breakdown: LatencyBreakdown::attribute(
                TaskTimes {
                    latency,
                    service: self.service_ns,
                    off_cpu: self.off_cpu_ns,
                    delivery,
                    handoff: self.handoff_ns,
                },
                self.busy_at_submit,
                self.busy_at_end,
                self.workers,
            ),
            on_dispatcher: self.on_dispatcher,
        }
    }
}

/// A split task's output from its subtasks' carries.
fn reassemble(task: &mut TaskInFlight) -> Result<Vec<u8>, TaskError> {
    let carries: Option<Vec<Carry>> = task.carries.drain(..).collect();
    let Some(op) = task.input.work.operator() else {
        let carries =
            carries.ok_or_else(|| TaskError::Internal("a transfer fragment gave no carry".into()))?;
        return crate::pipeline::reassemble_transfer(carries);
    };
    match (carries, task.placed.take(), op.placement(), op.splitter()) {
        // Written in place: only the operator's finishing touch (e.g. a
        // tag) is left.
        (Some(c), Some(output), Some(placement), _) => guarded(op.name(), || {
            let mut out = PlacedOutput::into_vec(output);
            placement.finish(c, &mut out)?;
            Ok(out)
        }),
        (Some(c), None, _, Some(split)) => guarded(op.name(), || {
            split
                .reassemble(task.input.input.len(), c)
                .map_err(TaskError::Operator)
        }),
        _ => Err(TaskError::Operator(isola_ops::OpError::WrongCarry {
            op: op.name(),
        })),
    }
}
