//! The live experiment's results: each round's figures per policy, their
//! median and range over the rounds, the best policy, the verdict against
//! ASTRAEA's SLA rule, and warnings when the host or the reference moved
//! under the runs.

use super::measure::{HostInterference, LsBreakdown, RoundResult, SoloReference, TenantSummary};
use crate::astraea::{BS, LS};
use isola_core::Nanos;
pub use isola_model::results::Spread;
use serde::Serialize;
use std::collections::BTreeMap;

/// A task's SLA share: a tenant meets its SLA when fewer than this
/// fraction of its tasks violate the per-task rule (a 95% objective).
pub const VIOLATION_TARGET: f64 = 0.05;
/// ASTRAEA's bandwidth SLA: the BS tenant keeps at least this fraction
/// of its solo bandwidth over its run.
pub const BANDWIDTH_TARGET: f64 = 0.5;
/// A reference that moved more than this between the solo runs around a
/// shared run is reported as drift.
pub const DRIFT_LIMIT: f64 = 0.15;
/// The engine is reported to have run slow in a shared run when the LS
/// tenant's whole tasks took more than this much longer in it than alone
/// around it (the other tenant's pieces between them cost some 10-20%).
pub const SLOWDOWN_LIMIT: f64 = 0.3;
/// Other programs are reported when they used more than this many CPUs,
/// on average, during the shared runs.
pub const BUSY_LIMIT: f64 = 0.25;
/// The host is reported to have disturbed a run when it took more than
/// this fraction of the run's time from one of Isola's threads.
pub const HOST_LIMIT: f64 = 0.02;

/// How a policy's figures spread over the rounds.
#[derive(Debug, Clone, Serialize)]
pub struct RoundSpread {
    /// The LS tenant's SLA violations.
    pub ls_sla_violation_rate: Spread,
    /// The BS tenant's SLA violations.
    pub bs_sla_violation_rate: Spread,
    /// The BS tenant's bandwidth against solo over its run.
    pub bandwidth_vs_solo: Spread,
    /// The BS tenant's bandwidth against solo while the LS tenant runs.
    pub bandwidth_while_sharing: Spread,
    /// The BS tenant alone under the policy against native.
    pub overhead_ratio: Spread,
    /// With tenants in processes of their own: the LS tenant's
    /// cross-process cost per task, ns (`RoundResult::cross_process_ns`).
    pub cross_process_ns: Option<Spread>,
}

/// One policy over every round: the medians in today's fields, their
/// spread, and each round.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyComparison {
    /// Per tenant: each figure's median over the rounds.
    pub tenants: BTreeMap<String, TenantSummary>,
    /// Bandwidth tenant alone: this policy's throughput over native's
    /// (median over the rounds).
    pub overhead_ratio: f64,
    /// Bandwidth tenant's throughput while sharing, over its solo
    /// throughput (median).
    pub bandwidth_vs_solo: f64,
    /// Bandwidth tenant's share of the engine while the latency tenant
    /// runs, over its share alone (median).
    pub bandwidth_while_sharing: f64,
    /// The solo reference of the median round (by LS violations).
    pub solo: SoloReference,
    /// How the figures spread over the rounds.
    pub spread: RoundSpread,
    /// Where the LS tenant's latency went, over every round.
    pub ls_breakdown: LsBreakdown,
    /// Each round, in the order run.
    pub rounds: Vec<RoundResult>,
}

impl PolicyComparison {
    /// The comparison over `rounds` (at least one).
    pub(super) fn over(rounds: Vec<RoundResult>) -> Option<PolicyComparison> {
        let spread = |f: fn(&RoundResult) -> f64| Spread::of(rounds.iter().map(f));
        let tenant_rate =
            |t: &'static str| move |r: &RoundResult| r.tenants.get(t).map_or(0.0, |x| x.sla_violation_rate);
        let spread_of = RoundSpread {
            ls_sla_violation_rate: Spread::of(rounds.iter().map(tenant_rate(LS)))?,
            bs_sla_violation_rate: Spread::of(rounds.iter().map(tenant_rate(BS)))?,
            bandwidth_vs_solo: spread(|r| r.bandwidth_vs_solo)?,
            bandwidth_while_sharing: spread(|r| r.bandwidth_while_sharing)?,
            overhead_ratio: spread(|r| r.overhead_ratio)?,
            cross_process_ns: Spread::of(
                rounds
                    .iter()
                    .filter_map(|r| r.cross_process_ns)
                    .map(|ns| ns as f64),
            ),
        };
        let median_round = median_by(&rounds, |r| tenant_rate(LS)(r))?;
        let tenants = [LS, BS]
            .iter()
            .filter_map(|&t| {
                Some((
                    t.to_string(),
                    TenantSummary::median(rounds.iter().filter_map(|r| r.tenants.get(t)))?,
                ))
            })
            .collect();
        Some(PolicyComparison {
            tenants,
            overhead_ratio: spread_of.overhead_ratio.median,
            bandwidth_vs_solo: spread_of.bandwidth_vs_solo.median,
            bandwidth_while_sharing: spread_of.bandwidth_while_sharing.median,
            solo: median_round.solo,
            spread: spread_of,
            ls_breakdown: LsBreakdown::merged(rounds.iter().map(|r| &r.ls_breakdown)),
            rounds,
        })
    }

    /// The LS tenant's violations, median over the rounds.
    pub fn ls_violations(&self) -> f64 {
        self.spread.ls_sla_violation_rate.median
    }
}

