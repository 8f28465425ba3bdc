//! Time, sizes and rates. Time is [`Nanos`] everywhere; sizes are bytes; a
//! rate always carries its unit ([`RateUnit`]), because accelerator SLAs come
//! both in bytes/s and in operations/s (AaaS, observation 7).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A point in time or a duration, in nanoseconds. The core never reads a
/// clock: drivers pass `now` in, virtual (simulator) or monotonic (runtime).
pub type Nanos = u64;

/// A size in bytes.
pub type Bytes = u64;

/// `x` rounded to the nearest integer, halves away from zero, as `x.round()
/// as u64` gives it (negative and NaN: 0; past `u64::MAX`: `u64::MAX`), but
/// without the C library's `round`, which a baseline x86-64 build calls
/// for every rounding: cost models and the simulator round a few times
/// per task.
#[inline]
pub fn round_ns(x: f64) -> u64 {
    // Below 2^52 a double's fraction `x - trunc(x)` is exact. The
    // conversions go through `i64`, exact in that range: one instruction
    // each way on x86-64, where `u64`'s take a sequence of five or six
    // (issue 34; the simulator rounds a few times per task).
    if (0.0..4_503_599_627_370_496.0).contains(&x) {
        let whole = x as i64;
        (whole + i64::from(x - whole as f64 >= 0.5)) as u64
    } else {
        x.round() as u64
    }
}

/// Nanoseconds in one second.
pub const NANOS_PER_SEC: u64 = 1_000_000_000;

/// The largest predicted cost of one task the scheduler accepts: 10^13 ns
/// (about 2.8 hours). Larger predictions are refused
/// (`RejectReason::CostTooLarge`), so that the costs a channel queues (at
/// most `tenant::MAX_QUEUE_CAP` tasks) always fit a `u64`.
pub const MAX_TASK_COST_NS: Nanos = 10_000_000_000_000;

/// What a rate counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateUnit {
    /// Bytes of task payload per second.
    BytesPerSec,
    /// Tasks (operations) per second, whatever their size.
    OpsPerSec,
}

impl RateUnit {
    /// How many units of this kind a task of `bytes` bytes consumes.
    #[inline]
    pub fn units_of(self, bytes: Bytes) -> f64 {
        match self {
            RateUnit::BytesPerSec => bytes as f64,
            RateUnit::OpsPerSec => 1.0,
        }
    }

    /// The unit's short name, as used in scenario files and tables.
    pub fn suffix(self) -> &'static str {
        match self {
            RateUnit::BytesPerSec => "B/s",
            RateUnit::OpsPerSec => "ops/s",
        }
    }
}

/// A rate with its unit. Always finite and strictly positive (constructors
/// enforce it), so `1 / rate` is always defined.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    per_sec: f64,
    unit: RateUnit,
}

/// A rate that is zero, negative, infinite or NaN.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("a rate must be finite and greater than zero, got {0}")]
pub struct InvalidRate(pub f64);

impl Rate {
    /// A rate of `per_sec` units per second.
    pub fn new(per_sec: f64, unit: RateUnit) -> Result<Self, InvalidRate> {
        if per_sec.is_finite() && per_sec > 0.0 {
            Ok(Rate { per_sec, unit })
        } else {
            Err(InvalidRate(per_sec))
        }
    }

    /// `per_sec` bytes per second.
    pub fn bytes_per_sec(per_sec: f64) -> Result<Self, InvalidRate> {
        Self::new(per_sec, RateUnit::BytesPerSec)
    }

    /// `per_sec` operations per second.
    pub fn ops_per_sec(per_sec: f64) -> Result<Self, InvalidRate> {
        Self::new(per_sec, RateUnit::OpsPerSec)
    }

    /// Units per second.
    pub fn per_sec(self) -> f64 {
        self.per_sec
    }

    /// This rate divided by `divisor` (a finite factor above 0; otherwise
    /// the rate unchanged), never below the least positive rate.
    pub fn divided(self, divisor: f64) -> Rate {
        if !(divisor.is_finite() && divisor > 0.0) {
            return self;
        }
        Rate {
            per_sec: (self.per_sec / divisor).max(f64::MIN_POSITIVE),
            unit: self.unit,
        }
    }

    /// The unit this rate counts.
    pub fn unit(self) -> RateUnit {
        self.unit
    }

    /// Nanoseconds it takes this rate to supply one unit.
    #[inline]
    pub fn nanos_per_unit(self) -> f64 {
        NANOS_PER_SEC as f64 / self.per_sec
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.per_sec, self.unit.suffix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_ns_rounds_as_the_standard_library_does() {
        let edge = [
            0.0,
            -0.0,
            0.5,
            0.49999999999999994,
            1.5,
            2.5,
            -0.5,
            -3.7,
            f64::NAN,
            f64::INFINITY,
            4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            1e19,
            1e30,
        ];
        let spread = (0..100_000).map(|i| i as f64 * 0.137 + (i % 7) as f64 * 0.5);
        for x in edge.into_iter().chain(spread) {
            assert_eq!(round_ns(x), x.round() as u64, "{x}");
        }
    }

    #[test]
    fn rates_reject_non_positive_and_non_finite_values() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(Rate::ops_per_sec(bad).is_err(), "{bad} accepted");
        }
        let r = Rate::bytes_per_sec(2e9).unwrap();
        assert_eq!(r.nanos_per_unit(), 0.5);
        assert_eq!(r.unit().units_of(4096), 4096.0);
        assert_eq!(RateUnit::OpsPerSec.units_of(4096), 1.0);
    }
}
