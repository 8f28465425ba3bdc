//! The runtime's threads: each started on the core it is pinned to and in
//! a real-time scheduling class where the builder asked for one and the
//! system permits it (else in the normal class, with the reason kept), and
//! registered with its kernel id, so that what the host does to it can be
//! read while it runs ([`crate::host::ThreadTimes`]).
//!
//! Where the builder asks (`RuntimeBuilder::realtime_duty_cycle`, on by
//! default), the real-time threads keep a regime ([`Regime`]): none of
//! them polls (a real-time thread that polls holds its core against every
//! normal thread), and a worker that stays busy keeps a duty cycle: a
//! budget of time in its class, spent while it runs there and earned back
//! while it waits or runs in the normal class ([`REALTIME_RUN`] for each
//! rest of its [`REALTIME_PERIOD`]). While it is spent, the worker runs
//! its tasks in the normal class until the budget is whole again, about
//! 80% of its time in class at most; a normal thread on its core (a
//! tenant's, the client waiting for its answer) then waits about
//! [`REALTIME_RUN`] for it, and the worker stays below the kernel's
//! real-time throttling (`sched_rt_runtime_us`, 950 ms of each second by
//! default), which would stop every real-time thread of the CPU for the
//! rest of the second.
//!
//! Only a worker's operator runs out of the class: the worker is back in
//! it as the operator returns, before the task's completion (which may
//! submit more work), its report and its next look at its queue; the
//! dispatcher and the delivery thread never leave it (and so keep no duty
//! cycle: an engine run on the dispatcher can keep it in its class into
//! the throttling). The runtime's threads talk
//! through lock-free channels whose receivers and senders spin, yielding,
//! while another thread is half-way through a send (crossbeam's), and a
//! real-time thread's yield gives its core to no thread below its own
//! priority: a real-time dispatcher spinning for a sender the kernel took
//! off the same core, in the normal class or below the dispatcher's
//! priority, would spin until the throttling stopped it. So every
//! real-time thread of the runtime (and a driver's thread on its path,
//! isolad's socket waker) runs at the one priority the builder gives, and
//! none of them talks to another from the normal class. (The dispatcher
//! one priority above the workers was measured: a worker that had
//! reserved a slot of the dispatcher's channel and was preempted on its
//! core before it wrote it left the dispatcher and the waker spinning at
//! 93% of both cores for minutes, `isola repro osmosis-pu --live`.)

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

/// Which runtime a thread belongs to: the address of its shared state,
/// unique while the runtime lives (its threads hold that state).
pub(crate) type RuntimeId = usize;

