//! The latencies of a short interval (a metrics window), read at a quantile
//! exactly as a [`LatencyHistogram`] holding them would read it. A window
//! of a run with many tenants holds a handful of samples per tenant, where
//! a histogram's read is a scan of all its buckets (~2,000 at 2 digits up
//! to milliseconds) and its reset a clear of them: kept as they are, the
//! samples cost a push each and a selection per read, and no memory
//! beyond themselves. Past [`KEPT_SAMPLES`] in one window they go into a
//! histogram, so that a busy tenant's window costs no more memory than a
//! histogram does.

use super::latency::{reported_at, LatencyHistogram};
use crate::units::Nanos;

/// Samples kept as they are, at most (8 KiB, under the ~14 KiB of a
/// histogram's buckets at 2 digits up to 1 ms); past it, a histogram.
pub const KEPT_SAMPLES: usize = 1024;

/// Latencies of one interval, in nanoseconds (see the module docs).
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
    /// bucket of the sample at the quantile's rank, `ceil(q x count)`, at
    /// least 1). Reorders the kept samples.
    pub fn quantile(&mut self, q: f64) -> Nanos {
        if let Some(h) = &self.histogram {
            return h.quantile(q);
        }
        if self.samples.is_empty() {
            return 0;
        }
        // hdrhistogram's rank: q capped at 1, `ceil(q x count)` as u64
        // (saturating: 0 for a negative or NaN q), at least 1.
        let capped = if q > 1.0 { 1.0 } else { q };
        let rank = ((capped * self.samples.len() as f64).ceil() as u64).max(1);
        let at = (rank as usize).min(self.samples.len()) - 1;
        let (_, &mut ns, _) = self.samples.select_nth_unstable(at);
        reported_at(q, ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Read as the histogram reads the same samples, below and past
        /// the point where they go into a histogram, and after a clear.
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
