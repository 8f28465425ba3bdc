//! Batching a tenant's small tasks into one dispatch (`BatchRule`): a
//! batch holds one slot and frees it when its last task completes; the
//! tenant is charged each task, so its share against other tenants is the
//! same with batches as without (the closed form of weighted sharing); a
//! batch keeps to its bytes and to one operator; a tenant whose channel
//! has just become ready waits at most `wait` for its batch to fill; and
//! every accepted task completes exactly once, whatever the rule.

use isola_core::{
    AffineCost, BatchRule, Dispatch, DispatchReason, EngineId, EngineKind, EngineSpec, Nanos, OpRef, OpSpec,
    Scheduler, SchedulerBuilder, Slo, Task, TaskId, TenantId,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

fn scheduler(policy: &str, slots: u32, tenants: usize, rule: Option<BatchRule>) -> (Scheduler, EngineId) {
    let mut b = SchedulerBuilder::new();
    let cost = Arc::new(AffineCost::new(0.0, 1.0).unwrap());
    let e = b.engine(EngineSpec::new("e", EngineKind::Accelerator, slots, cost).with_batch(rule));
    for t in 0..tenants {
        b.tenant(format!("t{t}"), Slo::weighted(1.0));
    }
    b.policy(policy, BTreeMap::new());
    (b.build().expect("a valid setup"), e)
}

fn task(id: u64, tenant: usize, op: &OpRef, bytes: u64, cost: Nanos, at: Nanos) -> Task {
    Task {
        id: TaskId(id),
        tenant: TenantId(tenant as u32),
        engine: EngineId(0),
        op: *op,
        bytes,
        arrival: at,
        deadline: None,
        predicted_cost: Some(cost),
        planner: None,
        flow: 0,
    }
}

fn batch_rule(tasks: u32, bytes: u64, wait: Nanos) -> Option<BatchRule> {
    Some(BatchRule::new(tasks, bytes, wait).expect("a valid rule"))
}

#[test]
fn a_batch_fills_one_slot_and_frees_it_when_its_last_task_completes() {
    let (mut s, e) = scheduler("fcfs", 1, 1, batch_rule(4, 1 << 20, 0));
    let op = OpSpec::named("generic");
    for i in 0..10 {
        s.submit(0, task(i, 0, &op, 64, 100, 0)).unwrap();
    }
    let mut batch = Vec::new();
    assert_eq!(s.next_batch(0, e, &mut batch), 4, "four tasks share the one slot");
    let ids: Vec<u64> = batch.iter().map(|d| d.task.id.0).collect();
    assert_eq!(ids, [0, 1, 2, 3], "in their queue's order");
    assert_eq!(batch[0].reason, DispatchReason::Policy);
    assert!(batch[1..].iter().all(|d| d.reason == DispatchReason::Batched));
    assert_eq!(s.busy(e), 1);
    let mut more = Vec::new();
    for (i, d) in batch.iter().enumerate() {
        assert_eq!(
            s.next_batch(10, e, &mut more),
            0,
            "the slot is the batch's until its last task"
        );
        let done = s.complete(100 * (i as u64 + 1), d.id, 100).unwrap();
        assert!(done.task_done);
    }
    assert_eq!(s.busy(e), 0, "the last completion frees the slot");
    assert_eq!(s.next_batch(400, e, &mut more), 4);
    assert!(
        s.complete(401, batch[0].id, 1).is_err(),
        "a completed dispatch is not completed twice"
    );
}

#[test]
fn a_batch_keeps_to_its_bytes_and_to_one_operator() {
    let (mut s, e) = scheduler("fcfs", 1, 1, batch_rule(16, 1000, 0));
    let (a, b) = (OpSpec::named("crc32"), OpSpec::named("sha256"));
    // 400 + 400 fit 1000 bytes; the third 400 does not.
    for i in 0..3 {
        s.submit(0, task(i, 0, &a, 400, 10, 0)).unwrap();
    }
    // Another operator's task ends a batch; a task over the bytes goes alone.
    s.submit(0, task(3, 0, &b, 10, 10, 0)).unwrap();
    s.submit(0, task(4, 0, &b, 5000, 10, 0)).unwrap();
    s.submit(0, task(5, 0, &b, 10, 10, 0)).unwrap();
    let mut sizes = Vec::new();
    let mut now = 0;
    loop {
        let mut batch = Vec::new();
        if s.next_batch(now, e, &mut batch) == 0 {
            break;
        }
        sizes.push(batch.iter().map(|d| d.task.id.0).collect::<Vec<_>>());
        for d in &batch {
            now += 10;
            s.complete(now, d.id, 10).unwrap();
        }
    }
    assert_eq!(sizes, vec![vec![0, 1], vec![2], vec![3], vec![4], vec![5]]);
}

#[test]
fn a_subtask_goes_alone() {
    let mut b = SchedulerBuilder::new();
    let cost = Arc::new(AffineCost::new(0.0, 1.0).unwrap());
    let e = b.engine(
        EngineSpec::new("e", EngineKind::Accelerator, 1, cost)
            .with_split(Some(1000))
            .with_batch(batch_rule(8, 1 << 20, 0)),
    );
    b.tenant("t", Slo::weighted(1.0));
    b.policy("fcfs", BTreeMap::new());
    let mut s = b.build().unwrap();
    let op = OpSpec::named("generic");
    s.submit(0, task(0, 0, &op, 3000, 3000, 0)).unwrap();
    for i in 1..4 {
        s.submit(0, task(i, 0, &op, 64, 64, 0)).unwrap();
    }
    let mut now = 0;
    let mut sizes = Vec::new();
    loop {
        let mut batch = Vec::new();
        if s.next_batch(now, e, &mut batch) == 0 {
            break;
        }
        sizes.push(batch.len());
        assert!(batch.len() == 1 || batch.iter().all(|d| d.subtask.is_none()));
        for d in &batch {
            now += 10;
            s.complete(now, d.id, 10).unwrap();
        }
    }
    assert_eq!(
        sizes,
        [1, 1, 1, 3],
        "three subtasks alone, then the small tasks together"
    );
}

#[test]
fn a_tenant_waits_for_its_batch_to_fill_at_most_wait() {
    let wait = 5_000;
    let (mut s, e) = scheduler("fcfs", 1, 1, batch_rule(4, 1 << 20, wait));
    let op = OpSpec::named("generic");
    s.submit(100, task(0, 0, &op, 64, 10, 100)).unwrap();
    let mut batch = Vec::new();
    assert_eq!(s.next_batch(100, e, &mut batch), 0, "one task waits for more");
    assert_eq!(s.next_wakeup(), Some(100 + wait), "until its wait ends");
    s.submit(200, task(1, 0, &op, 64, 10, 200)).unwrap();
    assert_eq!(s.next_batch(200, e, &mut batch), 0);
    assert_eq!(s.next_batch(100 + wait - 1, e, &mut batch), 0);
    assert_eq!(
        s.next_batch(100 + wait, e, &mut batch),
        2,
        "the wait is over: what is queued goes"
    );
    for d in batch.drain(..) {
        s.complete(100 + wait + 20, d.id, 10).unwrap();
    }
    // A full batch goes as soon as it is full.
    for i in 2..6 {
        s.submit(20_000, task(i, 0, &op, 64, 10, 20_000)).unwrap();
    }
    assert_eq!(s.next_batch(20_000, e, &mut batch), 4);
}

/// Per tenant: engine time served, with every task taking its predicted
/// cost and a batch's tasks served one after another in its slot.
fn shares(policy: &str, rule: Option<BatchRule>) -> Vec<f64> {
    // Tenant 0 submits 100 ns tasks, tenant 1 1,000 ns tasks; both keep 64
    // queued. Equal weights: each should get half the engine's time.
    let costs = [100, 1_000];
    let (mut s, e) = scheduler(policy, 1, 2, rule);
    let op = OpSpec::named("generic");
    let mut next_id = 0;
    let mut tenant_of = HashMap::new();
    for (t, &c) in costs.iter().enumerate() {
        for _ in 0..64 {
            next_id += 1;
            tenant_of.insert(next_id, t);
            s.submit(0, task(next_id, t, &op, 64, c, 0)).unwrap();
        }
    }
    let (mut now, mut busy) = (0, [0u64; 2]);
    let mut batch: Vec<Dispatch> = Vec::new();
    while now < 20_000_000 {
        batch.clear();
        assert!(
            s.next_batch(now, e, &mut batch) > 0,
            "both tenants stay backlogged"
        );
        for d in &batch {
            let t = tenant_of[&d.task.id.0];
            now += costs[t];
            if now > 1_000_000 {
                busy[t] += costs[t];
            }
            s.complete(now, d.id, costs[t]).unwrap();
            next_id += 1;
            tenant_of.insert(next_id, t);
            s.submit(now, task(next_id, t, &op, 64, costs[t], now)).unwrap();
        }
    }
    let total = (busy[0] + busy[1]) as f64;
    busy.iter().map(|&b| b as f64 / total).collect()
}

#[test]
fn a_tenant_is_charged_its_batches_as_the_sum_of_their_tasks() {
    for policy in ["sfq", "drr", "wlbvt", "bvt"] {
        for rule in [None, batch_rule(8, 1 << 20, 0), batch_rule(64, 1 << 20, 0)] {
            let got = shares(policy, rule);
            assert!(
                (got[0] - 0.5).abs() < 0.03,
                "{policy} with {rule:?}: the small-task tenant got {:.3} of the engine, want 0.5",
                got[0]
            );
        }
    }
}

#[derive(Debug, Clone)]
enum Step {
    Submit { tenant: usize, op: bool, bytes: u64 },
    Next,
    Complete(usize),
    Advance(Nanos),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..3usize, any::<bool>(), 1..3000u64).prop_map(|(tenant, op, bytes)| Step::Submit { tenant, op, bytes }),
        3 => Just(Step::Next),
        3 => (0..64usize).prop_map(Step::Complete),
        1 => (1..10_000u64).prop_map(Step::Advance),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Every accepted task is dispatched once and completed once, the
    /// engine never has more dispatches holding slots than it has slots,
    /// and each batch is one tenant's tasks within the rule.
    #[test]
    fn every_task_completes_once_with_batches(
        policy in prop::sample::select(vec!["fcfs", "sfq", "drr", "wlbvt", "wrr"]),
        slots in 1..3u32,
        tasks in 2..6u32,
        bytes in 1000..5000u64,
        wait in prop::sample::select(vec![0u64, 3_000]),
        steps in prop::collection::vec(step(), 1..200),
    ) {
        let rule = batch_rule(tasks, bytes, wait);
        let (mut s, e) = scheduler(policy, slots, 3, rule);
        let ops = [OpSpec::named("a"), OpSpec::named("b")];
        let (mut now, mut next_id) = (0, 0u64);
        let (mut accepted, mut dispatched, mut completed) = (HashSet::new(), HashSet::new(), HashSet::new());
        let mut in_service: Vec<Dispatch> = Vec::new();
        let drive = |s: &mut Scheduler, now: Nanos, in_service: &mut Vec<Dispatch>, dispatched: &mut HashSet<u64>| {
            let mut batch = Vec::new();
            while s.next_batch(now, e, &mut batch) > 0 {
                let first = &batch[0];
                let sum: u64 = batch.iter().map(|d| d.task.bytes).sum();
                prop_assert!(batch.len() as u32 <= tasks);
                prop_assert!(batch.len() == 1 || sum <= bytes, "a batch of {} bytes", sum);
                prop_assert!(batch.iter().all(|d| d.task.tenant == first.task.tenant));
                for d in batch.drain(..) {
                    prop_assert!(dispatched.insert(d.task.id.0), "task {} dispatched twice", d.task.id.0);
                    in_service.push(d);
                }
                prop_assert!(s.busy(e) <= slots);
            }
            Ok(())
        };
        for st in steps {
            match st {
                Step::Submit { tenant, op, bytes } => {
                    next_id += 1;
                    if s.submit(now, task(next_id, tenant, &ops[op as usize], bytes, bytes, now)).is_ok() {
                        accepted.insert(next_id);
                    }
                }
                Step::Next => drive(&mut s, now, &mut in_service, &mut dispatched)?,
                Step::Complete(i) if !in_service.is_empty() => {
                    let d = in_service.swap_remove(i % in_service.len());
                    let c = s.complete(now, d.id, 10).expect("in service");
                    prop_assert!(completed.insert(c.task.0));
                }
                Step::Complete(_) => {}
                Step::Advance(dt) => now += dt,
            }
        }
        // Drain: complete everything, letting every wait end.
        loop {
            drive(&mut s, now, &mut in_service, &mut dispatched)?;
            if in_service.is_empty() {
                match s.next_wakeup() {
                    Some(at) => now = now.max(at),
                    None => break,
                }
                continue;
            }
            for d in in_service.drain(..) {
                let c = s.complete(now, d.id, 10).expect("in service");
                prop_assert!(completed.insert(c.task.0));
            }
        }
        prop_assert_eq!(s.busy(e), 0);
        prop_assert_eq!(&completed, &accepted, "every accepted task completes once");
    }
}
