//! A minimal virtual-time driver for the scheduler, for tests and benchmarks
//! only (the real simulator is `isola-sim`). One engine, or several alike
//! with per-engine SLO overrides; each dispatch takes exactly its task's
//! predicted cost, so engine time is known in closed form.

#![allow(dead_code)]

use isola_core::metrics::WindowedService;
use isola_core::{
    AffineCost, Completed, DispatchId, EngineId, EngineKind, EngineSelector, EngineSpec, Nanos, OpSpec,
    RejectReason, Scheduler, SchedulerBuilder, Slo, SloOverride, Subtask, Task, TaskId, TenantId,
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

pub fn run(setup: &Setup) -> Outcome {
    let (mut s, engines, ids) = build_engines(setup);
    let n = setup.slos.len();
    let op = OpSpec::named("generic");
    let mut out = Outcome {
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
    let mut next_id = 0u64;
    let mut submit = |s: &mut Scheduler,
                      out: &mut Outcome,
                      now: Nanos,
                      (e, t): (EngineId, usize),
                      cost: Nanos,
                      bytes: u64| {
        next_id += 1;
        let task = Task {
            id: TaskId(next_id),
            tenant: ids[t],
            engine: e,
            op: op.clone(),
            bytes,
            arrival: now,
            deadline: None,
            predicted_cost: Some(cost),
            planner: None,
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
    };
    let mut now = 0;
    for &e in &engines {
        for t in 0..n {
            let initial = if setup.closed_loop.contains(&t) {
                1
            } else {
                setup.outstanding
            };
            for _ in 0..initial {
                submit(&mut s, &mut out, 0, (e, t), setup.cost[t], setup.bytes[t]);
            }
        }
    }
    // (completion time, sequence) -> (dispatch, tenant, cost)
    let mut running: BinaryHeap<Reverse<(Nanos, u64)>> = BinaryHeap::new();
    let mut meta: HashMap<u64, (DispatchId, usize, Nanos)> = HashMap::new();
    let mut seq = 0u64;
    let mut arrivals = setup.arrivals.iter().peekable();
    let mut total = 0u64;
    loop {
        while let Some(a) = arrivals.peek().filter(|a| a.at <= now) {
            submit(&mut s, &mut out, now, (engines[0], a.tenant), a.cost, a.bytes);
            arrivals.next();
        }
        for &e in &engines {
            while total < setup.max_dispatches {
                let Some(d) = s.next(now, e) else { break };
                let t = d.task.tenant.index();
                let cost = setup.actual.get(t).copied().unwrap_or(d.task.predicted_cost);
                total += 1;
                out.dispatched[t] += 1;
                out.dispatch_times[t].push(now);
                out.engine_dispatch_times[e.index()][t].push(now);
                out.dispatched_ids.push((d.task.id, d.subtask));
                out.windows.add_service(t, now, now + cost);
                seq += 1;
                running.push(Reverse((now + cost, seq)));
                meta.insert(seq, (d.id, t, cost));
            }
        }
        let next_completion = running.peek().map(|r| r.0 .0);
        let next_arrival = arrivals.peek().map(|a| a.at);
        let wake = s.next_wakeup().filter(|&w| w > now);
        let Some(t) = [next_completion, next_arrival, wake].into_iter().flatten().min() else {
            break;
        };
        now = t;
        while let Some(Reverse((at, k))) = running.peek().copied() {
            if at > now {
                break;
            }
            running.pop();
            let (id, tenant, cost) = meta.remove(&k).unwrap();
            let c = s
                .complete(now, id, cost)
                .expect("completion of a dispatch in service");
            out.busy[tenant] += cost;
            out.end = now;
            out.completions.push(c);
            let closed = setup.outstanding > 0 || setup.closed_loop.contains(&tenant);
            if closed && c.task_done && total < setup.max_dispatches {
                submit(
                    &mut s,
                    &mut out,
                    now,
                    (c.engine, tenant),
                    setup.cost[tenant],
                    setup.bytes[tenant],
                );
            }
        }
    }
    out.scheduler = s;
    out
}
