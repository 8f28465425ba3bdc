//! A minimal virtual-time driver for the scheduler, for tests and benchmarks
//! only (the real simulator is `isola-sim`). One engine, or several alike
//! with per-engine SLO overrides; each dispatch takes exactly its task's
//! predicted cost, so engine time is known in closed form.

#![allow(dead_code)]

use isola_core::metrics::WindowedService;
use isola_core::{
    AffineCost, Completed, DispatchId, EngineId, EngineKind, EngineSelector, EngineSpec, Nanos, OpRef,
    OpSpec, RejectReason, Scheduler, SchedulerBuilder, Slo, SloOverride, Subtask, Task, TaskId, TenantId,
};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::Arc;

/// One task to submit at a given time (open loop).
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    pub at: Nanos,
    pub tenant: usize,
    pub cost: Nanos,
    pub bytes: u64,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Setup {
    pub policy: String,
    pub params: BTreeMap<String, String>,
    pub slots: u32,
    pub slos: Vec<Slo>,
    /// Closed loop: tasks kept outstanding per tenant (0 = open loop only).
    pub outstanding: usize,
    /// Tenants that resubmit on each completion even with `outstanding = 0`
    /// (each starts with one task); mixed open and closed loops.
    pub closed_loop: Vec<usize>,
    /// Closed loop: each tenant's task cost and size.
    pub cost: Vec<Nanos>,
    pub bytes: Vec<u64>,
    /// Closed loop: each tenant's real service time when it differs from the
    /// prediction (empty: service takes exactly the predicted cost).
    pub actual: Vec<Nanos>,
    /// Stop dispatching after this many dispatches (closed loop).
    pub max_dispatches: u64,
    /// Open-loop arrivals, in time order.
    pub arrivals: Vec<Arrival>,
    pub window: Nanos,
    /// Fragment size of the engine (`None`: whole tasks).
    pub fragment: Option<u64>,
    /// Engines, alike (named `e0`, `e1`, ...). Closed loops keep
    /// `outstanding` tasks per tenant on each; open-loop arrivals go to `e0`.
    pub engines: usize,
    /// Per-engine SLO changes: (engine index, tenant index, change).
    pub overrides: Vec<(usize, usize, SloOverride)>,
}

impl Setup {
    pub fn closed(policy: &str, slots: u32, weights: &[f64], cost: &[Nanos], dispatches: u64) -> Self {
        Setup {
            policy: policy.into(),
            params: BTreeMap::new(),
            slots,
            slos: weights.iter().map(|&w| Slo::weighted(w)).collect(),
            outstanding: slots as usize + 4,
            closed_loop: Vec::new(),
            cost: cost.to_vec(),
            bytes: vec![1000; cost.len()],
            actual: Vec::new(),
            max_dispatches: dispatches,
            arrivals: Vec::new(),
            window: 100_000,
            fragment: None,
            engines: 1,
            overrides: Vec::new(),
        }
    }

    pub fn param(mut self, k: &str, v: &str) -> Self {
        self.params.insert(k.into(), v.into());
        self
    }
}

/// What happened.
#[derive(Debug)]
pub struct Outcome {
    /// Time of the last completion.
    pub end: Nanos,
    /// Slot-time served per tenant (ns).
    pub busy: Vec<u64>,
    pub dispatched: Vec<u64>,
    /// Dispatch times per tenant (every engine).
    pub dispatch_times: Vec<Vec<Nanos>>,
    /// Dispatch times per engine, per tenant.
    pub engine_dispatch_times: Vec<Vec<Vec<Nanos>>>,
    pub completions: Vec<Completed>,
    /// (task id, reason) of rejected submissions.
    pub rejected: Vec<(TaskId, RejectReason)>,
    /// Task ids accepted.
    pub accepted: Vec<TaskId>,
    /// Size of every submitted task.
    pub submitted_bytes: HashMap<TaskId, u64>,
    /// Task ids dispatched, in order, with the fragment each dispatch served.
    pub dispatched_ids: Vec<(TaskId, Option<Subtask>)>,
    pub windows: WindowedService,
    pub scheduler: Scheduler,
}

impl Outcome {
    pub fn share(&self, t: usize) -> f64 {
        self.busy[t] as f64 / self.busy.iter().sum::<u64>() as f64
    }
}

/// The scheduler `setup` describes, its engines and its tenants.
pub fn build_engines(setup: &Setup) -> (Scheduler, Vec<EngineId>, Vec<TenantId>) {
    let mut b = SchedulerBuilder::new();
    let engines = (0..setup.engines.max(1))
        .map(|i| {
            b.engine(
                EngineSpec::new(
                    format!("e{i}"),
                    EngineKind::ProcessingUnits,
                    setup.slots,
                    Arc::new(AffineCost::new(0.0, 1.0).unwrap()),
                )
                .with_split(setup.fragment),
            )
        })
        .collect();
    let ids: Vec<TenantId> = setup
        .slos
        .iter()
        .enumerate()
        .map(|(i, s)| b.tenant(format!("t{i}"), s.clone()))
        .collect();
    for &(e, t, change) in &setup.overrides {
        b.tenant_on(ids[t], EngineSelector::Named(format!("e{e}")), change);
    }
    b.policy(setup.policy.clone(), setup.params.clone());
    (b.build().expect("valid setup"), engines, ids)
}

/// [`build_engines`] for a one-engine setup.
pub fn build(setup: &Setup) -> (Scheduler, EngineId, Vec<TenantId>) {
    let (s, engines, ids) = build_engines(setup);
    (s, engines[0], ids)
}

