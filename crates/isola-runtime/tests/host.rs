//! What the runtime tells about where time went: each completion's latency
//! divided into its parts (checked against the timestamps of the task ahead
//! of it), the runtime's threads with their kernel counters, and real-time
//! classes granted as the kernel reports them, or refused with a reason,
//! and left for the normal class by a worker that stays busy.

use isola_core::{AffineCost, Slo, TenantId};
use isola_ops::text_payload;
use isola_runtime::{EngineConfig, IdleLatency, Mode, Realtime, RealtimeOutcome, RuntimeBuilder};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The tests whose runtimes run real-time threads run one at a time: one's
/// threads would take the cores another's measure.
static REALTIME_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
    let _alone = REALTIME_TESTS.lock();
    let bound_before = idle_exit_bound();
    let mut b = builder();
    b.realtime(Some(Realtime::default())).spin(Duration::ZERO);
    let rt = b.start().unwrap();
    for t in rt.threads() {
        match &t.realtime {
            RealtimeOutcome::Granted { class, priority } => {
                // Every thread at the one priority asked for (threads
                // that share channels at different priorities can spin on
                // each other for good: `threads.rs`).
                let expected = 10;
                assert_eq!(
                    (class.as_str(), *priority),
                    ("SCHED_FIFO", expected),
                    "{}",
                    t.name
                );
                let tid = t.tid.unwrap().0 as libc::pid_t;
                // SAFETY: a plain query of a thread of this process.
                assert_eq!(unsafe { libc::sched_getscheduler(tid) }, libc::SCHED_FIFO);
            }
            RealtimeOutcome::Refused { reason } => assert!(!reason.is_empty()),
            RealtimeOutcome::NotAsked => panic!("{} was asked", t.name),
        }
    }
    // Idle cores asked to stay quick to wake while it runs (the kernel
    // reads the bound in force back), or the system's reason why not; not
    // asked where no thread was granted the class.
    let granted = rt
        .threads()
        .iter()
        .any(|t| matches!(t.realtime, RealtimeOutcome::Granted { .. }));
    let held = rt.idle_latency() == IdleLatency::Held;
    match rt.idle_latency() {
        IdleLatency::Held => assert_eq!(idle_exit_bound(), Some(0)),
        IdleLatency::Refused { reason } => assert!(reason.contains("/dev/cpu_dma_latency"), "{reason}"),
        IdleLatency::NotAsked => assert!(!granted, "a runtime granted the class asks"),
    }
    let done = rt
        .tenant(TenantId(1))
        .submit("sha256", &BTreeMap::new(), text_payload(1 << 20, 1))
        .unwrap()
        .wait();
    assert!(done.result.is_ok());
    rt.shutdown();
    if held {
        assert_eq!(
            idle_exit_bound(),
            bound_before,
            "the request ends with the runtime"
        );
    }
}

/// The bound on idle cores' exit latency in force (us), as the kernel's PM
/// QoS file reads it back: the smallest any process holds.
fn idle_exit_bound() -> Option<i32> {
    let bytes = std::fs::read("/dev/cpu_dma_latency").ok()?;
    Some(i32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?))
}

/// A runtime in the normal class leaves idle cores as they are.
#[test]
fn a_normal_runtime_asks_nothing_of_idle_cores() {
    let rt = builder().start().unwrap();
    assert_eq!(rt.idle_latency(), IdleLatency::NotAsked);
    rt.shutdown();
}

/// The kernel's view of a thread's class: `SCHED_FIFO`, `SCHED_OTHER`...
fn class_of(t: &isola_runtime::RuntimeThread) -> i32 {
    let tid = t.tid.unwrap().0 as libc::pid_t;
    // SAFETY: a plain query of a thread of this process.
    unsafe { libc::sched_getscheduler(tid) }
}

