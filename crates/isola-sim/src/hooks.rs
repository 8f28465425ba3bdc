//! What an embedder adds to a simulated run ([`RunHooks`]): policies it
//! registered beside the built-in ones, and a flag that stops the run.

/// What an embedder adds to a run (see [`crate::run_policy_with`]): policies it
/// registered beside the built-in ones, and a flag that stops the run.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunHooks<'h> {
    /// Policies registered beside the built-in ones, which the run's
    /// `PolicyRun` may name (`SchedulerBuilder::register_policy`).
    pub policies: &'h [isola_core::PolicyInfo],
    /// Raised (by another thread, the progress callback or a policy), it
    /// ends the run with [`crate::SimError::Stopped`]. Looked at with each
    /// progress report (every 65,536 events) and at the run's end.
    pub stop: Option<&'h std::sync::atomic::AtomicBool>,
}

impl RunHooks<'_> {
    /// Whether the stop flag is raised.
    pub(crate) fn stopped(&self) -> bool {
        self.stop
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
    }
}
