//! Live runs' threads ahead of the machine's other work.
//!
//! The simulator's engines never wait for a CPU, and its arrivals come
//! when their process says. On this shared 2-core machine a live worker
//! or dispatcher that blocks for a moment (between two tasks, waiting for
//! the next dispatch) waits behind other processes' threads for a
//! scheduler time slice before it runs again, and a packet sender that
//! sleeps until its next arrival wakes late the same way; per task, those
//! waits made most of the live tails (docs/perf.md, "Simulation against
//! live, tails"). So by default live runs put the runtime's dispatcher
//! and workers (and isolad's, over packets) in a real-time scheduling
//! class, `SCHED_FIFO` at [`RUNTIME_PRIORITY`] (`isola_runtime::Realtime`),
//! and the packet senders one above it ([`SENDER_PRIORITY`]: the wire does
//! not wait for the device's CPU), where the system permits it; where it
//! does not, they run as before and the run goes on. `isola run
//! --no-realtime` ([`set_realtime`]) shows what it removes.

use std::sync::atomic::{AtomicBool, Ordering};

/// The runtime's threads' real-time priority (`Realtime::default()`'s).
pub const RUNTIME_PRIORITY: i32 = 10;

/// The packet senders' real-time priority: above the runtime's, so that
/// an arrival is sent when it is due, whatever the engine is doing.
pub const SENDER_PRIORITY: i32 = RUNTIME_PRIORITY + 1;

static REALTIME: AtomicBool = AtomicBool::new(true);

/// Turns real-time classes for live runs' threads on or off for the runs
/// that follow (on by default).
pub fn set_realtime(on: bool) {
    REALTIME.store(on, Ordering::Relaxed);
}

/// Whether live runs ask for real-time classes ([`set_realtime`]).
pub fn realtime() -> bool {
    REALTIME.load(Ordering::Relaxed)
}

/// What a live run asks of its runtime's threads
/// (`RuntimeBuilder::realtime`): a real-time class when [`realtime`].
pub fn runtime_threads() -> Option<isola_runtime::Realtime> {
    realtime().then(|| isola_runtime::Realtime {
        round_robin: false,
        priority: RUNTIME_PRIORITY,
    })
}

/// Puts the calling thread (a packet sender) in `SCHED_FIFO` at
/// [`SENDER_PRIORITY`] when [`realtime`]; returns whether it is there.
pub fn enter_for_sender() -> bool {
    if !realtime() {
        return false;
    }
    let param = libc::sched_param {
        sched_priority: SENDER_PRIORITY,
    };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}
