//! `isola sim`: simulate a scenario under its policies and print the results.

use crate::progress::Bar;
use anyhow::Context;
use isola_model::results::SeedSweep;
use isola_model::{Scenario, SimReport};
use isola_report::text::duration;
use isola_report::text::table;
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
        print_tables(&mut out, &report, how)?;
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
    let seeds = format!("seeds {}-{}", first, first.wrapping_add(n - 1));
    for p in &sweep.policies {
        writeln!(
            out,
            "policy {}   Jain {} by weight over the run, Fair1 {}   ({how}, median [range] over {seeds})",
            p.policy,
            p.jain.show(|v| format!("{v:.4}")),
            p.fair1.show(|v| format!("{v:.4}")),
        )?;
        let rows: Vec<Vec<String>> = p
            .tenants
            .iter()
            .map(|t| {
                vec![
                    t.name.clone(),
                    t.throughput_bps.show(|v| format!("{:.3}", v * 8.0 / 1e9)),
                    t.p50_ns.show(duration),
                    t.p99_ns.show(duration),
                    t.sla_violation_rate.show(|v| format!("{:.2}%", v * 100.0)),
                ]
            })
            .collect();
        writeln!(
            out,
            "{}",
            table(&["tenant", "Gbit/s", "p50", "p99", "SLA viol"], &rows)
        )?;
    }
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

/// `how` says how the run's duration was spent: "simulated" or "live".
/// A warning every policy has (a note on the whole run, such as what a
/// live run measured first) is printed once, before the tables; the rest
/// under their policy's table.
fn print_tables(out: &mut impl Write, report: &SimReport, how: &str) -> std::io::Result<()> {
    let shared: Vec<&String> = match report.policies.split_first() {
        Some((first, rest)) => first
            .warnings
            .iter()
            .filter(|w| rest.iter().all(|p| p.warnings.contains(w)))
            .collect(),
        None => Vec::new(),
    };
    for w in &shared {
        writeln!(out, "warning: {w}")?;
    }
    if !shared.is_empty() {
        writeln!(out)?;
    }
    for p in &report.policies {
        let fair2 = p.fair2.map_or("-".to_string(), |f| format!("{f:.3}"));
        writeln!(
            out,
            "policy {}   Jain {:.4} by weight over the run, {} against demand per window   Fair1 {:.4}   Fair2 {}   ({} {how}, {} events)",
            p.policy,
            p.jain,
            p.mean_jain_of_demand().map_or("-".to_string(), |j| format!("{j:.4}")),
            p.fair1,
            fair2,
            duration(p.duration_ns as f64),
            p.events
        )?;
        let rows: Vec<Vec<String>> = p
            .tenants
            .iter()
            .map(|t| {
                let mut row = vec![
                    t.name.clone(),
                    t.completed.to_string(),
                    format!("{:.3}", t.throughput_bps * 8.0 / 1e9),
                    // Tasks per second with a prefix: 8 MiB tasks run at
                    // a few hundred a second, 64 B ones at millions.
                    isola_report::text::si(t.throughput_ops),
                    duration(t.latency_ns.p50 as f64),
                    duration(t.latency_ns.p99 as f64),
                    duration(t.latency_ns.p999 as f64),
                    format!("{:.2}%", t.sla_violation_rate * 100.0),
                    format!("{:.3}", t.engine_time_share),
                ];
                row.push(t.slowdown.map_or("-".into(), |s| format!("{s:.2}")));
                let lost = t.rejected + t.aborted;
                row.push(if lost == 0 {
                    "-".into()
                } else {
                    format!("{}/{}", t.rejected, t.aborted)
                });
                row
            })
            .collect();
        let header = [
            "tenant",
            "completed",
            "Gbit/s",
            "tasks/s",
            "p50",
            "p99",
            "p99.9",
            "SLA viol",
            "share",
            "slowdown",
            "rej/abort",
        ];
        writeln!(out, "{}", table(&header, &rows))?;
        for w in p.warnings.iter().filter(|w| !shared.contains(w)) {
            writeln!(out, "warning: {w}")?;
        }
    }
    Ok(())
}
