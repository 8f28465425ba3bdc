//! Accelerator-as-a-Service (AaaS): the paper's PCIe/DMA contention
//! observations 4 to 10, each as two tenants on the simulator's DMA model,
//! natively (the device alone) and under every policy with max-payload
//! fragments, plus shaping variants (batching, a rate limit) for small
//! writes.
//!
//! This module measures and judges (tables, the best run per case, goals,
//! whether the device model shows each observation); `scenario` generates
//! the cases and `draw` makes the figure.

mod draw;
mod duplex;
mod observe;
pub mod scenario;

use crate::experiment::{Check, Experiment, ExperimentResult};
use crate::judge::{row_of, succeeded, tenant};
use crate::runner::{every_policy, PolicyOutcome, Runner};
use isola_model::scenario::PolicyRun;
use isola_model::PolicyResult;
use isola_report::Table;
use scenario::{scenario, Case, Setup, CASES};
use std::collections::BTreeMap;

/// The experiment, as `isola repro` lists it.
pub const EXPERIMENT: Experiment = Experiment {
    name: "aaas",
    title: "PCIe/DMA contention observations 4-10, and what shaping does to each",
    paper: "Accelerator-as-a-Service (AaaS), Sec. 3.3-3.4, Fig. 3",
    claims: &[
        "obs. 4: throughput splits in the ratio of queue pairs (round-robin arbitration)",
        "obs. 5-8: size mixes, directions and PCIe MTU boundaries make IOPS and data-rate fairness diverge",
        "obs. 10: tiny DMA writes take over root-complex credits (aggregate -85% with 16 B)",
        "shaping (splitting, batching, rate limits) should restore predictability",
    ],
    run: aaas_observations,
};

/// 4 KiB writes alone on the modelled link: 16 TLPs of 256 B, each with
/// 24 B of header and framing, at 63 Gbit/s.
const FOUR_K_ALONE_GBPS: f64 = 63.0 * 4096.0 / (4096.0 + 16.0 * 24.0);

/// What the experiment notes of its model and its differences from the paper.
const NOTES: [&str; 3] = [
    "model: isola_sim::pcie on a Gen3 x8 link (63 Gbit/s each way, 24 B per TLP, MPS 256 B, MRRS 512 B), with \
     posted/non-posted credits, ACK/UpdateFC DLLPs, 32 tags and 16 KiB of completion buffer, and one host side for \
     every case (scenario::PLATFORM): 500 ns read latency (pcie-bench, Xeon E5) and an in-order posted pipeline \
     paying one read-modify-write of the same 500 ns per partial-line write; the NIC cases (obs. 4-6) add the \
     ring protocol (64 B descriptor read, 64 B completion entry per transfer) and round-robin per queue pair; \
     the FPGA cases (obs. 7-10) round-robin per tenant, each keeping 32 transfers queued (the device's tags)",
    "differences from the paper and what moves them (variants run beside, in the tables): (1) the paper's NIC \
     ran RDMA over a ConnectX-6 (its obs. 4 aggregate, ~78 Gbit/s, is more than Gen3 x8 carries): ratios, not \
     Gbit/s, are comparable; (2) obs. 6's upper end needs reads held below a round trip's worth of requests: \
     with one read request outstanding per QP (reads_per_transfer) write/read rises with size; (3) obs. 10: every partial-line write \
     costs one read-modify-write, so 32 B costs what 16 B does; without it both keep the 64 B figure; (4) obs. \
     9 case 2 crosses MaxReadReqSize at 256 B (Table 2's IOPS-fair cell), which moves the 64 B reader; (5) no \
     NIC caches or on-NIC buffers, and RDMA's own request/response on the NIC is not modelled; (6) the model is \
     deterministic: same-size closed-loop transfers stay in phase (2 QPs of 4 KB writes alone stay below the \
     link's rate), which can hide a direction's advantage from 4 KB up (obs. 6)",
    "Isola's runs keep 16 fragments of 256 B in flight; on the NIC link each fragment is a transfer with its own \
     descriptor round trip, so a tenant with one queue pair cannot fill its share (the scheduler can only give \
     what a tenant submits): per-tenant scheduling restores byte-fairness only where the tenants stay backlogged",
];

