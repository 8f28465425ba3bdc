//! Cost models: the predicted service time of an operator on an engine as a
//! function of the input size. Models are fitted from profiled samples and
//! saved as files (serde), never pasted into code. Accelerators are not linear
//! in message size (AaaS, observation 1), so besides the affine model there is
//! a piecewise-linear one through measured (size, time) points.

use crate::units::{Bytes, Nanos};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Debug;

/// Predicts how long an engine takes to run `op` on `bytes` bytes.
pub trait CostModel: Send + Sync + Debug {
    /// Predicted service time, or `None` when the model knows nothing of `op`.
    fn predict(&self, op: &str, bytes: Bytes) -> Option<Nanos>;
}

/// A cost model that cannot be built from what it was given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CostModelError {
    /// A coefficient is negative or not finite.
    #[error("{field} must be finite and >= 0, got {value}")]
    BadCoefficient {
        /// Which coefficient.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// No samples to build a model from.
    #[error("a piecewise-linear cost model needs at least one (size, time) sample")]
    NoSamples,
    /// A sample's time is negative or not finite.
    #[error("sample at {bytes} bytes has an invalid time {time_ns}")]
    BadSample {
        /// The sample's size.
        bytes: Bytes,
        /// The sample's time.
        time_ns: f64,
    },
}

fn check(field: &'static str, value: f64) -> Result<f64, CostModelError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(CostModelError::BadCoefficient { field, value })
    }
}

/// `base + per_byte x bytes`, for every operator.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AffineCost {
    base_ns: f64,
    per_byte_ns: f64,
}

impl AffineCost {
    /// `base_ns + per_byte_ns x bytes`; both must be finite and non-negative.
    pub fn new(base_ns: f64, per_byte_ns: f64) -> Result<Self, CostModelError> {
        Ok(AffineCost {
            base_ns: check("base", base_ns)?,
            per_byte_ns: check("per_byte", per_byte_ns)?,
        })
    }

    /// The same time for every task.
    pub fn constant(ns: Nanos) -> Self {
        AffineCost {
            base_ns: ns as f64,
            per_byte_ns: 0.0,
        }
    }

    /// Fixed part in nanoseconds.
    pub fn base_ns(&self) -> f64 {
        self.base_ns
    }

    /// Per-byte part in nanoseconds.
    pub fn per_byte_ns(&self) -> f64 {
        self.per_byte_ns
    }
}

impl CostModel for AffineCost {
    fn predict(&self, _op: &str, bytes: Bytes) -> Option<Nanos> {
        Some(crate::units::round_ns(
            self.base_ns + self.per_byte_ns * bytes as f64,
        ))
    }
}

/// Linear interpolation through measured (size, time) points. Several samples
/// at one size are averaged. Below the smallest and above the largest size the
/// nearest segment is extended (a single point gives a constant), and the
/// prediction never goes below zero.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PiecewiseLinearCost {
    /// Distinct sizes, ascending, with their mean time in nanoseconds.
    points: Vec<(Bytes, f64)>,
}

impl PiecewiseLinearCost {
    /// Builds the model from samples in any order.
    pub fn from_samples(samples: impl IntoIterator<Item = (Bytes, f64)>) -> Result<Self, CostModelError> {
        let mut by_size: BTreeMap<Bytes, (f64, u32)> = BTreeMap::new();
        for (bytes, time_ns) in samples {
            if !(time_ns.is_finite() && time_ns >= 0.0) {
                return Err(CostModelError::BadSample { bytes, time_ns });
            }
            let e = by_size.entry(bytes).or_insert((0.0, 0));
            e.0 += time_ns;
            e.1 += 1;
        }
        if by_size.is_empty() {
            return Err(CostModelError::NoSamples);
        }
        Ok(PiecewiseLinearCost {
            points: by_size
                .into_iter()
                .map(|(b, (sum, n))| (b, sum / n as f64))
                .collect(),
        })
    }

    /// The model's points: (size, mean time in ns), ascending by size.
    pub fn points(&self) -> &[(Bytes, f64)] {
        &self.points
    }

