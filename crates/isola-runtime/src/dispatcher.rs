//! The dispatcher thread: owns the isolation core's `Scheduler` (or, in
//! native mode, nothing), turns submissions into (sub)tasks, hands them to
//! engine queues as the scheduler decides, and turns worker reports into
//! each task's one completion.

use crate::job::{Completion, JobInput, PartOutput, Reply, TaskError};
use crate::placed::PlacedOutput;
use crate::runtime::Shared;
use crate::worker::{guarded, PlacedPart, WorkDone, WorkItem};
use isola_core::{DispatchId, Nanos, OpSpec, Scheduler, Subtask, Task, TaskId, TenantId};
use isola_ops::Carry;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A placed task's output and each of its subtasks' ranges of it.
type PlacedPlan = (Arc<PlacedOutput>, Vec<Vec<Range<usize>>>);

/// For a split task of an operator with a `Placement`: its output buffer
/// and each subtask's ranges of it, checked to be in bounds and disjoint.
/// `None` for operators that reassemble from their subtasks' results.
fn place(
    op: &dyn isola_ops::Operator,
    input_len: usize,
    parts: &[Subtask],
) -> Result<Option<PlacedPlan>, TaskError> {
    let Some(placement) = op.placement() else {
        return Ok(None);
    };
    let (len, regions) = guarded(op.name(), || {
        let len = placement.output_len(input_len)?;
        Ok((
            len,
            parts
                .iter()
                .map(|p| placement.regions(p, input_len))
                .collect::<Vec<_>>(),
        ))
    })?;
    let output = PlacedOutput::new(len, &regions).map_err(|bad| TaskError::BadPlan {
        op: op.name().to_string(),
        reason: bad.0,
    })?;
    Ok(Some((Arc::new(output), regions)))
}

/// What the dispatcher is told.
pub(crate) enum Msg {
    /// A tenant's task.
    Submit(Submission),
    /// A worker finished a piece of work.
    Done(WorkDone),
    /// Cancel what is queued, finish what runs, then stop; acknowledge.
    Shutdown(crossbeam_channel::Sender<()>),
}

/// A task as a tenant submitted it (already checked by its handle).
pub(crate) struct Submission {
    pub id: u64,
    pub tenant: TenantId,
    pub engine: usize,
    pub op_name: String,
    pub op: Arc<dyn isola_ops::Operator>,
    pub input: Arc<Vec<u8>>,
    pub predicted_ns: Nanos,
    /// The model its costs are predicted with (its tenant's, else its
    /// engine's): the whole task's and each subtask's alike.
    pub cost: Arc<dyn isola_core::CostModel>,
    pub submitted: Instant,
    pub reply: Reply,
}

/// A task in flight.
struct Job {
    id: u64,
    tenant: TenantId,
    engine: usize,
    op_name: String,
    /// The operator as the core sees it (made once per job).
    op_spec: Arc<OpSpec>,
    input: Arc<JobInput>,
    reply: Reply,
    submitted_ns: Nanos,
    started_ns: Option<Nanos>,
    service_ns: Nanos,
    predicted_ns: Nanos,
    /// Its cost model (see [`Submission::cost`]).
    cost: Arc<dyn isola_core::CostModel>,
    /// Subtasks (empty: the task runs whole).
    parts: Vec<Subtask>,
    ordered: bool,
    /// Ordered: the next subtask to submit. Unordered: unused.
    next_part: usize,
    /// Unordered: each subtask's carry. Ordered: the latest carry in slot 0.
    carries: Vec<Option<Carry>>,
    /// For operators with a `Placement`: the output every subtask writes
    /// its share of in place, and each subtask's ranges (handed over with it).
    placed: Option<Arc<PlacedOutput>>,
    regions: Vec<Vec<Range<usize>>>,
    /// Pieces submitted and not yet reported.
    outstanding: usize,
    error: Option<TaskError>,
}

/// One piece of a job handed to the scheduler or an engine.
struct Piece {
    job: u64,
    part: Option<usize>,
    dispatch: Option<DispatchId>,
}

