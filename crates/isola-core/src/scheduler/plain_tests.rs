//! The plain path ([`EngineState::is_plain`]) against the general one
//! (issue 34): two schedulers built alike, one of them held to the general
//! path, driven with the same random operations (submissions, dispatches,
//! completions in any order, the clock, live SLO changes that keep the
//! engine plain or take it off the plain path), give the same answer to
//! every call, under every built-in policy.

use super::engine::EngineState;
use super::Scheduler;
use crate::cost::AffineCost;
use crate::engine::{EngineId, EngineKind, EngineSpec};
use crate::task::{OpSpec, Task, TaskId};
use crate::tenant::{RateSpec, Slo, TenantId};
use crate::units::Rate;
use crate::SchedulerBuilder;
use proptest::prelude::*;
use std::sync::Arc;

/// One call on both schedulers.
#[derive(Debug, Clone)]
enum Op {
    /// A task of `bytes` for tenant `tenant`, with a predicted cost or
    /// the engine's model's, `at` ns after the last call.
    Submit {
        tenant: usize,
        bytes: u64,
        cost: Option<u64>,
        at: u64,
    },
    /// `next` on the engine.
    Next,
    /// Completes the dispatch in service at this index (of those in
    /// service, modulo their number) after `measured` ns.
    Complete { which: usize, measured: u64 },
    /// Tenant `tenant`'s SLO changed to weight `weight`, with a limit of
    /// `limit` ops/s if any (which takes the engine off the plain path).
    SetSlo {
        tenant: usize,
        weight: f64,
        limit: Option<f64>,
    },
    /// Every queued task of tenant `tenant` whose id is odd withdrawn.
    Withdraw { tenant: usize },
}

fn op(tenants: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..tenants, 1u64..20_000, proptest::option::of(1u64..5_000), 0u64..3_000)
            .prop_map(|(tenant, bytes, cost, at)| Op::Submit { tenant, bytes, cost, at }),
        5 => Just(Op::Next),
        5 => (any::<usize>(), 0u64..8_000).prop_map(|(which, measured)| Op::Complete { which, measured }),
        1 => (0..tenants, 0.25f64..8.0, proptest::option::weighted(0.2, 1e5f64..1e6))
            .prop_map(|(tenant, weight, limit)| Op::SetSlo { tenant, weight, limit }),
        1 => (0..tenants).prop_map(|tenant| Op::Withdraw { tenant }),
    ]
}

/// A tenant with `weight`, a queue cap of `cap`, a memory quota and a
/// service budget if any (neither takes an engine off the plain path).
fn slo(weight: f64, cap: usize, quota: Option<u64>, budget: Option<u64>) -> Slo {
    Slo {
        queue_cap: cap,
        memory_quota: quota,
        service_budget: budget,
        ..Slo::weighted(weight)
    }
}

/// A scheduler of one engine with `slots` slots under `policy`.
fn build(policy: &str, slots: u32, slos: &[Slo]) -> Scheduler {
    let mut b = SchedulerBuilder::new();
    let cost = Arc::new(AffineCost::new(200.0, 0.5).expect("a valid model"));
    b.engine(EngineSpec::new("e", EngineKind::Accelerator, slots, cost));
    for (i, s) in slos.iter().enumerate() {
        b.tenant(format!("t{i}"), s.clone());
    }
    b.policy(policy, Default::default());
    b.build().expect("builds")
}

fn engine(s: &mut Scheduler) -> &mut EngineState {
    &mut s.engines[0]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_plain_path_decides_as_the_general_one(
        tenants in proptest::collection::vec(
            (0.25f64..8.0, 1usize..8, proptest::option::of(1u64..60_000), proptest::option::of(100u64..4_000)),
            1..5,
        ),
        slots in 1u32..4,
        ops in (1usize..5).prop_flat_map(|n| proptest::collection::vec(op(n), 0..200)),
    ) {
        let slos: Vec<Slo> = tenants.iter().map(|&(w, cap, quota, budget)| slo(w, cap, quota, budget)).collect();
        for info in crate::policy::POLICIES {
            let mut plain = build(info.name, slots, &slos);
            let mut general = build(info.name, slots, &slos);
            prop_assert!(engine(&mut plain).plain, "{}: a plain engine takes the plain path", info.name);
            // Held to the general path, in `set_slo`'s own re-admission too.
            engine(&mut general).force_general = true;
            engine(&mut general).plain = false;
            let (mut now, mut id, mut serving) = (0u64, 0u64, Vec::new());
            for o in &ops {
                match *o {
                    Op::Submit { tenant, bytes, cost, at } => {
                        now += at;
                        id += 1;
                        let task = Task {
                            id: TaskId(id),
                            tenant: TenantId((tenant % slos.len()) as u32),
                            engine: EngineId(0),
                            op: OpSpec::named("generic"),
                            bytes,
                            arrival: now,
                            deadline: None,
                            predicted_cost: cost,
                            planner: None,
                            flow: 0,
                        };
                        let (a, b) = (plain.submit(now, task.clone()), general.submit(now, task));
                        prop_assert_eq!(a, b, "{}: submit", info.name);
                    }
                    Op::Next => {
                        let (a, b) = (plain.next(now, EngineId(0)), general.next(now, EngineId(0)));
                        prop_assert_eq!(format!("{a:?}"), format!("{b:?}"), "{}: next", info.name);
                        if let Some(d) = a {
                            serving.push(d.id);
                        }
                    }
                    Op::Complete { which, measured } => {
                        if serving.is_empty() {
                            continue;
                        }
                        let d = serving.swap_remove(which % serving.len());
                        now += measured / 2;
                        let (a, b) = (plain.complete(now, d, measured), general.complete(now, d, measured));
                        prop_assert_eq!(a, b, "{}: complete", info.name);
                    }
                    Op::SetSlo { tenant, weight, limit } => {
                        let t = tenant % slos.len();
                        let mut changed = slos[t].clone();
                        changed.weight = weight;
                        changed.limit = limit.map(|r| RateSpec { rate: Rate::ops_per_sec(r).expect("a rate"), burst: 1.0 });
                        let tenant = TenantId(t as u32);
                        let (a, b) = (
                            plain.set_slo(now, tenant, changed.clone(), Vec::new()),
                            general.set_slo(now, tenant, changed, Vec::new()),
                        );
                        prop_assert_eq!(&a, &b, "{}: set_slo", info.name);
                        let e = engine(&mut plain);
                        prop_assert_eq!(e.plain, e.is_plain(), "the path is chosen again");
                        prop_assert!(!engine(&mut general).plain, "the general one stays general");
                    }
                    Op::Withdraw { tenant } => {
                        let tenant = TenantId((tenant % slos.len()) as u32);
                        let (a, b) = (
                            plain.withdraw(now, tenant, |t| t.0 % 2 == 1),
                            general.withdraw(now, tenant, |t| t.0 % 2 == 1),
                        );
                        prop_assert_eq!(a, b, "{}: withdraw", info.name);
                    }
                }
                prop_assert_eq!(plain.next_wakeup(), general.next_wakeup(), "{}: next_wakeup", info.name);
            }
            for t in 0..slos.len() {
                let t = TenantId(t as u32);
                prop_assert_eq!(plain.stats(EngineId(0), t), general.stats(EngineId(0), t), "{}: stats", info.name);
                prop_assert_eq!(plain.held(t), general.held(t));
            }
            prop_assert_eq!(plain.queued_cost(EngineId(0)), general.queued_cost(EngineId(0)));
        }
    }
}
