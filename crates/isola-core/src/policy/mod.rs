//! Scheduling policies: which tenant's work an engine's free slot serves next.
//!
//! A policy is a plain struct behind the [`Policy`] trait; one instance serves
//! one engine. The scheduler owns the per-tenant channels and the shapers and
//! tells the policy which tenants are *ready* (queued work that may go now):
//!
//! * [`Policy::on_ready`]: a tenant that was not ready now is, with its head task;
//! * [`Policy::pick`]: a slot is free, choose one of the ready tenants (or none);
//! * [`Policy::on_dispatch`]: the tenant's head went to the engine (picked by the
//!   policy, or by the scheduler's reservation phase); `next` is its new head
//!   if it stays ready, `None` if it left the ready set;
//! * [`Policy::on_complete`]: a dispatch finished, with its measured service time;
//! * [`Policy::next_tick`] / [`Policy::on_tick`]: for period-based policies;
//! * [`Policy::split_bytes`]: how large the fragments of a tenant's task should
//!   be, asked when the task is planned (ASTRAEA's adaptive split size).
//!
//! Policies are registered by name in [`registry`] with their parameters, so
//! scenarios and the CLI can pick them.

pub mod astraea;
pub mod bvt;
pub mod drr;
pub mod fcfs;
pub mod ipipe;
pub mod mclock;
#[cfg(test)]
mod memory_tests;
pub mod mtda;
pub mod registry;
#[cfg(test)]
pub(crate) mod replay;
pub mod sfq;
pub mod slack;
pub mod static_partition;
#[cfg(test)]
pub(crate) mod test_support;
pub mod wlbvt;

use crate::tenant::{LatencyObjective, TenantClass};
use crate::units::{Bytes, Nanos};

pub use crate::params::{ParamSpec, Params};
pub use registry::PolicyError;
pub use registry::{build_policy, find_policy, PolicyInfo, POLICIES};

/// What a policy may know of a queued task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadInfo {
    /// Scheduler-wide submission sequence number (earlier is smaller).
    pub seq: u64,
    /// When the task was submitted.
    pub arrival: Nanos,
    /// Input size (of this subtask, when the engine splits the task: the
    /// bytes of the task it is charged).
    pub bytes: Bytes,
    /// Predicted service time on this engine (of this subtask, when the
    /// engine splits the task).
    pub cost: Nanos,
    /// Predicted service time of this dispatch and of the task's subtasks
    /// after it (equal to `cost` unless the task is split).
    pub remaining_cost: Nanos,
    /// Predicted service time of the whole task on this engine (equal to
    /// `cost` unless the task is split).
    pub task_cost: Nanos,
    /// The task's absolute deadline, if its submitter gave one.
    pub deadline: Option<Nanos>,
}

/// A tenant as policies see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TenantShare {
    /// Relative share (positive).
    pub weight: f64,
    /// Latency-sensitive, bandwidth-sensitive or best-effort.
    pub class: TenantClass,
    /// The tenant's latency objective per task, if it has one.
    pub latency: Option<LatencyObjective>,
}

/// Read-only state of the engine a policy serves, passed to every hook.
#[derive(Debug, Clone, Copy)]
pub struct PolicyContext<'a> {
    /// Every tenant, by index.
    pub tenants: &'a [TenantShare],
    /// Slots of the engine (dispatches it serves in parallel).
    pub slots: u32,
    /// Dispatches in service per tenant.
    pub in_flight: &'a [u32],
    /// Dispatches waiting in each tenant's channel: one per queued task, or
    /// one per fragment not yet dispatched when the engine fragments.
    pub queued: &'a [u64],
}

/// What the scheduler does when every tenant with queued work is held back by
/// its limit while a slot is free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AtLimit {
    /// Leave the slot idle until a limit allows more (limits are hard).
    #[default]
    Wait,
    /// Serve the tenant whose limit frees soonest anyway (work-conserving).
    /// Such a dispatch is not charged to the tenant's limit.
    Allow,
}

