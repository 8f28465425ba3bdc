//! The runtime's threads: each started on the core it is pinned to and in
//! a real-time scheduling class where the builder asked for one and the
//! system permits it (else in the normal class, with the reason kept), and
//! registered with its kernel id, so that what the host does to it can be
//! read while it runs ([`crate::host::ThreadTimes`]).
//!
//! Where the builder asks (`RuntimeBuilder::realtime_duty_cycle`), a
//! real-time thread that stays busy keeps a duty cycle: a budget of time
//! in its class, spent while it runs there and earned back while it waits
//! or runs in the normal class ([`REALTIME_RUN`] for each rest of its
//! [`REALTIME_PERIOD`]); while it is spent, the thread runs in the normal
//! class until the budget is whole again or it waits (it always waits in
//! its class, and leaves it again on waking while still in debt). It is
//! checked between pieces of work (a task, a turn of the dispatcher's
//! loop), so a piece longer than the budget runs on in the class it
//! started in, and it bounds each thread alone (about 80% on average). A backlogged worker then holds its core
//! against every normal thread (a tenant's, the client waiting for its
//! answer) for about [`REALTIME_RUN`] at a time, and stays below the
//! kernel's real-time throttling (`sched_rt_runtime_us`, 950 ms of each
//! second by default), which would stop every real-time thread of the
//! CPU, the dispatcher too, for the rest of the second.

use crate::host::{ThreadId, ThreadTimes};
use serde::Serialize;
use std::cell::Cell;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The period of a busy real-time thread's duty cycle: it runs
/// [`REALTIME_RUN`] of it in its class at most, on average.
pub const REALTIME_PERIOD: Duration = Duration::from_millis(2);

/// A real-time thread's budget of time in its class: spent while it runs
/// there, earned back while it waits or runs in the normal class (this
/// much for each rest of [`REALTIME_PERIOD`]), up to this much. 80%: below
/// the kernel's throttling (95%), and a normal thread on its core waits
/// about 1.6 ms for it (a 10 ms period measured no better beside a flood,
/// and let a normal thread wait five times as long).
pub const REALTIME_RUN: Duration = Duration::from_micros(1_600);

/// A real-time scheduling class for the dispatcher and the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Realtime {
    /// Round-robin among equal priorities (`SCHED_RR`) rather than
    /// first-in first-out (`SCHED_FIFO`).
    pub round_robin: bool,
    /// Priority, 1 (lowest) to 99.
    pub priority: i32,
}

impl Realtime {
    /// One priority above this (at most 99): the dispatcher's, so that a
    /// worker busy on the dispatcher's core never keeps the arrivals
    /// waiting (threads of equal `SCHED_FIFO` priority do not preempt
    /// each other).
    pub fn above(self) -> Realtime {
        Realtime {
            priority: (self.priority + 1).min(99),
            ..self
        }
    }

    /// Puts the calling thread in this class, or says why not. The
    /// runtime's own threads enter theirs when they start; a driver's
    /// thread on the runtime's path (isolad's socket waker) calls this.
    pub fn enter_current_thread(self) -> RealtimeOutcome {
        enter_realtime(self)
    }
}

impl Default for Realtime {
    /// `SCHED_FIFO` at priority 10: above every normal thread, below the
    /// kernel's own real-time threads (at 50 and 99).
    fn default() -> Self {
        Realtime {
            round_robin: false,
            priority: 10,
        }
    }
}

/// What became of a thread's request for a real-time class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum RealtimeOutcome {
    /// None was asked for: the normal class.
    NotAsked,
    /// It runs in the class asked for.
    Granted {
        /// `SCHED_FIFO` or `SCHED_RR`.
        class: String,
        /// Its priority.
        priority: i32,
    },
    /// The system refused (typically: no `CAP_SYS_NICE` and no `RLIMIT_RTPRIO`):
    /// it runs in the normal class.
    Refused {
        /// Why, as the system said it.
        reason: String,
    },
}