    fn interpolate(&self, bytes: Bytes) -> f64 {
        let p = &self.points;
        if p.len() == 1 {
            return p[0].1;
        }
        // Index of the segment [i, i+1] that holds `bytes`, or the first/last one.
        let i = match p.binary_search_by_key(&bytes, |&(b, _)| b) {
            Ok(i) => return p[i].1,
            Err(0) => 0,
            Err(i) if i >= p.len() => p.len() - 2,
            Err(i) => i - 1,
        };
        let (x0, y0) = (p[i].0 as f64, p[i].1);
        let (x1, y1) = (p[i + 1].0 as f64, p[i + 1].1);
        y0 + (y1 - y0) * (bytes as f64 - x0) / (x1 - x0)
    }
}

impl CostModel for PiecewiseLinearCost {
    fn predict(&self, _op: &str, bytes: Bytes) -> Option<Nanos> {
        Some(crate::units::round_ns(self.interpolate(bytes).max(0.0)))
    }
}

/// A model per operator name, with an optional fallback for the others.
#[derive(Debug, Default)]
pub struct PerOpCost {
    models: BTreeMap<String, Box<dyn CostModel>>,
    fallback: Option<Box<dyn CostModel>>,
}

impl PerOpCost {
    /// An empty table: every operator is unknown until added.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses `model` for operator `op`.
    pub fn with_op(mut self, op: impl Into<String>, model: impl CostModel + 'static) -> Self {
        self.models.insert(op.into(), Box::new(model));
        self
    }

    /// Uses `model` for every operator not listed.
    pub fn with_fallback(mut self, model: impl CostModel + 'static) -> Self {
        self.fallback = Some(Box::new(model));
        self
    }
}

impl CostModel for PerOpCost {
    fn predict(&self, op: &str, bytes: Bytes) -> Option<Nanos> {
        match self.models.get(op) {
            Some(m) => m.predict(op, bytes),
            None => self.fallback.as_ref()?.predict(op, bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn affine_is_base_plus_slope() {
        let m = AffineCost::new(100.0, 0.5).unwrap();
        assert_eq!(m.predict("x", 0), Some(100));
        assert_eq!(m.predict("x", 1000), Some(600));
        assert!(AffineCost::new(-1.0, 0.0).is_err());
        assert!(AffineCost::new(0.0, f64::NAN).is_err());
    }

    #[test]
    fn piecewise_interpolates_averages_and_extrapolates() {
        // A non-linear accelerator curve: flat up to 4 KiB, then linear.
        let m = PiecewiseLinearCost::from_samples([
            (4096, 1000.0),
            (64, 900.0),
            (64, 1100.0), // averaged with the previous sample: 1000
            (65536, 16000.0),
        ])
        .unwrap();
        assert_eq!(m.points().len(), 3);
        assert_eq!(m.predict("ec", 64), Some(1000));
        assert_eq!(m.predict("ec", 2080), Some(1000));
        assert_eq!(m.predict("ec", 4096 + 30720), Some(8500));
        // Beyond the last point the last segment continues.
        assert_eq!(m.predict("ec", 65536 * 2), Some(32000));
        assert!(PiecewiseLinearCost::from_samples([]).is_err());
        assert!(PiecewiseLinearCost::from_samples([(1, -1.0)]).is_err());
    }

    #[test]
    fn per_op_falls_back_or_reports_unknown() {
        let m = PerOpCost::new().with_op("a", AffineCost::constant(5));
        assert_eq!(m.predict("a", 1), Some(5));
        assert_eq!(m.predict("b", 1), None);
        let m = m.with_fallback(AffineCost::constant(7));
        assert_eq!(m.predict("b", 1), Some(7));
    }

    proptest! {
        #[test]
        fn piecewise_passes_through_its_points_and_stays_between_neighbours(
            mut pts in proptest::collection::btree_map(0u64..1_000_000, 0.0f64..1e6, 2..20),
            probe in 0u64..1_000_000,
        ) {
            let m = PiecewiseLinearCost::from_samples(pts.iter().map(|(&b, &t)| (b, t))).unwrap();
            for (&b, &t) in &pts {
                prop_assert!((m.predict("x", b).unwrap() as f64 - t).abs() <= 0.5);
            }
            let lo = pts.range(..=probe).next_back().map(|(_, &t)| t);
            let hi = pts.range(probe..).next().map(|(_, &t)| t);
            if let (Some(lo), Some(hi)) = (lo, hi) {
                let y = m.predict("x", probe).unwrap() as f64;
                prop_assert!(y >= lo.min(hi) - 0.5 && y <= lo.max(hi) + 0.5);
            }
            pts.clear();
        }
    }
}
