//! Per-tenant results of a run, fed with the scheduler's [`Completed`]
//! records: latency histogram, throughput in bytes/s and ops/s, SLA violations
//! and flow completion time.

use super::latency::{LatencyHistogram, LatencySummary};
use crate::scheduler::Completed;
use crate::tenant::{LatencyObjective, Tenant};
use crate::units::{Nanos, NANOS_PER_SEC};
use serde::Serialize;

#[derive(Debug, Clone, Default)]
struct Accumulator {
    objective: Option<LatencyObjective>,
    latency: LatencyHistogram,
    completed: u64,
    bytes: u64,
    busy_ns: u64,
    violations: u64,
    first_arrival: Option<Nanos>,
    last_completion: Option<Nanos>,
}

/// What one tenant got over a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TenantReport {
    /// Tasks completed.
    pub completed: u64,
    /// Payload bytes per second over the interval.
    pub throughput_bps: f64,
    /// Tasks per second over the interval.
    pub throughput_ops: f64,
    /// Latency (arrival to completion) percentiles.
    pub latency_ns: LatencySummary,
    /// Fraction of completed tasks that missed the latency objective (0 without one).
    pub sla_violation_rate: f64,
    /// Measured engine time used (slot x ns).
    pub busy_ns: u64,
    /// Flow completion time: first arrival to last completion (0 if none).
    pub flow_completion_ns: Nanos,
}

/// Collects per-tenant results.
#[derive(Debug, Clone)]
pub struct TenantRecorder {
    tenants: Vec<Accumulator>,
}

impl TenantRecorder {
    /// A recorder for `tenants`, judging SLAs by their latency objectives.
    pub fn new(tenants: &[Tenant]) -> Self {
        TenantRecorder {
            tenants: tenants
                .iter()
                .map(|t| Accumulator {
                    objective: t.slo.latency,
                    ..Accumulator::default()
                })
                .collect(),
        }
    }

    /// Records one completion. Bytes and engine time count for every
    /// dispatch (fragments add up to their task); latency, the task count and
    /// the SLA only when the completion finishes its task (`task_done`), with
    /// the SLA judged against the whole task's predicted service time.
    pub fn record(&mut self, c: &Completed) {
        let Some(a) = self.tenants.get_mut(c.tenant.index()) else {
            return;
        };
        a.bytes += c.bytes;
        a.busy_ns = a.busy_ns.saturating_add(c.measured);
        if !c.task_done {
            return;
        }
        let latency = c.completed.saturating_sub(c.arrival);
        a.latency.record(latency);
        a.completed += 1;
        if a.objective
            .is_some_and(|o| latency as f64 > o.bound(c.task_predicted))
        {
            a.violations += 1;
        }
        a.first_arrival = Some(a.first_arrival.map_or(c.arrival, |f| f.min(c.arrival)));
        a.last_completion = Some(a.last_completion.map_or(c.completed, |l| l.max(c.completed)));
    }

    /// Tenant `index`'s latency distribution (see `LatencyHistogram::cdf`).
    pub fn latency_cdf(&self, index: usize) -> Vec<(Nanos, f64)> {
        self.tenants
            .get(index)
            .map(|a| a.latency.cdf())
            .unwrap_or_default()
    }

    /// Tenant `index`'s results over a run of `interval` ns.
    pub fn report(&self, index: usize, interval: Nanos) -> Option<TenantReport> {
        let a = self.tenants.get(index)?;
        let secs = interval.max(1) as f64 / NANOS_PER_SEC as f64;
        Some(TenantReport {
            completed: a.completed,
            throughput_bps: a.bytes as f64 / secs,
            throughput_ops: a.completed as f64 / secs,
            latency_ns: a.latency.summary(),
            sla_violation_rate: if a.completed == 0 {
                0.0
            } else {
                a.violations as f64 / a.completed as f64
            },
            busy_ns: a.busy_ns,
            flow_completion_ns: match (a.first_arrival, a.last_completion) {
                (Some(f), Some(l)) => l.saturating_sub(f),
                _ => 0,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineId;
    use crate::task::TaskId;
    use crate::tenant::{Slo, TenantId};

    #[test]
    fn throughput_sla_and_fct() {
        let slo = Slo {
            latency: Some(LatencyObjective::ServiceMultiple(2.0)),
            ..Slo::default()
        };
        let tenants = vec![Tenant {
            id: TenantId(0),
            name: "a".into(),
            slo,
            overrides: Vec::new(),
        }];
        let mut r = TenantRecorder::new(&tenants);
        let done = |arrival, completed| Completed {
            task: TaskId(0),
            tenant: TenantId(0),
            engine: EngineId(0),
            bytes: 1000,
            arrival,
            dispatched: arrival,
            completed,
            predicted: 100,
            task_predicted: 100,
            measured: 100,
            over_budget: false,
            subtask: None,
            task_done: true,
        };
        r.record(&done(0, 150)); // within 2 x 100
        r.record(&done(100, 350)); // 250 > 200: violation
        let rep = r.report(0, NANOS_PER_SEC / 1000).unwrap();
        assert_eq!(rep.completed, 2);
        assert_eq!(rep.throughput_ops, 2000.0);
        assert_eq!(rep.throughput_bps, 2_000_000.0);
        assert_eq!(rep.sla_violation_rate, 0.5);
        assert_eq!(rep.flow_completion_ns, 350);
        assert_eq!(rep.busy_ns, 200);
        assert!(r.report(1, 1).is_none());
    }
}