/// The round whose `key` is the median (the upper middle one).
fn median_by<T>(items: &[T], key: impl Fn(&T) -> f64) -> Option<&T> {
    let mut order: Vec<&T> = items.iter().collect();
    isola_core::metrics::median_by(&mut order, |a, b| key(a).total_cmp(&key(b))).copied()
}

/// Whether isolation held, against ASTRAEA's SLA rule.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// The best isolation policy kept the LS tenant's violations under
    /// the target (median over the rounds) and the BS tenant at half its
    /// solo bandwidth over its run.
    pub held: bool,
    /// The policy judged.
    pub policy: Option<String>,
    /// The verdict in a sentence.
    pub line: String,
}

/// The verdict on `best` (with native for contrast).
pub(super) fn verdict(best: Option<(&str, &PolicyComparison)>, native: Option<&PolicyComparison>) -> Verdict {
    let Some((name, p)) = best else {
        return Verdict {
            held: false,
            policy: None,
            line: "no isolation policy ran: nothing to judge".into(),
        };
    };
    let ls = &p.spread.ls_sla_violation_rate;
    let held = ls.median < VIOLATION_TARGET && p.bandwidth_vs_solo >= BANDWIDTH_TARGET;
    let natively = native.map_or(String::new(), |n| {
        format!(" (natively {})", pct(n.ls_violations()))
    });
    let line = format!(
        "isolation {} under {name}: LS SLA violations {} (median of {} rounds, range {}-{}){natively}, {} the {:.0}% \
         target; BS at {:.2} of its solo bandwidth over its run ({} ASTRAEA's {:.2})",
        if held { "HELD" } else { "DID NOT HOLD" },
        pct(ls.median),
        p.rounds.len(),
        pct(ls.min),
        pct(ls.max),
        if ls.median < VIOLATION_TARGET { "under" } else { "over" },
        VIOLATION_TARGET * 100.0,
        p.bandwidth_vs_solo,
        if p.bandwidth_vs_solo >= BANDWIDTH_TARGET { "meets" } else { "misses" },
        BANDWIDTH_TARGET,
    );
    Verdict {
        held,
        policy: Some(name.to_string()),
        line,
    }
}

/// Warnings about the runs: the host taking time from Isola's threads, the
/// SLA reference drifting. Each names the runs and the cause.
pub(super) fn warnings(policies: &[(String, PolicyComparison)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut disturbed: Vec<String> = Vec::new();
    let mut worst: Option<(&HostInterference, &str, usize)> = None;
    let mut drifted: Vec<String> = Vec::new();
    let mut slowed: Vec<String> = Vec::new();
    for (name, p) in policies {
        for r in &p.rounds {
            if r.host.disturbed() {
                disturbed.push(format!("{name} round {}", r.round));
                if worst.is_none_or(|(w, _, _)| r.host.took_fraction() > w.took_fraction()) {
                    worst = Some((&r.host, name, r.round));
                }
            }
            if r.solo.ls_drift.abs() > DRIFT_LIMIT {
                drifted.push(format!(
                    "{name} round {} ({:+.0}%)",
                    r.round,
                    r.solo.ls_drift * 100.0
                ));
            }
            let slower = r.solo.ls_service_in_run_ns as f64 / r.solo.ls_service_ns.max(1) as f64 - 1.0;
            if r.solo.ls_service_in_run_ns > 0 && slower > SLOWDOWN_LIMIT {
                slowed.push(format!("{name} round {} ({:+.0}%)", r.round, slower * 100.0));
            }
        }
    }
    let (others, wall, cpus) =
        policies
            .iter()
            .flat_map(|(_, p)| &p.rounds)
            .fold((0u128, 0u128, 1), |(o, w, _), r| {
                (
                    o + r.host.others_cpu_ns as u128,
                    w + r.host.wall_ns as u128,
                    r.host.cpus,
                )
            });
    let others = others as f64 / wall.max(1) as f64;
    if others > BUSY_LIMIT {
        out.push(format!(
            "other programs used {others:.2} of this machine's {cpus} CPUs during the shared runs: they compete \
             with the tenants' threads and the cache, whatever Isola's own threads are given"
        ));
    }
    if let Some((h, name, round)) = worst {
        out.push(format!(
            "the host took measurable time from Isola's threads in {} of the shared runs ({}); worst, {name} \
             round {round}: {}",
            disturbed.len(),
            list(&disturbed),
            h.describe()
        ));
    }
    if !slowed.is_empty() {
        out.push(format!(
            "the engine ran more than {:.0}% slower during {} shared run(s) than alone right around it: this \
             machine's speed changed in the middle (a neighbour on the physical host, which no counter here \
             sees), or the cache interfered: {}",
            SLOWDOWN_LIMIT * 100.0,
            slowed.len(),
            list(&slowed)
        ));
    }
    if !drifted.is_empty() {
        out.push(format!(
            "this machine's speed moved by more than {:.0}% between the solo runs around {} shared run(s): {}; \
             their SLA reference is the median of both sides",
            DRIFT_LIMIT * 100.0,
            drifted.len(),
            list(&drifted)
        ));
    }
    out
}

/// At most a few items of `items`, then how many more.
fn list(items: &[String]) -> String {
    const SHOWN: usize = 4;
    let mut s = items.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > SHOWN {
        s.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    s
}

/// A fraction as a percentage with two decimals.
pub fn pct(f: f64) -> String {
    format!("{:.2}%", f * 100.0)
}

/// Nanoseconds as milliseconds with one decimal, for sentences.
pub(super) fn ms(ns: Nanos) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lists_are_cut() {
        let items: Vec<String> = (0..6).map(|i| i.to_string()).collect();
        assert_eq!(list(&items), "0, 1, 2, 3 and 2 more");
    }
}
