//! Live changes to a running scheduler (what an operator's `isola ctl`
//! and a dead tenant's clean-up do): a weight change moves the shares at
//! the next decisions, for every weight-sharing policy and for a static
//! partition; a refused change changes nothing; a withdrawn tenant's
//! queued work comes back exactly once and the others' does not move;
//! and, for any sequence of submissions, dispatches, completions, changes
//! and withdrawals, every task ends exactly once.

use isola_core::{
    AffineCost, EngineId, EngineKind, EngineSpec, OpSpec, Scheduler, SchedulerBuilder, Slo, SloChangeError,
    Task, TaskId, TenantId,
};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

fn scheduler(policy: &str, slots: u32, tenants: usize) -> Scheduler {
    let mut b = SchedulerBuilder::new();
    b.engine(EngineSpec::new(
        "acc",
        EngineKind::Accelerator,
        slots,
        Arc::new(AffineCost::new(0.0, 1.0).unwrap()),
    ));
    b.policy(policy, BTreeMap::new());
    for i in 0..tenants {
        b.tenant(
            format!("t{i}"),
            Slo {
                queue_cap: 100_000,
                ..Slo::default()
            },
        );
    }
    b.build().unwrap()
}

fn task(id: u64, tenant: u32, bytes: u64, arrival: u64) -> Task {
    Task {
        id: TaskId(id),
        tenant: TenantId(tenant),
        engine: EngineId(0),
        op: OpSpec::named("crc32c"),
        bytes,
        arrival,
        deadline: None,
        predicted_cost: None,
        planner: None,
        flow: 0,
    }
}

/// Runs the engine for `dispatches` dispatches of 1,000 ns each, all slots
/// busy, and counts them per tenant.
fn serve(s: &mut Scheduler, now: &mut u64, dispatches: usize) -> [usize; 2] {
    let mut served = [0; 2];
    let mut running = Vec::new();
    while served.iter().sum::<usize>() < dispatches {
        while let Some(d) = s.next(*now, EngineId(0)) {
            served[d.task.tenant.index()] += 1;
            running.push(d.id);
        }
        *now += 1_000;
        for id in running.drain(..) {
            s.complete(*now, id, 1_000).unwrap();
        }
    }
    served
}

/// Both tenants backlogged with equal 1,000-byte tasks.
fn backlog(s: &mut Scheduler, per_tenant: u64) {
    for i in 0..per_tenant {
        for t in 0..2 {
            s.submit(0, task(i * 2 + t as u64, t, 1_000, 0)).unwrap();
        }
    }
}

#[test]
fn a_weight_change_moves_the_shares_at_the_next_decisions() {
    for policy in ["sfq", "drr", "bvt", "slack", "mclock"] {
        let mut s = scheduler(policy, 1, 2);
        backlog(&mut s, 5_000);
        let mut now = 0;
        let before = serve(&mut s, &mut now, 1_000);
        assert!(
            before[0].abs_diff(before[1]) <= 10,
            "{policy}: equal weights share 1:1, got {before:?}"
        );
        let slo = Slo {
            weight: 3.0,
            queue_cap: 100_000,
            ..Slo::default()
        };
        s.set_slo(now, TenantId(0), slo, Vec::new()).unwrap();
        assert_eq!(s.tenants()[0].slo.weight, 3.0);
        let after = serve(&mut s, &mut now, 1_000);
        // 3:1 is 750:250, within a few dispatches.
        assert!(
            after[0].abs_diff(750) <= 15,
            "{policy}: weight 3:1 should give ~750:250, got {after:?}"
        );
    }
}

#[test]
fn a_static_partition_is_cut_again_by_the_new_weights() {
    let mut s = scheduler("static", 4, 2);
    backlog(&mut s, 5_000);
    let mut now = 0;
    assert_eq!(serve(&mut s, &mut now, 400), [200, 200]);
    s.set_slo(
        now,
        TenantId(1),
        Slo {
            weight: 3.0,
            queue_cap: 100_000,
            ..Slo::default()
        },
        Vec::new(),
    )
    .unwrap();
    // 4 slots by weight 1:3 is 1 and 3 slots.
    assert_eq!(serve(&mut s, &mut now, 400), [100, 300]);
}

