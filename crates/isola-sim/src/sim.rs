//! The simulation loop: drives one `isola_core::Scheduler` per run with
//! virtual time, feeds its dispatches to device models, and tells the run
//! recorder (`isola_model::results::RunRecorder`) what each tenant got.
//!
//! Events happen in time order; simultaneous events in the order they were
//! scheduled (the event queue, [`crate::queue`], keeps them so), so a scenario and a seed give
//! the same run every time. A tenant's request goes through the
//! engines of its workload's pipeline one after another; it counts as
//! completed when the last stage finishes.

use crate::device::{Device, DeviceWork, Finished, Timer};
pub use crate::error::SimError;
pub use crate::hooks::RunHooks;
use crate::limits::{check_arrival_budget, RunGuard, MAX_SIMULATED_NS};
use crate::migrate::Migrations;
use crate::queue::EventQueue;
use crate::rss::rss_hash;
pub use crate::stage::{scheduler_for, scheduler_with};
use crate::state::{devices_for, stop_budgets, Request, WorkloadState};
use crate::workload::{flow_seq, packet_tuple};
use isola_core::{EngineId, Nanos, RejectReason, Task, TaskId, TenantId};
use isola_model::ingress::{ingress_rules, RuleSet};
use isola_model::results::{EngineTime, Outcome, PolicyResult, RunEnd, RunRecorder, TaskRecord};
use isola_model::scenario::{ArrivalSpec, PolicyRun, Scenario, Steering};
use rand_distr::{Distribution, Exp1};
use slab::Slab;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Arrival {
        workload: u32,
    },
    Device {
        engine: u32,
        token: u64,
    },
    Wakeup,
    /// Host migration group `group`'s check ([`crate::migrate`]).
    Migrate {
        group: u32,
    },
}

/// What a free slot of an engine serves: the core's dispatch, its
/// request's key and the bytes its device work moves.
#[derive(Debug, Clone, Copy)]
struct Served {
    id: isola_core::DispatchId,
    key: usize,
    bytes: u64,
}

/// What to report while a run goes: fraction of the run done, from 0 to 1.
pub type Progress<'a> = &'a mut dyn FnMut(f64);

/// Runs `scenario` under `policy` with `seed`. With `solo = Some(t)`, only
/// tenant `t` submits work (for slowdowns).
pub fn run_policy(
    scenario: &Scenario,
    policy: &PolicyRun,
    seed: u64,
    solo: Option<usize>,
    progress: Option<Progress<'_>>,
) -> Result<PolicyResult, SimError> {
    run_policy_with(scenario, policy, seed, solo, progress, RunHooks::default())
}

/// [`run_policy`] with what an embedder adds: its own policies, which
/// `policy` may name, and a flag that stops the run ([`RunHooks`]).
pub fn run_policy_with(
    scenario: &Scenario,
    policy: &PolicyRun,
    seed: u64,
    solo: Option<usize>,
    progress: Option<Progress<'_>>,
    hooks: RunHooks<'_>,
) -> Result<PolicyResult, SimError> {
    Sim::new(scenario, policy, seed, solo, hooks.policies)?.run(progress, hooks)
}

struct Sim<'a> {
    scenario: &'a Scenario,
    label: String,
    policy: String,
    sched: isola_core::Scheduler,
    devices: Vec<Device>,
    /// Every tenant's workloads, tenant by tenant.
    workloads: Vec<WorkloadState>,
    /// Index of each tenant's first workload in `workloads`.
    first_workload: Vec<usize>,
    requests: Slab<Request>,
    /// Pending events by time; simultaneous ones in scheduling order.
    events: EventQueue<Event>,
    now: Nanos,
    horizon: Option<Nanos>,
    wakeup_at: Option<Nanos>,
    /// Whether what [`Sim::arm_wakeup`] reads (the core's next wake-up,
    /// `wakeup_at`) may have changed since it last ran: false only while
    /// the core has since taken nothing but tasks for engines with every
    /// slot busy, which have no wake-up (issue 34).
    wakeup_stale: bool,
    /// What each tenant got, for the run's result.
    results: RunRecorder,
    /// Ingress rules (OSMOSIS' matching engine), if any tenant declares one.
    matching: Option<RuleSet<TenantId>>,
    /// Whether an engine steers by flow hash (RSS): only then is each
    /// packet's 5-tuple hashed.
    hashes_flows: bool,
    /// The run's limits and what they judge (events done among them).
    guard: RunGuard,
    timers: Vec<Timer>,
    finished: Vec<Finished>,
    /// Which engines batch ([`isola_core::BatchRule`]), and their batches
    /// in service.
    batching: Vec<bool>,
    /// Each engine's slots in the core (all busy: the core is not asked).
    slots: Vec<u32>,
    /// Per engine, per tenant (`e x tenants + t`): the service budget at
    /// which the device stops the tenant's task, where its action is
    /// `stop` (OSMOSIS' watchdog). Read from the core once: the simulator
    /// never changes a tenant's objectives during a run (issue 34).
    stop_budgets: Vec<Option<Nanos>>,
    batches: crate::batch::Batches,
    /// What the core hands out for one slot (reused).
    batch: Vec<isola_core::Dispatch>,
    /// A device event's finished work, batches opened into their tasks
    /// (reused).
    batch_done: Vec<Finished>,
    total_requests: Option<u64>,
    requests_done: u64,
    /// Host migration's groups and moves.
    migrations: Migrations,
}

