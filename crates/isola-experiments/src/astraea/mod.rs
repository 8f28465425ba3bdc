//! ASTRAEA (SIGCOMM'25 poster), Fig. 2: a latency-sensitive tenant (8 KiB
//! erasure-coding tasks) and a bandwidth-sensitive one (64 KiB tasks) share
//! one engine. Simulated, every policy runs at several weights for the
//! latency-sensitive tenant; live ([`live`]), the same experiment runs on
//! real Reed-Solomon coding (as `isola demo`).
//!
//! This module measures and judges (tables, the best run, the goal, the
//! paper's direction); `draw` makes its figure.

mod draw;
pub mod live;

use crate::experiment::{Check, Experiment, ExperimentResult};
use crate::judge::{direction, fmt_pct, row_of, succeeded, tenant};
use crate::runner::{every_policy, PolicyOutcome, Runner};
use crate::Progress;
use anyhow::Context;
use isola_model::scenario::PolicyRun;
use isola_model::PolicyResult;
use isola_report::text::duration;
use isola_report::Table;

/// The experiment, as `isola repro` lists it.
pub const EXPERIMENT: Experiment = Experiment {
    name: "astraea",
    title: "LS 8 KiB x 128 + BS 64 KiB x 256 erasure-coding tasks on one engine",
    paper: "ASTRAEA (SIGCOMM'25 poster), Fig. 2",
    claims: &[
        "native (FCFS): 47.66% of the latency-sensitive tenant's tasks violate its SLA",
        "ASTRAEA: 14.84% violations",
        "ASTRAEA's overhead with a tenant alone: under 4%",
    ],
    run,
};

/// The latency-sensitive tenant's name.
pub const LS: &str = "latency-sensitive";
/// The bandwidth-sensitive tenant's name.
pub const BS: &str = "bandwidth-sensitive";
/// The LS tenant's weights tried (the live run uses 16).
const LS_WEIGHTS: [u32; 4] = [1, 2, 4, 16];

fn run(runner: &mut Runner) -> anyhow::Result<ExperimentResult> {
    let o = ExperimentResult::new(&EXPERIMENT, runner.live());
    if runner.live() {
        return live_outcome(o, runner.progress());
    }
    simulated(o, runner)
}

/// Every policy at each LS weight on the simulator.
fn simulated(mut o: ExperimentResult, runner: &mut Runner) -> anyhow::Result<ExperimentResult> {
    let results = weighted_runs(runner)?;
    let ok = succeeded(&results, &mut o.notes);
    let rows: Vec<Vec<String>> = ok
        .iter()
        .map(|(label, r)| {
            let (Some(ls), Some(bs)) = (tenant(r, LS), tenant(r, BS)) else {
                return vec![label.to_string()];
            };
            astraea_row(
                label,
                ls.sla_violation_rate,
                (ls.latency_ns.p50, ls.latency_ns.p99),
                bs.sla_violation_rate,
                (bs_bandwidth_while_sharing(r), bs_bandwidth_over_run(r)),
            )
        })
        .collect();
    let scored: Vec<AstraeaScore> = ok
        .iter()
        .filter(|(l, _)| *l != "native")
        .filter_map(|(l, r)| {
            let t = tenant(r, LS)?;
            Some(AstraeaScore {
                label: l,
                ls_violations: t.sla_violation_rate,
                ls_worst: t.sla_violation_rate,
                bs_while_sharing: bs_bandwidth_while_sharing(r)?,
                bs_over_run: bs_bandwidth_over_run(r)?,
                ls_p99: t.latency_ns.p99,
            })
        })
        .collect();
    astraea_goals(&mut o, &scored);
    if let Some(c) = direction(
        &ok,
        "astraea@w16",
        &["native"],
        "LS SLA violations",
        true,
        fmt_pct,
        |r| tenant(r, LS).map(|t| t.sla_violation_rate),
    ) {
        o.directions.push(c);
    }
    o.tables.push(Table {
        caption: "Per policy and LS weight (policy@wN; every policy but native splits tasks into 128 KiB \
                  subtasks); BS bandwidth is its engine share while the LS tenant runs, against alone"
            .into(),
        header: ASTRAEA_HEADER.map(String::from).to_vec(),
        highlight_row: row_of(&rows, o.best_policy.as_deref()),
        rows,
    });
    o.figures.push(draw::figure(&ok));
    o.notes.push(
        "overhead alone is a property of a real runtime; the simulator has none: `isola demo` measures it live"
            .into(),
    );
    o.notes.push(SETUP_DIFFERS.into());
    Ok(o)
}

