//! `isola repro NAME | all`: each research paper's own experiment, run under
//! every registered policy on the same arrivals, with our figures printed
//! beside the paper's headline figures, the best policy named, and the
//! milestone's goals checked. Experiments are simulated (scenarios embedded
//! from `scenarios/repro/`, also runnable with `isola sim`); `--live` runs
//! those whose operators exist for real on this machine.
//!
//! The experiments are `isola_experiments`'; this command picks them, shows
//! their progress, prints their outcomes and writes the files.

use crate::progress::Bar;
use anyhow::Context;
use isola_experiments::{run_experiments, select, ExperimentResult};
use isola_report::Generated;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `isola repro`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// An experiment's name, or `all` (see `--list`).
    #[arg(default_value = "all")]
    experiment: String,
    /// List the experiments and exit.
    #[arg(long)]
    list: bool,
    /// Run live, on real operators on this machine's cores, the experiments
    /// whose engines and operators all exist for real (astraea as `isola
    /// demo`; OSMOSIS' DMA head-of-line with real copies, its rates slowed
    /// down for this machine; OSMOSIS' PU contention, compute mix and IO
    /// mix and MTDA's workloads over real UDP packets through an in-process
    /// isolad (the IO mix's transfers real copies into its tenants' host
    /// windows, MTDA's burst on half its timeline); the others are
    /// simulated, with the reason noted.
    #[arg(long)]
    live: bool,
    /// Run the experiments that are shortened here (for CI) at the papers'
    /// full lengths: MTDA's burst over Fig. 13's 30 s (12 s otherwise).
    #[arg(long)]
    full: bool,
    /// Print one JSON object with every outcome instead of the tables.
    #[arg(long)]
    json: bool,
    /// Write results.json and report.html to this folder.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Seed for every random stream (default: each scenario's).
    #[arg(long)]
    seed: Option<u64>,
}

/// Runs `isola repro`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    if args.list {
        writeln!(
            std::io::stdout().lock(),
            "{}",
            isola_experiments::text::experiments()
        )?;
        return Ok(());
    }
    let chosen = select(&args.experiment)?;
    if let Some(dir) = &args.out {
        crate::args::out_dir("--out", dir)?;
    }
    let outcomes = run_experiments(&chosen, args.live, args.full, args.seed, &mut Bar::new(1000))?;
    if let Some(dir) = &args.out {
        write_out(dir, &outcomes)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &outcomes)?;
        writeln!(out)?;
    } else {
        for o in &outcomes {
            write!(out, "{}", isola_experiments::text::outcome(o))?;
        }
        write!(out, "{}", isola_experiments::text::summary(&outcomes))?;
        if let Some(dir) = &args.out {
            writeln!(out, "results written to {}", dir.display())?;
        }
    }
    Ok(())
}

/// Writes `results.json`, and the report (`report.html`, `report.json`).
fn write_out(dir: &Path, outcomes: &[ExperimentResult]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("results.json");
    std::fs::write(&path, serde_json::to_string_pretty(outcomes)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let generated = Generated::now(isola_runtime::host::machine(), command);
    isola_report::write_report(dir, &isola_experiments::report(outcomes, generated))?;
    Ok(())
}
