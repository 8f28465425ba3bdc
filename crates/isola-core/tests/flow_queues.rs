//! A tenant's flow queues under the engine's policy: the two-level
//! hierarchy's shares against their closed form under every policy that
//! shares by weight, a tenant's latency flow beside its own bulk flow,
//! splitting a tenant into flows gaining it nothing, and conservation
//! (every accepted task dispatched in order and completed once) with
//! flows, priorities and ordered subtasks.

use isola_core::{
    AffineCost, EngineId, EngineKind, EngineSpec, FlowQueueSpec, Nanos, OpSpec, PlannerRef, RejectReason,
    Scheduler, SchedulerBuilder, Slo, Subtask, SubtaskPlanner, Task, TaskId, TenantId,
};
use proptest::prelude::*;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::Arc;

/// Work of one flow queue: a closed loop keeping `outstanding` tasks of
/// `cost` ns queued, or open-loop arrivals at `every` ns from `start`.
#[derive(Debug, Clone, Copy)]
struct Stream {
    tenant: usize,
    flow: u32,
    cost: Nanos,
    outstanding: usize,
    every: Option<Nanos>,
}

impl Stream {
    fn closed(tenant: usize, flow: u32, cost: Nanos) -> Self {
        Stream {
            tenant,
            flow,
            cost,
            outstanding: 4,
            every: None,
        }
    }
}

/// What each stream got.
#[derive(Debug, Default)]
struct Outcome {
    /// Engine time served per stream after the warm-up.
    busy: Vec<u64>,
    /// Per stream: how long each task waited from arrival to its dispatch.
    waits: Vec<Vec<Nanos>>,
}

impl Outcome {
    fn share(&self, i: usize) -> f64 {
        self.busy[i] as f64 / self.busy.iter().sum::<u64>() as f64
    }

    /// Asserts each stream's share of the engine is within `tolerance` of
    /// `want` (`run` names the run in the message).
    fn assert_shares(&self, want: &[f64], tolerance: f64, run: &str) {
        for (i, w) in want.iter().enumerate() {
            let got = self.share(i);
            assert!(
                (got - w).abs() < tolerance,
                "{run}: stream {i} got {got:.4}, want {w:.4}"
            );
        }
    }
}

fn scheduler(policy: &str, slots: u32, slos: &[Slo]) -> (Scheduler, EngineId, Vec<TenantId>) {
    let mut b = SchedulerBuilder::new();
    let cost = Arc::new(AffineCost::new(0.0, 1.0).unwrap());
    let e = b.engine(EngineSpec::new("e", EngineKind::ProcessingUnits, slots, cost));
    let ids = slos
        .iter()
        .enumerate()
        .map(|(i, s)| b.tenant(format!("t{i}"), s.clone()))
        .collect();
    b.policy(policy, BTreeMap::new());
    (b.build().expect("a valid setup"), e, ids)
}

fn task(id: u64, tenant: TenantId, e: EngineId, s: &Stream, at: Nanos) -> Task {
    Task {
        id: TaskId(id),
        tenant,
        engine: e,
        op: OpSpec::named("generic"),
        bytes: 1000,
        arrival: at,
        deadline: None,
        predicted_cost: Some(s.cost),
        planner: None,
        flow: s.flow,
    }
}

/// Runs `streams` on one engine until `until` ns; engine time counted
/// from `warmup` ns on. Every dispatch takes its predicted cost.
fn run(policy: &str, slots: u32, slos: &[Slo], streams: &[Stream], warmup: Nanos, until: Nanos) -> Outcome {
    let (mut s, e, ids) = scheduler(policy, slots, slos);
    let mut out = Outcome {
        busy: vec![0; streams.len()],
        waits: vec![Vec::new(); streams.len()],
    };
    let mut next_id = 0;
    let mut stream_of: HashMap<TaskId, usize> = HashMap::new();
    // (time, kind: 0 completion / 1 arrival, sequence, stream or dispatch)
    let mut events: BinaryHeap<Reverse<(Nanos, u8, u64, usize)>> = BinaryHeap::new();
    let mut in_service: HashMap<u64, isola_core::Dispatch> = HashMap::new();
    let mut seq = 0;
    let submit = |s: &mut Scheduler,
                  stream_of: &mut HashMap<TaskId, usize>,
                  i: usize,
                  now: Nanos,
                  next_id: &mut u64| {
        *next_id += 1;
        stream_of.insert(TaskId(*next_id), i);
        s.submit(now, task(*next_id, ids[streams[i].tenant], e, &streams[i], now))
            .expect("queued within its caps");
    };
    for (i, st) in streams.iter().enumerate() {
        match st.every {
            None => (0..st.outstanding).for_each(|_| submit(&mut s, &mut stream_of, i, 0, &mut next_id)),
            Some(_) => events.push(Reverse((0, 1, 0, i))),
        }
    }
    let mut now = 0;
    loop {
        while let Some(d) = s.next(now, e) {
            let i = stream_of[&d.task.id];
            if now >= warmup {
                out.busy[i] += d.predicted;
                out.waits[i].push(now - d.task.arrival);
            }
            seq += 1;
            events.push(Reverse((now + d.predicted, 0, seq, 0)));
            in_service.insert(seq, d);
        }
        let Some(Reverse((at, kind, id, i))) = events.pop() else {
            break;
        };
        if at > until {
            break;
        }
        now = at;
        if kind == 1 {
            submit(&mut s, &mut stream_of, i, now, &mut next_id);
            events.push(Reverse((now + streams[i].every.unwrap(), 1, 0, i)));
            continue;
        }
        let d = in_service.remove(&id).expect("in service");
        let done = s.complete(now, d.id, d.predicted).expect("completes once");
        let i = stream_of[&done.task];
        assert_eq!(done.flow, streams[i].flow, "a completion names its flow queue");
        if done.task_done && streams[i].every.is_none() {
            submit(&mut s, &mut stream_of, i, now, &mut next_id);
        }
    }
    out
}

