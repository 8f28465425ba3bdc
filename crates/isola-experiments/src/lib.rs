//! # isola-experiments
//!
//! The research papers' experiments as a library: each paper's scenarios
//! (embedded or generated), run under every registered policy on the
//! simulator (or live, where every engine and operator exists for real),
//! measured and judged against the milestone's goals and the paper's
//! claimed directions, and drawn as figures for the report. One module per
//! paper ([`astraea`], [`osmosis`], [`mtda`], [`aaas`]); ASTRAEA's live
//! experiment ([`astraea::live`]) is also `isola demo`; [`dpubench`] runs
//! DPUBench's end-to-end programs over the daemon's packet path
//! (`isola dpubench e2e`). [`live`] runs a scenario on the live runtime
//! in the simulator's result schema ([`live_packets`] over real packets
//! through `isolad`, where it matches ingress).
//!
//! What it must not do: print, parse command lines or write files (beyond
//! the temporary files of the daemons and tenant processes it starts). It
//! returns data ([`ExperimentResult`]s with tables as rows and figures, live
//! results) and reports progress through [`Progress`]; the caller shows
//! them, as text for people from [`text`] (and `LiveResults::text`,
//! [`dpubench::table`]) or as JSON. It holds no scheduling logic: policies are isola-core's, run by
//! isola-sim and isola-runtime.

#![warn(missing_docs)]

pub mod aaas;
pub mod astraea;
pub mod dpubench;
mod draw;
mod experiment;
mod judge;
pub mod live;
mod live_breakdown;
pub mod live_calibrate;
pub mod live_check;
pub mod live_packets;
pub mod live_realtime;
pub mod live_scale;
pub mod live_stages;
pub mod mtda;
pub mod osmosis;
mod report;
mod runner;
mod scenario_report;
pub mod text;

pub use experiment::{select, Check, Experiment, ExperimentResult, ALL};
pub use isola_model::progress::{NoProgress, Progress};
pub use report::report;
pub use runner::{every_policy, run_experiments, PolicyOutcome, Prepared, Runner};
pub use scenario_report::scenario_report;
