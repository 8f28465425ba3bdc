//! An indexed binary min-heap over dense tenant indices, with keys that can be
//! changed or removed in O(log n). Tag-based policies (FCFS, SFQ, BVT, mClock)
//! and the scheduler's shaper queues keep their ready tenants in one.
//!
//! Written by hand because the general crates (`priority-queue`,
//! `keyed_priority_queue`) index items through a hash map; tenants here are
//! already dense integers, so a position array is enough and much cheaper.

const ABSENT: u32 = u32::MAX;

/// A heap key: a tag, then a tie-breaker (lower wins on equal tags).
///
/// Stored as one `u128` whose integer order is the key order (the tag's IEEE
/// bits mapped to a total order in the high half, the tie in the low half),
/// so comparing two keys is a single integer compare with no data-dependent
/// branches while sifting. `Ord` is that order: tags by `f64::total_cmp`,
/// then ties.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct HeapKey {
    ord: u128,
}

const SIGN: u64 = 1 << 63;

impl HeapKey {
    /// A key with the given tag and tie-breaker.
    #[inline]
    pub fn new(tag: f64, tie: u64) -> Self {
        let bits = tag.to_bits();
        // Positive floats: set the sign bit; negative: flip all bits. This
        // makes unsigned integer order equal to `f64::total_cmp` order.
        let ordered = if bits & SIGN == 0 { bits | SIGN } else { !bits };
        HeapKey {
            ord: (ordered as u128) << 64 | tie as u128,
        }
    }

    /// The primary order (a virtual time, a due time, ...).
    #[inline]
    pub fn tag(self) -> f64 {
        let ordered = (self.ord >> 64) as u64;
        let bits = if ordered & SIGN != 0 {
            ordered & !SIGN
        } else {
            !ordered
        };
        f64::from_bits(bits)
    }

    /// Decides between equal tags (an arrival sequence number, a tenant index).
    #[inline]
    pub fn tie(self) -> u64 {
        self.ord as u64
    }
}

/// Min-heap of items `0..n` with one key each. Keys live inline with the
/// heap entries (no indirection while sifting); `pos` maps an item to its entry.
#[derive(Debug, Clone, Default)]
pub struct IndexedHeap {
    heap: Vec<(HeapKey, u32)>,
    pos: Vec<u32>,
}

impl IndexedHeap {
    /// An empty heap for items `0..n`.
    pub fn new(n: usize) -> Self {
        IndexedHeap {
            heap: Vec::with_capacity(n),
            pos: vec![ABSENT; n],
        }
    }

    /// Number of items in the heap.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether the heap is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Whether `item` is in the heap.
    #[inline]
    pub fn contains(&self, item: usize) -> bool {
        self.pos[item] != ABSENT
    }

    /// The key of `item` if it is in the heap.
    #[inline]
    pub fn key(&self, item: usize) -> Option<HeapKey> {
        match self.pos[item] {
            ABSENT => None,
            p => Some(self.heap[p as usize].0),
        }
    }

    /// The item with the smallest key, and that key.
    #[inline]
    pub fn peek(&self) -> Option<(usize, HeapKey)> {
        self.heap.first().map(|&(k, i)| (i as usize, k))
    }

    /// The smallest tag in the heap.
    #[inline]
    pub fn min_tag(&self) -> Option<f64> {
        self.heap.first().map(|&(k, _)| k.tag())
    }

    /// Inserts `item` with `key`, or changes its key if it is already there.
    #[inline]
    pub fn set(&mut self, item: usize, key: HeapKey) {
        // Alone in the heap (one tenant ready, the common case of a
        // lightly loaded engine), it stays where it is: inlined, without
        // the call the general case takes (issue 34: 20 instructions a
        // task under `fcfs`).
        if self.heap.len() == 1 && self.pos[item] == 0 {
            self.heap[0].0 = key;
            return;
        }
        self.set_sifting(item, key);
    }

    /// [`IndexedHeap::set`] where the item may move.
    #[inline(never)]
    fn set_sifting(&mut self, item: usize, key: HeapKey) {
        match self.pos[item] {
            ABSENT => {
                self.heap.push((key, item as u32));
                self.sift_up(self.heap.len() - 1);
            }
            p => {
                let p = p as usize;
                let old = std::mem::replace(&mut self.heap[p].0, key);
                if key < old {
                    self.sift_up(p);
                } else {
                    self.sift_down(p);
                }
            }
        }
    }

