//! What an experiment is ([`Experiment`]), what running one gives
//! ([`ExperimentResult`], with its [`Check`]s), and the list of them ([`ALL`]).

use crate::runner::Runner;
use crate::{aaas, astraea, mtda, osmosis};
use anyhow::bail;
use isola_report::{Figure, Table};
use serde::Serialize;

/// A paper's experiment.
#[derive(Debug)]
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
    pub run: fn(&mut Runner) -> anyhow::Result<ExperimentResult>,
}

/// Every experiment, in the order `all` runs them.
pub static ALL: &[Experiment] = &[
    astraea::EXPERIMENT,
    osmosis::BUDGET,
    osmosis::PU,
    osmosis::HOL,
    osmosis::COMPUTE,
    osmosis::IO,
    osmosis::HOL_SWEEP,
    osmosis::IO_OVERHEAD,
    mtda::BALANCED,
    mtda::UNBALANCED,
    mtda::BURST,
    mtda::SIZES,
    mtda::STABILITY,
    aaas::EXPERIMENT,
];

/// The experiments `name` stands for: one by its name, or every one for
/// `all`; an error listing the known names otherwise.
pub fn select(name: &str) -> anyhow::Result<Vec<&'static Experiment>> {
    if name == "all" {
        return Ok(ALL.iter().collect());
    }
    match ALL.iter().find(|e| e.name == name) {
        Some(e) => Ok(vec![e]),
        None => {
            let known: Vec<&str> = ALL.iter().map(|e| e.name).collect();
            bail!("unknown experiment `{name}`; known: all, {}", known.join(", "))
        }
    }
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
pub struct ExperimentResult {
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

impl ExperimentResult {
    /// An empty outcome of `experiment`, run live or simulated.
    pub fn new(experiment: &Experiment, live: bool) -> ExperimentResult {
        ExperimentResult {
            name: experiment.name.into(),
            title: experiment.title.into(),
            paper: experiment.paper.into(),
            mode: if live { "live" } else { "simulated" }.into(),
            paper_claims: experiment.claims.iter().map(|c| c.to_string()).collect(),
            best_policy: None,
            goals: Vec::new(),
            directions: Vec::new(),
            tables: Vec::new(),
            figures: Vec::new(),
            notes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn experiment_names_are_unique_and_unknown_ones_are_errors() {
        let mut names: Vec<&str> = ALL.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert_eq!(select("all").unwrap().len(), ALL.len());
        assert_eq!(select("osmosis-pu").unwrap()[0].name, "osmosis-pu");
        let err = select("no-such-paper").unwrap_err().to_string();
        assert!(
            err.contains("unknown experiment") && err.contains("osmosis-pu"),
            "{err}"
        );
    }
}