/// One of the runtime's threads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeThread {
    /// Its name (`isola-dispatcher`, `isola-ENGINE-N`).
    pub name: String,
    /// Its kernel thread id, where the system has one.
    #[serde(skip)]
    pub tid: Option<ThreadId>,
    /// The core it is pinned to, if pinned.
    pub core: Option<usize>,
    /// Its scheduling class.
    pub realtime: RealtimeOutcome,
}

impl RuntimeThread {
    /// Its counters now (`None` once it has ended, or where the kernel does
    /// not expose them).
    pub fn times(&self) -> Option<ThreadTimes> {
        ThreadTimes::of(self.tid?)
    }
}

/// Starts thread `name` running `f`, pinned to `core` and in class
/// `realtime` where possible; returns once the thread has set itself up,
/// with its handle and its description.
pub(crate) fn spawn(
    name: String,
    core: Option<core_affinity::CoreId>,
    realtime: Option<Realtime>,
    duty_cycle: bool,
    f: impl FnOnce() + Send + 'static,
) -> std::io::Result<(JoinHandle<()>, RuntimeThread)> {
    let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
    let thread_name = name.clone();
    let handle = std::thread::Builder::new().name(name).spawn(move || {
        let pinned = core.filter(|&c| core_affinity::set_for_current(c)).map(|c| c.id);
        let me = RuntimeThread {
            name: thread_name,
            tid: ThreadId::current(),
            core: pinned,
            realtime: realtime.map_or(RealtimeOutcome::NotAsked, enter_realtime),
        };
        if let (Some(rt), RealtimeOutcome::Granted { .. }) = (realtime, &me.realtime) {
            DUTY.with(|d| d.set(Some(Duty::new(rt, duty_cycle))));
        }
        // The spawner waits on the other end; it only goes away if it
        // panicked, and then nobody wants the description.
        ready_tx.send(me).ok();
        f()
    })?;
    let me = ready_rx
        .recv()
        .map_err(|_| std::io::Error::other("a runtime thread ended before it started its work"))?;
    Ok((handle, me))
}

/// A real-time thread's duty cycle (the module's comment), kept as a
/// budget of time in its class: running in the class spends it; waiting
/// and running in the normal class earn it back, [`REALTIME_RUN`] for each
/// [`REALTIME_REST`], up to [`REALTIME_RUN`]. So no length of task and no
/// pattern of short waits keeps a busy thread in its class for more than
/// about 80% of its time, while a thread that mostly waits never leaves it.
#[derive(Debug, Clone, Copy)]
struct Duty {
    class: Realtime,
    /// It keeps the cycle (`RuntimeBuilder::realtime_duty_cycle`); if not,
    /// it stays in its class and this only marks it real-time.
    cycle: bool,
    /// What it may still run in its class (ns; at most [`REALTIME_RUN`]).
    budget_ns: i64,
    /// Since when it has been doing what it does now (the budget is
    /// brought up to date at each change).
    since: Option<Instant>,
    /// It runs in the normal class now.
    demoted: bool,
}

/// The rest a real-time thread's duty cycle gives the normal threads in
/// each period.
const REALTIME_REST: Duration = REALTIME_PERIOD.saturating_sub(REALTIME_RUN);

impl Duty {
    fn new(class: Realtime, cycle: bool) -> Duty {
        Duty {
            class,
            cycle,
            budget_ns: REALTIME_RUN.as_nanos() as i64,
            since: None,
            demoted: false,
        }
    }

    /// Brings the budget up to `now`: spent if it ran in its class,
    /// earned back if it `rested` (waited, or ran in the normal class).
    fn account(&mut self, now: Instant, rested: bool) {
        let elapsed = self.since.map_or(0, |s| now.duration_since(s).as_nanos() as i64);
        self.since = Some(now);
        let run = REALTIME_RUN.as_nanos() as i64;
        if rested {
            let earned = elapsed.saturating_mul(run) / (REALTIME_REST.as_nanos() as i64).max(1);
            self.budget_ns = self.budget_ns.saturating_add(earned).min(run);
        } else {
            self.budget_ns = self.budget_ns.saturating_sub(elapsed);
        }
    }