fn flows(weights: &[f64]) -> Slo {
    Slo {
        flows: weights
            .iter()
            .map(|&weight| FlowQueueSpec {
                weight,
                ..FlowQueueSpec::default()
            })
            .collect(),
        ..Slo::weighted(1.0)
    }
}

/// Every policy that shares an engine by weight.
const WEIGHTED: [&str; 6] = ["wrr", "drr", "sfq", "bvt", "wlbvt", "mclock"];

/// Tenant A (weight 1) with flows of weights 1 and 3, tenant B (weight 1)
/// with one: A's flows get 1/2 x 1/4 and 1/2 x 3/4 of the engine, B 1/2,
/// under every weight-sharing policy (equal costs, so policies that count
/// tasks and those that count time agree), and with unequal costs under
/// those that charge time.
#[test]
fn a_two_level_hierarchy_shares_as_its_closed_form() {
    let slos = [flows(&[1.0, 3.0]), Slo::weighted(1.0)];
    let want = [0.125, 0.375, 0.5];
    for (policy, costs) in WEIGHTED
        .iter()
        .map(|p| (*p, [1000, 1000, 1000]))
        .chain(["drr", "sfq", "bvt", "mclock"].map(|p| (p, [4000, 500, 1500])))
    {
        let streams = [
            Stream::closed(0, 0, costs[0]),
            Stream::closed(0, 1, costs[1]),
            Stream::closed(1, 0, costs[2]),
        ];
        let out = run(policy, 1, &slos, &streams, 1_000_000, 41_000_000);
        out.assert_shares(&want, 0.01, &format!("{policy} costs {costs:?}"));
    }
}

/// Tenant A of weight 2 against B of weight 1, A split three ways by
/// weights 1, 1 and 2, on an engine of 4 slots.
#[test]
fn weights_multiply_down_the_hierarchy() {
    let slos = [
        Slo {
            weight: 2.0,
            ..flows(&[1.0, 1.0, 2.0])
        },
        Slo::weighted(1.0),
    ];
    let streams = [
        Stream::closed(0, 0, 1000),
        Stream::closed(0, 1, 1000),
        Stream::closed(0, 2, 1000),
        Stream::closed(1, 0, 1000),
    ];
    let want = [2.0 / 3.0 / 4.0, 2.0 / 3.0 / 4.0, 2.0 / 3.0 / 2.0, 1.0 / 3.0];
    for policy in ["drr", "sfq", "bvt", "mclock"] {
        let out = run(policy, 4, &slos, &streams, 1_000_000, 21_000_000);
        out.assert_shares(&want, 0.015, policy);
    }
}

/// A tenant that splits its work over 1, 2, 4 or 8 flow queues still gets
/// its weight's half against a tenant with one.
#[test]
fn splitting_a_tenant_into_flows_does_not_raise_its_share() {
    for policy in WEIGHTED {
        for n in [1u32, 2, 4, 8] {
            let slos = [flows(&vec![1.0; n as usize]), Slo::weighted(1.0)];
            let mut streams: Vec<Stream> = (0..n).map(|f| Stream::closed(0, f, 1000)).collect();
            streams.push(Stream::closed(1, 0, 1000));
            let out = run(policy, 2, &slos, &streams, 1_000_000, 21_000_000);
            let a: f64 = (0..n as usize).map(|i| out.share(i)).sum();
            assert!((a - 0.5).abs() < 0.01, "{policy}, {n} flows: tenant A got {a:.4}");
        }
    }
}

