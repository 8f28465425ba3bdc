//! # isola-core
//!
//! The sans-IO heart of Isola: tenants and their SLOs (tenant-wide and per
//! engine), task descriptors, per-tenant virtual channels with caps and
//! memory quotas, each tenant's flow queues under it (strict priority and
//! weights inside the tenant's turn), scheduling policies (one per engine, or per engine kind),
//! rate shapers, splitting (each engine's split rule; where the cuts fall
//! is the task's planner's), cost models and metrics primitives (fairness
//! indices, latency percentiles, windowed service). The same [`Scheduler`] is driven by the live
//! runtime (monotonic clock, real workers) and by the simulator (virtual time,
//! device models), so a policy written once is tested deterministically,
//! simulated at line rate and run for real.
//!
//! What this crate must not do: read a clock, spawn a thread, perform I/O, or
//! touch an operator's bytes. Time comes in as an argument (`now: Nanos`),
//! work comes in as descriptors, decisions go out as values. It depends on
//! nothing heavy.
//!
//! A minimal driver:
//!
//! ```
//! use isola_core::{AffineCost, EngineKind, EngineSpec, OpSpec, SchedulerBuilder, Slo, Task, TaskId};
//! use std::sync::Arc;
//!
//! let mut b = SchedulerBuilder::new();
//! let acc = b.engine(EngineSpec::new("acc", EngineKind::Accelerator, 1, Arc::new(AffineCost::constant(1_000))));
//! let a = b.tenant("a", Slo::weighted(1.0));
//! b.policy("wlbvt", Default::default());
//! let mut s = b.build().unwrap();
//! let op = OpSpec::named("generic");
//! s.submit(0, Task { id: TaskId(1), tenant: a, engine: acc, op, bytes: 64,
//!                    arrival: 0, deadline: None, predicted_cost: None,
//!                    planner: None, flow: 0 }).unwrap();
//! let d = s.next(0, acc).unwrap();
//! let done = s.complete(1_000, d.id, 1_000).unwrap();
//! assert_eq!(done.completed - done.arrival, 1_000);
//! ```

#![warn(missing_docs)]

pub mod admission;
pub mod channel;
pub mod cost;
pub mod cost_fit;
pub mod engine;
pub mod flow_queues;
pub mod metrics;
pub mod params;
pub mod policy;
pub mod profile;
pub mod quantity;
pub mod ready_heap;
pub mod scheduler;
pub mod shaper;
pub mod task;
pub mod tenant;
pub mod units;

pub use cost::{AffineCost, CostModel, CostModelError, PerOpCost, PiecewiseLinearCost};
pub use cost_fit::{CostLearning, LearnedCosts, OpCostReport};
pub use engine::{
    BatchRule, EngineId, EngineKind, EngineSpec, SplitRule, SplitWhen, DEFAULT_CONTENTION_WINDOW_NS,
    MAX_BATCH_TASKS, MIN_TIMED_SUBTASK_BYTES,
};
pub use policy::{AtLimit, Charge, Policy, PolicyError, PolicyInfo, POLICIES};
pub use scheduler::{
    BuildError, ChannelStats, Completed, Dispatch, DispatchId, DispatchReason, DispatchedTask, EnginePolicy,
    RejectReason, Rejection, Scheduler, SchedulerBuilder, SchedulerError, SloChangeError,
    MAX_SUBTASKS_PER_TASK,
};
pub use task::{OpRef, OpSpec, PlannerRef, Subtask, SubtaskPlanner, Task, TaskId, Unsplittable};
pub use tenant::{
    BudgetAction, EngineSelector, FlowQueueSpec, LatencyObjective, RateSpec, Slo, SloOverride, Tenant,
    TenantClass, TenantId, TimeScale,
};
pub use units::{Bytes, Nanos, Rate, RateUnit, MAX_TASK_COST_NS, NANOS_PER_SEC};
