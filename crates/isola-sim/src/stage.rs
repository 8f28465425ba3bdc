//! What each stage of a request costs: the engines' cost predictions the
//! scheduler is given, each workload's per-stage service models, and the
//! scheduler a run drives.

use crate::device::{DmaLink, ServiceModel};
use isola_core::{CostModel, EngineSpec, Nanos, SchedulerBuilder, SplitRule, NANOS_PER_SEC};
use isola_model::scenario::{DeviceSpec, Direction, DmaSpec, EngineModel, PolicyRun, Scenario, ServiceSpec};
use std::sync::Arc;

use crate::sim::SimError;

/// The engine's prediction model, for fragments and tasks without their own.
#[derive(Debug)]
struct EngineCost {
    device: DeviceSpec,
    default: Option<ServiceModel>,
}

impl CostModel for EngineCost {
    fn predict(&self, _op: &str, bytes: u64) -> Option<Nanos> {
        match &self.device {
            DeviceSpec::Dma(spec) => Some(DmaLink::alone(spec, Direction::Write, bytes) as Nanos),
            DeviceSpec::Egress {
                bytes_per_sec,
                packet_overhead,
            } => Some(
                (bytes.saturating_add(*packet_overhead) as f64 * NANOS_PER_SEC as f64 / bytes_per_sec)
                    as Nanos,
            ),
            DeviceSpec::Compute { .. } => self.default.as_ref().map(|m| crate::round_ns(m.mean(bytes))),
        }
    }
}

/// A model giving each stage's service time for one tenant.
#[derive(Debug, Clone)]
pub(crate) enum StageModel {
    Compute(ServiceModel),
    Dma(DmaSpec),
    Egress {
        ns_per_byte: f64,
        overhead: u64,
    },
    /// A share of a compute model's cost (a moved request's forwarding on
    /// the engine it moved from, a workload's `migrate.keep`).
    Share(ServiceModel, f64),
}

impl StageModel {
    pub(crate) fn for_stage(engine: &EngineModel, tenant_service: Option<&ServiceSpec>) -> StageModel {
        match &engine.device {
            DeviceSpec::Compute {
                service, clock_hz, ..
            } => {
                // The scenario checked that one of the two exists.
                let spec = tenant_service
                    .or(service.as_ref())
                    .expect("checked: a service model exists");
                StageModel::Compute(ServiceModel::new(spec, *clock_hz))
            }
            DeviceSpec::Dma(spec) => StageModel::Dma(*spec),
            DeviceSpec::Egress {
                bytes_per_sec,
                packet_overhead,
            } => StageModel::Egress {
                ns_per_byte: NANOS_PER_SEC as f64 / bytes_per_sec,
                overhead: *packet_overhead,
            },
        }
    }

    /// `by` of this model's cost (a compute model; others unchanged).
    pub(crate) fn share(self, by: f64) -> StageModel {
        match self {
            StageModel::Compute(m) => StageModel::Share(m, by),
            other => other,
        }
    }

    pub(crate) fn predict(&self, bytes: u64, direction: Direction) -> f64 {
        match self {
            StageModel::Compute(m) => m.mean(bytes),
            StageModel::Share(m, by) => m.mean(bytes) * by,
            StageModel::Dma(spec) => DmaLink::alone(spec, direction, bytes),
            StageModel::Egress {
                ns_per_byte,
                overhead,
            } => (bytes + overhead) as f64 * ns_per_byte,
        }
    }

    /// [`StageModel::sample`] for `bytes` whose prediction,
    /// [`StageModel::predict`], is known to be `predicted`: a compute
    /// model's mean is its prediction, and is not computed again.
    #[inline]
    pub(crate) fn sample_predicted(
        &self,
        predicted: f64,
        bytes: u64,
        unit_exp: f64,
        direction: Direction,
    ) -> Nanos {
        match self {
            StageModel::Compute(m) => m.sample_of_mean(predicted, unit_exp),
            other => other.sample(bytes, unit_exp, direction),
        }
    }

    pub(crate) fn sample(&self, bytes: u64, unit_exp: f64, direction: Direction) -> Nanos {
        match self {
            StageModel::Compute(m) => m.sample(bytes, unit_exp),
            StageModel::Share(m, by) => crate::round_ns(m.sample(bytes, unit_exp) as f64 * by),
            other => crate::round_ns(other.predict(bytes, direction)),
        }
    }
}

/// The scheduler the simulator drives for run `policy` of `scenario`: the
/// scenario's engines with the device models' cost predictions and the
/// run's split size under each engine's split rule, configured by
/// [`Scenario::configure_core`] as every driver does.
pub fn scheduler_for(scenario: &Scenario, policy: &PolicyRun) -> Result<isola_core::Scheduler, SimError> {
    scheduler_with(scenario, policy, &[])
}

/// [`scheduler_for`] with `registered`, policies an embedder registered
/// beside the built-in ones (`SchedulerBuilder::register_policy`), which
/// `policy` may name.
pub fn scheduler_with(
    scenario: &Scenario,
    policy: &PolicyRun,
    registered: &[isola_core::PolicyInfo],
) -> Result<isola_core::Scheduler, SimError> {
    let mut b = SchedulerBuilder::new();
    for info in registered {
        b.register_policy(*info);
    }
    for e in &scenario.engines {
        let default = match &e.device {
            DeviceSpec::Compute {
                service, clock_hz, ..
            } => service.as_ref().map(|s| ServiceModel::new(s, *clock_hz)),
            _ => None,
        };
        // Split where the engine's kind may be (the core decides which)
        // and the engine's rule says so.
        let split = policy
            .split
            .filter(|_| e.kind.splits_tasks())
            .map(|bytes| SplitRule {
                bytes,
                when: e.split_when,
                time: e.split_time,
            });
        let cost = Arc::new(EngineCost {
            device: e.device.clone(),
            default,
        });
        b.engine(
            EngineSpec::new(e.name.clone(), e.kind, e.core_slots(), cost)
                .with_split_rule(split)
                .with_batch(e.batch)
                .with_learning(e.learn.then(isola_core::CostLearning::default)),
        );
    }
    scenario.configure_core(policy, &mut b);
    Ok(b.build()?)
}
