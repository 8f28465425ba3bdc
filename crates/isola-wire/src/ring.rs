//! The rings' protocol, io_uring's: a power-of-two array of entries and
//! two free-running 32-bit indices, the consumer's head and the producer's
//! tail, each on its own cache line of the ring's control block. The
//! producer writes an entry at `tail & mask`, then publishes it by storing
//! `tail + 1` with release ordering; the consumer reads `tail` with acquire
//! ordering, copies the entry at `head & mask` out, then frees its cell by
//! storing `head + 1` with release ordering.
//!
//! Each side keeps its own index and only reads the other's: a peer that
//! writes nonsense into its index (more entries published than the ring
//! holds, or freed) is caught as [`RingError::Corrupt`] and can hurt only
//! its own connection. Every access is an atomic load or store of an
//! aligned word, so a peer writing concurrently is never a data race here.
//!
//! Wake-ups, as io_uring's `SQ_NEED_WAKEUP`: a consumer polls the ring for
//! a bounded time, then says it sleeps ([`Consumer::sleep`]), checks the
//! ring once more and blocks on its socket; a producer that published an
//! entry checks [`Producer::consumer_sleeps`] and sends a wake-up only
//! then. Both sides order their flag and index with sequentially
//! consistent fences, so one of them always sees the other: no wake-up is
//! lost, and a polling consumer costs its producer no system call.

use crate::layout::{RingPlace, HEAD_WORD, SLEEPING_WORD, TAIL_WORD};
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// What a ring operation found wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// The ring is full (producer) : the consumer has not freed a cell.
    #[error("the ring is full")]
    Full,
    /// The peer's index is impossible: it claims `distance` entries
    /// between head and tail of a ring of `count`.
    #[error(
        "the peer's ring index is corrupt: {distance} entries between head and tail of a ring of {count}"
    )]
    Corrupt {
        /// Entries between head and tail, as the peer's index has it.
        distance: u32,
        /// The ring's size.
        count: u32,
    },
    /// The region is smaller than the ring's place in it, or the entry's
    /// size is not the ring's (a caller's mistake, not a peer's).
    #[error("the ring does not fit the region, or its entries are of another size")]
    Misplaced,
}

/// Which end of a ring a side holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingSide {
    /// Writes entries and the tail.
    Producer,
    /// Reads entries and writes the head.
    Consumer,
}

/// Checks that `place` (with entries of `n` words) lies inside `words`.
fn fits(words: &[AtomicU64], place: &RingPlace, n: usize) -> Result<(), RingError> {
    let end = place.entries + place.count as usize * place.entry_words;
    if place.entry_words != n || place.control + TAIL_WORD >= words.len() || end > words.len() {
        return Err(RingError::Misplaced);
    }
    Ok(())
}

/// The producing end of a ring: it owns the tail.
#[derive(Debug, Clone)]
pub struct Producer {
    place: RingPlace,
    tail: u32,
}

impl Producer {
    /// The producer of the ring at `place`, starting at index 0.
    pub fn new(place: RingPlace) -> Producer {
        debug_assert!(
            place.count.is_power_of_two(),
            "a ring's entries are a power of two"
        );
        Producer { place, tail: 0 }
    }

    /// Entries published and not yet consumed, by the consumer's head.
    pub fn pending(&self, words: &[AtomicU64]) -> Result<u32, RingError> {
        fits(words, &self.place, self.place.entry_words)?;
        let head = words[self.place.control + HEAD_WORD].load(Ordering::Acquire) as u32;
        let distance = self.tail.wrapping_sub(head);
        if distance > self.place.count {
            return Err(RingError::Corrupt {
                distance,
                count: self.place.count,
            });
        }
        Ok(distance)
    }

    /// Publishes `entry`, or says why it cannot.
    pub fn push<const N: usize>(&mut self, words: &[AtomicU64], entry: &[u64; N]) -> Result<(), RingError> {
        fits(words, &self.place, N)?;
        let pending = self.pending(words)?;
        if pending == self.place.count {
            return Err(RingError::Full);
        }
        // What `fits` and `pending` checked: a free cell, inside the region.
        debug_assert!(pending < self.place.count, "a push has a free cell");
        let cell = (self.tail & (self.place.count - 1)) as usize;
        let at = self.place.entries + cell * N;
        debug_assert!(
            cell < self.place.count as usize && at + N <= words.len(),
            "a ring's cell lies inside the region"
        );
        for (i, &w) in entry.iter().enumerate() {
            words[at + i].store(w, Ordering::Relaxed);
        }
        self.tail = self.tail.wrapping_add(1);
        words[self.place.control + TAIL_WORD].store(u64::from(self.tail), Ordering::Release);
        Ok(())
    }

    /// Whether the consumer said it sleeps, after what was published: the
    /// producer then wakes it (a peer's nonsense reads as "sleeps", which
    /// costs only a wake-up).
    pub fn consumer_sleeps(&self, words: &[AtomicU64]) -> bool {
        fence(Ordering::SeqCst);
        words
            .get(self.place.control + SLEEPING_WORD)
            .is_some_and(|w| w.load(Ordering::Relaxed) != 0)
    }
}

