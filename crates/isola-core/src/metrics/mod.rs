//! Metrics: fairness indices, latency percentiles, SLA violations, throughput
//! and flow completion time. Pure functions and recorders fed by drivers; no
//! clock is read here either.

pub mod fairness;
pub mod latency;
pub mod recorder;
pub mod window;

pub use fairness::{fair1, fair2, jain_index, jain_normalized, jain_of_demand, max_min_fair, FairnessError};
pub use latency::{LatencyHistogram, LatencySummary};
pub use recorder::{TenantRecorder, TenantReport};
pub use window::WindowedService;
