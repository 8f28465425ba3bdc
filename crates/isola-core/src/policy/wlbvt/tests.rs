//! The data-parallel scan against two references: an exact scan written from
//! the rule (integer inputs, rational comparison in `u128`, no rounding), and
//! the sequential scan it replaced, driven through a scheduler by random
//! submissions, completions, clock steps and weight changes.

use super::lanes::{Lane, ReadyLanes, LIMIT_EPSILON};
use super::reference;
use crate::engine::{EngineId, EngineKind, EngineSpec};
use crate::scheduler::{DispatchId, Scheduler, SchedulerBuilder};
use crate::task::{OpSpec, Task, TaskId};
use crate::tenant::{Slo, TenantId};
use crate::AffineCost;
use proptest::prelude::*;
use std::sync::Arc;

/// One ready tenant with integer state, for the exact reference.
#[derive(Debug, Clone, Copy)]
struct IntLane {
    updated: u64,
    occupancy: u64,
    active_time: u64,
    running: u64,
    weight: u64,
    seq: u64,
}

fn int_lane() -> impl Strategy<Value = IntLane> {
    (
        0u64..1000,
        0u64..50_000,
        0u64..20_000,
        0u64..6,
        1u64..9,
        0u64..1_000_000,
    )
        .prop_map(
            |(updated, occupancy, active_time, running, weight, seq)| IntLane {
                updated,
                occupancy,
                active_time,
                running,
                weight,
                seq,
            },
        )
}

/// The rule, exactly: among tenants with `running < slots x w / W`, the
/// lowest `(occupancy + running x dt) / ((active_time + dt) x w)` (zero
/// with no active time), ties to the smallest head sequence number.
fn exact_pick(lanes: &[IntLane], now: u64, slots: u64) -> Option<usize> {
    let total_w: u64 = lanes.iter().map(|l| l.weight).sum();
    let key = |l: &IntLane| {
        let dt = now.saturating_sub(l.updated);
        let active = l.active_time + dt;
        if active == 0 {
            (0u128, 1u128)
        } else {
            (
                (l.occupancy + l.running * dt) as u128,
                (active * l.weight) as u128,
            )
        }
    };
    lanes
        .iter()
        .enumerate()
        .filter(|(_, l)| l.running * total_w < slots * l.weight)
        .min_by(|(_, a), (_, b)| {
            let ((na, da), (nb, db)) = (key(a), key(b));
            (na * db).cmp(&(nb * da)).then(a.seq.cmp(&b.seq))
        })
        .map(|(i, _)| i)
}

#[derive(Debug, Clone)]
enum Op {
    Submit { tenant: usize, bytes: u64 },
    Next,
    Complete { which: usize, stretch: u8 },
    Wait(u64),
    Reweight { tenant: usize, weight: f64 },
}

/// Weights with short binary expansions, so every product the rule forms is exact.
const WEIGHTS: [f64; 6] = [0.5, 1.0, 1.5, 2.0, 3.0, 4.0];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..64, 1u64..4000).prop_map(|(tenant, bytes)| Op::Submit { tenant, bytes }),
        4 => Just(Op::Next),
        3 => (0usize..64, 0u8..3).prop_map(|(which, stretch)| Op::Complete { which, stretch }),
        2 => (1u64..3000).prop_map(Op::Wait),
        1 => (0usize..64, prop::sample::select(WEIGHTS.to_vec()))
            .prop_map(|(tenant, weight)| Op::Reweight { tenant, weight }),
    ]
}