/// The consuming end of a ring: it owns the head.
#[derive(Debug, Clone)]
pub struct Consumer {
    place: RingPlace,
    head: u32,
}

impl Consumer {
    /// The consumer of the ring at `place`, starting at index 0.
    pub fn new(place: RingPlace) -> Consumer {
        debug_assert!(
            place.count.is_power_of_two(),
            "a ring's entries are a power of two"
        );
        Consumer { place, head: 0 }
    }

    /// Entries published and not yet consumed, by the producer's tail.
    pub fn available(&self, words: &[AtomicU64]) -> Result<u32, RingError> {
        fits(words, &self.place, self.place.entry_words)?;
        let tail = words[self.place.control + TAIL_WORD].load(Ordering::Acquire) as u32;
        let distance = tail.wrapping_sub(self.head);
        if distance > self.place.count {
            return Err(RingError::Corrupt {
                distance,
                count: self.place.count,
            });
        }
        Ok(distance)
    }

    /// Says this consumer sleeps (`true`) and wants a wake-up for the next
    /// entry, or polls (`false`). After saying it sleeps, check the ring
    /// once more before blocking: an entry published just before is not
    /// woken for.
    pub fn sleep(&self, words: &[AtomicU64], sleeping: bool) {
        if let Some(w) = words.get(self.place.control + SLEEPING_WORD) {
            w.store(u64::from(sleeping), Ordering::Relaxed);
        }
        fence(Ordering::SeqCst);
    }

    /// Copies the next entry out and frees its cell, if there is one.
    pub fn pop<const N: usize>(&mut self, words: &[AtomicU64]) -> Result<Option<[u64; N]>, RingError> {
        fits(words, &self.place, N)?;
        let available = self.available(words)?;
        if available == 0 {
            return Ok(None);
        }
        // What `fits` and `available` checked: a published entry, inside
        // the region, whatever the peer wrote into its index.
        debug_assert!(
            available <= self.place.count,
            "no more published than the ring holds"
        );
        let cell = (self.head & (self.place.count - 1)) as usize;
        let at = self.place.entries + cell * N;
        debug_assert!(
            cell < self.place.count as usize && at + N <= words.len(),
            "a ring's cell lies inside the region"
        );
        let mut entry = [0u64; N];
        for (i, w) in entry.iter_mut().enumerate() {
            *w = words[at + i].load(Ordering::Relaxed);
        }
        self.head = self.head.wrapping_add(1);
        words[self.place.control + HEAD_WORD].store(u64::from(self.head), Ordering::Release);
        Ok(Some(entry))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Geometry;

    fn region(words: usize) -> Vec<AtomicU64> {
        (0..words).map(|_| AtomicU64::new(0)).collect()
    }

    #[test]
    fn entries_come_out_in_order_and_the_ring_fills() {
        let l = Geometry {
            sq_entries: 4,
            cq_entries: 4,
            eq_entries: 4,
            arena_bytes: 0,
        }
        .layout()
        .unwrap();
        let words = region(l.total_bytes as usize / 8);
        let (mut p, mut c) = (Producer::new(l.sq), Consumer::new(l.sq));
        // Several laps, so the indices wrap the cells.
        for lap in 0..5u64 {
            for i in 0..4u64 {
                p.push(&words, &[lap, i, 0, 0, 0, 0]).unwrap();
            }
            assert_eq!(p.push(&words, &[9; 6]), Err(RingError::Full));
            for i in 0..4u64 {
                assert_eq!(c.pop::<6>(&words).unwrap(), Some([lap, i, 0, 0, 0, 0]));
            }
            assert_eq!(c.pop::<6>(&words).unwrap(), None);
        }
        // A wrong entry size is the caller's mistake.
        assert_eq!(p.push(&words, &[0u64; 8]), Err(RingError::Misplaced));
    }

    #[test]
    fn a_peer_that_corrupts_its_index_is_caught() {
        let l = Geometry {
            sq_entries: 8,
            cq_entries: 8,
            eq_entries: 8,
            arena_bytes: 0,
        }
        .layout()
        .unwrap();
        let words = region(l.total_bytes as usize / 8);
        // A tenant claims a million submissions in a ring of 8.
        words[l.sq.control + TAIL_WORD].store(1_000_000, Ordering::Release);
        let mut c = Consumer::new(l.sq);
        assert!(matches!(
            c.pop::<6>(&words),
            Err(RingError::Corrupt { count: 8, .. })
        ));
        // A tenant moves the completion ring's head past the tail.
        words[l.cq.control + HEAD_WORD].store(5, Ordering::Release);
        let mut p = Producer::new(l.cq);
        assert!(matches!(
            p.push(&words, &[0u64; 8]),
            Err(RingError::Corrupt { .. })
        ));
    }
}
