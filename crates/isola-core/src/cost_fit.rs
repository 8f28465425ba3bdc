//! Cost models learned online: per engine and per operator (its name and
//! parameters), an affine fit `base + per_byte x bytes` of the service
//! times the engine measured, and how far the predictions in use were from
//! what the tasks really took.
//!
//! An engine's configured model ([`crate::CostModel`]) is a guess or a
//! profile taken elsewhere; one affine model for every operator an engine
//! serves is wrong by orders of magnitude between a CRC and a level-9
//! deflate. With learning on ([`CostLearning`] on the engine's
//! [`crate::EngineSpec`]), the scheduler records every completed dispatch's
//! (bytes, measured service) under its operator and, once an operator has
//! [`CostLearning::min_samples`] samples, predicts its tasks from the fit
//! instead of the configured model. Older samples weigh less (an
//! exponential forgetting with [`CostLearning::half_life`] samples), so the
//! fit follows an engine whose speed changes.
//!
//! Written by hand: it is five running sums per operator (weighted least
//! squares in closed form); no crate does this without pulling in a linear
//! algebra library.

use crate::task::OpSpec;
use crate::units::{round_ns, Bytes, Nanos};
use serde::Serialize;
use std::collections::HashMap;

/// The least spread of sizes (standard deviation over mean) from which a
/// fit separates a fixed part from a part per byte (see `OpFit::solve`).
pub const MIN_SPREAD: f64 = 0.5;

/// How an engine learns its operators' costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostLearning {
    /// Samples of an operator before its fit replaces the configured model.
    pub min_samples: u32,
    /// After this many newer samples, a sample weighs half as much.
    pub half_life: u32,
}

impl Default for CostLearning {
    /// 3 samples to start predicting; a half-life of 64 samples.
    fn default() -> Self {
        CostLearning {
            min_samples: 3,
            half_life: 64,
        }
    }
}

impl CostLearning {
    /// The weight kept by older samples at each new one: `0.5^(1/half_life)`.
    fn decay(&self) -> f64 {
        0.5f64.powf(1.0 / f64::from(self.half_life.max(1)))
    }
}

/// One operator's fit and its record of predicted against measured service.
#[derive(Debug, Clone, Default)]
struct OpFit {
    /// Samples seen.
    samples: u64,
    /// Decayed sums: weight, x, y, x², xy (x = bytes, y = measured ns).
    n: f64,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
    /// Decayed sums of the prediction in use at dispatch, of the measured
    /// service, and of their absolute difference.
    predicted: f64,
    measured: f64,
    abs_error: f64,
    /// The fit, refreshed at each sample: (base ns, ns per byte).
    base: f64,
    per_byte: f64,
}

impl OpFit {
    fn record(&mut self, decay: f64, bytes: Bytes, predicted: Nanos, measured: Nanos) {
        let (x, y, p) = (bytes as f64, measured as f64, predicted as f64);
        self.samples += 1;
        for s in [
            &mut self.n,
            &mut self.sx,
            &mut self.sy,
            &mut self.sxx,
            &mut self.sxy,
            &mut self.predicted,
            &mut self.measured,
            &mut self.abs_error,
        ] {
            *s *= decay;
        }
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        self.sxx += x * x;
        self.sxy += x * y;
        self.predicted += p;
        self.measured += y;
        self.abs_error += (y - p).abs();
        (self.base, self.per_byte) = self.solve();
        debug_assert!(
            self.base >= 0.0 && self.per_byte >= 0.0,
            "a fit never predicts negative time"
        );
    }

    /// Weighted least squares of y on x, kept non-negative and kept
    /// proportional where the data cannot say more: sizes that vary by
    /// less than [`MIN_SPREAD`] of their mean (a split task's equal
    /// pieces) cannot tell a fixed part from a part per byte, and a slope
    /// fitted to them is noise (measured: a negative slope, then a
    /// constant model that let the next task go whole); those, a negative
    /// slope and a negative intercept all give the line through the origin
    /// through the mean (`sum y / sum x`), exact at the sizes seen and
    /// scaling with size. Only inputs all of 0 bytes give a constant.
    fn solve(&self) -> (f64, f64) {
        if self.sx <= 0.0 {
            return (self.sy / self.n, 0.0);
        }
        let proportional = (0.0, self.sy / self.sx);
        let var = self.n * self.sxx - self.sx * self.sx;
        // sd(x) / mean(x) = sqrt(n sxx - sx^2) / sx.
        if var <= 0.0 || var.sqrt() < MIN_SPREAD * self.sx {
            return proportional;
        }
        let slope = (self.n * self.sxy - self.sx * self.sy) / var;
        let base = (self.sy - slope * self.sx) / self.n;
        if slope <= 0.0 || base < 0.0 {
            proportional
        } else {
            (base, slope)
        }
    }