/// A tenant's latency flow (one 1 us task every 500 us, priority 1) beside
/// its own bulk flow (100 us tasks, 8 queued) and another tenant's bulk
/// flow, on one slot: each latency task waits at most for the task in
/// service and, under a fair policy, one turn of the other tenant (2 x 100
/// us). In one queue with its bulk work it waits behind its own 8 bulk
/// tasks too.
#[test]
fn a_latency_flow_keeps_its_latency_beside_its_own_bulk_flow() {
    let bulk = 100_000;
    let streams = |flow| {
        [
            Stream {
                outstanding: 8,
                ..Stream::closed(0, 0, bulk)
            },
            Stream {
                every: Some(500_000),
                ..Stream::closed(0, flow, 1_000)
            },
            Stream {
                outstanding: 8,
                ..Stream::closed(1, 0, bulk)
            },
        ]
    };
    let two = Slo {
        flows: vec![
            FlowQueueSpec::default(),
            FlowQueueSpec {
                priority: 1,
                ..FlowQueueSpec::default()
            },
        ],
        ..Slo::weighted(1.0)
    };
    for policy in ["drr", "sfq", "bvt", "wlbvt", "mclock"] {
        let own = run(
            policy,
            1,
            &[two.clone(), Slo::weighted(1.0)],
            &streams(1),
            0,
            50_000_000,
        );
        let worst = own.waits[1].iter().copied().max().unwrap();
        assert!(
            own.waits[1].len() >= 90,
            "{policy}: {} latency tasks",
            own.waits[1].len()
        );
        assert!(
            worst <= 2 * bulk,
            "{policy}: a latency task waited {worst} ns in its own queue"
        );
        let shared = run(
            policy,
            1,
            &[Slo::weighted(1.0), Slo::weighted(1.0)],
            &streams(0),
            0,
            50_000_000,
        );
        let worst_shared = shared.waits[1].iter().copied().max().unwrap();
        assert!(
            worst_shared >= 8 * bulk,
            "{policy}: behind its own bulk work it waited only {worst_shared} ns"
        );
    }
}

/// Cuts every task into ordered subtasks (a hash's chain).
struct Ordered;

