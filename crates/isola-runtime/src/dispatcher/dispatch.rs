//! Handing what the core picks to its engine: a piece of work (a whole
//! task, or one of its subtasks) goes to its engine's worker queue, or,
//! for an engine run on the dispatcher's own thread
//! (`EngineConfig::on_dispatcher`), runs right here as it is picked: the
//! DPDK run-to-completion model, no hand-off, within a budget per pump
//! after which arrivals are taken before more runs.

use super::{Dispatcher, Running, TaskInFlight};
use crate::guard::catch;
use crate::job::TaskError;
use crate::placed::PlacedOutput;
use crate::worker::{guarded, Handoff, PlacedPart, WorkItem};
use isola_core::{BudgetAction, Dispatch, EngineId, Nanos};
use std::sync::Arc;

/// The most pieces of work the dispatcher runs itself (for engines run
/// on its thread) in one pump, before it looks at what has arrived: a few
/// batches of small packets. Arrivals then meet the core's queues (and
/// their per-tenant caps) instead of waiting, every tenant's alike, in a
/// socket.
const RUN_HERE: usize = 128;

/// The longest the dispatcher runs work itself in one pump (by the runs'
/// own end times) before it looks at what has arrived, however few pieces
/// that was: 500 us. A piece already running is never cut short: a long
/// one delays arrivals by its own length (so engines of long tasks keep
/// workers of their own).
const RUN_HERE_NS: Nanos = 500_000;

impl Dispatcher {
    /// Hands every dispatch the core makes to its engine. Work for an
    /// engine run on this thread runs here as it is picked (its place is
    /// then free again, and the core picks on), at most [`RUN_HERE`]
    /// pieces or [`RUN_HERE_NS`] between two looks at arrivals (the
    /// dispatcher's `turn`, across pumps): then `more_here` is set, and
    /// the dispatcher looks at what has arrived before it runs more.
    pub(super) fn pump(&mut self) {
        let mut now = self.now();
        // Passes over the engines while work ran here: a run's completion
        // can submit a pipeline's next stage to an engine already passed.
        loop {
            let ran_before = self.turn.0;
            for e in 0..self.scheduler.engine_count() {
                let engine = EngineId(e as u32);
                while self.failed[e].is_none() {
                    if (self.places[e].is_some() || self.inline[e].is_some()) && self.turn_spent(now) {
                        self.more_here = true;
                        break;
                    }
                    now = self.at_least(now);
                    let mut batch = std::mem::take(&mut self.batch);
                    batch.clear();
                    let got = catch(|| self.scheduler.next_batch(now, engine, &mut batch));
                    let count = match got {
                        Ok(n) => n,
                        Err(message) => {
                            self.batch = batch;
                            self.fail_engine(e, message);
                            break;
                        }
                    };
                    self.log(|| {
                        let mut pieces = batch.iter().map(|d| (d.task.id, d.subtask.map(|s| s.index)));
                        crate::CoreCall::Next {
                            now,
                            engine,
                            dispatched: pieces.next(),
                            batched: pieces.collect(),
                        }
                    });
                    let ran = match count {
                        0 => None,
                        1 => self.start(now, batch[0]),
                        _ => self.start_batch(now, &batch),
                    };
                    self.batch = batch;
                    if count == 0 {
                        break;
                    }
                    if let Some(ended) = ran {
                        // A batch run here counts each of its pieces.
                        let (ran, started) = self.turn;
                        self.turn = (ran + count, Some(started.unwrap_or(now)));
                        // No clock read: the run's own end (brought to
                        // the core's latest time by `start`) is later than
                        // every reading before it.
                        now = ended;
                    }
                }
            }
            if self.turn.0 == ran_before || self.more_here {
                return;
            }
        }
    }

    /// Whether this turn's budget of work run here is spent at `now`.
    fn turn_spent(&self, now: Nanos) -> bool {
        let (ran, started) = self.turn;
        ran >= RUN_HERE || started.is_some_and(|s| now.saturating_sub(s) >= RUN_HERE_NS)
    }

    /// Hands dispatch `d` to its engine's queue (or, for a task already
    /// failed, completes it at once without running it); work for an
    /// engine run on this thread runs here, and the time it ended is
    /// returned.
    fn start(&mut self, now: Nanos, d: Dispatch) -> Option<Nanos> {
        let (engine, item) = self.prepare(now, d)?;
        if self.runs_inline(engine, &d, &item) {
            match self.run_inline(engine, item) {
                Ok(ended) => return Some(ended),
                Err(item) => return self.hand(engine, Handoff::One(*item)),
            }
        }
        self.hand(engine, Handoff::One(item))
    }