/// A run of `setup` in progress: the scheduler, what is in service, and
/// what happened so far.
struct Driver<'a> {
    setup: &'a Setup,
    s: Scheduler,
    ids: Vec<TenantId>,
    op: OpRef,
    next_id: u64,
    /// (completion time, sequence) of every dispatch in service.
    running: BinaryHeap<Reverse<(Nanos, u64)>>,
    /// Sequence -> (dispatch, tenant, cost).
    meta: HashMap<u64, (DispatchId, usize, Nanos)>,
    seq: u64,
    /// Dispatches so far.
    total: u64,
    out: Outcome,
}

impl Driver<'_> {
    /// Submits a task of tenant `t` to engine `e` at `now`, checking what
    /// a refusal says.
    fn submit(&mut self, now: Nanos, (e, t): (EngineId, usize), cost: Nanos, bytes: u64) {
        let (s, out, ids) = (&mut self.s, &mut self.out, &self.ids);
        self.next_id += 1;
        let next_id = self.next_id;
        let task = Task {
            id: TaskId(next_id),
            tenant: ids[t],
            engine: e,
            op: self.op,
            bytes,
            arrival: now,
            deadline: None,
            predicted_cost: Some(cost),
            planner: None,
            flow: 0,
        };
        out.submitted_bytes.insert(TaskId(next_id), bytes);
        match s.submit(now, task) {
            Ok(()) => out.accepted.push(TaskId(next_id)),
            Err(r) => {
                match r.reason {
                    RejectReason::ChannelFull { cap, .. } => {
                        assert_eq!(s.queued(e, ids[t]), cap, "rejected as full while not full")
                    }
                    RejectReason::OverQuota {
                        quota, held, bytes, ..
                    } => {
                        assert_eq!(s.held(ids[t]), held, "the refusal says what is held");
                        assert!(held + bytes > quota, "refused over quota while within it")
                    }
                    _ => {}
                }
                out.rejected.push((r.task.id, r.reason));
            }
        }
    }

    /// Dispatches on engine `e` at `now` until it has nothing to give or
    /// the setup's dispatches are done.
    fn dispatch(&mut self, now: Nanos, e: EngineId) {
        let (setup, out) = (self.setup, &mut self.out);
        while self.total < setup.max_dispatches {
            let Some(d) = self.s.next(now, e) else { break };
            let t = d.task.tenant.index();
            let cost = setup.actual.get(t).copied().unwrap_or(d.task.predicted_cost);
            self.total += 1;
            out.dispatched[t] += 1;
            out.dispatch_times[t].push(now);
            out.engine_dispatch_times[e.index()][t].push(now);
            out.dispatched_ids.push((d.task.id, d.subtask));
            out.windows.add_service(t, now, now + cost);
            self.seq += 1;
            self.running.push(Reverse((now + cost, self.seq)));
            self.meta.insert(self.seq, (d.id, t, cost));
        }
    }

    /// Completes every dispatch due by `now`; closed loops resubmit.
    fn complete_due(&mut self, now: Nanos) {
        let setup = self.setup;
        while let Some(Reverse((at, k))) = self.running.peek().copied() {
            if at > now {
                break;
            }
            self.running.pop();
            let (id, tenant, cost) = self.meta.remove(&k).unwrap();
            let c = self
                .s
                .complete(now, id, cost)
                .expect("completion of a dispatch in service");
            self.out.busy[tenant] += cost;
            self.out.end = now;
            self.out.completions.push(c);
            let closed = setup.outstanding > 0 || setup.closed_loop.contains(&tenant);
            if closed && c.task_done && self.total < setup.max_dispatches {
                self.submit(now, (c.engine, tenant), setup.cost[tenant], setup.bytes[tenant]);
            }
        }
    }
}

pub fn run(setup: &Setup) -> Outcome {
    let (s, engines, ids) = build_engines(setup);
    let n = setup.slos.len();
    let out = Outcome {
        end: 0,
        busy: vec![0; n],
        dispatched: vec![0; n],
        dispatch_times: vec![Vec::new(); n],
        engine_dispatch_times: vec![vec![Vec::new(); n]; engines.len()],
        completions: Vec::new(),
        rejected: Vec::new(),
        accepted: Vec::new(),
        submitted_bytes: HashMap::new(),
        dispatched_ids: Vec::new(),
        windows: WindowedService::new(setup.window, n),
        scheduler: build(setup).0,
    };
    let mut d = Driver {
        setup,
        s,
        ids,
        op: OpSpec::named("generic"),
        next_id: 0,
        running: BinaryHeap::new(),
        meta: HashMap::new(),
        seq: 0,
        total: 0,
        out,
    };
    for &e in &engines {
        for t in 0..n {
            let initial = if setup.closed_loop.contains(&t) {
                1
            } else {
                setup.outstanding
            };
            for _ in 0..initial {
                d.submit(0, (e, t), setup.cost[t], setup.bytes[t]);
            }
        }
    }
    let mut now = 0;
    let mut arrivals = setup.arrivals.iter().peekable();
    loop {
        while let Some(a) = arrivals.peek().filter(|a| a.at <= now) {
            d.submit(now, (engines[0], a.tenant), a.cost, a.bytes);
            arrivals.next();
        }
        for &e in &engines {
            d.dispatch(now, e);
        }
        let next_completion = d.running.peek().map(|r| r.0 .0);
        let next_arrival = arrivals.peek().map(|a| a.at);
        let wake = d.s.next_wakeup().filter(|&w| w > now);
        let Some(t) = [next_completion, next_arrival, wake].into_iter().flatten().min() else {
            break;
        };
        now = t;
        d.complete_due(now);
    }
    d.out.scheduler = d.s;
    d.out
}
