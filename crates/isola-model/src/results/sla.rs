//! The SLA rule: when a finished task missed its tenant's latency objective.
//! Every driver judges violations with it, so a violation means the same in
//! a simulated run, a live run and the demo.

use isola_core::{LatencyObjective, Nanos};

/// How long a task may take from arrival to completion before it violates
/// its tenant's SLA.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SlaRule {
    /// A fixed bound in nanoseconds.
    Absolute(Nanos),
    /// `k` times the task's predicted service time (ASTRAEA's form, what a
    /// scenario's `latency_multiple` states).
    PredictedMultiple(f64),
    /// `k` times the tenant's service time when it runs alone (ASTRAEA's
    /// "2x hardware time" measured on a solo run, as the demo does).
    SoloMultiple {
        /// The multiple.
        k: f64,
        /// The tenant's service time alone, in nanoseconds.
        solo_ns: Nanos,
    },
}

impl SlaRule {
    /// The latency bound, in nanoseconds, of a task whose predicted service
    /// time is `predicted`.
    pub fn bound(self, predicted: Nanos) -> f64 {
        match self {
            SlaRule::Absolute(ns) => ns as f64,
            SlaRule::PredictedMultiple(k) => k * predicted as f64,
            SlaRule::SoloMultiple { k, solo_ns } => k * solo_ns as f64,
        }
    }

    /// Whether a task that took `latency` from arrival to completion, with
    /// predicted service time `predicted`, violates the rule (took longer
    /// than the bound).
    pub fn violated(self, latency: Nanos, predicted: Nanos) -> bool {
        latency as f64 > self.bound(predicted)
    }
}

/// A tenant's latency objective as an SLA rule.
impl From<LatencyObjective> for SlaRule {
    fn from(o: LatencyObjective) -> SlaRule {
        match o {
            LatencyObjective::Absolute(ns) => SlaRule::Absolute(ns),
            LatencyObjective::ServiceMultiple(k) => SlaRule::PredictedMultiple(k),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_bounds_latency_by_its_reference() {
        assert!(!SlaRule::Absolute(500).violated(500, 1));
        assert!(SlaRule::Absolute(500).violated(501, 1_000_000));
        let predicted = SlaRule::PredictedMultiple(2.0);
        assert!(!predicted.violated(200, 100));
        assert!(predicted.violated(201, 100));
        assert!(!predicted.violated(2_000, 1_000), "the task's own prediction");
        let solo = SlaRule::SoloMultiple { k: 2.0, solo_ns: 100 };
        assert!(
            solo.violated(201, 1_000),
            "the tenant's solo time, not the task's prediction"
        );
        assert!(!solo.violated(200, 1));
        assert_eq!(
            SlaRule::from(LatencyObjective::ServiceMultiple(3.0)),
            SlaRule::PredictedMultiple(3.0)
        );
        assert_eq!(SlaRule::from(LatencyObjective::Absolute(7)), SlaRule::Absolute(7));
    }
}
