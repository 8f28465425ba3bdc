//! # isola-sim
//!
//! A deterministic discrete-event simulator of a DPU. It drives the very same
//! `isola_core::Scheduler` the live runtime drives, with virtual time, against
//! device models (accelerators, processing-unit clusters, PCIe/DMA, egress)
//! at line rates and tenant counts a small machine cannot reach. It has the
//! event loop, the device models, workload generation and its random
//! streams; the scenario it runs, the ingress rules and the results it
//! reports are `isola-model`'s, shared with the live runtime.
//!
//! What it must not do: touch an operator's bytes (it models time, not data,
//! and never depends on `isola-ops`), read the wall clock inside a run, or
//! let anything but the scenario and seed decide a result: the same scenario
//! and seed give byte-identical results.

#![warn(missing_docs)]

pub mod batch;
pub mod device;
mod error;
pub mod hooks;
pub mod limits;
mod migrate;
pub mod pcie;
pub mod queue;
pub mod rng;
pub mod rss;
pub mod sim;
pub mod speed;
mod stage;
mod state;
pub mod workload;

use isola_model::scenario::PolicyRun;
use isola_model::{Scenario, SimReport};
pub use sim::{run_policy, run_policy_with, scheduler_for, scheduler_with, RunHooks, SimError};

pub(crate) use isola_core::units::round_ns;

/// Runs every policy of `scenario` (or only `policies`, by label or name)
/// with `seed` (or the scenario's), adding solo runs for slowdowns and Fair2
/// when the scenario asks for them (each tenant alone, natively: FCFS on
/// whole tasks, once for all policies). `progress` hears (run index, runs, fraction).
pub fn simulate(
    scenario: &Scenario,
    policies: &[String],
    seed: Option<u64>,
    mut progress: impl FnMut(usize, usize, f64),
) -> Result<SimReport, SimError> {
    let seed = seed.unwrap_or(scenario.run.seed);
    let runs = scenario.run.select(policies).map_err(SimError::Select)?;
    let solo_runs = if scenario.run.solo {
        scenario.tenants.len()
    } else {
        0
    };
    let total = runs.len() + solo_runs;
    let alone = if scenario.run.solo {
        Some(solo_latencies(scenario, seed, |t, f| progress(t, total, f))?)
    } else {
        None
    };
    let mut out = Vec::new();
    for (i, p) in runs.into_iter().enumerate() {
        let mut tick = |f: f64| progress(solo_runs + i, total, f);
        let mut result = run_policy(scenario, p, seed, None, Some(&mut tick))?;
        if let Some(alone) = &alone {
            result.add_slowdowns(alone);
        }
        out.push(result);
    }
    Ok(SimReport {
        scenario: scenario.path.display().to_string(),
        seed,
        policies: out,
    })
}

/// Each tenant's mean latency alone, natively (FCFS on whole tasks): the
/// reference for every policy's slowdowns, so a policy that confines a
/// tenant even when it is alone (a static partition) is not judged against
/// itself. Drivers running policies one at a time compute it once.
/// `progress` hears (tenant index, fraction of its run).
pub fn solo_latencies(
    scenario: &Scenario,
    seed: u64,
    mut progress: impl FnMut(usize, f64),
) -> Result<Vec<f64>, SimError> {
    let native = PolicyRun::alone();
    (0..scenario.tenants.len())
        .map(|t| {
            let mut tick = |f: f64| progress(t, f);
            let solo = run_policy(scenario, &native, seed, Some(t), Some(&mut tick))?;
            Ok(solo.tenants[t].latency_ns.mean)
        })
        .collect()
}