/// Every policy at several priorities for the LS tenant (its weight):
/// the two SLAs pull against each other (the LS tenant always has work,
/// so whatever share it gets the BS tenant loses while it runs), and the
/// weight picks the point on that trade-off. Native ignores weights.
fn weighted_runs(runner: &mut Runner) -> anyhow::Result<Vec<PolicyOutcome>> {
    let mut scenario = isola_model::Scenario::parse(
        include_str!("../../../../scenarios/repro/astraea.toml"),
        "scenarios/repro/astraea.toml",
    )?;
    let ls = scenario
        .tenants
        .iter()
        .position(|t| t.name == LS)
        .context("astraea.toml has no latency-sensitive tenant")?;
    let setup = runner.prepare(&scenario)?;
    let mut results = Vec::new();
    for (i, weight) in LS_WEIGHTS.iter().enumerate() {
        let mut runs = every_policy(Some(128 << 10));
        if i > 0 {
            runs.remove(0);
        }
        // Isola's `slack` keeps a guard against service-time jitter by
        // default; the simulated service here has none, so without the
        // guard it shows how close to the trade-off's end a schedule gets.
        runs.push(PolicyRun {
            name: "slack".into(),
            label: "slack/guard0".into(),
            params: [("guard".to_string(), "0".to_string())].into(),
            split: Some(128 << 10),
            on: Vec::new(),
        });
        for r in runs.iter_mut().filter(|r| r.label != "native") {
            r.label = format!("{}@w{weight}", r.label);
        }
        scenario.tenants[ls].slo.weight = f64::from(*weight);
        let share = 1.0 / LS_WEIGHTS.len() as f64;
        results.extend(runner.run_policies(&scenario, &setup, &runs, (i as f64 * share, share)));
    }
    Ok(results)
}

/// The BS tenant's share of the engine while the LS tenant runs, over its
/// share once alone in the same run: its bandwidth against its solo
/// bandwidth while they share. (The LS tenant's 128 tasks overlap only
/// the first few percent of the BS tenant's 256, so a whole-run average
/// would hide any loss.)
fn bs_bandwidth_while_sharing(r: &PolicyResult) -> Option<f64> {
    let ls_end = tenant(r, LS)?.flow_completion_ns;
    let bs = r.tenants.iter().position(|t| t.name == BS)?;
    let window = r.series.get(1)?.start_ns;
    let mean =
        |points: Vec<f64>| (!points.is_empty()).then(|| points.iter().sum::<f64>() / points.len() as f64);
    let (during, after): (Vec<_>, Vec<_>) = r
        .series
        .iter()
        .filter(|p| p.start_ns + window <= ls_end || p.start_ns >= ls_end)
        .partition(|p| p.start_ns < ls_end);
    let during = mean(during.iter().map(|p| p.engine_share[bs]).collect())?;
    // The last window is partial.
    let after = mean(after.iter().rev().skip(1).map(|p| p.engine_share[bs]).collect())?;
    (after > 0.0).then(|| during / after)
}

/// The BS tenant's bandwidth against solo over its whole run: closed loop
/// with one task outstanding, its bandwidth is inversely proportional to
/// its mean latency, so against solo it is 1 / its slowdown.
fn bs_bandwidth_over_run(r: &PolicyResult) -> Option<f64> {
    let s = tenant(r, BS)?.slowdown?;
    (s > 0.0).then(|| 1.0 / s)
}

/// Where this setup differs from the poster's, and what each difference
/// could move.
const SETUP_DIFFERS: &str = "where this differs from the poster's setup and what it could move: (1) the engine is \
     a simulated one-slot engine whose service times are Reed-Solomon 128+32 measured on this machine's CPU \
     (0.89 ms a 1 MiB task, 7.2 ms an 8 MiB one), not BlueField-3's DOCA engine; the policies see only the ratio \
     (~8x), and another ratio moves every LS wait in proportion; (2) the poster states no arrival process: both \
     tenants here are closed loops with one task outstanding, so every LS task meets a BS task in service \
     (native 99% violations against the poster's 47.66%; open-loop LS arrivals would bring native down toward the \
     BS tenant's engine occupancy); (3) tasks are the artifact's 128 blocks of 8 KiB (LS) and 64 KiB (BS); \
     (4) ASTRAEA's subtask size is not given: 128 KiB here (larger subtasks lengthen LS waits by up to one \
     subtask, 125 us; smaller ones add splitting overhead)";

