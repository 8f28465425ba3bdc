//! Per-tenant statistics, updated by the dispatcher as tasks complete and
//! readable at any time.

use crate::job::{Completion, TaskError};
use isola_core::metrics::{LatencyHistogram, LatencySummary};
use isola_core::{LatencyObjective, Nanos};

/// What one tenant got so far.
#[derive(Debug, Clone, Default)]
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
    /// Completed tasks that missed the tenant's latency objective.
    pub sla_violations: u64,
    /// Input bytes of the tasks completed with an output.
    pub bytes: u64,
    /// Measured service time of all completed (sub)tasks, in ns.
    pub busy_ns: u64,
    /// Latency (submit to completion) of tasks completed with an output.
    pub latency: LatencySummary,
    /// When the first task was submitted, in ns since the runtime started.
    pub first_submit_ns: Option<Nanos>,
    /// When the last task completed.
    pub last_finish_ns: Option<Nanos>,
}

impl TenantStats {
    /// Share of the tasks completed with an output that missed the latency
    /// objective (0 without one).
    pub fn sla_violation_rate(&self) -> f64 {
        if self.succeeded == 0 {
            0.0
        } else {
            self.sla_violations as f64 / self.succeeded as f64
        }
    }

    /// Input bytes per second from its first submission to its last
    /// completion.
    pub fn throughput_bps(&self) -> f64 {
        match (self.first_submit_ns, self.last_finish_ns) {
            (Some(a), Some(b)) if b > a => self.bytes as f64 * 1e9 / (b - a) as f64,
            _ => 0.0,
        }
    }
}

/// The dispatcher's record of one tenant.
#[derive(Debug, Default)]
pub(crate) struct TenantRecord {
    pub stats: TenantStats,
    pub histogram: LatencyHistogram,
    pub objective: Option<LatencyObjective>,
}

impl TenantRecord {
    pub(crate) fn new(name: &str, objective: Option<LatencyObjective>) -> Self {
        TenantRecord {
            stats: TenantStats {
                name: name.to_string(),
                ..TenantStats::default()
            },
            histogram: LatencyHistogram::new(),
            objective,
        }
    }

    /// The statistics so far (percentiles read off the histogram now, not
    /// on every completion).
    pub(crate) fn snapshot(&self) -> TenantStats {
        TenantStats {
            latency: self.histogram.summary(),
            ..self.stats.clone()
        }
    }

    /// Counts a completion.
    pub(crate) fn record(&mut self, c: &Completion) {
        let s = &mut self.stats;
        s.busy_ns = s.busy_ns.saturating_add(c.service_ns);
        s.over_budget += c.over_budget as u64;
        s.last_finish_ns = Some(s.last_finish_ns.map_or(c.finished_ns, |t| t.max(c.finished_ns)));
        match &c.result {
            Ok(_) => {
                s.succeeded += 1;
                s.bytes += c.bytes;
                let latency = c.latency_ns();
                self.histogram.record(latency);
                if self
                    .objective
                    .is_some_and(|o| latency as f64 > o.bound(c.predicted_ns))
                {
                    s.sla_violations += 1;
                }
            }
            Err(TaskError::Cancelled) => s.cancelled += 1,
            Err(TaskError::Rejected(_)) => s.rejected += 1,
            Err(_) => s.failed += 1,
        }
    }
}
