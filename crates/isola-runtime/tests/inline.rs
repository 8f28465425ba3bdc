//! A worker engine's small tasks run on the dispatcher's thread while its
//! workers have nothing (`EngineConfig::with_inline_below`): each
//! completion says where it ran, and the rule keeps to its limits: larger
//! predictions, a busy worker and a limit of 0 send tasks to the worker;
//! a task that overruns 8 times the limit is stopped and run again on the
//! worker, while other tenants still run on the dispatcher; a task of one
//! chunk (asked only before it starts) that overruns stands, and its
//! tenant's next tasks go to the worker; an operator that cannot be
//! stopped never runs on the dispatcher.

use isola_core::{AffineCost, Slo, TenantId};
use isola_runtime::{Completion, EngineConfig, Mode, Runtime, RuntimeBuilder, DEFAULT_INLINE_BELOW};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// One engine of one worker, `queue_depth` 1, predicting `base_ns` +
/// `per_byte_ns` a byte for every operator; two tenants.
fn runtime(base_ns: f64, per_byte_ns: f64, inline_below: Option<u64>) -> Runtime {
    let mut b = RuntimeBuilder::new();
    let cost = Arc::new(AffineCost::new(base_ns, per_byte_ns).unwrap());
    let mut engine = EngineConfig::new("acc", &[], 1, cost);
    if let Some(ns) = inline_below {
        engine = engine.with_inline_below(ns);
    }
    b.engine(engine);
    b.tenant("a", Slo::weighted(1.0));
    b.tenant("b", Slo::weighted(1.0));
    b.mode(Mode::Isolated {
        policy: "sfq".into(),
        params: BTreeMap::new(),
    });
    b.start().unwrap()
}

fn run(rt: &Runtime, tenant: u32, op: &str, payload: Vec<u8>) -> Completion {
    rt.tenant(TenantId(tenant))
        .submit(op, &BTreeMap::new(), payload)
        .expect("accepted")
        .wait()
}

#[test]
fn small_tasks_run_on_the_dispatcher_with_their_own_results() {
    // 100 ns + 0.02 ns a byte: 64 B is predicted far below the default.
    let rt = runtime(100.0, 0.02, None);
    let crc = isola_ops::build_operator("crc32c", &BTreeMap::new()).unwrap();
    for i in 0..200u32 {
        let payload: Vec<u8> = i.to_le_bytes().repeat(16);
        let c = run(&rt, i % 2, "crc32c", payload.clone());
        // Its own payload's CRC, as the operator gives it run alone (the
        // operator is checked against published vectors in isola-ops).
        let alone = crc.run(&payload).unwrap();
        assert_eq!(c.result.expect("crc runs"), alone, "task {i}");
        assert!(c.on_dispatcher, "task {i} went to the worker");
        assert!(c.service_ns > 0, "timed as a worker's run is");
    }
    let stats = rt.stats();
    rt.shutdown();
    assert_eq!(stats.iter().map(|s| s.succeeded).sum::<u64>(), 200);
}

#[test]
fn larger_predictions_and_a_limit_of_zero_go_to_the_worker() {
    // 64 KiB at 1 ns a byte: 65.6 us predicted, over the default 2 us.
    const { assert!(DEFAULT_INLINE_BELOW < 65_000) };
    let rt = runtime(100.0, 1.0, None);
    let c = run(&rt, 0, "crc32c", vec![7; 65_536]);
    assert!(!c.on_dispatcher, "a 66 us prediction ran on the dispatcher");
    assert!(run(&rt, 0, "crc32c", vec![7; 64]).on_dispatcher);
    rt.shutdown();
    let rt = runtime(100.0, 0.02, Some(0));
    for _ in 0..20 {
        assert!(
            !run(&rt, 0, "crc32c", vec![1; 64]).on_dispatcher,
            "inline_below = 0"
        );
    }
    rt.shutdown();
}

/// Counts its runs: watched ones (on the dispatcher) and plain ones (on a
/// worker, with no budget to watch).
#[derive(Default)]
struct Runs {
    watched: AtomicUsize,
    plain: AtomicUsize,
}

/// Works 20 ms in steps of 10 us, asking its watch before each (a long
/// task of a stoppable operator, predicted small).
struct Paced(Arc<Runs>);

impl isola_ops::Operator for Paced {
    fn name(&self) -> &'static str {
        "paced"
    }
    fn run(&self, input: &[u8]) -> Result<Vec<u8>, isola_ops::OpError> {
        self.0.plain.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(20));
        Ok(input.to_vec())
    }
    fn run_watched(&self, input: &[u8], watch: &dyn isola_ops::Watch) -> Result<Vec<u8>, isola_ops::OpError> {
        self.0.watched.fetch_add(1, Ordering::SeqCst);
        for step in 0..2_000u64 {
            if watch.should_stop() {
                return Err(isola_ops::OpError::Stopped {
                    op: "paced",
                    done: step,
                    total: input.len() as u64,
                });
            }
            std::thread::sleep(std::time::Duration::from_micros(10));
        }
        Ok(input.to_vec())
    }
    fn stoppable(&self) -> bool {
        true
    }
}

/// Asks its watch once, before it starts, then works 1 ms (a task of one
/// chunk that takes far longer than predicted).
struct OneChunk;

