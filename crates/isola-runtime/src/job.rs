//! A submitted task's life: its shared input, its subtasks' results, and
//! the one completion its tenant receives.

use isola_core::{EngineId, Nanos, TenantId};
use isola_ops::{Carry, OpError};
use std::sync::Arc;

/// Why a task did not produce its output.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TaskError {
    /// The operator refused the input (corrupt data, wrong length...).
    #[error(transparent)]
    Operator(#[from] OpError),
    /// The operator panicked; the runtime caught it and carried on.
    #[error("operator `{op}` panicked: {message}")]
    Panicked {
        /// Operator name.
        op: String,
        /// The panic message.
        message: String,
    },
    /// The isolation core refused the task: its channel was full, its
    /// tenant over its memory quota, or the runtime shutting down.
    #[error("the scheduler refused the task: {0}")]
    Rejected(isola_core::RejectReason),
    /// A worker's result did not fit the work it was given (a runtime bug,
    /// reported on the task rather than taking the runtime down).
    #[error("internal error: {0}")]
    Internal(String),
    /// The operator's subtask plan would have its subtasks write outside
    /// the output or over one another's output; the task did not run.
    #[error("operator `{op}` planned unsound subtasks: {reason}")]
    BadPlan {
        /// Operator name.
        op: String,
        /// What is wrong with the plan.
        reason: String,
    },
    /// The scheduling core of the task's engine failed: its policy
    /// panicked. The engine is out of service; other engines go on.
    #[error("engine `{engine}`'s scheduler failed: {message}")]
    CoreFailed {
        /// Engine name.
        engine: String,
        /// What failed (the panic's message).
        message: String,
    },
    /// The task still ran when shutdown's grace period ended (a runaway
    /// operator): it was given up on, its worker left to finish alone.
    #[error("abandoned: still running {grace_ms} ms after shutdown began")]
    Abandoned {
        /// The grace period, ms.
        grace_ms: u64,
    },
    /// The runtime shut down before the task ran.
    #[error("cancelled: the runtime shut down before the task ran")]
    Cancelled,
    /// A DMA stage's transfer does not fit its tenant's host region (or
    /// the region is unusable); checked before any byte is copied.
    #[error("DMA: {0}")]
    Transfer(#[from] crate::RegionError),
    /// An egress stage's send failed (the socket's error).
    #[error("egress: {0}")]
    Egress(String),
    /// The watchdog stopped it at its tenant's service budget (the
    /// tenant's `BudgetAction::Stop`): its partial output was discarded.
    #[error("stopped by the watchdog: over its service budget of {budget_ns} ns after {ran_ns} ns")]
    OverBudget {
        /// The tenant's budget on the engine, ns.
        budget_ns: u64,
        /// How long the task had been served when it stopped, ns.
        ran_ns: u64,
    },
}

/// Why a task was not accepted (no completion will follow).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SubmitError {
    /// The operator or its parameters are invalid.
    #[error(transparent)]
    Operator(#[from] OpError),
    /// No engine serves the operator.
    #[error("no engine serves operator `{0}`")]
    NoEngine(String),
    /// The engine's cost model cannot predict the operator (profile it).
    #[error("engine `{engine}` has no cost model for operator `{op}` (run `isola profile`)")]
    NoCostModel {
        /// Operator name.
        op: String,
        /// Engine name.
        engine: String,
    },
    /// The cost model (the tenant's own, or the engine's) panicked while
    /// predicting the task.
    #[error("the cost model panicked predicting operator `{op}`: {message}")]
    CostModelPanicked {
        /// Operator name.
        op: String,
        /// The panic's message.
        message: String,
    },
    /// The runtime is shutting down or gone.
    #[error("the runtime is shut down")]
    ShutDown,
    /// A stage names an engine of the wrong device (a DMA stage on an
    /// engine that does not copy, an egress stage on one with no port).
    #[error("engine `{engine}` cannot run a {stage} stage: {why}")]
    WrongEngine {
        /// Engine name.
        engine: String,
        /// The stage (`dma`, `egress`).
        stage: &'static str,
        /// What the engine is.
        why: String,
    },
    /// A DMA stage for a tenant the runtime has no host region for.
    #[error("tenant `{0}` has no host region for DMA (`RuntimeBuilder::host_region`)")]
    NoRegion(String),
    /// A pipeline with no stage.
    #[error("a task needs at least one stage")]
    NoStages,
}

/// The one completion of a submitted task.
#[derive(Debug, Clone)]
pub struct Completion {
    /// The id `submit` returned (in the ticket).
    pub task: u64,
    /// Who submitted it.
    pub tenant: TenantId,
    /// The tenant's flow queue it waited in ([`crate::TenantHandle::in_flow`]).
    pub flow: u32,
    /// The engine that ran it (a pipeline's: its last stage's).
    pub engine: EngineId,
    /// Operator name (a pipeline's: its first stage's; `dma-write`,
    /// `dma-read` or `egress` for a transfer).
    pub op: String,
    /// Input size in bytes (as submitted).
    pub bytes: u64,
    /// The output, or why there is none.
    pub result: Result<Vec<u8>, TaskError>,
    /// When it was submitted, in ns since the runtime started.
    pub submitted_ns: Nanos,
    /// When its first (sub)task started running, if it ran.
    pub started_ns: Option<Nanos>,
    /// When the completion was produced.
    pub finished_ns: Nanos,
    /// Measured service time, summed over its subtasks (and stages).
    pub service_ns: Nanos,
    /// Predicted service time of the whole task (the engine's cost model;
    /// a pipeline's: every stage's, predicted at submit).
    pub predicted_ns: Nanos,
    /// How many subtasks it ran as (1: unsplit; a pipeline's: its last
    /// stage's).
    pub subtasks: u32,
    /// Whether its service time exceeded the tenant's per-task budget.
    pub over_budget: bool,
    /// Where its latency went.
    pub breakdown: crate::LatencyBreakdown,
    /// Whether its last piece ran on the dispatcher's own thread (an
    /// engine with no workers, or a small task while its engine's workers
    /// had nothing: [`crate::EngineConfig::with_inline_below`]) rather
    /// than on one of its engine's worker threads.
    pub on_dispatcher: bool,
}

impl Completion {
    /// Submission to completion, in ns.
    pub fn latency_ns(&self) -> Nanos {
        self.finished_ns.saturating_sub(self.submitted_ns)
    }

    /// This completion with its output bytes freed (the outcome kept), as
    /// an application that consumed them would leave it. Drivers that keep
    /// completions for statistics use it: holding every output of a long
    /// run makes each new output fresh memory, and the page faults of
    /// touching it (about 6 ms per 2 MiB here) land in the next task's
    /// service time.
    pub fn without_output(mut self) -> Self {
        if let Ok(out) = &mut self.result {
            *out = Vec::new();
        }
        self
    }

    /// A copy of this completion without its output (see
    /// [`Completion::without_output`]), for a record kept beside the
    /// completion's own use.
    pub fn summary(&self) -> Completion {
        Completion {
            op: self.op.clone(),
            result: match &self.result {
                Ok(_) => Ok(Vec::new()),
                Err(e) => Err(e.clone()),
            },
            ..*self
        }
    }
}

/// Where a task's completion goes (the ticket's own channel, or one the
/// tenant chose), at most once: a task abandoned at shutdown gets its
/// completion then, and the one its runaway worker would send later is
/// dropped.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    to: Sink,
    sent: Arc<std::sync::atomic::AtomicBool>,
}

