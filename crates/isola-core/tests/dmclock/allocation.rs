//! mClock's closed-form allocation, computed from the SLOs, and the checks
//! of a run against it.
//!
//! Every tenant of a case is backlogged throughout (closed loop with more
//! tasks outstanding than slots), so mClock (Gulati et al., OSDI 2010, §3)
//! gives tenant `i` the engine-time share `clamp(w_i x lambda, r_i, l_i)`,
//! with `lambda` the one level at which the shares fill the capacity: the
//! larger of its reservation and its weighted share, never above its limit,
//! and what a limit leaves is shared by weight among the others. When the
//! limits sum to less than the capacity, every tenant gets its limit and
//! the rest stays idle (limits are hard); when the reservations fill it,
//! every tenant gets its reservation.

use crate::support::{Outcome, Setup};
use isola_core::{Nanos, RateSpec, RateUnit, Slo, NANOS_PER_SEC};

/// Engine time (in slots) that `spec` is worth for tasks of `cost` ns and
/// `bytes` bytes.
pub fn slots_of(spec: RateSpec, cost: Nanos, bytes: u64) -> f64 {
    tasks_per_sec(spec, bytes) * cost as f64 / NANOS_PER_SEC as f64
}

/// Tasks per second that `spec` is worth for tasks of `bytes` bytes.
pub fn tasks_per_sec(spec: RateSpec, bytes: u64) -> f64 {
    match spec.rate.unit() {
        RateUnit::OpsPerSec => spec.rate.per_sec(),
        RateUnit::BytesPerSec => spec.rate.per_sec() / bytes as f64,
    }
}

/// Units of `spec`'s rate one task of `bytes` bytes is worth.
fn units_per_task(spec: RateSpec, bytes: u64) -> f64 {
    match spec.rate.unit() {
        RateUnit::OpsPerSec => 1.0,
        RateUnit::BytesPerSec => bytes as f64,
    }
}

/// mClock's share of `capacity` slots for each backlogged tenant (see the
/// module documentation), in slots.
pub fn allocation(capacity: f64, slos: &[Slo], cost: &[Nanos], bytes: &[u64]) -> Vec<f64> {
    let floor: Vec<f64> = (0..slos.len())
        .map(|i| {
            slos[i]
                .reservation
                .map_or(0.0, |r| slots_of(r, cost[i], bytes[i]))
        })
        .collect();
    let cap: Vec<f64> = (0..slos.len())
        .map(|i| {
            slos[i]
                .limit
                .map_or(f64::INFINITY, |l| slots_of(l, cost[i], bytes[i]))
        })
        .collect();
    let at = |lambda: f64| -> Vec<f64> {
        (0..slos.len())
            .map(|i| (slos[i].weight * lambda).clamp(floor[i], cap[i]))
            .collect()
    };
    if cap.iter().sum::<f64>() <= capacity {
        return cap;
    }
    if floor.iter().sum::<f64>() >= capacity {
        return floor;
    }
    // The total is continuous and non-decreasing in lambda: bisect.
    let (mut lo, mut hi) = (
        0.0,
        capacity / slos.iter().map(|s| s.weight).fold(f64::MAX, f64::min),
    );
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if at(mid).iter().sum::<f64>() < capacity {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    at(hi)
}

/// What a run on one engine is checked against.
pub struct Expected<'a> {
    /// Case and policy, for messages.
    pub name: String,
    /// Every tenant's SLO on this engine.
    pub slos: &'a [Slo],
    /// Whether the policy shares by weight as mClock does, so that the
    /// closed-form allocation itself must hold (else only reservations and
    /// limits are checked).
    pub shares: bool,
    /// Allowed distance, in tasks, between a tenant's count and its closed
    /// form (see [`share_tolerance`]).
    pub tolerance: f64,
}

/// The tolerance, in tasks per tenant, of a weighted share over a run. The
/// run's counts are whole tasks taken at its last dispatch: up to `slots`
/// tasks of a tenant are in service then, and a fair queue's lag is one
/// task per tenant (SFQ/mClock tags; DRR's deficit is below one task of
/// the largest cost). WRR serves `w_i / w_min` tasks per turn, so its lag
/// is one turn.
pub fn share_tolerance(policy: &str, slots: u32, slos: &[Slo]) -> f64 {
    let w_min = slos.iter().map(|s| s.weight).fold(f64::MAX, f64::min);
    let w_max = slos.iter().map(|s| s.weight).fold(0.0, f64::max);
    let turn = if policy == "wrr" {
        (w_max / w_min).ceil()
    } else {
        1.0
    };
    slots as f64 + turn + 1.0
}

/// The time of the last dispatch of the run: every tenant was backlogged
/// on every engine until then (the closed loop stops at that dispatch).
pub fn horizon(out: &Outcome) -> Nanos {
    out.dispatch_times.iter().flatten().copied().max().unwrap_or(0)
}

