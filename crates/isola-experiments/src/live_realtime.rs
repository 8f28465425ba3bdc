//! Live runs' threads ahead of the machine's other work.
//!
//! The simulator's engines never wait for a CPU, and its arrivals come
//! when their process says. On this shared 2-core machine a live worker
//! or dispatcher that blocks for a moment (between two tasks, waiting for
//! the next dispatch) waits behind other processes' threads for a
//! scheduler time slice before it runs again, and a packet sender that
//! sleeps until its next arrival wakes late the same way; per task, those
//! waits made most of the live tails (docs/perf.md, "Simulation against
//! live, tails"). So live runs can put the runtime's dispatcher and
//! workers in a real-time scheduling class, `SCHED_FIFO` at
//! [`RUNTIME_PRIORITY`] (`isola_runtime::Realtime`), where the system
//! permits it (where it does not, they run as before and the run goes on):
//! by default ([`Realtime::Packets`]) runs over packets, isolad's threads
//! and the packet senders one above them ([`SENDER_PRIORITY`]: the wire
//! does not wait for the device's CPU; a sender's packets are counted, so
//! one that falls behind sends them and stops). In-process runs only when
//! asked ([`Realtime::All`]): there the tenants' own threads submit, in
//! the normal class, and a real-time dispatcher busy with 512 B fragments
//! left OSMOSIS' DMA victim's driver waiting (279 of 4,953 tasks
//! completed), while putting the drivers above it once kept both cores
//! busy for minutes. `isola run --realtime off|packets|all` ([`set`]).

use std::sync::atomic::{AtomicU8, Ordering};

/// The runtime's threads' real-time priority (`Realtime::default()`'s).
pub const RUNTIME_PRIORITY: i32 = 10;

/// The packet senders' real-time priority: above the runtime's (the
/// workers' and, one above them, the dispatcher's), so that an arrival
/// is sent when it is due, whatever the engine is doing.
pub const SENDER_PRIORITY: i32 = RUNTIME_PRIORITY + 2;

/// Which live runs ask for real-time classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Realtime {
    /// None: every thread in the normal class.
    Off,
    /// Runs over packets: isolad's dispatcher and workers, and the senders.
    #[default]
    Packets,
    /// Those, and in-process runs' runtime threads (not their tenants').
    All,
}

static MODE: AtomicU8 = AtomicU8::new(1);

/// Sets which live runs that follow ask for real-time classes.
pub fn set(mode: Realtime) {
    MODE.store(mode as u8, Ordering::Relaxed);
}

/// Which live runs ask for real-time classes ([`set`]).
pub fn mode() -> Realtime {
    match MODE.load(Ordering::Relaxed) {
        0 => Realtime::Off,
        1 => Realtime::Packets,
        _ => Realtime::All,
    }
}

/// Whether runs over packets ask for real-time classes.
pub fn for_packets() -> bool {
    mode() != Realtime::Off
}

/// What an in-process run asks of its runtime's threads
/// (`RuntimeBuilder::realtime`): a real-time class under [`Realtime::All`].
pub fn runtime_threads() -> Option<isola_runtime::Realtime> {
    (mode() == Realtime::All).then_some(isola_runtime::Realtime {
        round_robin: false,
        priority: RUNTIME_PRIORITY,
    })
}

/// Puts the calling thread (a packet sender) in `SCHED_FIFO` at
/// [`SENDER_PRIORITY`] when runs over packets ask for it; returns whether
/// it is there.
pub fn enter_for_sender() -> bool {
    if !for_packets() {
        return false;
    }
    let param = libc::sched_param {
        sched_priority: SENDER_PRIORITY,
    };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}