    /// Hands the dispatches of one batch (one slot's, all of one tenant's
    /// engine) to its engine's workers as one message; run here where the
    /// engine has no threads, the time the last ended is returned.
    fn start_batch(&mut self, now: Nanos, batch: &[Dispatch]) -> Option<Nanos> {
        let mut items = Vec::with_capacity(batch.len());
        let mut engine = None;
        for d in batch {
            if let Some((e, item)) = self.prepare(now, *d) {
                debug_assert!(engine.is_none_or(|x| x == e), "a batch is one engine's");
                engine = Some(e);
                items.push(item);
            }
        }
        self.hand(engine?, Handoff::Batch(items))
    }

    /// The work item of dispatch `d` and its engine's index, or `None`
    /// when its task has failed already (it is completed at once, without
    /// running: the core still hears of each of its subtasks).
    fn prepare(&mut self, now: Nanos, d: Dispatch) -> Option<(usize, WorkItem)> {
        let id = d.task.id.0;
        let Some(task) = self.tasks.get_mut(&id) else {
            unreachable!("the core dispatched task {id}, which the dispatcher does not hold");
        };
        if let Some(sub) = d.subtask {
            if task.carries.is_empty() {
                task.subtasks = sub.count;
                task.carries = (0..if sub.ordered { 1 } else { sub.count })
                    .map(|_| None)
                    .collect();
                if !sub.ordered {
                    if let Err(e) = place(task) {
                        task.error.get_or_insert(e);
                    }
                }
            }
            debug_assert_eq!(task.subtasks, sub.count, "a task keeps its plan once split");
        }
        // The core's prediction of this stage: the submitter's, or what the
        // engine learned of its operator. The completion's prediction (for
        // SLA judgement, `isola ctl`, the metrics) is what was charged.
        task.predicted_ns = task
            .predicted_ns
            .saturating_sub(task.stage_predicted_ns)
            .saturating_add(d.task.predicted_cost);
        task.stage_predicted_ns = d.task.predicted_cost;
        let engine = EngineId(task.engine as u32);
        let watchdog = match self.scheduler.service_budget(engine, task.tenant) {
            Some(budget_ns) if self.scheduler.budget_action(engine, task.tenant) == BudgetAction::Stop => {
                // A split task's subtasks share its budget: the next one
                // does not start once the ones before have spent it.
                let spent = task.service_ns;
                if spent >= budget_ns && task.error.is_none() {
                    task.error = Some(TaskError::OverBudget {
                        budget_ns,
                        ran_ns: spent,
                    });
                }
                Some(crate::worker::Watchdog {
                    budget_ns,
                    left_ns: budget_ns.saturating_sub(spent),
                })
            }
            _ => None,
        };
        if task.error.is_some() {
            // Nothing more of a failed task runs.
            self.settle(now, id, d.id, 0);
            return None;
        }
        let token = self.next_token;
        self.next_token += 1;
        task.running += 1;
        self.running.insert(
            token,
            Running {
                task: id,
                dispatch: d.id,
                subtask: d.subtask,
            },
        );
        let previous = match d.subtask {
            Some(s) if s.ordered && s.index > 0 => {
                let carry = task.carries[0].take();
                debug_assert!(carry.is_some(), "an ordered subtask runs after the one before it");
                carry
            }
            _ => None,
        };
        let direct = (d.subtask.is_none() && task.rest.is_empty()).then(|| crate::worker::Direct {
            completion: task.completion(Err(TaskError::Cancelled), 0),
            busy_at_submit: task.busy_at_submit,
            handoff_ns: task.handoff_ns,
            reply: task.reply.clone(),
            budget: self
                .scheduler
                .service_budget(EngineId(task.engine as u32), task.tenant),
        });
        let placed = match (&task.placed, d.subtask) {
            (Some(output), Some(s)) => Some(PlacedPart {
                output: Arc::clone(output),
                regions: std::mem::take(&mut task.regions[s.index as usize]),
            }),
            _ => None,
        };
        let item = WorkItem {
            token,
            tenant: task.tenant.index(),
            job: Arc::clone(&task.input),
            part: d.subtask,
            previous,
            placed,
            direct,
            watchdog,
        };
        Some((task.engine, item))
    }

