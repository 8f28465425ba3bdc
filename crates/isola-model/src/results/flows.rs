//! What each of a tenant's flow queues got: its tasks' counts and latency,
//! beside the tenant's own figures (a tenant's latency flow beside its bulk
//! flow is judged by its own percentiles, not the tenant's mix).

use super::recorder::{Outcome, TaskRecord};
use super::LatencyStats;
use isola_core::metrics::LatencySamples;
use serde::Serialize;

/// One flow queue's figures in a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowResult {
    /// Its index among its tenant's flow queues (a scenario's workloads in
    /// file order, isolad's `[[tenant.flow]]`s).
    pub flow: u32,
    /// Tasks that went through every stage.
    pub completed: u64,
    /// Tasks refused because its queue (or its tenant's) was full.
    pub rejected: u64,
    /// Completed tasks per second.
    pub throughput_ops: f64,
    /// Completed payload bytes per second.
    pub throughput_bps: f64,
    /// Arrival-to-completion latency of its completed tasks.
    pub latency_ns: LatencyStats,
}

/// One flow queue's tally while a run goes.
#[derive(Debug, Clone, Default)]
struct FlowTally {
    latency: LatencySamples,
    completed: u64,
    bytes: u64,
    rejected: u64,
}

/// Every flow queue's tally of one tenant, grown as its flows appear.
///
/// While every task counted came through flow queue 0 (a tenant without
/// flows: every tenant of most runs), nothing is counted here: queue 0's
/// figures are the tenant's own, and are taken from them
/// ([`TenantFigures`]) when a task of another queue first comes (issue 34:
/// a second latency record per completed task, for figures that a tenant
/// with one queue never reports).
#[derive(Debug, Clone)]
pub(super) struct FlowTallies {
    flows: Vec<FlowTally>,
    /// Whether every task counted so far came through queue 0 (`flows` is
    /// then empty).
    only_first: bool,
}

impl Default for FlowTallies {
    fn default() -> Self {
        FlowTallies {
            flows: Vec::new(),
            only_first: true,
        }
    }
}

/// The tenant's own figures, before the task being counted: those of its
/// flow queue 0 while every task came through it.
pub(super) struct TenantFigures<'a> {
    /// Its completed tasks' latencies.
    pub(super) latency: &'a LatencySamples,
    /// Its completed tasks.
    pub(super) completed: u64,
    /// Their bytes.
    pub(super) bytes: u64,
    /// Its rejected tasks.
    pub(super) rejected: u64,
}

impl FlowTallies {
    /// Counts task `r` against its flow queue; `tenant`: the tenant's
    /// figures before `r`.
    #[inline]
    pub(super) fn record(&mut self, r: &TaskRecord, tenant: TenantFigures<'_>) {
        let f = r.flow as usize;
        if self.only_first {
            if f == 0 {
                return;
            }
            // Queue 0 got what the tenant got until now.
            self.only_first = false;
            if tenant.completed + tenant.rejected > 0 || tenant.latency.count() > 0 {
                self.flows.push(FlowTally {
                    latency: tenant.latency.clone(),
                    completed: tenant.completed,
                    bytes: tenant.bytes,
                    rejected: tenant.rejected,
                });
            }
        }
        if f >= isola_core::tenant::MAX_FLOW_QUEUES {
            // No tenant has such a queue: counted in its tenant's figures only.
            return;
        }
        if self.flows.len() <= f {
            self.flows.resize_with(f + 1, FlowTally::default);
        }
        let tally = &mut self.flows[f];
        match r.outcome {
            Outcome::Completed => {
                tally.latency.record(r.end.saturating_sub(r.arrival));
                tally.completed += 1;
                tally.bytes += r.bytes;
            }
            Outcome::Rejected => tally.rejected += 1,
            Outcome::Aborted | Outcome::Unmatched | Outcome::InFlight => {}
        }
    }

    /// Each flow queue's figures over a run of `secs` seconds; none for a
    /// tenant whose tasks all came through one queue (its own figures are
    /// that queue's).
    pub(super) fn results(&mut self, secs: f64) -> Vec<FlowResult> {
        if self.flows.len() < 2 {
            return Vec::new();
        }
        self.flows
            .iter_mut()
            .enumerate()
            .map(|(i, t)| FlowResult {
                flow: i as u32,
                completed: t.completed,
                rejected: t.rejected,
                throughput_ops: t.completed as f64 / secs,
                throughput_bps: t.bytes as f64 / secs,
                latency_ns: LatencyStats::from(t.latency.summary()),
            })
            .collect()
    }
}
