//! The runtime's threads: each started on the core it is pinned to and in
//! a real-time scheduling class where the builder asked for one and the
//! system permits it (else in the normal class, with the reason kept), and
//! registered with its kernel id, so that what the host does to it can be
//! read while it runs ([`crate::host::ThreadTimes`]).

use crate::host::{ThreadId, ThreadTimes};
use serde::Serialize;
use std::thread::JoinHandle;

/// A real-time scheduling class for the dispatcher and the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Realtime {
    /// Round-robin among equal priorities (`SCHED_RR`) rather than
    /// first-in first-out (`SCHED_FIFO`).
    pub round_robin: bool,
    /// Priority, 1 (lowest) to 99.
    pub priority: i32,
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
