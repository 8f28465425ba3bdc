//! The values the scheduler hands its drivers: dispatches, completions,
//! rejections, errors and per-channel counters.

use crate::engine::EngineId;
use crate::policy::PolicyError;
use crate::task::{Subtask, Task, TaskId};
use crate::tenant::TenantId;
use crate::units::{Bytes, Nanos};

/// Identifies one dispatch until it is completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DispatchId {
    /// Its record's key in its engine's slab of entries (or of pieces).
    pub(super) slot: u32,
    pub(super) generation: u32,
    /// The engine that keeps its record.
    pub(super) engine: u32,
    /// Whether the record is a split task's earlier subtask's
    /// (`EngineState::pieces`) rather than a task's entry.
    pub(super) piece: bool,
}

/// Why a task was served when it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchReason {
    /// Its tenant's reservation was due.
    Reservation,
    /// The policy picked it.
    Policy,
    /// Every tenant with work was at its limit and the policy allows breaking it.
    LimitBreak,
    /// It joined the batch of the dispatch before it ([`crate::BatchRule`]).
    Batched,
}

/// What a dispatch tells its driver of the task it serves. The scheduler
/// keeps the [`Task`] itself while any of it is queued and drops it once its
/// last piece is dispatched; a driver that needs more of it (the operator's
/// parameters, the payload) keeps that under the task's id. Handing the
/// whole task back by value on every dispatch cost about 40% of a decision
/// (issue 17).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchedTask {
    /// The task's id, as its driver submitted it.
    pub id: TaskId,
    /// Who submitted it.
    pub tenant: TenantId,
    /// Its size (the whole task's, also when this dispatch is a subtask).
    pub bytes: Bytes,
    /// When it was submitted.
    pub arrival: Nanos,
    /// Predicted service time of the whole task on its engine (given at
    /// submission, or filled in from the engine's cost model).
    pub predicted_cost: Nanos,
    /// The tenant's flow queue it waited in.
    pub flow: u32,
}

impl DispatchedTask {
    /// What a dispatch says of `task`, whose cost was predicted at submission.
    #[inline]
    pub(super) fn of(task: &Task) -> Self {
        debug_assert!(
            task.predicted_cost.is_some(),
            "submit fills in the predicted cost"
        );
        DispatchedTask {
            id: task.id,
            tenant: task.tenant,
            bytes: task.bytes,
            arrival: task.arrival,
            predicted_cost: task.predicted_cost.unwrap_or(0),
            flow: task.flow,
        }
    }
}

/// A task, or a subtask of one, handed to an engine slot.
#[derive(Debug, Clone, Copy)]
pub struct Dispatch {
    /// Pass back to [`Scheduler::complete`](super::Scheduler::complete).
    pub id: DispatchId,
    /// The engine whose slot serves it.
    pub engine: EngineId,
    /// The task it serves.
    pub task: DispatchedTask,
    /// The subtask this dispatch serves when the engine split the task (in
    /// the task's planner's terms); `None` for a whole task.
    pub subtask: Option<Subtask>,
    /// Predicted service time of this dispatch (the subtask's, if any).
    pub predicted: Nanos,
    /// Why it was chosen.
    pub reason: DispatchReason,
}

/// What the scheduler knows of a finished dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completed {
    /// The task.
    pub task: TaskId,
    /// Its tenant.
    pub tenant: TenantId,
    /// The tenant's flow queue it waited in.
    pub flow: u32,
    /// The engine that served it.
    pub engine: EngineId,
    /// Its size.
    pub bytes: Bytes,
    /// When it was submitted.
    pub arrival: Nanos,
    /// When it was dispatched.
    pub dispatched: Nanos,
    /// When it completed.
    pub completed: Nanos,
    /// Predicted service time of this dispatch (the subtask's, if any).
    pub predicted: Nanos,
    /// Predicted service time of the whole task.
    pub task_predicted: Nanos,
    /// Measured service time of this dispatch.
    pub measured: Nanos,
    /// Whether `measured` exceeded the tenant's per-task service budget.
    pub over_budget: bool,
    /// The subtask this dispatch served, when the task was split.
    pub subtask: Option<Subtask>,
    /// Whether this completion finished the task (always, unless it is a
    /// subtask with others still outstanding). A driver reports the task to
    /// its tenant exactly once, on the completion where this is true.
    pub task_done: bool,
}

