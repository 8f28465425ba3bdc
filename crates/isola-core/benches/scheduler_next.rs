//! Cost of one scheduling decision with N backlogged tenants, for every policy.
//!
//! Two measurements per policy and tenant count:
//! * `next`: `next()` alone. An engine with 64 slots takes 64 dispatches in a
//!   row, timed; then they are completed and resubmitted, untimed, so every
//!   tenant stays backlogged.
//! * `cycle`: one whole driver cycle on a single-slot engine, `next()` +
//!   `complete()` + `submit()`, what a driver pays per task.
//!
//! `static` needs a slot per tenant, so it gets max(slots, tenants) slots.
//!
//! `next_ref` and `cycle_ref` time the implementations a policy replaced,
//! under the policy's name, in the same run: WLBVT's sequential scan
//! ([`isola_core::policy::wlbvt::reference`], issue 17).
//!
//! Run: `cargo bench -p isola-core --bench scheduler_next`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use isola_core::policy::wlbvt;
use isola_core::{
    AffineCost, EngineId, EngineKind, EngineSpec, OpSpec, PolicyInfo, Scheduler, SchedulerBuilder, Slo, Task,
    TaskId, TenantId, POLICIES,
};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

const TENANTS: [usize; 4] = [2, 8, 128, 1024];
const COST: u64 = 1_000;
const BATCH_SLOTS: u32 = 64;

/// Replaced implementations, each with the name of the policy it was.
const REFERENCES: [(&str, PolicyInfo); 1] = [("wlbvt", wlbvt::reference::INFO)];

/// What a benchmark group runs: (benchmark name, policy).
fn policies(reference: bool) -> Vec<(&'static str, PolicyInfo)> {
    if reference {
        REFERENCES.to_vec()
    } else {
        POLICIES.iter().map(|p| (p.name, *p)).collect()
    }
}

/// A scheduler with `n` tenants of mixed weights, each with `backlog` tasks queued.
fn backlogged(policy: &PolicyInfo, n: usize, slots: u32, backlog: usize) -> (Scheduler, EngineId) {
    let slots = if policy.name == "static" {
        slots.max(n as u32)
    } else {
        slots
    };
    let mut b = SchedulerBuilder::new();
    let e = b.engine(EngineSpec::new(
        "e",
        EngineKind::Accelerator,
        slots,
        Arc::new(AffineCost::constant(COST)),
    ));
    for t in 0..n {
        // Unequal weights so weighted policies do real work.
        b.tenant(format!("t{t}"), Slo::weighted(1.0 + (t % 4) as f64));
    }
    if !POLICIES.iter().any(|p| p.name == policy.name) {
        b.register_policy(*policy);
    }
    b.policy(policy.name, Default::default());
    let mut s = b.build().expect("benchmark setup is valid");
    let op = OpSpec::named("generic");
    for t in 0..n {
        for k in 0..backlog {
            let task = Task {
                id: TaskId((t * backlog + k) as u64),
                tenant: TenantId(t as u32),
                engine: e,
                op: op.clone(),
                bytes: 4096,
                arrival: 0,
                deadline: None,
                predicted_cost: None,
                planner: None,
            };
            s.submit(0, task).expect("backlog fits the channel");
        }
    }
    (s, e)
}

fn next_only(c: &mut Criterion) {
    next_group(c, "next", false);
    next_group(c, "next_ref", true);
}

fn next_group(c: &mut Criterion, name: &str, reference: bool) {
    let mut group = c.benchmark_group(name);
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(20);
    for (name, info) in policies(reference) {
        for &n in &TENANTS {
            // Enough backlog that 64 dispatches in a row never empty a tenant.
            let backlog = (BATCH_SLOTS as usize).div_ceil(n) + 2;
            let (mut s, e) = backlogged(&info, n, BATCH_SLOTS, backlog);
            let mut now = 0u64;
            let mut batch = Vec::with_capacity(n.max(BATCH_SLOTS as usize));
            group.bench_function(BenchmarkId::new(name, n), |bench| {
                bench.iter_custom(|iters| {
                    let mut timed = Duration::ZERO;
                    let mut done = 0;
                    while done < iters {
                        let start = Instant::now();
                        while let Some(d) = s.next(now, e) {
                            batch.push(d);
                        }
                        timed += start.elapsed();
                        done += batch.len() as u64;
                        now += COST;
                        for d in batch.drain(..) {
                            s.complete(now, d.id, COST).expect("in service");
                            let mut task = d.task;
                            task.arrival = now;
                            s.submit(now, black_box(task)).expect("channel has room");
                        }
                    }
                    // Report per decision: scale to the requested count.
                    timed.mul_f64(iters as f64 / done as f64)
                })
            });
        }
    }
    group.finish();
}

fn cycle(c: &mut Criterion) {
    cycle_group(c, "cycle", false);
    cycle_group(c, "cycle_ref", true);
}

fn cycle_group(c: &mut Criterion, name: &str, reference: bool) {
    let mut group = c.benchmark_group(name);
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1200))
        .sample_size(20);
    for (name, info) in policies(reference) {
        for &n in &TENANTS {
            let (mut s, e) = backlogged(&info, n, 1, 2);
            let mut now = 0u64;
            group.bench_function(BenchmarkId::new(name, n), |bench| {
                bench.iter(|| {
                    let d = s.next(now, e).expect("a tenant is always backlogged");
                    now += COST;
                    s.complete(now, d.id, COST).expect("in service");
                    let mut task = d.task;
                    task.arrival = now;
                    s.submit(now, black_box(task)).expect("channel has room");
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, next_only, cycle);
criterion_main!(benches);
