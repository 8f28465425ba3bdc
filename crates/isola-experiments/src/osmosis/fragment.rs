//! What DMA fragmentation costs, OSMOSIS Figs. 10 and 11: every fragment is
//! one more DMA request, and each request pays a setup on the AXI link (the
//! DMA link's `request_overhead`; OSMOSIS Sec. 6.3: "splitting one large
//! transfer into smaller N transfers introduces N additional protocol
//! handshakes"). Fig. 10 sweeps the Congestor's write size (the paper's
//! axis) and, at 4 KiB, the fragment size; Fig. 11 runs an IO-write
//! workload alone, whole and in fragments, per transfer size.
//!
//! Two setups bound the handshake's cost, as the paper's two fragmentation
//! modes do (Sec. 5.2): [`BLOCKING_SETUP_NS`], software fragmentation on
//! PsPIN's engine, which waits for each write's response before the next
//! request; and [`PIPELINED_SETUP_NS`], OSMOSIS' hardware fragmentation,
//! "multiple outstanding AXI write requests", where only the address phase
//! is not overlapped. Scenarios are generated here (one per size and
//! setup), after `scenarios/osmosis-dma-hol.toml`.

use super::draw;
use crate::experiment::{Check, Experiment, ExperimentResult};
use crate::judge::{succeeded, tenant};
use crate::runner::Runner;
use isola_model::scenario::{Direction, DmaSpec, PolicyRun};
use isola_model::PolicyResult;
use isola_report::text::duration;
use isola_report::Table;

/// Setup of one blocking AXI write request, ns: the request waits for the
/// previous write's response, a round trip on PsPIN's interconnect at
/// 1 GHz; OSMOSIS Sec. 5.1 gives 10-30 cycles for a PU's access to another
/// cluster's memory or L2, and this is its low end.
pub const BLOCKING_SETUP_NS: u64 = 10;

/// Setup of one pipelined AXI write request, ns: one address-phase cycle
/// at 1 GHz, the rest overlapped with other outstanding writes (OSMOSIS
/// Sec. 5.2, hardware fragmentation; AXI's AW channel takes a cycle per
/// burst).
pub const PIPELINED_SETUP_NS: u64 = 1;

/// Setup of one AXI write request fitted to Fig. 11, ns: a link-bound
/// 4 KiB write losing the paper's largest overhead, 23%, in 512 B
/// fragments: `1 - (c + 64) / (8 (c + 8)) = 0.23` gives 2.9 ns (bytes at 64
/// per ns; see [`fitted_setup`]).
pub const FITTED_SETUP_NS: u64 = 3;

/// OSMOSIS' fragment size in the other OSMOSIS experiments here (its IO
/// mix, Fig. 13's smaller size).
pub const FRAGMENT: u64 = 512;

/// The live DMA engine's cost per added fragment, ns: `cargo bench -p
/// isola-runtime --bench fragment`, the engine on the dispatcher, 1.09-1.58
/// us over 4 KiB and 64 KiB writes cut into 64 B-4 KiB fragments (about 3
/// us on a worker thread, two thread hand-offs more); docs/results.md.
pub const LIVE_SETUP_NS: u64 = 1_100;

