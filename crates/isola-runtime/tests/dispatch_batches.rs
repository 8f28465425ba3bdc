//! An engine that batches ([`isola_core::BatchRule`]): a tenant's small
//! tasks reach one worker in one hand-off, each runs and completes on its
//! own with its own result, and the runtime still makes no decision of
//! its own (replaying its core calls gives the same batches).

use isola_core::{AffineCost, BatchRule, Slo, TenantId};
use isola_ops::build_operator;
use isola_runtime::{CoreCall, EngineConfig, Mode, OnCompletion, RuntimeBuilder};
use std::collections::BTreeMap;
use std::sync::Arc;

fn builder(on_dispatcher: bool) -> RuntimeBuilder {
    let mut b = RuntimeBuilder::new();
    let cost = Arc::new(AffineCost::new(1_000.0, 0.5).unwrap());
    let engine = EngineConfig::new("crc", &["crc32c"], 1, cost).with_batch(BatchRule::new(16, 4096, 0));
    b.engine(if on_dispatcher {
        engine.on_dispatcher()
    } else {
        engine
    });
    let mut slo = Slo::weighted(1.0);
    slo.queue_cap = 4096;
    b.tenant("a", slo.clone());
    b.tenant("b", slo);
    b.mode(Mode::Isolated {
        policy: "sfq".into(),
        params: BTreeMap::new(),
    });
    b
}

#[test]
fn batched_tasks_each_complete_with_their_own_result() {
    for on_dispatcher in [false, true] {
        let mut b = builder(on_dispatcher);
        b.record_core_calls(true);
        let rt = b.start().unwrap();
        let op: Arc<dyn isola_ops::Operator> = Arc::from(build_operator("crc32c", &BTreeMap::new()).unwrap());
        let (tx, rx) = crossbeam_channel::unbounded();
        let payloads: Vec<Arc<Vec<u8>>> = (0..600u32)
            .map(|i| Arc::new(i.to_le_bytes().repeat(16)))
            .collect();
        for (t, chunk) in payloads.chunks(300).enumerate() {
            let tasks = chunk.iter().map(|p| {
                let tx = tx.clone();
                let mine = Arc::clone(p);
                let on_done: OnCompletion = Arc::new(move |c| {
                    let _ = tx.send((Arc::clone(&mine), c));
                });
                (Arc::clone(&op), Arc::clone(p), on_done)
            });
            let ids = rt.tenant(TenantId(t as u32)).submit_batch_calling(tasks);
            assert!(ids.iter().all(Result::is_ok));
        }
        for _ in 0..payloads.len() {
            let (payload, c) = rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .expect("every task completes");
            // Its own payload's CRC, as the operator gives it run alone
            // (the operator is checked against published vectors in
            // isola-ops): no task got another's result.
            let want = op.run(&payload).expect("crc runs");
            assert_eq!(c.result.expect("crc runs"), want);
        }
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(200)).is_err(),
            "each task completes once"
        );
        let log = rt.core_log().expect("recorded").calls();
        rt.shutdown();
        let batches: Vec<usize> = log
            .iter()
            .filter_map(|c| match c {
                CoreCall::Next {
                    dispatched: Some(_),
                    batched,
                    ..
                } => Some(batched.len() + 1),
                _ => None,
            })
            .collect();
        assert_eq!(
            batches.iter().sum::<usize>(),
            payloads.len(),
            "every task dispatched once"
        );
        assert!(
            batches.iter().any(|&n| n > 1) && batches.iter().all(|&n| n <= 16),
            "on_dispatcher {on_dispatcher}: dispatches of {batches:?} tasks"
        );
        let mut core = builder(on_dispatcher).scheduler().unwrap();
        isola_runtime::core_log::replay(&log, &mut core, |_| None)
            .unwrap_or_else(|e| panic!("on_dispatcher {on_dispatcher}: {e}"));
    }
}
