//! Stages: what a task does on each engine it goes through. A task is one
//! stage (an operator on an accelerator or processing-unit engine) or a
//! pipeline of them, run one after another through the core, the output of
//! each the input of the next, as the simulator runs a workload's
//! `pipeline` (its stage k+1 is submitted when stage k completes); the
//! tenant sees one completion, when the last stage is done.
//!
//! Besides operators, two stages move bytes instead of computing: a DMA
//! transfer between the task's bytes and its tenant's host region (copied
//! in fragments when the core splits it, each fragment at its own offset),
//! and an egress send of its bytes as UDP datagrams. Both are dispatched by
//! the core like any task: the engine's policy orders them and the engine's
//! split rule cuts them (OSMOSIS' DMA fragments), with the core's own byte
//! ranges; the workers only copy or send what they are handed.

use crate::egress::{EgressPort, ReplyRoute};
use crate::job::{PartOutput, TaskError};
use crate::region::{bounds, HostRegion};
use isola_core::{Bytes, EngineId, Subtask, SubtaskPlanner, Task};
use isola_model::scenario::Direction;
use isola_ops::Operator;
use std::sync::Arc;

/// One stage of a task, as a tenant asks for it.
#[derive(Clone)]
pub enum Stage {
    /// Runs `operator` on the stage's input, on `engine` (`None`: the
    /// handle's engine, else the first engine serving the operator).
    Run {
        /// The operator.
        operator: Arc<dyn Operator>,
        /// Its engine.
        engine: Option<EngineId>,
    },
    /// A DMA transfer on DMA engine `engine`: `Write` copies the stage's
    /// input into the tenant's host region at `offset` (and passes it on);
    /// `Read` copies as many bytes as the input has out of the region from
    /// `offset` (its output).
    Dma {
        /// A DMA engine ([`crate::EngineConfig::with_dma`]).
        engine: EngineId,
        /// Into (`Write`) or out of (`Read`) host memory.
        direction: Direction,
        /// First byte of the transfer in the region.
        offset: u64,
    },
    /// Sends the stage's input as UDP datagrams on egress engine `engine`'s
    /// port (and passes it on).
    Egress {
        /// An egress engine ([`crate::EngineConfig::with_egress`]).
        engine: EngineId,
    },
    /// Sends the stage's input as UDP datagrams back along `route` (a
    /// packet's reply), cut to egress engine `engine`'s port's datagram
    /// size, and passes it on.
    Reply {
        /// An egress engine ([`crate::EngineConfig::with_egress`]).
        engine: EngineId,
        /// The socket to send from and the address to send to.
        route: ReplyRoute,
    },
}

impl std::fmt::Debug for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stage::Run { operator, engine } => f
                .debug_struct("Run")
                .field("operator", &operator.name())
                .field("engine", engine)
                .finish(),
            Stage::Dma {
                engine,
                direction,
                offset,
            } => f
                .debug_struct("Dma")
                .field("engine", engine)
                .field("direction", direction)
                .field("offset", offset)
                .finish(),
            Stage::Egress { engine } => f.debug_struct("Egress").field("engine", engine).finish(),
            Stage::Reply { engine, route } => f
                .debug_struct("Reply")
                .field("engine", engine)
                .field("to", &route.to)
                .finish(),
        }
    }
}

/// What an engine's worker does with a stage's bytes.
#[derive(Clone)]
pub(crate) enum Work {
    /// Runs an operator.
    Op(Arc<dyn Operator>),
    /// Copies into or out of a host region.
    Dma {
        region: Arc<dyn HostRegion>,
        direction: Direction,
        offset: u64,
    },
    /// Sends on a port: to its destination, or back along a reply's route.
    Egress(Arc<EgressPort>, Option<ReplyRoute>),
}

