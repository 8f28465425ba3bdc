//! AaaS' figures: each case's A/B data-rate ratio natively and under
//! byte-charged DRR, and the native sweeps, beside the paper's Fig. 3 and
//! observations.

use crate::draw::figure;
use isola_report::{Axis, BarSeries, Chart, Figure, Format, Series};

/// The figure of `ratios`: per case, its name and the A/B data rate
/// natively and under `drr/bytes` (1 is fair).
pub(super) fn ratios(ratios: &[(&str, f64, f64)]) -> Figure {
    figure(
        "Data-rate ratio per observation",
        "Tenant A's data rate over tenant B's, natively and under byte-charged DRR with max-payload fragments (1 = fair).",
        "AaaS Fig. 3: throughput allocations per case; the paper's shaping proposals (Sec. 4) aim at predictable shares",
        vec![Chart::bars(
            "A/B data rate",
            "case",
            Axis::new("A/B"),
            ratios.iter().map(|r| r.0.to_string()).collect(),
            vec![
                BarSeries::new("native", ratios.iter().map(|r| r.1).collect()),
                BarSeries::new("drr/bytes", ratios.iter().map(|r| r.2).collect()),
            ],
        )
        .reference_y(1.0, "fair")],
    )
}

/// The native sweeps' figures, as `observe` and `duplex` measured them.
#[derive(Debug, Default)]
pub(super) struct Sweeps {
    /// Obs. 5: (B's bytes, A/B data rate).
    pub obs5: Vec<(f64, f64)>,
    /// Obs. 6: (bytes, write/read, write/read with one read per QP, write/write).
    pub obs6: Vec<[f64; 4]>,
    /// Obs. 9: (B's bytes, case 1 A and B Gbit/s, case 2 A and B Gbit/s,
    /// case 2's A at MaxReadReqSize 256 B).
    pub obs9: Vec<[f64; 6]>,
    /// Obs. 10: (small bytes, ours % of ideal, the paper's, ours without
    /// the read-modify-write).
    pub obs10: Vec<[f64; 4]>,
}

/// One line per `columns` entry: its label and its column of `rows`
/// against column 0.
fn columns<const N: usize>(rows: &[[f64; N]], columns: &[(usize, &str)]) -> Vec<Series> {
    columns
        .iter()
        .map(|&(i, label)| Series::new(label, rows.iter().map(|r| (r[0], r[i])).collect()))
        .collect()
}

fn size_axis(label: &str) -> Axis {
    Axis::new(label).log2().format(Format::Bytes).ticks_at_data()
}

/// The native sweeps beside the paper's figures: obs. 5's and 6's ratios
/// over sizes with the paper's ranges, obs. 9's throughputs over the other
/// tenant's size, obs. 10's aggregates beside Fig. 3(c)'s.
pub(super) fn sweeps(s: &Sweeps) -> Figure {
    let obs5: Vec<[f64; 3]> = s.obs5.iter().map(|&(b, r)| [b, r, 4096.0 / b]).collect();
    figure(
        "Native sweeps on one platform",
        "Obs. 5: A (4 KB writes) over B's data rate against B's write size, one QP each, with the size ratio \
         (linear); obs. 6: writes over reads against the size, 2 QPs each, on the platform (32 tags), with one \
         read request outstanding per QP, and writes over writes; obs. 9: each tenant's Gbit/s against B's size \
         (case 1: A 4 KB reads, B writes; case 2: A 64 B reads, B reads, also at MaxReadReqSize 256 B); obs. 10: the aggregate with small \
         writes beside 4 KB writes, as a share of 4 KB alone, ours, the paper's, and ours without the root \
         complex's read-modify-write.",
        "AaaS obs. 5: 0.83x-10.5x; obs. 6: AtH steals 1.08-3.39x, homogeneous even; Fig. 3(b): near-zero \
         variance and within 10%; Fig. 3(c): 94%, 72%, 15%",
        vec![
            Chart::lines(
                "obs. 5: A/B data rate",
                size_axis("B's write"),
                Axis::new("A/B").log10(),
                columns(&obs5, &[(1, "ours"), (2, "size ratio")]),
            )
            .reference_y(0.83, "paper low")
            .reference_y(10.5, "paper high"),
            Chart::lines(
                "obs. 6: write/read",
                size_axis("transfer"),
                Axis::new("A/B"),
                columns(
                    &s.obs6,
                    &[(1, "write/read"), (2, "write/read, 1 read/QP"), (3, "write/write")],
                ),
            )
            .reference_y(1.08, "paper low")
            .reference_y(3.39, "paper high"),
            Chart::lines(
                "obs. 9: Gbit/s by B's size",
                size_axis("B's transfer"),
                Axis::new("Gbit/s"),
                columns(
                    &s.obs9,
                    &[
                        (1, "case 1 A read 4 KB"),
                        (2, "case 1 B write"),
                        (3, "case 2 A read 64 B"),
                        (4, "case 2 B read"),
                        (5, "case 2 A, MRRS 256 B"),
                    ],
                ),
            ),
            Chart::bars(
                "obs. 10: aggregate, % of 4 KB alone",
                "small write",
                Axis::new("%"),
                s.obs10.iter().map(|d| format!("{} B", d[0])).collect(),
                [(1, "ours"), (2, "paper"), (3, "ours without RMW")]
                    .iter()
                    .map(|&(i, l)| BarSeries::new(l, s.obs10.iter().map(|d| d[i]).collect()))
                    .collect(),
            ),
        ],
    )
}