/// What a policy charges a tenant for a task when it shares by weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charge {
    /// The task's predicted service time: shares engine time.
    Cost,
    /// The task's size: shares bytes.
    Bytes,
    /// One per task: shares operations.
    Ops,
}

impl Charge {
    /// The amount charged for `head`.
    #[inline]
    pub fn amount(self, head: &HeadInfo) -> f64 {
        match self {
            Charge::Cost => head.cost as f64,
            Charge::Bytes => head.bytes as f64,
            Charge::Ops => 1.0,
        }
    }

    /// What is still owed for `served`, charged [`Charge::amount`] at its
    /// dispatch, once it is known to have taken `measured` ns: under
    /// `Cost`, the measured service less the prediction (negative when the
    /// task was cheaper than predicted); bytes and operations were known
    /// exactly at dispatch, so nothing. Every policy that charges cost
    /// adds this to the tenant's account at completion, so a tenant whose
    /// tasks cost `k` times their prediction is charged what it used, and
    /// cannot take more than its share for longer than the tasks it has
    /// in service.
    #[inline]
    pub fn correction(self, served: &HeadInfo, measured: Nanos) -> f64 {
        match self {
            Charge::Cost => measured as f64 - served.cost as f64,
            Charge::Bytes | Charge::Ops => 0.0,
        }
    }
}

/// The `charge` parameter, shared by every policy that shares by weight.
pub const CHARGE_PARAM: ParamSpec = ParamSpec {
    name: "charge",
    default: "cost",
    description: "what a tenant is charged per task: `cost` (predicted engine time, ns), `bytes`, or `ops`",
};

/// A scheduling policy for one engine. See the module documentation for the
/// protocol the scheduler follows.
pub trait Policy: Send {
    /// `tenant` has become ready with `head` as its oldest task.
    fn on_ready(&mut self, now: Nanos, tenant: usize, head: &HeadInfo, cx: &PolicyContext<'_>);

    /// Whether ready tenant `tenant` may take a slot now. The scheduler's
    /// reservation phase asks before serving a tenant out of the policy's
    /// order, so reservations cannot break a policy's caps (a static
    /// partition's owned slots, WLBVT's slot limit). Default: always.
    fn admits(&self, _tenant: usize, _cx: &PolicyContext<'_>) -> bool {
        true
    }

    /// Chooses a ready tenant for a free slot, or `None` to leave it idle.
    fn pick(&mut self, now: Nanos, cx: &PolicyContext<'_>) -> Option<usize>;

    /// `served`, the head of `tenant`, was dispatched. `next` is the tenant's
    /// new head if it stays ready, or `None` if it is no longer ready.
    fn on_dispatch(
        &mut self,
        now: Nanos,
        tenant: usize,
        served: &HeadInfo,
        next: Option<&HeadInfo>,
        cx: &PolicyContext<'_>,
    );

    /// A dispatch of `tenant` finished after `measured` ns of service.
    fn on_complete(
        &mut self,
        _now: Nanos,
        _tenant: usize,
        _served: &HeadInfo,
        _measured: Nanos,
        _cx: &PolicyContext<'_>,
    ) {
    }

    /// When the policy next needs [`Policy::on_tick`], if ever.
    fn next_tick(&self) -> Option<Nanos> {
        None
    }

    /// Called by the scheduler once `now >= next_tick()`.
    fn on_tick(&mut self, _now: Nanos, _cx: &PolicyContext<'_>) {}

    /// What to do when every tenant with work is at its limit.
    fn at_limit(&self) -> AtLimit {
        AtLimit::Wait
    }

    /// The fragment size for a task of `tenant` planned at `now`, on an
    /// engine (or runtime) whose configured split size is `default`. Asked
    /// when a task is split (the runtime, at submission) or when it becomes
    /// its channel's head (engines that fragment); a task keeps the size it
    /// was planned with. Default: `default`, whatever the load.
    fn split_bytes(&self, _now: Nanos, _tenant: usize, default: Bytes) -> Bytes {
        default
    }
}
