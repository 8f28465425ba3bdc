//! The event queue: a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster
//! algorithms for the shortest path problem", J. ACM 37(2), 1990) over
//! event times, which a discrete-event simulator's are: monotone, no event
//! is scheduled before the last one taken.
//!
//! Events are taken in time order, and simultaneous events in the order
//! they were pushed, exactly as a binary heap keyed by (time, insertion
//! sequence) would give them, for fewer comparisons: an event is moved at
//! most once per bit of its time, and taking the next one is a bit scan
//! when it is not already in the bucket of the current instant.
//!
//! How: bucket 0 holds the events at the time of the last one taken
//! (`last`); bucket `b` (1 to 64) those whose time first differs from
//! `last` at bit `b - 1`. Two events of one time are always in the same
//! bucket (which bucket depends only on the time and `last`), buckets keep
//! their events in push order, and redistributing the lowest non-empty
//! bucket into the (empty) buckets below it keeps that order, so bucket 0
//! is first in, first out.

use isola_core::Nanos;
use std::collections::VecDeque;

/// Events by time, simultaneous ones in push order (see the module
/// documentation).
#[derive(Debug, Clone)]
pub struct EventQueue<E> {
    /// The time of the last event taken (0 before the first).
    last: Nanos,
    /// The events at `last`, in push order.
    now: VecDeque<(Nanos, E)>,
    /// Bucket `b + 1` of the module documentation at index `b`.
    later: [Vec<(Nanos, E)>; 64],
    /// Bit `b` set when `later[b]` is not empty.
    occupied: u64,
    len: usize,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            last: 0,
            now: VecDeque::new(),
            later: std::array::from_fn(|_| Vec::new()),
            occupied: 0,
            len: 0,
        }
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Events queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no event is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Queues `event` at `at`. A time before the last event taken is taken
    /// as that time (a simulator never schedules into its past; debug
    /// builds stop there).
    #[inline]
    pub fn push(&mut self, at: Nanos, event: E) {
        debug_assert!(
            at >= self.last,
            "event at {at} before the last taken ({})",
            self.last
        );
        let at = at.max(self.last);
        self.len += 1;
        self.place(at, event);
    }

    #[inline]
    fn place(&mut self, at: Nanos, event: E) {
        let diff = at ^ self.last;
        if diff == 0 {
            self.now.push_back((at, event));
        } else {
            let b = 63 - diff.leading_zeros() as usize;
            self.later[b].push((at, event));
            self.occupied |= 1 << b;
        }
    }

    /// Takes the earliest event (the first pushed among simultaneous ones)
    /// with its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        if self.now.is_empty() {
            self.refill();
        }
        let next = self.now.pop_front()?;
        self.len -= 1;
        Some(next)
    }

    /// Moves the earliest events into bucket 0, redistributing the lowest
    /// non-empty bucket below it: every event there shares the bits above
    /// its own bit with the new `last`, so each lands lower.
    fn refill(&mut self) {
        if self.occupied == 0 {
            return;
        }
        let b = self.occupied.trailing_zeros() as usize;
        self.occupied &= !(1 << b);
        let mut bucket = std::mem::take(&mut self.later[b]);
        self.last = bucket.iter().map(|e| e.0).min().unwrap_or(self.last);
        for (at, event) in bucket.drain(..) {
            self.place(at, event);
        }
        // Keep the bucket's storage for its next events.
        self.later[b] = bucket;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[test]
    fn simultaneous_events_keep_push_order() {
        let mut q = EventQueue::new();
        for (at, e) in [(5, 'a'), (3, 'b'), (5, 'c'), (3, 'd'), (u64::MAX, 'e'), (0, 'f')] {
            q.push(at, e);
        }
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![(0, 'f'), (3, 'b'), (3, 'd'), (5, 'a'), (5, 'c'), (u64::MAX, 'e')]
        );
        assert!(q.is_empty() && q.pop().is_none());
    }

    /// An operation on the queue: push an event `delay` after the last
    /// time taken (0: at it), or pop.
    #[derive(Debug, Clone)]
    enum Op {
        Push(u64),
        Pop,
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let delay = prop_oneof![
            Just(0u64),
            0u64..4,
            0u64..1_000,
            any::<u32>().prop_map(u64::from),
            (0u64..1 << 62),
        ];
        prop::collection::vec(prop_oneof![delay.prop_map(Op::Push), Just(Op::Pop)], 0..400)
    }

    proptest! {
        /// Against the standard library's binary heap keyed by (time,
        /// insertion sequence), the order the simulator's events had before
        /// this queue: any sequence of pushes (never before the last time
        /// taken) and pops gives the same events in the same order.
        #[test]
        fn pops_in_time_then_push_order_like_a_binary_heap(ops in ops()) {
            let mut q = EventQueue::new();
            let mut reference = BinaryHeap::new();
            let (mut last, mut seq) = (0u64, 0u64);
            for op in ops.into_iter().chain(std::iter::repeat_n(Op::Pop, 400)) {
                match op {
                    Op::Push(delay) => {
                        let at = last.saturating_add(delay);
                        seq += 1;
                        q.push(at, seq);
                        reference.push(Reverse((at, seq)));
                    }
                    Op::Pop => {
                        let want = reference.pop().map(|Reverse(k)| k);
                        prop_assert_eq!(q.pop(), want);
                        if let Some((at, _)) = want {
                            last = at;
                        }
                    }
                }
                prop_assert_eq!(q.len(), reference.len());
            }
        }
    }
}
