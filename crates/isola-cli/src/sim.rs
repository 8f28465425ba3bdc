//! `isola sim`: simulate a scenario under its policies and print the results.

use crate::progress::Bar;
use anyhow::Context;
use isola_model::results::SeedSweep;
use isola_model::{Scenario, SimReport};
use isola_sim::simulate;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `isola sim`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The scenario file (TOML; see docs/scenario-format.md).
    scenario: PathBuf,
    /// Run only this policy, repeatable: a run's label from the scenario's
    /// [run] policies selects that run exactly (`sfq`, not `sfq-frag4k`);
    /// else a policy name or alias (`wfq`) selects that policy's runs.
    #[arg(long = "policy", value_name = "NAME")]
    policies: Vec<String>,
    /// Seed for every random stream (default: the scenario's).
    #[arg(long)]
    seed: Option<u64>,
    /// Run the scenario with this many seeds (the seed, then the next ones)
    /// and report each figure's median and range over them; with --out,
    /// sweep.json has every seed's report and the spreads.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seeds: u32,
    /// Print one JSON object with every result to stdout instead of tables.
    #[arg(long)]
    json: bool,
    /// Also write results.json, timeseries.csv and the HTML report
    /// (report.html, self-contained, as `isola repro` writes) to this folder.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// `isola run`: the largest task payload to allocate; a scenario whose
    /// sizes reach past it is refused before anything runs.
    #[arg(long, value_name = "SIZE", default_value = crate::args::DEFAULT_MAX_PAYLOAD)]
    max_payload: String,
    /// `isola run`: keep the scenario's cost models as written. By
    /// default each tenant's operator is first timed alone on this
    /// machine and a model off by more than 10% is scaled to it, so that
    /// latency objectives written as multiples of the predicted cost are
    /// judged at this machine's speed (the table's warnings say what was
    /// measured).
    #[arg(long)]
    no_calibrate: bool,
    /// `isola run`: which live runs put the runtime's workers and
    /// dispatcher in a real-time class (SCHED_FIFO at 10, where the system
    /// permits it), so that a worker that
    /// blocks between tasks is not left waiting behind the machine's other
    /// work for a time slice (the simulator's engines never wait for a
    /// CPU; docs/perf.md, "Simulation against live, tails"): `packets`
    /// (isolad's threads, and the packet senders at 12), `all` (in-process
    /// runs' runtime threads too), `off`.
    #[arg(long, value_name = "WHICH", default_value = "packets", value_parser = ["off", "packets", "all"])]
    realtime: String,
}

/// Runs `isola sim`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    execute(args, "simulated", |scenario, seed, tick| {
        Ok(simulate(scenario, &args.policies, Some(seed), tick)?)
    })
}

/// Runs `isola run`: the scenario live, on real operators.
pub fn run_live(args: &Args) -> anyhow::Result<()> {
    let max_payload = crate::args::max_payload(&args.max_payload)?;
    execute(args, "live", |scenario, seed, tick| {
        let mut timing =
            || eprintln!("timing each tenant's operator alone on this machine (--no-calibrate skips it)...");
        let calibrate = !args.no_calibrate;
        isola_experiments::live_realtime::set(match args.realtime.as_str() {
            "off" => isola_experiments::live_realtime::Realtime::Off,
            "all" => isola_experiments::live_realtime::Realtime::All,
            _ => isola_experiments::live_realtime::Realtime::Packets,
        });
        isola_experiments::live_calibrate::run_live(
            scenario,
            &args.policies,
            seed,
            max_payload,
            calibrate,
            &mut timing,
            tick,
        )
    })
}

/// A runner: the scenario under its policies with one seed.
type Runner<'a> = dyn Fn(&Scenario, u64, &mut dyn FnMut(usize, usize, f64)) -> anyhow::Result<SimReport> + 'a;

/// Loads the scenario, checks `--policy`, runs it with `runner` and prints
/// or writes the report (the same for simulated and live runs).
fn execute(
    args: &Args,
    how: &str,
    runner: impl Fn(&Scenario, u64, &mut dyn FnMut(usize, usize, f64)) -> anyhow::Result<SimReport>,
) -> anyhow::Result<()> {
    let scenario = Scenario::load(&args.scenario)?;
    scenario
        .run
        .select(&args.policies)
        .map_err(|e| anyhow::anyhow!("--policy: {e}"))?;
    let seed = args.seed.unwrap_or(scenario.run.seed);
    if args.seeds == 0 {
        anyhow::bail!("--seeds: at least 1");
    }
    if let Some(dir) = &args.out {
        crate::args::out_dir("--out", dir)?;
    }
    if args.seeds > 1 {
        return execute_seeds(args, how, &scenario, seed, &runner);
    }
    let report = with_progress(|tick| runner(&scenario, seed, tick))?;
    if let Some(dir) = &args.out {
        write_out(dir, &report)?;
        let command = std::env::args().collect::<Vec<_>>().join(" ");
        let generated = isola_report::Generated::now(isola_runtime::host::machine(), command);
        isola_report::write_report(dir, &isola_experiments::scenario_report(&report, how, generated))?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", isola_experiments::text::scenario(&report, how))?;
        if let Some(dir) = &args.out {
            writeln!(out, "results written to {}", dir.display())?;
        }
    }
    Ok(())
}

/// Runs the scenario with `args.seeds` seeds from `first` and prints (or
/// writes) the spread of every figure over them.
fn execute_seeds(
    args: &Args,
    how: &str,
    scenario: &Scenario,
    first: u64,
    runner: &Runner<'_>,
) -> anyhow::Result<()> {
    let n = args.seeds as u64;
    let mut runs = Vec::new();
    for i in 0..n {
        let seed = first.wrapping_add(i);
        runs.push(with_progress(|tick| {
            let mut per_seed = |run: usize, runs: usize, frac: f64| {
                tick(
                    0,
                    1,
                    (i as f64 + (run as f64 + frac) / runs.max(1) as f64) / n as f64,
                )
            };
            runner(scenario, seed, &mut per_seed)
        })?);
    }
    let sweep = SeedSweep::of(runs);
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("sweep.json");
        std::fs::write(&path, serde_json::to_string_pretty(&sweep)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &sweep)?;
        writeln!(out)?;
        return Ok(());
    }
    write!(
        out,
        "{}",
        isola_experiments::text::seed_sweep(&sweep, how, first, n)
    )?;
    if let Some(dir) = &args.out {
        writeln!(out, "results written to {}", dir.join("sweep.json").display())?;
    }
    Ok(())
}

/// Runs `f` with a progress callback `(run, runs, fraction of run done)`.
fn with_progress<T>(f: impl FnOnce(&mut dyn FnMut(usize, usize, f64)) -> T) -> T {
    let mut progress = Bar::new(1000);
    let mut tick = |run: usize, runs: usize, frac: f64| {
        let position = ((run as f64 + frac) / runs.max(1) as f64) * 1000.0;
        progress.update(position as u64, format!("run {}/{}", (run + 1).min(runs), runs));
    };
    f(&mut tick)
}

fn write_out(dir: &PathBuf, report: &SimReport) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let json = dir.join("results.json");
    let f = std::fs::File::create(&json).with_context(|| format!("creating {}", json.display()))?;
    serde_json::to_writer_pretty(std::io::BufWriter::new(f), report)?;
    let csv = dir.join("timeseries.csv");
    let f = std::fs::File::create(&csv).with_context(|| format!("creating {}", csv.display()))?;
    report.write_series_csv(std::io::BufWriter::new(f))?;
    Ok(())
}
