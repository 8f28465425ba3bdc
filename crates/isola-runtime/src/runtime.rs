//! The running runtime, the handles tenants submit through, and tickets.

use crate::builder::{BuildError, EngineConfig, EngineDevice, RuntimeBuilder};
use crate::dispatcher::{Dispatcher, Msg, Submission};
use crate::job::{Completion, Reply, SubmitError, TaskError};
use crate::pipeline::{Stage, StagePlan, Work};
use crate::stats::TenantStats;
use isola_core::{Nanos, Slo, TenantId};
use isola_ops::Operator;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Built operators by name and parameters: building can be costly (a route
/// trie, a key schedule), so each configuration is built once.
/// Looked up by name, then parameters, so a hit allocates nothing.
type OperatorCache = RwLock<HashMap<String, Vec<(BTreeMap<String, String>, Arc<dyn Operator>)>>>;

/// State the handles, the dispatcher and the workers share.
pub(crate) struct Shared {
    pub epoch: Instant,
    pub engines: Vec<EngineConfig>,
    pub tenants: Vec<(String, Slo)>,
    /// Each tenant's host region, if it has one (for DMA stages).
    pub regions: Vec<Option<Arc<dyn crate::HostRegion>>>,
    tx: crossbeam_channel::Sender<Msg>,
    operators: OperatorCache,
    records: Mutex<Vec<TenantStats>>,
    /// Set at shutdown. Submissions hold its read lock from the check to
    /// their message, and shutdown takes the write lock to set it, so every
    /// accepted task's message reaches the dispatcher before `Shutdown`.
    closed: RwLock<bool>,
    next_id: AtomicU64,
    /// Set at shutdown: workers answer what is still queued `Cancelled`.
    pub cancelled: Arc<AtomicBool>,
    /// How long threads poll their channel before sleeping.
    pub spin: std::time::Duration,
    /// Every call on the core, when the builder asked for it.
    pub core_log: Option<crate::CoreLog>,
    /// Per engine: its workers' busy time per tenant.
    pub busy: Vec<crate::attribution::EngineBusy>,
    /// The runtime's threads, as they registered.
    pub threads: Mutex<Vec<crate::threads::RuntimeThread>>,
}

impl Shared {
    /// Counts a completion and delivers it.
    pub(crate) fn complete(&self, c: Completion, reply: &Reply) {
        let t = c.tenant.index();
        if let Ok(mut records) = self.records.lock() {
            if let Some(r) = records.get_mut(t) {
                r.record(&c);
            }
        }
        reply.send(c);
    }

    fn operator(
        &self,
        name: &str,
        params: &BTreeMap<String, String>,
    ) -> Result<Arc<dyn Operator>, SubmitError> {
        let cached = self.operators.read().ok().and_then(|m| {
            m.get(name)?
                .iter()
                .find(|(p, _)| p == params)
                .map(|(_, op)| Arc::clone(op))
        });
        if let Some(op) = cached {
            return Ok(op);
        }
        let op: Arc<dyn Operator> = Arc::from(isola_ops::build_operator(name, params)?);
        if let Ok(mut m) = self.operators.write() {
            m.entry(name.to_string())
                .or_default()
                .push((params.clone(), Arc::clone(&op)));
        }
        Ok(op)
    }
}

/// A running runtime. Dropping it shuts it down (queued tasks are
/// cancelled, running ones finish).
pub struct Runtime {
    shared: Arc<Shared>,
    dispatcher: Option<JoinHandle<()>>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("engines", &self.shared.engines)
            .field("workers", &self.workers.len())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    pub(crate) fn start(b: RuntimeBuilder) -> Result<Runtime, BuildError> {
        let scheduler = b.scheduler()?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let busy = b
            .engines
            .iter()
            .map(|e| crate::attribution::EngineBusy::new(b.tenants.len(), e.workers))
            .collect();
        let mut regions = vec![None; b.tenants.len()];
        for (t, r) in &b.regions {
            if let Some(slot) = regions.get_mut(t.index()) {
                *slot = Some(Arc::clone(r));
            }
        }
        let shared = Arc::new(Shared {
            regions,
            epoch: Instant::now(),
            records: Mutex::new(b.tenants.iter().map(|(name, _)| TenantStats::new(name)).collect()),
            engines: b.engines,
            tenants: b.tenants,
            tx: tx.clone(),
            operators: RwLock::new(HashMap::new()),
            closed: RwLock::new(false),
            next_id: AtomicU64::new(0),
            cancelled: Arc::new(AtomicBool::new(false)),
            spin: b.spin,
            core_log: b.record_core_calls.then(crate::CoreLog::default),
            busy,
            threads: Mutex::new(Vec::new()),
        });
        let cores = if b.pin {
            core_affinity::get_core_ids().unwrap_or_default()
        } else {
            Vec::new()
        };
        // The dispatcher on the first core, workers on the others in turn.
        let worker_core = |i: usize| match cores.len() {
            0 => None,
            1 => cores.first().copied(),
            n => cores.get(1 + i % (n - 1)).copied(),
        };
        let mut pinned = 0;
        let mut workers = Vec::new();
        let mut queues = Vec::new();
        let mut threads = Vec::new();
        let spawn_error = |e: std::io::Error| BuildError::Thread(e.to_string());
        for (engine, e) in shared.engines.iter().enumerate() {
            // The core dispatches at most `workers + queue_depth` at a time,
            // so the queue never holds more.
            let (qtx, qrx) = crossbeam_channel::unbounded();
            queues.push(qtx);
            for index in 0..e.workers {
                let (q, done) = (qrx.clone(), tx.clone());
                let place = crate::worker::WorkerPlace {
                    engine,
                    index,
                    shared: Arc::clone(&shared),
                };
                let core = worker_core(pinned);
                pinned += 1;
                let (handle, me) =
                    crate::threads::spawn(format!("isola-{}-{index}", e.name), core, b.realtime, move || {
                        crate::worker::run_worker(q, done, place)
                    })
                    .map_err(spawn_error)?;
                workers.push(handle);
                threads.push(me);
            }
        }
        let dispatcher = Dispatcher::new(Arc::clone(&shared), rx, scheduler, queues);
        let (dispatcher, me) = crate::threads::spawn(
            "isola-dispatcher".into(),
            cores.first().copied(),
            b.realtime,
            move || dispatcher.run(),
        )
        .map_err(spawn_error)?;
        threads.insert(0, me);
        if let Ok(mut t) = shared.threads.lock() {
            *t = threads;
        }
        Ok(Runtime {
            shared,
            dispatcher: Some(dispatcher),
            workers,
        })
    }

    /// The handle tenant `tenant` submits through.
    pub fn tenant(&self, tenant: TenantId) -> TenantHandle {
        TenantHandle {
            tenant,
            shared: Arc::clone(&self.shared),
            engine: None,
            cost: None,
        }
    }

    /// Every tenant's counters so far (for figures, feed the completions
    /// to a run recorder: [`crate::record`]).
    pub fn stats(&self) -> Vec<TenantStats> {
        self.shared.records.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// The log of calls made on the isolation core, if the builder asked
    /// for one ([`RuntimeBuilder::record_core_calls`]).
    pub fn core_log(&self) -> Option<crate::CoreLog> {
        self.shared.core_log.clone()
    }

    /// The runtime's threads (the dispatcher first, then each engine's
    /// workers): where they run, their scheduling class, and through
    /// [`crate::RuntimeThread::times`] what the host has done to them.
    pub fn threads(&self) -> Vec<crate::RuntimeThread> {
        self.shared.threads.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Nanoseconds since the runtime started (the clock of completions).
    pub fn now_ns(&self) -> Nanos {
        self.shared.epoch.elapsed().as_nanos() as Nanos
    }

    /// Stops: new submissions are refused, tasks still queued complete with
    /// `Cancelled`, running ones finish within [`DEFAULT_SHUTDOWN_GRACE`]
    /// (see [`Runtime::shutdown_within`]); returns the final counters.
    pub fn shutdown(self) -> Vec<TenantStats> {
        self.shutdown_within(DEFAULT_SHUTDOWN_GRACE)
    }

    /// [`Runtime::shutdown`] with a grace period of `grace`: a task still
    /// running when it ends completes with `TaskError::Abandoned`, and its
    /// worker thread is left to finish alone (a thread cannot be stopped
    /// from outside); so shutdown returns within about `grace` whatever an
    /// operator does.
    pub fn shutdown_within(mut self, grace: Duration) -> Vec<TenantStats> {
        self.stop(grace);
        self.stats()
    }

    /// Replaces tenant `tenant`'s SLO and its per-engine overrides, from
    /// the core's next decision on (see [`isola_core::Scheduler::set_slo`]:
    /// checked as a whole; a refused change changes nothing). Returns once
    /// the core has it.
    pub fn set_slo(
        &self,
        tenant: TenantId,
        slo: Slo,
        overrides: Vec<(isola_core::EngineSelector, isola_core::SloOverride)>,
    ) -> Result<(), crate::ControlError> {
        let (ack, answer) = crossbeam_channel::bounded(1);
        let c = crate::dispatcher::Control::SetSlo {
            tenant,
            slo,
            overrides,
            ack,
        };
        self.control(Msg::Control(c), answer)
    }

    /// Cancels the tasks of `tenant` still queued, every one or only
    /// those whose ids (as `submit` gave them) are in `only`: each ends with
    /// `TaskError::Cancelled`; work in service finishes and is answered as
    /// usual. Returns how many were cancelled.
    pub fn cancel_queued(
        &self,
        tenant: TenantId,
        only: Option<std::collections::HashSet<u64>>,
    ) -> Result<usize, crate::ControlError> {
        let (ack, answer) = crossbeam_channel::bounded(1);
        let c = crate::dispatcher::Control::Withdraw { tenant, only, ack };
        self.control(Msg::Control(c), answer)
    }

    /// Has the dispatcher poll `poller` beside its channel, on its own
    /// thread, until the poller says it is done (see [`crate::Poller`]).
    pub fn add_poller(&self, poller: Box<dyn crate::Poller>) -> Result<(), crate::ControlError> {
        if self.shared.closed.read().map_or(true, |closed| *closed) {
            return Err(crate::ControlError::ShutDown);
        }
        self.shared
            .tx
            .send(Msg::AddPoller(poller))
            .map_err(|_| crate::ControlError::ShutDown)
    }

    /// Wakes the dispatcher if it sleeps: a poller's producer found it
    /// asleep (its ring's flag set) after publishing.
    pub fn wake_dispatcher(&self) {
        let _ = self.shared.tx.send(Msg::Wake);
    }

    /// Sends `msg` to the dispatcher and waits for its answer.
    fn control<T>(
        &self,
        msg: Msg,
        answer: crossbeam_channel::Receiver<Result<T, crate::ControlError>>,
    ) -> Result<T, crate::ControlError> {
        if self.shared.closed.read().map_or(true, |closed| *closed) || self.shared.tx.send(msg).is_err() {
            return Err(crate::ControlError::ShutDown);
        }
        answer.recv().unwrap_or(Err(crate::ControlError::ShutDown))
    }

    fn stop(&mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        if let Ok(mut closed) = self.shared.closed.write() {
            *closed = true;
        }
        let (ack_tx, ack_rx) = crossbeam_channel::bounded(1);
        if self.shared.tx.send(Msg::Shutdown(ack_tx, grace)).is_ok() {
            let _ = ack_rx.recv();
        }
        if let Some(d) = self.dispatcher.take() {
            let _ = d.join();
        }
        // Idle workers stop as soon as the dispatcher closed their queues;
        // one still running an abandoned task is left behind.
        for w in self.workers.drain(..) {
            while !w.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            if w.is_finished() {
                let _ = w.join();
            }
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if self.dispatcher.is_some() {
            self.stop(DEFAULT_SHUTDOWN_GRACE);
        }
    }
}

/// How long [`Runtime::shutdown`] lets running tasks finish: 10 s.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What a tenant submits through; cheap to clone and to send to threads.
#[derive(Clone)]
pub struct TenantHandle {
    tenant: TenantId,
    shared: Arc<Shared>,
    /// The engine its tasks go to (else the first that serves the operator).
    engine: Option<usize>,
    /// Its own cost model (else its engine's).
    cost: Option<Arc<dyn isola_core::CostModel>>,
}

impl std::fmt::Debug for TenantHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantHandle")
            .field("tenant", &self.tenant)
            .finish_non_exhaustive()
    }
}

impl TenantHandle {
    /// The tenant's id.
    pub fn id(&self) -> TenantId {
        self.tenant
    }

    /// This handle with its tasks sent to `engine` (by default a task goes
    /// to the first engine that serves its operator); an engine that does
    /// not serve a task's operator refuses it at submit.
    pub fn on_engine(mut self, engine: isola_core::EngineId) -> Result<TenantHandle, SubmitError> {
        let e = engine.index();
        if e >= self.shared.engines.len() {
            return Err(SubmitError::NoEngine(format!("(engine {e} does not exist)")));
        }
        self.engine = Some(e);
        Ok(self)
    }

    /// This handle with its tasks' costs predicted by `cost` instead of
    /// the engine's model (a tenant whose tasks cost differently).
    pub fn with_cost(mut self, cost: Arc<dyn isola_core::CostModel>) -> TenantHandle {
        self.cost = Some(cost);
        self
    }

    /// Submits registry operator `op` with `params` on `payload`; the
    /// ticket gives its one completion (by blocking wait or by polling). The
    /// payload is shared, not copied: pass an `Arc` to submit one buffer
    /// again and again.
    pub fn submit(
        &self,
        op: &str,
        params: &BTreeMap<String, String>,
        payload: impl Into<Arc<Vec<u8>>>,
    ) -> Result<Ticket, SubmitError> {
        let operator = self.shared.operator(op, params)?;
        self.submit_operator(operator, payload)
    }

    /// Submits an operator built by the caller (a tenant application's own
    /// code, a test's); it is routed by its name like a registry operator.
    pub fn submit_operator(
        &self,
        operator: Arc<dyn Operator>,
        payload: impl Into<Arc<Vec<u8>>>,
    ) -> Result<Ticket, SubmitError> {
        self.submit_stages(self.one(operator), payload)
    }

    /// Submits like [`TenantHandle::submit`], delivering the completion on
    /// `completions` instead; returns the task id it will carry.
    pub fn submit_to(
        &self,
        op: &str,
        params: &BTreeMap<String, String>,
        payload: impl Into<Arc<Vec<u8>>>,
        completions: &crossbeam_channel::Sender<Completion>,
    ) -> Result<u64, SubmitError> {
        let operator = self.shared.operator(op, params)?;
        self.send(
            self.one(operator),
            payload.into(),
            Reply::new(completions.clone()),
        )
        .map(|(id, _)| id)
    }

    /// Submits like [`TenantHandle::submit`], calling `on_done` with the
    /// completion (on the runtime thread that completes it: no hand-off to
    /// another thread); returns the task id it will carry.
    pub fn submit_calling(
        &self,
        op: &str,
        params: &BTreeMap<String, String>,
        payload: impl Into<Arc<Vec<u8>>>,
        on_done: crate::OnCompletion,
    ) -> Result<u64, SubmitError> {
        let operator = self.shared.operator(op, params)?;
        self.submit_operator_calling(operator, payload, on_done)
    }

    /// [`TenantHandle::submit_calling`] with an operator the caller built
    /// (once, on its own thread: building can be costly).
    pub fn submit_operator_calling(
        &self,
        operator: Arc<dyn Operator>,
        payload: impl Into<Arc<Vec<u8>>>,
        on_done: crate::OnCompletion,
    ) -> Result<u64, SubmitError> {
        self.submit_stages_calling(self.one(operator), payload, on_done)
    }

    /// [`TenantHandle::submit_stages`], the task's one completion handed to
    /// `on_done` on the thread that completes it.
    pub fn submit_stages_calling(
        &self,
        stages: Vec<Stage>,
        payload: impl Into<Arc<Vec<u8>>>,
        on_done: crate::OnCompletion,
    ) -> Result<u64, SubmitError> {
        self.send(stages, payload.into(), Reply::calling(on_done))
            .map(|(id, _)| id)
    }

    /// Submits a batch of tasks in one message to the dispatcher (one
    /// wake-up of it for the whole batch instead of one a task), each
    /// calling its own `on_done` with its one completion, as
    /// [`TenantHandle::submit_operator_calling`] does. The core still sees
    /// every task on its own: one submission, one policy decision and one
    /// completion each. Returns, in the batch's order, each task's id or
    /// why it was refused (a refused task has no completion).
    pub fn submit_batch_calling(
        &self,
        tasks: impl IntoIterator<Item = (Arc<dyn Operator>, Arc<Vec<u8>>, crate::OnCompletion)>,
    ) -> Vec<Result<u64, SubmitError>> {
        self.submit_stages_batch_calling(
            tasks
                .into_iter()
                .map(|(operator, payload, on_done)| (self.one(operator), payload, on_done)),
        )
    }

    /// [`TenantHandle::submit_batch_calling`] for tasks of any stages
    /// (each its own pipeline, as [`TenantHandle::submit_stages_calling`]
    /// takes): one message to the dispatcher for the batch, one
    /// submission, decision and completion per task.
    pub fn submit_stages_batch_calling(
        &self,
        tasks: impl IntoIterator<Item = (Vec<Stage>, Arc<Vec<u8>>, crate::OnCompletion)>,
    ) -> Vec<Result<u64, SubmitError>> {
        let shared = &self.shared;
        let tasks = tasks.into_iter();
        let mut ids = Vec::with_capacity(tasks.size_hint().0);
        // Held until the message is sent (see `Shared::closed`).
        let closed = match shared.closed.read() {
            Ok(closed) if !*closed => closed,
            _ => return tasks.map(|_| Err(SubmitError::ShutDown)).collect(),
        };
        let mut batch = Vec::with_capacity(ids.capacity());
        for (stages, payload, on_done) in tasks {
            match self.prepare(stages, payload, Reply::calling(on_done)) {
                Ok(s) => {
                    ids.push(Ok(s.id));
                    batch.push(s);
                }
                Err(e) => ids.push(Err(e)),
            }
        }
        let accepted = batch.len() as u64;
        if accepted == 0 {
            return ids;
        }
        if shared.tx.send(Msg::SubmitBatch(batch)).is_err() {
            return ids.into_iter().map(|_| Err(SubmitError::ShutDown)).collect();
        }
        // Counted before the shutdown lock is let go (as in `send`).
        if let Ok(mut r) = shared.records.lock() {
            r[self.tenant.index()].submitted += accepted;
        }
        drop(closed);
        ids
    }

    /// Submits `stages` (one after another, each one's output the next
    /// one's input; see [`Stage`]) on `payload`; the ticket gives the
    /// task's one completion, once its last stage is done (or one failed).
    pub fn submit_stages(
        &self,
        stages: Vec<Stage>,
        payload: impl Into<Arc<Vec<u8>>>,
    ) -> Result<Ticket, SubmitError> {
        let payload = payload.into();
        let (tx, rx) = crossbeam_channel::bounded(1);
        let bytes = payload.len() as u64;
        // The ticket names the task by its first stage (its operator).
        let op = stage_name(stages.first());
        let (task, engine) = self.send(stages, payload, Reply::new(tx))?;
        Ok(Ticket {
            task,
            engine,
            spin: self.shared.spin,
            tenant: self.tenant,
            op,
            bytes,
            rx,
        })
    }

    /// Submits like [`TenantHandle::submit_stages`], delivering the
    /// completion on `completions`; returns the task id it will carry.
    pub fn submit_stages_to(
        &self,
        stages: Vec<Stage>,
        payload: impl Into<Arc<Vec<u8>>>,
        completions: &crossbeam_channel::Sender<Completion>,
    ) -> Result<u64, SubmitError> {
        self.send(stages, payload.into(), Reply::new(completions.clone()))
            .map(|(id, _)| id)
    }

    /// The stages of a task of `operator` alone.
    fn one(&self, operator: Arc<dyn Operator>) -> Vec<Stage> {
        vec![Stage::Run {
            operator,
            engine: None,
        }]
    }

    /// Resolves `stage` for this tenant: its engine, its work and its cost
    /// model (an operator's: the handle's own, else its engine's; a
    /// transfer's: its engine's).
    fn resolve(&self, stage: Stage) -> Result<StagePlan, SubmitError> {
        let shared = &self.shared;
        let engine_named = |e: isola_core::EngineId| {
            let i = e.index();
            if i < shared.engines.len() {
                Ok(i)
            } else {
                Err(SubmitError::NoEngine(format!("(engine {i} does not exist)")))
            }
        };
        let wrong = |e: usize, stage: &'static str| SubmitError::WrongEngine {
            engine: shared.engines[e].name.clone(),
            stage,
            why: format!("it is {:?}", shared.engines[e].device),
        };
        let egress_port = |engine: isola_core::EngineId| {
            let e = engine_named(engine)?;
            match &shared.engines[e].device {
                EngineDevice::Egress(port) => Ok((e, Arc::clone(port))),
                _ => Err(wrong(e, "egress")),
            }
        };
        let (engine, work) = match stage {
            Stage::Run { operator, engine } => {
                let op = operator.name();
                let engine = match engine.map(engine_named).transpose()?.or(self.engine) {
                    Some(e) if shared.engines[e].serves(op) => e,
                    Some(e) => {
                        return Err(SubmitError::NoEngine(format!(
                            "{op}` on engine `{}",
                            shared.engines[e].name
                        )))
                    }
                    None => shared
                        .engines
                        .iter()
                        .position(|e| e.serves(op))
                        .ok_or_else(|| SubmitError::NoEngine(op.to_string()))?,
                };
                (engine, Work::Op(operator))
            }
            Stage::Dma {
                engine,
                direction,
                offset,
            } => {
                let e = engine_named(engine)?;
                if !matches!(shared.engines[e].device, EngineDevice::Dma) {
                    return Err(wrong(e, "dma"));
                }
                let t = self.tenant.index();
                let region = shared.regions.get(t).cloned().flatten().ok_or_else(|| {
                    SubmitError::NoRegion(shared.tenants.get(t).map(|(n, _)| n.clone()).unwrap_or_default())
                })?;
                (
                    e,
                    Work::Dma {
                        region,
                        direction,
                        offset,
                    },
                )
            }
            Stage::Egress { engine } => {
                let (e, port) = egress_port(engine)?;
                (e, Work::Egress(port, None))
            }
            Stage::Reply { engine, route } => {
                let (e, port) = egress_port(engine)?;
                (e, Work::Egress(port, Some(route)))
            }
        };
        let own = matches!(work, Work::Op(_))
            .then_some(self.cost.as_ref())
            .flatten();
        let cost = Arc::clone(own.unwrap_or(&shared.engines[engine].cost));
        Ok(StagePlan { engine, work, cost })
    }

    fn send(
        &self,
        stages: Vec<Stage>,
        payload: Arc<Vec<u8>>,
        reply: Reply,
    ) -> Result<(u64, usize), SubmitError> {
        let shared = &self.shared;
        // Held until the message is sent (see `Shared::closed`).
        let closed = shared.closed.read().map_err(|_| SubmitError::ShutDown)?;
        if *closed {
            return Err(SubmitError::ShutDown);
        }
        let submission = self.prepare(stages, payload, reply)?;
        let (id, engine) = (submission.id, submission.stage.engine);
        if shared.tx.send(Msg::Submit(submission)).is_err() {
            return Err(SubmitError::ShutDown);
        }
        // Counted before the shutdown lock is let go: shutdown cannot read
        // the stats between the send and the count.
        if let Ok(mut r) = shared.records.lock() {
            r[self.tenant.index()].submitted += 1;
        }
        drop(closed);
        Ok((id, engine))
    }

    /// Checks a task (its tenant, its engine, its cost) and makes its
    /// submission; the caller holds `Shared::closed` and sends it.
    fn prepare(
        &self,
        stages: Vec<Stage>,
        payload: Arc<Vec<u8>>,
        reply: Reply,
    ) -> Result<Submission, SubmitError> {
        let shared = &self.shared;
        let t = self.tenant.index();
        if t >= shared.tenants.len() {
            return Err(SubmitError::ShutDown);
        }
        let mut plans = stages
            .into_iter()
            .map(|s| self.resolve(s))
            .collect::<Result<std::collections::VecDeque<_>, _>>()?;
        // Every stage is predicted now, at the input's size (each later one
        // again when it is submitted, at its own input's): a stage its model
        // cannot predict is refused here, not halfway through the task.
        let mut predicted_total: Nanos = 0;
        let mut first_predicted = None;
        for p in &plans {
            let op = p.work.name();
            let ns = crate::guard::GuardedCost::check(p.cost.as_ref(), op, payload.len() as u64)
                .map_err(|message| SubmitError::CostModelPanicked {
                    op: op.to_string(),
                    message,
                })?
                .ok_or_else(|| SubmitError::NoCostModel {
                    op: op.to_string(),
                    engine: shared.engines[p.engine].name.clone(),
                })?;
            first_predicted.get_or_insert(ns);
            predicted_total = predicted_total.saturating_add(ns);
        }
        // Plans and subtasks are predicted on the dispatcher thread: a
        // panic there must not stop it.
        for p in plans.iter_mut() {
            p.cost = crate::guard::GuardedCost::wrap(Arc::clone(&p.cost));
        }
        let first = plans.pop_front().ok_or(SubmitError::NoStages)?;
        let engine = first.engine;
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let submitted = Instant::now();
        let at = submitted.duration_since(shared.epoch).as_nanos() as Nanos;
        let busy_at_submit = shared.busy[engine].read(at, t);
        Ok(Submission {
            busy_at_submit,
            id,
            tenant: self.tenant,
            op_name: first.work.name().to_string(),
            stage: first,
            rest: plans,
            input: payload,
            predicted_ns: first_predicted.unwrap_or(0),
            predicted_total_ns: predicted_total,
            submitted,
            reply,
        })
    }
}

/// The name a completion carries for a task whose first stage is `stage`.
fn stage_name(stage: Option<&Stage>) -> String {
    match stage {
        Some(Stage::Run { operator, .. }) => operator.name().to_string(),
        Some(Stage::Dma {
            direction: crate::Direction::Write,
            ..
        }) => "dma-write".into(),
        Some(Stage::Dma { .. }) => "dma-read".into(),
        Some(Stage::Egress { .. } | Stage::Reply { .. }) => "egress".into(),
        None => String::new(),
    }
}

/// A submitted task's claim on its completion.
#[derive(Debug)]
pub struct Ticket {
    task: u64,
    engine: usize,
    spin: std::time::Duration,
    tenant: TenantId,
    op: String,
    bytes: u64,
    rx: crossbeam_channel::Receiver<Completion>,
}

impl Ticket {
    /// The task's id (as in its completion).
    pub fn id(&self) -> u64 {
        self.task
    }

    /// Blocks until the task completes.
    pub fn wait(self) -> Completion {
        match crate::spin::recv(&self.rx, self.spin, None) {
            Ok(c) => c,
            // Only if the dispatcher died: the task is still accounted for.
            Err(_) => self.lost(),
        }
    }

    /// The completion if the task is done, or the ticket back.
    pub fn poll(self) -> Result<Completion, Ticket> {
        match self.rx.try_recv() {
            Ok(c) => Ok(c),
            Err(crossbeam_channel::TryRecvError::Empty) => Err(self),
            Err(crossbeam_channel::TryRecvError::Disconnected) => Ok(self.lost()),
        }
    }

    fn lost(&self) -> Completion {
        Completion {
            task: self.task,
            tenant: self.tenant,
            engine: isola_core::EngineId(self.engine as u32),
            op: self.op.clone(),
            bytes: self.bytes,
            result: Err(TaskError::Cancelled),
            submitted_ns: 0,
            started_ns: None,
            finished_ns: 0,
            service_ns: 0,
            predicted_ns: 0,
            subtasks: 1,
            over_budget: false,
            breakdown: crate::LatencyBreakdown::default(),
        }
    }
}
