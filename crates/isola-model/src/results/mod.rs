//! Results of runs, simulated or live: one [`PolicyResult`] per policy,
//! serialisable as JSON (the schema `isola sim --json` prints) and as a
//! per-window CSV; the [`RunRecorder`] that computes one from a driver's
//! records; and the [`SlaRule`] that judges latency objectives.

mod flows;
mod recorder;
mod sla;
mod spread;
mod sweep;
mod window_sums;

pub use flows::FlowResult;
pub use recorder::{EngineTime, Outcome, RecordedEngine, RecordedTenant, RunEnd, RunRecorder, TaskRecord};
pub use sla::SlaRule;
pub use spread::Spread;
pub use sweep::{PolicySpread, SeedSweep, TenantSpread};

use isola_core::metrics::LatencySummary;
use isola_core::Nanos;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;

/// Latency percentiles in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyStats {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
}

impl From<LatencySummary> for LatencyStats {
    fn from(s: LatencySummary) -> Self {
        LatencyStats {
            mean: s.mean,
            p50: s.p50,
            p99: s.p99,
            p999: s.p999,
            max: s.max,
        }
    }
}

/// What one tenant got under one policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantResult {
    /// Tenant name.
    pub name: String,
    /// Its weight.
    pub weight: f64,
    /// Tasks that went through every stage.
    pub completed: u64,
    /// Tasks refused because a channel was full.
    pub rejected: u64,
    /// Tasks aborted by the watchdog (over the service budget).
    pub aborted: u64,
    /// Packets it generated that no ingress rule matched (dropped at ingress).
    pub unmatched: u64,
    /// Tasks still in the system when the run ended.
    pub incomplete: u64,
    /// Completed tasks per second.
    pub throughput_ops: f64,
    /// Completed payload bytes per second.
    pub throughput_bps: f64,
    /// Arrival-to-completion latency.
    pub latency_ns: LatencyStats,
    /// Latency distribution: `(ns, fraction at or below)` points.
    pub latency_cdf: Vec<(Nanos, f64)>,
    /// Fraction of completed tasks that missed the latency objective.
    pub sla_violation_rate: f64,
    /// Share of all engine time (slot x ns) this tenant used.
    pub engine_time_share: f64,
    /// Share of each engine's time.
    pub engine_shares: BTreeMap<String, f64>,
    /// First arrival to last completion.
    pub flow_completion_ns: Nanos,
    /// Mean latency shared / mean latency alone (with `solo`).
    pub slowdown: Option<f64>,
    /// Each of its flow queues' figures, when its tasks came through more
    /// than one (a scenario tenant's several workloads, isolad's flows).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowResult>,
}

/// One metrics window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesPoint {
    /// Window start.
    pub start_ns: Nanos,
    /// Jain's index over tenants active in the window, by weight.
    pub jain: f64,
    /// Jain's index against each tenant's weighted max-min fair allocation
    /// under its demand (the service it got plus the work it still had
    /// outstanding at the window's end): a tenant given all it asked for
    /// counts as fairly treated however small its share. `None` where the
    /// driver recorded no backlogs (a live run: the runtime keeps none).
    pub jain_of_demand: Option<f64>,
    /// Per tenant: completed payload bytes per second in the window.
    pub throughput_bps: Vec<f64>,
    /// Per tenant: share of the engine time given in the window.
    pub engine_share: Vec<f64>,
    /// Per tenant: 99th-percentile latency of the tasks completed in the
    /// window (0 if none completed).
    pub p99_ns: Vec<Nanos>,
}

/// One policy's run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyResult {
    /// The run's label (the policy name unless the scenario gave a label).
    pub policy: String,
    /// The registered policy.
    pub policy_name: String,
    /// Jain's index of engine time, normalised by weight, over the run.
    pub jain: f64,
    /// MTDA's Fair1 on throughput (bytes/s) against weights.
    pub fair1: f64,
    /// MTDA's Fair2 (with `solo`).
    pub fair2: Option<f64>,
    /// Length of the measured interval.
    pub duration_ns: Nanos,
    /// Time-average number of tasks in the system (for Little's law).
    pub mean_in_system: f64,
    /// Events processed.
    pub events: u64,
    /// Per tenant.
    pub tenants: Vec<TenantResult>,
    /// Per window.
    pub series: Vec<SeriesPoint>,
    /// What a reader must know to trust the figures (a live run's load
    /// generator that fell behind its rate, a run that overran its
    /// duration); empty when there is nothing to say.
    pub warnings: Vec<String>,
    /// Each tenant's host migrations (its workloads' moves to the host and
    /// back, a workload's `migrate`), in tenant order; empty when no
    /// workload migrates.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub migrations: Vec<u64>,
}

impl PolicyResult {
    /// The mean over the windows of `metric`, or `None` without windows.
    pub fn window_mean(&self, metric: impl Fn(&SeriesPoint) -> f64) -> Option<f64> {
        (!self.series.is_empty())
            .then(|| self.series.iter().map(metric).sum::<f64>() / self.series.len() as f64)
    }

    /// The mean over the windows of Jain's index against each tenant's
    /// fair allocation under its demand ([`SeriesPoint::jain_of_demand`]),
    /// over the windows that have one; `None` if none has (a live run).
    pub fn mean_jain_of_demand(&self) -> Option<f64> {
        let values: Vec<f64> = self.series.iter().filter_map(|p| p.jain_of_demand).collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    }

    /// The mean over the windows of Jain's index by weight
    /// ([`SeriesPoint::jain`]); the run's index without windows.
    pub fn mean_jain_by_weight(&self) -> f64 {
        self.window_mean(|p| p.jain).unwrap_or(self.jain)
    }

    /// Fills in the tenants' slowdowns and Fair2 against `alone`, each
    /// tenant's mean latency when it ran alone (in tenant order; a tenant
    /// without a positive one gets no slowdown).
    pub fn add_slowdowns(&mut self, alone: &[f64]) {
        let shared: Vec<f64> = self.tenants.iter().map(|t| t.latency_ns.mean).collect();
        for (t, r) in self.tenants.iter_mut().enumerate() {
            r.slowdown = alone.get(t).filter(|&&a| a > 0.0).map(|a| shared[t] / a);
        }
        self.fair2 = isola_core::metrics::fair2(&shared, alone).ok();
    }
}

/// Every policy's run of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimReport {
    /// The scenario file.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// One entry per policy run.
    pub policies: Vec<PolicyResult>,
}

impl SimReport {
    /// Writes the per-window time series as CSV: one row per policy, window
    /// and tenant, with the window's Jain indices on each row (the one under
    /// demand empty where the run has none).
    pub fn write_series_csv(&self, out: impl Write) -> csv::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record([
            "policy",
            "window_start_ns",
            "tenant",
            "throughput_bps",
            "engine_share",
            "p99_ns",
            "jain",
            "jain_of_demand",
        ])?;
        for p in &self.policies {
            for point in &p.series {
                for (t, tenant) in p.tenants.iter().enumerate() {
                    w.write_record([
                        p.policy.clone(),
                        point.start_ns.to_string(),
                        tenant.name.clone(),
                        format!("{:.1}", point.throughput_bps.get(t).copied().unwrap_or(0.0)),
                        format!("{:.6}", point.engine_share.get(t).copied().unwrap_or(0.0)),
                        point.p99_ns.get(t).copied().unwrap_or(0).to_string(),
                        format!("{:.6}", point.jain),
                        point.jain_of_demand.map_or(String::new(), |j| format!("{j:.6}")),
                    ])?;
                }
            }
        }
        w.flush()?;
        Ok(())
    }
}
