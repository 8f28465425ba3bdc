//! The control path first (OSMOSIS R5): with every engine saturated (an
//! accelerator with a worker thread and processing units run on the
//! dispatcher's own thread, each kept with 240 tasks queued: over 100 ms
//! of work), an
//! `isola ctl set` is applied and answered, and the tenant's `SloChanged`
//! event is on its ring, within a few milliseconds: a change waits for the
//! piece of work in hand, never for the queued work (docs/daemon.md, "The
//! control path first").

mod backlog;

mod config_file;

use backlog::keep_busy;
use isola_daemon::Daemon;
use isola_wire::admin::{AdminReply, AdminRequest};
use isola_wire::{control, EventKind};
use rustix::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The bound on a change's round trip and on its event: below the work
/// queued on each engine (over 100 ms), far above one task (under 1 ms).
const PROMPT: Duration = Duration::from_millis(50);

/// Tasks each tenant keeps queued.
const TASKS: u64 = 240;

fn daemon() -> Daemon {
    let uid = rustix::process::getuid().as_raw();
    let text = format!(
        r#"[daemon]
socket = "isolad.sock"

[[engine]]
name = "acc"
workers = 1
policy = "sfq"
ops = ["sha256"]
cost = {{ base = "1us", per_byte_ns = 0.5 }}

[[engine]]
name = "pu"
kind = "pu"
workers = 0
policy = "wlbvt"
ops = ["sha1"]
cost = {{ base = "1us", per_byte_ns = 0.5 }}

[[tenant]]
name = "a"
memory_quota = "64MiB"
users = [{uid}]

[[tenant]]
name = "b"
memory_quota = "64MiB"
users = [{uid}]
"#
    );
    Daemon::start(config_file::parse("control-first", &text)).unwrap()
}

#[test]
fn a_change_and_its_event_arrive_promptly_while_every_engine_is_saturated() {
    let d = daemon();
    let admin = control::connect(d.admin_socket()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let done = [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))];
    let loops: Vec<_> = [("a", "sha256"), ("b", "sha1")]
        .into_iter()
        .zip(&done)
        .map(|((name, op), n)| {
            keep_busy(
                d.socket().to_path_buf(),
                name,
                op,
                TASKS,
                Arc::clone(&stop),
                Arc::clone(n),
            )
        })
        .collect();
    // Both engines busy, each tenant's backlog refilled as it goes.
    let deadline = Instant::now() + Duration::from_secs(60);
    while done.iter().any(|n| n.load(Ordering::Acquire) < TASKS) {
        assert!(Instant::now() < deadline, "the backlogs never ran");
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut asked_ns = Vec::new();
    let mut round_trips = Vec::new();
    for i in 0..20 {
        let request = AdminRequest::Set {
            tenant: "a".into(),
            changes: isola_daemon::ctl::key_changes(&[format!("weight={}", 2 + i % 3)], false).unwrap(),
        };
        asked_ns.push(d.runtime().now_ns());
        let sent = Instant::now();
        control::send(admin.as_fd(), &request, None).unwrap();
        let reply = control::recv::<AdminReply>(admin.as_fd()).unwrap().0;
        round_trips.push(sent.elapsed());
        assert!(matches!(reply, AdminReply::Done { .. }), "{reply:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
    let before_stop = done.each_ref().map(|n| n.load(Ordering::Acquire));
    stop.store(true, Ordering::Release);
    let mut ran: Vec<_> = loops.into_iter().map(|l| l.join().unwrap()).collect();
    // Every engine stayed saturated: each tenant still had its backlog when
    // the changes were done.
    for (n, before) in done.iter().zip(before_stop) {
        assert!(
            n.load(Ordering::Acquire) >= before + TASKS - 1,
            "a backlog ran dry"
        );
    }
    let worst = round_trips.iter().max().unwrap();
    eprintln!("ctl set round trips while saturated: {round_trips:?}");
    assert!(
        *worst <= PROMPT,
        "a change took {worst:?} while every engine was saturated"
    );
    // Each change's event reached tenant a's ring promptly after it was asked.
    let events: Vec<u64> = std::iter::from_fn(|| ran[0].event().unwrap())
        .filter(|e| e.kind == EventKind::SloChanged)
        .map(|e| e.at_ns)
        .collect();
    assert_eq!(events.len(), asked_ns.len(), "one event per change");
    for (asked, told) in asked_ns.iter().zip(&events) {
        let late = Duration::from_nanos(told.saturating_sub(*asked));
        assert!(late <= PROMPT, "an event came {late:?} after its change");
    }
}