    fn predict(&self, bytes: Bytes) -> f64 {
        self.base + self.per_byte * bytes as f64
    }
}

/// What an engine learned of one operator, for `isola ctl` and the metrics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpCostReport {
    /// The operator, as `name` or `name(key=value,...)`.
    pub op: String,
    /// Completed dispatches seen.
    pub samples: u64,
    /// The fit's fixed part, ns.
    pub base_ns: f64,
    /// The fit's part per input byte, ns.
    pub per_byte_ns: f64,
    /// Recent measured service over the predictions in use when those
    /// dispatches were made (1.0: predictions were right; 10: tasks took
    /// ten times their prediction).
    pub measured_over_predicted: f64,
    /// Recent mean absolute error of those predictions, as a fraction of
    /// the measured service.
    pub error: f64,
    /// Whether the fit now predicts this operator's tasks (it has enough samples).
    pub in_use: bool,
}

/// An engine's learned costs: one fit per operator.
#[derive(Debug, Clone)]
pub struct LearnedCosts {
    config: CostLearning,
    decay: f64,
    fits: HashMap<OpSpec, OpFit>,
}

/// The most operators one engine learns (distinct name and parameters):
/// a tenant cannot grow the table without bound by varying parameters;
/// past it, new operators keep the configured model.
pub const MAX_LEARNED_OPS: usize = 4096;

impl LearnedCosts {
    /// An empty table learning by `config`.
    pub fn new(config: CostLearning) -> Self {
        LearnedCosts {
            decay: config.decay(),
            config,
            fits: HashMap::new(),
        }
    }

    /// Records a completed dispatch of `op`: `bytes` predicted at
    /// `predicted` ns, measured at `measured` ns.
    pub fn record(&mut self, op: &OpSpec, bytes: Bytes, predicted: Nanos, measured: Nanos) {
        if !self.fits.contains_key(op) {
            if self.fits.len() >= MAX_LEARNED_OPS {
                return;
            }
            self.fits.insert(op.clone(), OpFit::default());
        }
        if let Some(fit) = self.fits.get_mut(op) {
            fit.record(self.decay, bytes, predicted, measured);
        }
    }

    /// The learned prediction for `bytes` of `op`, once it has enough samples.
    pub fn predict(&self, op: &OpSpec, bytes: Bytes) -> Option<Nanos> {
        let fit = self.fits.get(op)?;
        (fit.samples >= u64::from(self.config.min_samples)).then(|| round_ns(fit.predict(bytes)))
    }

    /// The most bytes of `op` predicted to take at most `ns` by the fit,
    /// once it has enough samples (`Bytes::MAX` when any size fits: no
    /// cost per byte and a fixed part within `ns`).
    pub fn bytes_within(&self, op: &OpSpec, ns: Nanos) -> Option<Bytes> {
        let fit = self.fits.get(op)?;
        if fit.samples < u64::from(self.config.min_samples) {
            return None;
        }
        let room = (ns as f64 - fit.base).max(0.0);
        if fit.per_byte <= 0.0 {
            return Some(if room > 0.0 { Bytes::MAX } else { 0 });
        }
        Some((room / fit.per_byte) as Bytes)
    }

    /// Every operator learned, sorted by name.
    pub fn report(&self) -> Vec<OpCostReport> {
        let mut rows: Vec<OpCostReport> = self
            .fits
            .iter()
            .map(|(op, f)| OpCostReport {
                op: op_label(op),
                samples: f.samples,
                base_ns: f.base,
                per_byte_ns: f.per_byte,
                measured_over_predicted: if f.predicted > 0.0 {
                    f.measured / f.predicted
                } else {
                    0.0
                },
                error: if f.measured > 0.0 {
                    f.abs_error / f.measured
                } else {
                    0.0
                },
                in_use: f.samples >= u64::from(self.config.min_samples),
            })
            .collect();
        rows.sort_by(|a, b| a.op.cmp(&b.op));
        rows
    }
}

