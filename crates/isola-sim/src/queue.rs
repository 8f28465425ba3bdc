//! The event queue: events by time, simultaneous ones in the order they
//! were pushed, so that a scenario and a seed give the same run every time.
//!
//! A binary min-heap keyed by one `u128`, time then push sequence, so that
//! a comparison is a single integer compare. A radix heap over the times
//! (monotone in a simulator) was measured against it (issue 17,
//! docs/perf.md): 4-6% slower on the M/M/1 queue and at 128 tenants, where
//! a handful to a few hundred events are pending, and 6% faster only at
//! 1,024 tenants; the heap stays.
//!
//! Written here rather than taken from `std::collections::BinaryHeap`:
//! its `pop` swaps the last element into the root in 8-byte pieces and
//! reads it back whole, a store-forwarding stall that cost 9-11% of the
//! M/M/1 run (issue 17). This heap keeps keys and events in two arrays and
//! moves a hole down from the root ("bottom-up" deletion, as std does
//! after its swap), so each element is read once and written once.

use isola_core::Nanos;

/// Events by time, simultaneous ones in push order (see the module
/// documentation).
#[derive(Debug, Clone)]
pub struct EventQueue<E> {
    /// Heap-ordered keys: time in the high 64 bits, push sequence in the
    /// low ones. `keys[i] <= keys[2i + 1], keys[2i + 2]`.
    keys: Vec<u128>,
    /// `events[i]` is the event of `keys[i]`.
    events: Vec<E>,
    pushed: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            keys: Vec::new(),
            events: Vec::new(),
            pushed: 0,
        }
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Events queued.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no event is queued.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Queues `event` at `at`.
    #[inline]
    pub fn push(&mut self, at: Nanos, event: E) {
        self.pushed += 1;
        let key = u128::from(at) << 64 | u128::from(self.pushed);
        // Sift up: move parents greater than `key` down into the hole.
        let mut hole = self.keys.len();
        self.keys.push(key);
        self.events.push(event);
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if self.keys[parent] <= key {
                break;
            }
            self.keys[hole] = self.keys[parent];
            self.events[hole] = self.events[parent];
            hole = parent;
        }
        self.keys[hole] = key;
        self.events[hole] = event;
        debug_assert_eq!(self.keys.len(), self.events.len());
    }

    /// Takes the earliest event (the first pushed among simultaneous ones)
    /// with its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let first = (*self.keys.first()?, self.events[0]);
        // The last element fills the hole left at the root.
        let (Some(key), Some(event)) = (self.keys.pop(), self.events.pop()) else {
            unreachable!("keys and events have the same length");
        };
        let n = self.keys.len();
        if n > 0 {
            // Move the hole down along the smaller children to a leaf, then
            // up to where the last element belongs: fewer comparisons than
            // stopping on the way down, since it usually belongs low.
            let mut hole = 0;
            let mut child = 1;
            while child + 1 < n {
                child += usize::from(self.keys[child + 1] < self.keys[child]);
                self.keys[hole] = self.keys[child];
                self.events[hole] = self.events[child];
                hole = child;
                child = 2 * hole + 1;
            }
            if child < n {
                self.keys[hole] = self.keys[child];
                self.events[hole] = self.events[child];
                hole = child;
            }
            while hole > 0 {
                let parent = (hole - 1) / 2;
                if self.keys[parent] <= key {
                    break;
                }
                self.keys[hole] = self.keys[parent];
                self.events[hole] = self.events[parent];
                hole = parent;
            }
            self.keys[hole] = key;
            self.events[hole] = event;
        }
        Some(((first.0 >> 64) as Nanos, first.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
    /// time taken (0: at it; a simulator never schedules into its past), or
    /// pop.
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
        /// Against the definition, a list searched for its least (time,
        /// push sequence): any sequence of pushes (times from 0 to the
        /// largest, simultaneous ones frequent) and pops gives the same
        /// events in the same order.
        #[test]
        fn pops_in_time_then_push_order(ops in ops()) {
            let mut q = EventQueue::new();
            let mut reference: Vec<(u64, u64)> = Vec::new();
            let (mut last, mut seq) = (0u64, 0u64);
            for op in ops.into_iter().chain(std::iter::repeat_n(Op::Pop, 400)) {
                match op {
                    Op::Push(delay) => {
                        let at = last.saturating_add(delay);
                        seq += 1;
                        q.push(at, seq);
                        reference.push((at, seq));
                    }
                    Op::Pop => {
                        let least = (0..reference.len()).min_by_key(|&i| reference[i]);
                        let want = least.map(|i| reference.remove(i));
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
