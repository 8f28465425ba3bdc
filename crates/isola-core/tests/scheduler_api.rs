//! The scheduler's error paths: every bad call gets a typed answer.

use isola_core::{
    AffineCost, BuildError, EngineId, EngineKind, EngineSpec, OpSpec, PerOpCost, RejectReason,
    SchedulerBuilder, SchedulerError, Slo, Task, TaskId, TenantId,
};
use std::sync::Arc;

fn task(id: u64, tenant: u32, engine: u32, op: &str) -> Task {
    Task {
        id: TaskId(id),
        tenant: TenantId(tenant),
        engine: EngineId(engine),
        op: OpSpec::named(op),
        bytes: 100,
        arrival: 0,
        deadline: None,
        predicted_cost: None,
        planner: None,
        flow: 0,
    }
}

fn scheduler() -> isola_core::Scheduler {
    let mut b = SchedulerBuilder::new();
    let model = PerOpCost::new().with_op("crc", AffineCost::new(10.0, 1.0).unwrap());
    b.engine(EngineSpec::new("e", EngineKind::Accelerator, 1, Arc::new(model)));
    b.tenant(
        "a",
        Slo {
            queue_cap: 2,
            service_budget: Some(500),
            ..Slo::default()
        },
    );
    b.build().unwrap()
}

#[test]
fn bad_submissions_come_back_with_a_reason_and_the_task() {
    let mut s = scheduler();
    let r = s.submit(0, task(1, 7, 0, "crc")).unwrap_err();
    assert_eq!(r.reason, RejectReason::UnknownTenant(TenantId(7)));
    assert_eq!(r.task.id, TaskId(1));
    let r = s.submit(0, task(2, 0, 3, "crc")).unwrap_err();
    assert_eq!(r.reason, RejectReason::UnknownEngine(EngineId(3)));
    let r = s.submit(0, task(3, 0, 0, "sha")).unwrap_err();
    assert!(matches!(r.reason, RejectReason::NoCostModel { ref op, .. } if op == "sha"));
    s.submit(0, task(4, 0, 0, "crc")).unwrap();
    s.submit(0, task(5, 0, 0, "crc")).unwrap();
    let r = s.submit(0, task(6, 0, 0, "crc")).unwrap_err();
    assert!(matches!(r.reason, RejectReason::ChannelFull { cap: 2, .. }));
    assert_eq!(s.stats(EngineId(0), TenantId(0)).unwrap().rejected, 1);
}

#[test]
fn cost_is_predicted_completion_is_once_and_budget_is_checked() {
    let mut s = scheduler();
    s.submit(0, task(1, 0, 0, "crc")).unwrap();
    let d = s.next(0, EngineId(0)).unwrap();
    assert_eq!(d.task.predicted_cost, 110);
    assert!(s.next(0, EngineId(0)).is_none(), "one slot only");
    let c = s.complete(900, d.id, 900).unwrap();
    assert!(c.over_budget);
    assert_eq!((c.arrival, c.dispatched, c.completed), (0, 0, 900));
    assert_eq!(
        s.complete(901, d.id, 1),
        Err(SchedulerError::UnknownDispatch(d.id))
    );
    assert_eq!(s.stats(EngineId(0), TenantId(0)).unwrap().over_budget, 1);
}

#[test]
fn close_hands_back_queued_work_and_refuses_more() {
    let mut s = scheduler();
    s.submit(0, task(1, 0, 0, "crc")).unwrap();
    s.submit(0, task(2, 0, 0, "crc")).unwrap();
    let d = s.next(0, EngineId(0)).unwrap();
    let left = s.close();
    assert_eq!(left.iter().map(|t| t.id).collect::<Vec<_>>(), vec![TaskId(2)]);
    assert!(s.next(1, EngineId(0)).is_none());
    assert_eq!(
        s.submit(1, task(3, 0, 0, "crc")).unwrap_err().reason,
        RejectReason::Closed
    );
    // The dispatch in service still completes.
    assert!(s.complete(5, d.id, 5).is_ok());
}

#[test]
fn builder_errors_name_what_is_wrong() {
    let cost = Arc::new(AffineCost::constant(1));
    let mut b = SchedulerBuilder::new();
    b.engine(EngineSpec::new("e", EngineKind::Dma, 0, cost.clone()));
    b.tenant("a", Slo::default());
    assert_eq!(b.build().unwrap_err(), BuildError::NoSlots("e".into()));

    let mut b = SchedulerBuilder::new();
    b.engine(EngineSpec::new("e", EngineKind::Dma, 1, cost.clone()));
    b.tenant("a", Slo::weighted(-1.0));
    assert!(matches!(
        b.build().unwrap_err(),
        BuildError::InvalidSlo { field: "weight", .. }
    ));

    let mut b = SchedulerBuilder::new();
    b.engine(EngineSpec::new("e", EngineKind::Dma, 1, cost.clone()));
    b.tenant("a", Slo::default());
    b.tenant("a", Slo::default());
    assert_eq!(b.build().unwrap_err(), BuildError::DuplicateTenant("a".into()));

    let mut b = SchedulerBuilder::new();
    b.engine(EngineSpec::new("e", EngineKind::Dma, 1, cost));
    b.tenant("a", Slo::default());
    b.policy("lottery", Default::default());
    let err = b.build().unwrap_err();
    assert!(err.to_string().contains("unknown policy `lottery`"), "{err}");
    assert!(matches!(SchedulerBuilder::new().build(), Err(BuildError::Empty)));
}

fn fragmenting(policy: &str) -> isola_core::Scheduler {
    let mut b = SchedulerBuilder::new();
    let link = AffineCost::new(0.0, 1.0).unwrap(); // 1 ns per byte
    b.engine(EngineSpec::new("dma", EngineKind::Dma, 1, Arc::new(link)).with_split(Some(512)));
    b.tenant("congestor", Slo::default());
    b.tenant("victim", Slo::default());
    b.policy(policy, Default::default());
    b.build().unwrap()
}