/// Starts thread `name` of runtime `owner` running `f`, pinned to `core`
/// and in class `realtime` where possible (keeping `regime` there);
/// returns once the thread has set itself up, with its handle and its
/// description.
pub(crate) fn spawn(
    name: String,
    core: Option<core_affinity::CoreId>,
    realtime: Option<Realtime>,
    regime: Regime,
    owner: RuntimeId,
    f: impl FnOnce() + Send + 'static,
) -> std::io::Result<(JoinHandle<()>, RuntimeThread)> {
    let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
    let thread_name = name.clone();
    let handle = std::thread::Builder::new().name(name).spawn(move || {
        RUNTIME_THREAD.with(|r| r.set(Some(owner)));
        let pinned = core.filter(|&c| core_affinity::set_for_current(c)).map(|c| c.id);
        let me = RuntimeThread {
            name: thread_name,
            tid: ThreadId::current(),
            core: pinned,
            realtime: realtime.map_or(RealtimeOutcome::NotAsked, enter_realtime),
        };
        if let (Some(rt), RealtimeOutcome::Granted { .. }) = (realtime, &me.realtime) {
            DUTY.with(|d| d.set(Some(Duty::new(rt, regime))));
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

/// What a runtime thread granted a real-time class does there (the
/// module's comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Regime {
    /// As without the regime (`realtime_duty_cycle = false`): it polls as
    /// the runtime's spin says and never leaves its class.
    Plain,
    /// It never polls and never leaves its class: the dispatcher and the
    /// delivery thread, which every other thread talks to.
    Steady,
    /// It never polls, and runs its tasks in the normal class while its
    /// budget is spent: a worker.
    Budgeted,
}

/// A real-time thread's regime and, for a worker, its duty cycle kept as a
/// budget of time in its class: running in the class spends it; waiting
/// and running in the normal class earn it back, [`REALTIME_RUN`] for each
/// [`REALTIME_REST`], up to [`REALTIME_RUN`]. So no length of task and no
/// pattern of short waits keeps a busy worker in its class for more than
/// about 80% of its time, while one that mostly waits never leaves it.
#[derive(Debug, Clone, Copy)]
struct Duty {
    class: Realtime,
    regime: Regime,
    /// What it may still run in its class (ns; at most [`REALTIME_RUN`]).
    budget_ns: i64,
    /// Since when it has been doing what it does now (the budget is
    /// brought up to date at each change).
    since: Option<Instant>,
    /// Its budget ran out and is not whole again: its tasks run in the
    /// normal class.
    in_debt: bool,
    /// It runs in the normal class now.
    demoted: bool,
}

/// The rest a real-time thread's duty cycle gives the normal threads in
/// each period.
const REALTIME_REST: Duration = REALTIME_PERIOD.saturating_sub(REALTIME_RUN);

impl Duty {
    fn new(class: Realtime, regime: Regime) -> Duty {
        Duty {
            class,
            regime,
            budget_ns: REALTIME_RUN.as_nanos() as i64,
            since: None,
            in_debt: false,
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
        if self.budget_ns <= 0 {
            self.in_debt = true;
        } else if self.budget_ns >= run {
            self.in_debt = false;
        }
        debug_assert!(self.budget_ns <= run, "the budget never exceeds REALTIME_RUN");
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
    /// The calling thread's regime, if it is a runtime thread granted a
    /// real-time class.
    static DUTY: Cell<Option<Duty>> = const { Cell::new(None) };
    /// The runtime the calling thread belongs to (started by [`spawn`]).
    static RUNTIME_THREAD: Cell<Option<RuntimeId>> = const { Cell::new(None) };
}

/// Whether the calling thread is one of runtime `id`'s own (its
/// dispatcher, a worker, its delivery thread): such a thread must never
/// wait for that runtime to stop, since stopping waits for it.
pub(crate) fn on_thread_of(id: RuntimeId) -> bool {
    RUNTIME_THREAD.with(|r| r.get() == Some(id))
}

/// Whether the calling thread is a runtime thread in a real-time class
/// (the system granted the class it asked for) under the regime: such a
/// thread never polls.
pub(crate) fn never_polls() -> bool {
    DUTY.with(|d| d.get().is_some_and(|d| d.regime != Regime::Plain))
}

/// Applies `f` to the calling worker's duty cycle at `now`, if it keeps
/// one; forgets it if the system no longer permits the class (the thread
/// then runs as a normal one, polling as the runtime's spin says).
fn with_budget(f: impl FnOnce(&mut Duty, Instant) -> bool) {
    DUTY.with(|d| {
        let Some(mut duty) = d.get().filter(|d| d.regime == Regime::Budgeted) else {
            return;
        };
        if f(&mut duty, Instant::now()) {
            d.set(Some(duty));
        } else {
            // Said once: the thread keeps no duty cycle from now on.
            eprintln!(
                "isola-runtime: {} could not return to its real-time class; it runs in the normal class from now on",
                std::thread::current().name().unwrap_or("a runtime thread")
            );
            d.set(None);
        }
    });
}

/// The calling worker is about to run a task's operator: in debt, it runs
/// it in the normal class, until [`task_ends`]. Costs nothing but a
/// thread-local read on a thread that keeps no duty cycle.
pub(crate) fn task_starts() {
    with_budget(|duty, now| {
        debug_assert!(!duty.demoted, "a worker is in its class between operators");
        duty.account(now, false);
        if duty.in_debt {
            enter_normal();
            duty.demoted = true;
        }
        true
    });
}

/// The calling worker's operator has returned: back in its class before
/// anything else (the task's completion, which may submit more work, its
/// report, its next look at its queue: the module's comment says why), so
/// that it also always waits there, to be woken ahead of normal threads.
pub(crate) fn task_ends() {
    with_budget(|duty, now| {
        let demoted = duty.demoted;
        duty.account(now, demoted);
        !demoted || duty.promote()
    });
}

/// The calling thread is about to wait for work: what it ran in its class
/// since it last looked is counted.
pub(crate) fn waits() {
    with_budget(|duty, now| {
        debug_assert!(!duty.demoted, "a worker waits in its class");
        duty.account(now, false);
        true
    });
}

/// The calling thread has waited and has work again: the wait earned
/// budget back.
pub(crate) fn woke() {
    with_budget(|duty, now| {
        duty.account(now, true);
        true
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
