//! Latency percentiles as both load generators report them.

use isola_core::metrics::LatencyHistogram;
use serde::Serialize;

/// Latency percentiles of tasks that ended `Ok` (or of answered packets),
/// in ns (2 significant digits, the mean and the maximum exact).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Percentiles {
    /// Tasks timed.
    pub count: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

impl Percentiles {
    /// The percentiles of `h`.
    pub fn of(h: &LatencyHistogram) -> Percentiles {
        let s = h.summary();
        // A bucket's upper bound may pass the exact maximum: clamp to it.
        Percentiles {
            count: s.count,
            mean_ns: s.mean,
            p50_ns: s.p50.min(s.max),
            p90_ns: h.quantile(0.9).min(s.max),
            p99_ns: s.p99.min(s.max),
            p999_ns: s.p999.min(s.max),
            max_ns: s.max,
        }
    }
}
