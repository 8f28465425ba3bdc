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
#[derive(Debug, Clone, Default)]
pub(super) struct FlowTallies(Vec<FlowTally>);

impl FlowTallies {
    /// Counts task `r` against its flow queue.
    pub(super) fn record(&mut self, r: &TaskRecord) {
        let f = r.flow as usize;
        if f >= isola_core::tenant::MAX_FLOW_QUEUES {
            // No tenant has such a queue: counted in its tenant's figures only.
            return;
        }
        if self.0.len() <= f {
            self.0.resize_with(f + 1, FlowTally::default);
        }
        let tally = &mut self.0[f];
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
        if self.0.len() < 2 {
            return Vec::new();
        }
        self.0
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
