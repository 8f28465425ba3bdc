//! Engines: the resources that serve tasks (an accelerator, a pool of
//! processing units, a DMA channel, an egress link).

use crate::cost::CostModel;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// An engine's index in the scheduler's engine table (dense, from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EngineId(pub u32);

impl EngineId {
    /// The id as an index into per-engine arrays.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What kind of resource an engine is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    /// A hardware accelerator with an FCFS queue and one or more lanes.
    Accelerator,
    /// A cluster of run-to-completion processing units (cores).
    ProcessingUnits,
    /// A PCIe/DMA channel.
    Dma,
    /// An egress link.
    Egress,
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EngineKind::Accelerator => "accelerator",
            EngineKind::ProcessingUnits => "pu",
            EngineKind::Dma => "dma",
            EngineKind::Egress => "egress",
        })
    }
}

/// How an engine is configured: its name, kind, how many subtasks it serves
/// at once (lanes, processing units, queue pairs) and how long work takes.
#[derive(Debug, Clone)]
pub struct EngineSpec {
    /// Unique name.
    pub name: String,
    /// Kind of resource.
    pub kind: EngineKind,
    /// Number of dispatches it serves in parallel; at least 1.
    pub slots: u32,
    /// Predicts service time; fills in tasks submitted without a prediction.
    pub cost: Arc<dyn CostModel>,
    /// Serve tasks larger than this as fragments of this size, each its own
    /// dispatch (OSMOSIS' DMA fragmentation), so a large transfer cannot hold
    /// the engine for its whole length. `None`: never fragment.
    pub fragment: Option<u64>,
}

impl EngineSpec {
    /// An engine with the given name, kind, slot count and cost model.
    pub fn new(name: impl Into<String>, kind: EngineKind, slots: u32, cost: Arc<dyn CostModel>) -> Self {
        EngineSpec {
            name: name.into(),
            kind,
            slots,
            cost,
            fragment: None,
        }
    }

    /// The same engine, serving tasks in fragments of at most `bytes` bytes
    /// (`None` or 0: whole tasks).
    pub fn with_fragment(mut self, bytes: Option<u64>) -> Self {
        self.fragment = bytes.filter(|&b| b > 0);
        self
    }
}
