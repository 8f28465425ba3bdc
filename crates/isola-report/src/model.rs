//! What a report holds: a [`Report`] of [`SummaryRow`]s and [`Section`]s,
//! each section with [`Table`]s and [`Figure`]s of charts. Plain data,
//! serialised as the report's JSON.

use crate::chart::Chart;
use serde::Serialize;

/// The whole report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Title of the page.
    pub title: String,
    /// When, where and how it was made.
    pub generated: Generated,
    /// One row per checked point, shown first.
    pub summary: Vec<SummaryRow>,
    /// The sections, in order (`experiments` in the JSON).
    #[serde(rename = "experiments")]
    pub sections: Vec<Section>,
}

/// When, where and how a report was made (free text each).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Generated {
    /// Date and time.
    pub date: String,
    /// The machine: host name, CPU, cores.
    pub machine: String,
    /// The command line that made the report.
    pub command: String,
}

impl Generated {
    /// Now (UTC), on `machine`, by `command`.
    pub fn now(machine: impl Into<String>, command: impl Into<String>) -> Self {
        Generated {
            date: utc_now(),
            machine: machine.into(),
            command: command.into(),
        }
    }
}

/// One line of the summary table.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SummaryRow {
    /// The section's name (links to it when it matches a [`Section::name`]
    /// or title; `experiment` in the JSON).
    #[serde(rename = "experiment")]
    pub section: String,
    /// What is tried.
    pub goal: String,
    /// What came of it.
    pub result: String,
    /// Whether the goal was met; `None` where it does not apply.
    pub met: Option<bool>,
}

/// One section: what it is about, the claims it is measured against, what
/// was found, tables and figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Section {
    /// Short identifier (`osmosis-fig9`); the section's anchor is made from it.
    pub name: String,
    /// Heading.
    pub title: String,
    /// A paragraph on the setup.
    pub description: String,
    /// The claims measured against (a paper's headline figures), shown
    /// beside [`Self::findings`].
    pub paper_claims: Vec<String>,
    /// What was found, for the same points.
    pub findings: Vec<String>,
    /// The policy that did best, if one did.
    pub best_policy: Option<String>,
    /// Result tables.
    pub tables: Vec<Table>,
    /// Figures.
    pub figures: Vec<Figure>,
}

/// A table of text cells.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Table {
    /// Caption above it.
    pub caption: String,
    /// Column names.
    pub header: Vec<String>,
    /// Rows of cells (cells that start like a number are right-aligned).
    pub rows: Vec<Vec<String>>,
    /// The row to highlight (index into `rows`), say the best policy's.
    pub highlight_row: Option<usize>,
}

/// A figure: one chart, or several side by side (small multiples, say one
/// per policy), with our caption and the paper's.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Figure {
    /// Heading of the figure.
    pub title: String,
    /// What it shows, in this run.
    pub caption: String,
    /// The paper's figure and what it shows (`OSMOSIS Fig. 9: ...`).
    pub paper: Option<String>,
    /// The panels.
    pub charts: Vec<Chart>,
}

/// The time now, `2025-01-31 14:05 UTC`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    utc(secs)
}

/// `secs` since the Unix epoch as a UTC date and time (Howard Hinnant's
/// days-to-civil algorithm).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let (hh, mm) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02} UTC")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400 + 3_661), "2000-02-29 01:01 UTC");
        assert_eq!(utc(1_738_332_300), "2025-01-31 14:05 UTC");
        let g = Generated::now("host: cpu", "isola repro");
        // Now, not the epoch's fallback.
        let year: u32 = g.date[..4].parse().unwrap();
        assert!(
            year >= 2025 && g.date.len() == "2025-01-31 14:05 UTC".len(),
            "{}",
            g.date
        );
        assert_eq!(
            (g.machine.as_str(), g.command.as_str()),
            ("host: cpu", "isola repro")
        );
    }

    /// In the JSON, sections are `experiments` and a summary row's section
    /// is its `experiment`, the names readers of `report.json` know.
    #[test]
    fn json_names() {
        let report = Report {
            summary: vec![SummaryRow {
                section: "a".into(),
                ..Default::default()
            }],
            sections: vec![Section::default()],
            ..Default::default()
        };
        let v = serde_json::to_value(&report).unwrap();
        assert_eq!(v["summary"][0]["experiment"], "a");
        assert_eq!(v["experiments"].as_array().unwrap().len(), 1);
    }
}
