//! A connection's submission ring, polled by the runtime's dispatcher on
//! its own thread (`isola_runtime::Poller`): while the dispatcher spins it
//! takes the ring's entries straight to the core; before it blocks it sets
//! the ring's sleeping flag and looks once more, and the tenant, finding
//! the flag set, kicks the connection's socket, whose thread wakes the
//! dispatcher (io_uring's `SQ_NEED_WAKEUP`).

use crate::connection::{take_submissions, Conn};
use crate::Shared;
use isola_runtime::{OnCompletion, TenantHandle};
use isola_wire::Consumer;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The dispatcher's end of one connection's submission ring.
pub(crate) struct RingPoller {
    shared: Arc<Shared>,
    conn: Arc<Conn>,
    handle: TenantHandle,
    sq: Consumer,
    on_done: OnCompletion,
}

impl RingPoller {
    /// The poller of `conn`'s ring, submitting as `handle`, answering
    /// through `on_done`.
    pub(crate) fn new(
        shared: Arc<Shared>,
        conn: Arc<Conn>,
        handle: TenantHandle,
        on_done: OnCompletion,
    ) -> Self {
        let sq = Consumer::new(conn.region.layout().sq);
        RingPoller {
            shared,
            conn,
            handle,
            sq,
            on_done,
        }
    }

    /// Whether it should take nothing more.
    fn stopped(&self) -> bool {
        self.conn.closed.load(Ordering::Acquire) || self.conn.draining.load(Ordering::Acquire)
    }

    /// A corrupt ring ends its connection: the connection's thread is
    /// woken out of its socket read to close it.
    fn corrupted(&self) {
        self.conn.corrupt.store(true, Ordering::Release);
        self.conn.closed.store(true, Ordering::Release);
        let _ = rustix::net::shutdown(&self.conn.socket, rustix::net::Shutdown::Read);
    }
}

impl isola_runtime::Poller for RingPoller {
    fn poll(&mut self) -> usize {
        if self.stopped() {
            return 0;
        }
        match take_submissions(
            &self.shared,
            &self.conn,
            &self.handle,
            &mut self.sq,
            &self.on_done,
        ) {
            Ok(n) => n,
            Err(_) => {
                self.corrupted();
                0
            }
        }
    }

    fn sleep(&mut self) -> bool {
        let words = self.conn.region.words();
        self.sq.sleep(words, true);
        // Entries it could take now: poll on. Entries waiting for room in
        // the completion ring are not: the tenant kicks when it frees a seat.
        let ready = !self.stopped()
            && matches!(self.sq.available(words), Ok(n) if n > 0)
            && matches!(self.conn.has_room(), Ok(true));
        if ready {
            self.sq.sleep(words, false);
        }
        ready
    }

    fn wake(&mut self) {
        self.sq.sleep(self.conn.region.words(), false);
    }

    fn done(&self) -> bool {
        self.conn.closed.load(Ordering::Acquire)
    }
}

impl Drop for RingPoller {
    fn drop(&mut self) {
        self.conn.poller_gone.store(true, Ordering::Release);
    }
}