fn aaas_observations(runner: &mut Runner) -> anyhow::Result<ExperimentResult> {
    let mut o = ExperimentResult::new(&EXPERIMENT, runner.live());
    // The cases take the first half of the progress, the sweeps the rest.
    let share = 0.5 / CASES.len() as f64;
    let mut best_per_case: BTreeMap<String, usize> = BTreeMap::new();
    // Per case: its name, and A/B data rate natively and under drr/bytes.
    let mut ratios: Vec<(&str, f64, f64)> = Vec::new();
    for (i, case) in CASES.iter().enumerate() {
        let results = simulate_case(runner, case, i as f64 * share, share)?;
        let (ratio, best_label) = judge_case(case, &results, &mut o);
        ratios.push(ratio);
        if let Some(b) = best_label {
            *best_per_case.entry(b).or_insert(0) += 1;
        }
    }
    // The experiment's best: the run best in the most cases (ties: the
    // first in name order).
    o.best_policy = best_per_case
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(l, n)| format!("{l} (best in {n} of {} cases)", CASES.len()));
    o.figures.push(draw::ratios(&ratios));
    let sweeps = observe::observations(runner, &mut o, 0.5)?;
    o.figures.push(draw::sweeps(&sweeps));
    for note in NOTES {
        o.notes.push(note.into());
    }
    Ok(o)
}

/// One case's runs: native, every policy in max-payload fragments plus
/// byte-charged DRR, and for small writes the shaping variants. `from` and
/// `share` are the case's part of the progress.
fn simulate_case(
    runner: &mut Runner,
    case: &Case,
    from: f64,
    share: f64,
) -> anyhow::Result<Vec<PolicyOutcome>> {
    let file = format!("aaas-{}.toml", case.name);
    let native = every_policy(None).remove(0);
    let mut results = runner.simulate(
        &file,
        &scenario(case, Setup::Native),
        &[native],
        (from, share * 0.1),
    )?;
    // Isola: every policy on the link one transfer at a time, in
    // max-payload fragments, plus byte-charged DRR (data-rate fairness).
    let mut runs: Vec<PolicyRun> = every_policy(Some(256)).into_iter().skip(1).collect();
    runs.push(PolicyRun {
        name: "drr".into(),
        label: "drr/bytes".into(),
        params: [("charge".to_string(), "bytes".to_string())].into(),
        split: Some(256),
        on: Vec::new(),
    });
    results.extend(runner.simulate(
        &file,
        &scenario(case, Setup::Isolated),
        &runs,
        (from + share * 0.1, share * 0.7),
    )?);
    if case.name == "obs10-small-writes" {
        // Shaping the small writer: batch 256 of them into one 4 KiB
        // transfer, or hold it to 1M transfers/s.
        for (setup, label) in [
            (Setup::Batched(256), "drr/bytes+batch256"),
            (Setup::Limited(1e6), "drr/bytes+limit1M"),
        ] {
            let mut run = runs.last().cloned().expect("drr/bytes pushed above");
            run.label = label.into();
            results.extend(runner.simulate(
                &file,
                &scenario(case, setup),
                &[run],
                (from + share * 0.8, share * 0.1),
            )?);
        }
    }
    Ok(results)
}

/// A case's two tenants' figures in a run: Gbit/s, Mops/s, A/B ratios.
struct Pair<'a> {
    a: &'a str,
    b: &'a str,
}

impl Pair<'_> {
    fn gbps(&self, r: &PolicyResult, n: &str) -> f64 {
        tenant(r, n).map_or(0.0, |t| t.throughput_bps * 8e-9)
    }
    fn mops(&self, r: &PolicyResult, n: &str) -> f64 {
        tenant(r, n).map_or(0.0, |t| t.throughput_ops * 1e-6)
    }
    fn ratio(x: f64, y: f64) -> f64 {
        if y > 0.0 {
            x / y
        } else {
            f64::INFINITY
        }
    }
    fn rate_ratio(&self, r: &PolicyResult) -> f64 {
        Self::ratio(self.gbps(r, self.a), self.gbps(r, self.b))
    }
    fn iops_ratio(&self, r: &PolicyResult) -> f64 {
        Self::ratio(self.mops(r, self.a), self.mops(r, self.b))
    }
    fn total(&self, r: &PolicyResult) -> f64 {
        self.gbps(r, self.a) + self.gbps(r, self.b)
    }
    /// The table's row for run `l`.
    fn row(&self, l: &str, r: &PolicyResult) -> Vec<String> {
        vec![
            l.to_string(),
            format!("{:.1}", self.gbps(r, self.a)),
            format!("{:.1}", self.gbps(r, self.b)),
            format!("{:.2}", self.mops(r, self.a)),
            format!("{:.2}", self.mops(r, self.b)),
            format!("{:.2}", self.rate_ratio(r)),
            format!("{:.2}", self.iops_ratio(r)),
            format!("{:.1}", self.total(r)),
        ]
    }
}

