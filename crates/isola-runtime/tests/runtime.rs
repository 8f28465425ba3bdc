//! The live runtime's guarantees: every submitted task ends in exactly one
//! completion, with the operator's one-shot output (split or not) or a typed
//! error; operator failures and panics fail only their task; a full queue
//! is refused by the core as a typed completion; shutdown cancels what is queued; over-budget tasks are
//! flagged.

use isola_core::{AffineCost, RejectReason, Slo, TenantId};
use isola_ops::{build_operator, sample_params, text_payload, valid_input, OpError, Operator};
use isola_runtime::{Completion, EngineConfig, Mode, RuntimeBuilder, SplitWhen, SubmitError, TaskError};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn cost() -> Arc<AffineCost> {
    Arc::new(AffineCost::new(1_000.0, 0.5).unwrap())
}

fn isolated(policy: &str) -> Mode {
    Mode::Isolated {
        policy: policy.into(),
        params: BTreeMap::new(),
    }
}

/// One engine serving everything, two tenants.
fn runtime(mode: Mode, workers: usize, split: Option<u64>, slo: Slo) -> isola_runtime::Runtime {
    let mut b = RuntimeBuilder::new();
    let mut engine = EngineConfig::new("engine", &[], workers, cost()).with_split_when(SplitWhen::Always);
    engine.split_bytes = split;
    b.engine(engine);
    b.tenant("a", slo.clone());
    b.tenant("b", slo);
    b.mode(mode);
    b.start().unwrap()
}

/// An operator that blocks until released, then echoes its input.
struct Gate {
    open: Arc<(Mutex<bool>, std::sync::Condvar)>,
}

impl Gate {
    fn new() -> (Arc<Gate>, Arc<(Mutex<bool>, std::sync::Condvar)>) {
        let open = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        (
            Arc::new(Gate {
                open: Arc::clone(&open),
            }),
            open,
        )
    }
}

fn release(open: &(Mutex<bool>, std::sync::Condvar)) {
    *open.0.lock().unwrap() = true;
    open.1.notify_all();
}

impl Operator for Gate {
    fn name(&self) -> &'static str {
        "gate"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        let (lock, cv) = &*self.open;
        let mut open = lock.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
        Ok(input.to_vec())
    }
}

/// An operator that panics on input starting with `!`.
struct Fragile;

impl Operator for Fragile {
    fn name(&self) -> &'static str {
        "fragile"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        if input.first() == Some(&b'!') {
            panic!("fragile operator hit a bang");
        }
        std::thread::sleep(Duration::from_millis(2));
        Ok(input.to_vec())
    }
}

fn one_shot(op: &str, input: &[u8]) -> Vec<u8> {
    build_operator(op, &sample_params(op))
        .unwrap()
        .run(input)
        .unwrap()
}

/// Real operators, whole and split (independent, ordered and chained), in
/// every mode: the outputs are the one-shot outputs.
#[test]
fn outputs_equal_one_shot_whole_and_split() {
    let ops = [
        "ec-encode",
        "sha256",
        "aes-gcm-encrypt",
        "crc32c",
        "lz4",
        "unzstd",
    ];
    for mode in [Mode::Native, isolated("fcfs"), isolated("drr"), isolated("wlbvt")] {
        let rt = runtime(mode.clone(), 2, Some(10_000), Slo::default());
        let mut tickets = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let params = sample_params(op);
            let input = valid_input(op, &params, &text_payload(50_000 + i * 777, i as u64)).unwrap();
            let t = rt.tenant(TenantId((i % 2) as u32));
            tickets.push((op, input.clone(), t.submit(op, &params, input).unwrap()));
        }
        for (op, input, ticket) in tickets {
            let c = ticket.wait();
            let out = c
                .result
                .as_ref()
                .unwrap_or_else(|e| panic!("{op} in {mode:?}: {e}"));
            if *op == "lz4" {
                // A split compressor's stream is valid but not the one-shot bytes.
                assert_eq!(one_shot("unlz4", out), input, "{mode:?}");
            } else {
                assert_eq!(*out, one_shot(op, &input), "{op} in {mode:?}");
            }
            let splittable = *op != "unzstd";
            if mode != Mode::Native && splittable {
                assert!(c.subtasks > 1, "{op} in {mode:?} ran as {} subtasks", c.subtasks);
            } else {
                assert_eq!(c.subtasks, 1, "{op} in {mode:?}");
            }
            assert!(c.service_ns > 0 && c.finished_ns >= c.submitted_ns);
        }
        let stats = rt.shutdown();
        assert_eq!(stats.iter().map(|s| s.succeeded).sum::<u64>(), ops.len() as u64);
    }
}