impl<'a> Sim<'a> {
    fn new(
        scenario: &'a Scenario,
        policy: &PolicyRun,
        seed: u64,
        solo: Option<usize>,
        registered: &[isola_core::PolicyInfo],
    ) -> Result<Self, SimError> {
        let sched = scheduler_with(scenario, policy, registered)?;
        let devices = devices_for(scenario);
        let mut workloads = Vec::new();
        let mut first_workload = Vec::new();
        let mut total_requests = Some(0u64);
        for ((i, _), (k, w)) in scenario
            .tenants
            .iter()
            .enumerate()
            .flat_map(|(i, t)| t.workloads.iter().enumerate().map(move |kw| ((i, t), kw)))
        {
            if k == 0 {
                first_workload.push(workloads.len());
            }
            let active = solo.is_none_or(|s| s == i);
            let limit = match (&w.arrival, w.count) {
                (ArrivalSpec::Trace(rows), c) => {
                    Some(c.map_or(rows.len() as u64, |c| c.min(rows.len() as u64)))
                }
                (_, c) => c,
            };
            let limit = if active { limit } else { Some(0) };
            total_requests = match (total_requests, limit) {
                (Some(a), Some(l)) => Some(a + l),
                _ => None,
            };
            workloads.push(WorkloadState::new(scenario, w, (i, k), seed, limit));
        }
        let migrations = Migrations::new(
            workloads
                .iter()
                .map(|w| (w.tenant, &scenario.tenants[w.tenant].workloads[w.flow as usize])),
            scenario.tenants.len(),
            |e| scenario.engines[e].slots,
        );
        let mut sim = Sim {
            scenario,
            label: policy.label.clone(),
            policy: policy.name.clone(),
            results: RunRecorder::for_scenario(scenario, |i| solo.is_none_or(|s| s == i)),
            matching: ingress_rules(&scenario.tenants),
            hashes_flows: scenario
                .engines
                .iter()
                .any(|e| matches!(e.steering, Steering::Rss { .. })),
            devices,
            workloads,
            first_workload,
            requests: Slab::new(),
            events: EventQueue::new(),
            now: 0,
            horizon: scenario.run.duration,
            wakeup_at: None,
            wakeup_stale: true,
            guard: RunGuard::new(scenario, scenario.run.duration),
            timers: Vec::new(),
            finished: Vec::new(),
            batching: scenario.engines.iter().map(|e| e.batch.is_some()).collect(),
            slots: scenario.engines.iter().map(|e| e.core_slots()).collect(),
            stop_budgets: stop_budgets(&sched, scenario.engines.len(), scenario.tenants.len()),
            batches: crate::batch::Batches::default(),
            batch: Vec::new(),
            batch_done: Vec::new(),
            sched,
            total_requests,
            requests_done: 0,
            migrations,
        };
        for g in 0..sim.migrations.len() {
            sim.schedule(sim.migrations.every(g), Event::Migrate { group: g as u32 });
        }
        check_arrival_budget(scenario, sim.horizon, solo)?;
        for i in 0..sim.workloads.len() {
            if solo.is_some_and(|s| s != sim.workloads[i].tenant) {
                continue;
            }
            let w = sim.spec(i);
            if let ArrivalSpec::Closed(k) = w.arrival {
                let start = w.start;
                for _ in 0..k {
                    sim.schedule(start, Event::Arrival { workload: i as u32 });
                }
            } else {
                sim.schedule_next_arrival(i);
            }
        }
        Ok(sim)
    }

