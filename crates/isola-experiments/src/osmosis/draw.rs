//! OSMOSIS' figures: the per-packet time budget (Fig. 3), shares and
//! Jain's index over time (Figs. 9 and 12)
//! and completion-time CDFs (Figs. 10 and 13), from the runs that
//! succeeded.

use super::budget::Kernel;
use super::fig11::IoCurve;
use super::fragment::FragmentCurve;
use super::io_mix::{fct, p50, slowdown, Sweep};
use super::management::{ComputeBars, ReadBars};
use crate::draw::{figure, latency_cdf, over_time};
use crate::judge::tenant;
use isola_model::PolicyResult;
use isola_report::{Axis, BarSeries, Chart, Figure, Format, Series};

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

/// A size axis (bytes, base 2, ticks at the sizes run).
fn size_axis(label: &str) -> Axis {
    Axis::new(label).log2().format(Format::Bytes).ticks_at_data()
}

/// Fig. 10: the Victim's median completion time and the Congestor's
/// throughput against the Congestor's write size (`by_size`, runs in
/// `labels`' order), and both against the fragment size at a 4 KiB
/// Congestor (`by_fragment`: per setup, (fragment, Victim p50 ns,
/// Congestor Gbit/s)).
pub(super) fn fragments(
    by_size: &[(u64, Vec<PolicyResult>)],
    labels: &[&str],
    by_fragment: &[FragmentCurve],
) -> Figure {
    let per_label = |value: &dyn Fn(&PolicyResult) -> f64| -> Vec<Series> {
        labels
            .iter()
            .enumerate()
            .map(|(k, l)| {
                let points = by_size.iter().map(|(s, rs)| (*s as f64, value(&rs[k]))).collect();
                Series::new(*l, points)
            })
            .collect()
    };
    let victim = |r: &PolicyResult| tenant(r, "victim").map_or(f64::NAN, |t| t.latency_ns.p50 as f64 / 1e9);
    let congestor = |r: &PolicyResult| tenant(r, "congestor").map_or(f64::NAN, |t| t.throughput_bps * 8e-9);
    let seconds = || Axis::new("Victim p50").log10().format(Format::Seconds);
    let gbits = || Axis::new("Congestor Gbit/s");
    let frag_series = |pick: &dyn Fn(&(f64, f64, f64)) -> f64| -> Vec<Series> {
        by_fragment
            .iter()
            .map(|(name, p)| Series::new(*name, p.iter().map(|q| (q.0, pick(q))).collect()))
            .collect()
    };
    figure(
        "Fragmentation against head-of-line blocking, and its price",
        "The Victim's median completion time and the Congestor's throughput against the Congestor's write size \
         (whole transfers natively and under WRR, 512 B fragments with blocking and pipelined request setup), \
         and against the fragment size at a 4 KiB Congestor (the last point is the whole 4 KiB write).",
        "OSMOSIS Fig. 10: fragmentation cuts the Victim's completion time by an order of magnitude at about 2x \
         the Congestor's time (software fragmentation)",
        vec![
            Chart::lines("Victim p50 by Congestor size", size_axis("Congestor write"), seconds(), per_label(&victim)),
            Chart::lines(
                "Congestor throughput by its size",
                size_axis("Congestor write"),
                gbits(),
                per_label(&congestor),
            ),
            Chart::lines(
                "Victim p50 by fragment size (4 KiB Congestor)",
                size_axis("fragment"),
                seconds(),
                frag_series(&|q| q.1 / 1e9),
            ),
            Chart::lines(
                "Congestor throughput by fragment size",
                size_axis("fragment"),
                gbits(),
                frag_series(&|q| q.2),
            ),
        ],
    )
}