/// By default a tenant alone on an engine runs whole tasks (splitting would
/// only cost it); once another tenant is active, its large tasks split.
#[test]
fn tasks_split_only_while_the_engine_is_contended() {
    let mut b = RuntimeBuilder::new();
    b.engine(EngineConfig::new("engine", &[], 1, cost()).with_split(8_192));
    b.tenant("a", Slo::default());
    b.tenant("b", Slo::default());
    b.mode(isolated("drr"));
    let rt = b.start().unwrap();
    let big = Arc::new(text_payload(100_000, 1));
    let a = rt.tenant(TenantId(0));
    for _ in 0..3 {
        assert_eq!(
            a.submit("sha256", &BTreeMap::new(), Arc::clone(&big))
                .unwrap()
                .wait()
                .subtasks,
            1
        );
    }
    let (gate, open) = Gate::new();
    let held = rt.tenant(TenantId(1)).submit_operator(gate, vec![0]).unwrap();
    let split = a.submit("sha256", &BTreeMap::new(), Arc::clone(&big)).unwrap();
    release(&open);
    assert!(held.wait().result.is_ok());
    let c = split.wait();
    assert!(c.subtasks > 1, "{}", c.subtasks);
    assert_eq!(c.result.unwrap(), one_shot("sha256", &big));
}

/// A tenant with a cost model of its own has its subtasks predicted by it
/// too, not only the whole task.
#[test]
fn a_tenants_own_cost_model_prices_its_subtasks() {
    /// Records the sizes it is asked about.
    #[derive(Debug, Default)]
    struct Recording(Mutex<Vec<u64>>);
    impl isola_core::CostModel for Recording {
        fn predict(&self, _: &str, bytes: u64) -> Option<u64> {
            self.0.lock().unwrap().push(bytes);
            Some(1_000 + bytes)
        }
    }
    let rt = runtime(isolated("sfq"), 1, Some(4_096), Slo::default());
    let model = Arc::new(Recording::default());
    let tenant = rt
        .tenant(TenantId(0))
        .with_cost(Arc::clone(&model) as Arc<dyn isola_core::CostModel>);
    let c = tenant
        .submit("sha256", &BTreeMap::new(), vec![7u8; 40_000])
        .unwrap()
        .wait();
    assert!(c.result.is_ok() && c.subtasks > 1, "{:?}", c.subtasks);
    let asked = model.0.lock().unwrap().clone();
    assert_eq!(asked[0], 40_000, "the whole task first");
    assert_eq!(
        asked.len(),
        1 + c.subtasks as usize,
        "each subtask priced: {asked:?}"
    );
    assert!(asked[1..].iter().all(|&b| b < 40_000), "{asked:?}");
    rt.shutdown();
}

