//! Per-resource SLOs and policies (OSMOSIS Table 2: a compute priority on
//! the processing units and an IO priority on DMA and egress, each resource
//! with its own policy; dmClock's per-server reservation, weight and
//! limit): a setting for an engine beats one for its kind, which beats the
//! tenant's; each engine runs the policy named for it, else for its kind,
//! else the default.

use isola_core::{
    AffineCost, BuildError, EngineId, EngineKind, EngineSelector, EngineSpec, OpSpec, Rate, RateSpec,
    Scheduler, SchedulerBuilder, Slo, SloOverride, Task, TaskId, TenantId,
};
use std::collections::BTreeMap;
use std::sync::Arc;

fn engine(name: &str, kind: EngineKind) -> EngineSpec {
    EngineSpec::new(name, kind, 1, Arc::new(AffineCost::constant(1_000)))
}

/// A 100-byte task of `tenant` on `engine`.
fn task(id: u64, tenant: u32, engine: u32) -> Task {
    Task {
        id: TaskId(id),
        tenant: TenantId(tenant),
        engine: EngineId(engine),
        op: OpSpec::named("generic"),
        bytes: 100,
        arrival: 0,
        deadline: None,
        predicted_cost: None,
        planner: None,
        flow: 0,
    }
}

fn submit(s: &mut Scheduler, id: u64, tenant: u32, engine: u32) {
    s.submit(0, task(id, tenant, engine)).unwrap();
}

/// Serves `engine` one task at a time for `n` dispatches with both tenants
/// backlogged; returns how many each got.
fn served(s: &mut Scheduler, engine: u32, n: usize) -> [usize; 2] {
    let mut got = [0; 2];
    let mut now = 0;
    let mut id = 1_000_000 * (engine as u64 + 1);
    for t in 0..2 {
        for _ in 0..4 {
            id += 1;
            submit(s, id, t, engine);
        }
    }
    for _ in 0..n {
        let d = s.next(now, EngineId(engine)).expect("both tenants backlogged");
        let t = d.task.tenant.index();
        got[t] += 1;
        now += 1_000;
        s.complete(now, d.id, 1_000).unwrap();
        id += 1;
        submit(s, id, t as u32, engine);
    }
    got
}

/// OSMOSIS' configuration: compute priority 2 on the PUs (WLBVT), IO
/// priority 1 on DMA (WRR), for a tenant whose tenant-wide weight is 1,
/// beside a tenant of weight 1 everywhere.
#[test]
fn weights_and_policies_per_engine_kind_and_name() {
    let mut b = SchedulerBuilder::new();
    let pu = b.engine(engine("pu", EngineKind::ProcessingUnits));
    let dma = b.engine(engine("dma", EngineKind::Dma));
    let dma2 = b.engine(engine("dma2", EngineKind::Dma));
    let a = b.tenant("a", Slo::weighted(1.0));
    b.tenant("b", Slo::weighted(1.0));
    b.tenant_on(
        a,
        EngineSelector::Kind(EngineKind::ProcessingUnits),
        SloOverride {
            weight: Some(2.0),
            ..Default::default()
        },
    );
    // The engine named beats its kind: on dma2, a gets 3.
    b.tenant_on(
        a,
        EngineSelector::Named("dma2".into()),
        SloOverride {
            weight: Some(3.0),
            ..Default::default()
        },
    );
    b.policy("fcfs", BTreeMap::new());
    b.engine_policy(
        EngineSelector::Kind(EngineKind::ProcessingUnits),
        "wlbvt",
        BTreeMap::new(),
    );
    b.engine_policy(EngineSelector::Kind(EngineKind::Dma), "wrr", BTreeMap::new());
    let mut s = b.build().unwrap();
    assert_eq!(
        served(&mut s, pu.0, 300),
        [200, 100],
        "compute priority 2 under wlbvt"
    );
    assert_eq!(served(&mut s, dma.0, 300), [150, 150], "IO priority 1 under wrr");
    assert_eq!(
        served(&mut s, dma2.0, 400),
        [300, 100],
        "weight 3 on the engine named"
    );
}

