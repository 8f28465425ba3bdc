//! Differential replay, for the policies rewritten for speed in issue 17
//! (MTDA here, slack stealing beside it): random scheduler histories driven
//! through a policy and through its reference implementation side by side,
//! asserting the same dispatches in the same order.
//!
//! A history is a set of tenants (1 to a few hundred, random weights,
//! classes, latency objectives and rate limits), an engine (slots, whole
//! tasks or fragments) and a sequence of submissions (one tenant or a run
//! of them, with or without a deadline), decisions, completions (measured
//! shorter or longer than predicted), clock steps, weight changes and
//! withdrawals.

use crate::engine::{EngineId, EngineKind, EngineSpec};
use crate::policy::PolicyInfo;
use crate::scheduler::{DispatchId, Scheduler, SchedulerBuilder};
use crate::task::{OpSpec, Task, TaskId};
use crate::tenant::{LatencyObjective, RateSpec, Slo, TenantClass, TenantId};
use crate::units::Rate;
use crate::AffineCost;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Tenants and engine of a history.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    slos: Vec<Slo>,
    slots: u32,
    split: Option<u64>,
}

/// One step of a history.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// Tasks of `bytes` (1 ns of predicted cost per byte) for tenants
    /// `first .. first + count` (mod the tenant count), due `deadline` ns
    /// after now if given.
    Submit {
        first: usize,
        count: usize,
        bytes: u64,
        deadline: Option<u64>,
    },
    /// A decision for a free slot (none if the engine is full).
    Next,
    /// One dispatch in service completes, measured `stretch / 4` of its
    /// prediction.
    Complete { which: usize, stretch: u8 },
    /// The clock moves on.
    Wait(u64),
    /// A tenant's weight changes (the policy is rebuilt).
    Reweight { tenant: usize, weight: f64 },
    /// A tenant's queued tasks with even ids are withdrawn.
    Withdraw { tenant: usize },
}

const WEIGHTS: [f64; 7] = [0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 7.0];

fn slo() -> impl Strategy<Value = Slo> {
    let class = prop_oneof![
        Just(TenantClass::LatencySensitive),
        Just(TenantClass::BandwidthSensitive),
        Just(TenantClass::BestEffort),
    ];
    let latency = prop_oneof![
        2 => Just(None),
        1 => (100u64..20_000).prop_map(|ns| Some(LatencyObjective::Absolute(ns))),
        1 => (1.0f64..6.0).prop_map(|k| Some(LatencyObjective::ServiceMultiple(k))),
    ];
    let limit = prop_oneof![
        6 => Just(None),
        1 => (1e5f64..2e7, 0.0f64..4.0).prop_map(|(rate, burst)| Some(RateSpec {
            rate: Rate::ops_per_sec(rate).expect("a positive rate"),
            burst,
        })),
    ];
    (prop::sample::select(WEIGHTS.to_vec()), class, latency, limit).prop_map(
        |(weight, class, latency, limit)| Slo {
            class,
            latency,
            limit,
            ..Slo::weighted(weight)
        },
    )
}

/// Between one and `max_tenants - 1` tenants (fewer than 6 in two
/// histories of three, where every tenant's work meets every other's) on an
/// engine of 1 to 8 slots, fragmenting tasks at 700 bytes in a third of the
/// histories.
pub(crate) fn setup(max_tenants: usize) -> impl Strategy<Value = Setup> {
    let tenants = prop_oneof![2 => 1usize..6, 1 => 1..max_tenants];
    (
        tenants.prop_flat_map(|n| prop::collection::vec(slo(), n)),
        1u32..9,
        prop_oneof![2 => Just(None), 1 => Just(Some(700u64))],
    )
        .prop_map(|(slos, slots, split)| Setup { slos, slots, split })
}

/// Histories of up to `len` steps.
pub(crate) fn ops(len: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => (0usize..300, prop_oneof![3 => Just(1usize), 1 => 1usize..300], 1u64..3000,
              prop::option::weighted(0.3, 0u64..12_000))
            .prop_map(|(first, count, bytes, deadline)| Op::Submit { first, count, bytes, deadline }),
        5 => Just(Op::Next),
        4 => (0usize..1000, 0u8..9).prop_map(|(which, stretch)| Op::Complete { which, stretch }),
        2 => (1u64..4000).prop_map(Op::Wait),
        1 => (0usize..300, prop::sample::select(WEIGHTS.to_vec()))
            .prop_map(|(tenant, weight)| Op::Reweight { tenant, weight }),
        1 => (0usize..300).prop_map(|tenant| Op::Withdraw { tenant }),
    ];
    prop::collection::vec(op, 1..len)
}