/// An operator error and a panic fail their own task only; the runtime
/// goes on serving.
#[test]
fn failures_and_panics_fail_only_their_task() {
    for mode in [Mode::Native, isolated("sfq")] {
        let rt = runtime(mode, 1, None, Slo::default());
        let a = rt.tenant(TenantId(0));
        let bad = a
            .submit("unlz4", &BTreeMap::new(), b"not lz4 at all".to_vec())
            .unwrap();
        let boom = a.submit_operator(Arc::new(Fragile), b"!boom".to_vec()).unwrap();
        let fine = a.submit_operator(Arc::new(Fragile), b"fine".to_vec()).unwrap();
        assert!(matches!(
            bad.wait().result,
            Err(TaskError::Operator(OpError::Input { .. }))
        ));
        match boom.wait().result {
            Err(TaskError::Panicked { op, message }) => {
                assert_eq!(op, "fragile");
                assert!(message.contains("bang"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(fine.wait().result.unwrap(), b"fine");
        let stats = rt.shutdown();
        assert_eq!((stats[0].failed, stats[0].succeeded), (2, 1));
    }
}

/// A tenant whose channel in the core holds its queue cap of tasks has the
/// next one refused by the core, as that task's one completion with a typed
/// reason, and the refusal is counted; the other tenant is not affected.
#[test]
fn a_full_channel_rejects_with_a_typed_completion() {
    let slo = Slo {
        queue_cap: 2,
        ..Slo::default()
    };
    // One worker and a queue depth of 1: the engine holds two tasks, the
    // core's channel two more (the dispatcher takes messages in order and
    // dispatches after each, so the first two are in service before the
    // third is submitted).
    let rt = runtime(isolated("fcfs"), 1, None, slo);
    let (gate, open) = Gate::new();
    let a = rt.tenant(TenantId(0));
    let held: Vec<_> = (0..4u8)
        .map(|i| a.submit_operator(gate.clone(), vec![i]).unwrap())
        .collect();
    match a.submit_operator(gate.clone(), vec![4]).unwrap().wait().result {
        Err(TaskError::Rejected(RejectReason::ChannelFull { tenant, cap, .. })) => {
            assert_eq!((tenant, cap), (TenantId(0), 2))
        }
        other => panic!("{other:?}"),
    }
    let b = rt
        .tenant(TenantId(1))
        .submit_operator(gate.clone(), vec![9])
        .unwrap();
    release(&open);
    for t in held.into_iter().chain([b]) {
        assert!(t.wait().result.is_ok());
    }
    // Room again once tasks completed.
    assert!(a.submit_operator(gate, vec![5]).unwrap().wait().result.is_ok());
    let stats = rt.shutdown();
    assert_eq!((stats[0].rejected, stats[0].succeeded), (1, 5));
}

/// Shutdown: running tasks finish, queued ones complete `Cancelled`, and
/// later submissions are refused.
#[test]
fn shutdown_cancels_queued_tasks_and_finishes_running_ones() {
    for mode in [Mode::Native, isolated("drr")] {
        let rt = runtime(mode.clone(), 1, None, Slo::default());
        let (gate, open) = Gate::new();
        let a = rt.tenant(TenantId(0));
        let (tx, rx) = crossbeam_channel::unbounded::<Completion>();
        a.submit_to("gate-is-not-in-the-registry", &BTreeMap::new(), vec![0], &tx)
            .expect_err("only registry operators by name");
        for i in 0..6u8 {
            // Custom operators complete on a ticket; forward each to `tx`.
            let t = a.submit_operator(gate.clone(), vec![i]).unwrap();
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _ = tx.send(t.wait());
            });
        }
        // The first task is running (the gate holds it); the rest wait.
        std::thread::sleep(Duration::from_millis(50));
        let releaser = {
            let open = Arc::clone(&open);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                release(&open);
            })
        };
        let stats = rt.shutdown();
        releaser.join().unwrap();
        drop(tx);
        // Exactly one completion per task, each done or cancelled.
        let got: Vec<Completion> = rx.iter().collect();
        assert_eq!(got.len(), 6, "{mode:?}");
        let done = got.iter().filter(|c| c.result.is_ok()).count() as u64;
        let cancelled = got
            .iter()
            .filter(|c| matches!(c.result, Err(TaskError::Cancelled)))
            .count() as u64;
        assert_eq!(
            (done, cancelled),
            (stats[0].succeeded, stats[0].cancelled),
            "{mode:?}"
        );
        assert_eq!(stats[0].succeeded + stats[0].cancelled, 6, "{mode:?}: {stats:?}");
        assert!(
            stats[0].succeeded >= 1 && stats[0].cancelled >= 1,
            "{mode:?}: {stats:?}"
        );
        assert!(matches!(
            a.submit("crc32", &BTreeMap::new(), vec![1]),
            Err(SubmitError::ShutDown)
        ));
    }
}

/// A task whose service exceeds its tenant's budget is flagged.
#[test]
fn over_budget_tasks_are_flagged() {
    let slo = Slo {
        service_budget: Some(500_000),
        ..Slo::default()
    };
    let rt = runtime(isolated("fcfs"), 1, None, slo);
    let a = rt.tenant(TenantId(0));
    let slow = a
        .submit_operator(Arc::new(Fragile), b"slow".to_vec())
        .unwrap()
        .wait();
    let quick = a.submit("crc32", &BTreeMap::new(), vec![0; 64]).unwrap().wait();
    assert!(slow.over_budget && slow.result.is_ok());
    assert!(!quick.over_budget);
    assert_eq!(rt.shutdown()[0].over_budget, 1);
}

