//! No thread of the runtime dies alone (issue 14): a cost model, a policy
//! or an operator that misbehaves fails the tasks it concerns with a typed
//! error, and every other tenant's tasks complete normally.

use isola_core::policy::registry::PolicySetup;
use isola_core::policy::{HeadInfo, Params, Policy, PolicyContext, PolicyError, PolicyInfo};
use isola_core::{AffineCost, CostModel, EngineSelector, Nanos, Slo, TenantId};
use isola_runtime::{EngineConfig, Mode, RuntimeBuilder, SubmitError, TaskError};
use std::collections::BTreeMap;
use std::sync::Arc;

fn cost() -> Arc<AffineCost> {
    Arc::new(AffineCost::new(1_000.0, 0.5).unwrap())
}

fn isolated(policy: &str) -> Mode {
    Mode::Isolated {
        policy: policy.into(),
        params: BTreeMap::new(),
    }
}

/// A tenant's cost model that panics for tasks of 1,234 bytes, and for
/// every piece smaller than 8 KiB (the subtasks the core asks about on
/// the dispatcher thread).
#[derive(Debug)]
struct Panicky;

impl CostModel for Panicky {
    fn predict(&self, _op: &str, bytes: u64) -> Option<Nanos> {
        if bytes == 1_234 || bytes < 8_192 {
            panic!("a tenant's cost model gave up on {bytes} bytes");
        }
        Some(1_000 + bytes)
    }
}

#[test]
fn a_panicking_cost_model_fails_its_own_submission_and_nothing_else() {
    let mut b = RuntimeBuilder::new();
    // Always split: the careless tenant's subtasks are predicted on the
    // dispatcher thread, where its model panics.
    b.engine(
        EngineConfig::new("engine", &[], 1, cost())
            .with_split(4_096)
            .with_split_when(isola_runtime::SplitWhen::Always),
    );
    b.tenant("careless", Slo::default());
    b.tenant("bystander", Slo::default());
    b.mode(isolated("sfq"));
    let rt = b.start().unwrap();
    let careless = rt.tenant(TenantId(0)).with_cost(Arc::new(Panicky));
    let bystander = rt.tenant(TenantId(1));
    // On the tenant's own thread: a typed refusal.
    match careless.submit("crc32c", &BTreeMap::new(), vec![1u8; 1_234]) {
        Err(SubmitError::CostModelPanicked { message, .. }) => {
            assert!(message.contains("gave up"), "{message}")
        }
        other => panic!("expected CostModelPanicked, got {other:?}"),
    }
    // On the dispatcher thread (its subtasks' predictions panic): the task
    // still runs, split, and completes.
    let others: Vec<_> = (0..50)
        .map(|i| {
            bystander
                .submit("crc32c", &BTreeMap::new(), vec![i as u8; 20_000])
                .unwrap()
        })
        .collect();
    let big = careless
        .submit("crc32c", &BTreeMap::new(), vec![7u8; 40_000])
        .unwrap();
    assert!(big.wait().result.is_ok());
    for t in others {
        assert!(t.wait().result.is_ok());
    }
    rt.shutdown();
}

/// A policy that panics the first time it is asked to pick for a tenant
/// other than tenant 0.
#[derive(Debug, Default)]
struct Fragile {
    ready: Vec<bool>,
}

const FRAGILE: PolicyInfo = PolicyInfo {
    name: "fragile",
    aliases: &[],
    description: "Serves tenant 0; panics when another tenant is ready (a test of the runtime's guard).",
    source: "isola-runtime tests/faults.rs",
    work_conserving: true,
    params: &[],
    build: build_fragile,
};

fn build_fragile(_: &Params<'_>, setup: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(Fragile {
        ready: vec![false; setup.tenants.len()],
    }))
}

impl Policy for Fragile {
    fn on_ready(&mut self, _: Nanos, tenant: usize, _: &HeadInfo, _: &PolicyContext<'_>) {
        self.ready[tenant] = true;
    }

    fn pick(&mut self, _: Nanos, _: &PolicyContext<'_>) -> Option<usize> {
        if self.ready.iter().skip(1).any(|&r| r) {
            panic!("fragile policy meets a second tenant");
        }
        self.ready[0].then_some(0)
    }

    fn on_dispatch(
        &mut self,
        _: Nanos,
        tenant: usize,
        _: &HeadInfo,
        next: Option<&HeadInfo>,
        _: &PolicyContext<'_>,
    ) {
        self.ready[tenant] = next.is_some();
    }
}