impl SubtaskPlanner for Ordered {
    fn plan(&self, task: &Task, split: u64) -> Option<Vec<Subtask>> {
        Some(Subtask::ranges(task.id, task.bytes, split, true))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Every accepted task is dispatched once (its subtasks in order,
    /// ordered ones one at a time) and completes once, whatever the
    /// flows, their priorities, weights and caps; a refusal names a full
    /// queue or an unknown flow.
    #[test]
    fn every_task_of_every_flow_completes_once(
        specs in proptest::collection::vec((0.5f64..4.0, 0u8..3, proptest::option::of(1usize..6)), 1..5),
        slots in 1u32..4,
        raw in proptest::collection::vec((0u64..100_000, 0u32..6, 1u64..3_000, 1u64..9_000, any::<bool>()), 1..150),
    ) {
        let flows = specs.iter().map(|&(weight, priority, queue_cap)| FlowQueueSpec { weight, priority, queue_cap }).collect();
        let slos = [Slo { flows, queue_cap: 8, ..Slo::weighted(1.0) }, Slo::weighted(2.0)];
        for policy in isola_core::POLICIES.iter().map(|p| p.name) {
            let mut b = SchedulerBuilder::new();
            let cost = Arc::new(AffineCost::new(0.0, 1.0).unwrap());
            let e = b.engine(EngineSpec::new("e", EngineKind::Accelerator, slots, cost).with_split(Some(2_000)));
            let ids: Vec<TenantId> = slos.iter().enumerate().map(|(i, s)| b.tenant(format!("t{i}"), s.clone())).collect();
            b.policy(policy, BTreeMap::new());
            let mut s = b.build().unwrap();
            let planner = PlannerRef(Arc::new(Ordered));
            let mut arrivals = raw.clone();
            arrivals.sort_by_key(|a| a.0);
            let (mut accepted, mut done) = (Vec::new(), HashMap::new());
            let mut offsets: HashMap<TaskId, (u64, bool)> = HashMap::new();
            let mut running: BinaryHeap<Reverse<(Nanos, u64)>> = BinaryHeap::new();
            let mut meta = HashMap::new();
            let (mut now, mut seq, mut next) = (0, 0u64, 0usize);
            loop {
                while next < arrivals.len() && arrivals[next].0 <= now {
                    let (at, flow, cost, bytes, ordered) = arrivals[next];
                    let t = (flow % 2) as usize;
                    let id = TaskId(next as u64);
                    let task = Task {
                        id, tenant: ids[t], engine: e, op: OpSpec::named("generic"), bytes,
                        arrival: at.max(now), deadline: None, predicted_cost: Some(cost),
                        planner: ordered.then(|| planner.clone()), flow: if t == 0 { flow } else { 0 },
                    };
                    match s.submit(now, task) {
                        Ok(()) => accepted.push(id),
                        Err(r) => prop_assert!(
                            matches!(r.reason, RejectReason::ChannelFull { .. })
                                || matches!(r.reason, RejectReason::UnknownFlow { flow, .. } if flow as usize >= specs.len()),
                            "{policy}: {:?}", r.reason
                        ),
                    }
                    next += 1;
                }
                while let Some(d) = s.next(now, e) {
                    let (at, in_flight) = offsets.entry(d.task.id).or_default();
                    match d.subtask {
                        None => prop_assert_eq!(*at, 0, "{}: whole task dispatched twice", policy),
                        Some(st) => {
                            prop_assert_eq!(st.offset, *at, "{}: subtasks in order", policy);
                            prop_assert!(!(st.ordered && *in_flight), "{}: ordered subtasks overlap", policy);
                            *in_flight = st.ordered;
                        }
                    }
                    *at += d.subtask.map_or(d.task.bytes, |st| st.bytes);
                    seq += 1;
                    running.push(Reverse((now + d.predicted.max(1), seq)));
                    meta.insert(seq, d);
                }
                // A wake-up (a shaper, a policy's slice) counts as an arrival.
                let next_arrival = match (arrivals.get(next).map(|a| a.0), s.next_wakeup().filter(|&w| w > now)) {
                    (Some(a), Some(w)) => Some(a.min(w)),
                    (a, w) => a.or(w),
                };
                match (running.peek().map(|r| r.0 .0), next_arrival) {
                    (Some(c), a) if a.is_none_or(|a| c <= a) => {
                        let Reverse((at, k)) = running.pop().unwrap();
                        now = at;
                        let d = meta.remove(&k).unwrap();
                        let c = s.complete(now, d.id, d.predicted).unwrap();
                        offsets.get_mut(&c.task).unwrap().1 = false;
                        if c.task_done {
                            *done.entry(c.task).or_insert(0) += 1;
                        }
                    }
                    (_, Some(a)) => now = now.max(a),
                    (None, None) => break,
                    _ => unreachable!(),
                }
            }
            prop_assert_eq!(done.len(), accepted.len(), "{}: every accepted task completes", policy);
            prop_assert!(done.values().all(|&n| n == 1), "{}: once", policy);
            prop_assert_eq!(s.queued(e, ids[0]) + s.queued(e, ids[1]), 0);
        }
    }
}

/// A flow queue chosen at the tenant's turn is held to the tenant's limit:
/// a task that arrives in a higher-priority queue while the tenant's split
/// task continues (a continuation is not held to an ops limit, a new task
/// is) waits for the limit, and the continuation goes.
#[test]
fn a_flow_chosen_at_dispatch_is_held_to_the_tenants_limit() {
    let slo = Slo {
        limit: Some(isola_core::RateSpec {
            rate: isola_core::Rate::ops_per_sec(1000.0).unwrap(),
            burst: 0.0,
        }),
        flows: vec![
            FlowQueueSpec::default(),
            FlowQueueSpec {
                priority: 1,
                ..FlowQueueSpec::default()
            },
        ],
        ..Slo::weighted(1.0)
    };
    let mut b = SchedulerBuilder::new();
    let cost = Arc::new(AffineCost::new(0.0, 1.0).unwrap());
    let e = b.engine(EngineSpec::new("e", EngineKind::Accelerator, 1, cost).with_split(Some(1_000)));
    let a = b.tenant("a", slo);
    b.policy("sfq", BTreeMap::new());
    let mut s = b.build().unwrap();
    let submit = |s: &mut Scheduler, id: u64, flow: u32, bytes: u64, at: Nanos| {
        let task = Task {
            bytes,
            predicted_cost: Some(bytes),
            ..task(id, a, e, &Stream::closed(0, flow, bytes), at)
        };
        s.submit(at, task).unwrap();
    };
    submit(&mut s, 1, 0, 4_000, 0);
    let first = s.next(0, e).expect("the split task's first subtask");
    assert_eq!(
        (first.task.id, first.subtask.map(|st| st.index)),
        (TaskId(1), Some(0))
    );
    submit(&mut s, 2, 1, 500, 10);
    s.complete(1_000, first.id, 1_000).unwrap();
    let second = s.next(1_000, e).expect("the continuation");
    assert_eq!(
        (second.task.id, second.subtask.map(|st| st.index)),
        (TaskId(1), Some(1)),
        "the new task waits for the limit (one task a millisecond)"
    );
    s.complete(2_000, second.id, 1_000).unwrap();
    let third = s.next(1_000_000, e).expect("the limit lets a new task go");
    assert_eq!(
        third.task.id,
        TaskId(2),
        "then the higher-priority queue goes first"
    );
}
