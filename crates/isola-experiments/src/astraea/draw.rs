//! ASTRAEA's figure: the latency-sensitive tenant's latency CDF per run,
//! and each tenant's SLA violations, beside the paper's Fig. 2.

use super::{BS, LS};
use crate::draw::{bars_per_policy, figure as beside_paper, latency_cdf};
use isola_model::PolicyResult;
use isola_report::{Axis, Figure, Format};

/// The figure of the simulated runs `ok`.
pub(super) fn figure(ok: &[(&str, &PolicyResult)]) -> Figure {
    beside_paper(
        "Latency and SLA violations",
        "The latency-sensitive tenant's latency CDF under each policy, and each tenant's SLA violations.",
        "ASTRAEA Fig. 2: latency CDF of the LS tenant natively and with ASTRAEA; 47.66% vs 14.84% of LS tasks \
         over 2x their hardware time",
        vec![
            latency_cdf("Latency-sensitive tenant: latency CDF", ok, LS),
            bars_per_policy(
                "SLA violations per policy",
                Axis::new("tasks over SLA").format(Format::Percent),
                ok,
                &[LS, BS],
                |t| t.sla_violation_rate,
            ),
        ],
    )
}
