//! Per-tenant counters, updated by the dispatcher as tasks complete and
//! readable at any time. They are counts only: figures (latency
//! percentiles, throughput, SLA violations, fairness) are computed from the
//! completions by the run recorder (`isola_model::results::RunRecorder`,
//! fed through [`crate::record`]), the one place they are defined.

use crate::job::{Completion, TaskError};

/// What one tenant got so far, counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantStats {
    /// Tenant name.
    pub name: String,
    /// Tasks accepted.
    pub submitted: u64,
    /// Tasks refused at submit because the tenant's queue was full.
    pub rejected: u64,
    /// Tasks completed with an output.
    pub succeeded: u64,
    /// Tasks whose operator failed or panicked.
    pub failed: u64,
    /// Tasks cancelled by shutdown.
    pub cancelled: u64,
    /// Tasks whose service time exceeded the tenant's budget.
    pub over_budget: u64,
    /// Input bytes of the tasks completed with an output.
    pub bytes: u64,
    /// Measured service time of all completed (sub)tasks, in ns.
    pub busy_ns: u64,
}

impl TenantStats {
    /// No task counted yet for tenant `name`.
    pub(crate) fn new(name: &str) -> Self {
        TenantStats {
            name: name.to_string(),
            ..TenantStats::default()
        }
    }

    /// Counts a completion.
    pub(crate) fn record(&mut self, c: &Completion) {
        self.busy_ns = self.busy_ns.saturating_add(c.service_ns);
        self.over_budget += c.over_budget as u64;
        match &c.result {
            Ok(_) => {
                self.succeeded += 1;
                self.bytes = self.bytes.saturating_add(c.bytes);
            }
            Err(TaskError::Cancelled) => self.cancelled += 1,
            Err(TaskError::Rejected(_)) => self.rejected += 1,
            Err(_) => self.failed += 1,
        }
    }
}
