//! Engines: the resources that serve tasks (an accelerator, a pool of
//! processing units, a DMA channel, an egress link).

use crate::cost::CostModel;
use crate::cost_fit::CostLearning;
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

impl EngineKind {
    /// Every kind (`accelerator`, `pu`, `dma`, `egress`, as [`fmt::Display`] writes them).
    pub const ALL: [EngineKind; 4] = [
        EngineKind::Accelerator,
        EngineKind::ProcessingUnits,
        EngineKind::Dma,
        EngineKind::Egress,
    ];

    /// The kind a configuration names (`accelerator`, `pu`, `dma`,
    /// `egress`: what [`Display`](fmt::Display) writes); `None` for any
    /// other name.
    pub fn from_name(name: &str) -> Option<EngineKind> {
        EngineKind::ALL.into_iter().find(|k| k.to_string() == name)
    }

    /// The policy an engine of this kind runs unless it is given one, in
    /// every driver (decided here alone): start-time fair queuing by
    /// weight on an accelerator, OSMOSIS' WLBVT on processing units, and
    /// OSMOSIS' weighted round robin on its DMA engine and egress.
    pub fn default_policy(self) -> &'static str {
        match self {
            EngineKind::Accelerator => "sfq",
            EngineKind::ProcessingUnits => "wlbvt",
            EngineKind::Dma | EngineKind::Egress => "wrr",
        }
    }

    /// Whether this kind's tasks may be split into subtasks (decided here
    /// alone): an accelerator's (ASTRAEA's task splitting) and transfers
    /// (OSMOSIS' DMA and egress fragments) may; processing units run each
    /// task to completion (a packet's kernel is not cut), so never.
    pub fn splits_tasks(self) -> bool {
        !matches!(self, EngineKind::ProcessingUnits)
    }
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
    /// Whether and how tasks are split into subtasks, each its own
    /// dispatch, so that one large task cannot hold a slot for its whole
    /// length (ASTRAEA's task splitting; OSMOSIS' DMA fragmentation).
    /// `None`: tasks are served whole.
    pub split: Option<SplitRule>,
    /// Whether and how the engine learns its operators' costs from the
    /// service it measures ([`crate::cost_fit`]); `None`: `cost` alone
    /// predicts.
    pub learn: Option<CostLearning>,
    /// Whether and how a tenant's small queued tasks go to a free slot
    /// together, as one dispatch ([`BatchRule`]); `None`: one task a
    /// dispatch.
    pub batch: Option<BatchRule>,
}

impl EngineSpec {
    /// An engine with the given name, kind, slot count and cost model.
    pub fn new(name: impl Into<String>, kind: EngineKind, slots: u32, cost: Arc<dyn CostModel>) -> Self {
        EngineSpec {
            name: name.into(),
            kind,
            slots,
            cost,
            split: None,
            learn: None,
            batch: None,
        }
    }

    /// The same engine with batch rule `rule` (`None`: one task a dispatch).
    pub fn with_batch(mut self, rule: Option<BatchRule>) -> Self {
        self.batch = rule;
        self
    }

    /// The same engine, learning its operators' costs by `learning`
    /// (`None`: the configured model alone predicts).
    pub fn with_learning(mut self, learning: Option<CostLearning>) -> Self {
        self.learn = learning;
        self
    }

    /// The same engine, splitting every task larger than `bytes` into
    /// subtasks of about that size (`None` or 0: whole tasks).
    pub fn with_split(mut self, bytes: Option<u64>) -> Self {
        self.split = bytes.filter(|&b| b > 0).map(SplitRule::always);
        self
    }

    /// The same engine with split rule `rule` (`None`: whole tasks).
    pub fn with_split_rule(mut self, rule: Option<SplitRule>) -> Self {
        self.split = rule.filter(|r| r.bytes > 0);
        self
    }
}

/// How an engine coalesces a tenant's small tasks (AaaS' message-size
/// normalisation; a NIC's descriptor batching, interrupt coalescing):
/// when a slot serves a tenant, the tenant's whole tasks of the same
/// operator queued behind the one chosen go with it, in their flow queues'
/// order, up to `tasks` tasks and `bytes` bytes in all. The batch holds one
/// slot; each of its tasks is still its own dispatch, completed on its
/// own, and the tenant is charged each one's cost, so the batch as their
/// sum. With a `wait`, a tenant whose channel becomes ready with fewer
/// than `tasks` tasks queued (of any operator) is held back (others are
/// served meanwhile) until that many are queued or its head has waited
/// `wait` ns: Nagle's trade of latency for fewer, larger dispatches. A
/// tenant that stays backlogged sends what is queued at its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchRule {
    /// The most tasks in one batch; at least 2 ([`BatchRule::new`]).
    pub tasks: u32,
    /// The most bytes of all a batch's tasks together; a task larger than
    /// this goes alone.
    pub bytes: crate::Bytes,
    /// How long a tenant's first queued task may wait for a batch to fill
    /// (0: batches are only what is already queued when a slot frees).
    pub wait: crate::Nanos,
}

