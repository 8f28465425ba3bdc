//! Why a simulation run could not start, or stopped before its end.

use isola_core::BuildError;

/// Why a run could not start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The scheduler refused the setup (a policy that cannot serve it, ...).
    #[error("{0}")]
    Build(#[from] BuildError),
    /// The runs asked for do not exist in the scenario.
    #[error("{0}")]
    Select(String),
    /// The run would exceed, or did exceed, a limit that protects the
    /// machine: its name (the `[run]` key that raises it, where one does)
    /// and what happened.
    #[error("{message} (limit `{limit}`)")]
    Limit {
        /// The limit's name.
        limit: &'static str,
        /// What would have exceeded it, and how to proceed.
        message: String,
    },
    /// The run was stopped from outside before its end: its caller's stop
    /// flag ([`crate::RunHooks`]'s `stop`) was raised (an interrupt, a policy
    /// written outside Isola that failed).
    #[error("the run was stopped before its end")]
    Stopped,
}
