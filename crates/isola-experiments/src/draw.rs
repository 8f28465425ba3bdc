//! Charts every experiment draws from its runs: latency CDFs per policy,
//! bars per policy and tenant, per-window series over time, and a figure
//! beside the paper's.

use crate::judge::tenant;
use isola_model::results::SeriesPoint;
use isola_model::{PolicyResult, TenantResult};
use isola_report::{Axis, BarSeries, Chart, Figure, Format, Series};

/// One latency CDF per policy for tenant `name` (x in seconds, log scale).
pub(crate) fn latency_cdf(title: &str, ok: &[(&str, &PolicyResult)], name: &str) -> Chart {
    let series = ok
        .iter()
        .filter_map(|(label, r)| {
            let t = tenant(r, name)?;
            let points = t
                .latency_cdf
                .iter()
                .map(|&(ns, q)| (ns as f64 / 1e9, q))
                .collect();
            Some(Series::new(*label, points))
        })
        .collect();
    Chart::cdf(
        title,
        Axis::new("latency").log10().format(Format::Seconds),
        series,
    )
}

/// Bars of `value` per policy, one series per tenant.
pub(crate) fn bars_per_policy(
    title: &str,
    y: Axis,
    ok: &[(&str, &PolicyResult)],
    tenants: &[&str],
    value: impl Fn(&TenantResult) -> f64,
) -> Chart {
    let series = tenants
        .iter()
        .map(|&name| {
            let values = ok
                .iter()
                .map(|(_, r)| tenant(r, name).map_or(f64::NAN, &value))
                .collect();
            BarSeries::new(name, values)
        })
        .collect();
    let categories = ok.iter().map(|(l, _)| l.to_string()).collect();
    Chart::bars(title, "policy", y, categories, series)
}

/// A per-window series of `value` for each policy in `labels` (all if
/// empty), x in seconds.
pub(crate) fn over_time(
    title: &str,
    y: Axis,
    ok: &[(&str, &PolicyResult)],
    labels: &[&str],
    value: impl Fn(&SeriesPoint) -> f64,
) -> Chart {
    let series = ok
        .iter()
        .filter(|(l, _)| labels.is_empty() || labels.contains(l))
        .map(|(l, r)| {
            let points = r
                .series
                .iter()
                .map(|p| (p.start_ns as f64 / 1e9, value(p)))
                // Windows without a value (NaN) are left out of the line.
                .filter(|p| p.1.is_finite())
                .collect();
            Series::new(*l, points)
        })
        .collect();
    Chart::lines(title, Axis::new("time").format(Format::Seconds), y, series)
}

/// A figure of `charts` beside the paper's figure `paper`.
pub(crate) fn figure(title: &str, caption: &str, paper: &str, charts: Vec<Chart>) -> Figure {
    Figure {
        title: title.into(),
        caption: caption.into(),
        paper: Some(paper.into()),
        charts,
    }
}
