//! Running experiments: a [`Runner`] runs one experiment's scenarios under
//! its policies, one policy at a time, simulated or (where every engine
//! and operator exists for real) live, and reports progress;
//! [`run_experiments`] runs a list of them in order.

use crate::experiment::{Experiment, ExperimentResult};
use crate::Progress;
use anyhow::Context;
use isola_core::policy::POLICIES;
use isola_model::scenario::PolicyRun;
use isola_model::{PolicyResult, Scenario};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

/// Runs `chosen` in order, live where asked and possible, at the papers'
/// full lengths where `full` (see [`Runner::full`]), with every random
/// stream seeded by `seed` (default: each scenario's). Each outcome ends
/// with a note of how long it ran; an experiment that fell back to the
/// simulator under `live` says so in its notes and mode.
pub fn run_experiments(
    chosen: &[&Experiment],
    live: bool,
    full: bool,
    seed: Option<u64>,
    progress: &mut dyn Progress,
) -> anyhow::Result<Vec<ExperimentResult>> {
    let mut runner = Runner::new(live, seed, progress);
    runner.full = full;
    let mut outcomes = Vec::new();
    for (i, e) in chosen.iter().enumerate() {
        runner.label = format!("{} ({}/{})", e.name, i + 1, chosen.len());
        runner.tick(0.0);
        let started = Instant::now();
        runner.fell_back.clear();
        runner.live_notes.clear();
        let mut outcome = (e.run)(&mut runner).with_context(|| format!("experiment `{}`", e.name))?;
        if !runner.fell_back.is_empty() {
            outcome.mode = "simulated".into();
            runner.fell_back.dedup();
            outcome.notes.append(&mut runner.fell_back);
        }
        outcome.notes.append(&mut runner.live_notes);
        outcome
            .notes
            .push(format!("ran in {:.1} s", started.elapsed().as_secs_f64()));
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// What an experiment's run can use: whether to run live, the seed, and
/// where its progress goes.
pub struct Runner<'p> {
    live: bool,
    full: bool,
    seed: Option<u64>,
    progress: &'p mut dyn Progress,
    label: String,
    /// Why scenarios of the current experiment ran simulated under `live`.
    fell_back: Vec<String>,
    /// What the current experiment's live runs say about themselves (how
    /// they were scaled): each scenario's first run's warnings.
    live_notes: Vec<String>,
}

impl<'p> Runner<'p> {
    /// A runner for experiments run live (where they can be) or simulated,
    /// seeded by `seed` (default: each scenario's), reporting to `progress`.
    pub fn new(live: bool, seed: Option<u64>, progress: &'p mut dyn Progress) -> Self {
        Runner {
            live,
            full: false,
            seed,
            progress,
            label: String::new(),
            fell_back: Vec::new(),
            live_notes: Vec::new(),
        }
    }

    /// Whether experiments are to run live.
    pub fn live(&self) -> bool {
        self.live
    }

    /// Whether experiments that `isola repro` (and CI) runs shorter than
    /// the paper are to run at the paper's full length (`isola repro
    /// --full`; MTDA's burst: Fig. 13's 30 s instead of 12 s).
    pub fn full(&self) -> bool {
        self.full
    }

    /// Runs experiments at the papers' full lengths (see [`Runner::full`]).
    pub fn set_full(&mut self, full: bool) {
        self.full = full;
    }

    /// Reports progress within the current experiment (0..1).
    pub fn tick(&mut self, fraction: f64) {
        self.progress.update(fraction.clamp(0.0, 1.0), &self.label);
    }

    /// The progress of the current experiment, for work the runner does
    /// not drive itself (the live ASTRAEA experiment).
    pub fn progress(&mut self) -> &mut dyn Progress {
        &mut *self.progress
    }

    /// Runs `scenario` (TOML text named `file`) under each of `runs`, one
    /// policy at a time, so a policy that cannot serve the scenario (e.g. a
    /// static partition with fewer slots than tenants) is reported as such
    /// instead of failing the experiment. Simulated, or live on real
    /// operators when asked and every engine and workload can run live
    /// (else simulated, with the reason noted). `span` is this call's part
    /// of the experiment's progress: where it starts and how much it is.
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

    /// Runs `scenario` under each of `runs` as [`Runner::simulate`] does,
    /// with `setup` from [`Runner::prepare`].
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
        let mut noted = true;
        for (i, run) in runs.iter().enumerate() {
            let base = from + step * i as f64;
            let (progress, label) = (&mut self.progress, &self.label);
            let mut tick = |f: f64| {
                let position = base + step * f;
                progress.update(position.clamp(0.0, 1.0), label);
            };
            let result = if setup.live {
                tick(0.0);
                let r = crate::live::run_policy_live(scenario, run, seed).map_err(|e| format!("{e:#}"));
                tick(1.0);
                if let (Ok(r), true) = (&r, noted) {
                    noted = false;
                    let file = scenario.path.display();
                    self.live_notes.extend(
                        r.warnings
                            .iter()
                            .map(|w| format!("{file}, live under {}: {w}", r.policy)),
                    );
                }
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

/// See [`Runner::prepare`].
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
/// `split` (the subtask size) applies to every policy but native.
pub fn every_policy(split: Option<u64>) -> Vec<PolicyRun> {
    let native = PolicyRun {
        name: "fcfs".into(),
        label: "native".into(),
        params: BTreeMap::new(),
        split: None,
        on: Vec::new(),
    };
    std::iter::once(native)
        .chain(POLICIES.iter().map(|p| PolicyRun {
            name: p.name.into(),
            label: p.name.into(),
            params: BTreeMap::new(),
            split,
            on: Vec::new(),
        }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_policy_runs_after_native() {
        let runs = every_policy(Some(512));
        assert_eq!(runs[0].label, "native");
        assert_eq!(runs[0].split, None);
        assert_eq!(runs.len(), POLICIES.len() + 1);
        for (run, info) in runs[1..].iter().zip(POLICIES) {
            assert_eq!(run.name, info.name);
            assert_eq!(run.split, Some(512));
            assert!(run.params.is_empty());
        }
    }

    /// Progress moves forward through the runs, stays within 0..1, and
    /// carries the experiment's label.
    #[test]
    fn progress_covers_the_runs_span() {
        struct Record(Vec<(f64, String)>);
        impl Progress for Record {
            fn update(&mut self, fraction: f64, what: &str) {
                self.0.push((fraction, what.to_string()));
            }
        }
        let mut seen = Record(Vec::new());
        let mut runner = Runner::new(false, None, &mut seen);
        runner.label = "one".into();
        let text = "[run]\nseed = 1\npolicies = [\"fcfs\"]\n\n[[engine]]\nname = \"e\"\nkind = \"accelerator\"\n\
                    service = { dist = \"exponential\", mean = \"1us\" }\n\n[[tenant]]\nname = \"t\"\n\
                    [tenant.workload]\nengine = \"e\"\nsize = \"64B\"\narrival = { poisson = \"500k/s\" }\ncount = 1000\n";
        let runs = &every_policy(None)[..2];
        let results = runner.simulate("one.toml", text, runs, (0.5, 0.5)).unwrap();
        assert!(results.iter().all(|r| r.result.is_ok()));
        let fractions: Vec<f64> = seen.0.iter().map(|p| p.0).collect();
        assert!(fractions.windows(2).all(|w| w[0] <= w[1]), "{fractions:?}");
        assert!(fractions.iter().all(|f| (0.5..=1.0).contains(f)));
        assert!(*fractions.last().unwrap() > 0.9);
        assert!(seen.0.iter().all(|p| p.1 == "one"));
    }
}