/// `name`, or `name(key=value,...)` when the operator has parameters.
pub fn op_label(op: &OpSpec) -> String {
    if op.params.is_empty() {
        return op.name.clone();
    }
    let params: Vec<String> = op.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{}({})", op.name, params.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn op(name: &str, level: &str) -> OpSpec {
        OpSpec {
            name: name.into(),
            params: vec![("level".into(), level.into())],
        }
    }

    #[test]
    fn learns_an_affine_cost_exactly_and_per_operator() {
        let mut l = LearnedCosts::new(CostLearning::default());
        let (fast, slow) = (op("deflate", "1"), op("deflate", "9"));
        assert_eq!(l.predict(&slow, 1000), None, "nothing learned yet");
        for (i, bytes) in [1_000u64, 64_000, 16 << 20, 4_096].into_iter().enumerate() {
            l.record(&slow, bytes, 10, 2_000 + 30 * bytes);
            l.record(&fast, bytes, 10, 500 + 2 * bytes);
            if i < 2 {
                assert_eq!(l.predict(&slow, 1000), None, "below min_samples");
            }
        }
        let within = |got: Option<Nanos>, want: f64| (got.unwrap() as f64 - want).abs() <= 1e-6 * want + 1.0;
        assert!(within(
            l.predict(&slow, 1 << 20),
            2_000.0 + 30.0 * f64::from(1 << 20)
        ));
        assert!(within(l.predict(&fast, 100), 700.0));
        let b = l.bytes_within(&slow, 100_000).unwrap();
        assert!((b as i64 - (98_000 / 30)).abs() <= 1, "{b}");
        let report = l.report();
        assert_eq!(report.len(), 2);
        assert!(
            report[1].measured_over_predicted > 1000.0,
            "predictions of 10 ns were far too low"
        );
    }

    #[test]
    fn one_size_scales_through_the_origin_and_a_constant_stays_constant() {
        let mut l = LearnedCosts::new(CostLearning::default());
        let a = op("sha256", "x");
        for _ in 0..5 {
            l.record(&a, 4096, 1, 8192);
        }
        assert_eq!(l.predict(&a, 4096), Some(8192));
        assert_eq!(l.predict(&a, 8192), Some(16384));
        let c = op("noop", "x");
        for bytes in [0, 0, 0] {
            l.record(&c, bytes, 1, 700);
        }
        assert_eq!(l.predict(&c, 0), Some(700));
        assert_eq!(
            l.bytes_within(&c, 10),
            Some(0),
            "its fixed part alone is over 10 ns"
        );
        assert_eq!(
            l.bytes_within(&c, 1000),
            Some(Bytes::MAX),
            "no cost per byte: any size fits"
        );
    }

    /// Equal pieces with noisy times (a split task's): the fit stays
    /// proportional, never a constant that would call any size cheap.
    #[test]
    fn equal_pieces_give_a_proportional_fit() {
        let mut l = LearnedCosts::new(CostLearning::default());
        let a = op("deflate", "9");
        for i in 0..200u64 {
            let bytes = if i % 50 == 49 { 1500 } else { 2048 };
            let noise = [0.8, 1.3, 0.9, 1.1][(i % 4) as usize];
            l.record(&a, bytes, 1, (60_000.0 * noise) as u64);
        }
        let r = &l.report()[0];
        assert_eq!(r.base_ns, 0.0, "{r:?}");
        assert!(r.per_byte_ns > 20.0 && r.per_byte_ns < 40.0, "{r:?}");
        let big = l.predict(&a, 16 << 20).unwrap();
        assert!(big > 300_000_000, "16 MiB predicted at {big} ns");
    }

    #[test]
    fn forgets_old_samples() {
        let mut l = LearnedCosts::new(CostLearning {
            min_samples: 1,
            half_life: 4,
        });
        let a = op("x", "1");
        for _ in 0..50 {
            l.record(&a, 1000, 1, 1000);
        }
        for _ in 0..50 {
            l.record(&a, 1000, 1, 4000);
        }
        let p = l.predict(&a, 1000).unwrap();
        assert!(
            (3990..=4000).contains(&p),
            "{p}: the engine slowed down four-fold"
        );
    }

    proptest! {
        /// Whatever the samples, the fit never predicts below zero or NaN.
        #[test]
        fn never_negative(samples in proptest::collection::vec((0u64..1 << 30, 0u64..1 << 36), 1..40), probe in 0u64..1 << 30) {
            let mut l = LearnedCosts::new(CostLearning { min_samples: 1, half_life: 8 });
            let a = op("x", "1");
            for (b, m) in samples {
                l.record(&a, b, 1, m);
            }
            prop_assert!(l.predict(&a, probe).is_some());
            for r in l.report() {
                prop_assert!(r.base_ns >= 0.0 && r.per_byte_ns >= 0.0 && r.base_ns.is_finite() && r.per_byte_ns.is_finite());
            }
        }
    }
}