/// The columns every ASTRAEA table starts with.
const ASTRAEA_HEADER: [&str; 7] = [
    "policy",
    "LS SLA viol",
    "LS p50",
    "LS p99",
    "BS SLA viol",
    "BS bw/solo while LS runs",
    "BS bw/solo over its run",
];

/// A row under [`ASTRAEA_HEADER`].
fn astraea_row(
    label: &str,
    ls_violations: f64,
    (ls_p50, ls_p99): (u64, u64),
    bs_violations: f64,
    (bs_while_sharing, bs_over_run): (Option<f64>, Option<f64>),
) -> Vec<String> {
    let ratio = |b: Option<f64>| b.map_or("-".into(), |b| format!("{b:.2}"));
    vec![
        label.to_string(),
        fmt_pct(ls_violations),
        duration(ls_p50 as f64),
        duration(ls_p99 as f64),
        fmt_pct(bs_violations),
        ratio(bs_while_sharing),
        ratio(bs_over_run),
    ]
}

/// One ASTRAEA run, scored for the goal.
pub(crate) struct AstraeaScore<'a> {
    label: &'a str,
    ls_violations: f64,
    /// The LS violations of its worst round (live runs in rounds), else
    /// the same as `ls_violations`: a tie goes to the steadier run.
    ls_worst: f64,
    /// The BS tenant's bandwidth against solo while the LS tenant runs.
    bs_while_sharing: f64,
    /// The BS tenant's bandwidth against solo over its whole run.
    bs_over_run: f64,
    ls_p99: u64,
}

/// Names the best run ([`astraea_best`]) and checks the goal: the BS
/// tenant at half its solo bandwidth while the LS tenant runs, which no
/// schedule can give here (a note says why). A second note gives the goal
/// with the BS SLA as ASTRAEA states it (the application's bandwidth over
/// its run), which every policy meets in this set-up, so that only the LS
/// half would decide it.
fn astraea_goals(o: &mut ExperimentResult, scored: &[AstraeaScore]) {
    let best = astraea_best(scored);
    o.best_policy = best.map(|b| b.label.to_string());
    if let Some(s) = best {
        o.goals.push(Check {
            what:
                "LS SLA violations under 5% with the BS tenant at >= 50% of its solo bandwidth while the LS \
                   tenant runs"
                    .into(),
            met: s.ls_violations < 0.05 && s.bs_while_sharing >= 0.5,
            detail: format!(
                "{}: {} LS violations, BS at {:.2} of solo while sharing",
                s.label,
                fmt_pct(s.ls_violations),
                s.bs_while_sharing
            ),
        });
    }
    let over_run = |f: fn(f64, f64) -> f64| scored.iter().map(|s| s.bs_over_run).reduce(f);
    let paper = scored.iter().filter(|s| s.bs_over_run >= 0.5).min_by(|a, b| {
        a.ls_violations
            .total_cmp(&b.ls_violations)
            .then(a.ls_p99.cmp(&b.ls_p99))
    });
    if let (Some(s), Some(low), Some(high)) = (paper, over_run(f64::min), over_run(f64::max)) {
        o.notes.push(format!(
            "context: with the BS SLA as ASTRAEA states it, the BS tenant's bandwidth over its run ({low:.2}-{high:.2} \
             of solo across policies here), the goal would come down to the LS half: {} has {} LS violations",
            s.label,
            fmt_pct(s.ls_violations),
        ));
    }
    o.notes.push(
        "the goal cannot hold here: the LS tenant always has a task queued (closed loop), so for its task of \
         service time S to finish within 2S it must get half the engine over those 2S, plus the subtask in \
         service when it arrives, which leaves the BS tenant under half while they share; the weights trace \
         that trade-off"
            .into(),
    );
}