#[test]
fn a_panicking_policy_takes_its_engine_out_of_service_and_no_other() {
    let mut b = RuntimeBuilder::new();
    b.register_policy(FRAGILE);
    b.engine(EngineConfig::new("fragile-engine", &["crc32c"], 1, cost()));
    b.engine(EngineConfig::new("sound-engine", &["sha256"], 1, cost()));
    b.tenant("a", Slo::default());
    b.tenant("b", Slo::default());
    b.mode(isolated("sfq"));
    b.engine_policy(
        EngineSelector::Named("fragile-engine".into()),
        "fragile",
        BTreeMap::new(),
    );
    let rt = b.start().unwrap();
    let (a, bt) = (rt.tenant(TenantId(0)), rt.tenant(TenantId(1)));
    let hashes: Vec<_> = (0..20)
        .map(|i| {
            bt.submit("sha256", &BTreeMap::new(), vec![i as u8; 10_000])
                .unwrap()
        })
        .collect();
    let first = a.submit("crc32c", &BTreeMap::new(), vec![1u8; 1_000]).unwrap();
    assert!(first.wait().result.is_ok());
    // Tenant b on the fragile engine: its policy panics. Every task there
    // ends, with a typed error; later ones too, at once.
    let doomed: Vec<_> = (0..5)
        .map(|_| bt.submit("crc32c", &BTreeMap::new(), vec![2u8; 1_000]).unwrap())
        .collect();
    for t in doomed {
        match t.wait().result {
            Err(TaskError::CoreFailed { engine, message }) => {
                assert_eq!(engine, "fragile-engine");
                assert!(message.contains("second tenant"), "{message}");
            }
            other => panic!("expected CoreFailed, got {other:?}"),
        }
    }
    let later = a.submit("crc32c", &BTreeMap::new(), vec![3u8; 1_000]).unwrap();
    assert!(matches!(later.wait().result, Err(TaskError::CoreFailed { .. })));
    // The other engine never noticed.
    for t in hashes {
        assert!(t.wait().result.is_ok());
    }
    let more = bt.submit("sha256", &BTreeMap::new(), vec![9u8; 10_000]).unwrap();
    assert!(more.wait().result.is_ok());
    rt.shutdown();
}

#[test]
fn an_operator_that_would_allocate_past_its_limit_fails_alone() {
    let mut b = RuntimeBuilder::new();
    b.engine(EngineConfig::new("engine", &[], 1, cost()));
    b.tenant("bomber", Slo::default());
    b.tenant("bystander", Slo::default());
    b.mode(isolated("sfq"));
    let rt = b.start().unwrap();
    // 4 MiB of zeros compress to a few hundred bytes; decoding them under a
    // 1 MiB output limit stops at the limit.
    let bomb = isola_ops::build_operator("zstd", &BTreeMap::new())
        .unwrap()
        .run(&vec![0u8; 4 << 20])
        .unwrap();
    let mut limit = BTreeMap::new();
    limit.insert("max_output".to_string(), "1MiB".to_string());
    let exploded = rt.tenant(TenantId(0)).submit("unzstd", &limit, bomb).unwrap();
    let fine = rt
        .tenant(TenantId(1))
        .submit("sha256", &BTreeMap::new(), vec![5u8; 4_096])
        .unwrap();
    match exploded.wait().result {
        Err(TaskError::Operator(isola_ops::OpError::Limit { limit, .. })) => assert_eq!(limit, "max_output"),
        other => panic!("expected a max_output limit, got {other:?}"),
    }
    assert!(fine.wait().result.is_ok());
    rt.shutdown();
}

/// An operator that runs until released (a runaway, as far as shutdown
/// can tell).
struct Runaway(
    Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
    std::sync::Mutex<std::sync::mpsc::Sender<()>>,
);

impl isola_ops::Operator for Runaway {
    fn name(&self) -> &'static str {
        "runaway"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, isola_ops::OpError> {
        self.1.lock().unwrap().send(()).unwrap();
        let (lock, cv) = &*self.0;
        let mut open = lock.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
        Ok(input.to_vec())
    }
}

#[test]
fn shutdown_has_a_bound_and_abandons_what_still_runs() {
    let mut b = RuntimeBuilder::new();
    b.engine(EngineConfig::new("engine", &[], 1, cost()));
    b.tenant("a", Slo::default());
    b.mode(isolated("sfq"));
    let rt = b.start().unwrap();
    let gate = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let (started_tx, started) = std::sync::mpsc::channel();
    let runaway = Runaway(Arc::clone(&gate), std::sync::Mutex::new(started_tx));
    let stuck = rt
        .tenant(TenantId(0))
        .submit_operator(Arc::new(runaway), vec![1])
        .unwrap();
    started.recv().unwrap();
    let queued = rt
        .tenant(TenantId(0))
        .submit("crc32c", &BTreeMap::new(), vec![2u8; 64])
        .unwrap();
    // The runaway holds the only worker: shutdown cancels what is queued
    // and, after the grace period, abandons what runs.
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        rt.shutdown_within(std::time::Duration::from_millis(100));
        done_tx.send(()).unwrap();
    });
    // Generous: the bound is 100 ms; this only has to tell a bound from none.
    assert!(
        done_rx.recv_timeout(std::time::Duration::from_secs(30)).is_ok(),
        "shutdown did not return"
    );
    let r = stuck.wait().result;
    assert!(matches!(r, Err(TaskError::Abandoned { grace_ms: 100 })), "{r:?}");
    // Queued behind it (in the core, or on the worker's queue): it ends too.
    let r = queued.wait().result;
    assert!(
        matches!(r, Err(TaskError::Cancelled | TaskError::Abandoned { .. })),
        "{r:?}"
    );
    // Released late, the runaway's own completion is not sent a second time
    // (the ticket was consumed; nothing panics).
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
}
