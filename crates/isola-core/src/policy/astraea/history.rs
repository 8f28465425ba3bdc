//! Random scheduler histories replayed on two schedulers that must decide
//! alike: a policy and the implementation it replaced (issue 17). Used by
//! ASTRAEA's and iPipe's tests.
//!
//! A history is a tenant set (1 to 299 tenants of random weights, classes,
//! latency objectives and queue caps), an engine (slots, fragmenting or
//! not) and a sequence of operations: submissions, decisions, completions
//! (with measured service longer or shorter than predicted), clock steps,
//! SLO changes and split-size questions. Both schedulers see every
//! operation; every answer must be the same, dispatch by dispatch.

use crate::engine::{EngineId, EngineKind, EngineSpec};
use crate::policy::PolicyInfo;
use crate::scheduler::{DispatchId, Scheduler, SchedulerBuilder};
use crate::task::{OpSpec, Task, TaskId};
use crate::tenant::{LatencyObjective, Slo, TenantClass, TenantId};
use crate::AffineCost;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One step of a history. Tenant and in-service indices are taken modulo
/// the current counts.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// A task of `bytes` bytes (1 ns of predicted service per byte).
    Submit { tenant: usize, bytes: u64 },
    /// A decision for a free slot (none if the engine is full).
    Next,
    /// A dispatch in service finishes after `stretch / 4` of its predicted
    /// service, plus 1 ns.
    Complete { which: usize, stretch: u8 },
    /// The clock moves on.
    Wait(u64),
    /// The tenant's SLO changes (the policy is rebuilt around the queues).
    Reslo { tenant: usize, slo: Slo },
    /// The split size the policy asks for a task of the tenant now.
    Split { tenant: usize },
}

/// Weights with short binary expansions and unequal ones.
const WEIGHTS: [f64; 7] = [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 0.3];

/// A tenant's SLO: any class, with or without a latency objective, and a
/// queue cap small enough that some submissions are refused.
pub(crate) fn slo() -> impl Strategy<Value = Slo> {
    let class = prop::sample::select(vec![
        TenantClass::LatencySensitive,
        TenantClass::BandwidthSensitive,
        TenantClass::BestEffort,
    ]);
    let latency = prop_oneof![
        2 => Just(None),
        1 => (1u64..60_000).prop_map(|ns| Some(LatencyObjective::Absolute(ns))),
        1 => (1.0f64..30.0).prop_map(|k| Some(LatencyObjective::ServiceMultiple(k))),
    ];
    (prop::sample::select(WEIGHTS.to_vec()), class, latency, 1usize..40).prop_map(
        |(weight, class, latency, queue_cap)| Slo {
            class,
            latency,
            queue_cap,
            ..Slo::weighted(weight)
        },
    )
}

/// A tenant index: half the time one of the first four, so that a few
/// tenants have deep queues while many have a task or none.
fn tenant() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..4, 0usize..300]
}

/// A history's steps; clock steps up to `max_wait` ns.
pub(crate) fn ops(max_wait: u64, len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => (tenant(), 1u64..6_000).prop_map(|(tenant, bytes)| Op::Submit { tenant, bytes }),
        5 => Just(Op::Next),
        4 => (0usize..64, 0u8..9).prop_map(|(which, stretch)| Op::Complete { which, stretch }),
        3 => (1u64..max_wait).prop_map(Op::Wait),
        1 => (tenant(), slo()).prop_map(|(tenant, slo)| Op::Reslo { tenant, slo }),
        1 => tenant().prop_map(|tenant| Op::Split { tenant }),
    ];
    prop::collection::vec(op, len)
}

/// A scheduler running `policy` with `params` on one engine of `slots`
/// (fragmenting at `fragment`), `reference` registered.
pub(crate) fn scheduler(
    policy: &str,
    reference: PolicyInfo,
    params: &BTreeMap<String, String>,
    slos: &[Slo],
    slots: u32,
    fragment: Option<u64>,
) -> Scheduler {
    let mut b = SchedulerBuilder::new();
    b.engine(
        EngineSpec::new(
            "e",
            EngineKind::Accelerator,
            slots,
            Arc::new(AffineCost::new(0.0, 1.0).expect("a valid cost model")),
        )
        .with_split(fragment),
    );
    for (i, s) in slos.iter().enumerate() {
        b.tenant(format!("t{i}"), s.clone());
    }
    b.register_policy(reference);
    b.policy(policy, params.clone());
    b.build().expect("a valid setup")
}

/// Plays `ops` on `fast` and `reference` (built alike for tenants `slos`)
/// and fails at the first answer that differs. Returns the number of
/// dispatches, so a test can check its histories do decide something.
pub(crate) fn replay(
    fast: &mut Scheduler,
    reference: &mut Scheduler,
    tenants: usize,
    ops: &[Op],
) -> Result<usize, TestCaseError> {
    let e = EngineId(0);
    let (mut now, mut id, mut dispatches) = (0u64, 0u64, 0);
    let mut in_service: Vec<(DispatchId, DispatchId, u64)> = Vec::new();
    for (step, o) in ops.iter().enumerate() {
        match o {
            Op::Submit { tenant, bytes } => {
                id += 1;
                let task = Task {
                    id: TaskId(id),
                    tenant: TenantId((tenant % tenants) as u32),
                    engine: e,
                    op: OpSpec::named("generic"),
                    bytes: *bytes,
                    arrival: now,
                    deadline: None,
                    predicted_cost: None,
                    planner: None,
                };
                let a = fast.submit(now, task.clone()).is_ok();
                let b = reference.submit(now, task).is_ok();
                prop_assert_eq!(a, b, "submission at step {}", step);
            }
            Op::Next => {
                let (a, b) = (fast.next(now, e), reference.next(now, e));
                let key = |d: &crate::scheduler::Dispatch| (d.task.id, d.subtask, d.predicted, d.reason);
                prop_assert_eq!(
                    a.as_ref().map(key),
                    b.as_ref().map(key),
                    "decision at step {} (t = {} ns)",
                    step,
                    now
                );
                if let (Some(a), Some(b)) = (a, b) {
                    in_service.push((a.id, b.id, a.predicted));
                    dispatches += 1;
                }
            }
            Op::Complete { which, stretch } => {
                if in_service.is_empty() {
                    continue;
                }
                let (a, b, predicted) = in_service.swap_remove(which % in_service.len());
                let measured = predicted * u64::from(*stretch) / 4 + 1;
                fast.complete(now, a, measured).expect("in service");
                reference.complete(now, b, measured).expect("in service");
            }
            Op::Wait(dt) => now += dt,
            Op::Reslo { tenant, slo } => {
                let t = TenantId((tenant % tenants) as u32);
                fast.set_slo(now, t, slo.clone(), Vec::new())
                    .expect("a valid SLO");
                reference
                    .set_slo(now, t, slo.clone(), Vec::new())
                    .expect("a valid SLO");
            }
            Op::Split { tenant } => {
                let t = TenantId((tenant % tenants) as u32);
                prop_assert_eq!(
                    fast.split_bytes(now, e, t, 1_000),
                    reference.split_bytes(now, e, t, 1_000),
                    "split size at step {}",
                    step
                );
            }
        }
    }
    Ok(dispatches)
}
