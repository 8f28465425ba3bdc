//! Submit-to-completion cost of the runtime with nothing else running: a
//! 64-byte `crc32c` task (the operator itself takes ~50 ns), natively and
//! through the isolation core, on a worker thread and on the dispatcher's
//! own thread (`EngineConfig::on_dispatcher`: one hand-off less each way).
//! Goals: under 5 us at the median (issue 5); 3 us (issue 17).
//!
//! Run: `cargo bench -p isola-runtime --bench dispatch`

use criterion::{criterion_group, criterion_main, Criterion};
use isola_core::{AffineCost, Slo, TenantId};
use isola_runtime::{EngineConfig, Mode, RuntimeBuilder};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("dispatch");
    g.sample_size(50)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let sfq = || Mode::Isolated {
        policy: "sfq".into(),
        params: BTreeMap::new(),
    };
    // (label, mode, engine run on the dispatcher)
    let modes = [
        ("native", Mode::Native, false),
        ("isolated-sfq", sfq(), false),
        ("isolated-sfq-on-dispatcher", sfq(), true),
    ];
    for (label, mode, on_dispatcher) in modes {
        let mut b = RuntimeBuilder::new();
        let engine = EngineConfig::new(
            "crc",
            &["crc32c"],
            1,
            Arc::new(AffineCost::new(100.0, 0.02).unwrap()),
        );
        b.engine(if on_dispatcher {
            engine.on_dispatcher()
        } else {
            engine
        });
        b.tenant("a", Slo::default());
        b.tenant("b", Slo::default());
        b.mode(mode);
        let rt = b.start().unwrap();
        let handle = rt.tenant(TenantId(0));
        let payload = Arc::new(vec![7u8; 64]);
        let params = BTreeMap::new();
        g.bench_function(format!("crc32c-64B-round-trip/{label}"), |bench| {
            bench.iter(|| {
                let c = handle
                    .submit("crc32c", &params, Arc::clone(&payload))
                    .unwrap()
                    .wait();
                assert!(c.result.is_ok());
            })
        });
        // Criterion reports means of batches; the goal is on the median of
        // single round trips, so measure those too.
        let mut rounds: Vec<u128> = (0..20_000)
            .map(|_| {
                let t = std::time::Instant::now();
                let c = handle
                    .submit("crc32c", &params, Arc::clone(&payload))
                    .unwrap()
                    .wait();
                assert!(c.result.is_ok());
                t.elapsed().as_nanos()
            })
            .collect();
        rounds.sort_unstable();
        let q = |f: f64| rounds[((rounds.len() as f64 * f) as usize).min(rounds.len() - 1)] as f64 / 1e3;
        println!(
            "dispatch/crc32c-64B-round-trip/{label}: p50 {:.2} us, p90 {:.2} us, p99 {:.2} us (20,000 single round trips)",
            q(0.5),
            q(0.9),
            q(0.99)
        );
        rt.shutdown();
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
