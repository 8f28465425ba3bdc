//! What a small task costs the runtime with and without batching
//! ([`isola_core::BatchRule`]): one tenant hands the runtime 1,024 64-byte
//! `crc32c` tasks at once (one submission message) and waits for all of
//! them; the engine runs on a worker thread (one hand-off and, when idle,
//! one wake-up a dispatch) or on the dispatcher's own thread. Criterion
//! reports tasks per second; the time per task is its inverse.
//!
//! Run: `cargo bench -p isola-runtime --bench dispatch_batch`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use isola_core::{AffineCost, BatchRule, Slo, TenantId};
use isola_runtime::{EngineConfig, Mode, OnCompletion, RuntimeBuilder};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Tasks handed over at once.
const TASKS: usize = 1024;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("dispatch_batch");
    g.sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(TASKS as u64));
    for on_dispatcher in [false, true] {
        for batch in [
            None,
            BatchRule::new(16, 1 << 20, 0),
            BatchRule::new(64, 1 << 20, 0),
        ] {
            let mut b = RuntimeBuilder::new();
            let cost = Arc::new(AffineCost::new(100.0, 0.02).unwrap());
            let engine = EngineConfig::new("crc", &["crc32c"], 1, cost)
                .with_queue_depth(1)
                .with_batch(batch);
            b.engine(if on_dispatcher {
                engine.on_dispatcher()
            } else {
                engine
            });
            let mut slo = Slo::weighted(1.0);
            slo.queue_cap = 2 * TASKS;
            b.tenant("a", slo);
            b.mode(Mode::Isolated {
                policy: "sfq".into(),
                params: BTreeMap::new(),
            });
            let rt = b.start().unwrap();
            let handle = rt.tenant(TenantId(0));
            let op: Arc<dyn isola_ops::Operator> =
                Arc::from(isola_ops::build_operator("crc32c", &BTreeMap::new()).unwrap());
            let payload = Arc::new(vec![7u8; 64]);
            let (tx, rx) = crossbeam_channel::unbounded();
            let on_done: OnCompletion = Arc::new(move |c| {
                let _ = tx.send(c.result.is_ok());
            });
            let place = if on_dispatcher { "on-dispatcher" } else { "worker" };
            let rule = batch.map_or("one-a-dispatch".to_string(), |r| format!("batch-{}", r.tasks));
            g.bench_function(format!("crc32c-64B/{place}/{rule}"), |bench| {
                bench.iter_custom(|iters| {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let tasks =
                            (0..TASKS).map(|_| (Arc::clone(&op), Arc::clone(&payload), Arc::clone(&on_done)));
                        let ids = handle.submit_batch_calling(tasks);
                        assert!(ids.iter().all(Result::is_ok));
                        for _ in 0..TASKS {
                            assert!(rx.recv().expect("every task completes"));
                        }
                    }
                    start.elapsed()
                })
            });
            rt.shutdown();
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
