//! A split task's output, written in place by its subtasks: for operators
//! with a `Placement` (erasure coding, the block ciphers, independent
//! AES-GCM), every subtask writes its own disjoint ranges of one buffer
//! allocated when the task is split, so finishing the task copies nothing.
//! The dispatcher reassembling a 2 MiB parity output by copy took about a
//! millisecond, during which no engine got work: the latency tenant of the
//! demo paid for the bandwidth tenant's reassembly.
//!
//! Soundness rests on two checks made before any subtask runs, not on the
//! operator's word: every range lies inside the buffer, and no two ranges
//! of the task (of one subtask or of different ones) overlap. Each subtask
//! runs exactly once, on one worker, so each byte has at most one writer.

use std::cell::UnsafeCell;
use std::ops::Range;

/// One task's output buffer, shared by the workers running its subtasks.
pub(crate) struct PlacedOutput {
    buffer: UnsafeCell<Vec<u8>>,
    /// The buffer's start; the heap allocation never moves (the vector is
    /// never resized while shared).
    base: *mut u8,
    len: usize,
}

// SAFETY: workers only write through `regions`, whose ranges were checked
// pairwise disjoint and in bounds in `PlacedOutput::new`, and each subtask's
// ranges are handed to exactly one worker once. The buffer is read only in
// `into_vec`, after every subtask has reported back.
unsafe impl Sync for PlacedOutput {}
// SAFETY: as above; the raw pointer is into a heap buffer this value owns.
unsafe impl Send for PlacedOutput {}

/// Why a placement plan was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Overlap(pub String);

impl PlacedOutput {
    /// A zeroed output of `len` bytes for subtasks writing `regions` (one
    /// list per subtask). Refuses ranges out of bounds, reversed, or
    /// overlapping any other range of the task.
    pub(crate) fn new(len: usize, regions: &[Vec<Range<usize>>]) -> Result<Self, Overlap> {
        let mut all: Vec<&Range<usize>> = regions.iter().flatten().collect();
        all.sort_unstable_by_key(|r| (r.start, r.end));
        let mut at = 0;
        for r in all {
            if r.end < r.start || r.end > len {
                return Err(Overlap(format!(
                    "output range {r:?} lies outside the {len}-byte output"
                )));
            }
            if r.start < at {
                return Err(Overlap(format!("output range {r:?} overlaps another subtask's")));
            }
            at = r.end;
        }
        // `vec!` of zeros is one calloc: pages are zeroed by the kernel as the
        // subtasks first touch them, on the workers, not here.
        let mut buffer = vec![0u8; len];
        let base = buffer.as_mut_ptr();
        Ok(PlacedOutput {
            buffer: UnsafeCell::new(buffer),
            base,
            len,
        })
    }

    /// The mutable slices for one subtask's `regions`.
    ///
    /// # Safety
    /// `regions` must be one subtask's list as checked by `new`, and no other
    /// slice of those ranges may be alive (each subtask runs once).
    // Mutable slices from `&self` are the point: the buffer is behind an
    // `UnsafeCell`, and exclusivity is the caller's contract above.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn regions(&self, regions: &[Range<usize>]) -> Vec<&mut [u8]> {
        regions
            .iter()
            .map(|r| {
                debug_assert!(r.start <= r.end && r.end <= self.len);
                // SAFETY: in bounds and exclusive by `new`'s checks and the
                // caller's guarantee.
                unsafe { std::slice::from_raw_parts_mut(self.base.add(r.start), r.end - r.start) }
            })
            .collect()
    }

    /// The finished output, once every subtask has reported back. Workers
    /// drop their reference before reporting, so the buffer is normally
    /// taken as is; should one still be held, no worker writes any more
    /// and the bytes are copied.
    pub(crate) fn into_vec(this: std::sync::Arc<Self>) -> Vec<u8> {
        match std::sync::Arc::try_unwrap(this) {
            Ok(out) => out.buffer.into_inner(),
            // SAFETY: no writer is left (see above); reading is race-free.
            Err(shared) => unsafe { std::slice::from_raw_parts(shared.base, shared.len) }.to_vec(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // one range per subtask is the case under test
mod tests {
    use super::*;

    #[test]
    fn disjoint_ranges_are_accepted_and_written_in_place() {
        let out = std::sync::Arc::new(PlacedOutput::new(10, &[vec![0..3, 6..8], vec![3..6, 8..10]]).unwrap());
        // SAFETY: each list used once.
        for (list, byte) in [(vec![0..3, 6..8], 1u8), (vec![3..6, 8..10], 2u8)] {
            for s in unsafe { out.regions(&list) } {
                s.fill(byte);
            }
        }
        assert_eq!(PlacedOutput::into_vec(out), [1, 1, 1, 2, 2, 2, 1, 1, 2, 2]);
    }

    #[test]
    fn overlapping_or_outside_ranges_are_refused() {
        assert!(PlacedOutput::new(10, &[vec![0..4], vec![3..6]]).is_err());
        assert!(PlacedOutput::new(10, &[vec![0..4, 2..3]]).is_err());
        assert!(PlacedOutput::new(10, &[vec![8..11]]).is_err());
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = vec![5..4];
        assert!(PlacedOutput::new(10, &[reversed]).is_err());
        assert!(PlacedOutput::new(10, &[vec![0..0, 0..10]]).is_ok());
    }
}