/// One setup's points at a 4 KiB Congestor: (fragment size, Victim p50
/// ns, Congestor Gbit/s).
pub(super) type FragmentCurve = (&'static str, Vec<(f64, f64, f64)>);

/// One setup's points of the IO write alone: (transfer size, whole Mpps,
/// fragmented Mpps).
pub(super) type IoCurve = (&'static str, Vec<(u64, f64, f64)>);

/// The paper's transfer sizes: 64 B to 4 KiB, doubling.
const SIZES: [u64; 7] = [64, 128, 256, 512, 1024, 2048, 4096];

/// The setups, labelled.
const SETUPS: [(&str, u64); 3] = [
    ("blocking", BLOCKING_SETUP_NS),
    ("fitted", FITTED_SETUP_NS),
    ("pipelined", PIPELINED_SETUP_NS),
];

/// The setup per request that makes a link-bound 4 KiB write lose
/// `overhead` of its throughput in 512 B fragments on the 64 B/ns AXI
/// link: `1 - (c + 64) / (8c + 64) = overhead` (framing neglected).
pub fn fitted_setup(overhead: f64) -> f64 {
    overhead * 64.0 / (7.0 - 8.0 * overhead)
}

/// Fig. 10: fragmentation against head-of-line blocking, and its price.
pub const HOL_SWEEP: Experiment = Experiment {
    name: "osmosis-frag-hol",
    title: "64 B Victim writes behind Congestor writes of 64 B-4 KiB, whole and in fragments, on one AXI DMA engine",
    paper: "OSMOSIS, Sec. 6.3 / Fig. 10",
    claims: &[
        "without fragmentation the Victim's completion time grows with the Congestor's size, 4-15x (Sec. 3, Fig. 5)",
        "fragmentation cuts the Victim's completion time by an order of magnitude",
        "at a relative slowdown of around 2x for the Congestor (software fragmentation), from one handshake per fragment",
        "hardware fragmentation (outstanding writes) recovers the Congestor's throughput",
    ],
    run: hol_sweep,
};

/// Fig. 11: IO throughput lost to fragmentation, alone.
pub const IO_OVERHEAD: Experiment = Experiment {
    name: "osmosis-frag-io",
    title: "An IO-write workload alone, transfers of 64 B-4 KiB whole and in 512 B fragments",
    paper: "OSMOSIS, Sec. 6.4 / Fig. 11",
    claims: &["IO-bound workloads lose 2% to 23% of their throughput to fragmentation"],
    run: io_overhead,
};

/// The engines both experiments run on: `pus` processing units at 1 GHz
/// and PsPIN's 512-bit AXI link at 1 GHz, one command at a time, each
/// request paying `setup` ns.
fn engines(pus: u32, setup: u64) -> String {
    format!(
        r#"[[engine]]
name = "pu"
kind = "pu"
slots = {pus}
clock = "1GHz"

[[engine]]
name = "axi"
kind = "dma"
slots = 1
bandwidth = "512Gbit/s"
max_payload = "4KiB"
tlp_overhead = "8B"
request_overhead = "{setup}ns"
"#
    )
}

/// A tenant whose packets of `size` bytes arrive as `arrival` and whose
/// kernel (`cycles` on a PU) writes them to the host over the AXI link.
fn writer(name: &str, op: &str, size: u64, arrival: &str, cycles: u32) -> String {
    format!(
        r#"[[tenant]]
name = "{name}"
queue_cap = 4096
[tenant.workload]
pipeline = ["pu", "axi"]
op = "{op}"
size = "{size}B"
arrival = {arrival}
service = {{ dist = "cycles", base = {cycles}, per_byte = 0 }}
direction = "write"
"#
    )
}

/// OSMOSIS' DMA head-of-line scenario (`scenarios/osmosis-dma-hol.toml`)
/// with a Congestor writing `congestor` bytes and requests costing `setup`
/// ns, over 1 ms.
fn hol_scenario(congestor: u64, setup: u64) -> String {
    let engines = engines(16, setup);
    let victim = writer("victim", "write-out", 64, "{ poisson = \"1M/s\" }", 100);
    let congestor = writer("congestor", "write-out", congestor, "{ closed = 16 }", 100);
    format!(
        r#"# Generated by isola-experiments (osmosis::fragment), after scenarios/osmosis-dma-hol.toml.
[run]
seed = 42
duration = "1ms"
window = "100us"
solo = true

{engines}

{victim}
{congestor}"#
    )
}

/// One tenant writing `size`-byte packets to host memory at the 400 Gbit/s
/// ingress line rate (OSMOSIS Sec. 6.2: traces that saturate ingress), on
/// 4 clusters of 8 PUs at 1 GHz and the 512 Gbit/s AXI link, over 0.5 ms. The
/// kernel's 96 cycles: 32 PUs at OSMOSIS' 332 Mpps IO-write peak (Sec. 6.4).
fn io_scenario(size: u64, setup: u64) -> String {
    let kpps = 400e9 / 8.0 / size as f64 / 1e3;
    let engines = engines(32, setup);
    let writer = writer(
        "io-write",
        "io-write",
        size,
        &format!("{{ poisson = \"{kpps:.0}k/s\" }}"),
        96,
    );
    format!(
        r#"# Generated by isola-experiments (osmosis::fragment): OSMOSIS Fig. 11's IO write, alone.
[run]
seed = 42
duration = "500us"
window = "100us"

{engines}

{writer}"#
    )
}

/// A run of `policy` labelled `label`, DMA in fragments of `split` bytes.
fn run(policy: &str, label: &str, split: Option<u64>) -> PolicyRun {
    PolicyRun {
        name: policy.into(),
        label: label.into(),
        params: Default::default(),
        split,
        on: Vec::new(),
    }
}

/// Runs `text` (named `file`) under `runs`; the results in order, a
/// missing run an error (every run here is feasible).
fn results(
    runner: &mut Runner,
    o: &mut ExperimentResult,
    file: &str,
    text: &str,
    runs: &[PolicyRun],
    span: (f64, f64),
) -> anyhow::Result<Vec<PolicyResult>> {
    let out = runner.simulate(file, text, runs, span)?;
    let ok = succeeded(&out, &mut o.notes);
    anyhow::ensure!(ok.len() == runs.len(), "{file}: a run failed: {:?}", o.notes);
    Ok(ok.into_iter().map(|(_, r)| r.clone()).collect())
}

fn gbps(r: &PolicyResult, name: &str) -> f64 {
    tenant(r, name).map_or(0.0, |t| t.throughput_bps * 8e-9)
}

fn p50(r: &PolicyResult, name: &str) -> f64 {
    tenant(r, name).map_or(f64::NAN, |t| t.latency_ns.p50 as f64)
}

/// Fig. 10's runs at one Congestor size: `native` (PsPIN's one FIFO of DMA
/// commands, whole transfers, blocking), `wrr` (per-tenant queues, whole),
/// and WRR with 512 B fragments under each setup.
const HOL_LABELS: [&str; 4] = ["native", "wrr", "wrr+frag512 blocking", "wrr+frag512 pipelined"];

fn hol_sweep(runner: &mut Runner) -> anyhow::Result<ExperimentResult> {
    let mut o = ExperimentResult::new(&HOL_SWEEP, runner.live());
    let steps = (SIZES.len() * 2 + SETUPS.len()) as f64;
    // Per Congestor size: the four runs' results, in HOL_LABELS' order.
    let mut by_size: Vec<(u64, Vec<PolicyResult>)> = Vec::new();
    for (i, &size) in SIZES.iter().enumerate() {
        let span = |k: usize| ((i * 2 + k) as f64 / steps, 1.0 / steps);
        let file = format!("osmosis-frag-hol-{size}B");
        let whole = [run("fcfs", HOL_LABELS[0], None), run("wrr", HOL_LABELS[1], None)];
        let mut rs = results(
            runner,
            &mut o,
            &format!("{file}-blocking.toml"),
            &hol_scenario(size, BLOCKING_SETUP_NS),
            &[
                whole[0].clone(),
                whole[1].clone(),
                run("wrr", HOL_LABELS[2], Some(FRAGMENT)),
            ],
            span(0),
        )?;
        rs.extend(results(
            runner,
            &mut o,
            &format!("{file}-pipelined.toml"),
            &hol_scenario(size, PIPELINED_SETUP_NS),
            &[run("wrr", HOL_LABELS[3], Some(FRAGMENT))],
            span(1),
        )?);
        by_size.push((size, rs));
    }
    let rows: Vec<Vec<String>> = by_size
        .iter()
        .map(|(size, rs)| {
            let mut row = vec![format!("{size} B")];
            row.extend(rs.iter().map(|r| duration(p50(r, "victim"))));
            row.extend(rs.iter().map(|r| format!("{:.0}", gbps(r, "congestor"))));
            row
        })
        .collect();
    let mut header = vec!["Congestor write".to_string()];
    header.extend(HOL_LABELS.iter().map(|l| format!("victim p50, {l}")));
    header.extend(HOL_LABELS.iter().map(|l| format!("congestor Gbit/s, {l}")));
    o.tables.push(Table {
        caption: format!(
            "Fig. 10's axis: the Victim's median completion time (PU kernel and AXI write) and the Congestor's \
             write throughput against the Congestor's write size. Requests cost {BLOCKING_SETUP_NS} ns \
             (blocking) or {PIPELINED_SETUP_NS} ns (pipelined) of setup; native and wrr run whole transfers, \
             blocking"
        ),
        header,
        highlight_row: None,
        rows,
    });

    // The fragment size at a 4 KiB Congestor (the brief's sweep).
    let mut frag_rows = Vec::new();
    let mut frag_points: Vec<FragmentCurve> = Vec::new();
    for (k, (name, setup)) in SETUPS.iter().enumerate() {
        let runs: Vec<PolicyRun> = SIZES[..SIZES.len() - 1]
            .iter()
            .map(|&f| run("wrr", &format!("wrr+frag{f}"), Some(f)))
            .chain(std::iter::once(run("wrr", "wrr whole", None)))
            .collect();
        let rs = results(
            runner,
            &mut o,
            &format!("osmosis-frag-hol-4096B-{name}.toml"),
            &hol_scenario(4096, *setup),
            &runs,
            ((SIZES.len() * 2 + k) as f64 / steps, 1.0 / steps),
        )?;
        let points = SIZES
            .iter()
            .zip(&rs)
            .map(|(&f, r)| (f as f64, p50(r, "victim"), gbps(r, "congestor")))
            .collect();
        frag_points.push((*name, points));
    }
    for (i, f) in SIZES.iter().enumerate() {
        let mut row = vec![if i + 1 == SIZES.len() {
            "whole (4 KiB)".to_string()
        } else {
            format!("{f} B")
        }];
        row.extend(frag_points.iter().map(|(_, p)| duration(p[i].1)));
        row.extend(frag_points.iter().map(|(_, p)| format!("{:.0}", p[i].2)));
        frag_rows.push(row);
    }
    o.tables.push(Table {
        caption: "At a 4 KiB Congestor, under WRR: the Victim's median completion time and the Congestor's \
                  throughput against the fragment size, per request setup"
            .into(),
        header: std::iter::once("fragment".to_string())
            .chain(frag_points.iter().map(|(n, _)| format!("victim p50, {n}")))
            .chain(frag_points.iter().map(|(n, _)| format!("congestor Gbit/s, {n}")))
            .collect(),
        highlight_row: None,
        rows: frag_rows,
    });

    judge_hol(&mut o, &by_size, &frag_points);
    o.notes.push(format!(
        "Differs from the paper: PsPIN's cycle-accurate AXI is modelled as one link at 512 Gbit/s with \
         {BLOCKING_SETUP_NS} or {PIPELINED_SETUP_NS} ns per request and 8 B per burst of framing; the Victim's \
         kernel is 100 cycles; the Congestor keeps 16 writes in flight (the paper: 32 PUs). The setup is \
         the lever: the Congestor's slowdown under 512 B fragments is (8 (c + 8) ns) / (c + 64 ns) for \
         setup c, 1.1x at 1 ns, 2.0x at 10.7 ns, 3.2x at 30 ns (the top of Sec. 5.1's 10-30 cycles), while \
         the Victim's gain barely moves with c (it waits for at most one fragment). The paper's figure \
         is only in its text here: 'an order of magnitude' and 'around 2x' are read from it."
    ));
    o.figures
        .push(draw::fragments(&by_size, &HOL_LABELS, &frag_points));
    Ok(o)
}

/// Fig. 10's verdicts from the sweep by Congestor size.
fn judge_hol(o: &mut ExperimentResult, by_size: &[(u64, Vec<PolicyResult>)], by_fragment: &[FragmentCurve]) {
    let (Some((_, small)), Some((_, large))) = (by_size.first(), by_size.last()) else {
        return;
    };
    let growth = p50(&large[0], "victim") / p50(&small[0], "victim");
    o.directions.push(Check {
        what:
            "without fragmentation (native), the Victim's completion time grows 4-15x from a 64 B to a 4 KiB \
               Congestor"
                .into(),
        met: (4.0..=15.0).contains(&growth),
        detail: format!(
            "{}: native Victim p50 {} at 64 B, {} at 4 KiB ({growth:.1}x): it waits behind the Congestor's \
             queued whole bursts",
            verdict((4.0..=15.0).contains(&growth), growth >= 2.0),
            duration(p50(&small[0], "victim")),
            duration(p50(&large[0], "victim")),
        ),
    });
    let cut = p50(&large[0], "victim") / p50(&large[2], "victim");
    o.directions.push(Check {
        what: "fragmentation cuts the Victim's completion time by an order of magnitude (4 KiB Congestor)"
            .into(),
        met: cut >= 5.0,
        detail: format!(
            "{}: native {} against wrr+frag512 {} ({cut:.1}x; wrr whole {}): per-tenant queues remove the \
             Congestor's queue ahead of the Victim, fragments the rest of its burst",
            verdict(cut >= 8.0, cut >= 4.0),
            duration(p50(&large[0], "victim")),
            duration(p50(&large[2], "victim")),
            duration(p50(&large[1], "victim")),
        ),
    });
    let slow = gbps(&large[1], "congestor") / gbps(&large[2], "congestor");
    o.directions.push(Check {
        what: "software fragmentation slows the Congestor by around 2x, one handshake per fragment".into(),
        met: (1.5..=3.0).contains(&slow),
        detail: format!(
            "{}: 4 KiB Congestor {:.0} Gbit/s whole (wrr) against {:.0} in blocking 512 B fragments ({slow:.2}x): \
             each fragment carries 8 ns of data and {BLOCKING_SETUP_NS} ns of setup",
            verdict((1.7..=2.5).contains(&slow), (1.5..=3.0).contains(&slow)),
            gbps(&large[1], "congestor"),
            gbps(&large[2], "congestor"),
        ),
    });
    // Against whole transfers with the same pipelined requests (the last
    // point of the fragment sweep).
    let whole = by_fragment
        .iter()
        .find(|(name, _)| *name == "pipelined")
        .and_then(|(_, p)| p.last())
        .map_or(f64::NAN, |p| p.2);
    let kept = gbps(&large[3], "congestor") / whole;
    o.directions.push(Check {
        what: "hardware fragmentation (pipelined requests) keeps the Congestor's throughput".into(),
        met: kept >= 0.85,
        detail: format!(
            "{}: pipelined 512 B fragments keep {:.0}% of whole pipelined transfers' throughput ({:.0} of {:.0} \
             Gbit/s; {} ns setup)",
            verdict(kept >= 0.9, kept >= 0.8),
            kept * 100.0,
            gbps(&large[3], "congestor"),
            whole,
            PIPELINED_SETUP_NS
        ),
    });
}

/// `reproduced`, `reproduced under stated conditions` (the direction
/// holds, not the paper's magnitude) or `contradicted`.
fn verdict(magnitude: bool, direction: bool) -> &'static str {
    match (magnitude, direction) {
        (true, _) => "reproduced",
        (false, true) => "reproduced under stated conditions",
        (false, false) => "contradicted",
    }
}

fn io_overhead(runner: &mut Runner) -> anyhow::Result<ExperimentResult> {
    let mut o = ExperimentResult::new(&IO_OVERHEAD, runner.live());
    let steps = (SIZES.len() * SETUPS.len()) as f64;
    // Per setup: (size, whole Mpps, fragmented Mpps).
    let mut curves: Vec<IoCurve> = Vec::new();
    for (k, (name, setup)) in SETUPS.iter().enumerate() {
        let mut points = Vec::new();
        for (i, &size) in SIZES.iter().enumerate() {
            let rs = results(
                runner,
                &mut o,
                &format!("osmosis-frag-io-{size}B-{name}.toml"),
                &io_scenario(size, *setup),
                &[run("fcfs", "whole", None), run("fcfs", "frag512", Some(FRAGMENT))],
                ((k * SIZES.len() + i) as f64 / steps, 1.0 / steps),
            )?;
            let mpps = |r: &PolicyResult| tenant(r, "io-write").map_or(0.0, |t| t.throughput_ops * 1e-6);
            points.push((size, mpps(&rs[0]), mpps(&rs[1])));
        }
        curves.push((*name, points));
    }
    let overhead = |(_, whole, frag): &(u64, f64, f64)| 1.0 - frag / whole;
    let rows = SIZES
        .iter()
        .enumerate()
        .map(|(i, size)| {
            let mut row = vec![format!("{size} B")];
            for (_, points) in &curves {
                let p = &points[i];
                row.push(format!("{:.0} / {:.0}", p.1, p.2));
                row.push(format!("{:.1}%", overhead(p) * 100.0));
            }
            row
        })
        .collect();
    let mut header = vec!["transfer".to_string()];
    for (name, _) in &curves {
        header.push(format!("Mpps whole / frag512, {name}"));
        header.push(format!("overhead, {name}"));
    }
    o.tables.push(Table {
        caption:
            "Fig. 11's IO write alone: packets per second with whole DMA writes and with 512 B fragments, \
                  and the throughput fragmentation costs, per request setup"
                .into(),
        header,
        highlight_row: None,
        rows,
    });
    for (name, points) in &curves {
        let worst = points.iter().map(overhead).fold(0.0, f64::max);
        let fragmented: Vec<f64> = points.iter().filter(|p| p.0 > FRAGMENT).map(overhead).collect();
        let least = fragmented.iter().copied().fold(f64::INFINITY, f64::min);
        // 23% read off a figure: two points of slack.
        let within = (0.02..=0.25).contains(&worst);
        let why = if worst < 0.005 {
            "the link (512 Gbit/s) keeps headroom over the ingress (400 Gbit/s) even in fragments, so setups \
             never bind"
        } else if worst > 0.25 {
            "the link binds in fragments: 8 ns of data per fragment against its setup"
        } else {
            "the link binds in fragments, by a margin within the paper's range"
        };
        o.directions.push(Check {
            what: format!("{name} requests: fragmentation costs IO throughput within the paper's 2-23%"),
            met: within,
            detail: format!(
                "{}: {:.1}% to {:.1}% over transfers above {FRAGMENT} B (0% at or below it: nothing is cut); {why}",
                verdict(within, worst >= 0.005),
                least * 100.0,
                worst * 100.0
            ),
        });
    }
    let implied = fitted_setup(0.23);
    let live = live_overhead();
    o.notes.push(format!(
        "Differs from the paper: Fig. 11 is read from its text (2-23%, 332 Mpps for IO write); which fragment \
         size and which fragmentation mode it ran is not stated, so three setups run here. Transfers of at most \
         {FRAGMENT} B are never cut, so their overhead is 0 in the model, where the paper's smallest is 2%: \
         that 2% is not fragmentation per request but the wrapper's state keeping on the PU, which the model \
         leaves out. A link-bound 4 KiB write losing 23% implies a setup of {implied:.1} ns per 512 B \
         fragment (the `fitted` setup, {FITTED_SETUP_NS} ns); here whole writes of 1 KiB and more are held by \
         the 400 Gbit/s ingress, not the 512 Gbit/s link, so fragments lose only what the link then falls \
         short of the ingress, 1 - 4096 / (8 (c + 8.1 ns) x 50 B/ns) at setup c, less than on a link-bound \
         write; the paper's 332 Mpps of 64 B IO writes bound it \
         from above if the link were what held them (a write every 3.0 ns, 1.1 ns of it data); at the \
         fitted setup Fig. 10's ~2x Congestor slowdown needs fragments of ~175 B, not 512 B. \
         The model's ingress is Poisson at the line rate, the paper's a uniform trace; the PU kernel's 96 \
         cycles come from the 332 Mpps. Our live DMA engine pays {LIVE_SETUP_NS} ns per fragment (a \
         dispatch, a memcpy call and a completion on a CPU core, not an AXI burst): at that setup a 4 KiB \
         write in 512 B fragments would lose {:.0}% against whole, so fragmenting live costs ~100x what it \
         costs OSMOSIS' hardware.",
        live * 100.0
    ));
    o.figures.push(draw::io_overhead(&curves, FRAGMENT));
    Ok(o)
}

/// The throughput a 4 KiB write loses in 512 B fragments on the modelled
/// AXI link with the live engine's setup per request (closed form).
fn live_overhead() -> f64 {
    let spec = DmaSpec {
        bytes_per_sec: 64e9,
        max_payload: 4096,
        max_read_request: 4096,
        tlp_overhead: 8,
        tlp_rate: None,
        request_overhead: LIVE_SETUP_NS,
        pcie: None,
    };
    let alone = |bytes| isola_sim::device::DmaLink::alone(&spec, Direction::Write, bytes);
    1.0 - alone(4096) / (8.0 * alone(FRAGMENT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_scenarios_parse() {
        for size in SIZES {
            for (_, setup) in SETUPS {
                isola_model::Scenario::parse(&hol_scenario(size, setup), "hol.toml").unwrap();
                isola_model::Scenario::parse(&io_scenario(size, setup), "io.toml").unwrap();
            }
        }
    }

    /// The fitted setup, put back into the link model, gives the paper's
    /// 23% for a 4 KiB write in 512 B fragments (framing moves it a little).
    #[test]
    fn fitted_setup_gives_the_papers_overhead_on_the_model() {
        let c = fitted_setup(0.23);
        assert!((2.8..3.0).contains(&c), "{c}");
        let spec = DmaSpec {
            bytes_per_sec: 64e9,
            max_payload: 4096,
            max_read_request: 4096,
            tlp_overhead: 8,
            tlp_rate: None,
            request_overhead: c.round() as u64,
            pcie: None,
        };
        let alone = |bytes| isola_sim::device::DmaLink::alone(&spec, Direction::Write, bytes);
        let overhead = 1.0 - alone(4096) / (8.0 * alone(FRAGMENT));
        assert!((overhead - 0.23).abs() < 0.02, "{overhead}");
    }
}