    /// Hands `work` to engine `engine`'s workers, or runs it here where
    /// the engine has no threads of its own (then the time its last piece
    /// ended is returned).
    fn hand(&mut self, engine: usize, work: Handoff) -> Option<Nanos> {
        if self.places[engine].is_some() {
            return match work {
                Handoff::One(item) => Some(self.run_here(engine, item)),
                Handoff::Batch(items) => items.into_iter().map(|item| self.run_here(engine, item)).last(),
            };
        }
        self.shared.busy[engine].handed(match &work {
            Handoff::One(_) => 1,
            Handoff::Batch(items) => items.len(),
        });
        // The workers hold the receivers until the dispatcher closes the
        // queues, which it does only once no task is left.
        if self.queues[engine].send(work).is_err() {
            unreachable!("engine {engine}'s workers are gone while the dispatcher runs");
        }
        None
    }
}

impl Dispatcher {
    /// Runs `item` on this thread for engine `engine` (one with no
    /// threads of its own, or a small task of one whose workers are idle:
    /// `inline.rs`) and takes its report; the time it ended.
    fn run_here(&mut self, engine: usize, item: WorkItem) -> Nanos {
        let Some(place) = &self.places[engine] else {
            unreachable!("only an engine run on the dispatcher runs everything here");
        };
        let done = crate::worker::work(item, place);
        self.ran_here(done)
    }

    /// Takes the report of work run here; the time it ended.
    fn ran_here(&mut self, done: crate::worker::WorkDone) -> Nanos {
        let started = done.started.duration_since(self.shared.epoch).as_nanos() as Nanos;
        let ended = self.at_least(started.saturating_add(done.measured_ns));
        self.done(done, ended);
        ended
    }

    /// Whether dispatch `d` (its work `item`) runs here by its engine's
    /// rule: a small whole task of a stoppable operator, its workers idle
    /// (`inline.rs`).
    fn runs_inline(&self, engine: usize, d: &Dispatch, item: &WorkItem) -> bool {
        let Some((rule, _)) = &self.inline[engine] else {
            return false;
        };
        item.job.work.operator().is_some_and(|op| op.stoppable())
            && rule.takes(d, self.shared.busy[engine].workers_idle(), self.latest.get())
    }

    /// Runs `item`, which [`Dispatcher::runs_inline`] took, here; the time
    /// it ended, or the item back to hand to the workers when it was
    /// stopped at the rule's limit (its tenant then demoted).
    fn run_inline(&mut self, engine: usize, item: WorkItem) -> Result<Nanos, Box<WorkItem>> {
        let Some((rule, place)) = &self.inline[engine] else {
            unreachable!("runs_inline takes nothing for an engine without the rule");
        };
        let limit = std::time::Duration::from_nanos(rule.limit());
        let tenant = item.tenant;
        match crate::worker::work_within(item, place, limit) {
            Ok(run) => {
                // Late (a task of one chunk, asked only before it began,
                // that took longer than the limit): it stands; twice in a
                // row, its tenant is demoted as if it had been stopped.
                let late = run.late.then(|| self.now());
                if let Some((rule, _)) = &mut self.inline[engine] {
                    match late {
                        Some(now) => rule.ran_late(tenant, now),
                        None => rule.ran_to_end(tenant),
                    }
                }
                Ok(self.ran_here(run.done))
            }
            Err(item) => {
                let now = self.now();
                if let Some((rule, _)) = &mut self.inline[engine] {
                    rule.demote(tenant, now);
                }
                Err(item)
            }
        }
    }
}

/// Sets up a split task of an operator with a `Placement` to write in
/// place: its output buffer, and each subtask's ranges of it, checked to be
/// in bounds and disjoint (what makes the shared buffer sound). Operators
/// without one reassemble from their subtasks' carries instead.
fn place(task: &mut TaskInFlight) -> Result<(), TaskError> {
    let Some(op) = task.input.work.operator() else {
        return Ok(());
    };
    let Some(placement) = op.placement() else {
        return Ok(());
    };
    let planned = task
        .planner
        .as_ref()
        .and_then(|p| p.planned.lock().ok().and_then(|g| g.clone()));
    let Some(parts) = planned.filter(|p| p.len() == task.subtasks as usize) else {
        unreachable!("a split task's planner kept the plan its subtasks come from");
    };
    let input_len = task.input.input.len();
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
    task.placed = Some(Arc::new(output));
    task.regions = regions;
    Ok(())
}
