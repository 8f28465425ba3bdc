//! OSMOSIS' figures: shares and Jain's index over time (Figs. 9 and 12)
//! and completion-time CDFs (Figs. 10 and 13), from the runs that
//! succeeded.

use crate::draw::{figure, latency_cdf, over_time};
use isola_model::PolicyResult;
use isola_report::{Axis, Chart, Figure, Format, Series};

/// Fig. 9: the Congestor's PU share under round robin and WLBVT, and
/// Jain's index under every policy.
pub(super) fn pu(ok: &[(&str, &PolicyResult)]) -> Figure {
    let share_axis = || {
        Axis::new("Congestor's share")
            .range(0.0, 1.0)
            .format(Format::Percent)
    };
    let mut panels: Vec<Chart> = ["rr", "wlbvt"]
        .iter()
        .map(|&l| {
            over_time(
                &format!("{l}: Congestor's PU share"),
                share_axis(),
                ok,
                &[l],
                |p| p.engine_share.get(1).copied().unwrap_or(0.0),
            )
            .reference_y(0.5, "fair share")
        })
        .collect();
    panels.push(over_time(
        "Jain's index over time",
        Axis::new("Jain").range(0.0, 1.0),
        ok,
        &[],
        |p| p.jain_of_demand.unwrap_or(f64::NAN),
    ));
    figure(
        "PU share and fairness over time",
        "The Congestor's share of PU time per 200 us window under round robin and WLBVT, and Jain's index \
         per window under every policy.",
        "OSMOSIS Fig. 9: under RR the Congestor holds ~2/3 of the PUs; WLBVT converges to 1/2 each",
        panels,
    )
}

/// Fig. 10: the Victim's latency CDF with and without DMA fragments.
pub(super) fn hol(ok: &[(&str, &PolicyResult)]) -> Figure {
    let shown: Vec<(&str, &PolicyResult)> = ok
        .iter()
        .filter(|(l, _)| ["native", "wrr", "wrr+frag512", "wlbvt+frag512"].contains(l))
        .copied()
        .collect();
    figure(
        "Victim latency",
        "The Victim's latency CDF natively, under WRR, and under WRR and WLBVT with 512 B DMA fragments.",
        "OSMOSIS Fig. 10: the Victim's completion time grows with the Congestor's write size without \
         fragmentation and stays near solo with it",
        vec![latency_cdf("Victim latency CDF", &shown, "victim")],
    )
}

/// Figs. 12 and 13: each tenant (`names`) of a mix's share of engine time
/// under round robin, WLBVT and `best`, Jain's index over time, and (with
/// `fragments`) completion-time CDFs of the first of `victims` and the
/// first Congestor.
pub(super) fn mix(
    ok: &[(&str, &PolicyResult)],
    names: &[String],
    victims: &[&str],
    best: Option<&str>,
    fragments: bool,
) -> Vec<Figure> {
    let mut shown = vec!["rr", "wlbvt"];
    if let Some(b) = best {
        if !shown.contains(&b) {
            shown.push(b);
        }
    }
    let mut panels: Vec<Chart> = shown
        .iter()
        .map(|&l| {
            let Some((_, r)) = ok.iter().find(|(x, _)| *x == l) else {
                return Chart::lines(l, Axis::new("time"), Axis::new("share"), Vec::new());
            };
            let series = names
                .iter()
                .enumerate()
                .map(|(t, n)| {
                    let points = r
                        .series
                        .iter()
                        .map(|p| {
                            (
                                p.start_ns as f64 / 1e9,
                                p.engine_share.get(t).copied().unwrap_or(0.0),
                            )
                        })
                        .collect();
                    Series::new(n.as_str(), points)
                })
                .collect();
            Chart::lines(
                format!("{l}: share of engine time"),
                Axis::new("time").format(Format::Seconds),
                Axis::new("share").range(0.0, 1.0).format(Format::Percent),
                series,
            )
        })
        .collect();
    panels.push(over_time(
        "Jain's index over time",
        Axis::new("Jain").range(0.0, 1.0),
        ok,
        &shown,
        |p| p.jain_of_demand.unwrap_or(f64::NAN),
    ));
    let mut figures = vec![figure(
        "Tenant shares and fairness over time",
        "Each tenant's share of engine time per 10 us window under round robin, WLBVT and the best policy, \
         and Jain's index per window (against each tenant's fair allocation under its demand, worst engine).",
        "OSMOSIS Fig. 12: per-tenant performance and Jain's index over simulated time, RR against OSMOSIS; \
         percentages give each tenant's FCT reduction",
        panels,
    )];
    if fragments {
        let shown: Vec<(&str, &PolicyResult)> = ok
            .iter()
            .filter(|(l, _)| ["rr", "wlbvt", "wlbvt+frag512", "osmosis"].contains(l))
            .copied()
            .collect();
        figures.push(figure(
            "Completion time distributions",
            "Per-task completion time CDFs of a Victim and a Congestor.",
            "OSMOSIS Fig. 13: Victims' kernel completion time over 5x lower with OSMOSIS; Congestors' median up to 8x higher",
            victims
                .iter()
                .take(1)
                .copied()
                .chain(names.iter().map(String::as_str).filter(|n| n.contains("congestor")).take(1))
                .map(|t| latency_cdf(&format!("{t}: completion time CDF"), &shown, t))
                .collect(),
        ));
    }
    figures
}
