//! What each engine learned of its operators' costs, as gauges: per engine
//! and operator, the recent measured service over the predictions in use
//! (`isola_cost_fit_measured_over_predicted`), the recent mean absolute
//! error of those predictions (`isola_cost_fit_error`), and the samples
//! seen (`isola_cost_fit_samples`). Read from the runtime's published
//! fits at each fairness tick; an operator appears once it has run.

use isola_runtime::LearnedCosts;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;

/// Labels of a cost-fit series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabels {
    engine: String,
    op: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// The cost-fit gauges and where they read from.
#[derive(Default)]
pub(crate) struct CostGauges {
    ratio: Family<OpLabels, FloatGauge>,
    error: Family<OpLabels, FloatGauge>,
    samples: Family<OpLabels, Gauge>,
    source: OnceLock<LearnedCosts>,
}

impl CostGauges {
    /// Registers the gauges in `r`.
    pub(crate) fn register(&self, r: &mut Registry) {
        r.register(
            "cost_fit_measured_over_predicted",
            "Recent measured service of the operator's tasks on the engine over the predictions in use when they were dispatched (1: right)",
            self.ratio.clone(),
        );
        r.register(
            "cost_fit_error",
            "Recent mean absolute error of the engine's predictions for the operator, as a fraction of the measured service",
            self.error.clone(),
        );
        r.register(
            "cost_fit_samples",
            "Completed dispatches of the operator the engine's cost fit has seen",
            self.samples.clone(),
        );
    }

    /// Reads the fits from `source` from now on (once; later calls are ignored).
    pub(crate) fn watch(&self, source: LearnedCosts) {
        let _ = self.source.set(source);
    }

    /// Sets every gauge from the latest fits; `engines` names the engines
    /// in the runtime's order.
    pub(crate) fn update(&self, engines: &[String]) {
        let Some(source) = self.source.get() else {
            return;
        };
        for (engine, ops) in engines.iter().zip(source.read()) {
            for op in ops {
                let labels = OpLabels {
                    engine: engine.clone(),
                    op: op.op.clone(),
                };
                self.ratio.get_or_create(&labels).set(op.measured_over_predicted);
                self.error.get_or_create(&labels).set(op.error);
                self.samples
                    .get_or_create(&labels)
                    .set(i64::try_from(op.samples).unwrap_or(i64::MAX));
            }
        }
    }
}
