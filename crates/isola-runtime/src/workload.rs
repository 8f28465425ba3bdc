//! Workload drivers for live experiments: closed-loop tenants, each on its
//! own thread, as ASTRAEA's experiment runs its applications.

use crate::host::ThreadTimes;
use crate::job::{Completion, SubmitError};
use crate::runtime::Runtime;
use isola_core::TenantId;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A tenant that keeps `window` tasks outstanding until it has submitted
/// `tasks` of them (closed loop): a new task as soon as one completes.
#[derive(Debug, Clone)]
pub struct ClosedLoop {
    /// Who submits.
    pub tenant: TenantId,
    /// Operator name.
    pub op: String,
    /// Its parameters.
    pub params: BTreeMap<String, String>,
    /// The input of every task (shared, not copied).
    pub payload: Arc<Vec<u8>>,
    /// How many tasks in all.
    pub tasks: usize,
    /// How many outstanding at a time (at least 1).
    pub window: usize,
}

/// What one closed loop did.
#[derive(Debug, Clone)]
pub struct LoopRun {
    /// Its completions in the order they came, outputs freed as they
    /// arrived (`Completion::without_output`).
    pub completions: Vec<Completion>,
    /// What the host did to its thread while it ran (where the kernel
    /// says).
    pub thread: Option<ThreadTimes>,
}

/// Runs every loop at once, each on its own thread, until all their tasks
/// completed; returns what each loop did, in the order of `loops`.
pub fn run_closed_loops(rt: &Runtime, loops: &[ClosedLoop]) -> Result<Vec<LoopRun>, SubmitError> {
    std::thread::scope(|scope| {
        let threads: Vec<_> = loops
            .iter()
            .map(|l| {
                let handle = rt.tenant(l.tenant);
                scope.spawn(move || -> Result<LoopRun, SubmitError> {
                    let before = ThreadTimes::current();
                    let (tx, rx) = crossbeam_channel::unbounded();
                    let mut submitted = 0;
                    let mut done = Vec::with_capacity(l.tasks);
                    while submitted < l.tasks.min(l.window.max(1)) {
                        handle.submit_to(&l.op, &l.params, Arc::clone(&l.payload), &tx)?;
                        submitted += 1;
                    }
                    while done.len() < submitted {
                        // Every accepted task completes exactly once.
                        let c = rx.recv().map_err(|_| SubmitError::ShutDown)?;
                        done.push(c.without_output());
                        if submitted < l.tasks {
                            handle.submit_to(&l.op, &l.params, Arc::clone(&l.payload), &tx)?;
                            submitted += 1;
                        }
                    }
                    let thread = ThreadTimes::current().zip(before).map(|(a, b)| a.since(&b));
                    Ok(LoopRun {
                        completions: done,
                        thread,
                    })
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().unwrap_or(Err(SubmitError::ShutDown)))
            .collect()
    })
}
