//! The SLA rule: when a finished task missed its tenant's latency objective.
//! Every driver judges violations with it (through the run recorder), so a
//! violation means the same in a simulated run, a live run and the demo; it
//! applies the core's comparison, the one the scheduling policies use.

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
    /// The objective this rule applies, and the service time (ns) its
    /// bound is taken against, for a task whose predicted service time is
    /// `predicted`: a solo multiple is a service multiple of the tenant's
    /// solo time instead of the task's prediction.
    fn objective(self, predicted: Nanos) -> (LatencyObjective, Nanos) {
        match self {
            SlaRule::Absolute(ns) => (LatencyObjective::Absolute(ns), predicted),
            SlaRule::PredictedMultiple(k) => (LatencyObjective::ServiceMultiple(k), predicted),
            SlaRule::SoloMultiple { k, solo_ns } => (LatencyObjective::ServiceMultiple(k), solo_ns),
        }
    }

    /// The latency bound, in nanoseconds, of a task whose predicted service
    /// time is `predicted`.
    pub fn bound(self, predicted: Nanos) -> f64 {
        let (objective, reference) = self.objective(predicted);
        objective.bound(reference)
    }

    /// Whether a task that took `latency` from arrival to completion, with
    /// predicted service time `predicted`, violates the rule (took longer
    /// than the bound): the core's comparison
    /// ([`LatencyObjective::violated`]), which policies judge by too.
    pub fn violated(self, latency: Nanos, predicted: Nanos) -> bool {
        let (objective, reference) = self.objective(predicted);
        objective.violated(latency, reference)
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
            (solo.bound(1), predicted.bound(7), SlaRule::Absolute(9).bound(7)),
            (200.0, 14.0, 9.0)
        );
        assert_eq!(
            SlaRule::from(LatencyObjective::ServiceMultiple(3.0)),
            SlaRule::PredictedMultiple(3.0)
        );
        assert_eq!(SlaRule::from(LatencyObjective::Absolute(7)), SlaRule::Absolute(7));
    }
}
