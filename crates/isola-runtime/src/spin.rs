//! Waiting on a channel by polling it briefly before sleeping: a thread that
//! sleeps needs a futex wake-up (tens of microseconds on a virtual machine)
//! to run again, more than a small task's whole service time. DPU runtimes
//! poll for the same reason; the spin is bounded so idle threads still
//! leave their core to the others.

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

/// Receives from `rx`, polling for up to `spin` first, then blocking until
/// `deadline` (forever if `None`).
pub(crate) fn recv<T>(
    rx: &Receiver<T>,
    spin: Duration,
    deadline: Option<Instant>,
) -> Result<T, RecvTimeoutError> {
    if !spin.is_zero() {
        let start = Instant::now();
        let mut polls = 0u32;
        loop {
            match rx.try_recv() {
                Ok(v) => return Ok(v),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {}
            }
            // Yield rather than spin: with more runtime threads than cores,
            // the thread that has the work must get the core.
            std::thread::yield_now();
            polls = polls.wrapping_add(1);
            // Reading the clock costs more than a poll: every 8 polls.
            if polls % 8 == 0 {
                let now = Instant::now();
                if now.duration_since(start) >= spin || deadline.is_some_and(|d| now >= d) {
                    break;
                }
            }
        }
    }
    crate::threads::waits();
    let got = match deadline {
        Some(d) => rx.recv_deadline(d),
        None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
    };
    crate::threads::woke();
    got
}
