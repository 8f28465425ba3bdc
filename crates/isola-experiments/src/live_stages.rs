//! What a live run needs beyond operators for a scenario's DMA and egress
//! engines and pipelines: each engine's device and cost model, each
//! tenant's host region and the offsets its transfers go to, the sink its
//! egress sends reach, and each task's stages.
//!
//! A DMA engine's workers copy each transfer into (or out of) its tenant's
//! host region, an allocated buffer of [`region_size`] bytes, in the
//! fragments the core cuts (the run's `split`, as simulated); successive
//! transfers of a tenant go to successive offsets of its region, wrapping
//! at the end ([`RegionCursor`]). An egress engine's workers send each
//! task's bytes as UDP datagrams of at most 1472 bytes to one sink socket
//! the run owns (on 127.0.0.1), whose thread counts what arrives.
//!
//! OSMOSIS' scenarios run a `write-out` kernel on the processing units,
//! which hands its packet to the DMA engine; the operator registry has no
//! such operator (it does no work of its own), so it is here
//! ([`WriteOut`]): its output is its input, a copy, the packet the kernel
//! produced.

use isola_core::{CostModel, EngineId, EngineKind, Nanos, NANOS_PER_SEC};
use isola_model::scenario::{DeviceSpec, Direction, EngineModel, WorkloadSpec};
use isola_ops::{OpError, Operator};
use isola_runtime::{EgressPort, EgressSink, EngineConfig, Stage, DEFAULT_MTU_PAYLOAD};
use isola_sim::device::DmaLink;
use std::collections::BTreeMap;
use std::sync::Arc;

/// OSMOSIS' `write-out` kernel: its output is its input (the packet it
/// writes out through the next stage).
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOut;

impl Operator for WriteOut {
    fn name(&self) -> &'static str {
        "write-out"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        Ok(input.to_vec())
    }
}

/// The kernel named `name` that a live run has beside the registry's
/// operators, if any.
pub fn live_kernel(name: &str) -> Option<Arc<dyn Operator>> {
    (name == "write-out").then(|| Arc::new(WriteOut) as Arc<dyn Operator>)
}

/// The operator `name` with `params`: a live kernel, else the registry's.
pub fn build(name: &str, params: &BTreeMap<String, String>) -> Result<Arc<dyn Operator>, OpError> {
    match live_kernel(name) {
        Some(k) => Ok(k),
        None => isola_ops::build_operator(name, params).map(Arc::from),
    }
}

/// Predicts a transfer's time with the scenario's device model: a DMA
/// transfer alone on its link (`DmaLink::alone`, the simulator's), a send
/// at the egress bandwidth with its per-packet overhead.
#[derive(Debug)]
pub struct TransferCost(pub DeviceSpec);

impl CostModel for TransferCost {
    fn predict(&self, op: &str, bytes: u64) -> Option<Nanos> {
        match &self.0 {
            DeviceSpec::Dma(spec) => {
                let direction = if op == "dma-read" {
                    Direction::Read
                } else {
                    Direction::Write
                };
                Some(DmaLink::alone(spec, direction, bytes).round() as Nanos)
            }
            DeviceSpec::Egress {
                bytes_per_sec,
                packet_overhead,
            } => Some(
                (bytes.saturating_add(*packet_overhead) as f64 * NANOS_PER_SEC as f64 / bytes_per_sec).round()
                    as Nanos,
            ),
            DeviceSpec::Compute { .. } => None,
        }
    }
}

/// Whether `e` moves bytes (DMA, egress) rather than running operators.
pub fn is_transfer(e: &EngineModel) -> bool {
    matches!(e.kind, EngineKind::Dma | EngineKind::Egress)
}

/// The live configuration of transfer engine `e` (named in the scenario),
/// its sends going to `sink`; `None` for a compute engine.
pub fn transfer_engine(e: &EngineModel, sink: Option<&EgressSink>) -> anyhow::Result<Option<EngineConfig>> {
    let cost = Arc::new(TransferCost(e.device.clone()));
    let config = EngineConfig::new(&e.name, &[], e.slots as usize, cost);
    Ok(match (e.kind, &e.device) {
        (EngineKind::Dma, DeviceSpec::Dma(_)) => Some(config.with_dma()),
        (EngineKind::Egress, DeviceSpec::Egress { .. }) => {
            let Some(sink) = sink else {
                anyhow::bail!("engine `{}`: an egress engine needs the run's sink", e.name);
            };
            let port = EgressPort::connect(sink.addr(), DEFAULT_MTU_PAYLOAD)
                .map_err(|err| anyhow::anyhow!("engine `{}`: its egress socket: {err}", e.name))?;
            Some(config.with_egress(Arc::new(port)))
        }
        (EngineKind::Dma | EngineKind::Egress, _) => anyhow::bail!(
            "engine `{}` is a {} engine without its device model, which a live run needs",
            e.name,
            e.kind
        ),
        _ => None,
    })
}

/// The size of each tenant's host region in a live run: room for 64 of
/// its largest tasks, at least 1 MiB.
pub fn region_size(largest_task: u64) -> usize {
    usize::try_from(largest_task.saturating_mul(64).max(1 << 20)).unwrap_or(usize::MAX)
}

/// Where a tenant's next transfer goes in its region: after the last one,
/// back at 0 when it would not fit.
#[derive(Debug, Clone, Copy)]
pub struct RegionCursor {
    at: u64,
    size: u64,
}

impl RegionCursor {
    /// A cursor over a region of `size` bytes.
    pub fn new(size: u64) -> RegionCursor {
        RegionCursor { at: 0, size }
    }

    /// The offset of a transfer of `bytes` bytes (one that cannot fit at
    /// all gets 0, and the runtime refuses it with a typed error).
    pub fn next(&mut self, bytes: u64) -> u64 {
        if self.at.saturating_add(bytes) > self.size {
            self.at = 0;
        }
        let at = self.at;
        self.at = self.at.saturating_add(bytes);
        at
    }
}

/// The stages of one task of workload `w` on `engines`: `operator` on
/// each compute engine, `w.direction`'s transfer at `offset` on each DMA
/// engine, a send on each egress engine.
pub fn stages(
    w: &WorkloadSpec,
    engines: &[EngineModel],
    operator: Option<&Arc<dyn Operator>>,
    offset: u64,
) -> anyhow::Result<Vec<Stage>> {
    w.stages
        .iter()
        .map(|&i| {
            let engine = EngineId(i as u32);
            Ok(match engines[i].kind {
                EngineKind::Dma => Stage::Dma {
                    engine,
                    direction: w.direction,
                    offset,
                },
                EngineKind::Egress => Stage::Egress { engine },
                _ => Stage::Run {
                    operator: Arc::clone(operator.ok_or_else(|| {
                        anyhow::anyhow!("engine `{}` runs an operator and none was given", engines[i].name)
                    })?),
                    engine: Some(engine),
                },
            })
        })
        .collect()
}

/// Whether a workload has a stage on a compute engine (and so needs a
/// real operator).
pub fn computes(w: &WorkloadSpec, engines: &[EngineModel]) -> bool {
    w.stages.iter().any(|&i| !is_transfer(&engines[i]))
}
