//! Reservations, limits and the at-limit behaviour (the scheduler's shapers,
//! which mClock's R and L tags are), and mClock's no-credit-for-idle rule.

mod support;

use isola_core::{Rate, RateSpec, Slo};
use support::{run, Arrival, Setup};

const CAPACITY_OPS: f64 = 1e6; // one slot, 1 us per task

fn ops(per_sec: f64, burst: f64) -> Option<RateSpec> {
    Some(RateSpec {
        rate: Rate::ops_per_sec(per_sec).unwrap(),
        burst,
    })
}

fn rate(dispatched: u64, end: u64) -> f64 {
    dispatched as f64 / (end as f64 / 1e9)
}

/// A light tenant with a reservation it asks for gets at least that rate
/// while capacity exists, however heavy the other tenant's weight.
#[test]
fn reservation_is_met_against_a_heavy_tenant() {
    let mut setup = Setup::closed("mclock", 1, &[1.0, 100.0], &[1_000, 1_000], 20_000);
    // Control: without a reservation the light tenant gets about 1%.
    let out = run(&setup);
    assert!(out.share(0) < 0.02, "control share {}", out.share(0));
    setup.slos[0].reservation = ops(200_000.0, 0.0);
    let out = run(&setup);
    let got = rate(out.dispatched[0], out.end);
    assert!(got >= 200_000.0 * 0.99, "reserved tenant got {got:.0} ops/s");
    // Work beyond the reservation is still shared by weight, so the heavy
    // tenant gets the rest of the capacity.
    let total = rate(out.dispatched.iter().sum(), out.end);
    assert!(total >= CAPACITY_OPS * 0.99, "capacity used {total:.0}");
    assert!(
        out.scheduler
            .stats(isola_core::EngineId(0), isola_core::TenantId(0))
            .unwrap()
            .reserved_dispatches
            > 0
    );
}

/// Under every policy, a limited tenant never exceeds limit x W + burst + one
/// task in any window W, and the other tenant takes what it leaves.
#[test]
fn limit_holds_in_every_window_under_every_policy() {
    let (limit, burst) = (100_000.0, 4.0);
    for info in isola_core::POLICIES {
        let mut setup = Setup::closed(info.name, 2, &[100.0, 1.0], &[1_000, 1_000], 20_000);
        setup.slos[0].limit = ops(limit, burst);
        let out = run(&setup);
        let times = &out.dispatch_times[0];
        for window in [10_000u64, 100_000, 1_000_000] {
            let bound = limit * window as f64 / 1e9 + burst + 1.0;
            for (i, &t0) in times.iter().enumerate() {
                let n = times[i..].iter().take_while(|&&t| t < t0 + window).count();
                assert!(
                    n as f64 <= bound,
                    "{}: {n} tasks in {window} ns from {t0}, bound {bound}",
                    info.name
                );
            }
        }
        let got = rate(out.dispatched[0], out.end);
        assert!(
            got > limit * 0.95 && got < limit * 1.05,
            "{}: limited tenant at {got:.0}",
            info.name
        );
        if info.work_conserving {
            let total = rate(out.dispatched.iter().sum(), out.end);
            assert!(
                total >= 2.0 * CAPACITY_OPS * 0.98,
                "{}: capacity used {total:.0}",
                info.name
            );
        }
    }
}

/// `at_limit = wait` leaves an idle engine idle; `allow` serves the limited
/// tenant anyway when nobody else wants the slot.
#[test]
fn at_limit_wait_versus_allow() {
    let mut setup = Setup::closed("mclock", 1, &[1.0], &[1_000], 5_000);
    setup.slos[0].limit = ops(100_000.0, 0.0);
    let waited = rate(run(&setup).dispatched[0], run(&setup).end);
    assert!(waited <= 100_000.0 * 1.01, "wait: {waited:.0}");
    let allowed = run(&setup.param("at_limit", "allow"));
    let allowed = rate(allowed.dispatched[0], allowed.end);
    assert!(allowed >= CAPACITY_OPS * 0.99, "allow: {allowed:.0}");
}

