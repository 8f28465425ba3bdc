//! `isola repro NAME | all`: each research paper's own experiment, run under
//! every registered policy on the same arrivals, with our figures printed
//! beside the paper's headline figures, the best policy named, and the
//! milestone's goals checked. Experiments are simulated (scenarios embedded
//! from `scenarios/repro/`, also runnable with `isola sim`); `--live` runs
//! those whose operators exist for real on this machine.
//!
//! This module drives runs and formats outcomes; what an experiment
//! measures and how it picks its best policy is in `experiments.rs`.

mod aaas;
mod experiments;
mod mtda;

use crate::format::table;
use crate::progress::Progress;
use crate::report::{Experiment as ReportExperiment, Figure, Generated, Report, SummaryRow, Table};
use anyhow::{bail, Context};
use isola_core::policy::POLICIES;
use isola_model::scenario::PolicyRun;
use isola_model::{PolicyResult, Scenario};
use serde::Serialize;
use std::collections::BTreeMap;
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
    /// demo`; the MTDA and OSMOSIS compute mixes on the real applications);
    /// the others are simulated, with the reason noted.
    #[arg(long)]
    live: bool,
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

/// A paper's experiment.
pub struct Experiment {
    /// Name on the command line.
    pub name: &'static str,
    /// One line on what it is.
    pub title: &'static str,
    /// The paper it comes from.
    pub paper: &'static str,
    /// The paper's headline figures, quoted.
    pub claims: &'static [&'static str],
    /// Runs it.
    pub run: fn(&mut Ctx) -> anyhow::Result<Outcome>,
}

/// What an experiment's run can use.
pub struct Ctx {
    /// `--live`.
    pub live: bool,
    /// `--seed`.
    pub seed: Option<u64>,
    progress: Progress,
    label: String,
    /// Why scenarios of the current experiment ran simulated under `--live`.
    fell_back: Vec<String>,
}

/// A goal of the milestone or a paper's claim, checked on our figures.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What is checked.
    pub what: String,
    /// Whether it holds.
    pub met: bool,
    /// The figures behind the verdict.
    pub detail: String,
}

/// One experiment's results.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// Experiment name.
    pub name: String,
    /// What it is.
    pub title: String,
    /// Where it comes from.
    pub paper: String,
    /// "simulated" or "live".
    pub mode: String,
    /// The paper's headline figures.
    pub paper_claims: Vec<String>,
    /// The best policy by the experiment's criterion.
    pub best_policy: Option<String>,
    /// The milestone's goals, checked.
    pub goals: Vec<Check>,
    /// Each paper policy against its paper's baselines, as the paper reports.
    pub directions: Vec<Check>,
    /// Figures.
    pub tables: Vec<Table>,
    /// Charts, each beside the paper's figure it corresponds to.
    pub figures: Vec<Figure>,
    /// What the reader should know about how this was run.
    pub notes: Vec<String>,
}

/// Every experiment, in the order `all` runs them.
pub fn experiments() -> &'static [Experiment] {
    experiments::ALL
}

