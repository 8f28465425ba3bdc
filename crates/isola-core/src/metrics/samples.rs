//! Latencies read exactly as a [`LatencyHistogram`] holding them would
//! read them, kept as they are while they are few: a tenant's window in a
//! run with many tenants holds a handful, its whole run a few dozen, where
//! a histogram's read is a scan of all its buckets (~1,700 at 2 digits up
//! to 0.5 ms), its reset a clear of them and its memory 13-22 KiB. Kept as
//! they are, the samples cost a push each, a selection or a sort per read,
//! and no memory beyond themselves. Past [`KEPT_SAMPLES`] they go into a
//! histogram, so that a busy tenant costs no more memory than one.

use super::latency::{cdf_of, reported_at, summary_of, LatencyHistogram, LatencySummary};
use crate::units::Nanos;

/// Samples kept as they are, at most: 8 KiB, what a histogram's buckets
/// take for latencies under 16 us (1,024 buckets at 2 digits), less than
/// they take for longer ones. Past it, a histogram.
pub const KEPT_SAMPLES: usize = 1024;

/// Latencies in nanoseconds (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct LatencySamples {
    /// The samples, while there are at most [`KEPT_SAMPLES`].
    samples: Vec<Nanos>,
    /// Every sample, once there were more (kept, cleared, from then on).
    histogram: Option<Box<LatencyHistogram>>,
}

impl LatencySamples {
    /// No samples.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one latency.
    pub fn record(&mut self, ns: Nanos) {
        if let Some(h) = &mut self.histogram {
            h.record(ns);
        } else if self.samples.len() < KEPT_SAMPLES {
            self.samples.push(ns);
        } else {
            let mut h = Box::new(LatencyHistogram::new());
            for &s in &self.samples {
                h.record(s);
            }
            h.record(ns);
            self.samples = Vec::new();
            self.histogram = Some(h);
        }
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.histogram
            .as_ref()
            .map_or(self.samples.len() as u64, |h| h.count())
    }

    /// Forgets every sample, keeping what was allocated.
    pub fn clear(&mut self) {
        self.samples.clear();
        if let Some(h) = &mut self.histogram {
            h.clear();
        }
    }

    /// The latency at quantile `q` (0..=1), 0 when empty: to the bit what
    /// [`LatencyHistogram::quantile`] gives for the same samples (the
    /// bucket of the sample at the quantile's rank). Reorders the kept
    /// samples.
    pub fn quantile(&mut self, q: f64) -> Nanos {
        if let Some(h) = &self.histogram {
            return h.quantile(q);
        }
        let Some(at) = rank(q, self.samples.len()) else {
            return 0;
        };
        let (_, &mut ns, _) = self.samples.select_nth_unstable(at);
        reported_at(q, ns)
    }

    /// The latency at each quantile of `qs`, as [`LatencySamples::quantile`]
    /// reads each. Sorts the kept samples.
    pub fn quantiles(&mut self, qs: &[f64]) -> Vec<Nanos> {
        if let Some(h) = &self.histogram {
            return h.quantiles(qs);
        }
        self.samples.sort_unstable();
        let sorted = &self.samples;
        qs.iter()
            .map(|&q| rank(q, sorted.len()).map_or(0, |at| reported_at(q, sorted[at])))
            .collect()
    }

    /// As [`LatencyHistogram::cdf`] gives it for the same samples. Sorts
    /// the kept samples.
    pub fn cdf(&mut self) -> Vec<(Nanos, f64)> {
        if let Some(h) = &self.histogram {
            return h.cdf();
        }
        let max = self.samples.iter().copied().max().unwrap_or(0);
        cdf_of(self.count(), max, |qs| self.quantiles(qs))
    }

    /// As [`LatencyHistogram::summary`] gives it for the same samples (its
    /// mean and maximum exact). Sorts the kept samples.
    pub fn summary(&mut self) -> LatencySummary {
        if let Some(h) = &self.histogram {
            return h.summary();
        }
        let sum = self.samples.iter().map(|&s| u128::from(s)).sum();
        let max = self.samples.iter().copied().max().unwrap_or(0);
        summary_of(self.count(), sum, max, |qs| self.quantiles(qs))
    }
}

/// The position, in `count` samples in order, of the one a histogram reads
/// quantile `q` off (`None` when there are none): hdrhistogram's rank, `q`
/// capped at 1, `ceil(q x count)` as u64 (saturating: 0 for a negative or
/// NaN `q`), at least 1.
fn rank(q: f64, count: usize) -> Option<usize> {
    if count == 0 {
        return None;
    }
    let capped = if q > 1.0 { 1.0 } else { q };
    let rank = ((capped * count as f64).ceil() as u64).max(1);
    Some((rank as usize).min(count) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Read as the histogram reads the same samples (each quantile, the
        /// summary, the CDF), below and past the point where they go into a
        /// histogram, and after a clear.
        #[test]
        fn quantiles_are_the_histograms(
            values in proptest::collection::vec(0u64..2_000_000_000, 0..1_300),
            small in proptest::collection::vec(0u64..300, 0..40),
            q in 0.0f64..1.0,
        ) {
            let mut samples = LatencySamples::new();
            let mut hist = LatencyHistogram::new();
            for round in [&values, &small] {
                for &v in round.iter() {
                    samples.record(v);
                    hist.record(v);
                }
                proptest::prop_assert_eq!(samples.count(), hist.count());
                for q in [q, 0.0, 0.5, 0.99, 0.999, 1.0, 1.5, -0.5] {
                    proptest::prop_assert_eq!(samples.quantile(q), hist.quantile(q), "q {}", q);
                }
                let qs = [0.3, q, 0.0, 0.99, 1.0];
                proptest::prop_assert_eq!(samples.quantiles(&qs), hist.quantiles(&qs));
                proptest::prop_assert_eq!(samples.summary(), hist.summary());
                proptest::prop_assert_eq!(samples.cdf(), hist.cdf());
                samples.clear();
                hist.clear();
            }
        }
    }

    #[test]
    fn small_windows_stay_samples_and_large_ones_a_histogram() {
        let mut s = LatencySamples::new();
        assert_eq!((s.quantile(0.99), s.count()), (0, 0));
        for v in 1..=100 {
            s.record(v * 1000);
        }
        // 99th of 100: the 99th sample, 99,000, read as the top of its
        // bucket: at 2 digits (256 sub-buckets) values in [65,536, 131,072)
        // fall in buckets of 512, so [98,816, 99,328).
        assert_eq!(s.quantile(0.99), 99_327);
        assert!(s.histogram.is_none());
        for v in 0..KEPT_SAMPLES as u64 {
            s.record(v);
        }
        assert!(s.histogram.is_some() && s.samples.capacity() == 0);
        assert_eq!(s.count(), 100 + KEPT_SAMPLES as u64);
        s.clear();
        assert_eq!((s.quantile(0.5), s.count()), (0, 0));
    }
}
