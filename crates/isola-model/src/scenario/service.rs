//! What a scenario's service model predicts: the mean service time of a
//! task by its size, every driver's cost model for an engine (the
//! simulator's predictions, the live runtime's charges). Drawing service
//! times from the model is the simulator's (`isola_sim::device`).

use super::ServiceSpec;
use isola_core::{CostModel, Nanos, PiecewiseLinearCost, NANOS_PER_SEC};

/// The mean service time of a [`ServiceSpec`] on one engine, as a cost
/// model.
#[derive(Debug, Clone)]
pub enum ServiceCost {
    /// Always `ns` (a constant service, or an exponential one's mean).
    Constant(f64),
    /// `base + per_byte x bytes` ns.
    Affine(f64, f64),
    /// Interpolated (bytes, ns) points.
    Table(PiecewiseLinearCost),
    /// `(base + per_byte x bytes) / clock`.
    Cycles {
        /// Fixed cycles.
        base: f64,
        /// Cycles per byte.
        per_byte: f64,
        /// Clock in Hz.
        clock_hz: f64,
    },
}

impl ServiceCost {
    /// The mean of `spec` on an engine clocked at `clock_hz`.
    pub fn new(spec: &ServiceSpec, clock_hz: f64) -> Self {
        match spec {
            ServiceSpec::Constant(ns) | ServiceSpec::Exponential(ns) => ServiceCost::Constant(*ns as f64),
            ServiceSpec::Affine { base_ns, per_byte_ns } => ServiceCost::Affine(*base_ns, *per_byte_ns),
            // The scenario checked the table: points, each a finite time >= 0.
            ServiceSpec::Table(points) => ServiceCost::Table(
                PiecewiseLinearCost::from_samples(points.iter().copied()).expect("checked table"),
            ),
            ServiceSpec::Cycles { base, per_byte } => ServiceCost::Cycles {
                base: *base,
                per_byte: *per_byte,
                clock_hz,
            },
        }
    }

    /// Mean service time of a task of `bytes` bytes, in ns.
    pub fn mean(&self, bytes: u64) -> f64 {
        match self {
            ServiceCost::Constant(ns) => *ns,
            ServiceCost::Affine(b, p) => b + p * bytes as f64,
            ServiceCost::Table(t) => t.predict("", bytes).unwrap_or(0) as f64,
            ServiceCost::Cycles {
                base,
                per_byte,
                clock_hz,
            } => (base + per_byte * bytes as f64) / clock_hz * NANOS_PER_SEC as f64,
        }
    }
}

/// Predicts the mean, whatever the operator.
impl CostModel for ServiceCost {
    fn predict(&self, _op: &str, bytes: u64) -> Option<Nanos> {
        Some(self.mean(bytes).max(0.0).round() as Nanos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_of_each_form() {
        let affine = ServiceSpec::Affine {
            base_ns: 100.0,
            per_byte_ns: 0.5,
        };
        assert_eq!(ServiceCost::new(&affine, 1e9).mean(1000), 600.0);
        assert_eq!(ServiceCost::new(&ServiceSpec::Exponential(70), 1e9).mean(9), 70.0);
        let cycles = ServiceSpec::Cycles {
            base: 1000.0,
            per_byte: 1.0,
        };
        // 2000 cycles at 2 GHz.
        assert_eq!(ServiceCost::new(&cycles, 2e9).mean(1000), 1000.0);
        let table = ServiceCost::new(&ServiceSpec::Table(vec![(0, 10.0), (100, 110.0)]), 1e9);
        assert_eq!(table.predict("any", 50), Some(60));
    }
}
