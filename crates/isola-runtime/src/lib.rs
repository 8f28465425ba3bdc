//! # isola-runtime
//!
//! The live runtime: tenants submit real operator tasks (`isola-ops`) and
//! engine worker threads run them on this machine's cores, in the order the
//! isolation core (`isola-core`'s `Scheduler`, driven with the monotonic
//! clock by one dispatcher thread) decides. Large tasks of splittable
//! operators run as subtasks and are reassembled; the tenant sees exactly one
//! completion per task: success or a typed error (operator failure, panic,
//! cancellation at shutdown), with over-budget tasks flagged.
//!
//! `Mode::Native` is the baseline a DPU application gets without Isola:
//! tasks go straight to the engines' FIFO queues, unsplit.
//!
//! What it must not do: make scheduling decisions of its own (policies live
//! in `isola-core`), or implement operators (they live in `isola-ops`).

#![warn(missing_docs)]

mod builder;
mod dispatcher;
mod job;
mod placed;
pub mod profile;
mod runtime;
mod spin;
mod stats;
mod worker;
pub mod workload;

pub use builder::{
    BuildError, EngineConfig, Mode, RuntimeBuilder, SplitWhen, DEFAULT_CONTENTION_WINDOW_NS, DEFAULT_SPIN,
};
pub use job::{Completion, SubmitError, TaskError};
pub use runtime::{Runtime, TenantHandle, Ticket};
pub use stats::TenantStats;