impl Work {
    /// Its name for the core and the cost model: the operator's, or
    /// `dma-write`, `dma-read`, `egress`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Work::Op(op) => op.name(),
            Work::Dma {
                direction: Direction::Write,
                ..
            } => "dma-write",
            Work::Dma {
                direction: Direction::Read,
                ..
            } => "dma-read",
            Work::Egress(..) => "egress",
        }
    }

    /// The operator, for an operator stage.
    pub(crate) fn operator(&self) -> Option<&dyn Operator> {
        match self {
            Work::Op(op) => Some(op.as_ref()),
            _ => None,
        }
    }

    /// Whether the next stage gets this stage's input (a DMA write or a
    /// send moves the bytes without changing them) rather than its output.
    pub(crate) fn passes_input_on(&self) -> bool {
        matches!(
            self,
            Work::Egress(..)
                | Work::Dma {
                    direction: Direction::Write,
                    ..
                }
        )
    }

    /// How the core cuts it when its engine splits it: an operator by its
    /// own splitter (the dispatcher's planner), a DMA transfer in the core's
    /// equal byte ranges (no planner, as the simulator's transfers), a send
    /// in the same ranges in order (a reply's datagrams leave in order).
    pub(crate) fn transfer_planner(&self) -> Option<isola_core::PlannerRef> {
        matches!(self, Work::Egress(..)).then(|| isola_core::PlannerRef(Arc::new(InOrder)))
    }
}

/// A stage resolved at submit: its engine's index, its work and the model
/// its cost is predicted with.
#[derive(Clone)]
pub(crate) struct StagePlan {
    pub engine: usize,
    pub work: Work,
    pub cost: Arc<crate::guard::GuardedCost>,
}

/// Cuts a send into the core's byte ranges, each dispatched once the one
/// before it is done.
struct InOrder;

impl SubtaskPlanner for InOrder {
    fn plan(&self, task: &Task, split: Bytes) -> Option<Vec<Subtask>> {
        Some(Subtask::ranges(task.id, task.bytes, split, true))
    }
}

/// Runs a transfer stage (`work` is not an operator) on `input`, whole or
/// the fragment `part` of it.
pub(crate) fn run_transfer(
    work: &Work,
    input: &[u8],
    part: Option<&Subtask>,
) -> Result<PartOutput, TaskError> {
    let range = match part {
        None => 0..input.len(),
        Some(p) => bounds(p.offset, p.bytes, input.len() as u64)
            .map_err(|e| TaskError::Internal(format!("a fragment outside its task: {e}")))?,
    };
    let at = range.start as u64;
    let bytes = &input[range];
    let done = |out: Vec<u8>| match part {
        None => PartOutput::Whole(out),
        Some(_) => PartOutput::Part(Box::new(out)),
    };
    match work {
        Work::Op(op) => Err(TaskError::Internal(format!(
            "operator `{}` was handed to the transfer path",
            op.name()
        ))),
        Work::Dma {
            region,
            direction,
            offset,
        } => {
            // The fragment's place in the region: the transfer's offset plus
            // the fragment's in the task (checked, as the region checks the end).
            let start = offset.checked_add(at).ok_or(crate::RegionError::OutOfBounds {
                offset: *offset,
                len: input.len() as u64,
                region: region.len(),
            })?;
            match direction {
                Direction::Write => {
                    region.write_at(start, bytes)?;
                    Ok(done(Vec::new()))
                }
                Direction::Read => {
                    let mut out = vec![0u8; bytes.len()];
                    region.read_at(start, &mut out)?;
                    Ok(done(out))
                }
            }
        }
        Work::Egress(port, route) => {
            let sent = match route {
                Some(r) => port.reply(r, bytes).map_err(|e| (e, Some(r.to))),
                None => port.send(bytes).map_err(|e| (e, port.dest())),
            };
            sent.map_err(|(e, to)| match to {
                Some(to) => TaskError::Egress(format!("sending to {to}: {e}")),
                None => TaskError::Egress(e.to_string()),
            })?;
            Ok(done(Vec::new()))
        }
    }
}

/// A split transfer's output from its fragments' carries in index order:
/// a read's bytes, concatenated; nothing for a write or a send.
pub(crate) fn reassemble_transfer(carries: Vec<isola_ops::Carry>) -> Result<Vec<u8>, TaskError> {
    let mut out = Vec::new();
    for c in carries {
        let part = c
            .downcast::<Vec<u8>>()
            .map_err(|_| TaskError::Internal("a transfer fragment gave another carry".into()))?;
        out.extend_from_slice(&part);
    }
    Ok(out)
}
