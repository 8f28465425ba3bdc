//! Latency percentiles on an HDR histogram (hdrhistogram crate): 2 significant
//! digits (every percentile within 1%) over any range, in a few KiB per
//! histogram so that hundreds of tenants' histograms stay in cache; the mean
//! and the maximum are exact (kept beside the buckets, not read off them).

use crate::units::Nanos;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::sync::OnceLock;

/// Significant decimal digits the histograms keep: every percentile within
/// 1% of the exact order statistic (the figures the papers report are read
/// to 2-3 digits).
const SIGNIFICANT_DIGITS: u8 = 2;

/// An empty histogram at [`SIGNIFICANT_DIGITS`]: what every histogram here
/// is, so that `LatencySamples` can ask it which bucket a value falls in.
fn resolution() -> &'static Histogram<u64> {
    static RESOLUTION: OnceLock<Histogram<u64>> = OnceLock::new();
    RESOLUTION.get_or_init(new_histogram)
}

fn new_histogram() -> Histogram<u64> {
    // 2 significant digits is a constant the crate always accepts.
    Histogram::new(SIGNIFICANT_DIGITS).expect("2 significant figures is within 0..=5")
}

/// What a histogram here reports at quantile `q` when the sample at the
/// quantile's rank is `ns`: the highest value of `ns`'s bucket (the lowest
/// for `q` = 0), as `hdrhistogram`'s `value_at_quantile` reports it.
pub(super) fn reported_at(q: f64, ns: Nanos) -> Nanos {
    if q == 0.0 {
        resolution().lowest_equivalent(ns)
    } else {
        resolution().highest_equivalent(ns)
    }
}

/// A latency histogram in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    /// Exact sum of the samples, for the mean.
    sum: u128,
    /// Exact largest sample.
    max: u64,
}

/// Percentiles of a latency histogram, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Number of samples.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest sample.
    pub max: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram that grows to any value.
    pub fn new() -> Self {
        LatencyHistogram {
            hist: new_histogram(),
            sum: 0,
            max: 0,
        }
    }

    /// Forgets every sample, keeping the buckets allocated.
    pub fn clear(&mut self) {
        self.hist.reset();
        self.sum = 0;
        self.max = 0;
    }

    /// Records one latency.
    pub fn record(&mut self, ns: Nanos) {
        self.sum += ns as u128;
        self.max = self.max.max(ns);
        // Histogram::new auto-resizes, so `record` only fails for values past
        // what a u64 histogram can track; clamp those to the largest bucket.
        if self.hist.record(ns).is_err() {
            self.hist.saturating_record(ns);
        }
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The latency at quantile `q` (0..=1), 0 when empty.
    pub fn quantile(&self, q: f64) -> Nanos {
        if self.hist.is_empty() {
            0
        } else {
            self.hist.value_at_quantile(q)
        }
    }

    /// The latency at each quantile of `qs`, as [`LatencyHistogram::quantile`]
    /// reads each (0s when empty): in one scan of the buckets when `qs`
    /// ascend (a read is a scan up to its quantile, so a CDF's 51
    /// quantiles cost one scan, not 51), else one per quantile.
    pub fn quantiles(&self, qs: &[f64]) -> Vec<Nanos> {
        if self.hist.is_empty() {
            return vec![0; qs.len()];
        }
        if qs.windows(2).all(|w| w[0] <= w[1]) {
            self.hist.value_at_quantiles(qs.iter().copied()).collect()
        } else {
            qs.iter().map(|&q| self.quantile(q)).collect()
        }
    }

    /// The distribution as `(latency, fraction of samples at or below it)`
    /// points, for CDF plots: every 2% of the samples, then the tail (99%,
    /// 99.9%) and the maximum. Empty when there are no samples.
    pub fn cdf(&self) -> Vec<(Nanos, f64)> {
        cdf_of(self.count(), self.max, |qs| self.quantiles(qs))
    }

    /// Count, mean, p50, p99, p99.9 and max.
    pub fn summary(&self) -> LatencySummary {
        summary_of(self.count(), self.sum, self.max, |qs| self.quantiles(qs))
    }
}

