//! A runtime whose last reference goes with a task's reply is dropped on
//! one of its own threads: it must shut down there without waiting for
//! that very thread. (isolad's live packet runs left a dispatcher waiting
//! for its own shutdown acknowledgement, forever, with its workers.)
//!
//! Alone in its test binary: it counts the process's runtime threads.

use isola_core::{AffineCost, Slo, TenantId};
use isola_runtime::{Completion, EngineConfig, OnCompletion, Runtime, RuntimeBuilder};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Holds a runtime; says when it has let it go (after the drop returned).
struct Holder {
    runtime: Option<Arc<Runtime>>,
    released: crossbeam_channel::Sender<()>,
}

impl Drop for Holder {
    fn drop(&mut self) {
        drop(self.runtime.take());
        self.released.send(()).ok();
    }
}

/// The names of this process's threads that are a runtime's own.
fn runtime_threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .map(|name| name.trim().to_string())
                .filter(|name| name.starts_with("isola-"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_runtime_dropped_by_its_own_thread_shuts_down_without_waiting_for_it() {
    let mut b = RuntimeBuilder::new();
    b.engine(EngineConfig::new(
        "engine",
        &[],
        1,
        Arc::new(AffineCost::new(1_000.0, 0.5).unwrap()),
    ));
    b.tenant("t", Slo::default());
    let rt = Arc::new(b.start().unwrap());
    assert!(
        !runtime_threads().is_empty(),
        "the runtime's threads are named isola-*"
    );
    let (released_tx, released) = crossbeam_channel::bounded(1);
    let (dropped_tx, dropped) = crossbeam_channel::bounded::<()>(1);
    let holder = Mutex::new(Some(Holder {
        runtime: Some(Arc::clone(&rt)),
        released: released_tx,
    }));
    let (done_tx, done) = crossbeam_channel::bounded(1);
    // The reply holds the runtime; it waits until the test has dropped its
    // own reference, so that the reply's is the last one, let go on the
    // runtime's thread that completes the task.
    let on_done: OnCompletion = Arc::new(move |c: Completion| {
        dropped.recv_timeout(Duration::from_secs(10)).ok();
        done_tx.send(c.result.is_ok()).ok();
        drop(holder.lock().unwrap().take());
    });
    rt.tenant(TenantId(0))
        .submit_calling("crc32c", &BTreeMap::new(), vec![7u8; 4_096], on_done)
        .unwrap();
    drop(rt);
    dropped_tx.send(()).unwrap();
    assert_eq!(
        done.recv_timeout(Duration::from_secs(10)),
        Ok(true),
        "the task completed"
    );
    // The drop returns at once on the runtime's thread (it waited for
    // itself before: the grace period, or forever on the dispatcher).
    let waited = Instant::now();
    assert_eq!(
        released.recv_timeout(Duration::from_secs(5)),
        Ok(()),
        "the drop returned"
    );
    assert!(
        waited.elapsed() < Duration::from_secs(2),
        "took {:?}",
        waited.elapsed()
    );
    // And the runtime's threads end on their own.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !runtime_threads().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        runtime_threads(),
        Vec::<String>::new(),
        "every runtime thread ended"
    );
}
