//! The handles tenants submit through ([`TenantHandle`]: every stage
//! checked, resolved to its engine and predicted before the task reaches
//! the dispatcher) and the tickets their tasks are answered on
//! ([`Ticket`]).

use crate::builder::EngineDevice;
use crate::dispatcher::{Msg, Submission};
use crate::job::{Completion, Reply, SubmitError, TaskError};
use crate::pipeline::{Stage, StagePlan, Work};
use crate::runtime::Shared;
use isola_core::{Nanos, TenantId};
use isola_ops::Operator;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// What a tenant submits through; cheap to clone and to send to threads.
#[derive(Clone)]
pub struct TenantHandle {
    tenant: TenantId,
    shared: Arc<Shared>,
    /// The engine its tasks go to (else the first that serves the operator).
    engine: Option<usize>,
    /// Its own cost model, guarded (else its engine's).
    cost: Option<Arc<crate::guard::GuardedCost>>,
    /// The tenant's flow queue its tasks wait in.
    flow: u32,
}

impl std::fmt::Debug for TenantHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantHandle")
            .field("tenant", &self.tenant)
            .finish_non_exhaustive()
    }
}

impl TenantHandle {
    /// Tenant `tenant`'s handle on the runtime sharing `shared`: its
    /// tasks go to the first engine serving each operator, predicted by
    /// that engine's cost model.
    pub(crate) fn new(tenant: TenantId, shared: Arc<Shared>) -> TenantHandle {
        TenantHandle {
            tenant,
            shared,
            engine: None,
            cost: None,
            flow: 0,
        }
    }

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

    /// This handle with its tasks queued in the tenant's flow queue `flow`
    /// (its index among the tenant's [`isola_core::Slo::flows`]; by
    /// default 0). A flow the tenant does not have refuses each task at
    /// the core (`RejectReason::UnknownFlow`).
    pub fn in_flow(mut self, flow: u32) -> TenantHandle {
        self.flow = flow;
        self
    }

    /// This handle with its tasks' costs predicted by `cost` instead of
    /// the engine's model (a tenant whose tasks cost differently).
    pub fn with_cost(mut self, cost: Arc<dyn isola_core::CostModel>) -> TenantHandle {
        self.cost = Some(crate::guard::GuardedCost::wrap(cost));
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
        // The batch arrived at once: one reading of the clock.
        let submitted = Instant::now();
        for (stages, payload, on_done) in tasks {
            match self.prepare(stages, payload, Reply::calling(on_done), submitted) {
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
            flow: self.flow,
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
        let cost = Arc::clone(own.unwrap_or(&shared.guarded_costs[engine]));
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
        let submission = self.prepare(stages, payload, reply, Instant::now())?;
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
    /// submission, `submitted` then; the caller holds `Shared::closed`
    /// and sends it.
    fn prepare(
        &self,
        stages: Vec<Stage>,
        payload: Arc<Vec<u8>>,
        reply: Reply,
        submitted: Instant,
    ) -> Result<Submission, SubmitError> {
        let shared = &self.shared;
        let t = self.tenant.index();
        if t >= shared.tenants.len() {
            return Err(SubmitError::ShutDown);
        }
        let mut stages = stages.into_iter();
        let first = self.resolve(stages.next().ok_or(SubmitError::NoStages)?)?;
        // (No allocation for a task of one stage.)
        let rest = stages
            .map(|s| self.resolve(s))
            .collect::<Result<std::collections::VecDeque<_>, _>>()?;
        // Every stage is predicted now, at the input's size (each later one
        // again when it is submitted, at its own input's): a stage its model
        // cannot predict is refused here, not halfway through the task.
        // (Each plan's model is guarded already: plans and subtasks are
        // predicted on the dispatcher thread, where a panic must not stop
        // it; the check here calls the model itself, to tell a submitter
        // that it panicked.)
        let mut predicted_total: Nanos = 0;
        let mut first_predicted = None;
        for p in std::iter::once(&first).chain(&rest) {
            let op = p.work.name();
            let ns = crate::guard::GuardedCost::check(p.cost.0.as_ref(), op, payload.len() as u64)
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
        let engine = first.engine;
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let at = submitted.duration_since(shared.epoch).as_nanos() as Nanos;
        let busy_at_submit = shared.busy[engine].read(at, t);
        Ok(Submission {
            busy_at_submit,
            id,
            tenant: self.tenant,
            flow: self.flow,
            op_name: first.work.name().to_string(),
            stage: first,
            rest,
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
    flow: u32,
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
            flow: self.flow,
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
            on_dispatcher: false,
        }
    }
}
