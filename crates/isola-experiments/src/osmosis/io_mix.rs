//! OSMOSIS Figs. 12b and 13 on the IO mix, beyond the policy table:
//! every tenant's flow completion time (FCT) against PsPIN's own baseline
//! (round robin on the PUs, its DMA command FIFO) on an AXI path with one
//! command at a time and with reads and writes on their own channels
//! ([`duplex`]); each tenant's kernel completion time under OSMOSIS
//! against round robin (the Victims' falls, the Congestors' median rises);
//! and what the DMA fragment size trades: the Victims' completion time
//! against the Congestors' FCT, every fragment one more request paying its
//! setup on the AXI link (Sec. 6.3: "N additional protocol handshakes"),
//! at the pipelined setup of [`super::fragment`] (a blocking 10 ns request
//! overloads the mix's DMA path at every fragment size, and the paper's
//! 332 Mpps of IO writes rule it out: docs/results.md).

use super::draw;
use super::fragment::PIPELINED_SETUP_NS;
use super::{osmosis_configuration, pspin_baseline};
use crate::experiment::{Check, ExperimentResult};
use crate::judge::{succeeded, tenant};
use crate::runner::Runner;
use isola_model::PolicyResult;
use isola_report::text::duration;
use isola_report::Table;

/// The fragment sizes swept, bytes (then whole transfers).
pub(super) const FRAGMENTS: [u64; 6] = [64, 128, 256, 512, 1024, 2048];

/// The request setups swept, labelled (ns per DMA request).
const SETUPS: [(&str, u64); 1] = [("pipelined", PIPELINED_SETUP_NS)];

