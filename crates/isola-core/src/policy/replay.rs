//! Differential replay (issue 17): random scheduler histories played on two
//! schedulers that must decide alike, a policy and the implementation it
//! replaced, failing at the first answer that differs. Used by the tests of
//! the policies rewritten for speed: ASTRAEA, iPipe, MTDA, slack stealing.
//!
//! A history is a [`Setup`] (1 to a few hundred tenants of random weights,
//! classes, latency objectives, queue caps and rate limits; an engine of 1
//! to 8 slots, whole tasks or fragments) and a sequence of [`Op`]s:
//! submissions (one tenant or a run of them, with or without a deadline),
//! decisions, completions (measured shorter or longer than predicted), clock
//! steps, SLO and weight changes, split-size questions and withdrawals. Both
//! schedulers see every operation, and every answer must be the same:
//! submissions accepted or refused, each dispatch (task, fragment, predicted
//! service and reason), split sizes and withdrawn tasks.
//!
//! What differs between the policies' tests (how long the clock steps are,
//! how often a history has only a few tenants, the engine kind, the
//! parameters) is a parameter here.

use crate::engine::{EngineId, EngineKind};
use crate::policy::PolicyInfo;
use crate::scheduler::{Dispatch, DispatchId, Scheduler};
use crate::task::TaskId;
use crate::tenant::{LatencyObjective, RateSpec, Slo, TenantClass, TenantId};
use crate::units::Rate;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::collections::BTreeMap;
use std::ops::Range;

/// Tenants and engine of a history.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    /// Each tenant's SLO at the start, by index.
    pub(crate) slos: Vec<Slo>,
    /// Slots of the one engine.
    pub(crate) slots: u32,
    /// The engine's fragment size, if it fragments tasks.
    pub(crate) split: Option<u64>,
}

/// One step of a history. Tenant and in-service indices are taken modulo
/// the current counts.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// Tasks of `bytes` bytes (1 ns of predicted service per byte), one for
    /// each tenant of `first .. first + count` (at most every tenant once),
    /// due `deadline` ns after now if given.
    Submit {
        first: usize,
        count: usize,
        bytes: u64,
        deadline: Option<u64>,
    },
    /// A decision for a free slot (none if the engine is full).
    Next,
    /// A dispatch in service finishes after `stretch / 4` of its predicted
    /// service, plus 1 ns.
    Complete { which: usize, stretch: u8 },
    /// The clock moves on.
    Wait(u64),
    /// The tenant's SLO is replaced (the policy is rebuilt around the
    /// queues).
    Reslo { tenant: usize, slo: Slo },
    /// Only the tenant's weight changes (the policy is rebuilt).
    Reweight { tenant: usize, weight: f64 },
    /// The split size the policy asks for a task of the tenant now.
    Split { tenant: usize },
    /// The tenant's queued tasks with even ids are withdrawn.
    Withdraw { tenant: usize },
}

/// Weights with short binary expansions and unequal ones (0.3).
const WEIGHTS: [f64; 9] = [0.25, 0.3, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 7.0];

/// A tenant's SLO: any class; with or without a latency objective (tight
/// ones half the time, near the tasks' sizes and the clock steps); mostly a
/// queue cap small enough that some submissions are refused; sometimes a
/// rate limit.
pub(crate) fn slo() -> impl Strategy<Value = Slo> {
    let class = prop::sample::select(vec![
        TenantClass::LatencySensitive,
        TenantClass::BandwidthSensitive,
        TenantClass::BestEffort,
    ]);
    let latency = prop_oneof![
        2 => Just(None),
        1 => prop_oneof![100u64..20_000, 1u64..60_000]
            .prop_map(|ns| Some(LatencyObjective::Absolute(ns))),
        1 => prop_oneof![1.0f64..6.0, 1.0f64..30.0]
            .prop_map(|k| Some(LatencyObjective::ServiceMultiple(k))),
    ];
    let queue_cap = prop_oneof![3 => 1usize..40, 1 => Just(Slo::weighted(1.0).queue_cap)];
    let limit = prop_oneof![
        6 => Just(None),
        1 => (1e5f64..2e7, 0.0f64..4.0).prop_map(|(rate, burst)| Some(RateSpec {
            rate: Rate::ops_per_sec(rate).expect("a positive rate"),
            burst,
        })),
    ];
    (
        prop::sample::select(WEIGHTS.to_vec()),
        class,
        latency,
        queue_cap,
        limit,
    )
        .prop_map(|(weight, class, latency, queue_cap, limit)| Slo {
            class,
            latency,
            queue_cap,
            limit,
            ..Slo::weighted(weight)
        })
}