/// Runs `isola repro`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    if args.list {
        let rows: Vec<Vec<String>> = experiments()
            .iter()
            .map(|e| vec![e.name.to_string(), e.paper.to_string(), e.title.to_string()])
            .collect();
        println!("{}", table(&["experiment", "paper", "what"], &rows));
        return Ok(());
    }
    let chosen: Vec<&Experiment> = if args.experiment == "all" {
        experiments().iter().collect()
    } else {
        match experiments().iter().find(|e| e.name == args.experiment) {
            Some(e) => vec![e],
            None => {
                let known: Vec<&str> = experiments().iter().map(|e| e.name).collect();
                bail!(
                    "unknown experiment `{}`; known: all, {}",
                    args.experiment,
                    known.join(", ")
                )
            }
        }
    };
    let mut ctx = Ctx {
        live: args.live,
        seed: args.seed,
        progress: Progress::new(1000),
        label: String::new(),
        fell_back: Vec::new(),
    };
    let mut outcomes = Vec::new();
    for (i, e) in chosen.iter().enumerate() {
        ctx.label = format!("{} ({}/{})", e.name, i + 1, chosen.len());
        ctx.tick(0.0);
        let started = std::time::Instant::now();
        ctx.fell_back.clear();
        let mut outcome = (e.run)(&mut ctx).with_context(|| format!("experiment `{}`", e.name))?;
        if !ctx.fell_back.is_empty() {
            outcome.mode = "simulated".into();
            ctx.fell_back.dedup();
            outcome.notes.append(&mut ctx.fell_back);
        }
        outcome
            .notes
            .push(format!("ran in {:.1} s", started.elapsed().as_secs_f64()));
        outcomes.push(outcome);
    }
    drop(ctx);
    if let Some(dir) = &args.out {
        write_out(dir, &outcomes)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &outcomes)?;
        writeln!(out)?;
    } else {
        for o in &outcomes {
            print_outcome(&mut out, o)?;
        }
        print_summary(&mut out, &outcomes)?;
        if let Some(dir) = &args.out {
            writeln!(out, "results written to {}", dir.display())?;
        }
    }
    Ok(())
}

impl Ctx {
    /// Reports progress within the current experiment (0..1).
    pub fn tick(&mut self, fraction: f64) {
        let position = (fraction.clamp(0.0, 1.0) * 1000.0) as u64;
        self.progress.update(position, self.label.clone());
    }

    /// Runs `scenario` (TOML text named `file`) under each of `runs`, one
    /// policy at a time, so a policy that cannot serve the scenario (e.g. a
    /// static partition with fewer slots than tenants) is reported as such
    /// instead of failing the experiment. Simulated, or with `--live` on
    /// real operators when every engine and workload can run live (else
    /// simulated, with the reason noted). `share` is this call's part of
    /// the experiment's progress, starting at `from`.
    pub fn simulate(
        &mut self,
        file: &str,
        text: &str,
        runs: &[PolicyRun],
        span: (f64, f64),
    ) -> anyhow::Result<Vec<PolicyOutcome>> {
        let scenario = Scenario::parse(text, Path::new(file))?;
        let setup = self.prepare(&scenario)?;
        Ok(self.run_policies(&scenario, &setup, runs, span))
    }

    /// What every policy's run of `scenario` shares: whether it runs live,
    /// and when it asks for slowdowns, each tenant's mean latency alone
    /// (simulated, natively), computed once for all policies. A tenant's
    /// weight does not matter alone, so variants of `scenario` differing
    /// only in weights can share it.
    pub fn prepare(&mut self, scenario: &Scenario) -> anyhow::Result<Prepared> {
        let live = self.live
            && match crate::live::check_live(scenario) {
                Ok(()) => true,
                Err(e) => {
                    self.fell_back.push(format!("simulated, not live: {e:#}"));
                    false
                }
            };
        let alone = if scenario.run.solo && !live {
            let seed = self.seed.unwrap_or(scenario.run.seed);
            Some(isola_sim::solo_latencies(scenario, seed, |_, _| {})?)
        } else {
            None
        };
        Ok(Prepared { live, alone })
    }

    /// Runs `scenario` under each of `runs` as [`Ctx::simulate`] does, with
    /// `setup` from [`Ctx::prepare`].
    pub fn run_policies(
        &mut self,
        scenario: &Scenario,
        setup: &Prepared,
        runs: &[PolicyRun],
        (from, share): (f64, f64),
    ) -> Vec<PolicyOutcome> {
        let seed = self.seed.unwrap_or(scenario.run.seed);
        let step = share / runs.len().max(1) as f64;
        let mut out = Vec::with_capacity(runs.len());
        for (i, run) in runs.iter().enumerate() {
            let base = from + step * i as f64;
            let (progress, label) = (&mut self.progress, &self.label);
            let mut tick = |f: f64| {
                let position = base + step * f;
                progress.update((position.clamp(0.0, 1.0) * 1000.0) as u64, label.clone());
            };
            let result = if setup.live {
                tick(0.0);
                let r = crate::live::run_policy_live(scenario, run, seed).map_err(|e| format!("{e:#}"));
                tick(1.0);
                r
            } else {
                isola_sim::run_policy(scenario, run, seed, None, Some(&mut tick)).map_err(|e| e.to_string())
            };
            let result = result.map(|mut r| {
                if let Some(alone) = &setup.alone {
                    r.add_slowdowns(alone);
                }
                r
            });
            out.push(PolicyOutcome {
                label: run.label.clone(),
                result,
            });
        }
        out
    }
}

