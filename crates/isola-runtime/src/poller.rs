//! Work the dispatcher polls besides its own channel: a tenant's
//! submission ring in memory shared with another process, say
//! (`isolad`'s). Polling it on the dispatcher's thread, in the same spin as
//! the channel, takes a submission to the core with no thread hand-off in
//! between: a ring's entry is on its way to the engine as soon as the
//! dispatcher sees it, as a thread of this process's submission is.
//!
//! The protocol is io_uring's `SQ_NEED_WAKEUP`: the dispatcher polls every
//! poller while it spins; before it blocks it tells each (`sleep`: set the
//! ring's sleeping flag, look once more), and a producer that finds the
//! flag set wakes it through [`crate::Runtime::wake_dispatcher`].

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

/// A source of submissions the dispatcher polls. It runs on the
/// dispatcher's thread: each call must be short and must not block (a
/// poller that panics is dropped).
pub trait Poller: Send {
    /// Takes what has arrived (submitting it through a tenant handle);
    /// returns how many items it took.
    fn poll(&mut self) -> usize;
    /// The dispatcher is about to block: tell producers that it sleeps,
    /// then look once more; `true` if something had arrived (the
    /// dispatcher then polls on, and calls [`Poller::wake`]).
    fn sleep(&mut self) -> bool;
    /// The dispatcher polls again.
    fn wake(&mut self);
    /// Whether it is finished (its tenant left): the dispatcher drops it.
    fn done(&self) -> bool;
}

/// Receives from `rx` while polling `pollers`, for up to `spin` after the
/// last item either gave; then tells the pollers it sleeps and blocks
/// until a message or `deadline`. `polled` is set if the pollers were
/// polled (a message already waiting is taken without polling them).
pub(crate) fn recv<T>(
    rx: &Receiver<T>,
    spin: Duration,
    deadline: Option<Instant>,
    pollers: &mut Vec<Box<dyn Poller>>,
    polled: &mut bool,
) -> Result<T, RecvTimeoutError> {
    let mut last = Instant::now();
    let mut polls = 0u32;
    loop {
        match rx.try_recv() {
            Ok(v) => return Ok(v),
            Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) => {}
        }
        *polled = true;
        if poll_all(pollers) > 0 {
            // Its submissions are messages on `rx` now. (A poller that
            // always has work, bad entries say, must not keep the
            // dispatcher from its deadline: shapers' releases, shutdown.)
            last = Instant::now();
            if deadline.is_some_and(|d| last >= d) {
                return Err(RecvTimeoutError::Timeout);
            }
            continue;
        }
        if spin.is_zero() {
            // No spin asked for: sleep as soon as nothing is there.
            break;
        }
        std::thread::yield_now();
        polls = polls.wrapping_add(1);
        // Reading the clock costs more than a poll: every 8 polls.
        if polls % 8 == 0 {
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Err(RecvTimeoutError::Timeout);
            }
            if now.duration_since(last) >= spin {
                break;
            }
        }
    }
    // Say so, look once more (no wake-up is lost: a producer that
    // published before the flag was set is seen here, one after it finds
    // the flag and wakes us), then block.
    let mut woke = false;
    for p in pollers.iter_mut() {
        woke |= crate::guard::catch(|| p.sleep()).unwrap_or(false);
    }
    let got = if woke {
        rx.try_recv().map_err(|e| match e {
            TryRecvError::Empty => RecvTimeoutError::Timeout,
            TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
        })
    } else {
        crate::threads::waits();
        let got = match deadline {
            Some(d) => rx.recv_deadline(d),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        crate::threads::woke();
        got
    };
    for p in pollers.iter_mut() {
        let _ = crate::guard::catch(|| p.wake());
    }
    got
}

/// Polls every poller once, dropping those finished or panicking; returns
/// how many items they took.
pub(crate) fn poll_all(pollers: &mut Vec<Box<dyn Poller>>) -> usize {
    let mut taken = 0;
    pollers.retain_mut(|p| match crate::guard::catch(|| (p.poll(), p.done())) {
        Ok((n, done)) => {
            taken += n;
            !done
        }
        Err(message) => {
            eprintln!("isola-runtime: a poller panicked and was dropped: {message}");
            false
        }
    });
    taken
}