/// The best run: the fewest LS violations among runs keeping the BS tenant
/// at half its solo bandwidth while sharing with LS violations under 5%
/// (ties: the lower LS p99); when no run does both, the trade-off's best
/// point: the fewest LS violations, then the most BS bandwidth while
/// sharing.
pub(crate) fn astraea_best<'a, 's>(scored: &'s [AstraeaScore<'a>]) -> Option<&'s AstraeaScore<'a>> {
    let within = scored
        .iter()
        .filter(|s| s.bs_while_sharing >= 0.5 && s.ls_violations < 0.05)
        .min_by(|a, b| {
            a.ls_violations
                .total_cmp(&b.ls_violations)
                .then(a.ls_worst.total_cmp(&b.ls_worst))
                .then(a.ls_p99.cmp(&b.ls_p99))
        });
    within.or_else(|| {
        scored.iter().min_by(|a, b| {
            a.ls_violations
                .total_cmp(&b.ls_violations)
                .then(a.ls_worst.total_cmp(&b.ls_worst))
                .then(b.bs_while_sharing.total_cmp(&a.bs_while_sharing))
                .then(a.ls_p99.cmp(&b.ls_p99))
        })
    })
}

/// The same experiment live: [`live::run`] with its defaults (as `isola
/// demo`), with real Reed-Solomon coding on this machine's cores, every
/// policy it compares.
fn live_outcome(mut o: ExperimentResult, progress: &mut dyn Progress) -> anyhow::Result<ExperimentResult> {
    let report = live::run(&live::LiveConfig::default(), progress)?;
    let in_order = || {
        report
            .order
            .iter()
            .filter_map(|name| Some((name, report.policies.get(name)?)))
    };
    let rows: Vec<Vec<String>> = in_order()
        .map(|(name, p)| {
            let (ls, bs) = (&p.tenants[LS], &p.tenants[BS]);
            let mut row = astraea_row(
                name,
                ls.sla_violation_rate,
                (ls.latency_ns.p50, ls.latency_ns.p99),
                bs.sla_violation_rate,
                (Some(p.bandwidth_while_sharing), Some(p.bandwidth_vs_solo)),
            );
            row.push(format!("{:.3}", p.overhead_ratio));
            row
        })
        .collect();
    let scored: Vec<AstraeaScore> = in_order()
        .filter(|(n, _)| *n != "native")
        .map(|(n, p)| {
            let ls = &p.tenants[LS];
            AstraeaScore {
                label: n,
                ls_violations: ls.sla_violation_rate,
                ls_worst: p.spread.ls_sla_violation_rate.max,
                bs_while_sharing: p.bandwidth_while_sharing,
                bs_over_run: p.bandwidth_vs_solo,
                ls_p99: ls.latency_ns.p99,
            }
        })
        .collect();
    astraea_goals(&mut o, &scored);
    o.tables.push(Table {
        caption:
            "Live, on this machine (as `isola demo`): per policy, with the overhead alone against native"
                .into(),
        header: ASTRAEA_HEADER
            .iter()
            .chain(&["alone/native"])
            .map(|h| h.to_string())
            .collect(),
        highlight_row: row_of(&rows, o.best_policy.as_deref()),
        rows,
    });
    o.notes.push(format!(
        "live, figures are medians of {} rounds: {}",
        report.setup.rounds, report.verdict.line
    ));
    o.notes.extend(report.warnings.iter().cloned());
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_scenario_has_both_tenants() {
        let s = isola_model::Scenario::parse(
            include_str!("../../../../scenarios/repro/astraea.toml"),
            "astraea.toml",
        )
        .unwrap();
        for name in [LS, BS] {
            assert!(s.tenants.iter().any(|t| t.name == name), "{name}");
        }
    }

    fn score(label: &str, ls_violations: f64, bs_while_sharing: f64, ls_p99: u64) -> AstraeaScore<'_> {
        AstraeaScore {
            label,
            ls_violations,
            ls_worst: ls_violations,
            bs_while_sharing,
            bs_over_run: 0.9,
            ls_p99,
        }
    }

    /// The best run meets both halves of the goal when one does; otherwise
    /// it is the trade-off's best point.
    #[test]
    fn best_run_prefers_meeting_the_goal() {
        let scored = [
            score("a", 0.01, 0.3, 10),
            score("b", 0.04, 0.6, 20),
            score("c", 0.03, 0.55, 30),
        ];
        assert_eq!(astraea_best(&scored).unwrap().label, "c");
        let none = [score("a", 0.2, 0.3, 10), score("b", 0.2, 0.4, 10)];
        assert_eq!(astraea_best(&none).unwrap().label, "b");
        assert!(astraea_best(&[]).is_none());
    }
}