/// See [`Ctx::prepare`].
pub struct Prepared {
    live: bool,
    alone: Option<Vec<f64>>,
}

/// One policy's run of a scenario, or why it could not run.
pub struct PolicyOutcome {
    /// The run's label.
    pub label: String,
    /// Its results.
    pub result: Result<PolicyResult, String>,
}

/// Every registered policy with its defaults, labelled by name, plus the
/// native baseline (`fcfs` on whole tasks, labelled `native`) first.
/// `fragment` applies to every policy but native.
pub fn every_policy(fragment: Option<u64>) -> Vec<PolicyRun> {
    let native = PolicyRun {
        name: "fcfs".into(),
        label: "native".into(),
        params: BTreeMap::new(),
        fragment: None,
    };
    std::iter::once(native)
        .chain(POLICIES.iter().map(|p| PolicyRun {
            name: p.name.into(),
            label: p.name.into(),
            params: BTreeMap::new(),
            fragment,
        }))
        .collect()
}

fn print_outcome(out: &mut impl Write, o: &Outcome) -> std::io::Result<()> {
    writeln!(out, "== {}: {} ({}, {})", o.name, o.title, o.paper, o.mode)?;
    for t in &o.tables {
        writeln!(out, "{}", t.caption)?;
        let header: Vec<&str> = t.header.iter().map(String::as_str).collect();
        writeln!(out, "{}", table(&header, &t.rows))?;
    }
    writeln!(out, "paper:")?;
    for c in &o.paper_claims {
        writeln!(out, "  - {c}")?;
    }
    if let Some(best) = &o.best_policy {
        writeln!(out, "best policy here: {best}")?;
    }
    for (kind, checks) in [("goal", &o.goals), ("paper's direction", &o.directions)] {
        for c in checks {
            let verdict = if c.met { "met" } else { "NOT met" };
            writeln!(out, "{kind}: {} -> {verdict} ({})", c.what, c.detail)?;
        }
    }
    for n in &o.notes {
        writeln!(out, "note: {n}")?;
    }
    writeln!(out)
}

fn print_summary(out: &mut impl Write, outcomes: &[Outcome]) -> std::io::Result<()> {
    if outcomes.len() < 2 {
        return Ok(());
    }
    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .map(|o| {
            let met = o.goals.iter().filter(|c| c.met).count();
            let dirs = o.directions.iter().filter(|c| c.met).count();
            vec![
                o.name.clone(),
                o.best_policy.clone().unwrap_or_else(|| "-".into()),
                format!("{met}/{}", o.goals.len()),
                format!("{dirs}/{}", o.directions.len()),
            ]
        })
        .collect();
    writeln!(
        out,
        "{}",
        table(
            &["experiment", "best policy", "goals met", "paper directions held"],
            &rows
        )
    )
}

