//! Copying large inputs out of tenants' arenas off the dispatcher thread.
//!
//! isolad's submission rings are polled by the runtime's dispatcher (the
//! one thread that also takes every completion and fills every engine
//! seat). A task's input is copied out of the tenant's arena before the
//! task is handed to the runtime (the arena is the tenant's to rewrite at
//! any time). For an 8 MiB input that copy is a millisecond or more; done
//! on the dispatcher, it is a millisecond in which no other tenant's ring
//! is read: measured beside a tenant sending 8 MiB erasure-coding tasks,
//! a crc32c tenant's submissions waited 1-11 ms to be taken, its median
//! latency 1.9 ms against 90 us alone, while the engine itself served it
//! in 70 us. So inputs of [`ASIDE_BYTES`] or more are copied and
//! submitted on a thread of their own, in the order they were taken; the
//! dispatcher only checks the entry and hands it over.

/// Inputs at least this large (64 KiB) are copied off the dispatcher:
/// about 10 us of copying, the point where the copy outweighs the hand-off.
pub(crate) const ASIDE_BYTES: usize = 64 << 10;

/// One entry to copy in and submit.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The ingest thread's sending end; dropping it ends the thread once
/// what was handed over is done.
pub(crate) struct Ingest {
    tx: Option<crossbeam_channel::Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ingest {
    /// Starts the thread.
    pub(crate) fn start() -> std::io::Result<Ingest> {
        let (tx, rx) = crossbeam_channel::unbounded::<Job>();
        let thread = std::thread::Builder::new()
            .name("isolad-ingest".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })?;
        Ok(Ingest {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Runs `job` on the ingest thread; gives it back if the thread is gone.
    pub(crate) fn hand_over(&self, job: Job) -> Result<(), Job> {
        match &self.tx {
            Some(tx) => tx.send(job).map_err(|e| e.0),
            None => Err(job),
        }
    }

    /// Stops taking jobs and waits for those handed over.
    pub(crate) fn stop(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            // The last job may hold the last reference to what owns this:
            // the thread then ends on its own after it.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Ingest {
    fn drop(&mut self) {
        self.stop();
    }
}
