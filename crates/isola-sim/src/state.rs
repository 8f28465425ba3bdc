//! What the simulator keeps per workload and per request, and the pieces
//! of a run it builds once from its scenario (the engines' devices, the
//! budgets at which a device stops a task).

use crate::device::{Device, DmaLink, FifoLanes};
use crate::rng::{stream, Purpose};
use crate::rss::RssCores;
use crate::stage::StageModel;
use crate::workload::{ArrivalProcess, NextArrival, SizeSampler};
use isola_core::{EngineId, Nanos, OpRef, OpSpec, TenantId};
use isola_model::scenario::{ArrivalSpec, DeviceSpec, Scenario, Steering, WorkloadSpec};
use rand_pcg::Pcg64Mcg;

/// A request (a packet) in the system, from its arrival until it leaves.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    /// The tenant whose channels serve it.
    pub(crate) tenant: usize,
    /// The workload that generated it (its tenant differs from `tenant`
    /// when ingress rules say so).
    pub(crate) source: usize,
    /// The workload whose stages serve it and the flow queue it waits in:
    /// `source` when its tenant serves it, else the serving tenant's first.
    pub(crate) served_as: usize,
    /// When it arrived.
    pub(crate) arrival: Nanos,
    /// Its size.
    pub(crate) bytes: u64,
    /// The stage it is in (an index into its workload's stages).
    pub(crate) stage: usize,
    /// What the current stage moves or works on.
    pub(crate) stage_bytes: u64,
    /// The current stage's predicted service time.
    pub(crate) stage_predicted: f64,
    /// Its operator when not its workload's (a trace row's); the workload's
    /// is shared from [`WorkloadState::op`] at each submission.
    pub(crate) op: Option<OpRef>,
    /// Exp(1) draw per stage for exponential service models.
    pub(crate) unit_exp: f64,
    /// The RSS hash of its 5-tuple (what an RSS-steered engine hashes).
    pub(crate) flow_hash: u64,
    /// The predicted service of its stages so far, summed.
    pub(crate) predicted_total: f64,
    /// Whether it runs on its workload's moved stages (host migration).
    pub(crate) moved: bool,
}

/// A workload's arrivals, random streams and the fields of its spec that
/// each request reads.
pub(crate) struct WorkloadState {
    /// Its tenant, and its index among the tenant's workloads (its flow
    /// queue).
    pub(crate) tenant: usize,
    /// Its index among the tenant's workloads.
    pub(crate) flow: u32,
    /// When its next requests arrive.
    pub(crate) arrivals: ArrivalProcess,
    /// The scheduled open-loop arrival (a trace row fixes its size and op).
    pub(crate) pending: Option<NextArrival>,
    /// The workload's operator, shared by its tasks.
    pub(crate) op: OpRef,
    /// Its requests' sizes.
    pub(crate) sizes: SizeSampler,
    /// The stream its requests' service draws come from.
    pub(crate) service_rng: Pcg64Mcg,
    /// Its stages' service models, in order.
    pub(crate) stages: Vec<StageModel>,
    /// With `migrate`: the engines and models of a moved request's stages.
    pub(crate) moved_engines: Vec<usize>,
    /// With `migrate`: the models of a moved request's stages.
    pub(crate) moved_stages: Vec<StageModel>,
    /// Whether its new requests go to the moved stages now.
    pub(crate) on_host: bool,
    /// Its spec's fields that every request reads, copied here: the spec
    /// is large and cold, read through two vectors (issue 34). Its
    /// stages' engines, DMA direction, service scaling, flows and flow
    /// life.
    pub(crate) engines: Vec<usize>,
    /// Its DMA direction.
    pub(crate) direction: isola_model::scenario::Direction,
    /// Its service scaling: measured over predicted service.
    pub(crate) measured_over_predicted: f64,
    /// How many flows its packets cycle through (a new one a packet without).
    pub(crate) flows: Option<u32>,
    /// How long a flow lives before it is renewed.
    pub(crate) flow_life: Option<Nanos>,
    /// Requests issued so far.
    pub(crate) issued: u64,
    /// The most requests it issues.
    pub(crate) limit: Option<u64>,
    /// Closed loop: its next request arrives as one ends.
    pub(crate) closed: bool,
}

