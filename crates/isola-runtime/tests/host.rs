//! What the runtime tells about where time went: each completion's latency
//! divided into its parts (checked against the timestamps of the task ahead
//! of it), the runtime's threads with their kernel counters, and real-time
//! classes granted as the kernel reports them, or refused with a reason.

use isola_core::{AffineCost, Slo, TenantId};
use isola_ops::text_payload;
use isola_runtime::{EngineConfig, Mode, Realtime, RealtimeOutcome, RuntimeBuilder};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

fn builder() -> RuntimeBuilder {
    let mut b = RuntimeBuilder::new();
    let cost = Arc::new(AffineCost::new(1_000.0, 1.0).unwrap());
    b.engine(EngineConfig::new("hash", &["sha256"], 1, cost));
    b.tenant("big", Slo::default());
    b.tenant("small", Slo::default());
    b.mode(Mode::Native);
    b
}

/// A small task submitted while a large one of another tenant runs waits
/// behind it: its breakdown says so, by as much as the large task's
/// completion came after the small one's submission, and the parts add up
/// to the latency.
#[test]
fn a_task_behind_another_tenants_work_is_attributed_to_it() {
    let rt = builder().start().unwrap();
    let params = BTreeMap::new();
    let big = rt
        .tenant(TenantId(0))
        .submit("sha256", &params, text_payload(32 << 20, 1))
        .unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let small = rt
        .tenant(TenantId(1))
        .submit("sha256", &params, text_payload(64, 2))
        .unwrap();
    let (big, small) = (big.wait(), small.wait());
    assert!(big.result.is_ok() && small.result.is_ok());
    for c in [&big, &small] {
        assert_eq!(c.breakdown.total_ns(), c.latency_ns(), "{:?}", c.breakdown);
        assert_eq!(c.breakdown.service_ns, c.service_ns.min(c.latency_ns()));
    }
    let waited = big.finished_ns.saturating_sub(small.submitted_ns);
    assert!(
        waited > 1_000_000,
        "the large task ran on after the small one came"
    );
    let behind = small.breakdown.behind_others_ns;
    assert!(
        behind >= waited * 8 / 10 && behind <= waited + 1_000_000,
        "behind others {behind} ns, while the large task ran on for {waited} ns: {:?}",
        small.breakdown
    );
    assert_eq!(small.breakdown.behind_own_ns, 0);
    rt.shutdown();
}

/// The dispatcher and the worker are listed, and their counters grow
/// with the work they do.
#[test]
fn the_runtimes_threads_report_their_counters() {
    let rt = builder().start().unwrap();
    let threads = rt.threads();
    let names: Vec<&str> = threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["isola-dispatcher", "isola-hash-0", "isola-delivery"]);
    let Some(before) = threads[1].times() else {
        return; // no per-thread counters on this system
    };
    rt.tenant(TenantId(0))
        .submit("sha256", &BTreeMap::new(), text_payload(8 << 20, 1))
        .unwrap()
        .wait();
    let after = threads[1].times().unwrap().since(&before);
    assert!(after.cpu_ns > 1_000_000, "{after:?}");
    rt.shutdown();
}

/// A real-time class is granted (and the kernel confirms it) or refused
/// with the system's reason; either way the runtime works.
#[test]
fn a_realtime_class_is_granted_or_refused_with_a_reason() {
    let mut b = builder();
    b.realtime(Some(Realtime::default())).spin(Duration::ZERO);
    let rt = b.start().unwrap();
    for t in rt.threads() {
        match &t.realtime {
            RealtimeOutcome::Granted { class, priority } => {
                assert_eq!((class.as_str(), *priority), ("SCHED_FIFO", 10));
                let tid = t.tid.unwrap().0 as libc::pid_t;
                // SAFETY: a plain query of a thread of this process.
                assert_eq!(unsafe { libc::sched_getscheduler(tid) }, libc::SCHED_FIFO);
            }
            RealtimeOutcome::Refused { reason } => assert!(!reason.is_empty()),
            RealtimeOutcome::NotAsked => panic!("{} was asked", t.name),
        }
    }
    let done = rt
        .tenant(TenantId(1))
        .submit("sha256", &BTreeMap::new(), text_payload(1 << 20, 1))
        .unwrap()
        .wait();
    assert!(done.result.is_ok());
    rt.shutdown();
}
