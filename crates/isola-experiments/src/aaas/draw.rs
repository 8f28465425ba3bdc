//! AaaS' figure: each case's A/B data-rate ratio natively and under
//! byte-charged DRR, beside the paper's Fig. 3.

use crate::draw::figure;
use isola_report::{Axis, BarSeries, Chart, Figure};

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