/// Code the runtime calls with a task's one completion, on the runtime
/// thread that completes it (a worker's, or the dispatcher's): it must be
/// quick and must not block. A panic in it is caught and the completion
/// is lost to it, nothing else.
pub type OnCompletion = Arc<dyn Fn(Completion) + Send + Sync>;

/// Where a completion goes.
#[derive(Clone)]
enum Sink {
    Channel(crossbeam_channel::Sender<Completion>),
    Call(OnCompletion),
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sink::Channel(_) => "Channel",
            Sink::Call(_) => "Call",
        })
    }
}

impl Reply {
    /// A reply to `to`.
    pub(crate) fn new(to: crossbeam_channel::Sender<Completion>) -> Reply {
        Reply {
            to: Sink::Channel(to),
            sent: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        }
    }

    /// A reply that calls `f`.
    pub(crate) fn calling(f: OnCompletion) -> Reply {
        Reply {
            to: Sink::Call(f),
            sent: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        }
    }

    /// Sends `c` unless a completion was sent already.
    pub(crate) fn send(&self, c: Completion) {
        if self.sent.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        match &self.to {
            // A receiver that went away no longer wants the completion.
            Sink::Channel(to) => {
                let _ = to.send(c);
            }
            Sink::Call(f) => {
                if let Err(message) = crate::guard::catch(|| f(c)) {
                    eprintln!("isola-runtime: a completion callback panicked: {message}");
                }
            }
        }
    }
}

/// What workers share of a job's stage: its work (an operator, a transfer)
/// and its input, read in place by every subtask (and shareable with the
/// tenant, which may submit the same buffer again without copying it).
pub(crate) struct JobInput {
    pub work: crate::pipeline::Work,
    pub input: Arc<Vec<u8>>,
}

/// The result of running one (sub)task.
pub(crate) enum PartOutput {
    /// A whole task's output.
    Whole(Vec<u8>),
    /// A subtask's carry.
    Part(Carry),
    /// A whole task whose completion the worker delivered itself.
    Delivered,
}