/// Between one and `max_tenants - 1` tenants, fewer than 6 (where every
/// tenant's work meets every other's) with probability `few`, on an engine
/// of 1 to 8 slots that fragments tasks in half the histories (at 700
/// bytes, or anywhere from 300 to 3,000).
pub(crate) fn setup(max_tenants: usize, few: f64) -> impl Strategy<Value = Setup> {
    let tenants = prop::bool::weighted(few)
        .prop_flat_map(move |few| if few { 1usize..6 } else { 1..max_tenants })
        .prop_flat_map(|n| prop::collection::vec(slo(), n));
    let split = prop_oneof![
        2 => Just(None),
        1 => Just(Some(700u64)),
        1 => (300u64..3_000).prop_map(Some),
    ];
    (tenants, 1u32..9, split).prop_map(|(slos, slots, split)| Setup { slos, slots, split })
}

/// A tenant index: half the time one of the first four, so that a few
/// tenants have deep queues while many have a task or none.
fn tenant() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..4, 0usize..300]
}

/// A history's steps, `len` of them; clock steps up to `max_wait` ns.
pub(crate) fn ops(max_wait: u64, len: Range<usize>) -> impl Strategy<Value = Vec<Op>> {
    let submit = (
        tenant(),
        prop_oneof![3 => Just(1usize), 1 => 1usize..300],
        1u64..6_000,
        prop::option::weighted(0.3, 0u64..12_000),
    )
        .prop_map(|(first, count, bytes, deadline)| Op::Submit {
            first,
            count,
            bytes,
            deadline,
        });
    let op = prop_oneof![
        5 => submit,
        5 => Just(Op::Next),
        4 => (0usize..1000, 0u8..9).prop_map(|(which, stretch)| Op::Complete { which, stretch }),
        3 => (1u64..max_wait.max(2)).prop_map(Op::Wait),
        1 => (tenant(), slo()).prop_map(|(tenant, slo)| Op::Reslo { tenant, slo }),
        1 => (tenant(), prop::sample::select(WEIGHTS.to_vec()))
            .prop_map(|(tenant, weight)| Op::Reweight { tenant, weight }),
        1 => tenant().prop_map(|tenant| Op::Split { tenant }),
        1 => tenant().prop_map(|tenant| Op::Withdraw { tenant }),
    ];
    prop::collection::vec(op, len)
}

pub(crate) use super::test_support::params;

/// A scheduler running `policy` with `params` on one engine of `kind` as
/// `setup` describes, `reference` registered.
fn scheduler(
    policy: &str,
    reference: PolicyInfo,
    kind: EngineKind,
    params: &BTreeMap<String, String>,
    setup: &Setup,
) -> Scheduler {
    let mut b = super::test_support::builder(kind, setup.slots, setup.split, &setup.slos);
    b.register_policy(reference);
    b.policy(policy, params.clone());
    b.build().expect("a valid setup")
}