fn scheduler(policy: &str, weights: &[f64], slots: u32) -> Scheduler {
    let mut b = SchedulerBuilder::new();
    b.engine(EngineSpec::new(
        "e",
        EngineKind::Accelerator,
        slots,
        Arc::new(AffineCost::new(0.0, 1.0).expect("a valid cost model")),
    ));
    for (i, &w) in weights.iter().enumerate() {
        b.tenant(format!("t{i}"), Slo::weighted(w));
    }
    b.register_policy(reference::INFO);
    b.policy(policy, Default::default());
    b.build().expect("a valid setup")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every lane count (chunks of the reduction and their remainders), any
    /// slot limit: the scan picks what the exact rule picks.
    #[test]
    fn scan_picks_what_the_exact_rule_picks(
        lanes in prop::collection::vec(int_lane(), 0..40),
        after in 0u64..2000,
        slots in 1u64..70,
    ) {
        // Head sequence numbers are distinct, as a scheduler's are.
        let lanes: Vec<IntLane> = lanes.iter().enumerate()
            .map(|(i, l)| IntLane { seq: l.seq * 64 + i as u64, ..*l }).collect();
        let now = 1000 + after;
        let mut ready = ReadyLanes::with_capacity(lanes.len());
        for (i, l) in lanes.iter().enumerate() {
            ready.push(Lane {
                tenant: i as u32,
                updated: l.updated as f64,
                occupancy: l.occupancy as f64,
                active_time: l.active_time as f64,
                running: l.running as f64,
                weight: l.weight as f64,
                head_seq: l.seq as f64,
            });
        }
        let total_w: u64 = lanes.iter().map(|l| l.weight).sum();
        let share = slots as f64 / total_w as f64;
        // The limit compared in f64 with its epsilon is the integer limit here.
        for l in &lanes {
            prop_assert_eq!(
                (l.running as f64) + LIMIT_EPSILON < share * l.weight as f64,
                l.running * total_w < slots * l.weight
            );
        }
        prop_assert_eq!(ready.pick(now, share), exact_pick(&lanes, now, slots));
    }

    /// Whole histories through the scheduler: the same dispatches, in the
    /// same order, as the sequential scan it replaced.
    #[test]
    fn decides_as_the_sequential_scan(
        weights in prop::collection::vec(prop::sample::select(WEIGHTS.to_vec()), 1..24),
        slots in 1u32..9,
        ops in prop::collection::vec(op(), 1..300),
    ) {
        let mut fast = scheduler("wlbvt", &weights, slots);
        let mut seq = scheduler(reference::INFO.name, &weights, slots);
        let n = weights.len();
        let (mut now, mut id) = (0u64, 0u64);
        let mut in_service: Vec<(DispatchId, DispatchId, u64)> = Vec::new();
        for o in ops {
            match o {
                Op::Submit { tenant, bytes } => {
                    id += 1;
                    let task = Task {
                        id: TaskId(id),
                        tenant: TenantId((tenant % n) as u32),
                        engine: EngineId(0),
                        op: OpSpec::named("generic"),
                        bytes,
                        arrival: now,
                        deadline: None,
                        predicted_cost: None,
                        planner: None,
                        flow: 0,
                    };
                    let (a, b) = (fast.submit(now, task.clone()).is_ok(), seq.submit(now, task).is_ok());
                    prop_assert_eq!(a, b);
                }
                Op::Next => {
                    let (a, b) = (fast.next(now, EngineId(0)), seq.next(now, EngineId(0)));
                    prop_assert_eq!(a.as_ref().map(|d| d.task.id), b.as_ref().map(|d| d.task.id), "at {}", now);
                    if let (Some(a), Some(b)) = (a, b) {
                        in_service.push((a.id, b.id, a.predicted));
                    }
                }
                Op::Complete { which, stretch } if !in_service.is_empty() => {
                    let (a, b, predicted) = in_service.swap_remove(which % in_service.len());
                    let measured = predicted * stretch as u64 / 2 + 1;
                    fast.complete(now, a, measured).expect("in service");
                    seq.complete(now, b, measured).expect("in service");
                }
                Op::Complete { .. } => {}
                Op::Wait(dt) => now += dt,
                Op::Reweight { tenant, weight } => {
                    let t = TenantId((tenant % n) as u32);
                    let slo = Slo::weighted(weight);
                    fast.set_slo(now, t, slo.clone(), Vec::new()).expect("a valid SLO");
                    seq.set_slo(now, t, slo, Vec::new()).expect("a valid SLO");
                }
            }
        }
    }
}

