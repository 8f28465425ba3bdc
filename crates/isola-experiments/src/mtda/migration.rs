//! iPipe with its host migration (Figs. 4-5 and 12): MTDA blames iPipe's
//! lower throughput and its fluctuation on "migration tasks between hosts
//! and DPUs". iPipe moves an actor to the host when the DPU is overloaded
//! and back when it is not; here (a workload's `migrate`,
//! `isola_sim::migrate`) every tenant may move: when the Arm cores' queued
//! work per core is over `up`, the tenant with the most queued there sends
//! its new requests over PCIe to the host's cores, and the last to move
//! comes back when it is under `down`. MTDA gives no threshold, host core
//! count, check period or crossing cost (nor do iPipe's own figures appear
//! in it), so each is an assumption, and the runs sweep the ones the
//! verdict could turn on.

use super::scenario::{self, Host, Setup};
use super::{run_of, total_gbps};
use crate::experiment::ExperimentResult;
use crate::judge::direction;
use crate::runner::{PolicyOutcome, Runner};
use isola_model::PolicyResult;

/// Figs. 4-5's variants (50 ms runs): 2 host cores (iPipe's point is to
/// spare the host's cores) at `up` 1 ms and 0.1 ms of queued work a core,
/// `down` a tenth of `up`, checked every millisecond; a moved request
/// free on the Arm cores, and at 0.1 ms also one that still takes half
/// its cost there (the forwarding MTDA calls migration's overhead).
pub(super) const TABLE_IV: [Host; 3] = [
    host(1_000_000, 1_000_000, 0.0),
    host(100_000, 1_000_000, 0.0),
    host(100_000, 1_000_000, 0.5),
];

/// Fig. 12's variants (45 s in 1 s windows): 2 host cores, `up` 1 ms and
/// `down` 0.1 ms a core, checked every 10 ms (moves far quicker than a
/// window) or every second (as slow as one).
pub(super) const STABILITY: [Host; 2] = [
    host(1_000_000, 10_000_000, 0.0),
    host(1_000_000, 1_000_000_000, 0.0),
];

/// Every variant's host: 2 cores, moving out over `up_ns` of queued work
/// a core and back under a tenth of it, checked every `every_ns`, a moved
/// request keeping `keep` of its cost on the Arm cores.
const fn host(up_ns: u64, every_ns: u64, keep: f64) -> Host {
    Host {
        cores: 2,
        up_ns,
        down_ns: up_ns / 10,
        every_ns,
        keep,
    }
}

/// A variant's label: `ipipe+host/<cores>c/up<up>/every<every>[/keep<k>]`.
pub(super) fn label(h: &Host) -> String {
    let ms = |ns: u64| match ns {
        n if n >= 1_000_000_000 => format!("{}s", n / 1_000_000_000),
        n if n >= 1_000_000 => format!("{}ms", n / 1_000_000),
        n => format!("{}us", n / 1_000),
    };
    let keep = if h.keep > 0.0 {
        format!("/keep{}", h.keep)
    } else {
        String::new()
    };
    format!(
        "ipipe+host/{}c/up{}/every{}{keep}",
        h.cores,
        ms(h.up_ns),
        ms(h.every_ns)
    )
}

/// iPipe on `text_of(setup with host)` for each of `hosts`, labelled by
/// [`label`]; `span` is the part of the experiment's progress.
pub(super) fn runs(
    runner: &mut Runner,
    file: &str,
    setup: Setup,
    hosts: &[Host],
    text_of: impl Fn(&Setup) -> String,
    span: (f64, f64),
) -> anyhow::Result<Vec<PolicyOutcome>> {
    let mut out = Vec::new();
    for (k, h) in hosts.iter().enumerate() {
        let s = Setup {
            host: Some(*h),
            ..setup
        };
        let part = (
            span.0 + span.1 * k as f64 / hosts.len() as f64,
            span.1 / hosts.len() as f64,
        );
        let run = [run_of("ipipe", &label(h), &[])];
        out.extend(runner.simulate(file, &text_of(&s), &run, part)?);
    }
    Ok(out)
}

