//! Results as text for people, as `isola repro` and `isola sim` print
//! them: the list of experiments ([`experiments`]), an experiment's
//! outcome ([`outcome`]) and a summary of several ([`summary`]), a
//! scenario's runs per policy ([`scenario`]) and their spread over seeds
//! ([`seed_sweep`]). Returned, not printed: the caller prints.

use crate::{ExperimentResult, ALL};
use isola_model::results::SeedSweep;
use isola_model::SimReport;
use isola_report::text::{duration, table, table_with};
use std::fmt::Write;

/// Runs `write` on a new string: what the functions below return.
fn text(write: impl FnOnce(&mut String) -> std::fmt::Result) -> String {
    let mut out = String::new();
    write(&mut out).expect("writing to a String");
    out
}

/// The experiments (`isola repro --list`): name, paper and what each is.
pub fn experiments() -> String {
    let rows: Vec<Vec<String>> = ALL
        .iter()
        .map(|e| vec![e.name.to_string(), e.paper.to_string(), e.title.to_string()])
        .collect();
    table_with(&["experiment", "paper", "what"], &rows, 3)
}

/// One experiment's outcome: its tables, the paper's figures, the best
/// policy, the goals and the paper's directions checked, its notes; a
/// blank line after.
pub fn outcome(o: &ExperimentResult) -> String {
    text(|out| write_outcome(out, o))
}

/// Several experiments in a table (best policy, goals met, directions
/// held), or nothing for fewer than two.
pub fn summary(outcomes: &[ExperimentResult]) -> String {
    text(|out| write_summary(out, outcomes))
}

/// A scenario's report, run `how` ("simulated" or "live"): each policy's
/// line and table. A warning every policy has (a note on the whole run,
/// such as what a live run measured first) comes once, before the
/// tables; the rest under their policy's table.
pub fn scenario(report: &SimReport, how: &str) -> String {
    text(|out| write_scenario(out, report, how))
}

/// A scenario run `how` with the `n` seeds from `first`: per policy the
/// median and range of each figure over the seeds.
pub fn seed_sweep(sweep: &SeedSweep, how: &str, first: u64, n: u64) -> String {
    text(|out| {
        let seeds = format!("seeds {}-{}", first, first.wrapping_add(n - 1));
        for p in &sweep.policies {
            writeln!(
                out,
                "policy {}   Jain {} by weight over the run, Fair1 {}   ({how}, median [range] over {seeds})",
                p.policy,
                p.jain.show(|v| format!("{v:.4}")),
                p.fair1.show(|v| format!("{v:.4}")),
            )?;
            let rows: Vec<Vec<String>> = p
                .tenants
                .iter()
                .map(|t| {
                    vec![
                        t.name.clone(),
                        t.throughput_bps.show(|v| format!("{:.3}", v * 8.0 / 1e9)),
                        t.p50_ns.show(duration),
                        t.p99_ns.show(duration),
                        t.sla_violation_rate.show(|v| format!("{:.2}%", v * 100.0)),
                    ]
                })
                .collect();
            writeln!(
                out,
                "{}",
                table(&["tenant", "Gbit/s", "p50", "p99", "SLA viol"], &rows)
            )?;
        }
        Ok(())
    })
}

fn write_outcome(out: &mut String, o: &ExperimentResult) -> std::fmt::Result {
    writeln!(out, "== {}: {} ({}, {})", o.name, o.title, o.paper, o.mode)?;
    for t in &o.tables {
        writeln!(out, "{}", t.caption)?;
        let header: Vec<&str> = t.header.iter().map(String::as_str).collect();
        writeln!(out, "{}", table(&header, &t.rows))?;
    }
    writeln!(out, "paper:")?;
    for c in &o.paper_claims {
        writeln!(out, "  - {c}")?;
    }
    if let Some(best) = &o.best_policy {
        writeln!(out, "best policy here: {best}")?;
    }
    for (kind, checks) in [("goal", &o.goals), ("paper's direction", &o.directions)] {
        for c in checks {
            let verdict = if c.met { "met" } else { "NOT met" };
            writeln!(out, "{kind}: {} -> {verdict} ({})", c.what, c.detail)?;
        }
    }
    for n in &o.notes {
        writeln!(out, "note: {n}")?;
    }
    writeln!(out)
}