impl WorkloadState {
    /// The state of workload `w`, the `k`-th of tenant `i`, of
    /// `scenario`, drawing from `seed`'s streams, issuing at most
    /// `limit` requests.
    pub(crate) fn new(
        scenario: &Scenario,
        w: &WorkloadSpec,
        (i, k): (usize, usize),
        seed: u64,
        limit: Option<u64>,
    ) -> Self {
        // A tenant's first workload keeps the random streams of the
        // tenant's index (so a scenario's results do not change with
        // how its workloads are written); the others take their own.
        let streams = i | (k << 20);
        WorkloadState {
            tenant: i,
            flow: k as u32,
            arrivals: ArrivalProcess::new(&w.arrival, w.start, seed, streams),
            pending: None,
            op: OpSpec::named(&w.op),
            sizes: SizeSampler::new(&w.size, seed, streams),
            service_rng: stream(seed, streams, Purpose::Service),
            stages: w
                .stages
                .iter()
                .map(|&s| StageModel::for_stage(&scenario.engines[s], w.service.as_ref()))
                .collect(),
            moved_engines: w.migrate.map_or(Vec::new(), |m| m.moved_stages(&w.stages)),
            moved_stages: w.migrate.map_or(Vec::new(), |m| {
                let model = |(k, &s): (usize, &usize)| {
                    let full = StageModel::for_stage(&scenario.engines[s], w.service.as_ref());
                    if m.kept_stage() == Some(k) {
                        full.share(m.keep)
                    } else {
                        full
                    }
                };
                m.moved_stages(&w.stages).iter().enumerate().map(model).collect()
            }),
            on_host: false,
            engines: w.stages.clone(),
            direction: w.direction,
            measured_over_predicted: w.measured_over_predicted,
            flows: w.flows,
            flow_life: w.flow_life,
            issued: 0,
            limit,
            closed: matches!(w.arrival, ArrivalSpec::Closed(_)),
        }
    }

    /// Its stages' models: the moved ones for a request that moved.
    pub(crate) fn models(&self, moved: bool) -> &[StageModel] {
        if moved {
            &self.moved_stages
        } else {
            &self.stages
        }
    }
}

/// Per engine, per tenant (`e x tenants + t`): `sched`'s service budget
/// for the tenant's tasks on the engine where the tenant's action at the
/// budget is to stop them, else `None`.
pub(crate) fn stop_budgets(
    sched: &isola_core::Scheduler,
    engines: usize,
    tenants: usize,
) -> Vec<Option<Nanos>> {
    let mut out = Vec::with_capacity(engines * tenants);
    for e in 0..engines {
        for t in 0..tenants {
            let (engine, tenant) = (EngineId(e as u32), TenantId(t as u32));
            let stops = sched.budget_action(engine, tenant) == isola_core::BudgetAction::Stop;
            out.push(sched.service_budget(engine, tenant).filter(|_| stops));
        }
    }
    out
}

/// The device model of each of `scenario`'s engines.
pub(crate) fn devices_for(scenario: &Scenario) -> Vec<Device> {
    scenario
        .engines
        .iter()
        .map(|e| match (&e.device, e.steering) {
            (DeviceSpec::Dma(spec), _) => match spec.pcie {
                Some(pcie) => Device::Pcie(crate::pcie::PcieLink::new(*spec, pcie)),
                None => Device::Dma(DmaLink::new(*spec)),
            },
            (device, steering) => {
                let overhead = match device {
                    DeviceSpec::Compute {
                        dispatch_overhead, ..
                    } => *dispatch_overhead,
                    _ => 0,
                };
                match steering {
                    Steering::Rss { ring } => Device::Rss(RssCores::new(e.slots, ring, overhead)),
                    Steering::Scheduler => Device::Lanes(FifoLanes::new(e.slots, overhead)),
                }
            }
        })
        .collect()
}