pub(crate) struct Dispatcher {
    shared: Arc<Shared>,
    rx: crossbeam_channel::Receiver<Msg>,
    scheduler: Option<Scheduler>,
    queues: Vec<crossbeam_channel::Sender<WorkItem>>,
    jobs: HashMap<u64, Job>,
    pieces: HashMap<u64, Piece>,
    next_token: u64,
    shutdown_ack: Option<crossbeam_channel::Sender<()>>,
    /// Per engine, per tenant: jobs in flight.
    active_jobs: Vec<Vec<usize>>,
    /// Per engine, per tenant: when it last submitted.
    last_submit: Vec<Vec<Option<Nanos>>>,
}

impl Dispatcher {
    pub(crate) fn new(
        shared: Arc<Shared>,
        rx: crossbeam_channel::Receiver<Msg>,
        scheduler: Option<Scheduler>,
        queues: Vec<crossbeam_channel::Sender<WorkItem>>,
    ) -> Self {
        Dispatcher {
            rx,
            scheduler,
            queues,
            jobs: HashMap::new(),
            pieces: HashMap::new(),
            next_token: 0,
            shutdown_ack: None,
            active_jobs: vec![vec![0; shared.tenants.len()]; shared.engines.len()],
            last_submit: vec![vec![None; shared.tenants.len()]; shared.engines.len()],
            shared,
        }
    }

    /// Whether a tenant other than `tenant` is active on `engine` at `now`.
    fn contended(&self, engine: usize, tenant: usize, now: Nanos, window: Nanos) -> bool {
        (0..self.active_jobs[engine].len()).any(|t| {
            t != tenant
                && (self.active_jobs[engine][t] > 0
                    || self.last_submit[engine][t].is_some_and(|at| now.saturating_sub(at) <= window))
        })
    }

    fn now(&self) -> Nanos {
        self.shared.epoch.elapsed().as_nanos() as Nanos
    }

    /// Runs until shut down and drained.
    pub(crate) fn run(mut self) {
        loop {
            // A full engine's completion is a message anyway.
            let deadline = self.scheduler.as_ref().and_then(|s| {
                s.next_wakeup()
                    .map(|at| self.shared.epoch + Duration::from_nanos(at))
            });
            let msg = match crate::spin::recv(&self.rx, self.shared.spin, deadline) {
                Ok(m) => Some(m),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
            };
            match msg {
                Some(Msg::Submit(s)) => self.submit(s),
                Some(Msg::Done(d)) => self.done(d),
                Some(Msg::Shutdown(ack)) => self.begin_shutdown(ack),
                None => {}
            }
            self.pump();
            if self.shutdown_ack.is_some() && self.jobs.is_empty() {
                // Closing the queues stops the workers.
                self.queues.clear();
                if let Some(ack) = self.shutdown_ack.take() {
                    let _ = ack.send(());
                }
                return;
            }
        }
    }

    fn submit(&mut self, s: Submission) {
        let now = self.now();
        let submitted_ns = s.submitted.duration_since(self.shared.epoch).as_nanos() as Nanos;
        let (e, t) = (s.engine, s.tenant.index());
        let engine = &self.shared.engines[e];
        // Native mode never splits; isolated engines split splittable tasks
        // larger than their subtask size, when splitting pays.
        let worth_it = match engine.split_when {
            crate::builder::SplitWhen::Always => true,
            crate::builder::SplitWhen::Contended(window) => self.contended(e, t, now, window),
        };
        self.last_submit[e][t] = Some(now);
        // Every job counts as active until `finish`, which every path reaches.
        self.active_jobs[e][t] += 1;
        // The policy may adapt the subtask size to the load (ASTRAEA).
        let chunk = match (&self.scheduler, engine.split_bytes) {
            (Some(scheduler), Some(c)) => {
                Some(scheduler.split_bytes(now, isola_core::EngineId(e as u32), s.tenant, c))
            }
            (_, c) => c,
        };
        let plan = match (&self.scheduler, chunk, s.op.splitter()) {
            (Some(_), Some(chunk), Some(split)) if worth_it && s.input.len() as u64 > chunk => {
                let planned = guarded(s.op.name(), || {
                    split
                        .plan(TaskId(s.id), s.input.len(), chunk as usize)
                        .map_err(TaskError::Operator)
                });
                match planned {
                    Ok(parts) => Some((parts, split.ordered())),
                    Err(e) => {
                        let job = self.new_job(s, submitted_ns, Vec::new(), false);
                        self.finish(job, Err(e));
                        return;
                    }
                }
            }
            _ => None,
        };
        let (parts, ordered) = plan.unwrap_or_default();
        let placed = if ordered || parts.is_empty() {
            Ok(None)
        } else {
            place(s.op.as_ref(), s.input.len(), &parts)
        };
        let id = s.id;
        let mut job = self.new_job(s, submitted_ns, parts, ordered);
        match placed {
            Ok(Some((output, regions))) => {
                job.placed = Some(output);
                job.regions = regions;
            }
            Ok(None) => {}
            Err(e) => {
                self.finish(job, Err(e));
                return;
            }
        }
        if self.shutdown_ack.is_some() {
            self.finish(job, Err(TaskError::Cancelled));
            return;
        }
        let first: Vec<Option<usize>> = if job.parts.is_empty() {
            vec![None]
        } else if job.ordered {
            vec![Some(0)]
        } else {
            (0..job.parts.len()).map(Some).collect()
        };
        self.jobs.insert(id, job);
        for part in first {
            self.send_piece(now, id, part);
        }
    }