#[test]
fn fragments_tile_the_task_and_finish_it_once() {
    let mut s = fragmenting("fcfs");
    let mut big = task(1, 0, 0, "write");
    big.bytes = 4096 + 100;
    s.submit(0, big).unwrap();
    let mut now = 0;
    let mut offsets = Vec::new();
    let mut done = Vec::new();
    // The work still waiting before each dispatch, and each one's cost.
    let mut waiting = Vec::new();
    let mut costs = Vec::new();
    loop {
        waiting.push(s.queued_cost(EngineId(0))[0]);
        let Some(d) = s.next(now, EngineId(0)) else {
            break;
        };
        let f = d.subtask.expect("fragmented");
        assert_eq!((f.count, f.bytes.min(512)), (9, f.bytes));
        assert_eq!(d.predicted, f.bytes, "fragment cost from the model");
        costs.push(d.predicted);
        offsets.push(f.offset);
        now += d.predicted;
        done.push(s.complete(now, d.id, d.predicted).unwrap().task_done);
    }
    assert_eq!(offsets, (0..9).map(|i| i * 512).collect::<Vec<_>>());
    let still_to_go: Vec<u64> = (0..=costs.len()).map(|i| costs[i..].iter().sum()).collect();
    assert_eq!(waiting, still_to_go);
    assert_eq!(done.iter().filter(|&&d| d).count(), 1);
    assert!(done[8]);
    assert_eq!(s.stats(EngineId(0), TenantId(0)).unwrap().tasks_completed, 1);
}

#[test]
fn a_small_task_overtakes_a_fragmented_large_one() {
    // With 512 B fragments under round robin, a 64 B victim waits for at most
    // one fragment of the 4 KiB congestor, not the whole transfer.
    let mut s = fragmenting("rr");
    let mut big = task(1, 0, 0, "write");
    big.bytes = 4096;
    s.submit(0, big).unwrap();
    let first = s.next(0, EngineId(0)).unwrap();
    let mut small = task(2, 1, 0, "write");
    small.bytes = 64;
    s.submit(1, small).unwrap();
    s.complete(512, first.id, 512).unwrap();
    let d = s.next(512, EngineId(0)).unwrap();
    assert_eq!(d.task.id, TaskId(2));
}

#[test]
fn close_hands_back_a_partly_sent_task_once() {
    let mut s = fragmenting("fcfs");
    let mut big = task(1, 0, 0, "write");
    big.bytes = 2048;
    s.submit(0, big).unwrap();
    let d = s.next(0, EngineId(0)).unwrap();
    let left = s.close();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, TaskId(1));
    // The fragment in service completes, but does not finish the task again.
    assert!(!s.complete(512, d.id, 512).unwrap().task_done);
}

/// A reservation cannot make a tenant take a slot its policy would not give
/// it: under a static partition, another tenant's owned slot stays its own.
#[test]
fn reservation_phase_respects_static_partition() {
    use isola_core::{Rate, RateSpec};
    let mut b = SchedulerBuilder::new();
    b.engine(EngineSpec::new(
        "e",
        EngineKind::ProcessingUnits,
        2,
        Arc::new(AffineCost::constant(1000)),
    ));
    let reserved = Slo {
        reservation: Some(RateSpec {
            rate: Rate::ops_per_sec(1e9).unwrap(),
            burst: 0.0,
        }),
        ..Slo::default()
    };
    b.tenant("a", reserved);
    b.tenant("b", Slo::default());
    b.policy("static", Default::default());
    let mut s = b.build().unwrap();
    for i in 0..4 {
        s.submit(0, task(i, 0, 0, "x")).unwrap();
    }
    assert!(s.next(0, EngineId(0)).is_some());
    assert!(s.next(0, EngineId(0)).is_none(), "tenant a owns one slot");
    s.submit(1, task(10, 1, 0, "x")).unwrap();
    assert_eq!(s.next(1, EngineId(0)).unwrap().task.tenant, TenantId(1));
}

/// An ops/s limit counts tasks, not the fragments an engine cuts them into:
/// a 4 KiB task in 256 B fragments goes out whole under a limit of one task
/// per millisecond, and the next task waits for the limit.
#[test]
fn an_ops_limit_charges_one_operation_per_fragmented_task() {
    let mut b = SchedulerBuilder::new();
    let e = b.engine(
        EngineSpec::new(
            "dma",
            EngineKind::Dma,
            1,
            Arc::new(AffineCost::new(0.0, 1.0).unwrap()),
        )
        .with_split(Some(256)),
    );
    let t = b.tenant(
        "a",
        Slo {
            limit: Some(isola_core::RateSpec {
                rate: isola_core::Rate::ops_per_sec(1_000.0).unwrap(),
                burst: 0.0,
            }),
            ..Slo::default()
        },
    );
    let mut s = b.build().unwrap();
    for id in 0..2 {
        s.submit(
            0,
            Task {
                bytes: 4096,
                ..task(id, t.0, e.0, "dma")
            },
        )
        .unwrap();
    }
    let mut now = 0;
    let mut fragments = 0;
    while let Some(d) = s.next(now, e) {
        assert_eq!(
            d.task.id,
            TaskId(0),
            "the second task went at {now} ns, inside the limit"
        );
        now += 10;
        s.complete(now, d.id, 10).unwrap();
        fragments += 1;
    }
    assert_eq!(fragments, 16);
    assert_eq!(s.next_wakeup(), Some(1_000_000));
    assert_eq!(s.next(1_000_000, e).map(|d| d.task.id), Some(TaskId(1)));
}
