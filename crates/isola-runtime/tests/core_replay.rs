//! The runtime makes no scheduling decision of its own: replaying the calls
//! its dispatcher made on the isolation core (submissions, completions and
//! their times, as recorded) into a scheduler built from the same
//! configuration gives the very same dispatches in the same order: which
//! task, whole or which subtask, at which call. Splitting (ASTRAEA's
//! contended rule), ordered subtasks (a hash chain), caps and the policy
//! are all the core's.

use isola_core::{AffineCost, PlannerRef, Slo, Subtask, SubtaskPlanner, Task, TaskId, TenantId};
use isola_runtime::{CoreCall, EngineConfig, Mode, RuntimeBuilder, SplitWhen};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Where the engine's work runs.
#[derive(Clone, Copy, Debug)]
enum Runs {
    /// On 2 workers of its own, with a queue depth of 1.
    OnWorkers,
    /// On the dispatcher's thread (`EngineConfig::on_dispatcher`).
    OnDispatcher,
}

/// Two tenants on one engine that splits tasks over 8 KiB into subtasks
/// while contended.
fn builder(policy: &str, runs: Runs) -> RuntimeBuilder {
    let mut b = RuntimeBuilder::new();
    let cost = Arc::new(AffineCost::new(1_000.0, 0.5).unwrap());
    let engine = EngineConfig::new("engine", &[], 2, cost)
        .with_split(8 * 1024)
        // A window long enough that the two tenants overlap on a loaded
        // host too (with 2 ms, an engine on the dispatcher could run every
        // hash whole before the first checksum arrived).
        .with_split_when(SplitWhen::Contended { window: 50_000_000 });
    b.engine(match runs {
        Runs::OnWorkers => engine,
        Runs::OnDispatcher => engine.on_dispatcher(),
    });
    b.tenant("hashes", Slo::weighted(4.0));
    b.tenant("checksums", Slo::weighted(1.0));
    b.mode(Mode::Isolated {
        policy: policy.into(),
        params: BTreeMap::new(),
    });
    b
}

/// The operators' own plans: equal ranges, ordered for hashes.
struct Ranges(bool);
impl SubtaskPlanner for Ranges {
    fn plan(&self, task: &Task, split: u64) -> Option<Vec<Subtask>> {
        Some(Subtask::ranges(task.id, task.bytes, split, self.0))
    }
}

#[test]
fn replaying_the_core_calls_gives_the_runtimes_dispatches() {
    for policy in ["sfq", "drr", "fcfs"] {
        replay_matches(policy, Runs::OnWorkers);
    }
}

/// An engine run on the dispatcher's own thread is still served as the
/// core picks, one piece at a time (its one place), and has no thread of
/// its own.
#[test]
fn an_engine_run_on_the_dispatcher_runs_what_the_core_picks_in_its_order() {
    for policy in ["sfq", "drr", "fcfs"] {
        replay_matches(policy, Runs::OnDispatcher);
    }
    let rt = builder("sfq", Runs::OnDispatcher).start().unwrap();
    let names: Vec<String> = rt.threads().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["isola-dispatcher", "isola-delivery"], "no worker thread");
    rt.shutdown();
}

/// Runs two tenants' tasks (split hashes, whole checksums) under `policy`,
/// then replays the recorded core calls into a scheduler built from the
/// same configuration: the same dispatches, every task once.
fn replay_matches(policy: &str, runs: Runs) {
    {
        let mut b = builder(policy, runs);
        b.record_core_calls(true);
        let rt = b.start().unwrap();
        let (hashes, checksums) = (rt.tenant(TenantId(0)), rt.tenant(TenantId(1)));
        let mut ordered = HashMap::new();
        let mut tickets = Vec::new();
        // Both tenants start submitting together, so that they overlap on
        // a loaded host too (the hashes split only while contended).
        let start = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            let a = s.spawn(|| {
                start.wait();
                (0..40u64)
                    .map(|i| {
                        hashes.submit(
                            "sha256",
                            &BTreeMap::new(),
                            vec![i as u8; 30_000 + 1_000 * i as usize],
                        )
                    })
                    .collect::<Result<Vec<_>, _>>()
            });
            let b = s.spawn(|| {
                start.wait();
                (0..80u64)
                    .map(|i| {
                        checksums.submit(
                            "crc32c",
                            &BTreeMap::new(),
                            vec![i as u8; 2_000 + 900 * i as usize],
                        )
                    })
                    .collect::<Result<Vec<_>, _>>()
            });
            for t in a.join().unwrap().unwrap() {
                ordered.insert(TaskId(t.id()), true);
                tickets.push(t);
            }
            for t in b.join().unwrap().unwrap() {
                ordered.insert(TaskId(t.id()), false);
                tickets.push(t);
            }
        });
        for t in tickets {
            assert!(t.wait().result.is_ok());
        }
        let log = rt.core_log().expect("recorded");
        rt.shutdown();
        let log = log.calls();

        let planners = [
            PlannerRef(Arc::new(Ranges(false))),
            PlannerRef(Arc::new(Ranges(true))),
        ];
        let mut core = builder(policy, runs).scheduler().unwrap();
        // The runtime's planner is the operator's; sha256 plans ordered ranges.
        let planner = |op: &str| Some(planners[(op == "sha256") as usize].clone());
        let done = isola_runtime::core_log::replay(&log, &mut core, planner)
            .unwrap_or_else(|e| panic!("{policy} {runs:?}: {e}"));
        let (split, whole) = (done.subtasks, done.whole);
        // The log names each task's operator as it was submitted.
        for call in &log {
            if let CoreCall::Submit { task, op, .. } = call {
                assert_eq!(
                    op == "sha256",
                    ordered[task],
                    "{policy} {runs:?}: {task:?} is {op}"
                );
            }
        }
        assert!(
            split > 0 && whole > 0,
            "{policy} {runs:?}: {split} subtasks, {whole} whole tasks"
        );
    }
}