/// Why a task was not queued. The task itself is handed back with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RejectReason {
    /// The tenant id is not in the scheduler.
    #[error("unknown tenant {0:?}")]
    UnknownTenant(TenantId),
    /// The engine id is not in the scheduler.
    #[error("unknown engine {0:?}")]
    UnknownEngine(EngineId),
    /// The tenant has no flow queue of that index.
    #[error("tenant {tenant:?} has no flow queue {flow}")]
    UnknownFlow {
        /// Tenant.
        tenant: TenantId,
        /// The flow queue named.
        flow: u32,
    },
    /// The tenant's channel on that engine (or the flow queue the task
    /// names) holds `cap` tasks already.
    #[error("channel of tenant {tenant:?} on engine {engine:?} is full ({cap} tasks)")]
    ChannelFull {
        /// Tenant.
        tenant: TenantId,
        /// Engine.
        engine: EngineId,
        /// The channel's capacity.
        cap: usize,
    },
    /// The task has no predicted cost and the engine's model does not know its operator.
    #[error("engine {engine:?} has no cost model for operator `{op}`")]
    NoCostModel {
        /// Engine.
        engine: EngineId,
        /// Operator name.
        op: String,
    },
    /// Queuing the task would take its tenant's bytes queued and in
    /// service, over every engine, past its memory quota.
    #[error("tenant {tenant:?} holds {held} of its {quota} bytes of memory quota; a {bytes}-byte task does not fit")]
    OverQuota {
        /// Tenant.
        tenant: TenantId,
        /// Its memory quota in bytes.
        quota: Bytes,
        /// Bytes of its tasks queued or in service.
        held: Bytes,
        /// The refused task's size.
        bytes: Bytes,
    },
    /// The task's predicted cost is above [`crate::MAX_TASK_COST_NS`]: a
    /// cost model that predicts ages (or a bandwidth of bits per second).
    #[error("task predicted to take {cost} ns, above the limit of {limit} ns per task")]
    CostTooLarge {
        /// The predicted cost.
        cost: Nanos,
        /// The limit.
        limit: Nanos,
    },
    /// The scheduler was closed.
    #[error("the scheduler is shut down")]
    Closed,
}

/// A rejected task, handed back to its submitter with the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("task {:?} rejected: {reason}", task.id)]
pub struct Rejection {
    /// Why.
    pub reason: RejectReason,
    /// The task, unchanged.
    pub task: Box<Task>,
}

/// Errors from [`Scheduler::complete`](super::Scheduler::complete).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchedulerError {
    /// The dispatch id is unknown or was already completed.
    #[error("dispatch {0:?} is not in service (unknown or completed twice)")]
    UnknownDispatch(DispatchId),
}

/// Why a scheduler could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// Two tenants share a name.
    #[error("tenant `{0}` is defined twice")]
    DuplicateTenant(String),
    /// Two engines share a name.
    #[error("engine `{0}` is defined twice")]
    DuplicateEngine(String),
    /// An SLO is inconsistent.
    #[error("tenant `{tenant}`: {field}: {reason}")]
    InvalidSlo {
        /// Tenant name.
        tenant: String,
        /// Offending SLO field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// An engine has no slots.
    #[error("engine `{0}` must have at least one slot")]
    NoSlots(String),
    /// A policy was set for engines that do not exist.
    #[error("a policy is set for {0}, and there is none")]
    NoSuchEngine(String),
    /// No engine or no tenant.
    #[error("a scheduler needs at least one engine and one tenant")]
    Empty,
    /// A policy registered with the builder cannot be.
    #[error("{0}")]
    Registry(PolicyError),
    /// The policy could not be built for an engine.
    #[error("engine `{engine}`: {source}")]
    Policy {
        /// Engine name.
        engine: String,
        /// The policy's error.
        source: PolicyError,
    },
}

/// Counters of one tenant on one engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChannelStats {
    /// Tasks accepted into the channel.
    pub submitted: u64,
    /// Tasks refused because the channel was full.
    pub rejected: u64,
    /// Tasks refused because the tenant was at its memory quota.
    pub over_quota: u64,
    /// Dispatches (tasks, or subtasks of tasks).
    pub dispatched: u64,
    /// Tasks dispatched in the reservation phase.
    pub reserved_dispatches: u64,
    /// Dispatches completed.
    pub completed: u64,
    /// Tasks completed (all of their subtasks).
    pub tasks_completed: u64,
    /// Bytes of completed dispatches.
    pub bytes_completed: u64,
    /// Measured service time of completed tasks (slot x ns).
    pub busy_ns: u64,
    /// Predicted service time of the same completed dispatches, as
    /// predicted when each was dispatched (`busy_ns / predicted_ns` is how
    /// far the tenant's tasks ran over or under their predictions).
    pub predicted_ns: u64,
    /// Completed tasks whose service exceeded the tenant's budget.
    pub over_budget: u64,
}