/// One setup's sweep: per fragment size (`None`: whole transfers), the
/// run's result.
pub(super) type Sweep = (&'static str, Vec<(Option<u64>, PolicyResult)>);

/// A tenant's median completion time, ns.
pub(super) fn p50(r: &PolicyResult, name: &str) -> f64 {
    tenant(r, name).map_or(f64::NAN, |t| t.latency_ns.p50 as f64)
}

/// A tenant's flow completion time, ns.
pub(super) fn fct(r: &PolicyResult, name: &str) -> f64 {
    tenant(r, name).map_or(f64::NAN, |t| t.flow_completion_ns as f64)
}

/// A tenant's mean slowdown against its solo run.
pub(super) fn slowdown(r: &PolicyResult, name: &str) -> f64 {
    tenant(r, name).and_then(|t| t.slowdown).unwrap_or(f64::NAN)
}

/// Fig. 13's two statements: under `osmosis` against `rr`, each of
/// `victims`' median completion time more than 5x lower, each of
/// `congestors`' higher (the paper: up to 8x).
pub(super) fn judge_completion(
    o: &mut ExperimentResult,
    ok: &[(&str, &PolicyResult)],
    victims: &[&str],
    congestors: &[&str],
) {
    let find = |l: &str| ok.iter().find(|(x, _)| *x == l).map(|(_, r)| *r);
    let (Some(rr), Some(os)) = (find("rr"), find("osmosis")) else {
        return;
    };
    // Each tenant's median under osmosis over rr's.
    let ratio = |n: &str| p50(os, n) / p50(rr, n);
    let show = |names: &[&str]| {
        names
            .iter()
            .map(|n| {
                format!(
                    "{n} {} -> {} (x{:.3})",
                    duration(p50(rr, n)),
                    duration(p50(os, n)),
                    ratio(n)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    o.directions.push(Check {
        what:
            "osmosis: the Victims' median kernel completion time more than 5x lower than under rr (Fig. 13)"
                .into(),
        met: !victims.is_empty() && victims.iter().all(|v| ratio(v) < 0.2),
        detail: format!("rr -> osmosis: {}", show(victims)),
    });
    let most = congestors.iter().map(|c| ratio(c)).fold(0.0, f64::max);
    o.directions.push(Check {
        what:
            "osmosis: the Congestors' median kernel completion time higher than under rr (Fig. 13: up to 8x)"
                .into(),
        met: !congestors.is_empty() && congestors.iter().all(|c| ratio(c) > 1.0),
        detail: format!(
            "rr -> osmosis: {}; at most {most:.2}x, where the paper's is up to 8x: in this model round robin \
             already holds the Congestors' packets in their queues behind the backlog the oversubscribed \
             path builds, so the share WLBVT gives them adds less",
            show(congestors)
        ),
    });
}

/// `text` with `line` (found exactly once) replaced by `with`.
fn edit(text: &str, line: &str, with: &str) -> anyhow::Result<String> {
    anyhow::ensure!(
        text.matches(line).count() == 1,
        "the IO mix has not one `{}`",
        line.trim()
    );
    Ok(text.replacen(line, with, 1))
}

/// The IO mix's AXI path, as written (one command at a time, reads and
/// writes by turns) and with two commands in flight on a link whose reads
/// and writes have their own wires, AXI's separate read and write channels
/// (OSMOSIS Sec. 6.4: "the utilized DMA paths are opposite to each other").
const PATHS: [(&str, &str); 2] = [("one command", "slots = 1\n"), ("duplex", "slots = 2\n")];

/// Fig. 12b's "FCT lower for every tenant" against the baseline the paper
/// ran, PsPIN's (`pspin`: round robin on the PUs, the DMA engine's command
/// FIFO), and against per-tenant round robin everywhere (`rr`), on each of
/// [`PATHS`]: a table and the direction, judged on the duplex path; the
/// one-command path is the run without the mechanism (no idle direction
/// for a FIFO to waste). The runs per path (`pspin`, `rr`, `osmosis`).
pub(super) fn duplex(
    runner: &mut Runner,
    o: &mut ExperimentResult,
    file: &str,
    text: &str,
    names: &[String],
) -> anyhow::Result<Vec<(&'static str, Vec<PolicyResult>)>> {
    let runs = [
        pspin_baseline(),
        super::fragment::run("rr", "rr", None),
        osmosis_configuration(Some(512)),
    ];
    let mut by_path = Vec::new();
    for (k, (path, slots)) in PATHS.iter().enumerate() {
        let text = edit(text, PATHS[0].1, slots)?;
        let out = runner.simulate(
            &format!("{file} ({path})"),
            &text,
            &runs,
            (0.5 + 0.1 * k as f64, 0.1),
        )?;
        let ok = succeeded(&out, &mut o.notes);
        anyhow::ensure!(ok.len() == runs.len(), "{file}: a {path} run failed");
        by_path.push((*path, ok.into_iter().map(|(_, r)| r.clone()).collect::<Vec<_>>()));
    }
    let mut rows = Vec::new();
    for (path, rs) in &by_path {
        for (run, r) in runs.iter().zip(rs) {
            let mut row = vec![path.to_string(), run.label.clone()];
            row.extend(names.iter().map(|n| {
                let change = fct(r, n) / fct(&rs[0], n) - 1.0;
                format!("{} ({:+.1}%)", duration(fct(r, n)), change * 100.0)
            }));
            rows.push(row);
        }
    }
    let mut header = vec!["AXI path".to_string(), "policy".to_string()];
    header.extend(names.iter().map(|n| format!("{n} FCT (vs pspin)")));
    o.tables.push(Table {
        caption: "Fig. 12b against the paper's baseline: each tenant's FCT under PsPIN's (round robin on the PUs, \
                  one command FIFO on the DMA engine), round robin everywhere, and OSMOSIS, on the AXI path with \
                  one command at a time and with reads and writes on their own channels (two commands in flight)"
            .into(),
        header,
        highlight_row: None,
        rows,
    });
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    o.figures
        .push(draw::fct_against_baseline(names, &labels, &by_path));
    let change = |rs: &[PolicyResult], n: &str| fct(&rs[2], n) / fct(&rs[0], n) - 1.0;
    let show = |rs: &[PolicyResult]| {
        names
            .iter()
            .map(|n| format!("{n} {:+.1}%", change(rs, n) * 100.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (one, two) = (&by_path[0].1, &by_path[1].1);
    o.directions.push(Check {
        what:
            "osmosis: FCT lower for every tenant than PsPIN's baseline (RR on the PUs, a DMA command FIFO), \
               reads and writes on their own AXI channels (Fig. 12b)"
                .into(),
        met: names.iter().all(|n| change(two, n) < 0.0),
        detail: format!(
            "duplex path: {}; one command at a time: {} (a FIFO wastes nothing when only one command is on \
             the path; with two, it idles one direction whenever the two oldest commands go the same way, \
             which per-tenant turns avoid)",
            show(two),
            show(one)
        ),
    });
    Ok(by_path)
}

/// `text` (a scenario whose DMA engine has `tlp_overhead = "8B"` once)
/// with every DMA request paying `setup` ns.
fn with_setup(text: &str, setup: u64) -> anyhow::Result<String> {
    let line = "tlp_overhead = \"8B\"\n";
    edit(text, line, &format!("{line}request_overhead = \"{setup}ns\"\n"))
}

/// The fragment-size sweep of the IO mix (`file`, `text`) under OSMOSIS'
/// configuration, per setup: a table, a figure and the trade-off's check.
pub(super) fn sweep(
    runner: &mut Runner,
    o: &mut ExperimentResult,
    file: &str,
    text: &str,
    victims: &[&str],
    congestors: &[&str],
) -> anyhow::Result<()> {
    let mut sweeps: Vec<Sweep> = Vec::new();
    for (k, (name, setup)) in SETUPS.iter().enumerate() {
        let sizes: Vec<Option<u64>> = FRAGMENTS.iter().map(|&f| Some(f)).chain([None]).collect();
        let runs: Vec<_> = sizes
            .iter()
            .map(|f| {
                let mut r = osmosis_configuration(*f);
                r.label = f.map_or("osmosis whole".into(), |f| format!("osmosis+frag{f}"));
                r
            })
            .collect();
        let span = (
            0.7 + 0.3 * k as f64 / SETUPS.len() as f64,
            0.3 / SETUPS.len() as f64,
        );
        let out = runner.simulate(
            &format!("{file} ({name} {setup} ns requests)"),
            &with_setup(text, *setup)?,
            &runs,
            span,
        )?;
        let ok = succeeded(&out, &mut o.notes);
        anyhow::ensure!(ok.len() == runs.len(), "{file}: a fragment run failed");
        sweeps.push((
            name,
            sizes
                .into_iter()
                .zip(ok.into_iter().map(|(_, r)| r.clone()))
                .collect(),
        ));
    }
    let pair = |r: &PolicyResult, names: &[&str], f: &dyn Fn(&PolicyResult, &str) -> String| {
        names.iter().map(|n| f(r, n)).collect::<Vec<_>>().join(" / ")
    };
    let rows = (0..=FRAGMENTS.len())
        .map(|i| {
            let mut row = vec![FRAGMENTS.get(i).map_or("whole".to_string(), |f| format!("{f} B"))];
            for (_, s) in &sweeps {
                let r = &s[i].1;
                row.push(pair(r, victims, &|r, n| duration(p50(r, n))));
                row.push(pair(r, victims, &|r, n| format!("{:.2}", slowdown(r, n))));
                row.push(pair(r, congestors, &|r, n| duration(fct(r, n))));
            }
            row
        })
        .collect();
    let mut header = vec!["fragment".to_string()];
    for (name, _) in &sweeps {
        header.push(format!("victims' p50 ({}), {name}", victims.join(" / ")));
        header.push(format!("victims' slowdown, {name}"));
        header.push(format!("congestors' FCT ({}), {name}", congestors.join(" / ")));
    }
    o.tables.push(Table {
        caption: format!(
            "The IO mix under OSMOSIS' configuration (WLBVT on the PUs, WRR on the DMA path) against the DMA \
             fragment size: the Victims' median completion time and slowdown against their solo runs, the \
             Congestors' flow completion time; DMA requests cost {PIPELINED_SETUP_NS} ns (pipelined) of \
             setup, which the mix above leaves out"
        ),
        header,
        highlight_row: None,
        rows,
    });
    judge_tradeoff(o, &sweeps, victims, congestors);
    o.figures.push(draw::fragment_sweep(&sweeps, victims, congestors));
    Ok(())
}

/// Sec. 6.3's trade-off on the sweep: the smallest fragments give the
/// Victims a lower median than whole transfers and the Congestors a later
/// FCT.
fn judge_tradeoff(o: &mut ExperimentResult, sweeps: &[Sweep], victims: &[&str], congestors: &[&str]) {
    let Some((setup, s)) = sweeps.first() else {
        return;
    };
    let (Some((_, small)), Some((_, whole))) = (s.first(), s.last()) else {
        return;
    };
    let faster = victims.iter().all(|v| p50(small, v) < p50(whole, v));
    let later = congestors.iter().all(|c| fct(small, c) > fct(whole, c));
    let show = |f: &dyn Fn(&PolicyResult, &str) -> f64, names: &[&str]| {
        names
            .iter()
            .map(|n| format!("{n} {} -> {}", duration(f(whole, n)), duration(f(small, n))))
            .collect::<Vec<_>>()
            .join(", ")
    };
    o.directions.push(Check {
        what: "smaller DMA fragments lower the Victims' completion time at the cost of the Congestors' FCT \
               (Sec. 6.3: one handshake per fragment)"
            .into(),
        met: faster && later,
        detail: format!(
            "{setup} requests, whole -> {} B fragments: p50 {}; FCT {}; whole 4 KiB transfers hold a Victim's \
             request behind a Congestor's under WRR's turns, each fragment adds a setup to the Congestors' bytes",
            FRAGMENTS[0],
            show(&p50, victims),
            show(&fct, congestors)
        ),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The setup goes into the mix's one DMA engine and nowhere else.
    /// Against PsPIN's DMA command FIFO, OSMOSIS lowers the Congestors'
    /// FCT only where the FIFO wastes the path: with two commands in
    /// flight on separate read and write wires; with one command at a time
    /// the path is work-conserving under any order and they gain nothing.
    #[test]
    fn a_fifo_wastes_only_the_duplex_path() {
        let text = include_str!("../../../../scenarios/repro/osmosis-io.toml");
        let mut progress = crate::NoProgress;
        let mut runner = Runner::new(false, None, &mut progress);
        let mut o = ExperimentResult::new(&super::super::IO, false);
        let congestors = ["write-congestor".to_string(), "read-congestor".to_string()];
        let paths = duplex(&mut runner, &mut o, "io.toml", text, &congestors).unwrap();
        let gain = |rs: &[PolicyResult], n: &str| fct(&rs[2], n) / fct(&rs[0], n) - 1.0;
        for n in &congestors {
            assert!(
                gain(&paths[0].1, n) > -0.005,
                "one command: {n} {}",
                gain(&paths[0].1, n)
            );
            assert!(
                gain(&paths[1].1, n) < -0.01,
                "duplex: {n} {}",
                gain(&paths[1].1, n)
            );
        }
        assert!(o.directions.last().unwrap().met);
    }

    #[test]
    fn the_setup_reaches_the_dma_engine() {
        let text = include_str!("../../../../scenarios/repro/osmosis-io.toml");
        let s = isola_model::Scenario::parse(&with_setup(text, 10).unwrap(), "io.toml").unwrap();
        let dma: Vec<_> = s
            .engines
            .iter()
            .filter_map(|e| match &e.device {
                isola_model::scenario::DeviceSpec::Dma(d) => Some(d.request_overhead),
                _ => None,
            })
            .collect();
        assert_eq!(dma, [10]);
        assert!(with_setup("no dma here", 10).is_err());
        // The duplex path: two commands on the DMA engine, the PUs as written.
        let s =
            isola_model::Scenario::parse(&edit(text, PATHS[0].1, PATHS[1].1).unwrap(), "io.toml").unwrap();
        let slots: Vec<u32> = s.engines.iter().map(|e| e.slots).collect();
        assert_eq!(slots, [32, 2]);
    }
}