/// Fig. 11: the throughput fragmentation costs an IO write alone, per
/// transfer size, for each setup (`curves`: (size, whole Mpps, fragmented
/// Mpps)), in fragments of `fragment` bytes; and at 4 KiB per fragment
/// size (`by_fragment`: (fragment, overhead), blocking requests).
pub(super) fn io_overhead(curves: &[IoCurve], fragment: u64, by_fragment: &[(u64, f64)]) -> Figure {
    let series = curves
        .iter()
        .map(|(name, p)| Series::new(*name, p.iter().map(|q| (q.0 as f64, 1.0 - q.2 / q.1)).collect()))
        .collect();
    figure(
        "IO throughput lost to fragmentation",
        &format!(
            "An IO write alone at the ingress line rate: the share of its packet rate lost with {fragment} B DMA \
             fragments against whole writes, per transfer size, with blocking, fitted and pipelined request setup and with the software wrapper's PU work \
             (blocking requests); and a 4 KiB write's loss per fragment size."
        ),
        "OSMOSIS Fig. 11: IO-bound workloads lose 2-23% to fragmentation",
        vec![
            Chart::lines(
                "throughput overhead",
                size_axis("transfer"),
                Axis::new("overhead").format(Format::Percent),
                series,
            )
            .reference_y(0.23, "paper: 23%")
            .reference_y(0.02, "paper: 2%"),
            Chart::lines(
                "4 KiB write, blocking requests: overhead by fragment size",
                size_axis("fragment"),
                Axis::new("overhead").format(Format::Percent),
                vec![Series::new(
                    "blocking",
                    by_fragment.iter().map(|&(f, x)| (f as f64, x)).collect(),
                )],
            )
            .reference_y(0.23, "paper: 23%")
            .reference_y(0.02, "paper: 2%"),
        ],
    )
}

/// Fig. 11's other bars: OSMOSIS' change in packet rate against PsPIN per
/// packet size, for each compute-bound kernel (`compute`: the decision
/// overlapped and exposed) and the IO read (`read`: software
/// fragmentation).
pub(super) fn management(compute: &[ComputeBars], read: &ReadBars) -> Figure {
    let change = |p: f64, x: f64| x / p - 1.0;
    let mut series: Vec<Series> = Vec::new();
    for c in compute {
        series.push(Series::new(
            &c.op,
            c.points.iter().map(|q| (q.0 as f64, change(q.1, q.2))).collect(),
        ));
        series.push(Series::new(
            format!("{}, decision exposed", c.op),
            c.points.iter().map(|q| (q.0 as f64, change(q.1, q.3))).collect(),
        ));
    }
    series.push(Series::new(
        "io-read, software fragmentation",
        read.iter().map(|q| (q.0 as f64, change(q.1, q.2))).collect(),
    ));
    figure(
        "OSMOSIS against PsPIN, each kernel alone",
        "Each kernel alone on 32 PUs, fed as the 400 Gbit/s line feeds it: OSMOSIS' packet rate against PsPIN's, per \
         packet size. Compute-bound kernels meet only WLBVT's 5-cycle decision, overlapped with the packet's \
         copy (and, as a variant, exposed); the IO read meets the software fragmentation wrapper.",
        "OSMOSIS Fig. 11: compute-bound kernels within +-3% of PsPIN; IO-bound ones 2-23% below",
        vec![Chart::lines(
            "packet rate against PsPIN",
            size_axis("packet"),
            Axis::new("change").format(Format::Percent),
            series,
        )
        .reference_y(0.03, "paper: +3%")
        .reference_y(-0.03, "paper: -3%")
        .reference_y(-0.23, "paper: -23%")],
    )
}

/// Fig. 3: the per-packet time budget (`ppb`, and `framed` with Ethernet's
/// framing) and each kernel's PU time per packet against the packet size.
pub(super) fn budget(
    sizes: &[u64],
    kernels: &[Kernel],
    ppb: &dyn Fn(u64) -> f64,
    framed: &dyn Fn(u64) -> f64,
) -> Figure {
    let line = |name: &str, ns: &dyn Fn(u64) -> f64| {
        Series::new(name, sizes.iter().map(|&p| (p as f64, ns(p) / 1e9)).collect())
    };
    let mut series = vec![
        line("PPB, 32 PUs at 400 Gbit/s", ppb),
        line("PPB with 20 B framing", framed),
    ];
    series.extend(kernels.iter().map(|k| line(&k.op, &|p| k.cost.mean(p))));
    figure(
        "Per-packet time budget",
        "OSMOSIS' per-packet time budget N x P / B (N = 32 PUs, B = 400 Gbit/s; and with Ethernet's 20 B a \
         frame) against each kernel's PU time per packet, by packet size: a kernel above the budget cannot \
         keep up with a fully utilised link.",
        "OSMOSIS Fig. 3: every workload at 64 B and every compute-bound one at any size exceeds the budget; \
         IO-bound kernels above 256 B fit it",
        vec![Chart::lines(
            "PU time per packet against the budget",
            size_axis("packet"),
            Axis::new("time per packet").log10().format(Format::Seconds),
            series,
        )],
    )
}