/// The quantiles a CDF is drawn at ([`LatencyHistogram::cdf`]).
fn cdf_quantiles() -> Vec<f64> {
    (1..50).map(|i| i as f64 / 50.0).chain([0.99, 0.999]).collect()
}

/// The CDF of `count` samples up to `max`, whose quantiles `read` gives
/// (see [`LatencyHistogram::cdf`]).
pub(super) fn cdf_of(count: u64, max: Nanos, read: impl FnOnce(&[f64]) -> Vec<Nanos>) -> Vec<(Nanos, f64)> {
    if count == 0 {
        return Vec::new();
    }
    let qs = cdf_quantiles();
    let mut points = Vec::with_capacity(qs.len() + 1);
    // A bucket's upper bound can pass the exact maximum: clamp, so the
    // points never step backwards.
    points.extend(read(&qs).into_iter().zip(qs).map(|(ns, q)| (ns.min(max), q)));
    points.push((max, 1.0));
    points
}

/// The summary of `count` samples adding up to `sum`, up to `max`, whose
/// quantiles `read` gives (see [`LatencyHistogram::summary`]).
pub(super) fn summary_of(
    count: u64,
    sum: u128,
    max: Nanos,
    read: impl FnOnce(&[f64]) -> Vec<Nanos>,
) -> LatencySummary {
    if count == 0 {
        return LatencySummary::default();
    }
    let [p50, p99, p999] = read(&[0.5, 0.99, 0.999])[..] else {
        unreachable!("one value per quantile asked for")
    };
    LatencySummary {
        count,
        mean: sum as f64 / count as f64,
        p50,
        p99,
        p999,
        max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_1_to_10000() {
        let mut h = LatencyHistogram::new();
        for v in 1..=10_000 {
            h.record(v);
        }
        let s = h.summary();
        assert_eq!(s.count, 10_000);
        // Within HDR's 2 significant digits (1%) of the exact order statistics.
        for (got, want) in [(s.p50, 5000), (s.p99, 9900), (s.p999, 9990), (s.max, 10_000)] {
            assert!(
                (got as f64 - want as f64).abs() <= want as f64 * 1e-2,
                "{got} vs {want}"
            );
        }
        assert_eq!(s.mean, 5000.5, "the mean is exact");
        assert_eq!(LatencyHistogram::new().summary(), LatencySummary::default());
        // Cleared, it is as new.
        h.clear();
        assert_eq!(h.summary(), LatencySummary::default());
        h.record(7);
        assert_eq!((h.count(), h.summary().max), (1, 7));
    }

    proptest::proptest! {
        /// One scan for ascending quantiles reads what a read per quantile
        /// reads (hdrhistogram's `value_at_quantile`); any order is served.
        #[test]
        fn quantiles_in_one_scan_are_each_quantile(
            values in proptest::collection::vec(0u64..5_000_000, 0..400),
            mut qs in proptest::collection::vec(-0.1f64..1.1, 0..60),
        ) {
            let mut h = LatencyHistogram::new();
            for &v in &values {
                h.record(v);
            }
            let each = |qs: &[f64]| qs.iter().map(|&q| h.quantile(q)).collect::<Vec<_>>();
            proptest::prop_assert_eq!(h.quantiles(&qs), each(&qs));
            qs.sort_by(f64::total_cmp);
            qs.extend([0.0, 0.5, 0.99, 0.999, 1.0]);
            qs.sort_by(f64::total_cmp);
            proptest::prop_assert_eq!(h.quantiles(&qs), each(&qs));
        }
    }

    #[test]
    fn cdf_points_never_step_backwards_and_end_at_the_maximum() {
        let mut h = LatencyHistogram::new();
        for v in [201_116u64, 150_000, 90_000, 201_000, 5, 77_777] {
            h.record(v);
        }
        let cdf = h.cdf();
        assert!(
            cdf.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1),
            "{cdf:?}"
        );
        assert_eq!(cdf.last(), Some(&(201_116, 1.0)));
        assert!(LatencyHistogram::new().cdf().is_empty());
    }
}