fn scheduler(policy: &str, reference: PolicyInfo, params: &[(&str, &str)], setup: &Setup) -> Scheduler {
    let mut b = SchedulerBuilder::new();
    b.engine(
        EngineSpec::new(
            "e",
            EngineKind::ProcessingUnits,
            setup.slots,
            Arc::new(AffineCost::new(0.0, 1.0).expect("a valid cost model")),
        )
        .with_split(setup.split),
    );
    for (i, slo) in setup.slos.iter().enumerate() {
        b.tenant(format!("t{i}"), slo.clone());
    }
    b.register_policy(reference);
    let params: BTreeMap<String, String> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    b.policy(policy, params);
    b.build().expect("a valid setup")
}

/// Drives `policy` and `reference` (each with `params`) through `ops` and
/// fails at the first decision where they differ.
pub(crate) fn same_dispatches(
    policy: &str,
    reference: PolicyInfo,
    params: &[(&str, &str)],
    setup: &Setup,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let mut fast = scheduler(policy, reference, params, setup);
    let mut slow = scheduler(reference.name, reference, params, setup);
    let n = setup.slos.len();
    let mut slos = setup.slos.clone();
    let (mut now, mut id) = (0u64, 0u64);
    let mut in_service: Vec<(DispatchId, DispatchId, u64)> = Vec::new();
    let mut decisions = 0;
    for (step, o) in ops.iter().enumerate() {
        match *o {
            Op::Submit {
                first,
                count,
                bytes,
                deadline,
            } => {
                for k in 0..count.min(n) {
                    id += 1;
                    let task = Task {
                        id: TaskId(id),
                        tenant: TenantId(((first + k) % n) as u32),
                        engine: EngineId(0),
                        op: OpSpec::named("generic"),
                        bytes,
                        arrival: now,
                        deadline: deadline.map(|d| now + d),
                        predicted_cost: None,
                        planner: None,
                    };
                    let a = fast.submit(now, task.clone()).is_ok();
                    prop_assert_eq!(a, slow.submit(now, task).is_ok());
                }
            }
            Op::Next => {
                let (a, b) = (fast.next(now, EngineId(0)), slow.next(now, EngineId(0)));
                let key = |d: &crate::Dispatch| (d.task.id, d.subtask.map(|s| s.index));
                prop_assert_eq!(
                    a.as_ref().map(key),
                    b.as_ref().map(key),
                    "step {} (decision {}) at {} ns",
                    step,
                    decisions,
                    now
                );
                decisions += 1;
                if let (Some(a), Some(b)) = (a, b) {
                    in_service.push((a.id, b.id, a.predicted));
                }
            }
            Op::Complete { which, stretch } if !in_service.is_empty() => {
                let (a, b, predicted) = in_service.swap_remove(which % in_service.len());
                let measured = predicted * u64::from(stretch) / 4 + 1;
                fast.complete(now, a, measured).expect("in service");
                slow.complete(now, b, measured).expect("in service");
            }
            Op::Complete { .. } => {}
            Op::Wait(dt) => now += dt,
            Op::Reweight { tenant, weight } => {
                let t = tenant % n;
                slos[t].weight = weight;
                let id = TenantId(t as u32);
                fast.set_slo(now, id, slos[t].clone(), Vec::new())
                    .expect("a valid SLO");
                slow.set_slo(now, id, slos[t].clone(), Vec::new())
                    .expect("a valid SLO");
            }
            Op::Withdraw { tenant } => {
                let t = TenantId((tenant % n) as u32);
                let a: Vec<TaskId> = fast
                    .withdraw(now, t, |k| k.0 % 2 == 0)
                    .iter()
                    .map(|k| k.id)
                    .collect();
                let b: Vec<TaskId> = slow
                    .withdraw(now, t, |k| k.0 % 2 == 0)
                    .iter()
                    .map(|k| k.id)
                    .collect();
                prop_assert_eq!(a, b);
            }
        }
    }
    Ok(())
}