proptest! {
    /// The versions compiled for wider registers decide as the portable one.
    #[test]
    fn every_instruction_set_decides_alike(
        lanes in prop::collection::vec(int_lane(), 0..40),
        now in 0u64..3000,
        share in 0.01f64..4.0,
    ) {
        let mut ready = ReadyLanes::with_capacity(lanes.len());
        for (i, l) in lanes.iter().enumerate() {
            ready.push(Lane {
                tenant: i as u32,
                updated: l.updated as f64,
                occupancy: l.occupancy as f64 / 3.0,
                active_time: l.active_time as f64 * 0.7,
                running: l.running as f64,
                weight: l.weight as f64 / 7.0,
                head_seq: (l.seq * 64 + i as u64) as f64,
            });
        }
        let portable = ready.pick_portable(now, share);
        prop_assert_eq!(ready.pick(now, share), portable);
    }
}

/// A change to the ready lanes: append, overwrite or remove one.
#[derive(Debug, Clone)]
enum LaneOp {
    Push(IntLane),
    Set(usize, IntLane),
    Remove(usize),
}

fn lane_op() -> impl Strategy<Value = LaneOp> {
    prop_oneof![
        3 => int_lane().prop_map(LaneOp::Push),
        1 => (any::<usize>(), int_lane()).prop_map(|(i, l)| LaneOp::Set(i, l)),
        2 => any::<usize>().prop_map(LaneOp::Remove),
    ]
}

/// `l` as tenant `tenant`'s lane, its sequence number made distinct.
fn as_lane(tenant: u32, l: &IntLane) -> Lane {
    Lane {
        tenant,
        updated: l.updated as f64,
        occupancy: l.occupancy as f64,
        active_time: l.active_time as f64,
        running: l.running as f64,
        weight: l.weight as f64,
        head_seq: (l.seq * 512 + u64::from(tenant)) as f64,
    }
}

proptest! {
    /// Appends, overwrites and swap-removals (across block boundaries)
    /// leave the lanes as a plain list of them would be: same tenants in
    /// the same order, and the same decision as lanes freshly built from
    /// that list (so a removed lane leaves nothing behind that could win).
    #[test]
    fn changes_keep_the_lanes_a_list(
        ops in prop::collection::vec(lane_op(), 1..300),
        now in 0u64..3000,
        share in 0.01f64..4.0,
    ) {
        let (mut ready, mut model) = (ReadyLanes::with_capacity(4), Vec::<Lane>::new());
        let mut next_tenant = 0u32;
        for op in ops {
            match op {
                LaneOp::Push(l) => {
                    let lane = as_lane(next_tenant, &l);
                    next_tenant += 1;
                    prop_assert_eq!(ready.push(lane), model.len());
                    model.push(lane);
                }
                LaneOp::Set(i, l) if !model.is_empty() => {
                    let i = i % model.len();
                    let lane = as_lane(model[i].tenant, &l);
                    ready.set(i, lane);
                    model[i] = lane;
                }
                LaneOp::Remove(i) if !model.is_empty() => {
                    let i = i % model.len();
                    model.swap_remove(i);
                    prop_assert_eq!(ready.swap_remove(i), model.get(i).map(|l| l.tenant));
                }
                _ => {}
            }
            let tenants: Vec<u32> = model.iter().map(|l| l.tenant).collect();
            prop_assert_eq!(ready.tenants(), &tenants[..]);
            let mut fresh = ReadyLanes::with_capacity(model.len());
            for l in &model {
                fresh.push(*l);
            }
            prop_assert_eq!(ready.pick(now, share), fresh.pick(now, share));
        }
    }
}