/// The IO mix against the DMA fragment size (`sweeps`: per setup, the run
/// per fragment size, whole transfers last, drawn at the Congestors' 4 KiB):
/// the Victims' median completion time and slowdown, the Congestors' FCT.
pub(super) fn fragment_sweep(sweeps: &[Sweep], victims: &[&str], congestors: &[&str]) -> Figure {
    let per = |names: &[&str], value: &dyn Fn(&PolicyResult, &str) -> f64| -> Vec<Series> {
        sweeps
            .iter()
            .flat_map(|(setup, runs)| {
                names.iter().map(move |n| {
                    let points = runs
                        .iter()
                        .map(|(f, r)| (f.unwrap_or(4096) as f64, value(r, n)))
                        .collect();
                    Series::new(format!("{n}, {setup}"), points)
                })
            })
            .collect()
    };
    let seconds = |label: &str| Axis::new(label).log10().format(Format::Seconds);
    figure(
        "The fragment size's trade-off",
        "The IO mix under OSMOSIS' configuration against the DMA fragment size (the last point, at 4 KiB, is \
         whole transfers): the Victims' median completion time and slowdown against solo, and the Congestors' \
         flow completion time, with blocking and pipelined request setup.",
        "OSMOSIS Sec. 6.3 and Fig. 13 (two fragment sizes): smaller fragments cut the Victims' completion \
         time and cost the Congestors one handshake per fragment",
        vec![
            Chart::lines(
                "Victims' p50 by fragment size",
                size_axis("fragment"),
                seconds("p50"),
                per(victims, &|r, n| p50(r, n) / 1e9),
            ),
            Chart::lines(
                "Victims' slowdown by fragment size",
                size_axis("fragment"),
                Axis::new("slowdown").log10(),
                per(victims, &slowdown),
            ),
            Chart::lines(
                "Congestors' FCT by fragment size",
                size_axis("fragment"),
                seconds("FCT"),
                per(congestors, &|r, n| fct(r, n) / 1e9),
            ),
        ],
    )
}

/// Fig. 12b against PsPIN's baseline: per AXI path (`by_path`: the runs in
/// `labels`' order, the baseline first), each tenant's FCT change against
/// the baseline under every other run.
pub(super) fn fct_against_baseline(
    names: &[String],
    labels: &[String],
    by_path: &[(&str, Vec<PolicyResult>)],
) -> Figure {
    let charts = by_path
        .iter()
        .map(|(path, rs)| {
            let series = labels
                .iter()
                .zip(rs)
                .skip(1)
                .map(|(l, r)| {
                    let change = names.iter().map(|n| fct(r, n) / fct(&rs[0], n) - 1.0).collect();
                    BarSeries::new(l.as_str(), change)
                })
                .collect();
            Chart::bars(
                format!("{path}: FCT against {}", labels[0]),
                "tenant",
                Axis::new("FCT change").format(Format::Percent),
                names.to_vec(),
                series,
            )
            .reference_y(0.0, labels[0].as_str())
        })
        .collect();
    figure(
        "Flow completion times against PsPIN's baseline",
        "Each tenant's FCT change against PsPIN's baseline (round robin on the PUs, one command FIFO on the DMA \
         engine), on the AXI path with one command at a time and with reads and writes on their own channels.",
        "OSMOSIS Fig. 12b: OSMOSIS lowers the FCT of every tenant, Victims and Congestors, by up to 63%",
        charts,
    )
}