impl isola_ops::Operator for OneChunk {
    fn name(&self) -> &'static str {
        "one-chunk"
    }
    fn run(&self, input: &[u8]) -> Result<Vec<u8>, isola_ops::OpError> {
        std::thread::sleep(std::time::Duration::from_millis(1));
        Ok(input.to_vec())
    }
    fn run_watched(&self, input: &[u8], watch: &dyn isola_ops::Watch) -> Result<Vec<u8>, isola_ops::OpError> {
        if watch.should_stop() {
            return Err(isola_ops::OpError::Stopped {
                op: "one-chunk",
                done: 0,
                total: input.len() as u64,
            });
        }
        self.run(input)
    }
    fn stoppable(&self) -> bool {
        true
    }
}

#[test]
fn a_task_past_the_limit_is_stopped_and_run_again_on_the_worker() {
    let rt = runtime(200.0, 0.0, Some(2_000));
    let runs = Arc::new(Runs::default());
    let c = rt
        .tenant(TenantId(0))
        .submit_operator(Arc::new(Paced(Arc::clone(&runs))), vec![4; 16])
        .expect("accepted")
        .wait();
    assert_eq!(c.result.expect("paced runs"), vec![4; 16]);
    // Started on the dispatcher (watched), stopped at 16 us, run whole on
    // the worker (plain): one completion.
    assert_eq!(
        runs.watched.load(Ordering::SeqCst),
        1,
        "it started on the dispatcher"
    );
    assert_eq!(
        runs.plain.load(Ordering::SeqCst),
        1,
        "and ran again on the worker"
    );
    assert!(!c.on_dispatcher);
    // Another tenant's small tasks still run on the dispatcher.
    assert!(run(&rt, 1, "crc32c", vec![5; 64]).on_dispatcher);
    rt.shutdown();
}

#[test]
fn tasks_of_one_chunk_over_the_limit_stand_and_twice_demote_their_tenant() {
    let rt = runtime(200.0, 0.0, Some(2_000));
    for run in 0..2 {
        let c = rt
            .tenant(TenantId(0))
            .submit_operator(Arc::new(OneChunk), vec![6; 16])
            .expect("accepted")
            .wait();
        // It could not be stopped: it ran to its end on the dispatcher.
        assert!(
            c.on_dispatcher && c.service_ns >= 1_000_000,
            "run {run}: {}",
            c.service_ns
        );
        assert_eq!(c.result.expect("one-chunk runs"), vec![6; 16]);
    }
    // Twice 1 ms against a 16 us limit: a's tasks go to the worker for
    // 10 ms; b's still run on the dispatcher.
    assert!(
        !run(&rt, 0, "crc32c", vec![5; 64]).on_dispatcher,
        "a was not demoted"
    );
    assert!(run(&rt, 1, "crc32c", vec![5; 64]).on_dispatcher);
    rt.shutdown();
}

/// Runs 30 ms, as one piece (it cannot be stopped): a task that holds the
/// worker.
struct Slow;

impl isola_ops::Operator for Slow {
    fn name(&self) -> &'static str {
        "slow"
    }
    fn run(&self, input: &[u8]) -> Result<Vec<u8>, isola_ops::OpError> {
        std::thread::sleep(std::time::Duration::from_millis(30));
        Ok(input.to_vec())
    }
}

#[test]
fn a_busy_worker_keeps_small_tasks_behind_it() {
    let rt = runtime(200.0, 0.0, None);
    let slow = rt
        .tenant(TenantId(0))
        .submit_operator(Arc::new(Slow), vec![1])
        .expect("accepted");
    std::thread::sleep(std::time::Duration::from_millis(5));
    // The worker holds a's task: b's small one takes the engine's second
    // slot (its queue) and waits there; it does not run beside it.
    let small = run(&rt, 1, "crc32c", vec![5; 64]);
    let slow = slow.wait();
    assert!(
        !slow.on_dispatcher,
        "an operator that cannot be stopped ran on the dispatcher"
    );
    assert!(!small.on_dispatcher, "a small task ran beside the busy worker");
    assert!(
        small.started_ns.is_some_and(|s| s >= slow.finished_ns),
        "b's task started while a's ran on the only worker"
    );
    // With the worker idle again, b runs on the dispatcher.
    assert!(run(&rt, 1, "crc32c", vec![5; 64]).on_dispatcher);
    rt.shutdown();
}

/// An operator of the tenant's own that cannot check a watch (it runs as
/// one piece) is never run on the dispatcher, however small its
/// prediction: nothing could stop it there.
#[test]
fn an_operator_that_cannot_be_stopped_goes_to_the_worker() {
    struct Echo;
    impl isola_ops::Operator for Echo {
        fn name(&self) -> &'static str {
            "echo"
        }
        fn run(&self, input: &[u8]) -> Result<Vec<u8>, isola_ops::OpError> {
            Ok(input.to_vec())
        }
    }
    assert!(!isola_ops::Operator::stoppable(&Echo));
    let rt = runtime(100.0, 0.0, None);
    for i in 0..20u8 {
        let c = rt
            .tenant(TenantId(0))
            .submit_operator(Arc::new(Echo), vec![i; 8])
            .expect("accepted")
            .wait();
        assert_eq!(c.result.expect("echo runs"), vec![i; 8]);
        assert!(!c.on_dispatcher);
    }
    rt.shutdown();
}
