//! Live control of a running runtime: a weight change moves the order the
//! core serves two backlogged tenants in from the next decision on, a
//! refused change leaves the runtime as it was, and cancelling a tenant's
//! queued work ends each of its tasks exactly once while the other
//! tenant's complete.

use isola_core::{AffineCost, Slo, SloChangeError, TenantId};
use isola_runtime::{ControlError, EngineConfig, Mode, Runtime, RuntimeBuilder, TaskError, Ticket};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One engine, one worker, sfq; two tenants that queue thousands of tasks
/// (SHA-256 of 256 KiB: ~0.1-1 ms each).
fn runtime() -> Runtime {
    let mut b = RuntimeBuilder::new();
    b.engine(EngineConfig::new(
        "acc",
        &["crc32c", "sha256"],
        1,
        Arc::new(AffineCost::new(1_000.0, 0.1).unwrap()),
    ));
    for name in ["a", "b"] {
        b.tenant(
            name,
            Slo {
                queue_cap: 10_000,
                ..Slo::default()
            },
        );
    }
    // Charged per task: the weights then fix the order of service by
    // count, whatever each task measured (under the default charge, its
    // measured engine time, which other tests' runtimes on the same
    // cores make vary from task to task).
    b.mode(Mode::Isolated {
        policy: "sfq".into(),
        params: BTreeMap::from([("charge".to_string(), "ops".to_string())]),
    });
    b.start().unwrap()
}

fn backlog(rt: &Runtime, per_tenant: usize) -> Vec<Ticket> {
    let (a, b) = (rt.tenant(TenantId(0)), rt.tenant(TenantId(1)));
    let none = BTreeMap::new();
    // Shared inputs: thousands of tasks, little memory.
    let input = Arc::new(vec![7u8; 256 * 1024]);
    let mut tickets = Vec::new();
    for _ in 0..per_tenant {
        tickets.push(a.submit("sha256", &none, Arc::clone(&input)).unwrap());
        tickets.push(b.submit("sha256", &none, Arc::clone(&input)).unwrap());
    }
    tickets
}

#[test]
fn a_weight_change_moves_the_order_of_service() {
    let rt = runtime();
    let tickets = backlog(&rt, 3_000);
    // Let the core serve a while at 1:1, then give `a` three times `b`'s share.
    std::thread::sleep(std::time::Duration::from_millis(20));
    rt.set_slo(
        TenantId(0),
        Slo {
            weight: 3.0,
            queue_cap: 10_000,
            ..Slo::default()
        },
        Vec::new(),
    )
    .unwrap();
    let changed_at = rt.now_ns();
    let mut done: Vec<_> = tickets.into_iter().map(Ticket::wait).collect();
    assert!(done.iter().all(|c| c.result.is_ok()));
    done.sort_by_key(|c| c.started_ns);
    // The first 400 tasks started after the change (and after the one or
    // two already handed to the worker) follow the new weights: 3:1.
    let after: Vec<_> = done
        .iter()
        .filter(|c| c.started_ns.is_some_and(|s| s > changed_at))
        .skip(4)
        .take(400)
        .collect();
    assert_eq!(after.len(), 400, "the backlog outlasts the change");
    let of_a = after.iter().filter(|c| c.tenant == TenantId(0)).count();
    assert!(
        of_a.abs_diff(300) <= 10,
        "weight 3:1 should serve ~300 of 400 for `a`, got {of_a}"
    );
}

#[test]
fn a_refused_change_is_reported_and_changes_nothing() {
    let rt = runtime();
    let bad = Slo {
        weight: -1.0,
        ..Slo::default()
    };
    match rt.set_slo(TenantId(1), bad, Vec::new()) {
        Err(ControlError::Refused(SloChangeError::InvalidSlo { field: "weight", .. })) => {}
        other => panic!("expected a refused weight, got {other:?}"),
    }
    assert!(matches!(
        rt.set_slo(TenantId(5), Slo::default(), Vec::new()),
        Err(ControlError::Refused(SloChangeError::UnknownTenant(TenantId(5))))
    ));
    let c = rt
        .tenant(TenantId(1))
        .submit("crc32c", &BTreeMap::new(), vec![1u8; 64])
        .unwrap()
        .wait();
    assert!(c.result.is_ok());
}

#[test]
fn cancelling_a_tenants_queued_work_ends_each_task_once() {
    let rt = runtime();
    let tickets = backlog(&rt, 2_000);
    let cancelled = rt.cancel_queued(TenantId(0), None).unwrap();
    assert!(cancelled > 0, "some of `a`'s 2,000 tasks were still queued");
    let done: Vec<_> = tickets.into_iter().map(Ticket::wait).collect();
    let of = |t: u32| done.iter().filter(move |c| c.tenant == TenantId(t));
    let a_cancelled = of(0)
        .filter(|c| matches!(c.result, Err(TaskError::Cancelled)))
        .count();
    assert_eq!(a_cancelled, cancelled);
    assert!(of(0).all(|c| c.result.is_ok() || matches!(c.result, Err(TaskError::Cancelled))));
    assert!(of(1).all(|c| c.result.is_ok()), "the other tenant loses nothing");
    assert_eq!(of(1).count(), 2_000);
    let mut ids: Vec<u64> = done.iter().map(|c| c.task).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 4_000, "one completion per task");
    // Nothing left to cancel; new work is served.
    assert_eq!(rt.cancel_queued(TenantId(0), None).unwrap(), 0);
    let c = rt
        .tenant(TenantId(0))
        .submit("crc32c", &BTreeMap::new(), vec![1u8; 64])
        .unwrap()
        .wait();
    assert!(c.result.is_ok());
    rt.shutdown();
}

#[test]
fn cancelling_named_tasks_leaves_the_tenants_others() {
    let rt = runtime();
    let tickets = backlog(&rt, 1_000);
    // `b`'s tasks are the odd positions; cancel the last 500 of them.
    let named: std::collections::HashSet<u64> = tickets
        .iter()
        .skip(1)
        .step_by(2)
        .skip(500)
        .map(Ticket::id)
        .collect();
    let cancelled = rt.cancel_queued(TenantId(1), Some(named.clone())).unwrap();
    assert!(cancelled > 0);
    let done: Vec<_> = tickets.into_iter().map(Ticket::wait).collect();
    for c in &done {
        let was_cancelled = matches!(c.result, Err(TaskError::Cancelled));
        assert!(c.result.is_ok() || was_cancelled, "{:?}", c.result);
        assert!(
            !was_cancelled || named.contains(&c.task),
            "only named tasks are cancelled"
        );
    }
    assert_eq!(done.iter().filter(|c| c.result.is_err()).count(), cancelled);
}
