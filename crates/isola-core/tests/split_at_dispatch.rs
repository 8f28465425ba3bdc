//! The split decision belongs to the moment of dispatch: under
//! `SplitWhen::Contended`, a task that became its channel's head while its
//! tenant was alone is split once a second tenant has arrived, so a policy
//! that prefers the new tenant can serve it after one subtask, not after
//! the whole task.

use isola_core::{
    AffineCost, EngineId, EngineKind, EngineSpec, OpSpec, Scheduler, SchedulerBuilder, Slo, SplitRule,
    SplitWhen, Task, TaskId, TenantClass, TenantId,
};
use std::sync::Arc;

const SUBTASK: u64 = 1_000;

fn scheduler(when: SplitWhen) -> Scheduler {
    scheduler_with(when, TenantClass::BestEffort)
}

/// The big tenant, then the small one of class `small`.
fn scheduler_with(when: SplitWhen, small: TenantClass) -> Scheduler {
    let mut b = SchedulerBuilder::new();
    // 1 ns per byte: a 4,000-byte task takes 4 us whole.
    let engine = EngineSpec::new(
        "ec",
        EngineKind::Accelerator,
        1,
        Arc::new(AffineCost::new(0.0, 1.0).unwrap()),
    )
    .with_split_rule(Some(SplitRule {
        bytes: SUBTASK,
        when,
        time: None,
    }));
    b.engine(engine);
    // FCFS serves the big tenant's older task first: what matters is
    // whether it goes whole.
    b.policy("fcfs", Default::default());
    b.tenant("big", Slo::default());
    b.tenant(
        "small",
        Slo {
            weight: 4.0,
            class: small,
            ..Slo::default()
        },
    );
    b.build().unwrap()
}

fn task(id: u64, tenant: u32, bytes: u64, arrival: u64) -> Task {
    Task {
        id: TaskId(id),
        tenant: TenantId(tenant),
        engine: EngineId(0),
        op: OpSpec::named("ec-encode"),
        bytes,
        arrival,
        deadline: None,
        predicted_cost: None,
        planner: None,
        flow: 0,
    }
}

/// The big tenant queues three 4,000-byte tasks alone and the first goes
/// whole; the small one arrives while it runs. Returns what the engine
/// serves next: (tenant, subtask index and count) for the next two
/// dispatches (under FCFS, the big tenant's older task).
fn after_the_second_tenant_arrives(when: SplitWhen) -> Vec<(u32, Option<(u32, u32)>)> {
    let mut s = scheduler(when);
    for id in 0..3 {
        s.submit(0, task(id, 0, 4 * SUBTASK, 0)).unwrap();
    }
    let first = s.next(0, EngineId(0)).unwrap();
    assert!(first.subtask.is_none(), "a tenant alone runs whole");
    s.submit(10, task(10, 1, 100, 10)).unwrap();
    s.complete(4_000, first.id, 4_000).unwrap();
    let mut served = Vec::new();
    let mut now = 4_000;
    for _ in 0..2 {
        let d = s.next(now, EngineId(0)).unwrap();
        served.push((d.task.tenant.0, d.subtask.map(|st| (st.index, st.count))));
        now += d.predicted;
        s.complete(now, d.id, d.predicted).unwrap();
    }
    served
}

#[test]
fn a_head_planned_while_alone_is_split_when_dispatched_under_contention() {
    let served = after_the_second_tenant_arrives(SplitWhen::Contended { window: 0 });
    assert_eq!(
        served,
        vec![(0, Some((0, 4))), (0, Some((1, 4)))],
        "the big tenant's queued task is split at dispatch"
    );
}

/// Under `ForLatency`, a task is split only for a latency-sensitive
/// tenant's sake: the big tenant's task is split while the small
/// latency-sensitive one is active, the small one's large task is not
/// split for the big one, which does not care about latency.
#[test]
fn for_latency_splits_only_for_latency_sensitive_tenants() {
    let when = SplitWhen::ForLatency { window: 0 };
    let mut s = scheduler_with(when, TenantClass::LatencySensitive);
    s.submit(0, task(1, 0, 4 * SUBTASK, 0)).unwrap();
    s.submit(0, task(2, 1, 4 * SUBTASK, 0)).unwrap();
    let mut seen = Vec::new();
    let mut now = 0;
    while let Some(d) = s.next(now, EngineId(0)) {
        seen.push((d.task.tenant.0, d.subtask.map(|st| st.count)));
        now += d.predicted;
        s.complete(now, d.id, d.predicted).unwrap();
    }
    assert!(
        seen.contains(&(1, None)),
        "the latency-sensitive task runs whole: {seen:?}"
    );
    assert!(
        seen.contains(&(0, Some(4))),
        "the other is split while it is there: {seen:?}"
    );
    // With no latency-sensitive tenant, nobody is split.
    let mut s = scheduler_with(when, TenantClass::BandwidthSensitive);
    s.submit(0, task(1, 0, 4 * SUBTASK, 0)).unwrap();
    s.submit(0, task(2, 1, 4 * SUBTASK, 0)).unwrap();
    while let Some(d) = s.next(now, EngineId(0)) {
        assert!(d.subtask.is_none(), "{:?}", d.subtask);
        now += d.predicted;
        s.complete(now, d.id, d.predicted).unwrap();
    }
}
