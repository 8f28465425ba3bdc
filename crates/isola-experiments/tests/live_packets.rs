//! Scenarios with ingress matching, live over real UDP packets through an
//! in-process isolad (`isola_experiments::live_packets`): OSMOSIS' PU
//! contention (Figures 4 and 9) at a small scale.
//!
//! The reference is OSMOSIS' own claim: two tenants backlogged on the
//! processing units, one paying twice the other's cycles per packet;
//! per-packet round robin gives the costlier one 2/3 of the PU time (Jain's
//! index over the two shares 0.9), WLBVT an even split (Jain 1). The live
//! run must show WLBVT's Jain's index over the tenants' PU time above
//! round robin's.

use isola_experiments::live::{check_live, run_live};
use isola_model::Scenario;
use std::path::Path;

/// The PU contention scenario, its run cut to `duration_ns` of scenario
/// time and to `policies`.
fn pu_contention(duration_ns: u64, policies: &[&str]) -> Scenario {
    let path = format!(
        "{}/../../scenarios/osmosis-pu-contention.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut s = Scenario::load(Path::new(&path)).unwrap();
    s.run.duration = Some(duration_ns);
    s.run.policies.retain(|p| policies.contains(&p.label.as_str()));
    s
}

/// Jain's index of two shares (the closed form).
fn jain2(a: f64, b: f64) -> f64 {
    (a + b).powi(2) / (2.0 * (a * a + b * b))
}

#[test]
fn pu_contention_runs_over_packets_and_wlbvt_is_fairer_than_round_robin() {
    let scenario = pu_contention(4_000_000, &["rr", "wlbvt", "fcfs", "drr", "sfq"]);
    check_live(&scenario).unwrap();
    let report = run_live(&scenario, &[], None, &mut |_, _, _| {}).unwrap();
    assert_eq!(report.policies.len(), 5);
    for p in &report.policies {
        for w in &p.warnings {
            eprintln!("{}: {w}", p.policy);
        }
        let shares: Vec<f64> = p.tenants.iter().map(|t| t.engine_time_share).collect();
        eprintln!(
            "{}: jain {:.4}, shares {:?}, completed {:?}, rejected {:?}, incomplete {:?}",
            p.policy,
            p.jain,
            shares,
            p.tenants.iter().map(|t| t.completed).collect::<Vec<_>>(),
            p.tenants.iter().map(|t| t.rejected).collect::<Vec<_>>(),
            p.tenants.iter().map(|t| t.incomplete).collect::<Vec<_>>(),
        );
        for t in &p.tenants {
            assert!(
                t.completed > 0,
                "{}: tenant `{}` completed no packet",
                p.policy,
                t.name
            );
        }
        // The run's index is the closed form over the two PU time shares
        // (equal weights).
        assert!(
            (p.jain - jain2(shares[0], shares[1])).abs() < 1e-6,
            "{}: {}",
            p.policy,
            p.jain
        );
    }
    let policy = |name: &str| report.policies.iter().find(|p| p.policy == name).unwrap();
    let jain = |name: &str| policy(name).jain;
    // Round robin alternates packets, so the Congestor, twice as costly a
    // packet, gets about 2/3 of the PU time (calibration is within 5%;
    // the machine's noise adds more): well above half.
    let rr_congestor = policy("rr").tenants[1].engine_time_share;
    assert!(
        rr_congestor > 0.55,
        "rr gave the Congestor {rr_congestor:.3} of the PU time"
    );
    assert!(
        jain("wlbvt") > jain("rr"),
        "WLBVT's Jain index {} is not above round robin's {}",
        jain("wlbvt"),
        jain("rr")
    );
}

/// A matched scenario with a tenant left unmatched cannot run over packets,
/// and says which tenant and why.
#[test]
fn a_partly_matched_scenario_is_refused() {
    let mut s = pu_contention(1_000_000, &["rr"]);
    s.tenants[1].flow_match = None;
    let err = check_live(&s).unwrap_err().to_string();
    assert!(err.contains("congestor") && err.contains("no `match`"), "{err}");
}
