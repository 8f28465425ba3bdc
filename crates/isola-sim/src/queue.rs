//! The event queue: events by time, simultaneous ones in the order they
//! were pushed, so that a scenario and a seed give the same run every time.
//!
//! A binary heap of `Copy` entries keyed by one `u128`, time then push
//! sequence, so that a comparison is a single integer compare. Keys are
//! unique, so any heap pops the same sequence. A radix heap over the times
//! (monotone in a simulator) was measured against it (issue 17,
//! docs/perf.md): 4-6% slower on the M/M/1 queue and at 128 tenants, where
//! a handful to a few hundred events are pending, and 6% faster only at
//! 1,024 tenants; the heap stays.
//!
//! Written here rather than taken from `std`'s `BinaryHeap` (issue 34):
//! its `pop` swaps the last entry into the root with 8-byte stores and
//! reads the root straight back with 16-byte loads, and its `push` reads
//! back the entry it has just stored; both stall on store forwarding
//! (`perf annotate` put ~10% of `isola sim scenarios/mm1.toml` on those
//! loads). Here an entry being placed stays in registers: `push` moves
//! parents down into a hole and `pop` moves children up into one, and each
//! writes the entry once, where it ends.

use isola_core::Nanos;

/// A pending event and its key: time in the high 64 bits, push sequence in
/// the low ones.
#[derive(Debug, Clone, Copy)]
struct Pending<E> {
    key: u128,
    event: E,
}

/// Events by time, simultaneous ones in push order (see the module
/// documentation).
#[derive(Debug, Clone)]
pub struct EventQueue<E> {
    /// A binary min-heap on `key`: each entry's key is below its children's.
    heap: Vec<Pending<E>>,
    pushed: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: Vec::new(),
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
        self.heap.len()
    }

    /// Whether no event is queued.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Queues `event` at `at`.
    #[inline]
    pub fn push(&mut self, at: Nanos, event: E) {
        self.pushed += 1;
        let entry = Pending {
            key: u128::from(at) << 64 | u128::from(self.pushed),
            event,
        };
        // Grows the heap by one; the entry's final place is found below,
        // moving each later parent down into the hole it leaves.
        let mut hole = self.heap.len();
        self.heap.push(entry);
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if self.heap[parent].key < entry.key {
                break;
            }
            self.heap[hole] = self.heap[parent];
            hole = parent;
        }
        self.heap[hole] = entry;
    }

    /// Takes the earliest event (the first pushed among simultaneous ones)
    /// with its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let last = self.heap.pop()?;
        let Some(&first) = self.heap.first() else {
            return Some(((last.key >> 64) as Nanos, last.event));
        };
        // `last` takes the root's place: the smaller child moves up into
        // the hole while it is earlier than `last`.
        let n = self.heap.len();
        let mut hole = 0;
        loop {
            let left = 2 * hole + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.heap[right].key < self.heap[left].key {
                right
            } else {
                left
            };
            if self.heap[child].key > last.key {
                break;
            }
            self.heap[hole] = self.heap[child];
            hole = child;
        }
        self.heap[hole] = last;
        Some(((first.key >> 64) as Nanos, first.event))
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
