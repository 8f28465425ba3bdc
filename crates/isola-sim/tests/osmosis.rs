//! OSMOSIS' contention experiments on the simulated SmartNIC, from the
//! scenario files in `scenarios/`.

use isola_model::scenario::SizeDist;
use isola_model::{PolicyResult, Scenario};
use isola_sim::{run_policy, simulate};
use std::path::PathBuf;

fn scenario(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name);
    Scenario::load(path).expect("the shipped scenario is valid")
}

fn by_label<'a>(results: &'a [PolicyResult], label: &str) -> &'a PolicyResult {
    results.iter().find(|p| p.policy == label).expect("policy ran")
}

/// Figure 4 / Figure 9: with a 2x costlier kernel, round robin hands the
/// Congestor about 2/3 of the PUs; WLBVT splits them evenly.
#[test]
fn pu_contention_rr_versus_wlbvt() {
    let s = scenario("osmosis-pu-contention.toml");
    let report = simulate(&s, &["rr".into(), "wlbvt".into()], None, |_, _, _| {}).unwrap();
    let rr = by_label(&report.policies, "rr");
    let congestor = rr.tenants[1].engine_time_share;
    assert!(
        (0.6..=0.72).contains(&congestor),
        "rr: congestor holds {congestor}"
    );
    assert!(rr.jain < 0.95, "rr Jain {}", rr.jain);
    let wlbvt = by_label(&report.policies, "wlbvt");
    for t in &wlbvt.tenants {
        assert!(
            (0.45..=0.55).contains(&t.engine_time_share),
            "wlbvt: {} holds {}",
            t.name,
            t.engine_time_share
        );
    }
    assert!(wlbvt.jain >= 0.98, "wlbvt Jain {}", wlbvt.jain);
    // Fair over time too, not just on average (the first window fills up).
    let worst = wlbvt.series[1..].iter().map(|p| p.jain).fold(1.0, f64::min);
    assert!(worst >= 0.95, "worst windowed Jain {worst}");
}

/// Figure 10: the Victim's 64 B writes wait behind the Congestor's growing
/// writes without fragmentation; 512 B fragmentation removes most of it.
#[test]
fn dma_head_of_line_blocking_and_fragmentation() {
    let mut s = scenario("osmosis-dma-hol.toml");
    let victim = 0;
    let runs = s.run.policies.clone();
    let fcfs = runs.iter().find(|p| p.label == "fcfs").unwrap();
    let frag = runs.iter().find(|p| p.label == "wrr-frag512").unwrap();
    let solo = run_policy(&s, fcfs, s.run.seed, Some(victim), None)
        .unwrap()
        .tenants[victim]
        .latency_ns
        .p50;
    let mut medians = Vec::new();
    for size in [64u64, 1024, 4096] {
        s.tenants[1].workload_mut().size = SizeDist::Fixed(size);
        let native = run_policy(&s, fcfs, s.run.seed, None, None).unwrap().tenants[victim]
            .latency_ns
            .p50;
        medians.push(native);
        if size == 4096 {
            assert!(
                native >= 4 * solo,
                "no fragmentation: victim p50 {native} ns vs solo {solo} ns"
            );
            let fragmented = run_policy(&s, frag, s.run.seed, None, None).unwrap().tenants[victim]
                .latency_ns
                .p50;
            assert!(
                native >= 3 * fragmented,
                "512 B fragments: {fragmented} ns vs {native} ns unfragmented"
            );
        }
    }
    assert!(
        medians.windows(2).all(|w| w[0] <= w[1]),
        "victim p50 grows with congestor size: {medians:?}"
    );
}