fn write_summary(out: &mut String, outcomes: &[ExperimentResult]) -> std::fmt::Result {
    if outcomes.len() < 2 {
        return Ok(());
    }
    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .map(|o| {
            let met = o.goals.iter().filter(|c| c.met).count();
            let dirs = o.directions.iter().filter(|c| c.met).count();
            vec![
                o.name.clone(),
                o.best_policy.clone().unwrap_or_else(|| "-".into()),
                format!("{met}/{}", o.goals.len()),
                format!("{dirs}/{}", o.directions.len()),
            ]
        })
        .collect();
    writeln!(
        out,
        "{}",
        table(
            &["experiment", "best policy", "goals met", "paper directions held"],
            &rows
        )
    )
}

fn write_scenario(out: &mut String, report: &SimReport, how: &str) -> std::fmt::Result {
    let shared: Vec<&String> = match report.policies.split_first() {
        Some((first, rest)) => first
            .warnings
            .iter()
            .filter(|w| rest.iter().all(|p| p.warnings.contains(w)))
            .collect(),
        None => Vec::new(),
    };
    for w in &shared {
        writeln!(out, "warning: {w}")?;
    }
    if !shared.is_empty() {
        writeln!(out)?;
    }
    for p in &report.policies {
        let fair2 = p.fair2.map_or("-".to_string(), |f| format!("{f:.3}"));
        writeln!(
            out,
            "policy {}   Jain {:.4} by weight over the run, {} against demand per window   Fair1 {:.4}   Fair2 {}   ({} {how}, {} events)",
            p.policy,
            p.jain,
            p.mean_jain_of_demand().map_or("-".to_string(), |j| format!("{j:.4}")),
            p.fair1,
            fair2,
            duration(p.duration_ns as f64),
            p.events
        )?;
        // A row's name, counts, rates and latency (a tenant's or a flow
        // queue's); the columns after them are the caller's.
        let figures =
            |name: String, completed: u64, bps: f64, ops: f64, l: &isola_model::results::LatencyStats| {
                vec![
                    name,
                    completed.to_string(),
                    format!("{:.3}", bps * 8.0 / 1e9),
                    // Tasks per second with a prefix: 8 MiB tasks run at a few
                    // hundred a second, 64 B ones at millions.
                    isola_report::text::si(ops),
                    duration(l.p50 as f64),
                    duration(l.p99 as f64),
                    duration(l.p999 as f64),
                ]
            };
        let lost = |rejected: u64, aborted: Option<u64>| match (rejected, aborted) {
            (0, None | Some(0)) => "-".to_string(),
            (r, Some(a)) => format!("{r}/{a}"),
            (r, None) => format!("{r}/-"),
        };
        let rows: Vec<Vec<String>> = p
            .tenants
            .iter()
            .flat_map(|t| {
                let mut row = figures(
                    t.name.clone(),
                    t.completed,
                    t.throughput_bps,
                    t.throughput_ops,
                    &t.latency_ns,
                );
                row.push(format!("{:.2}%", t.sla_violation_rate * 100.0));
                row.push(format!("{:.3}", t.engine_time_share));
                row.push(t.slowdown.map_or("-".into(), |s| format!("{s:.2}")));
                row.push(lost(t.rejected, Some(t.aborted)));
                // Under a tenant of several flow queues, each queue's own.
                let flows = t.flows.iter().map(|f| {
                    let mut row = figures(
                        format!("  flow {}", f.flow),
                        f.completed,
                        f.throughput_bps,
                        f.throughput_ops,
                        &f.latency_ns,
                    );
                    row.extend(["-", "-", "-"].map(String::from));
                    row.push(lost(f.rejected, None));
                    row
                });
                std::iter::once(row).chain(flows.collect::<Vec<_>>())
            })
            .collect();
        let header = [
            "tenant",
            "completed",
            "Gbit/s",
            "tasks/s",
            "p50",
            "p99",
            "p99.9",
            "SLA viol",
            "share",
            "slowdown",
            "rej/abort",
        ];
        writeln!(out, "{}", table(&header, &rows))?;
        for w in p.warnings.iter().filter(|w| !shared.contains(w)) {
            writeln!(out, "warning: {w}")?;
        }
    }
    Ok(())
}
