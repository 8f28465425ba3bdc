//! The HTML report of a user's own scenario (`isola sim SCENARIO --out
//! DIR`, `isola run` too): the same self-contained page as `isola repro`
//! writes, with one section for the scenario: each policy's figures per
//! tenant, and the charts every experiment draws (latency CDFs per tenant,
//! SLA violations and engine shares per policy, Jain's index over time).

use crate::draw::{bars_per_policy, latency_cdf, over_time};
use isola_model::SimReport;
use isola_report::text::duration;
use isola_report::{Axis, Figure, Format, Generated, Report, Section, SummaryRow, Table};

/// At most this many tenants get a latency CDF of their own.
const CDF_TENANTS: usize = 4;

/// `report`, run `how` ("simulated" or "live"), as one page.
pub fn scenario_report(report: &SimReport, how: &str, generated: Generated) -> Report {
    let ok: Vec<(&str, &isola_model::PolicyResult)> =
        report.policies.iter().map(|p| (p.policy.as_str(), p)).collect();
    let tenants: Vec<&str> = report
        .policies
        .first()
        .map(|p| p.tenants.iter().map(|t| t.name.as_str()).collect())
        .unwrap_or_default();
    let mut rows = Vec::new();
    for p in &report.policies {
        for t in &p.tenants {
            rows.push(vec![
                p.policy.clone(),
                t.name.clone(),
                t.completed.to_string(),
                format!("{:.3}", t.throughput_bps * 8.0 / 1e9),
                duration(t.latency_ns.p50 as f64),
                duration(t.latency_ns.p99 as f64),
                format!("{:.2}%", t.sla_violation_rate * 100.0),
                format!("{:.3}", t.engine_time_share),
                t.slowdown.map_or("-".into(), |s| format!("{s:.2}")),
            ]);
        }
    }
    let table = Table {
        caption: format!("Each policy's figures per tenant ({how}, seed {})", report.seed),
        header: [
            "policy",
            "tenant",
            "completed",
            "Gbit/s",
            "p50",
            "p99",
            "SLA viol",
            "share",
            "slowdown",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        highlight_row: None,
    };
    let mut charts: Vec<_> = tenants
        .iter()
        .take(CDF_TENANTS)
        .map(|t| latency_cdf(&format!("Latency of {t}"), &ok, t))
        .collect();
    charts.push(bars_per_policy(
        "SLA violations",
        Axis::new("tasks over their SLA").format(Format::Percent),
        &ok,
        &tenants,
        |t| t.sla_violation_rate,
    ));
    charts.push(bars_per_policy(
        "Engine time share",
        Axis::new("share of engine time").format(Format::Percent),
        &ok,
        &tenants,
        |t| t.engine_time_share,
    ));
    charts.push(over_time(
        "Jain's index by weight, per window",
        Axis::new("Jain's index"),
        &ok,
        &[],
        |w| w.jain,
    ));
    let summary = report
        .policies
        .iter()
        .map(|p| SummaryRow {
            section: "scenario".into(),
            goal: format!("policy {}", p.policy),
            result: format!("Jain {:.4} by weight over the run, Fair1 {:.4}", p.jain, p.fair1),
            met: None,
        })
        .collect();
    Report {
        title: format!("Isola: {}", report.scenario),
        generated,
        summary,
        sections: vec![Section {
            name: "scenario".into(),
            title: report.scenario.clone(),
            description: format!(
                "Every policy of the scenario on the same arrivals ({how}, seed {}).",
                report.seed
            ),
            paper_claims: Vec::new(),
            findings: Vec::new(),
            best_policy: None,
            tables: vec![table],
            figures: vec![Figure {
                title: "Latency, SLA, shares and fairness per policy".into(),
                caption: format!("{} policies, {} tenants", report.policies.len(), tenants.len()),
                paper: None,
                charts,
            }],
        }],
    }
}