    /// Workload `i`'s spec.
    fn spec(&self, i: usize) -> &'a isola_model::scenario::WorkloadSpec {
        let w = &self.workloads[i];
        &self.scenario.tenants[w.tenant].workloads[w.flow as usize]
    }

    /// Queues `event` at `at`. Inlined: called, it read the event back
    /// whole from the caller's stack, a store-forwarding stall (issue 34).
    #[inline(always)]
    fn schedule(&mut self, at: Nanos, event: Event) {
        // An event after the run's end is never processed: not keeping it
        // also keeps times that saturated (a service time of ages) out.
        match self.horizon {
            Some(h) if at > h => return,
            None if at > MAX_SIMULATED_NS => {
                self.guard.overran(at);
                return;
            }
            _ => {}
        }
        self.events.push(at, event);
    }

    fn schedule_next_arrival(&mut self, t: usize) {
        let run = &mut self.workloads[t];
        if run.limit.is_some_and(|l| run.issued >= l) {
            return;
        }
        if let Some(next) = run.arrivals.next_arrival() {
            if self.horizon.is_none_or(|h| next.at < h) {
                let at = next.at.max(self.now);
                run.pending = Some(next);
                self.schedule(at, Event::Arrival { workload: t as u32 });
            }
        }
    }

    /// A new packet (request) of workload `source` arrives now. Ingress matching
    /// decides which tenant's channels it goes to (its own without rules).
    fn arrive(&mut self, source: usize) {
        let run = &mut self.workloads[source];
        if run.limit.is_some_and(|l| run.issued >= l) {
            return;
        }
        run.issued += 1;
        let traced = if run.closed {
            None
        } else {
            run.pending.take().and_then(|p| p.traced)
        };
        let (bytes, op) = match traced {
            Some((bytes, op)) if op == run.op => (bytes, None),
            Some((bytes, op)) => (bytes, Some(op)),
            None => (run.sizes.sample(), None),
        };
        let unit_exp: f64 = Exp1.sample(&mut run.service_rng);
        let closed = run.closed;
        // The packet's 5-tuple: its flow is its source port's turn among the
        // workload's `flows` (a new port per packet without it), renewed
        // after each `flow_life`.
        let source_tenant = run.tenant;
        let run = &self.workloads[source];
        let flow_seq = flow_seq(run.issued, run.flows, run.flow_life, self.now);
        // Built only for what reads it: ingress rules and RSS steering.
        let tuple = (self.matching.is_some() || self.hashes_flows)
            .then(|| packet_tuple(self.spec(source).flow.as_ref(), source_tenant, flow_seq));
        let flow_hash = match &tuple {
            Some(tuple) if self.hashes_flows => rss_hash(tuple),
            _ => 0,
        };
        let t = match (&self.matching, &tuple) {
            (Some(m), Some(tuple)) => match m.classify(tuple) {
                Some(owner) => owner.index(),
                None => {
                    self.results.task(TaskRecord {
                        tenant: TenantId(source_tenant as u32),
                        flow: self.workloads[source].flow,
                        bytes,
                        arrival: self.now,
                        end: self.now,
                        predicted: 0,
                        outcome: Outcome::Unmatched,
                    });
                    self.request_ended(source);
                    if !closed {
                        self.schedule_next_arrival(source);
                    }
                    return;
                }
            },
            _ => source_tenant,
        };
        let served_as = if t == source_tenant {
            source
        } else {
            self.first_workload[t]
        };
        let served = &self.workloads[served_as];
        let (moved, direction) = (served.on_host, served.direction);
        let mut stages = served.models(moved).iter().map(|s| s.predict(bytes, direction));
        // A workload has at least one stage (the scenario checked).
        let stage_predicted = stages.next().unwrap_or(0.0);
        let predicted_total = stages.fold(stage_predicted, |total, p| total + p);
        let request = Request {
            tenant: t,
            source,
            served_as,
            arrival: self.now,
            bytes,
            stage: 0,
            stage_bytes: bytes,
            stage_predicted,
            op,
            unit_exp,
            flow_hash,
            predicted_total,
            moved,
        };
        let key = self.requests.insert(request);
        if !closed {
            self.schedule_next_arrival(source);
        }
        self.submit_stage(key);
    }

    fn submit_stage(&mut self, key: usize) {
        let request = &self.requests[key];
        let t = request.tenant;
        let served_as = &self.workloads[request.served_as];
        let engine = match request.moved {
            false => served_as.engines[request.stage],
            true => served_as.moved_engines[request.stage],
        };
        let op = request.op.unwrap_or(self.workloads[request.source].op);
        let task = Task {
            id: TaskId(key as u64),
            tenant: TenantId(t as u32),
            engine: EngineId(engine as u32),
            op,
            bytes: request.stage_bytes,
            arrival: self.now,
            deadline: None,
            predicted_cost: Some(crate::round_ns(request.stage_predicted)),
            planner: None,
            flow: served_as.flow,
        };
        if let Err(rejection) = self.sched.submit(self.now, task) {
            self.wakeup_stale = true;
            if let RejectReason::CostTooLarge { cost, .. } = rejection.reason {
                self.guard.too_costly(t, engine, cost);
            }
            // Typed rejection (a full channel): count it; the request ends here.
            let request = self.requests.remove(key);
            self.record_request(&request, Outcome::Rejected);
            self.request_ended(request.source);
        } else {
            self.dispatch(engine);
        }
    }

    /// A request generated by workload `t` left the system (completed, rejected
    /// or aborted): a closed-loop workload issues its next one.
    #[inline]
    fn request_ended(&mut self, t: usize) {
        self.requests_done += 1;
        if self.workloads[t].closed {
            self.schedule(self.now, Event::Arrival { workload: t as u32 });
        }
    }

    /// Hands dispatches to engine `e`'s device while the scheduler has them.
    fn dispatch(&mut self, e: usize) {
        // With every slot busy the core is not asked (`next`'s own first
        // check); nor is its next wake-up, when nothing it depends on
        // changed since it was last asked: a task queued on a busy engine
        // leaves it at none for that engine, and the others' as they were.
        if !self.batching[e] && !self.wakeup_stale && self.sched.busy(EngineId(e as u32)) >= self.slots[e] {
            debug_assert_eq!(
                self.wakeup_due(),
                None,
                "a wake-up not asked for would have been scheduled"
            );
            return;
        }
        while let Some(Served { id, key, bytes }) = self.next_for(e) {
            let request = &self.requests[key];
            let t = request.tenant;
            let w = &self.workloads[request.served_as];
            let model = &w.models(request.moved)[request.stage];
            // The request keeps its stage's prediction for the stage's bytes.
            let mut service = if bytes == request.stage_bytes {
                model.sample_predicted(request.stage_predicted, bytes, request.unit_exp, w.direction)
            } else {
                model.sample(bytes, request.unit_exp, w.direction)
            };
            if w.measured_over_predicted != 1.0 {
                service = crate::round_ns(service as f64 * w.measured_over_predicted);
            }
            // The device stops a task at its budget only where the tenant
            // says `stop` (OSMOSIS' watchdog); `flag` runs it to its end,
            // and the completion is reported over budget. A batch runs
            // unwatched: each task's share of its service is judged
            // against the budget when the core completes it.
            let budget = self.stop_budgets[e * self.scenario.tenants.len() + t]
                .filter(|_| !(self.batching[e] && self.batches.holds(id)));
            let work = DeviceWork {
                dispatch: id,
                bytes,
                service,
                budget,
                direction: self.workloads[request.served_as].direction,
                queue: t as u32,
                flow_hash: request.flow_hash,
            };
            if !self.devices[e].admits(&work) {
                self.drop_at_device(id, key);
                continue;
            }
            self.devices[e].start(self.now, work, &mut self.timers);
            self.flush_timers(e);
        }
        self.arm_wakeup();
    }

    /// What engine `e`'s next free slot serves: a dispatch and the bytes
    /// its device work moves, or, on an engine that batches, the first
    /// dispatch of a batch (which stands for it) and all of its tasks'
    /// bytes; `None` when nothing may go. Only the fields read are taken
    /// from the core's `Dispatch` (inlined, the rest is not written).
    fn next_for(&mut self, e: usize) -> Option<Served> {
        let engine = EngineId(e as u32);
        if !self.batching[e] {
            // `next`'s own first check, without the call (issue 34).
            if self.sched.busy(engine) >= self.slots[e] {
                return None;
            }
            let d = self.sched.next(self.now, engine)?;
            return Some(Served {
                id: d.id,
                key: d.task.id.0 as usize,
                bytes: d.subtask.map_or(d.task.bytes, |f| f.bytes),
            });
        }
        self.batch.clear();
        if self.sched.next_batch(self.now, engine, &mut self.batch) == 0 {
            return None;
        }
        let (first, bytes) = self.batches.hold(&self.batch);
        Some(Served {
            id: first.id,
            key: first.task.id.0 as usize,
            bytes,
        })
    }

    /// The device refused dispatch `id` of request `key` (an RSS core's full
    /// ring: the NIC drops the packet): it leaves the core unserved and the
    /// request ends as rejected, as at a full channel; so does every other
    /// task of the batch it stands for.
    fn drop_at_device(&mut self, id: isola_core::DispatchId, key: usize) {
        for d in self.batches.take(id) {
            self.drop_dispatch(d.id, d.task.id.0 as usize);
        }
        self.drop_dispatch(id, key);
    }

    /// Dispatch `id` of request `key` ends unserved, as rejected.
    fn drop_dispatch(&mut self, id: isola_core::DispatchId, key: usize) {
        self.wakeup_stale = true;
        if let Err(e) = self.sched.complete(self.now, id, 0) {
            unreachable!("the core just handed out this dispatch: {e}");
        }
        if let Some(request) = self.requests.try_remove(key) {
            self.record_request(&request, Outcome::Rejected);
            self.request_ended(request.source);
        }
    }

    /// Schedules the timers engine `e`'s device asked for, in the order
    /// it asked (each a copy out of the vector, which is then cleared).
    #[inline(always)]
    fn flush_timers(&mut self, e: usize) {
        for i in 0..self.timers.len() {
            let (at, token) = self.timers[i];
            self.schedule(
                at,
                Event::Device {
                    engine: e as u32,
                    token,
                },
            );
        }
        self.timers.clear();
    }

    /// Schedules a wake-up for the earliest time an engine with a free slot
    /// may have work without another event (a throttled tenant released, a
    /// policy period).
    fn arm_wakeup(&mut self) {
        self.wakeup_stale = false;
        if let Some(w) = self.wakeup_due() {
            self.wakeup_at = Some(w);
            self.schedule(w, Event::Wakeup);
        }
    }

    /// The wake-up [`Sim::arm_wakeup`] would schedule now, if any: the
    /// core's next one (not before now), unless one as early is pending.
    fn wakeup_due(&self) -> Option<Nanos> {
        let w = self.sched.next_wakeup()?.max(self.now);
        self.wakeup_at.is_none_or(|p| w < p || p < self.now).then_some(w)
    }

    fn device_event(&mut self, e: usize, token: u64) {
        let mut finished = std::mem::take(&mut self.finished);
        self.devices[e].fire(self.now, token, &mut finished, &mut self.timers);
        self.flush_timers(e);
        if self.batching[e] {
            // Each batch's tasks, each with its share of the service.
            let mut each = std::mem::take(&mut self.batch_done);
            for f in &finished {
                self.batches.finish(f, &mut each);
            }
            finished.clear();
            self.batch_done = std::mem::replace(&mut finished, each);
        }
        // By reference: copying each out of the vector just written stalled
        // on store forwarding (issue 17).
        for f in &finished {
            self.finish(e, f);
        }
        finished.clear();
        self.finished = finished;
        self.dispatch(e);
    }

    fn finish(&mut self, e: usize, f: &Finished) {
        self.wakeup_stale = true;
        let c = match self.sched.complete(self.now, f.dispatch, f.service) {
            Ok(c) => c,
            // Every device work item is a dispatch the core handed out and
            // the device finishes once.
            Err(e) => unreachable!("the device finished a dispatch the core does not hold: {e}"),
        };
        let key = c.task.0 as usize;
        // The device's service ran from `started` to now.
        self.results.engine_time(EngineTime {
            tenant: c.tenant,
            engine: EngineId(e as u32),
            start: f.started,
            service: f.service,
        });
        let request = &mut self.requests[key];
        if f.aborted || c.over_budget {
            // OSMOSIS' watchdog: the kernel is killed and the request fails. Its
            // other fragments, if any, still drain.
            if c.task_done || c.subtask.is_none() {
                let request = self.requests.remove(key);
                self.record_request(&request, Outcome::Aborted);
                self.request_ended(request.source);
            }
            return;
        }
        if !c.task_done {
            return;
        }
        request.stage += 1;
        let models = self.workloads[request.served_as].models(request.moved);
        if request.stage < models.len() {
            let w = &self.scenario.tenants[c.tenant.index()].workloads[c.flow as usize];
            let ratio = self.scenario.engines[e].egress_ratio;
            request.stage_bytes = crate::round_ns(request.stage_bytes as f64 * ratio).max(1);
            request.stage_predicted = models[request.stage].predict(request.stage_bytes, w.direction);
            self.submit_stage(key);
            return;
        }
        let request = self.requests.remove(key);
        self.record_request(&request, Outcome::Completed);
        self.request_ended(request.source);
    }

    /// Records `request` leaving the system (or still in it) now.
    fn record_request(&mut self, request: &Request, outcome: Outcome) {
        self.results.task(TaskRecord {
            tenant: TenantId(request.tenant as u32),
            flow: self.workloads[request.served_as].flow,
            bytes: request.bytes,
            arrival: request.arrival,
            end: self.now,
            predicted: crate::round_ns(request.predicted_total),
            outcome,
        });
    }

    /// Host migration group `g`'s check: applies the rule to its engine's
    /// queued cost now, and checks again after its period.
    fn migration_check(&mut self, g: usize) {
        let from = EngineId(self.migrations.from(g) as u32);
        if let Some(m) = self.migrations.check(g, self.sched.queued_cost(from)) {
            self.workloads[m.workload].on_host = m.on_host;
        }
        self.schedule(
            self.now + self.migrations.every(g),
            Event::Migrate { group: g as u32 },
        );
    }

    /// Records each engine's queued work as the backlog of every window
    /// that ended by `at` (nothing has changed it since the last event).
    fn record_backlogs(&mut self, at: Nanos) {
        for e in 0..self.devices.len() {
            let engine = EngineId(e as u32);
            self.results
                .record_backlog(at, engine, self.sched.queued_cost(engine));
        }
    }

    fn run(
        mut self,
        mut progress: Option<Progress<'_>>,
        hooks: RunHooks<'_>,
    ) -> Result<PolicyResult, SimError> {
        while let Some((at, ev)) = self.events.pop() {
            if self.horizon.is_some_and(|h| at > h) {
                break;
            }
            if self.results.backlog_due(at) {
                self.record_backlogs(at);
            }
            self.now = at;
            self.guard.event(at);
            self.guard.check(self.scenario)?;
            match ev {
                Event::Arrival { workload } => self.arrive(workload as usize),
                Event::Device { engine, token } => self.device_event(engine as usize, token),
                Event::Migrate { group } => self.migration_check(group as usize),
                Event::Wakeup => {
                    self.wakeup_at = None;
                    self.wakeup_stale = true;
                    for e in 0..self.devices.len() {
                        self.dispatch(e);
                    }
                }
            }
            if self.guard.events % 65_536 == 0 {
                if let Some(p) = progress.as_mut() {
                    let frac = match (self.horizon, self.total_requests) {
                        (Some(h), _) => self.now as f64 / h as f64,
                        (None, Some(total)) if total > 0 => self.requests_done as f64 / total as f64,
                        _ => 0.0,
                    };
                    p(frac.min(1.0));
                }
                if hooks.stopped() {
                    return Err(SimError::Stopped);
                }
            }
        }
        if hooks.stopped() {
            return Err(SimError::Stopped);
        }
        self.guard.check(self.scenario)?;
        if let Some(h) = self.horizon {
            self.now = self.now.max(h);
            self.record_backlogs(h);
        }
        // What is still in the system was in it until the run's end.
        let in_flight: Vec<Request> = self.requests.drain().collect();
        debug_assert_eq!(
            self.workloads.iter().map(|t| t.issued).sum::<u64>(),
            self.requests_done + in_flight.len() as u64,
            "every request issued has ended exactly once or is still in the system"
        );
        for request in &in_flight {
            self.record_request(request, Outcome::InFlight);
        }
        if let Some(p) = progress.as_mut() {
            p(1.0);
        }
        let mut result = self.results.finish(RunEnd {
            label: self.label,
            policy_name: self.policy,
            duration: self.horizon,
            events: self.guard.events,
        });
        result.migrations = self.migrations.into_moves();
        Ok(result)
    }
}