/// Judges one case's runs: its table and goal go to `o`; returns its
/// A/B data rate natively and under drr/bytes (as charted), and the label
/// of its best run.
fn judge_case(
    case: &Case,
    results: &[PolicyOutcome],
    o: &mut ExperimentResult,
) -> ((&'static str, f64, f64), Option<String>) {
    let ok = succeeded(results, &mut o.notes);
    let [a, b] = case.flows.map(|f| f.name);
    let pair = Pair { a, b };
    let rows: Vec<Vec<String>> = ok.iter().map(|(l, r)| pair.row(l, r)).collect();
    // Charted as the table shows them (two decimals).
    let charted = |label: &str| {
        ok.iter()
            .find(|(l, _)| *l == label)
            .map_or(f64::NAN, |(_, r)| (pair.rate_ratio(r) * 100.0).round() / 100.0)
    };
    let ratio = (case.name, charted("native"), charted("drr/bytes"));
    let best_total = ok.iter().map(|(_, r)| pair.total(r)).fold(0.0, f64::max);
    let native_r = ok.iter().find(|(l, _)| *l == "native").map(|(_, r)| *r);
    // Best: for the small-write case the highest aggregate; otherwise
    // the data-rate ratio closest to 1 among runs within 10% of the best
    // aggregate (fair shares must not cost the link).
    let best = if case.name == "obs10-small-writes" {
        ok.iter()
            .max_by(|x, y| pair.total(x.1).total_cmp(&pair.total(y.1)))
    } else {
        ok.iter()
            .filter(|(_, r)| pair.total(r) >= 0.9 * best_total)
            .min_by(|x, y| {
                pair.rate_ratio(x.1)
                    .ln()
                    .abs()
                    .total_cmp(&pair.rate_ratio(y.1).ln().abs())
            })
    };
    let best_label = best.map(|(l, _)| l.to_string());
    if let (Some((label, r)), Some(n)) = (best, native_r) {
        o.goals.push(case_goal(case, &pair, label, r, n));
    }
    o.tables.push(Table {
        caption: format!(
            "{} ({} vs {}): Gbit/s, Mops/s, A/B ratios, aggregate",
            case.name, a, b
        ),
        header: [
            "policy",
            "A Gbit/s",
            "B Gbit/s",
            "A Mops/s",
            "B Mops/s",
            "A/B rate",
            "A/B IOPS",
            "total Gbit/s",
        ]
        .map(String::from)
        .to_vec(),
        highlight_row: row_of(&rows, best_label.as_deref()),
        rows,
    });
    (ratio, best_label)
}

/// A case's goal, judged on its best run `r` (labelled `label`) against
/// native `n`.
fn case_goal(case: &Case, pair: &Pair, label: &str, r: &PolicyResult, n: &PolicyResult) -> Check {
    match case.name {
        "obs10-small-writes" => Check {
            what: format!(
                "{}: the best run keeps the aggregate within 10% of 4 KB writes alone",
                case.name
            ),
            met: pair.total(r) >= 0.9 * FOUR_K_ALONE_GBPS,
            detail: format!(
                "native {:.1} Gbit/s, {label} {:.1} Gbit/s",
                pair.total(n),
                pair.total(r)
            ),
        },
        _ => Check {
            what: format!(
                "{}: the best run (within 10% of the top aggregate) has A/B data rate within 10% of 1",
                case.name
            ),
            met: (pair.rate_ratio(r) - 1.0).abs() <= 0.1,
            detail: format!(
                "native A/B {:.2}, {label} A/B {:.2} at {:.1} Gbit/s",
                pair.rate_ratio(n),
                pair.rate_ratio(r),
                pair.total(r)
            ),
        },
    }
}
