//! Profiles: measured service time against input size per operator
//! (ASTRAEA's resource-occupation profiling), as a data format shared by the
//! live runtime (which measures and writes them) and the simulator (which
//! uses them as an engine's service model). Reading and writing files is the
//! callers' job; this module only defines the format and the model.

use crate::cost::{PerOpCost, PiecewiseLinearCost};
use crate::units::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One measured size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfilePoint {
    /// Input bytes of the task (what the scheduler sees).
    pub bytes: Bytes,
    /// Median service time over the samples, in ns.
    pub median_ns: f64,
    /// Samples taken.
    pub samples: usize,
}

/// An operator's measured costs and their fits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatorProfile {
    /// Operator name.
    pub op: String,
    /// Parameters it was measured with (EC's k and m change its cost).
    pub params: BTreeMap<String, String>,
    /// Measured points, ascending by size.
    pub points: Vec<ProfilePoint>,
    /// Least-squares affine fit: fixed cost in ns.
    pub base_ns: f64,
    /// Least-squares affine fit: cost per input byte in ns.
    pub per_byte_ns: f64,
    /// Largest relative error of the affine fit over the points (the
    /// predictions use the piecewise-linear model through the points, which
    /// is exact at them; this says how far from linear the operator is).
    pub affine_error: f64,
}

/// A profile file: every profiled operator.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// What the measurements were taken on (free text).
    pub machine: String,
    /// The operators.
    pub operators: Vec<OperatorProfile>,
}

impl OperatorProfile {
    /// The piecewise-linear model through the measured points, or `None`
    /// if the profile holds no valid point.
    pub fn model(&self) -> Option<PiecewiseLinearCost> {
        PiecewiseLinearCost::from_samples(self.points.iter().map(|p| (p.bytes, p.median_ns))).ok()
    }
}

impl Profile {
    /// A cost model predicting each profiled operator by its points (the
    /// first profile of an operator if it was measured with several
    /// parameter sets).
    pub fn cost_model(&self) -> PerOpCost {
        let mut model = PerOpCost::new();
        let mut seen = std::collections::BTreeSet::new();
        for p in &self.operators {
            if let Some(m) = p.model() {
                if seen.insert(p.op.clone()) {
                    model = model.with_op(p.op.clone(), m);
                }
            }
        }
        model
    }

    /// The profile of `op`, or an error naming the operators it has.
    pub fn operator(&self, op: &str) -> Result<&OperatorProfile, String> {
        self.operators.iter().find(|p| p.op == op).ok_or_else(|| {
            let known: Vec<&str> = self.operators.iter().map(|p| p.op.as_str()).collect();
            format!("no profile of operator `{op}` (it has: {})", known.join(", "))
        })
    }
}
