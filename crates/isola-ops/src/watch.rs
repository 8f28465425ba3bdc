//! Stopping an operator mid-task: the watch it asks between bounded chunks
//! of its work.
//!
//! isola-ops keeps no time. The driver hands [`Operator::run_watched`] a
//! [`Watch`]; the operator does its work in chunks of bounded cost (about
//! [`WATCH_CHUNK_BYTES`] of input, or of output for a decompressor) and asks
//! the watch before each one, the first included, so a task whose budget is
//! already spent does no work. When the watch says stop, the operator
//! returns [`OpError::Stopped`] and its partial output is dropped. The
//! runtime's watchdog is such a watch: it compares the clock with the
//! tenant's budget.
//!
//! Every watched run gives the output of [`Operator::run`], byte for byte:
//! the chunks are how the same work is paced, never a different
//! computation. [`Checkpoint`] is the one place where the watch is asked;
//! [`for_each_chunk`] is the generic chunk driver over an input's bytes.
//!
//! [`Operator::run_watched`]: crate::Operator::run_watched
//! [`Operator::run`]: crate::Operator::run

use crate::operator::OpError;
use std::ops::Range;

/// Asked between bounded chunks of an operator's work whether to stop.
/// isola-ops keeps no time: the driver decides (the runtime's watchdog
/// compares the clock with the tenant's budget).
pub trait Watch: Sync {
    /// Whether the operator should stop now (it then returns
    /// [`OpError::Stopped`]).
    fn should_stop(&self) -> bool;
}

/// A watch that never stops.
#[derive(Debug, Clone, Copy, Default)]
pub struct NeverStop;

impl Watch for NeverStop {
    fn should_stop(&self) -> bool {
        false
    }
}

/// Default input bytes of work between two checks.
pub const WATCH_CHUNK_BYTES: usize = 64 * 1024;

/// Where one watched run of operator `op` over `total` input bytes asks its
/// watch. Work whose cost is not its input (decompression: the output it
/// makes) is counted with [`Checkpoint::after`], which asks again once
/// about a chunk of it has been done.
pub struct Checkpoint<'w> {
    op: &'static str,
    total: u64,
    watch: &'w dyn Watch,
    /// Work counted since the last check, less whole chunks.
    pending: usize,
    /// Work between two checks.
    chunk: usize,
}

impl std::fmt::Debug for Checkpoint<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("op", &self.op)
            .field("total", &self.total)
            .field("pending", &self.pending)
            .field("chunk", &self.chunk)
            .finish_non_exhaustive()
    }
}

impl<'w> Checkpoint<'w> {
    /// A checkpoint of `op` over `total` input bytes, asking `watch` every
    /// [`WATCH_CHUNK_BYTES`] of work counted with [`Checkpoint::after`].
    pub fn new(op: &'static str, total: usize, watch: &'w dyn Watch) -> Self {
        Checkpoint {
            op,
            total: total as u64,
            watch,
            pending: 0,
            chunk: WATCH_CHUNK_BYTES,
        }
    }

    /// Asks the watch now, `done` input bytes into the task:
    /// [`OpError::Stopped`] if it says stop.
    pub fn check(&mut self, done: usize) -> Result<(), OpError> {
        if self.watch.should_stop() {
            return Err(OpError::Stopped {
                op: self.op,
                done: (done as u64).min(self.total),
                total: self.total,
            });
        }
        Ok(())
    }

    /// Counts `work` more bytes of work (e.g. output made) and asks the
    /// watch once a chunk of it has piled up since the last check; `done`
    /// is the input consumed so far.
    pub fn after(&mut self, work: usize, done: usize) -> Result<(), OpError> {
        self.pending = self.pending.saturating_add(work);
        if self.pending >= self.chunk {
            // The rest counts toward the next check: one per chunk of work.
            self.pending %= self.chunk;
            self.check(done)?;
        }
        Ok(())
    }
}

/// The generic chunk driver: calls `f` on consecutive ranges of `0..len`
/// of `chunk` bytes (the last one shorter), asking `watch` before each
/// (once, before any work, for an empty input). `chunk` 0 counts as 1.
pub fn for_each_chunk(
    op: &'static str,
    len: usize,
    chunk: usize,
    watch: &dyn Watch,
    f: impl FnMut(Range<usize>) -> Result<(), OpError>,
) -> Result<(), OpError> {
    Checkpoint::new(op, len, watch).each_chunk(len, chunk, f)
}

impl Checkpoint<'_> {
    /// [`for_each_chunk`] on this checkpoint, for work whose errors are
    /// its own (`E` holds the [`OpError::Stopped`] of a stop).
    pub fn each_chunk<E: From<OpError>>(
        &mut self,
        len: usize,
        chunk: usize,
        mut f: impl FnMut(Range<usize>) -> Result<(), E>,
    ) -> Result<(), E> {
        let chunk = chunk.max(1);
        let mut start = 0;
        loop {
            self.check(start)?;
            let end = start.saturating_add(chunk).min(len);
            f(start..end)?;
            if end >= len {
                return Ok(());
            }
            start = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Stops at its `n`th check, counting them.
    struct StopAt(usize, AtomicUsize);

    impl Watch for StopAt {
        fn should_stop(&self) -> bool {
            self.1.fetch_add(1, Ordering::Relaxed) + 1 >= self.0
        }
    }

    #[test]
    fn chunks_cover_the_input_and_stop_when_asked() {
        let mut seen = Vec::new();
        for_each_chunk("t", 10, 4, &NeverStop, |r| {
            seen.push(r);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, vec![0..4, 4..8, 8..10]);
        seen.clear();
        for_each_chunk("t", 0, 4, &NeverStop, |r| {
            seen.push(r);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, vec![0..0]);
        let watch = StopAt(2, AtomicUsize::new(0));
        let err = for_each_chunk("t", 10, 4, &watch, |_| Ok(())).unwrap_err();
        assert_eq!(
            err,
            OpError::Stopped {
                op: "t",
                done: 4,
                total: 10
            }
        );
        // Already spent: no work at all.
        let watch = StopAt(1, AtomicUsize::new(0));
        let err = for_each_chunk("t", 10, 4, &watch, |_| panic!("worked")).unwrap_err();
        assert!(matches!(err, OpError::Stopped { done: 0, .. }));
    }

    #[test]
    fn work_counted_after_asks_once_per_chunk() {
        let watch = StopAt(usize::MAX, AtomicUsize::new(0));
        let mut at = Checkpoint::new("t", 1, &watch);
        for _ in 0..10 {
            at.after(WATCH_CHUNK_BYTES / 2, 0).unwrap();
        }
        assert_eq!(watch.1.load(Ordering::Relaxed), 5);
    }
}