    /// Removes `item` if present.
    pub fn remove(&mut self, item: usize) {
        let p = self.pos[item];
        if p == ABSENT {
            return;
        }
        let p = p as usize;
        self.pos[item] = ABSENT;
        let last = self.heap.pop().expect("an item with a position is in the heap");
        if p < self.heap.len() {
            // Put the last entry in the hole and restore order from there.
            self.heap[p] = last;
            self.sift_down(p);
            self.sift_up(p);
        }
    }

    /// Removes and returns the item with the smallest key.
    pub fn pop(&mut self) -> Option<(usize, HeapKey)> {
        let top = self.peek()?;
        self.remove(top.0);
        Some(top)
    }

    /// Moves the entry at `p` up to its place (hole technique: one write per level).
    fn sift_up(&mut self, mut p: usize) {
        let entry = self.heap[p];
        while p > 0 {
            let parent = (p - 1) / 2;
            if entry.0 >= self.heap[parent].0 {
                break;
            }
            self.heap[p] = self.heap[parent];
            self.pos[self.heap[p].1 as usize] = p as u32;
            p = parent;
        }
        self.heap[p] = entry;
        self.pos[entry.1 as usize] = p as u32;
    }

    /// Moves the entry at `p` down to its place (hole technique). The
    /// smaller child's index is computed, not branched on; the only branch
    /// per level is whether to go on, which is predictable.
    fn sift_down(&mut self, mut p: usize) {
        let n = self.heap.len();
        let entry = self.heap[p];
        loop {
            let l = 2 * p + 1;
            let c = if l + 1 < n {
                l + usize::from(self.heap[l + 1].0 < self.heap[l].0)
            } else if l < n {
                l
            } else {
                break;
            };
            if self.heap[c].0 >= entry.0 {
                break;
            }
            self.heap[p] = self.heap[c];
            self.pos[self.heap[p].1 as usize] = p as u32;
            p = c;
        }
        self.heap[p] = entry;
        self.pos[entry.1 as usize] = p as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Set(usize, i16, u8),
        Remove(usize),
        Pop,
    }

    /// Items in the model: enough for six levels, so sifts cross several.
    const ITEMS: usize = 40;

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0usize..ITEMS, any::<i16>(), any::<u8>()).prop_map(|(i, t, k)| Op::Set(i, t, k)),
            (0usize..ITEMS).prop_map(Op::Remove),
            Just(Op::Pop),
        ]
    }

    #[test]
    fn keys_round_trip_and_order_like_total_cmp() {
        let tags = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            3.0,
            1e300,
            f64::INFINITY,
        ];
        for (i, &a) in tags.iter().enumerate() {
            assert_eq!(HeapKey::new(a, 7).tag().to_bits(), a.to_bits());
            assert_eq!(HeapKey::new(a, 7).tie(), 7);
            for &b in &tags[i + 1..] {
                assert!(HeapKey::new(a, 9) < HeapKey::new(b, 0), "{a} < {b}");
            }
            assert!(HeapKey::new(a, 1) < HeapKey::new(a, 2));
        }
    }

    proptest! {
        /// The heap agrees with a brute-force model after any sequence of operations.
        #[test]
        fn matches_a_brute_force_model(ops in proptest::collection::vec(op(), 0..600)) {
            let mut h = IndexedHeap::new(ITEMS);
            let mut model: Vec<Option<HeapKey>> = vec![None; ITEMS];
            for o in ops {
                match o {
                    Op::Set(i, t, k) => { let key = HeapKey::new(t as f64, k as u64); h.set(i, key); model[i] = Some(key); }
                    Op::Remove(i) => { h.remove(i); model[i] = None; }
                    Op::Pop => {
                        let want = model.iter().enumerate().filter_map(|(i, k)| k.map(|k| (i, k)))
                            .min_by(|a, b| a.1.tag().total_cmp(&b.1.tag()).then(a.1.tie().cmp(&b.1.tie())));
                        let got = h.pop();
                        prop_assert_eq!(got.map(|g| g.1), want.map(|w| w.1));
                        if let Some((i, _)) = got { model[i] = None; }
                    }
                }
                prop_assert_eq!(h.len(), model.iter().filter(|k| k.is_some()).count());
                for (i, k) in model.iter().enumerate() {
                    prop_assert_eq!(h.key(i), *k);
                }
            }
        }
    }
}
