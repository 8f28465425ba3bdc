//! The HTML report's view of experiments' outcomes: a summary row per
//! goal and paper direction checked, and a section per experiment with its
//! claims beside its verdicts, its tables and its figures.

use crate::experiment::{Check, ExperimentResult};
use isola_report::{Generated, Report, Section, SummaryRow};

/// `outcomes` as one report, `generated` as said.
pub fn report(outcomes: &[ExperimentResult], generated: Generated) -> Report {
    let mut summary = Vec::new();
    for o in outcomes {
        let checks = o.goals.iter().map(|c| ("goal", c));
        let dirs = o.directions.iter().map(|c| ("paper's direction", c));
        for (kind, c) in checks.chain(dirs) {
            summary.push(SummaryRow {
                section: o.name.clone(),
                goal: format!("{kind}: {}", c.what),
                result: c.detail.clone(),
                met: Some(c.met),
            });
        }
        if o.goals.is_empty() && o.directions.is_empty() {
            summary.push(SummaryRow {
                section: o.name.clone(),
                goal: "(no goal checked)".into(),
                result: o.best_policy.clone().map_or("-".into(), |b| format!("best: {b}")),
                met: None,
            });
        }
    }
    let sections = outcomes
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
            Section {
                name: o.name.clone(),
                title: o.title.clone(),
                description: format!("{} ({}). {}", o.paper, o.mode, o.notes.join("; ")),
                paper_claims: o.paper_claims.clone(),
                findings,
                best_policy: o.best_policy.clone(),
                tables: o.tables.clone(),
                figures: o
                    .figures
                    .iter()
                    .map(|f| isola_report::Figure {
                        charts: f
                            .charts
                            .iter()
                            .map(|c| c.clone().prefer(key_policies(o)))
                            .collect(),
                        ..f.clone()
                    })
                    .collect(),
            }
        })
        .collect();
    Report {
        title: "Isola: the papers' experiments, every policy side by side".into(),
        generated,
        summary,
        sections,
    }
}

/// The runs a crowded chart of `o` draws first: the native baseline, the
/// best policy, the paper's own policy (with its variants), then the
/// common baselines.
fn key_policies(o: &ExperimentResult) -> Vec<String> {
    let own: &[&str] = match o.name.split('-').next() {
        Some("astraea") => &["astraea"],
        Some("osmosis") => &["wlbvt", "osmosis"],
        Some("mtda") => &["mtda"],
        _ => &[],
    };
    let mut keys = vec!["native".to_string()];
    keys.extend(o.best_policy.clone());
    keys.extend(own.iter().map(|p| p.to_string()));
    keys.extend(["rr", "fcfs"].map(String::from));
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::ALL;

    /// Every check becomes a summary row; an experiment without one gets a
    /// row naming its best policy; sections follow the outcomes.
    #[test]
    fn summary_rows_and_sections() {
        let mut checked = ExperimentResult::new(&ALL[0], false);
        checked.goals.push(Check {
            what: "g".into(),
            met: false,
            detail: "d1".into(),
        });
        checked.directions.push(Check {
            what: "p".into(),
            met: true,
            detail: "d2".into(),
        });
        checked.notes = vec!["n1".into(), "n2".into()];
        let mut unchecked = ExperimentResult::new(&ALL[1], true);
        unchecked.best_policy = Some("wlbvt".into());
        let r = report(&[checked, unchecked], Generated::default());
        let rows: Vec<(&str, &str, Option<bool>)> = r
            .summary
            .iter()
            .map(|s| (s.section.as_str(), s.goal.as_str(), s.met))
            .collect();
        assert_eq!(
            rows,
            [
                (ALL[0].name, "goal: g", Some(false)),
                (ALL[0].name, "paper's direction: p", Some(true)),
                (ALL[1].name, "(no goal checked)", None),
            ]
        );
        assert_eq!(r.summary[2].result, "best: wlbvt");
        assert_eq!(r.sections.len(), 2);
        assert_eq!(r.sections[0].findings, ["g (not met): d1", "p (met): d2"]);
        assert!(r.sections[0].description.ends_with("(simulated). n1; n2"));
        assert!(r.sections[1].description.contains("(live)"));
    }
}