/// A tenant that returns from idle gets its share from then on, not the
/// service it missed while idle.
#[test]
fn returning_tenant_gets_no_credit_for_idle_time() {
    for policy in ["mclock", "sfq", "bvt", "drr", "slack"] {
        let task = |at, tenant| Arrival {
            at,
            tenant,
            cost: 1_000,
            bytes: 1,
        };
        let mut arrivals: Vec<Arrival> = (0..3_000).map(|_| task(0, 1)).collect();
        arrivals.extend((0..500).map(|_| task(0, 0)));
        // Tenant 0 finishes its first batch by ~1 ms, idles, returns at 1.5 ms.
        arrivals.extend((0..1_000).map(|_| task(1_500_000, 0)));
        arrivals.sort_by_key(|a| a.at);
        let setup = Setup {
            outstanding: 0,
            arrivals,
            max_dispatches: u64::MAX,
            slos: vec![
                Slo {
                    queue_cap: 5_000,
                    ..Slo::weighted(1.0)
                };
                2
            ],
            ..Setup::closed(policy, 1, &[1.0, 1.0], &[1_000, 1_000], 0)
        };
        let out = run(&setup);
        assert!(out.rejected.is_empty());
        let after: Vec<_> = out.dispatch_times[0]
            .iter()
            .filter(|&&t| (1_500_000..2_500_000).contains(&t))
            .collect();
        // In the millisecond after it returns it gets half the engine (500
        // tasks), not the 500 extra it missed while idle.
        assert!(
            (480..=520).contains(&after.len()),
            "{policy}: {} tasks in the ms after returning",
            after.len()
        );
    }
}

/// The no-credit rule must also hold when the other tenant's channel happens
/// to be empty at the moment of return (its only task is in service): the
/// floor then comes from the policy's virtual time, not from a ready tenant.
#[test]
fn returning_tenant_gets_no_credit_when_nobody_else_is_queued() {
    for policy in ["mclock", "sfq", "bvt", "drr", "slack"] {
        // Tenant 1 is closed-loop with one task outstanding on a 1-slot
        // engine; tenant 0 returns mid-task with a burst of 2000 tasks.
        let mut setup = Setup::closed(policy, 1, &[1.0, 1.0], &[1_000, 1_000], 3_000);
        setup.outstanding = 0;
        setup.slos = vec![
            Slo {
                queue_cap: 5_000,
                ..Slo::weighted(1.0)
            };
            2
        ];
        setup.closed_loop = vec![1];
        setup.arrivals = (0..2_000)
            .map(|_| Arrival {
                at: 1_000_500,
                tenant: 0,
                cost: 1_000,
                bytes: 1,
            })
            .collect();
        let out = run(&setup);
        let b_after = out.dispatch_times[1]
            .iter()
            .filter(|&&t| (1_001_000..2_001_000).contains(&t))
            .count();
        assert!(
            (450..=550).contains(&b_after),
            "{policy}: tenant 1 dispatched {b_after} times (fair: 500)"
        );
    }
}

/// Reservations are met whatever their interval, including intervals that
/// are not a multiple of the task time (late reservation service is caught
/// up while the tenant stays backlogged, as mClock's R tags do).
#[test]
fn reservations_are_met_at_any_rate() {
    for r in [200_000.0, 300_000.0, 400_000.0, 600_000.0] {
        let mut setup = Setup::closed("mclock", 1, &[1.0, 100.0], &[1_000, 1_000], 30_000);
        setup.slos[0].reservation = ops(r, 0.0);
        let out = run(&setup);
        let got = rate(out.dispatched[0], out.end);
        assert!(got >= 0.99 * r, "reservation {r}: got {got:.0}");
    }
}

/// As in mClock, a tenant gets the larger of its reservation and its share,
/// not their sum: 75% reserved with equal weights gives a 0.75 share.
#[test]
fn reservation_and_share_take_the_larger() {
    let mut setup = Setup::closed("mclock", 1, &[1.0, 1.0], &[1_000, 1_000], 40_000);
    setup.slos[0].reservation = ops(750_000.0, 0.0);
    let share = run(&setup).share(0);
    assert!((share - 0.75).abs() < 0.01, "share {share}");
}