    fn new_job(&self, s: Submission, submitted_ns: Nanos, parts: Vec<Subtask>, ordered: bool) -> Job {
        let carries = if ordered { 1 } else { parts.len() };
        Job {
            id: s.id,
            tenant: s.tenant,
            engine: s.engine,
            op_spec: Arc::new(OpSpec {
                name: s.op_name.clone(),
                params: Vec::new(),
            }),
            op_name: s.op_name,
            input: Arc::new(JobInput {
                op: s.op,
                input: s.input,
            }),
            reply: s.reply,
            submitted_ns,
            started_ns: None,
            service_ns: 0,
            predicted_ns: s.predicted_ns,
            cost: s.cost,
            next_part: usize::from(ordered),
            carries: (0..carries).map(|_| None).collect(),
            parts,
            ordered,
            placed: None,
            regions: Vec::new(),
            outstanding: 0,
            error: None,
        }
    }

    /// Hands a job's piece to the scheduler (isolated) or straight to its
    /// engine's queue (native).
    fn send_piece(&mut self, now: Nanos, job_id: u64, part: Option<usize>) {
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return;
        };
        let token = self.next_token;
        self.next_token += 1;
        job.outstanding += 1;
        self.pieces.insert(
            token,
            Piece {
                job: job_id,
                part,
                dispatch: None,
            },
        );
        let Some(scheduler) = self.scheduler.as_mut() else {
            self.enqueue(token);
            return;
        };
        // A subtask's size in the operator's own terms (for EC, bytes of
        // each shard) is turned into the share of the task's input it
        // covers, which is what the cost model and byte charges are in.
        let input_len = job.input.input.len() as u64;
        let (bytes, predicted) = match part {
            None => (input_len, job.predicted_ns),
            Some(p) => {
                let planned: u64 = job.parts.iter().map(|s| s.bytes).sum::<u64>().max(1);
                let share =
                    |total: u64| (total as u128 * job.parts[p].bytes as u128 / planned as u128) as u64;
                let bytes = share(input_len).max(1);
                let predicted = job
                    .cost
                    .predict(&job.op_name, bytes)
                    .filter(|&ns| ns > 0)
                    .unwrap_or_else(|| share(job.predicted_ns).max(1));
                (bytes, predicted)
            }
        };
        let task = Task {
            id: TaskId(token),
            tenant: job.tenant,
            engine: isola_core::EngineId(job.engine as u32),
            op: Arc::clone(&job.op_spec),
            bytes,
            // A subtask belongs to the task the tenant submitted: it arrived
            // then, and latency objectives are judged on the whole task.
            arrival: job.submitted_ns.min(now),
            deadline: None,
            predicted_cost: Some(predicted),
            whole_cost: part.map(|_| job.predicted_ns),
        };
        if let Err(rejection) = scheduler.submit(now, task) {
            // Channel caps are enforced at submit by the tenant's handle;
            // the core's own cap is set beyond reach, so this is a bug guard.
            self.pieces.remove(&token);
            if let Some(job) = self.jobs.get_mut(&job_id) {
                job.outstanding -= 1;
            }
            let error = TaskError::Rejected(rejection.reason.to_string());
            self.piece_failed(job_id, error);
        }
    }

    /// Puts piece `token` on its engine's queue.
    fn enqueue(&mut self, token: u64) {
        let Some(piece) = self.pieces.get(&token) else {
            return;
        };
        let Some(job) = self.jobs.get_mut(&piece.job) else {
            return;
        };
        let previous = if job.ordered { job.carries[0].take() } else { None };
        let direct = piece.part.is_none().then(|| crate::worker::Direct {
            completion: Completion {
                task: job.id,
                tenant: job.tenant,
                engine: isola_core::EngineId(job.engine as u32),
                op: job.op_name.clone(),
                bytes: job.input.input.len() as u64,
                result: Err(TaskError::Cancelled),
                submitted_ns: job.submitted_ns,
                started_ns: None,
                finished_ns: 0,
                service_ns: 0,
                predicted_ns: job.predicted_ns,
                subtasks: 1,
                over_budget: false,
            },
            reply: job.reply.clone(),
            budget: self.shared.tenants[job.tenant.index()].1.service_budget,
            shared: Arc::clone(&self.shared),
        });
        let item = WorkItem {
            token,
            job: Arc::clone(&job.input),
            part: piece.part.map(|p| job.parts[p]),
            previous,
            placed: match (&job.placed, piece.part) {
                (Some(output), Some(p)) => Some(PlacedPart {
                    output: Arc::clone(output),
                    regions: job.regions.get_mut(p).map(std::mem::take).unwrap_or_default(),
                }),
                _ => None,
            },
            direct,
        };
        // The workers hold the receivers until the dispatcher closes the
        // queues, so a send cannot fail while the dispatcher runs.
        let _ = self.queues[job.engine].send(item);
    }

    /// Dispatches whatever the scheduler releases now.
    fn pump(&mut self) {
        let Some(scheduler) = self.scheduler.as_mut() else {
            return;
        };
        let now = self.shared.epoch.elapsed().as_nanos() as Nanos;
        let mut ready = Vec::new();
        for e in 0..scheduler.engine_count() {
            while let Some(d) = scheduler.next(now, isola_core::EngineId(e as u32)) {
                ready.push((d.task.id.0, d.id));
            }
        }
        for (token, id) in ready {
            if let Some(p) = self.pieces.get_mut(&token) {
                p.dispatch = Some(id);
            }
            self.enqueue(token);
        }
    }

    fn done(&mut self, d: WorkDone) {
        let now = self.now();
        let Some(piece) = self.pieces.remove(&d.token) else {
            return;
        };
        if let (Some(s), Some(id)) = (self.scheduler.as_mut(), piece.dispatch) {
            // A dispatch id from this scheduler, completed once.
            let _ = s.complete(now, id, d.measured_ns);
        }
        let started = d.started.duration_since(self.shared.epoch).as_nanos() as Nanos;
        let Some(job) = self.jobs.get_mut(&piece.job) else {
            return;
        };
        job.outstanding -= 1;
        job.service_ns = job.service_ns.saturating_add(d.measured_ns);
        if !matches!(d.output, Err(TaskError::Cancelled)) {
            job.started_ns = Some(job.started_ns.map_or(started, |s| s.min(started)));
        }
        match d.output {
            Ok(PartOutput::Whole(out)) => {
                let job = self.jobs.remove(&piece.job).expect("present: looked up above");
                self.finish(job, Ok(out));
            }
            Ok(PartOutput::Delivered) => {
                // The worker completed the task itself.
                let job = self.jobs.remove(&piece.job).expect("present: looked up above");
                let active = &mut self.active_jobs[job.engine][job.tenant.index()];
                *active = active.saturating_sub(1);
            }
            Ok(PartOutput::Part(carry)) => {
                let index = piece.part.unwrap_or(0);
                if job.ordered {
                    job.carries[0] = Some(carry);
                    if job.next_part < job.parts.len() && job.error.is_none() && self.shutdown_ack.is_none() {
                        let next = job.next_part;
                        job.next_part += 1;
                        self.send_piece(now, piece.job, Some(next));
                        return;
                    }
                    if self.shutdown_ack.is_some() && job.next_part < job.parts.len() {
                        job.error.get_or_insert(TaskError::Cancelled);
                    }
                } else if let Some(slot) = job.carries.get_mut(index) {
                    *slot = Some(carry);
                }
                self.maybe_finish(piece.job);
            }
            Err(e) => self.piece_failed(piece.job, e),
        }
    }

    /// Records a piece's error; the job finishes once nothing is in flight.
    fn piece_failed(&mut self, job_id: u64, e: TaskError) {
        if let Some(job) = self.jobs.get_mut(&job_id) {
            job.error.get_or_insert(e);
            if job.ordered {
                // No further subtask of a failed chain is submitted.
                job.next_part = job.parts.len();
            }
        }
        self.maybe_finish(job_id);
    }

    /// Finishes a split job once all its pieces are back.
    fn maybe_finish(&mut self, job_id: u64) {
        let Some(job) = self.jobs.get(&job_id) else {
            return;
        };
        let all_sent = !job.ordered || job.next_part >= job.parts.len();
        if job.outstanding > 0 || !all_sent {
            return;
        }
        let mut job = self.jobs.remove(&job_id).expect("present: looked up above");
        let result = match job.error.take() {
            Some(e) => Err(e),
            None => {
                let carries: Option<Vec<Carry>> = job.carries.drain(..).collect();
                let op = job.input.op.as_ref();
                match (carries, job.placed.take(), op.placement(), op.splitter()) {
                    // Written in place: only the operator's finishing touch
                    // (e.g. a tag) is left.
                    (Some(c), Some(output), Some(placement), _) => guarded(op.name(), || {
                        let mut out = PlacedOutput::into_vec(output);
                        placement.finish(c, &mut out)?;
                        Ok(out)
                    }),
                    (Some(c), None, _, Some(split)) => guarded(op.name(), || {
                        split
                            .reassemble(job.input.input.len(), c)
                            .map_err(TaskError::Operator)
                    }),
                    _ => Err(TaskError::Operator(isola_ops::OpError::WrongCarry {
                        op: op.name(),
                    })),
                }
            }
        };
        self.finish(job, result);
    }

    /// Sends a job's one completion and counts it.
    fn finish(&mut self, job: Job, result: Result<Vec<u8>, TaskError>) {
        let active = &mut self.active_jobs[job.engine][job.tenant.index()];
        *active = active.saturating_sub(1);
        let budget = self.shared.tenants[job.tenant.index()].1.service_budget;
        let completion = Completion {
            task: job.id,
            tenant: job.tenant,
            engine: isola_core::EngineId(job.engine as u32),
            op: job.op_name,
            bytes: job.input.input.len() as u64,
            result,
            submitted_ns: job.submitted_ns,
            started_ns: job.started_ns,
            finished_ns: self.now(),
            service_ns: job.service_ns,
            predicted_ns: job.predicted_ns,
            subtasks: job.parts.len().max(1) as u32,
            over_budget: budget.is_some_and(|b| job.service_ns > b),
        };
        self.shared.complete(completion, &job.reply);
    }

    /// Stops taking work: everything still queued is cancelled, what runs
    /// finishes; the loop ends when no job is left.
    fn begin_shutdown(&mut self, ack: crossbeam_channel::Sender<()>) {
        self.shutdown_ack = Some(ack);
        self.shared.cancelled.store(true, Ordering::Release);
        if let Some(s) = self.scheduler.as_mut() {
            for task in s.close() {
                if let Some(piece) = self.pieces.remove(&task.id.0) {
                    if let Some(job) = self.jobs.get_mut(&piece.job) {
                        job.outstanding -= 1;
                    }
                    self.piece_failed(piece.job, TaskError::Cancelled);
                }
            }
        }
        // Ordered chains with subtasks not yet submitted stop here.
        let waiting: Vec<u64> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.ordered && j.next_part < j.parts.len())
            .map(|(&id, _)| id)
            .collect();
        for id in waiting {
            self.piece_failed(id, TaskError::Cancelled);
        }
    }
}