/// Tasks of `tenant` dispatched on `engine` before `t`.
pub fn served_before(out: &Outcome, engine: usize, tenant: usize, t: Nanos) -> usize {
    out.engine_dispatch_times[engine][tenant]
        .iter()
        .filter(|&&d| d < t)
        .count()
}

/// The most units of `spec` a tenant's dispatches `times` (tasks of `bytes`
/// bytes) put in any window of `window` ns.
fn busiest_window(times: &[Nanos], window: Nanos, per_task: f64) -> f64 {
    let (mut most, mut start) = (0usize, 0usize);
    for (end, &t) in times.iter().enumerate() {
        while times[start] + window <= t {
            start += 1;
        }
        most = most.max(end + 1 - start);
    }
    most as f64 * per_task
}

/// Checks the run on `engine` (see [`Expected`]): for every policy, each
/// reservation is met and each limit holds (in every window); where the
/// policy shares by weight, each tenant's count is its closed form.
/// Returns what does not hold.
pub fn check(setup: &Setup, out: &Outcome, engine: usize, want: &Expected<'_>) -> Vec<String> {
    let mut failed = Vec::new();
    let mut expect = |ok: bool, why: String| {
        if !ok {
            failed.push(why);
        }
    };
    let t_end = horizon(out);
    let secs = t_end as f64 / NANOS_PER_SEC as f64;
    let c_max = setup.cost.iter().copied().max().unwrap_or(0);
    let shares = allocation(setup.slots as f64, want.slos, &setup.cost, &setup.bytes);
    for (i, slo) in want.slos.iter().enumerate() {
        let (cost, bytes) = (setup.cost[i], setup.bytes[i]);
        let n = served_before(out, engine, i, t_end) as f64;
        // A reservation is due at k / r (k = 0, 1, ...) from the start; a
        // due one waits at most one task (the longest in service) for a slot.
        if let Some(r) = slo.reservation {
            let due = tasks_per_sec(r, bytes) * (t_end - c_max.min(t_end)) as f64 / NANOS_PER_SEC as f64;
            expect(
                n >= due.floor(),
                format!(
                    "{}: tenant {i} served {n} tasks, its reservation {due:.1}",
                    want.name
                ),
            );
        }
        // GCRA: at most rate x W + burst + one task in any window W.
        if let Some(l) = slo.limit {
            let times = &out.engine_dispatch_times[engine][i];
            for window in [t_end / 50, t_end / 7, t_end + 1] {
                let units = busiest_window(times, window.max(1), units_per_task(l, bytes));
                let bound = l.rate.per_sec() * window as f64 / NANOS_PER_SEC as f64
                    + l.burst
                    + units_per_task(l, bytes);
                expect(
                    units <= bound + 1e-9,
                    format!(
                        "{}: tenant {i} had {units} units in a {window} ns window, limit {bound:.1}",
                        want.name
                    ),
                );
            }
        }
        if want.shares {
            let expected = shares[i] * secs * NANOS_PER_SEC as f64 / cost as f64;
            expect(
                (n - expected).abs() <= want.tolerance,
                format!(
                    "{}: tenant {i} served {n} tasks, closed form {expected:.1} (share {:.4} of {} slots) +- {}",
                    want.name, shares[i], setup.slots, want.tolerance
                ),
            );
        }
    }
    failed
}

#[test]
fn the_closed_form_of_the_mclock_paper_examples() {
    let slo = |w: f64, r: Option<f64>, l: Option<f64>| Slo {
        reservation: r.map(|r| RateSpec {
            rate: isola_core::Rate::ops_per_sec(r).unwrap(),
            burst: 0.0,
        }),
        limit: l.map(|l| RateSpec {
            rate: isola_core::Rate::ops_per_sec(l).unwrap(),
            burst: 0.0,
        }),
        ..Slo::weighted(w)
    };
    // 1 us tasks on one slot: 1e6 ops/s of capacity.
    let costs = [1_000; 3];
    let bytes = [1; 3];
    let got = allocation(1.0, &[slo(1.0, None, None), slo(3.0, None, None)], &costs, &bytes);
    assert!((got[0] - 0.25).abs() < 1e-9 && (got[1] - 0.75).abs() < 1e-9);
    // A reservation above the weighted share is the share.
    let got = allocation(
        1.0,
        &[
            slo(1.0, Some(300_000.0), None),
            slo(1.0, None, None),
            slo(2.0, None, None),
        ],
        &costs,
        &bytes,
    );
    let want = [0.3, 0.7 / 3.0, 1.4 / 3.0];
    assert!(got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-9), "{got:?}");
    // A binding limit leaves the rest to the others.
    let got = allocation(
        1.0,
        &[slo(3.0, None, Some(100_000.0)), slo(1.0, None, None)],
        &costs,
        &bytes,
    );
    assert!(
        (got[0] - 0.1).abs() < 1e-9 && (got[1] - 0.9).abs() < 1e-9,
        "{got:?}"
    );
}