#[test]
fn a_refused_change_changes_nothing() {
    let mut s = scheduler("sfq", 1, 2);
    let bad = Slo {
        weight: 0.0,
        ..Slo::default()
    };
    let err = s.set_slo(0, TenantId(0), bad, Vec::new()).unwrap_err();
    assert!(
        matches!(err, SloChangeError::InvalidSlo { field: "weight", .. }),
        "{err}"
    );
    assert_eq!(
        s.tenants()[0].slo,
        Slo {
            queue_cap: 100_000,
            ..Slo::default()
        }
    );
    assert!(matches!(
        s.set_slo(0, TenantId(9), Slo::default(), Vec::new()),
        Err(SloChangeError::UnknownTenant(TenantId(9)))
    ));
    // A static partition cannot give 3 tenants a slot each of 2.
    let mut s = scheduler("static", 2, 2);
    let heavy = Slo {
        weight: 1e6,
        ..Slo::default()
    };
    // Weights 1e6:1 still leave each tenant its one slot: accepted.
    s.set_slo(0, TenantId(0), heavy, Vec::new()).unwrap();
}

#[test]
fn a_lower_queue_cap_refuses_later_tasks_and_keeps_queued_ones() {
    let mut s = scheduler("sfq", 1, 2);
    for i in 0..10 {
        s.submit(0, task(i, 0, 100, 0)).unwrap();
    }
    s.set_slo(
        1,
        TenantId(0),
        Slo {
            queue_cap: 4,
            ..Slo::default()
        },
        Vec::new(),
    )
    .unwrap();
    assert_eq!(s.queued(EngineId(0), TenantId(0)), 10);
    assert!(s.submit(2, task(10, 0, 100, 2)).is_err(), "over the new cap");
    let mut now = 2;
    let mut seen = 0;
    while let Some(d) = s.next(now, EngineId(0)) {
        now += 100;
        s.complete(now, d.id, 100).unwrap();
        seen += 1;
    }
    assert_eq!(seen, 10, "every task queued before the change is served");
}

#[test]
fn withdrawing_some_tasks_keeps_the_rest_in_order() {
    let mut s = scheduler("sfq", 1, 2);
    for i in 0..10 {
        s.submit(0, task(i, 0, 100, 0)).unwrap();
    }
    // The head (task 0) and every other task go.
    let back: Vec<u64> = s
        .withdraw(0, TenantId(0), |id| id.0 % 2 == 0)
        .iter()
        .map(|t| t.id.0)
        .collect();
    assert_eq!(back, [0, 2, 4, 6, 8]);
    let mut now = 0;
    let mut order = Vec::new();
    while let Some(d) = s.next(now, EngineId(0)) {
        order.push(d.task.id.0);
        now += 100;
        s.complete(now, d.id, 100).unwrap();
    }
    assert_eq!(order, [1, 3, 5, 7, 9]);
    assert_eq!(s.held(TenantId(0)), 0);
}

#[test]
fn withdrawing_a_tenant_hands_back_its_queued_work_once() {
    let mut s = scheduler("sfq", 1, 2);
    backlog(&mut s, 50);
    let mut now = 0;
    let d = s.next(now, EngineId(0)).unwrap();
    let running_tenant = d.task.tenant;
    let back = s.withdraw(now, TenantId(0), |_| true);
    let expected = if running_tenant == TenantId(0) { 49 } else { 50 };
    assert_eq!(back.len(), expected);
    assert!(back.iter().all(|t| t.tenant == TenantId(0)));
    assert_eq!(s.queued(EngineId(0), TenantId(0)), 0);
    assert!(s.withdraw(now, TenantId(0), |_| true).is_empty(), "nothing twice");
    now += 1_000;
    s.complete(now, d.id, 1_000).unwrap();
    // Only tenant 1's work is left, all of it.
    let mut left = 0;
    while let Some(d) = s.next(now, EngineId(0)) {
        assert_eq!(d.task.tenant, TenantId(1));
        now += 1_000;
        s.complete(now, d.id, 1_000).unwrap();
        left += 1;
    }
    assert_eq!(left, 50 - usize::from(running_tenant == TenantId(1)));
    assert_eq!(s.held(TenantId(0)), 0);
    assert_eq!(s.held(TenantId(1)), 0);
}

