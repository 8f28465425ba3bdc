//! # isola-runtime
//!
//! The live runtime: tenants submit real operator tasks (`isola-ops`) and
//! engine worker threads run them on this machine's cores, in the order the
//! isolation core (`isola-core`'s `Scheduler`, driven with the monotonic
//! clock by one dispatcher thread) decides. Large tasks of splittable
//! operators run as subtasks and are reassembled; the tenant sees exactly one
//! completion per task: success or a typed error (operator failure, panic,
//! cancellation at shutdown), with over-budget tasks flagged. An engine may
//! instead run on the dispatcher's own thread
//! ([`EngineConfig::on_dispatcher`]): each task run to completion as the
//! core picks it, with no hand-off, for small tasks on few cores; and an
//! engine with workers runs its small tasks there while its workers are
//! idle ([`EngineConfig::with_inline_below`]).
//!
//! Besides operator engines (accelerators, processing units) it has DMA
//! engines, whose workers copy a task's bytes into or out of its tenant's
//! host region ([`HostRegion`]: bounds-checked `write_at`/`read_at`; an
//! allocated [`HeapRegion`] in `isola run`, a shared arena in a daemon) in
//! the fragments the core cuts, and egress engines, whose workers send a
//! task's bytes as UDP datagrams of at most an MTU, batched with
//! `sendmmsg` ([`EgressPort`]). A task is one [`Stage`] or a pipeline of
//! them, run one after another through the core (each stage's output the
//! next one's input), with one completion after the last.
//!
//! Every task goes through the core: its channel caps and quotas, its
//! policy, its decision to split a task (the engine's split rule; the
//! operator only says where the cuts fall). `Mode::Native`, the baseline a
//! DPU application gets without Isola, is the core's `fcfs` on whole tasks,
//! not a second path.
//!
//! What it must not do: make scheduling decisions of its own (what runs
//! when, split or whole, admitted or refused: all the core's), or implement
//! operators (they live in `isola-ops`). It owns threads, buffers, carries
//! and the clock. It computes no figures either: it counts what happened
//! to each tenant's tasks (`TenantStats`), and [`record`] hands completions
//! to the run recorder of `isola-model`, which computes every figure.

#![warn(missing_docs)]

mod attribution;
mod builder;
pub mod core_log;
mod dispatcher;
pub mod egress;
mod guard;
mod handle;
pub mod host;
mod idle_latency;
pub mod ip_tos;
mod job;
mod pipeline;
mod placed;
mod poller;
pub mod profile;
pub mod record;
pub mod region;
mod runtime;
mod spin;
mod stats;
mod threads;
mod worker;
pub mod workload;

pub use attribution::LatencyBreakdown;
pub use builder::{
    BuildError, EngineConfig, EngineDevice, Mode, RuntimeBuilder, DEFAULT_INLINE_BELOW, DEFAULT_SPIN,
};
pub use core_log::{CoreCall, CoreLog};
pub use dispatcher::{ControlError, INLINE_OVERRUN};
pub use egress::{EgressPort, EgressSink, ReplyRoute, SinkCounts, DEFAULT_MTU_PAYLOAD};
pub use handle::{TenantHandle, Ticket};
pub use idle_latency::IdleLatency;
pub use isola_core::{SplitWhen, DEFAULT_CONTENTION_WINDOW_NS};
pub use isola_model::scenario::Direction;
pub use job::{Completion, OnCompletion, SubmitError, TaskError};
pub use pipeline::Stage;
pub use poller::Poller;
pub use region::{bounds, HeapRegion, HostRegion, RegionError};
pub use runtime::{LearnedCosts, Runtime, DEFAULT_SHUTDOWN_GRACE};
pub use stats::TenantStats;
pub use threads::{Realtime, RealtimeOutcome, RuntimeThread, REALTIME_PERIOD, REALTIME_RUN};
