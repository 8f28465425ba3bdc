//! MTDA's figures: Fair1 against the number of tenants (Fig. 10), and the
//! p99 through the burst (Fig. 13) of the tenants that did not burst and
//! of all four.

use super::{overall_p99, victims_p99};
use crate::draw::{figure, over_time};
use crate::runner::PolicyOutcome;
use isola_model::PolicyResult;
use isola_report::{Axis, Chart, Figure, Format, Series};
use std::collections::BTreeMap;

/// Fig. 10: each policy's Fair1 for each tenant count of `per_count`.
pub(super) fn fair1(per_count: &[(usize, Vec<PolicyOutcome>)]) -> Figure {
    let mut fair1: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (n, results) in per_count {
        for r in results {
            if let Ok(p) = &r.result {
                fair1
                    .entry(r.label.clone())
                    .or_default()
                    .push((*n as f64, p.fair1));
            }
        }
    }
    let series = fair1.into_iter().map(|(l, p)| Series::new(l, p)).collect();
    figure(
        "Fair1 against the number of tenants",
        "MTDA's Fair1 (sum of |expected - actual| throughput weights; lower is fairer) for 1, 2, 4 and 8 tenants.",
        "MTDA Fig. 10: Fair1 at 1024 B grows with the number of tenants for DPDK, iPipe, FairNIC and LogNIC; \
         MTDA stays lowest (0.02 at 4 tenants, DPDK 0.145)",
        vec![Chart::lines("Fair1", Axis::new("tenants"), Axis::new("Fair1"), series)],
    )
}

/// Fig. 13: the largest p99 of the tenants that did not burst, per window,
/// under each policy; starved windows are left out of the lines.
pub(super) fn burst(ok: &[(&str, &PolicyResult)]) -> Figure {
    figure(
        "p99 through the burst",
        "The largest p99 of the three tenants that did not burst, per 100 ms window; the burst starts at 8 s.",
        "MTDA Fig. 13: p99 over 30 s with a burst at 8 s; MTDA's stays flat, DPDK's, FairNIC's and LogNIC's rise",
        vec![over_time(
            "p99 of the tenants that did not burst",
            Axis::new("p99").format(Format::Seconds),
            ok,
            &[],
            |p| match victims_p99(p) {
                u64::MAX => f64::NAN,
                v => v as f64 / 1e9,
            },
        )
        .reference_x(8.0, "burst")],
    )
}

/// Fig. 13 as the paper plots it: the overall p99 (all four tenants, the
/// bursting one's too) per window, FairNIC's static partition beside MTDA
/// (and DPDK and iPipe); starved windows are left out of the lines.
pub(super) fn burst_overall(ok: &[(&str, &PolicyResult)]) -> Figure {
    figure(
        "Overall p99 through the burst: FairNIC beside MTDA",
        "The largest p99 of all four tenants (the bursting one's too), per 100 ms window; the burst starts at 8 s. \
         `static` is FairNIC's partition (LogNIC's, weighted by the tenants' equal pre-burst loads, is the same).",
        "MTDA Fig. 13: the p99 of four tenants over 30 s, burst at 8 s: DPDK's, FairNIC's and LogNIC's rise and \
         stay up, iPipe's rise is limited, MTDA's stays stable",
        vec![over_time(
            "overall p99",
            Axis::new("p99").log10().format(Format::Seconds),
            ok,
            &["dpdk-rss/4", "static", "ipipe", "mtda", "mtda/cores"],
            |p| match overall_p99(p) {
                u64::MAX => f64::NAN,
                v => v as f64 / 1e9,
            },
        )
        .reference_x(8.0, "burst")],
    )
}