/// Plays `ops` on `policy` and on `reference` (each with `params`, on an
/// engine of `kind` as `setup` describes) and fails at the first answer
/// that differs. Returns the number of dispatches, so a test can check its
/// histories do decide something.
pub(crate) fn same_dispatches(
    policy: &str,
    reference: PolicyInfo,
    kind: EngineKind,
    params: &BTreeMap<String, String>,
    setup: &Setup,
    ops: &[Op],
) -> Result<usize, TestCaseError> {
    let mut fast = scheduler(policy, reference, kind, params, setup);
    let mut slow = scheduler(reference.name, reference, kind, params, setup);
    let e = EngineId(0);
    let n = setup.slos.len();
    let mut slos = setup.slos.clone();
    let (mut now, mut id, mut dispatches) = (0u64, 0u64, 0);
    let mut in_service: Vec<(DispatchId, DispatchId, u64)> = Vec::new();
    for (step, o) in ops.iter().enumerate() {
        match o {
            Op::Submit {
                first,
                count,
                bytes,
                deadline,
            } => {
                for k in 0..(*count).min(n) {
                    id += 1;
                    let task = super::test_support::task(id, (first + k) % n, *bytes, now, *deadline);
                    let a = fast.submit(now, task.clone()).is_ok();
                    let b = slow.submit(now, task).is_ok();
                    prop_assert_eq!(a, b, "submission of task {} at step {}", id, step);
                }
            }
            Op::Next => {
                let (a, b) = (fast.next(now, e), slow.next(now, e));
                let key = |d: &Dispatch| (d.task.id, d.subtask, d.predicted, d.reason);
                prop_assert_eq!(
                    a.as_ref().map(key),
                    b.as_ref().map(key),
                    "decision at step {} (dispatch {}, t = {} ns)",
                    step,
                    dispatches,
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
                slow.complete(now, b, measured).expect("in service");
            }
            Op::Wait(dt) => now += dt,
            Op::Reslo { tenant, slo } => {
                let t = tenant % n;
                slos[t] = slo.clone();
                set_slo(&mut fast, &mut slow, now, t, &slos[t]);
            }
            Op::Reweight { tenant, weight } => {
                let t = tenant % n;
                slos[t].weight = *weight;
                set_slo(&mut fast, &mut slow, now, t, &slos[t]);
            }
            Op::Split { tenant } => {
                let t = TenantId((tenant % n) as u32);
                prop_assert_eq!(
                    fast.split_bytes(now, e, t, 1_000),
                    slow.split_bytes(now, e, t, 1_000),
                    "split size at step {}",
                    step
                );
            }
            Op::Withdraw { tenant } => {
                let t = TenantId((tenant % n) as u32);
                let withdraw = |s: &mut Scheduler| -> Vec<TaskId> {
                    let even = |k: TaskId| k.0 % 2 == 0;
                    s.withdraw(now, t, even).iter().map(|k| k.id).collect()
                };
                let (a, b) = (withdraw(&mut fast), withdraw(&mut slow));
                prop_assert_eq!(a, b, "withdrawal at step {}", step);
            }
        }
    }
    Ok(dispatches)
}

/// Gives tenant `t` the SLO `slo` on both schedulers.
fn set_slo(fast: &mut Scheduler, slow: &mut Scheduler, now: u64, t: usize, slo: &Slo) {
    for s in [fast, slow] {
        s.set_slo(now, TenantId(t as u32), slo.clone(), Vec::new())
            .expect("a valid SLO");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::slack::reference;

    /// Two tenants on one slot: a best-effort one with a long task queued
    /// first, then a latency-sensitive one whose task is due before the
    /// long one would end.
    fn urgent_behind_long() -> (Setup, Vec<Op>) {
        let setup = Setup {
            slos: vec![
                Slo {
                    class: TenantClass::BestEffort,
                    ..Slo::weighted(1.0)
                },
                Slo {
                    class: TenantClass::LatencySensitive,
                    latency: Some(LatencyObjective::Absolute(2_000)),
                    ..Slo::weighted(1.0)
                },
            ],
            slots: 1,
            split: None,
        };
        let submit = |first, bytes| Op::Submit {
            first,
            count: 1,
            bytes,
            deadline: None,
        };
        let ops = vec![
            submit(0, 5_000),
            submit(1, 100),
            Op::Next,
            Op::Complete { which: 0, stretch: 4 },
            Op::Next,
            Op::Split { tenant: 1 },
            Op::Withdraw { tenant: 0 },
        ];
        (setup, ops)
    }

    /// A policy replayed against itself (its reference registered under
    /// its own name) agrees, and the count is of the dispatches made.
    #[test]
    fn a_policy_agrees_with_itself() {
        let (setup, ops) = urgent_behind_long();
        let n = same_dispatches(
            reference::INFO.name,
            reference::INFO,
            EngineKind::ProcessingUnits,
            &BTreeMap::new(),
            &setup,
            &ops,
        )
        .expect("the same scheduler decides alike");
        assert_eq!(n, 2);
    }

    /// Two policies that decide differently (FCFS serves the long task
    /// first, slack stealing the urgent one) are told apart at the first
    /// decision.
    #[test]
    fn policies_that_decide_differently_are_caught() {
        let (setup, ops) = urgent_behind_long();
        let err = same_dispatches(
            "fcfs",
            reference::INFO,
            EngineKind::ProcessingUnits,
            &BTreeMap::new(),
            &setup,
            &ops,
        )
        .expect_err("FCFS and slack stealing differ");
        assert!(err.to_string().contains("decision at step 2"), "{err}");
    }
}