fn write_out(dir: &Path, outcomes: &[Outcome]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("results.json");
    std::fs::write(&path, serde_json::to_string_pretty(outcomes)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    crate::report::write_report(dir, &to_report(outcomes, &command))?;
    Ok(())
}

/// The HTML report's view of the outcomes.
fn to_report(outcomes: &[Outcome], command: &str) -> Report {
    let mut summary = Vec::new();
    for o in outcomes {
        let checks = o.goals.iter().map(|c| ("goal", c));
        let dirs = o.directions.iter().map(|c| ("paper's direction", c));
        for (kind, c) in checks.chain(dirs) {
            summary.push(SummaryRow {
                experiment: o.name.clone(),
                goal: format!("{kind}: {}", c.what),
                result: c.detail.clone(),
                met: Some(c.met),
            });
        }
        if o.goals.is_empty() && o.directions.is_empty() {
            summary.push(SummaryRow {
                experiment: o.name.clone(),
                goal: "(no goal checked)".into(),
                result: o.best_policy.clone().map_or("-".into(), |b| format!("best: {b}")),
                met: None,
            });
        }
    }
    let experiments = outcomes
        .iter()
        .map(|o| {
            let verdict = |c: &Check| {
                format!(
                    "{} ({}): {}",
                    c.what,
                    if c.met { "met" } else { "not met" },
                    c.detail
                )
            };
            let findings = o.goals.iter().chain(&o.directions).map(verdict).collect();
            ReportExperiment {
                name: o.name.clone(),
                title: o.title.clone(),
                description: format!("{} ({}). {}", o.paper, o.mode, o.notes.join("; ")),
                paper_claims: o.paper_claims.clone(),
                findings,
                best_policy: o.best_policy.clone(),
                tables: o.tables.clone(),
                figures: o.figures.clone(),
            }
        })
        .collect();
    Report {
        title: "Isola: the papers' experiments, every policy side by side".into(),
        generated: Generated::here(command),
        summary,
        experiments,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx {
        Ctx {
            live: false,
            seed: None,
            progress: Progress::new(1000),
            label: "test".into(),
            fell_back: Vec::new(),
        }
    }

    #[test]
    fn every_registered_policy_runs_after_native() {
        let runs = every_policy(Some(512));
        assert_eq!(runs[0].label, "native");
        assert_eq!(runs[0].fragment, None);
        assert_eq!(runs.len(), POLICIES.len() + 1);
        for (run, info) in runs[1..].iter().zip(POLICIES) {
            assert_eq!(run.name, info.name);
            assert_eq!(run.fragment, Some(512));
            assert!(run.params.is_empty());
        }
    }

    #[test]
    fn experiment_names_are_unique_and_unknown_ones_are_errors() {
        let mut names: Vec<&str> = experiments().iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), experiments().len());
        let args = Args {
            experiment: "no-such-paper".into(),
            list: false,
            live: false,
            json: true,
            out: None,
            seed: None,
        };
        let err = run(&args).unwrap_err().to_string();
        assert!(
            err.contains("unknown experiment") && err.contains("osmosis-pu"),
            "{err}"
        );
    }

    /// OSMOSIS' compute mix: WLBVT is fairer than round robin over time and
    /// finishes the Victims' flows sooner, as the paper reports; every
    /// registered policy appears in the table (or in a note saying why not).
    #[test]
    fn osmosis_compute_holds_the_papers_direction() {
        let e = experiments()
            .iter()
            .find(|e| e.name == "osmosis-compute")
            .unwrap();
        let o = (e.run)(&mut ctx()).unwrap();
        assert!(o.best_policy.is_some());
        assert!(!o.directions.is_empty());
        for d in &o.directions {
            assert!(d.met, "{}: {}", d.what, d.detail);
        }
        let rows = &o.tables[0].rows;
        for p in POLICIES {
            let listed = rows.iter().any(|r| r[0] == p.name);
            let noted = o.notes.iter().any(|n| n.starts_with(p.name));
            assert!(listed || noted, "{} missing", p.name);
        }
    }

    #[test]
    fn embedded_scenarios_parse() {
        for (file, text) in [
            (
                "astraea.toml",
                include_str!("../../../../scenarios/repro/astraea.toml"),
            ),
            (
                "osmosis-compute.toml",
                include_str!("../../../../scenarios/repro/osmosis-compute.toml"),
            ),
            (
                "osmosis-io.toml",
                include_str!("../../../../scenarios/repro/osmosis-io.toml"),
            ),
        ] {
            Scenario::parse(text, file).unwrap_or_else(|e| panic!("{file}: {e}"));
        }
    }
}
