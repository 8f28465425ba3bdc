//! `TenantHandle::submit_batch_calling`: a batch is one message to the
//! dispatcher, yet the core sees every task of it on its own (its channel
//! cap counts each), and every task accepted ends in exactly one call of
//! its own callback; refused ones are said so at once and never called.

use isola_core::{AffineCost, RejectReason, Slo, TenantId};
use isola_ops::{build_operator, Operator};
use isola_runtime::{Completion, EngineConfig, Mode, OnCompletion, RuntimeBuilder, SubmitError, TaskError};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn runtime(ops: &[&str], slo: Slo) -> isola_runtime::Runtime {
    let mut b = RuntimeBuilder::new();
    let cost = Arc::new(AffineCost::new(1_000.0, 0.5).unwrap());
    b.engine(EngineConfig::new("engine", ops, 1, cost));
    b.tenant("a", slo);
    b.mode(Mode::Isolated {
        policy: "wlbvt".into(),
        params: BTreeMap::new(),
    });
    b.start().unwrap()
}

fn op(name: &str) -> Arc<dyn Operator> {
    Arc::from(build_operator(name, &BTreeMap::new()).unwrap())
}

/// Every completion each callback of a batch was given, by batch index.
type Seen = Arc<Mutex<Vec<Vec<Completion>>>>;

/// Callbacks that keep every completion they are given, by batch index.
fn collector(n: usize) -> (Vec<OnCompletion>, Seen) {
    let seen = Arc::new(Mutex::new(vec![Vec::new(); n]));
    let calls = (0..n)
        .map(|i| {
            let seen = Arc::clone(&seen);
            Arc::new(move |c: Completion| seen.lock().unwrap()[i].push(c)) as OnCompletion
        })
        .collect();
    (calls, seen)
}

fn wait_for(seen: &Mutex<Vec<Vec<Completion>>>, calls: usize) {
    let start = Instant::now();
    while seen.lock().unwrap().iter().map(Vec::len).sum::<usize>() < calls {
        assert!(start.elapsed() < Duration::from_secs(10), "completions missing");
        std::thread::sleep(Duration::from_millis(2));
    }
    // Time for a second, wrong, call of any callback to show.
    std::thread::sleep(Duration::from_millis(50));
}

#[test]
fn every_task_of_a_batch_completes_once_with_its_own_output() {
    let rt = runtime(&[], Slo::default());
    let crc = op("crc32c");
    let n = 50;
    let (calls, seen) = collector(n);
    let tasks = calls
        .into_iter()
        .map(|on_done| (Arc::clone(&crc), Arc::new(b"123456789".to_vec()), on_done));
    let ids = rt.tenant(TenantId(0)).submit_batch_calling(tasks);
    assert_eq!(ids.len(), n);
    wait_for(&seen, n);
    let seen = seen.lock().unwrap();
    for (i, (id, got)) in ids.iter().zip(seen.iter()).enumerate() {
        assert_eq!(got.len(), 1, "task {i} completed {} times", got.len());
        let c = &got[0];
        assert_eq!(Ok(c.task), *id);
        // CRC-32C of "123456789": the published check value.
        assert_eq!(c.result, Ok(0xE306_9283u32.to_be_bytes().to_vec()));
    }
    let stats = rt.shutdown();
    assert_eq!((stats[0].submitted, stats[0].succeeded), (n as u64, n as u64));
}

#[test]
fn the_core_judges_each_task_of_a_batch_on_its_own() {
    // A channel of 3: the batch reaches the core whole before anything of
    // it is dispatched, so its first three tasks are taken and the others
    // refused by the core, each with its own typed completion.
    let rt = runtime(
        &[],
        Slo {
            queue_cap: 3,
            ..Slo::default()
        },
    );
    let crc = op("crc32c");
    let (calls, seen) = collector(8);
    let tasks = calls
        .into_iter()
        .map(|on_done| (Arc::clone(&crc), Arc::new(vec![7u8; 64]), on_done));
    let ids = rt.tenant(TenantId(0)).submit_batch_calling(tasks);
    assert!(ids.iter().all(Result::is_ok));
    wait_for(&seen, 8);
    let outcomes: Vec<bool> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|got| {
            assert_eq!(got.len(), 1);
            match &got[0].result {
                Ok(_) => true,
                Err(TaskError::Rejected(RejectReason::ChannelFull { cap, .. })) => {
                    assert_eq!(*cap, 3);
                    false
                }
                other => panic!("{other:?}"),
            }
        })
        .collect();
    assert_eq!(outcomes, [true, true, true, false, false, false, false, false]);
}

#[test]
fn refused_tasks_are_said_so_and_never_called() {
    // The engine serves crc32c only: a sha256 task has no engine.
    let rt = runtime(&["crc32c"], Slo::default());
    let (calls, seen) = collector(3);
    let ops = [op("crc32c"), op("sha256"), op("crc32c")];
    let tasks = ops
        .into_iter()
        .zip(calls)
        .map(|(o, on_done)| (o, Arc::new(b"abc".to_vec()), on_done));
    let handle = rt.tenant(TenantId(0));
    let ids = handle.submit_batch_calling(tasks);
    assert!(ids[0].is_ok() && ids[2].is_ok());
    assert!(
        matches!(&ids[1], Err(SubmitError::NoEngine(o)) if o == "sha256"),
        "{ids:?}"
    );
    wait_for(&seen, 2);
    let counts: Vec<usize> = seen.lock().unwrap().iter().map(Vec::len).collect();
    assert_eq!(counts, [1, 0, 1]);
    // After shutdown, a batch is refused whole.
    rt.shutdown();
    let (calls, seen) = collector(2);
    let ids = handle.submit_batch_calling(calls.into_iter().map(|c| (op("crc32c"), Arc::new(vec![1]), c)));
    assert_eq!(ids, [Err(SubmitError::ShutDown), Err(SubmitError::ShutDown)]);
    std::thread::sleep(Duration::from_millis(20));
    assert!(seen.lock().unwrap().iter().all(Vec::is_empty));
}