/// Figs. 4-5: [`TABLE_IV`]'s runs for `n` tenants (simulated only; no
/// Fair2, shown `-`).
pub(super) fn table_iv(
    runner: &mut Runner,
    n: usize,
    balanced: bool,
    duration: &str,
    setup: Setup,
) -> anyhow::Result<Vec<PolicyOutcome>> {
    // No solo runs (Fair2): the direction is throughput's, and a solo
    // run of a migrating tenant would migrate too.
    let text_of =
        |s: &Setup| scenario::table_iv_with(n, balanced, duration, s).replace("solo = true", "solo = false");
    runs(
        runner,
        &format!("mtda-{n}-host.toml"),
        setup,
        &TABLE_IV,
        text_of,
        (0.0, 0.0),
    )
}

/// Figs. 4-5's direction against iPipe with migration: MTDA's throughput
/// above each variant's (the paper: up to +143.2% over iPipe), and a
/// note of each variant's moves.
pub(super) fn table_iv_directions(
    o: &mut ExperimentResult,
    ok: &[(&str, &PolicyResult)],
    costs: scenario::Costs,
) {
    let labels: Vec<String> = TABLE_IV.iter().map(label).collect();
    let baselines: Vec<&str> = labels.iter().map(String::as_str).collect();
    // One direction a variant: which assumptions the verdict turns on.
    for ours in ["mtda", "mtda/cores"] {
        for b in &baselines {
            o.directions.extend(direction(
                ok,
                ours,
                &[b],
                &format!(
                    "throughput at 4 tenants ({}) against iPipe with host migration (paper: up to +143.2% over iPipe)",
                    costs.name()
                ),
                false,
                |v| format!("{} Gbit/s", isola_report::text::si(v)),
                |r| Some((total_gbps(r) * 10.0).round() / 10.0),
            ));
        }
    }
    o.notes.push(moves_note(
        ok,
        &baselines,
        &format!("4 tenants, {}", costs.name()),
    ));
}

/// A note of each of `labels`' moves, per tenant.
pub(super) fn moves_note(ok: &[(&str, &PolicyResult)], labels: &[&str], what: &str) -> String {
    let each: Vec<String> = ok
        .iter()
        .filter(|(l, _)| labels.contains(l))
        .map(|(l, r)| {
            let moves: Vec<String> = r.migrations.iter().map(u64::to_string).collect();
            format!(
                "`{l}` {} Gbit/s, moves per tenant {}",
                fmt2(total_gbps(r)),
                moves.join("/")
            )
        })
        .collect();
    format!(
        "iPipe with host migration ({what}; assumed: the host's cores as fast as the Arm cores, the crossing a \
         PCIe Gen4 x8 DMA of each request, `down` a tenth of `up`, `keep` the share of a moved request's cost \
         left on the Arm cores; the paper gives none of them): {}",
        each.join("; ")
    )
}

fn fmt2(v: f64) -> String {
    format!("{v:.2}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant's scenario parses with the host and the crossing,
    /// every tenant migrating, and the labels are distinct.
    #[test]
    fn variants_build_migrating_scenarios() {
        for h in TABLE_IV.iter().chain(&STABILITY) {
            let setup = Setup {
                host: Some(*h),
                ..Setup::default()
            };
            let s =
                isola_model::Scenario::parse(&scenario::table_iv_with(4, false, "10ms", &setup), "h.toml")
                    .unwrap();
            assert_eq!(s.engines.len(), 3);
            assert!(s
                .tenants
                .iter()
                .all(|t| t.workload().migrate.is_some_and(|m| m.up == h.up_ns)));
        }
        let labels: std::collections::BTreeSet<String> =
            TABLE_IV.iter().chain(&STABILITY).map(label).collect();
        assert_eq!(labels.len(), TABLE_IV.len() + STABILITY.len());
    }
}