/// The default policy is fcfs; on the engine named, rr alternates where
/// fcfs serves in arrival order.
#[test]
fn the_policy_named_for_an_engine_beats_its_kinds() {
    let mut b = SchedulerBuilder::new();
    b.engine(engine("a0", EngineKind::Accelerator));
    b.engine(engine("a1", EngineKind::Accelerator));
    b.tenant("x", Slo::default());
    b.tenant("y", Slo::default());
    b.engine_policy(
        EngineSelector::Kind(EngineKind::Accelerator),
        "fcfs",
        BTreeMap::new(),
    );
    b.engine_policy(EngineSelector::Named("a1".into()), "rr", BTreeMap::new());
    let mut s = b.build().unwrap();
    let order = |s: &mut Scheduler, e: u32| {
        for (id, t) in [(1, 0), (2, 0), (3, 0), (4, 1)] {
            submit(s, id + 10 * e as u64, t, e);
        }
        (0..4)
            .map(|_| {
                let d = s.next(0, EngineId(e)).unwrap();
                s.complete(0, d.id, 1).unwrap();
                d.task.tenant.0
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(order(&mut s, 0), [0, 0, 0, 1], "fcfs on a0");
    assert_eq!(order(&mut s, 1), [0, 1, 0, 0], "rr on a1");
}

#[test]
fn per_engine_settings_are_checked_where_they_apply() {
    // A policy for engines that do not exist.
    let mut b = SchedulerBuilder::new();
    b.engine(engine("pu", EngineKind::ProcessingUnits));
    b.tenant("a", Slo::default());
    b.engine_policy(EngineSelector::Kind(EngineKind::Egress), "wrr", BTreeMap::new());
    assert!(matches!(b.build(), Err(BuildError::NoSuchEngine(_))));
    // A reservation over the limit only on one engine: refused, naming it.
    let ops = |r| RateSpec {
        rate: Rate::ops_per_sec(r).unwrap(),
        burst: 0.0,
    };
    let mut b = SchedulerBuilder::new();
    b.engine(engine("pu", EngineKind::ProcessingUnits));
    b.engine(engine("dma", EngineKind::Dma));
    let a = b.tenant(
        "a",
        Slo {
            limit: Some(ops(10.0)),
            ..Slo::default()
        },
    );
    b.tenant_on(
        a,
        EngineSelector::Named("dma".into()),
        SloOverride {
            reservation: Some(ops(20.0)),
            ..Default::default()
        },
    );
    match b.build() {
        Err(BuildError::InvalidSlo { field, reason, .. }) => {
            assert_eq!(field, "reservation");
            assert!(reason.contains("`dma`"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// A per-engine service budget flags over-budget work on that engine only.
#[test]
fn a_budget_applies_on_the_engines_it_is_set_for() {
    let mut b = SchedulerBuilder::new();
    b.engine(engine("pu", EngineKind::ProcessingUnits));
    b.engine(engine("dma", EngineKind::Dma));
    let a = b.tenant("a", Slo::default());
    b.tenant_on(
        a,
        EngineSelector::Kind(EngineKind::ProcessingUnits),
        SloOverride {
            service_budget: Some(500),
            ..Default::default()
        },
    );
    let mut s = b.build().unwrap();
    for e in 0..2 {
        submit(&mut s, e as u64, 0, e);
        let d = s.next(0, EngineId(e)).unwrap();
        let done = s.complete(1_000, d.id, 1_000).unwrap();
        assert_eq!(done.over_budget, e == 0, "engine {e}");
    }
}

/// The memory quota bounds a tenant's bytes queued and in service over all
/// engines; a task is released when its last dispatch completes, and a
/// refusal says why and is counted on the channel.
#[test]
fn the_memory_quota_spans_engines_and_frees_on_completion() {
    let mut b = SchedulerBuilder::new();
    b.engine(engine("e0", EngineKind::Accelerator));
    b.engine(engine("e1", EngineKind::Accelerator));
    b.tenant(
        "a",
        Slo {
            memory_quota: Some(250),
            ..Slo::default()
        },
    );
    let mut s = b.build().unwrap();
    submit(&mut s, 1, 0, 0);
    submit(&mut s, 2, 0, 1);
    assert_eq!(s.held(TenantId(0)), 200);
    let refused = s.submit(0, task(3, 0, 0)).unwrap_err();
    assert_eq!(
        refused.reason,
        isola_core::RejectReason::OverQuota {
            tenant: TenantId(0),
            quota: 250,
            held: 200,
            bytes: 100
        }
    );
    assert_eq!(s.stats(EngineId(0), TenantId(0)).unwrap().over_quota, 1);
    let d = s.next(0, EngineId(1)).unwrap();
    s.complete(10, d.id, 10).unwrap();
    assert_eq!(s.held(TenantId(0)), 100);
    s.submit(10, task(3, 0, 0)).unwrap();
    // Handed back at close: nothing stays held.
    s.close();
    assert_eq!(s.held(TenantId(0)), 0);
}
