//! The demo's results as text for people: per policy the median and
//! range of each figure, the best policy marked, where the LS tenant's
//! latency went, the verdict and any warning about the host.

use super::{pct, LiveResults};
use crate::astraea::{BS, LS};
use isola_report::text::{bytes_binary, duration, table};
use std::fmt::Write;

impl LiveResults {
    /// The results as `isola demo` prints them.
    pub fn text(&self) -> String {
        let mut out = String::new();
        write_text(&mut out, self).expect("writing to a String");
        out
    }
}

/// Writes the results: the setup, the table per policy, where the LS
/// tenant's latency went, the verdict and the warnings.
fn write_text(out: &mut String, r: &LiveResults) -> std::fmt::Result {
    writeln!(out, "{}", r.experiment)?;
    let ls_solo = r.ls_solo_spread().map_or("-".into(), |s| s.show(duration));
    writeln!(
        out,
        "{}; subtasks of {} under isolation; {} round(s), every policy once a round; LS solo service time \
         (measured around each shared run) {}\n",
        r.setup.code,
        bytes_binary(r.setup.split_bytes as f64),
        r.setup.rounds,
        ls_solo,
    )?;
    let best = r.best_policy.as_deref();
    let processes = r.setup.processes;
    let ratio = |v: f64| format!("{v:.2}");
    let rows: Vec<Vec<String>> = r
        .in_order()
        .map(|(name, p)| {
            let (ls, bs) = (&p.tenants[LS], &p.tenants[BS]);
            let mark = if Some(name.as_str()) == best { " *" } else { "" };
            let mut row = vec![
                format!("{name}{mark}"),
                p.spread.ls_sla_violation_rate.show(pct),
                duration(ls.latency_ns.p50 as f64),
                duration(ls.latency_ns.p99 as f64),
                p.spread.bs_sla_violation_rate.show(pct),
                duration(bs.latency_ns.p99 as f64),
                p.spread.bandwidth_vs_solo.show(ratio),
                p.spread.bandwidth_while_sharing.show(ratio),
                p.spread.overhead_ratio.show(|v| format!("{v:.3}")),
            ];
            if processes {
                let transit = p.spread.cross_process_ns.as_ref();
                row.push(transit.map_or("-".into(), |s| s.show(duration)));
            }
            row
        })
        .collect();
    let mut header = vec![
        "policy",
        "LS SLA viol",
        "LS p50",
        "LS p99",
        "BS SLA viol",
        "BS p99",
        "BS bw/solo",
        "BS bw/solo while LS runs",
        "alone/native",
    ];
    if processes {
        header.push("LS cross-process");
    }
    writeln!(out, "{}", table(&header, &rows))?;
    if processes {
        writeln!(
            out,
            "tenants in processes of their own, attached to an isolad per run; LS cross-process: its process's \
             median latency minus the daemon's, per task (what the socket and rings add over the in-process runtime)"
        )?;
    }
    writeln!(
        out,
        "median [range] over the rounds; * best policy; ASTRAEA reports 47.66% LS SLA violations natively and \
         14.84% with ASTRAEA, under 4% overhead alone.\n"
    )?;
    write_breakdown(out, r)?;
    writeln!(out, "verdict: {}", r.verdict.line)?;
    for w in &r.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}

/// Where the LS tenant's latency went, per policy.
fn write_breakdown(out: &mut String, r: &LiveResults) -> std::fmt::Result {
    let ms = |ns: u64| duration(ns as f64);
    let parts: Vec<Vec<String>> = r
        .in_order()
        .map(|(name, p)| {
            let b = &p.ls_breakdown;
            let m = &b.mean_all;
            vec![
                name.clone(),
                format!("{}/{}", b.violating, b.tasks),
                ms(m.total_ns()),
                ms(m.service_ns),
                ms(m.service_off_cpu_ns),
                ms(m.behind_others_ns),
                ms(m.engine_idle_ns),
                ms(m.handoff_ns),
                ms(m.delivery_ns),
            ]
        })
        .collect();
    let header = [
        "policy",
        "LS violating",
        "LS mean latency",
        "= own service",
        "(off CPU)",
        "+ behind BS",
        "+ engine idle",
        "+ hand-off",
        "+ delivery",
    ];
    writeln!(
        out,
        "where the LS tenant's latency went (mean over its tasks, every round):"
    )?;
    writeln!(out, "{}", table(&header, &parts))?;
    Ok(())
}
