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
//! ([`isola_core::policy::wlbvt::reference`]), ASTRAEA's, MTDA's and slack
//! stealing's scans over every tenant
//! ([`isola_core::policy::astraea::reference`],
//! [`isola_core::policy::mtda::reference`],
//! [`isola_core::policy::slack::reference`]) and iPipe's percentile
//! selection per completion ([`isola_core::policy::ipipe::reference`]), all
//! issue 17.
//!
//! Run: `cargo bench -p isola-core --bench scheduler_next`; or, for the
//! fastest and median batch of chosen ids (see [`min_of_batches`]),
//! `SCHEDULER_NEXT_MIN=sfq/1024,ref:wlbvt/128 cargo bench -p isola-core --bench scheduler_next`.

use criterion::{criterion_group, BenchmarkId, Criterion};
use isola_core::policy::{astraea, ipipe, mtda, slack, wlbvt};
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
const REFERENCES: [(&str, PolicyInfo); 5] = [
    ("wlbvt", wlbvt::reference::INFO),
    ("astraea", astraea::reference::INFO),
    ("ipipe", ipipe::reference::INFO),
    ("mtda", mtda::reference::INFO),
    ("slack", slack::reference::INFO),
];

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
    for t in 0..n {
        for k in 0..backlog {
            let id = TaskId((t * backlog + k) as u64);
            s.submit(0, task(id, TenantId(t as u32), e, 0))
                .expect("backlog fits the channel");
        }
    }
    (s, e)
}

/// A 4 KiB task of `tenant`'s for engine `e`, submitted at `arrival`.
fn task(id: TaskId, tenant: TenantId, e: EngineId, arrival: u64) -> Task {
    Task {
        id,
        tenant,
        engine: e,
        op: OpSpec::named("generic"),
        bytes: 4096,
        arrival,
        deadline: None,
        predicted_cost: None,
        planner: None,
        flow: 0,
    }
}

/// Submits again at `now` the task dispatch `d` served.
fn resubmit(s: &mut Scheduler, e: EngineId, now: u64, d: &isola_core::Dispatch) {
    s.submit(now, black_box(task(d.task.id, d.task.tenant, e, now)))
        .expect("channel has room");
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
            let mut b = Batches::new(&info, n);
            group.bench_function(BenchmarkId::new(name, n), |bench| {
                bench.iter_custom(|iters| {
                    let (mut timed, mut done) = (Duration::ZERO, 0);
                    while done < iters {
                        let (t, k) = b.run();
                        timed += t;
                        done += k;
                    }
                    // Report per decision: scale to the requested count.
                    timed.mul_f64(iters as f64 / done as f64)
                })
            });
        }
    }
    group.finish();
}

/// The `next` setup: a 64-slot engine filled by decisions in a row (timed),
/// then emptied and the tasks resubmitted (not timed).
struct Batches {
    s: Scheduler,
    e: EngineId,
    now: u64,
    batch: Vec<isola_core::Dispatch>,
}

impl Batches {
    fn new(info: &PolicyInfo, n: usize) -> Self {
        // Enough backlog that 64 dispatches in a row never empty a tenant.
        let backlog = (BATCH_SLOTS as usize).div_ceil(n) + 2;
        let (s, e) = backlogged(info, n, BATCH_SLOTS, backlog);
        Batches {
            s,
            e,
            now: 0,
            batch: Vec::with_capacity(n.max(BATCH_SLOTS as usize)),
        }
    }

    /// One batch: its timed duration and number of decisions.
    fn run(&mut self) -> (Duration, u64) {
        let start = Instant::now();
        while let Some(d) = self.s.next(self.now, self.e) {
            self.batch.push(d);
        }
        let timed = start.elapsed();
        let done = self.batch.len() as u64;
        self.now += COST;
        for d in self.batch.drain(..) {
            self.s.complete(self.now, d.id, COST).expect("in service");
            resubmit(&mut self.s, self.e, self.now, &d);
        }
        (timed, done)
    }
}

/// `SCHEDULER_NEXT_MIN=sfq/1024,wlbvt/128,...` (`ref:` before a name for
/// the replaced implementation): instead of criterion, 2,000 batches of the
/// `next` setup per id, printing the fastest and the median batch in ns per
/// decision. On a shared machine the fastest batch is the one least
/// disturbed by other processes, so it compares implementations better
/// than a mean.
fn min_of_batches(ids: &str) {
    const BATCHES: usize = 2000;
    for id in ids.split(',').filter(|i| !i.is_empty()) {
        let (reference, id) = id.strip_prefix("ref:").map_or((false, id), |rest| (true, rest));
        let Some((name, n)) = id.split_once('/') else {
            panic!("SCHEDULER_NEXT_MIN: `{id}` is not policy/tenants");
        };
        let n: usize = n.parse().expect("SCHEDULER_NEXT_MIN: tenants is a number");
        let Some((_, info)) = policies(reference).into_iter().find(|(p, _)| *p == name) else {
            panic!("SCHEDULER_NEXT_MIN: no policy `{name}` (reference: {reference})");
        };
        let mut b = Batches::new(&info, n);
        for _ in 0..BATCHES / 10 {
            b.run();
        }
        let mut per: Vec<f64> = (0..BATCHES)
            .map(|_| {
                let (t, k) = b.run();
                t.as_nanos() as f64 / k as f64
            })
            .collect();
        let median = isola_core::metrics::median_f64(&mut per).expect("batches");
        let label = if reference { "next_ref" } else { "next" };
        println!("{label}/{name}/{n}: min {:.1} ns, median {median:.1} ns", per[0],);
    }
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
                    resubmit(&mut s, e, now, &d);
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, next_only, cycle);

fn main() {
    match std::env::var("SCHEDULER_NEXT_MIN") {
        Ok(ids) => min_of_batches(&ids),
        Err(_) => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}
