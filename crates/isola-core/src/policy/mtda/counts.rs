//! MTDA's one pass over the channels' request counts at a reallocation:
//! copy them (Algorithm 2's `req[N]`), add them up (eq. 7's `sum_j Req_j`),
//! bound them, and count the tenants without requests. Integer work only,
//! so the versions compiled for wider registers compute the same.

/// What the pass found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Counts {
    /// Sum of the queued counts, wrapping (exact when `n x any` fits).
    pub(super) queued: u64,
    /// Bitwise or of the queued counts: at least the largest.
    pub(super) any: u64,
    /// Tenants with nothing queued (and nothing dispatched, when counted).
    pub(super) idle: usize,
}

/// Copies `queued` into `snapshot` and counts; a tenant is idle with
/// nothing queued and, if `dispatched` is given, nothing dispatched.
pub(super) fn copy_and_count(snapshot: &mut [u64], queued: &[u64], dispatched: Option<&[u64]>) -> Counts {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { count_avx512(snapshot, queued, dispatched) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { count_avx2(snapshot, queued, dispatched) };
        }
    }
    count_portable(snapshot, queued, dispatched)
}

/// [`copy_and_count`] compiled for AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn count_avx512(snapshot: &mut [u64], queued: &[u64], dispatched: Option<&[u64]>) -> Counts {
    count_portable(snapshot, queued, dispatched)
}

/// [`copy_and_count`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn count_avx2(snapshot: &mut [u64], queued: &[u64], dispatched: Option<&[u64]>) -> Counts {
    count_portable(snapshot, queued, dispatched)
}

/// [`copy_and_count`] for the build's target.
#[inline(always)]
fn count_portable(snapshot: &mut [u64], queued: &[u64], dispatched: Option<&[u64]>) -> Counts {
    let (mut sum, mut any, mut idle) = (0u64, 0u64, 0u64);
    match dispatched {
        Some(dispatched) => {
            for ((s, &q), &d) in snapshot.iter_mut().zip(queued).zip(dispatched) {
                *s = q;
                sum = sum.wrapping_add(q);
                any |= q;
                idle += u64::from((q | d) == 0);
            }
        }
        None => {
            for (s, &q) in snapshot.iter_mut().zip(queued) {
                *s = q;
                sum = sum.wrapping_add(q);
                any |= q;
                idle += u64::from(q == 0);
            }
        }
    }
    Counts {
        queued: sum,
        any,
        idle: idle as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every version against a plain count.
        #[test]
        fn every_version_counts_alike(
            queued in prop::collection::vec(prop_oneof![Just(0u64), 0u64..5, any::<u64>()], 0..300),
            dispatched_seed in any::<u64>(),
        ) {
            let n = queued.len();
            let dispatched: Vec<u64> = (0..n).map(|i| (dispatched_seed >> (i % 64)) & 1).collect();
            for d in [None, Some(&dispatched[..])] {
                let want = Counts {
                    queued: queued.iter().fold(0u64, |s, &q| s.wrapping_add(q)),
                    any: queued.iter().fold(0, |a, &q| a | q),
                    idle: (0..n).filter(|&i| queued[i] == 0 && d.is_none_or(|d| d[i] == 0)).count(),
                };
                let mut snapshot = vec![7; n];
                prop_assert_eq!(copy_and_count(&mut snapshot, &queued, d), want);
                prop_assert_eq!(&snapshot, &queued);
                let mut snapshot = vec![7; n];
                prop_assert_eq!(count_portable(&mut snapshot, &queued, d), want);
                prop_assert_eq!(&snapshot, &queued);
            }
        }
    }
}