/// The most tasks one batch may hold: one dispatch's bookkeeping stays
/// small, and a batch's tasks still complete one by one.
pub const MAX_BATCH_TASKS: u32 = 1024;

impl BatchRule {
    /// A rule of at most `tasks` tasks and `bytes` bytes a batch, waiting
    /// at most `wait` ns for one to fill; `None` unless `tasks` is 2 to
    /// [`MAX_BATCH_TASKS`] and `bytes` is not 0.
    pub fn new(tasks: u32, bytes: crate::Bytes, wait: crate::Nanos) -> Option<Self> {
        ((2..=MAX_BATCH_TASKS).contains(&tasks) && bytes > 0).then_some(BatchRule { tasks, bytes, wait })
    }
}

/// When and how an engine splits tasks into subtasks.
///
/// The subtask size is `bytes` as the engine's policy adapts it to the load
/// ([`crate::Policy::split_bytes`]); where the cuts fall is the task's
/// [`crate::task::SubtaskPlanner`]'s (equal byte ranges without one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitRule {
    /// Subtask size in bytes of the task's input, before the policy adapts
    /// it; a task no larger than the (adapted) size is served whole.
    pub bytes: u64,
    /// When tasks are split.
    pub when: SplitWhen,
    /// The most predicted service time of one subtask, if set: the subtask
    /// size is also capped at the bytes the task's operator is predicted to
    /// serve in this time (from the engine's learned or configured model),
    /// so that one rule serves operators whose costs per byte differ by
    /// orders of magnitude. Never below [`MIN_TIMED_SUBTASK_BYTES`].
    #[serde(default)]
    pub time: Option<crate::Nanos>,
}

/// The smallest subtask a [`SplitRule::time`] cap makes (2 KiB): below it
/// the per-dispatch overhead (a hand-off and a completion on the
/// dispatcher, a few microseconds) outweighs the work of all but the
/// slowest operators (2 KiB of level-9 deflate takes about 35 us here).
pub const MIN_TIMED_SUBTASK_BYTES: u64 = 2048;

impl SplitRule {
    /// Split every task larger than `bytes`.
    pub fn always(bytes: u64) -> Self {
        SplitRule {
            bytes,
            when: SplitWhen::Always,
            time: None,
        }
    }

    /// Split tasks larger than `bytes` only while another tenant is active
    /// on the engine ([`SplitWhen::Contended`]).
    pub fn contended(bytes: u64, window: crate::Nanos) -> Self {
        SplitRule {
            bytes,
            when: SplitWhen::Contended { window },
            time: None,
        }
    }

    /// The same rule, capping each subtask at `time` ns of predicted service.
    pub fn with_time(mut self, time: Option<crate::Nanos>) -> Self {
        self.time = time;
        self
    }
}

/// When an engine splits a task, decided when the task is planned (at
/// submit, when it reaches the head of its channel) and again at its
/// dispatch, if nothing of it was dispatched yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitWhen {
    /// Every task larger than the subtask size.
    Always,
    /// Only while another tenant is active on the engine: it has work
    /// queued or in service there, or submitted some or had some complete
    /// within `window` ns (a tenant whose task just ended, blocked until
    /// then, submits again at once). A
    /// tenant alone runs its tasks whole, so isolation costs it nothing
    /// (ASTRAEA skips splitting for a single application).
    Contended {
        /// How long after its last submission a tenant still counts as active.
        window: crate::Nanos,
    },
    /// Only while a latency-sensitive tenant other than the task's own is
    /// active on the engine (as in `Contended`). Splitting bounds how long
    /// latency-sensitive work waits behind a large task, and it costs the
    /// split task its own service (a per-piece overhead, a cache made cold
    /// by the pieces between): a task is not split for tenants that do not
    /// care about latency, as ASTRAEA enlarges its splits when no
    /// latency-sensitive work is expected. A tenant is latency-sensitive if
    /// its class is [`crate::TenantClass::LatencySensitive`] or it has a
    /// latency objective.
    ForLatency {
        /// How long after its last submission a tenant still counts as active.
        window: crate::Nanos,
    },
}

/// Default window of [`SplitWhen::Contended`]: 50 ms.
pub const DEFAULT_CONTENTION_WINDOW_NS: crate::Nanos = 50_000_000;
