//! What every experiment measures and judges with: the runs that
//! succeeded, a tenant's results, Jain's index over time, the best row,
//! and a paper's claimed direction checked against its baselines.

use crate::experiment::Check;
use crate::runner::PolicyOutcome;
use isola_model::{PolicyResult, TenantResult};

/// A fraction as a percentage with two decimals: `14.84%`.
pub(crate) fn fmt_pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// An index (Jain's, Fair1) with four decimals.
pub(crate) fn fmt_index(x: f64) -> String {
    format!("{x:.4}")
}

/// Tenant `name`'s results in `r`.
pub(crate) fn tenant<'a>(r: &'a PolicyResult, name: &str) -> Option<&'a TenantResult> {
    r.tenants.iter().find(|t| t.name == name)
}

/// The runs that succeeded, with a note for each that could not run.
pub(crate) fn succeeded<'a>(
    runs: &'a [PolicyOutcome],
    notes: &mut Vec<String>,
) -> Vec<(&'a str, &'a PolicyResult)> {
    runs.iter()
        .filter_map(|r| match &r.result {
            Ok(p) => Some((r.label.as_str(), p)),
            Err(e) => {
                notes.push(format!("{} could not run: {e}", r.label));
                None
            }
        })
        .collect()
}

/// The row index of `best` among `rows` (by the first cell).
pub(crate) fn row_of(rows: &[Vec<String>], best: Option<&str>) -> Option<usize> {
    best.and_then(|b| rows.iter().position(|r| r[0] == b))
}

/// Mean over the windows of Jain's index against each tenant's fair
/// allocation under its demand, engine by engine (OSMOSIS' "fair treatment",
/// Jain's own normalisation; see `isola_core::metrics::jain_of_demand`).
/// A live run has no windows: its index by weight over the run instead.
pub(crate) fn mean_jain(r: &PolicyResult) -> f64 {
    r.mean_jain_of_demand().unwrap_or(r.jain)
}

/// Whether `ours` (a paper's policy) beats each of `baselines` on `metric`
/// (smaller is better when `lower` is set), as its paper reports; `None`
/// when `ours` or every baseline is missing.
pub(crate) fn direction(
    ok: &[(&str, &PolicyResult)],
    ours: &str,
    baselines: &[&str],
    metric: &str,
    lower: bool,
    show: fn(f64) -> String,
    value: impl Fn(&PolicyResult) -> Option<f64>,
) -> Option<Check> {
    let find = |l: &str| ok.iter().find(|(x, _)| *x == l).and_then(|(_, r)| value(r));
    let mine = find(ours)?;
    let theirs: Vec<(&str, f64)> = baselines.iter().filter_map(|b| Some((*b, find(b)?))).collect();
    if theirs.is_empty() {
        // Nothing to compare with: no verdict rather than a vacuous one.
        return None;
    }
    let met = theirs
        .iter()
        .all(|(_, v)| if lower { mine <= *v } else { mine >= *v });
    Some(Check {
        what: format!(
            "{ours} {} {metric} than {}",
            if lower { "lower" } else { "higher" },
            theirs.iter().map(|(b, _)| *b).collect::<Vec<_>>().join(", ")
        ),
        met,
        detail: std::iter::once(format!("{ours} {}", show(mine)))
            .chain(theirs.iter().map(|(b, v)| format!("{b} {}", show(*v))))
            .collect::<Vec<_>>()
            .join(", "),
    })
}
