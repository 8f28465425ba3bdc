//! An engine that learns its operators' costs (issue 29): predictions
//! follow what tasks of each operator took, per operator and parameters,
//! and a split rule capped in time cuts each operator's tasks at the bytes
//! it serves in that time.

use isola_core::{
    AffineCost, CostLearning, EngineKind, EngineSpec, OpRef, OpSpec, SchedulerBuilder, Slo, SplitRule,
    SplitWhen, Task, TaskId,
};
use std::sync::Arc;

fn op(name: &str, level: &str) -> OpRef {
    OpSpec {
        name: name.into(),
        params: vec![("level".into(), level.into())],
    }
    .intern()
}

#[test]
fn predictions_follow_measured_service_per_operator() {
    let mut b = SchedulerBuilder::new();
    // Configured: one affine guess for every operator (isolad's default).
    let guess = Arc::new(AffineCost::new(1_000.0, 0.5).unwrap());
    let rule = SplitRule {
        bytes: 1 << 20,
        when: SplitWhen::Always,
        time: Some(200_000),
    };
    let e = b.engine(
        EngineSpec::new("acc", EngineKind::Accelerator, 1, guess)
            .with_learning(Some(CostLearning::default()))
            .with_split_rule(Some(rule)),
    );
    let t = b.tenant("a", Slo::weighted(1.0));
    b.policy("sfq", Default::default());
    let mut s = b.build().unwrap();
    let (slow, fast) = (op("deflate", "9"), op("deflate", "1"));
    // What the engine really takes: 30 ns a byte at level 9, 2 at level 1.
    let truth = |o: &OpSpec, bytes: u64| {
        if o.params[0].1 == "9" {
            5_000 + 30 * bytes
        } else {
            500 + 2 * bytes
        }
    };
    let mut now = 0;
    let mut id = 0;
    let mut serve = |s: &mut isola_core::Scheduler, o: &OpRef, bytes: u64| -> Vec<(u64, u64)> {
        id += 1;
        let task = Task {
            id: TaskId(id),
            tenant: t,
            engine: e,
            op: *o,
            bytes,
            arrival: now,
            deadline: None,
            predicted_cost: None,
            planner: None,
            flow: 0,
        };
        s.submit(now, task).unwrap();
        let mut pieces = Vec::new();
        while let Some(d) = s.next(now, e) {
            let piece = d.subtask.map_or(bytes, |st| st.bytes);
            let took = truth(o, piece);
            pieces.push((piece, d.predicted));
            now += took;
            s.complete(now, d.id, took).unwrap();
        }
        pieces
    };
    // Small tasks first (under the split size): the configured guess, then the fit.
    let first = serve(&mut s, &slow, 2_000);
    assert_eq!(first, vec![(2_000, 2_000)], "the guess: 1 us + 0.5 ns x 2000");
    for bytes in [1_000, 30_000, 300_000] {
        serve(&mut s, &slow, bytes);
        serve(&mut s, &fast, bytes);
    }
    // From what the tasks took (within 10%: a split task's equal pieces
    // make the fit proportional, `cost_fit::MIN_SPREAD`), not the guess.
    let near =
        |got: &[(u64, u64)], want: u64| got.len() == 1 && (got[0].1 as f64 / want as f64 - 1.0).abs() < 0.1;
    let learned = serve(&mut s, &slow, 2_500);
    assert!(near(&learned, truth(&slow, 2_500)), "level 9: {learned:?}");
    let learned = serve(&mut s, &fast, 2_500);
    assert!(
        near(&learned, truth(&fast, 2_500)),
        "level 1 apart from level 9: {learned:?}"
    );
    // A 1 MiB level-9 task is cut at what fits in 200 us: about
    // (200000 - 5000) / 30 = 6500 bytes (6100-6500 as the fit stands).
    let pieces = serve(&mut s, &slow, 1 << 20);
    assert!(pieces.len() > 100, "{} pieces", pieces.len());
    for &(bytes, predicted) in &pieces[..pieces.len() - 1] {
        assert!((6_000..=6_600).contains(&bytes), "{bytes}-byte subtask");
        assert!(predicted <= 200_000, "predicted {predicted}");
    }
    // The same task at level 1 fits 100 KB in 200 us: fewer, larger pieces.
    let pieces = serve(&mut s, &fast, 1 << 20);
    assert!(pieces.len() < 12, "{} pieces", pieces.len());
    let report = s.learned_costs(e);
    assert_eq!(report.len(), 2);
    let nine = report.iter().find(|r| r.op == "deflate(level=9)").unwrap();
    // Its pieces are all alike: proportional, 30 ns a byte plus the
    // fixed part spread over a piece.
    assert!((nine.per_byte_ns - 30.8).abs() < 0.5 && nine.in_use, "{nine:?}");
    assert!(nine.error < 0.05, "recent predictions are learned ones: {nine:?}");
}

/// A time cap never cuts below 2 KiB, however slow the operator.
#[test]
fn a_time_cap_keeps_subtasks_at_least_a_page() {
    let mut b = SchedulerBuilder::new();
    let slow = Arc::new(AffineCost::new(0.0, 1_000.0).unwrap());
    let rule = SplitRule::always(1 << 20).with_time(Some(1_000));
    let e = b.engine(EngineSpec::new("acc", EngineKind::Accelerator, 1, slow).with_split_rule(Some(rule)));
    let t = b.tenant("a", Slo::weighted(1.0));
    let mut s = b.build().unwrap();
    let task = Task {
        id: TaskId(1),
        tenant: t,
        engine: e,
        op: OpSpec::named("x"),
        bytes: 64 << 10,
        arrival: 0,
        deadline: None,
        predicted_cost: None,
        planner: None,
        flow: 0,
    };
    s.submit(0, task).unwrap();
    let d = s.next(0, e).unwrap();
    assert_eq!(d.subtask.unwrap().bytes, isola_core::MIN_TIMED_SUBTASK_BYTES);
}
