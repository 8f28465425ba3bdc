//! A fixed-size set of tenant indices as `u64` words, for MTDA's traversal:
//! which tenants are ready, which still have requests in the traversal's
//! snapshot, and which had requests at the last reallocation.

/// A set of indices `0..n`, 64 to a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Bits {
    words: Vec<u64>,
}

impl Bits {
    /// The empty set over `0..n`.
    pub(super) fn new(n: usize) -> Self {
        Bits {
            words: vec![0; n.div_ceil(64)],
        }
    }

    /// Whether `i` is in the set.
    #[inline]
    pub(super) fn get(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 != 0
    }

    /// Puts `i` in the set (`on`) or takes it out; returns whether it was in.
    #[inline]
    pub(super) fn set(&mut self, i: usize, on: bool) -> bool {
        let (w, b) = (&mut self.words[i / 64], 1u64 << (i % 64));
        let was = *w & b != 0;
        if on {
            *w |= b;
        } else {
            *w &= !b;
        }
        was
    }

    /// Makes the set `{i : keep(values[i])}` (`values` has one entry per
    /// index) and returns whether it changed. A word at a time, so the
    /// comparisons vectorise.
    #[inline]
    pub(super) fn fill_from(&mut self, values: &[u64], keep: impl Fn(u64) -> bool) -> bool {
        let mut changed = false;
        for (w, chunk) in self.words.iter_mut().zip(values.chunks(64)) {
            let word = chunk
                .iter()
                .enumerate()
                .fold(0u64, |acc, (k, &v)| acc | u64::from(keep(v)) << k);
            changed |= *w != word;
            *w = word;
        }
        changed
    }

    /// The smallest index at or after `from`, and before `end`, that is in
    /// both `self` and `other`.
    #[inline]
    pub(super) fn next_common(&self, other: &Bits, from: usize, end: usize) -> Option<usize> {
        if from >= end {
            return None;
        }
        let mut w = from / 64;
        let mut word = (self.words[w] & other.words[w]) & (u64::MAX << (from % 64));
        loop {
            if word != 0 {
                let i = w * 64 + word.trailing_zeros() as usize;
                return (i < end).then_some(i);
            }
            w += 1;
            if w * 64 >= end {
                return None;
            }
            word = self.words[w] & other.words[w];
        }
    }

    /// The indices in the set, in increasing order.
    pub(super) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let k = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    w * 64 + k
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a `Vec<bool>` model.
        #[test]
        fn matches_a_vector_of_flags(
            a in prop::collection::vec(any::<bool>(), 1..300),
            b_seed in any::<u64>(),
            from in 0usize..320,
            end in 0usize..320,
        ) {
            let n = a.len();
            let b: Vec<bool> = (0..n).map(|i| (b_seed.rotate_left(i as u32 % 64) ^ i as u64) & 1 == 0).collect();
            let (mut x, mut y) = (Bits::new(n), Bits::new(n));
            for i in 0..n {
                prop_assert!(!x.set(i, a[i]));
                y.set(i, b[i]);
            }
            prop_assert_eq!(x.iter().collect::<Vec<_>>(), (0..n).filter(|&i| a[i]).collect::<Vec<_>>());
            let end = end.min(n);
            let want = (from..end).find(|&i| a[i] && b[i]);
            prop_assert_eq!(x.next_common(&y, from, end), want);
            let values: Vec<u64> = (0..n).map(|i| u64::from(a[i]) * i as u64).collect();
            let mut z = Bits::new(n);
            let changed = z.fill_from(&values, |v| v > 0);
            prop_assert_eq!(changed, (1..n).any(|i| a[i]));
            prop_assert_eq!(z.iter().collect::<Vec<_>>(), (1..n).filter(|&i| a[i]).collect::<Vec<_>>());
            prop_assert!(!z.clone().fill_from(&values, |v| v > 0));
            for (i, &on) in a.iter().enumerate() {
                prop_assert_eq!(x.get(i), on);
            }
        }
    }
}