/// Polling returns the ticket until the task is done.
#[test]
fn tickets_can_be_polled() {
    let rt = runtime(isolated("fcfs"), 1, None, Slo::default());
    let (gate, open) = Gate::new();
    let mut ticket = rt.tenant(TenantId(0)).submit_operator(gate, vec![9]).unwrap();
    ticket = ticket.poll().expect_err("still held by the gate");
    release(&open);
    let done = loop {
        match ticket.poll() {
            Ok(c) => break c,
            Err(t) => {
                ticket = t;
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    };
    assert_eq!(done.result.unwrap(), vec![9]);
}

#[test]
fn bad_configurations_and_submissions_are_typed_errors() {
    let mut b = RuntimeBuilder::new();
    b.tenant("a", Slo::default());
    assert!(matches!(b.start(), Err(isola_runtime::BuildError::NoEngines)));
    let mut b = RuntimeBuilder::new();
    b.engine(EngineConfig::new("e", &["frobnicate"], 1, cost()));
    b.tenant("a", Slo::default());
    let err = b.start().unwrap_err().to_string();
    assert!(
        err.contains("frobnicate") && err.contains("known operators"),
        "{err}"
    );
    let mut b = RuntimeBuilder::new();
    b.engine(EngineConfig::new("e", &["crc32"], 1, cost()));
    b.tenant("a", Slo::default());
    b.mode(isolated("no-such-policy"));
    assert!(b.start().unwrap_err().to_string().contains("no-such-policy"));

    let mut b = RuntimeBuilder::new();
    b.engine(EngineConfig::new("e", &["crc32"], 1, cost()));
    b.tenant("a", Slo::default());
    let rt = b.start().unwrap();
    let a = rt.tenant(TenantId(0));
    assert!(matches!(
        a.submit("sha256", &BTreeMap::new(), vec![]),
        Err(SubmitError::NoEngine(_))
    ));
    let mut p = BTreeMap::new();
    p.insert("level".to_string(), "3".to_string());
    assert!(matches!(
        a.submit("crc32", &p, vec![]),
        Err(SubmitError::Operator(_))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any mix of valid, corrupt and panicking tasks from two tenants, split
    /// or not, under any policy: exactly one completion per accepted task,
    /// each with the right outcome.
    #[test]
    fn every_task_completes_exactly_once(
        tasks in proptest::collection::vec((0u8..6, 0usize..2, 1usize..30_000), 1..40),
        policy in prop_oneof![Just("native"), Just("fcfs"), Just("drr"), Just("sfq"), Just("mclock")],
        split in proptest::option::of(1_000u64..20_000),
        workers in 1usize..3,
    ) {
        let mode = if policy == "native" { Mode::Native } else { isolated(policy) };
        let rt = runtime(mode, workers, split, Slo::default());
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut expected = BTreeMap::new();
        let mut panicking = std::collections::BTreeSet::new();
        for (kind, tenant, len) in tasks {
            let handle = rt.tenant(TenantId(tenant as u32));
            let payload = text_payload(len, len as u64);
            let (id, want) = match kind {
                0 => {
                    let out = one_shot("sha256", &payload);
                    (handle.submit_to("sha256", &BTreeMap::new(), payload, &tx).unwrap(), Some(out))
                }
                1 => {
                    let p = sample_params("ec-encode");
                    let input = valid_input("ec-encode", &p, &payload).unwrap();
                    let out = one_shot("ec-encode", &input);
                    (handle.submit_to("ec-encode", &p, input, &tx).unwrap(), Some(out))
                }
                2 => (handle.submit_to("unlz4", &BTreeMap::new(), payload, &tx).unwrap(), None),
                5 => {
                    // Panics (its input starts with `!`): a `Panicked` error.
                    let t = handle.submit_operator(Arc::new(Fragile), [b"!".as_slice(), &payload].concat()).unwrap();
                    let tx = tx.clone();
                    let id = t.id();
                    std::thread::spawn(move || {
                        let _ = tx.send(t.wait());
                    });
                    panicking.insert(id);
                    (id, None)
                }
                3 => {
                    let out = one_shot("crc32c", &payload);
                    (handle.submit_to("crc32c", &BTreeMap::new(), payload, &tx).unwrap(), Some(out))
                }
                _ => {
                    let p = sample_params("aes-gcm-encrypt");
                    let out = build_operator("aes-gcm-encrypt", &p).unwrap().run(&payload).unwrap();
                    (handle.submit_to("aes-gcm-encrypt", &p, payload, &tx).unwrap(), Some(out))
                }
            };
            expected.insert(id, want);
        }
        let mut seen = BTreeMap::new();
        for _ in 0..expected.len() {
            let c = rx.recv_timeout(Duration::from_secs(30)).expect("a completion");
            prop_assert!(seen.insert(c.task, ()).is_none(), "task {} completed twice", c.task);
            match &expected[&c.task] {
                Some(out) => prop_assert_eq!(c.result.as_ref().unwrap(), out),
                None if panicking.contains(&c.task) => prop_assert!(
                    matches!(&c.result, Err(TaskError::Panicked { op, .. }) if op == "fragile"),
                    "task {}: {:?}",
                    c.task,
                    c.result
                ),
                None => prop_assert!(c.result.is_err()),
            }
        }
        let stats = rt.shutdown();
        prop_assert!(rx.try_recv().is_err(), "a completion beyond one per task");
        let total: u64 = stats.iter().map(|s| s.succeeded + s.failed).sum();
        prop_assert_eq!(total, expected.len() as u64);
    }
}

/// Tenants submitting while the runtime shuts down: every accepted task
/// gets exactly one completion (done or cancelled), none is lost.
#[test]
fn submissions_racing_shutdown_are_never_lost() {
    for round in 0..20 {
        let rt = runtime(isolated("sfq"), 1, Some(4_096), Slo::default());
        let (tx, rx) = crossbeam_channel::unbounded::<Completion>();
        let accepted = std::sync::atomic::AtomicUsize::new(0);
        let stats = std::thread::scope(|s| {
            for t in 0..2u32 {
                let handle = rt.tenant(TenantId(t));
                let (tx, accepted) = (tx.clone(), &accepted);
                s.spawn(move || {
                    for i in 0..2_000usize {
                        let payload = vec![i as u8; 100 + (i % 7) * 2_000];
                        match handle.submit_to("sha256", &BTreeMap::new(), payload, &tx) {
                            Ok(_) => {
                                accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Err(SubmitError::ShutDown) => return,
                            Err(e) => panic!("{e}"),
                        }
                    }
                });
            }
            std::thread::sleep(Duration::from_millis(2 + round % 5));
            rt.shutdown()
        });
        drop(tx);
        let accepted = accepted.into_inner();
        // Every accepted task is counted in the stats shutdown returns.
        let counted: u64 = stats.iter().map(|s| s.submitted).sum();
        assert_eq!(
            counted, accepted as u64,
            "round {round}: submissions missing from the stats"
        );
        let got: Vec<Completion> = rx.iter().collect();
        let ids: std::collections::BTreeSet<u64> = got.iter().map(|c| c.task).collect();
        assert_eq!(ids.len(), got.len(), "a task completed twice");
        assert_eq!(
            got.len(),
            accepted,
            "round {round}: accepted tasks without a completion"
        );
        for c in &got {
            // A split task may have run some subtasks before the rest were
            // cancelled; a whole task cancelled in the queue never ran.
            if matches!(c.result, Err(TaskError::Cancelled)) && c.subtasks == 1 {
                assert!(c.started_ns.is_none(), "a cancelled task says it ran");
            }
        }
    }
}

/// A splitter whose reassembly panics: that task fails with `Panicked`,
/// and the runtime keeps serving every tenant.
#[test]
fn a_panicking_reassembly_fails_only_its_task() {
    struct BadSplit;
    impl Operator for BadSplit {
        fn name(&self) -> &'static str {
            "bad-split"
        }
        fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
            Ok(input.to_vec())
        }
        fn splitter(&self) -> Option<&dyn isola_ops::Splitter> {
            Some(self)
        }
    }
    impl isola_ops::Splitter for BadSplit {
        fn ordered(&self) -> bool {
            false
        }
        fn run_part(
            &self,
            _: &isola_core::Subtask,
            _: &[u8],
            _: Option<isola_ops::Carry>,
        ) -> Result<isola_ops::Carry, OpError> {
            Ok(Box::new(()))
        }
        fn reassemble(&self, _: usize, _: Vec<isola_ops::Carry>) -> Result<Vec<u8>, OpError> {
            panic!("reassembly bug")
        }
    }
    let rt = runtime(isolated("drr"), 1, Some(100), Slo::default());
    let a = rt.tenant(TenantId(0));
    match a
        .submit_operator(Arc::new(BadSplit), vec![0; 1_000])
        .unwrap()
        .wait()
        .result
    {
        Err(TaskError::Panicked { message, .. }) => assert!(message.contains("reassembly bug")),
        other => panic!("{other:?}"),
    }
    let b = rt.tenant(TenantId(1));
    assert!(b
        .submit("crc32", &BTreeMap::new(), vec![1; 10])
        .unwrap()
        .wait()
        .result
        .is_ok());
    assert_eq!(rt.shutdown()[0].failed, 1);
}

/// An operator whose subtasks would write over one another's output (or
/// past its end) is refused before any subtask runs, with a typed error;
/// nothing is written out of bounds and the runtime carries on.
#[test]
fn unsound_placement_plans_fail_their_task_before_running() {
    struct Overlapping {
        past_the_end: bool,
    }
    impl Operator for Overlapping {
        fn name(&self) -> &'static str {
            "overlapping"
        }
        fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
            Ok(input.to_vec())
        }
        fn splitter(&self) -> Option<&dyn isola_ops::Splitter> {
            Some(self)
        }
        fn placement(&self) -> Option<&dyn isola_ops::Placement> {
            Some(self)
        }
    }
    impl isola_ops::Placement for Overlapping {
        fn plan(
            &self,
            task: isola_core::TaskId,
            len: usize,
            chunk: usize,
        ) -> Result<Vec<isola_core::Subtask>, OpError> {
            Ok(isola_core::Subtask::ranges(task, len as u64, chunk as u64, false))
        }
        fn output_len(&self, input_len: usize) -> Result<usize, OpError> {
            Ok(input_len)
        }
        #[allow(clippy::single_range_in_vec_init)] // one range per subtask
        fn regions(&self, part: &isola_core::Subtask, input_len: usize) -> Vec<std::ops::Range<usize>> {
            if self.past_the_end {
                vec![part.offset as usize..input_len + 1]
            } else {
                vec![0..part.bytes as usize]
            }
        }
        fn run_part_into(
            &self,
            _: &isola_core::Subtask,
            _: &[u8],
            regions: &mut [&mut [u8]],
        ) -> Result<isola_ops::Carry, OpError> {
            for r in regions.iter_mut() {
                r.fill(1);
            }
            Ok(Box::new(()))
        }
        fn finish(&self, _: Vec<isola_ops::Carry>, _: &mut [u8]) -> Result<(), OpError> {
            Ok(())
        }
    }
    let rt = runtime(isolated("sfq"), 2, Some(100), Slo::default());
    let a = rt.tenant(TenantId(0));
    for past_the_end in [false, true] {
        let op = Arc::new(Overlapping { past_the_end });
        match a.submit_operator(op, vec![0; 1_000]).unwrap().wait().result {
            Err(TaskError::BadPlan { op, reason }) => {
                assert_eq!(op, "overlapping");
                assert!(
                    reason.contains(if past_the_end { "outside" } else { "overlaps" }),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
    // A sound placed operator still splits and matches its one-shot output.
    let p = sample_params("ec-encode");
    let input = valid_input("ec-encode", &p, &text_payload(64 << 10, 3)).unwrap();
    let c = a.submit("ec-encode", &p, input.clone()).unwrap().wait();
    assert!(c.subtasks > 1);
    assert_eq!(c.result.unwrap(), one_shot("ec-encode", &input));
    assert_eq!(rt.shutdown()[0].failed, 2);
}