/// A real-time worker kept busy with tasks of `size` bytes (`count` of
/// them) leaves its class for the normal one for part of the time, and is
/// back in it once it waits for work: as the kernel reports the thread's
/// class while it works and after. Returns its share of samples in its class.
fn duty_cycle_of_busy_worker(size: usize, count: u64) -> Option<f64> {
    let mut b = builder();
    // The duty cycle is on by default.
    b.realtime(Some(Realtime::default())).spin(Duration::ZERO);
    let rt = b.start().unwrap();
    let threads = rt.threads();
    let worker = threads.iter().find(|t| t.name == "isola-hash-0").unwrap();
    if !matches!(worker.realtime, RealtimeOutcome::Granted { .. }) {
        rt.shutdown();
        return None;
    }
    assert_eq!(class_of(worker), libc::SCHED_FIFO);
    let params = BTreeMap::new();
    let payload = text_payload(size, 1);
    let payloads: Vec<_> = (0..count).map(|_| payload.clone()).collect();
    // The sampler runs above the runtime's threads, so that it looks in
    // both parts of the cycle (a normal one would look mostly while the
    // worker is out of its class).
    let sampler = Realtime {
        round_robin: false,
        priority: 20,
    }
    .enter_current_thread();
    if !matches!(sampler, RealtimeOutcome::Granted { .. }) {
        rt.shutdown();
        return None;
    }
    let tickets: Vec<_> = payloads
        .into_iter()
        .map(|p| rt.tenant(TenantId(0)).submit("sha256", &params, p).unwrap())
        .collect();
    let (mut fifo, mut normal) = (0u32, 0u32);
    let started = std::time::Instant::now();
    while rt.stats()[0].succeeded < count * 9 / 10 && started.elapsed() < Duration::from_secs(60) {
        match class_of(worker) {
            libc::SCHED_FIFO => fifo += 1,
            libc::SCHED_OTHER => normal += 1,
            other => panic!("class {other}"),
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    for t in tickets {
        assert!(t.wait().result.is_ok());
    }
    assert!(
        normal > 0 && fifo > 0,
        "while busy: {fifo} samples real-time, {normal} normal"
    );
    // Idle again: back in its class, to be woken ahead of normal threads.
    let idle = std::time::Instant::now();
    while class_of(worker) != libc::SCHED_FIFO {
        assert!(idle.elapsed() < Duration::from_secs(5), "still normal once idle");
        std::thread::sleep(Duration::from_millis(1));
    }
    rt.shutdown();
    Some(fifo as f64 / (fifo + normal) as f64)
}

/// Tasks far shorter than the real-time part (256 KiB hashes, 0.15-0.2 ms
/// here) and tasks of about a millisecond (2 MiB), whose ends a phase
/// taken modulo the period would always find in the real-time part:
/// both leave the class for about a fifth of the time.
#[test]
fn a_busy_realtime_worker_keeps_a_duty_cycle() {
    let _alone = REALTIME_TESTS.lock();
    for (size, count) in [(256 << 10, 1_000), (2 << 20, 150)] {
        let Some(share) = duty_cycle_of_busy_worker(size, count) else {
            eprintln!("skipped: this system refuses real-time classes");
            return;
        };
        assert!(
            (0.3..0.97).contains(&share),
            "{size} B tasks: real-time share {share:.2}"
        );
    }
}

/// The CPU time the one worker of a runtime (real-time or not) spends on 100
/// tiny tasks 2 ms apart (each runs for microseconds), or `None`
/// where the system refused the real-time class asked for.
fn worker_cpu_over_spaced_tasks(realtime: bool) -> Option<u64> {
    let mut b = RuntimeBuilder::new();
    let cost = Arc::new(AffineCost::new(1_000.0, 1.0).unwrap());
    // Every task to the worker, none on the dispatcher.
    b.engine(EngineConfig::new("hash", &["sha256"], 1, cost).with_inline_below(0));
    b.tenant("t", Slo::default());
    b.mode(Mode::Native);
    b.spin(Duration::from_millis(1));
    if realtime {
        // The regime (no polling) is on by default.
        b.realtime(Some(Realtime::default()));
    }
    let rt = b.start().unwrap();
    let threads = rt.threads();
    let worker = threads.iter().find(|t| t.name == "isola-hash-0").unwrap();
    if realtime && !matches!(worker.realtime, RealtimeOutcome::Granted { .. }) {
        rt.shutdown();
        return None;
    }
    let before = worker.times().unwrap();
    for i in 0..100 {
        let done = rt
            .tenant(TenantId(0))
            .submit("sha256", &BTreeMap::new(), text_payload(64, i))
            .unwrap()
            .wait();
        assert!(done.result.is_ok());
        std::thread::sleep(Duration::from_millis(2));
    }
    let cpu = worker.times().unwrap().since(&before).cpu_ns;
    rt.shutdown();
    Some(cpu)
}

/// A real-time worker that keeps a duty cycle never polls for work,
/// whatever the runtime's spin:
/// two real-time threads polling on a 2-core machine leave no core to
/// the tenants waiting for their answers. A normal one polls after each
/// task, as asked (1 ms here, 100 times: up to 100 ms of CPU, as much of it
/// as the machine's other work leaves it).
#[test]
fn a_realtime_worker_sleeps_at_once_when_idle() {
    let _alone = REALTIME_TESTS.lock();
    let normal = worker_cpu_over_spaced_tasks(false).unwrap();
    assert!(normal > 20_000_000, "a normal worker polls: {normal} ns of CPU");
    let Some(realtime) = worker_cpu_over_spaced_tasks(true) else {
        eprintln!("skipped: this system refuses real-time classes");
        return;
    };
    assert!(
        realtime < normal / 4,
        "a real-time worker: {realtime} ns of CPU against {normal}"
    );
}
