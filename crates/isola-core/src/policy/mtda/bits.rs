//! A fixed-size set of tenant indices as `u64` words, for MTDA: which
//! tenants are ready, and which had requests at the last reallocation.

/// A set of indices `0..n`, 64 to a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl Bits {
    /// The empty set over `0..n`.
    pub(super) fn new(n: usize) -> Self {
        Bits {
            words: vec![0; n.div_ceil(64)],
            len: n,
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

    /// Makes the set `{i : member(i)}` and returns whether it changed.
    pub(super) fn fill_with(&mut self, member: impl Fn(usize) -> bool) -> bool {
        let mut changed = false;
        let n = self.len;
        for (w, word) in self.words.iter_mut().enumerate() {
            let new =
                (w * 64..n.min(w * 64 + 64)).fold(0u64, |acc, i| acc | u64::from(member(i)) << (i % 64));
            changed |= *word != new;
            *word = new;
        }
        changed
    }

    /// The smallest index in the set at or after `from` and before `end`.
    #[inline]
    pub(super) fn next(&self, from: usize, end: usize) -> Option<usize> {
        if from >= end {
            return None;
        }
        let mut w = from / 64;
        let mut word = self.words[w] & (u64::MAX << (from % 64));
        loop {
            if word != 0 {
                let i = w * 64 + word.trailing_zeros() as usize;
                return (i < end).then_some(i);
            }
            w += 1;
            if w * 64 >= end {
                return None;
            }
            word = self.words[w];
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
            from in 0usize..320,
            end in 0usize..320,
        ) {
            let n = a.len();
            let mut x = Bits::new(n);
            for (i, &on) in a.iter().enumerate() {
                prop_assert!(!x.set(i, on));
            }
            for (i, &on) in a.iter().enumerate() {
                prop_assert_eq!(x.get(i), on);
            }
            prop_assert_eq!(x.iter().collect::<Vec<_>>(), (0..n).filter(|&i| a[i]).collect::<Vec<_>>());
            let end = end.min(n);
            prop_assert_eq!(x.next(from, end), (from..end).find(|&i| a[i]));
            let mut y = Bits::new(n);
            prop_assert_eq!(y.fill_with(|i| a[i]), a.iter().any(|&on| on));
            prop_assert_eq!(&y, &x);
            prop_assert!(!y.fill_with(|i| a[i]));
        }
    }
}
