//! Simulator speed: events per second of wall time on one core.
//!
//! * `mm1`: an M/M/1 queue at rho = 0.8 (arrivals, service completions).
//! * `osmosis/<policy>/<tenants>`: the OSMOSIS PU-contention setup scaled to
//!   N tenants (half Victims, half 2x-cost Congestors) on 32 PUs, offered
//!   enough packets to saturate them, so every event goes through the
//!   scheduler with N backlogged channels
//!   ([`isola_sim::speed::contention_scenario`]).
//!
//! Run: `cargo bench -p isola-sim --bench events`. Every registered policy
//! at 128 and 1,024 tenants, as a table: `isola bench sim`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use isola_model::Scenario;
use isola_sim::run_policy;
use std::time::{Duration, Instant};

fn mm1() -> Scenario {
    let text = r#"
        [run]
        policies = ["fcfs"]
        window = "10ms"
        [[engine]]
        name = "server"
        kind = "accelerator"
        service = { dist = "exponential", mean = "1us" }
        [[tenant]]
        name = "poisson"
        queue_cap = 1000000
        [tenant.workload]
        engine = "server"
        arrival = { poisson = "800k/s" }
        count = 200000
    "#;
    Scenario::parse(text, "mm1.toml").expect("valid")
}

fn osmosis(tenants: usize, policy: &str) -> Scenario {
    isola_sim::speed::contention_scenario(tenants, policy).expect("valid")
}

fn bench_run(c: &mut Criterion, group: &str, id: BenchmarkId, s: &Scenario) {
    let p = &s.run.policies[0];
    let events = run_policy(s, p, 1, None, None).expect("runs").events;
    let mut g = c.benchmark_group(group);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(events));
    g.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                std::hint::black_box(run_policy(s, p, 1, None, None).expect("runs"));
            }
            start.elapsed()
        })
    });
    g.finish();
}

fn bench(c: &mut Criterion) {
    bench_run(c, "events", BenchmarkId::new("mm1", 1), &mm1());
    for policy in ["fcfs", "sfq", "wlbvt"] {
        for n in [2, 8, 32, 128] {
            bench_run(
                c,
                "events",
                BenchmarkId::new(format!("osmosis/{policy}"), n),
                &osmosis(n, policy),
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