#[derive(Debug, Clone)]
enum Step {
    Submit {
        tenant: u32,
        bytes: u64,
    },
    Serve,
    Complete,
    Weight {
        tenant: u32,
        weight: f64,
    },
    /// Withdraws the tenant's tasks whose id is odd, or all of them.
    Withdraw {
        tenant: u32,
        odd_only: bool,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..3u32, 1..5_000u64).prop_map(|(tenant, bytes)| Step::Submit { tenant, bytes }),
        3 => Just(Step::Serve),
        3 => Just(Step::Complete),
        1 => (0..3u32, 0.1..10.0f64).prop_map(|(tenant, weight)| Step::Weight { tenant, weight }),
        1 => (0..3u32, any::<bool>()).prop_map(|(tenant, odd_only)| Step::Withdraw { tenant, odd_only }),
    ]
}

proptest! {
    /// Whatever the order of changes, every task accepted ends exactly
    /// once: completed whole, or handed back by a withdrawal.
    #[test]
    fn every_task_ends_exactly_once(
        policy in prop::sample::select(vec!["sfq", "drr", "bvt", "wlbvt", "astraea", "mtda", "static", "fcfs"]),
        steps in prop::collection::vec(step(), 1..200),
    ) {
        let mut s = scheduler(policy, 3, 3);
        let mut now = 0;
        let mut next_id = 0;
        let mut accepted = std::collections::BTreeSet::new();
        let mut ended = BTreeMap::<u64, u32>::new();
        let mut running = Vec::new();
        let end = |id: u64, ended: &mut BTreeMap<u64, u32>| *ended.entry(id).or_default() += 1;
        for st in &steps {
            now += 100;
            match *st {
                Step::Submit { tenant, bytes } => {
                    if s.submit(now, task(next_id, tenant, bytes, now)).is_ok() {
                        accepted.insert(next_id);
                    }
                    next_id += 1;
                }
                Step::Serve => {
                    while let Some(d) = s.next(now, EngineId(0)) {
                        running.push(d.id);
                    }
                }
                Step::Complete => {
                    for id in running.drain(..) {
                        let c = s.complete(now, id, 500).unwrap();
                        if c.task_done {
                            end(c.task.0, &mut ended);
                        }
                    }
                }
                Step::Weight { tenant, weight } => {
                    let slo = Slo { weight, ..Slo::default() };
                    // A static partition may refuse; then nothing changed.
                    let _ = s.set_slo(now, TenantId(tenant), slo, Vec::new());
                }
                Step::Withdraw { tenant, odd_only } => {
                    for t in s.withdraw(now, TenantId(tenant), |id| !odd_only || id.0 % 2 == 1) {
                        prop_assert!(!odd_only || t.id.0 % 2 == 1);
                        end(t.id.0, &mut ended);
                    }
                }
            }
        }
        // Drain: everything left is served.
        for _ in 0..100_000 {
            now += 100;
            for id in running.drain(..) {
                let c = s.complete(now, id, 500).unwrap();
                if c.task_done {
                    end(c.task.0, &mut ended);
                }
            }
            while let Some(d) = s.next(now, EngineId(0)) {
                running.push(d.id);
            }
            if running.is_empty() && s.next_wakeup().is_none() {
                break;
            }
        }
        prop_assert!(running.is_empty(), "{policy}: the engine stalled with work in service");
        for id in &accepted {
            prop_assert_eq!(ended.get(id).copied(), Some(1), "{}: task {} ended {:?} times", policy, id, ended.get(id));
        }
        prop_assert_eq!(ended.len(), accepted.len());
        for t in 0..3 {
            prop_assert_eq!(s.held(TenantId(t)), 0);
        }
    }
}
