//! Shares of engine time under each policy, against the closed-form shares
//! their algorithms promise.

mod support;

use isola_core::metrics::jain_index;
use support::{run, Setup};

/// Two always-backlogged tenants, weights 1 and 3, equal task cost: over
/// 10,000 dispatches the service ratio is within 2% of 1:3.
#[test]
fn weighted_policies_give_one_to_three() {
    for policy in ["wrr", "drr", "sfq", "bvt", "wlbvt", "mclock", "slack"] {
        for slots in [1, 4] {
            let out = run(&Setup::closed(
                policy,
                slots,
                &[1.0, 3.0],
                &[1_000, 1_000],
                10_000,
            ));
            assert_eq!(out.dispatched.iter().sum::<u64>(), 10_000);
            let ratio = out.busy[1] as f64 / out.busy[0] as f64;
            assert!(
                (ratio / 3.0 - 1.0).abs() <= 0.02,
                "{policy} with {slots} slots: ratio {ratio:.4}, want 3 +- 2%"
            );
        }
    }
}

/// The unweighted baselines ignore weights: that is what makes them baselines.
#[test]
fn baselines_ignore_weights() {
    for policy in ["fcfs", "rr"] {
        let out = run(&Setup::closed(policy, 1, &[1.0, 3.0], &[1_000, 1_000], 10_000));
        let ratio = out.busy[1] as f64 / out.busy[0] as f64;
        assert!((ratio - 1.0).abs() < 0.05, "{policy}: ratio {ratio}");
    }
}

/// OSMOSIS Figure 4 in miniature: 8 slots, equal weights, tenant B's tasks
/// cost twice tenant A's. Round robin hands out tasks evenly, so B holds about
/// 2/3 of slot-time; cost-aware policies give each about half.
#[test]
fn osmosis_figure_4_cost_aware_policies_equalise_slot_time() {
    let costs = [1_000, 2_000];
    let rr = run(&Setup::closed("rr", 8, &[1.0, 1.0], &costs, 20_000));
    let b = rr.share(1);
    let jain_rr = jain_index(&[rr.share(0), b]).unwrap();
    println!("rr: B share {b:.3}, Jain {jain_rr:.3}");
    assert!((0.6..=0.72).contains(&b), "rr: B holds {b}");
    assert!(jain_rr < 0.95, "rr Jain {jain_rr}");
    for policy in ["wlbvt", "sfq", "drr"] {
        let out = run(&Setup::closed(policy, 8, &[1.0, 1.0], &costs, 20_000));
        let (a, b) = (out.share(0), out.share(1));
        let jain = jain_index(&[a, b]).unwrap();
        println!("{policy}: A {a:.3} B {b:.3}, Jain {jain:.4}");
        assert!(
            (0.45..=0.55).contains(&a) && (0.45..=0.55).contains(&b),
            "{policy}: {a} / {b}"
        );
        assert!(jain >= 0.99, "{policy} Jain {jain}");
        // Fair in every window too, not only on average (after the first window).
        let series = out.windows.jain_series(&[1.0, 1.0]);
        let worst = series[1..series.len() - 1].iter().cloned().fold(1.0, f64::min);
        assert!(worst >= 0.95, "{policy}: worst windowed Jain {worst}");
    }
}

/// Static partition is not work-conserving: a lone tenant keeps to its slots.
#[test]
fn static_partition_keeps_to_owned_slots() {
    let mut setup = Setup::closed("static", 8, &[1.0, 3.0], &[1_000, 1_000], 4_000);
    let out = run(&setup);
    let ratio = out.busy[1] as f64 / out.busy[0] as f64;
    assert!((ratio - 3.0).abs() < 0.01, "ratio {ratio}");
    // Tenant 0 alone still gets only its 2 of 8 slots: 2 tasks per 1000 ns.
    setup.outstanding = 0;
    setup.arrivals = (0..100)
        .map(|_| support::Arrival {
            at: 0,
            tenant: 0,
            cost: 1_000,
            bytes: 1,
        })
        .collect();
    let out = run(&setup);
    assert_eq!(out.dispatched[0], 100);
    assert_eq!(out.end, 50 * 1_000);
}

/// BVT and SFQ charge measured service time (the prediction at dispatch,
/// corrected at completion), so a tenant whose tasks take twice their
/// prediction gets half as many; round robin counts tasks and gives it two
/// thirds of the engine. (tests/charge_measured.rs: every policy, k from
/// 0.01 to 100.)
#[test]
fn bvt_and_sfq_correct_predictions_with_measured_time() {
    let mut setup = Setup::closed("bvt", 1, &[1.0, 1.0], &[1_000, 1_000], 10_000);
    setup.actual = vec![2_000, 1_000];
    for policy in ["bvt", "sfq"] {
        setup.policy = policy.into();
        let out = run(&setup);
        assert!((out.share(0) - 0.5).abs() < 0.01, "{policy}: {}", out.share(0));
    }
    setup.policy = "rr".into();
    let out = run(&setup);
    assert!((out.share(0) - 2.0 / 3.0).abs() < 0.01, "rr: {}", out.share(0));
}

/// DRR with a quantum far smaller than the tasks still shares by weight (and
/// decides in O(1) rounds rather than one loop per quantum).
#[test]
fn drr_with_a_tiny_quantum_still_shares_by_weight() {
    let setup = Setup::closed("drr", 1, &[1.0, 3.0], &[100_000, 100_000], 4_000).param("quantum", "0.001");
    let out = run(&setup);
    let ratio = out.busy[1] as f64 / out.busy[0] as f64;
    assert!((ratio / 3.0 - 1.0).abs() <= 0.02, "ratio {ratio}");
}
