//! Metrics primitives: fairness indices, latency percentiles, the median,
//! service per tenant per window. Pure functions and accumulators; no
//! clock is read here either. A run's results (throughput, SLA violations, flow completion
//! time...) are computed from these by `isola_model::results::RunRecorder`.

pub mod fairness;
pub mod latency;
pub mod median;
pub mod samples;
pub mod window;

pub use fairness::{fair1, fair2, jain_index, jain_normalized, jain_of_demand, max_min_fair, FairnessError};
pub use latency::{LatencyHistogram, LatencySummary};
pub use median::{median, median_by, median_f64};
pub use samples::LatencySamples;
pub use window::{jain_of_active, SlidingService, WindowIndex, WindowedService};
