//! The runtime makes no scheduling decision of its own: replaying the calls
//! its dispatcher made on the isolation core (submissions, completions and
//! their times, as recorded) into a scheduler built from the same
//! configuration gives the very same dispatches in the same order: which
//! task, whole or which subtask, at which call. Splitting (ASTRAEA's
//! contended rule), ordered subtasks (a hash chain), caps and the policy
//! are all the core's.

use isola_core::{
    AffineCost, DispatchId, OpSpec, PlannerRef, Slo, Subtask, SubtaskPlanner, Task, TaskId, TenantId,
};
use isola_runtime::{CoreCall, EngineConfig, Mode, RuntimeBuilder, SplitWhen};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Two tenants on one engine (2 workers, queue depth 1) that splits tasks
/// over 8 KiB into subtasks while contended.
fn builder(policy: &str) -> RuntimeBuilder {
    let mut b = RuntimeBuilder::new();
    let cost = Arc::new(AffineCost::new(1_000.0, 0.5).unwrap());
    b.engine(
        EngineConfig::new("engine", &[], 2, cost)
            .with_split(8 * 1024)
            .with_split_when(SplitWhen::Contended { window: 2_000_000 }),
    );
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
        let mut b = builder(policy);
        b.record_core_calls(true);
        let rt = b.start().unwrap();
        let (hashes, checksums) = (rt.tenant(TenantId(0)), rt.tenant(TenantId(1)));
        let mut ordered = HashMap::new();
        let mut tickets = Vec::new();
        std::thread::scope(|s| {
            let a = s.spawn(|| {
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
        let mut core = builder(policy).scheduler().unwrap();
        let mut in_service: HashMap<(TaskId, Option<u32>), DispatchId> = HashMap::new();
        let (mut split, mut whole, mut nexts) = (0, 0, 0);
        for call in log {
            match call {
                CoreCall::Submit {
                    now,
                    task,
                    tenant,
                    engine,
                    op,
                    bytes,
                    arrival,
                    predicted,
                    accepted,
                } => {
                    assert_eq!(op, if ordered[&task] { "sha256" } else { "crc32c" });
                    let t = Task {
                        id: task,
                        tenant,
                        engine,
                        op: OpSpec::named(op.as_str()),
                        bytes,
                        arrival,
                        deadline: None,
                        predicted_cost: Some(predicted),
                        planner: Some(planners[ordered[&task] as usize].clone()),
                    };
                    assert_eq!(
                        core.submit(now, t).is_ok(),
                        accepted,
                        "{policy}: submit of {task:?}"
                    );
                }
                CoreCall::Next {
                    now,
                    engine,
                    dispatched,
                } => {
                    nexts += 1;
                    let d = core.next(now, engine);
                    let got = d.as_ref().map(|d| (d.task.id, d.subtask.map(|s| s.index)));
                    assert_eq!(got, dispatched, "{policy}: call {nexts} on the core at {now} ns");
                    if let Some(d) = d {
                        match d.subtask {
                            Some(_) => split += 1,
                            None => whole += 1,
                        }
                        in_service.insert(got.unwrap(), d.id);
                    }
                }
                CoreCall::Complete {
                    now,
                    task,
                    subtask,
                    measured,
                } => {
                    let id = in_service.remove(&(task, subtask)).expect("dispatched before");
                    core.complete(now, id, measured).unwrap();
                }
                CoreCall::Close { .. } => {
                    core.close();
                }
            }
        }
        assert!(in_service.is_empty(), "{policy}: every dispatch completed");
        assert!(
            split > 0 && whole > 0,
            "{policy}: {split} subtasks, {whole} whole tasks"
        );
    }
}