    /// Moves the calling thread to the class its budget gives it: out of
    /// its class once the budget is spent, back once it is whole again;
    /// `false` if the system no longer permits the real-time class.
    fn settle(&mut self) -> bool {
        if !self.demoted && self.budget_ns <= 0 {
            enter_normal();
            self.demoted = true;
        } else if self.demoted && self.budget_ns >= REALTIME_RUN.as_nanos() as i64 {
            return self.promote();
        }
        true
    }

    /// Back in its class; `false` if the system no longer permits it.
    fn promote(&mut self) -> bool {
        if !matches!(enter_realtime(self.class), RealtimeOutcome::Granted { .. }) {
            return false;
        }
        self.demoted = false;
        true
    }
}

thread_local! {
    /// The calling thread's duty cycle, if it is a runtime thread granted
    /// a real-time class.
    static DUTY: Cell<Option<Duty>> = const { Cell::new(None) };
}

/// Whether the calling thread is a runtime thread in a real-time class
/// (the system granted the class it asked for) that keeps a duty cycle;
/// such a thread never polls.
pub(crate) fn keeps_duty_cycle() -> bool {
    DUTY.with(|d| d.get().is_some_and(|d| d.cycle))
}

/// Applies `f` to the calling thread's duty cycle at `now`, if it has one;
/// forgets it if the system no longer permits the class.
fn with_duty(f: impl FnOnce(&mut Duty, Instant) -> bool) {
    DUTY.with(|d| {
        let Some(mut duty) = d.get().filter(|d| d.cycle) else {
            return;
        };
        if f(&mut duty, Instant::now()) {
            d.set(Some(duty));
        } else {
            // Stay in the normal class.
            d.set(None);
        }
    });
}

/// The calling thread has worked (after each piece of work: a task run, a
/// turn of the dispatcher's loop): a real-time thread whose budget is
/// spent moves to the normal class, and back once it has earned it again.
/// Costs nothing but a thread-local read on a thread not in a real-time
/// class.
pub(crate) fn worked() {
    with_duty(|duty, now| {
        let demoted = duty.demoted;
        duty.account(now, demoted);
        duty.settle()
    });
}

/// The calling thread has waited and has work again: the wait earned
/// budget back.
pub(crate) fn woke() {
    with_duty(|duty, now| {
        duty.account(now, true);
        duty.settle()
    });
}

/// The calling thread is about to wait for work: what it ran since it last
/// looked is counted, and a thread out of its class returns to it, so
/// that it is woken ahead of normal threads (its budget says whether it
/// keeps the class once it works again).
pub(crate) fn waits() {
    with_duty(|duty, now| {
        let demoted = duty.demoted;
        duty.account(now, demoted);
        !duty.demoted || duty.promote()
    });
}

/// Puts the calling thread in the normal class (always permitted).
fn enter_normal() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid sched_param; pid 0 is the calling
        // thread. Leaving a real-time class needs no privilege; should it
        // fail, the thread stays where it is, which is safe.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
    }
}

/// Puts the calling thread in class `rt`, or says why not.
fn enter_realtime(rt: Realtime) -> RealtimeOutcome {
    #[cfg(target_os = "linux")]
    {
        let (class, name) = if rt.round_robin {
            (libc::SCHED_RR, "SCHED_RR")
        } else {
            (libc::SCHED_FIFO, "SCHED_FIFO")
        };
        let param = libc::sched_param {
            sched_priority: rt.priority,
        };
        // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
        let rc = unsafe { libc::sched_setscheduler(0, class, &param) };
        if rc == 0 {
            RealtimeOutcome::Granted {
                class: name.into(),
                priority: rt.priority,
            }
        } else {
            RealtimeOutcome::Refused {
                reason: std::io::Error::last_os_error().to_string(),
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = rt;
        RealtimeOutcome::Refused {
            reason: "real-time classes are supported on Linux only".into(),
        }
    }
}
