use super::reference::PercentileWindows;
use super::windows::{percentile, TailCounts, TailWindows};
use super::*;
use crate::engine::{EngineId, EngineKind};
use crate::scheduler::Scheduler;

use crate::tenant::Slo;

use crate::policy::test_support::submit;

fn scheduler(tenants: usize, params: &[(&str, &str)]) -> Scheduler {
    let slo = Slo {
        queue_cap: 100_000,
        ..Slo::weighted(1.0)
    };
    crate::policy::test_support::scheduler(
        "ipipe",
        EngineKind::ProcessingUnits,
        1,
        None,
        &vec![slo; tenants],
        params,
    )
}

/// Serves one slot, each task taking its predicted cost, submitting what
/// `arrivals` gives (time, tenant, cost) when its time comes; returns
/// (dispatch time, task id, tenant) in order.
fn run(s: &mut Scheduler, arrivals: &[(Nanos, usize, u64)]) -> Vec<(Nanos, u64, usize)> {
    let mut out = Vec::new();
    let mut next = 0;
    let mut now = 0;
    loop {
        while next < arrivals.len() && arrivals[next].0 <= now {
            let (at, t, cost) = arrivals[next];
            submit(s, at, next as u64, t, cost);
            next += 1;
        }
        if let Some(d) = s.next(now, EngineId(0)) {
            out.push((now, d.task.id.0, d.task.tenant.index()));
            now += d.predicted;
            s.complete(now, d.id, d.predicted).unwrap();
        } else if next < arrivals.len() {
            now = arrivals[next].0;
        } else {
            return out;
        }
    }
}

#[test]
fn first_come_first_served_while_latency_is_low() {
    let mut s = scheduler(3, &[("tail_threshold", "1000000")]);
    // Bursts from three tenants, interleaved, more than one slot can take
    // at once: queues form, and are served in arrival order.
    let arrivals: Vec<_> = (0..300u64)
        .map(|k| (k / 10 * 5_000, (k * 7 % 3) as usize, 1_000 + (k % 4) * 200))
        .collect();
    let out = run(&mut s, &arrivals);
    let ids: Vec<u64> = out.iter().map(|o| o.1).collect();
    assert_eq!(ids, (0..300).collect::<Vec<_>>());
}

/// Tenant 1 floods 10 us tasks (twice what the slot can serve) while
/// tenant 0 sends a 1 us task every 25 us. Under FCFS tenant 0 waits
/// behind the growing flood; once tail latency passes 50 us, tenant 1
/// (the most dispersed service) moves to DRR and tenant 0 waits for at
/// most the task in service. When the flood has drained and tenant 1
/// sends small tasks, its tail falls and it returns to FCFS: a burst from
/// both tenants is then served in arrival order.
#[test]
fn a_tenant_with_a_high_tail_moves_to_drr_and_back() {
    let mut arrivals = Vec::new();
    for k in 0..300u64 {
        arrivals.push((k * 5_000, 1, 10_000));
    }
    for k in 0..60u64 {
        arrivals.push((1_000 + k * 25_000, 0, 1_000));
    }
    let calm = 4_000_000;
    for k in 0..100u64 {
        arrivals.push((calm + k * 10_000, (k % 2) as usize, 1_000));
    }
    let burst = 6_000_000;
    for k in 0..40u64 {
        arrivals.push((burst + k / 8 * 100, (k % 2) as usize, 1_000));
    }
    arrivals.sort_by_key(|a| a.0);
    let burst_ids: Vec<u64> = (0..arrivals.len() as u64)
        .filter(|&i| arrivals[i as usize].0 >= burst)
        .collect();
    let params = [("tail_threshold", "50000"), ("window", "8")];
    let run_with = |extra: &[(&str, &str)]| {
        let mut p = params.to_vec();
        p.extend_from_slice(extra);
        run(&mut scheduler(2, &p), &arrivals)
    };
    let wait = |o: &(Nanos, u64, usize)| o.0 - arrivals[o.1 as usize].0;
    let light_waits = |out: &[(Nanos, u64, usize)]| -> Vec<Nanos> {
        out.iter().filter(|o| o.2 == 0 && o.0 < calm).map(wait).collect()
    };
    let burst_order = |out: &[(Nanos, u64, usize)]| -> Vec<u64> {
        out.iter().filter(|o| o.0 >= burst).map(|o| o.1).collect()
    };

    let out = run_with(&[]);
    let waits = light_waits(&out);
    assert_eq!(waits.len(), 60);
    // FCFS at first: tenant 0 waits behind more than one flood task...
    assert!(waits[..3].iter().any(|&w| w > 10_000), "{waits:?}");
    // ...then only for the task in service.
    assert!(waits[5..].iter().all(|&w| w <= 10_000), "{waits:?}");
    // Tenant 1 came back: the burst is served in arrival order.
    assert_eq!(burst_order(&out), burst_ids);

    // Controls. A threshold nobody reaches keeps FCFS: tenant 0 waits
    // behind the whole flood.
    let fcfs = run_with(&[("tail_threshold", "1000000000")]);
    assert!(light_waits(&fcfs)[30..].iter().all(|&w| w > 100_000));
    assert_eq!(burst_order(&fcfs), burst_ids);
    // Without the way back, tenant 1 stays in DRR and the FCFS group
    // (tenant 0) goes first in the burst.
    let stuck = run_with(&[("return_threshold", "1")]);
    assert_ne!(burst_order(&stuck), burst_ids);
    let first_half: Vec<usize> = stuck
        .iter()
        .filter(|o| o.0 >= burst)
        .take(20)
        .map(|o| o.2)
        .collect();
    assert!(first_half.iter().all(|&t| t == 0), "{first_half:?}");
}

/// A demoted tenant is not starved by a steady FCFS load: tenant 0's
/// 1 us tasks arrive as fast as the slot serves them, so it always has
/// work; tenant 1 sends a 200 us task every ms and is moved to DRR by
/// the tail it causes. Each of its tasks still goes within one of
/// tenant 0's tasks plus one of its own (before the groups took turns,
/// it got one task in 200 ms).
#[test]
fn a_demoted_tenant_is_not_starved_by_a_steady_fcfs_load() {
    let mut arrivals: Vec<(Nanos, usize, u64)> = (0..40_000u64).map(|k| (k * 1_000, 0, 1_000)).collect();
    arrivals.extend((0..30u64).map(|k| (500 + k * 1_000_000, 1, 200_000)));
    arrivals.sort_by_key(|a| a.0);
    let out = run(&mut scheduler(2, &[]), &arrivals);
    let heavy: Vec<Nanos> = out
        .iter()
        .filter(|o| o.2 == 1)
        .map(|o| o.0 - arrivals[o.1 as usize].0)
        .collect();
    assert_eq!(heavy.len(), 30);
    assert!(heavy.iter().all(|&w| w <= 201_000), "{heavy:?}");
}

#[test]
fn percentile_is_nearest_rank() {
    let q = || (1..=100u64).rev();
    let mut scratch = Vec::new();
    assert_eq!(percentile(q(), 99.0, &mut scratch), 99);
    assert_eq!(percentile(q(), 100.0, &mut scratch), 100);
    assert_eq!(percentile(q(), 50.0, &mut scratch), 50);
    assert_eq!(percentile(std::iter::empty(), 99.0, &mut scratch), 0);
}

mod equivalence {
    use super::super::reference;
    use super::*;
    use crate::engine::EngineKind;
    use crate::policy::replay;
    use proptest::prelude::*;

    fn params(window: usize, percentile: f64, tail: u64, back: f64) -> IpipeParams {
        IpipeParams {
            tail_threshold: tail as f64,
            return_threshold: back,
            percentile,
            window,
            quantum: None,
        }
    }

    proptest! {
        /// Sample by sample, with tenants moving between the groups and the
        /// FCFS windows cleared: the counts answer every question as the
        /// percentile selections do.
        #[test]
        fn counts_answer_as_the_percentile(
            tenants in 1usize..6,
            window in 1usize..40,
            percentile in prop::sample::select(vec![1.0, 33.3, 50.0, 90.0, 99.0, 99.9, 100.0]),
            tail in 1u64..2_000,
            back in 0.5f64..2_000.0,
            steps in prop::collection::vec((0usize..6, 0u8..8, 0u64..2_500, 0u64..2_500), 1..400),
        ) {
            let p = params(window, percentile, tail, back);
            let mut fast = TailCounts::new(tenants, &p);
            let mut slow = PercentileWindows::new(tenants, &p);
            let mut in_drr = vec![false; tenants];
            for (t, what, latency, service) in steps {
                let t = t % tenants;
                match what {
                    0 => {
                        fast.clear(t);
                        slow.clear(t);
                        in_drr[t] = !in_drr[t];
                    }
                    1 => {
                        fast.clear_fcfs(&in_drr);
                        slow.clear_fcfs(&in_drr);
                    }
                    _ => {
                        let n = fast.record(t, in_drr[t], latency, service);
                        prop_assert_eq!(n, slow.record(t, in_drr[t], latency, service));
                        if in_drr[t] {
                            prop_assert_eq!(fast.tail_below_return(t), slow.tail_below_return(t));
                        } else {
                            prop_assert_eq!(fast.tail_above_threshold(t), slow.tail_above_threshold(t));
                        }
                        prop_assert_eq!(fast.culprit(&in_drr), slow.culprit(&in_drr));
                    }
                }
            }
        }

        /// Whole histories through the scheduler: iPipe with the counts
        /// dispatches what it did with the percentile selections, step by
        /// step, for any tenant set, engine and parameters (thresholds and
        /// windows small enough that tenants move both ways).
        #[test]
        fn decides_as_the_percentile_selection(
            setup in replay::setup(300, 0.0),
            tail in 1u64..30_000,
            back in prop::option::of(1u64..30_000),
            window in 1usize..24,
            percentile in prop::sample::select(vec!["50", "90", "99", "100"]),
            quantum in prop::sample::select(vec!["auto", "700"]),
            ops in replay::ops(4_000, 1..500),
        ) {
            let back = back.map_or("auto".to_string(), |b| b.min(tail).to_string());
            let params = replay::params([
                ("tail_threshold", tail.to_string()),
                ("return_threshold", back),
                ("window", window.to_string()),
                ("percentile", percentile.to_string()),
                ("quantum", quantum.to_string()),
            ]);
            let kind = EngineKind::Accelerator;
            replay::same_dispatches("ipipe", reference::INFO, kind, &params, &setup, &ops)?;
        }
    }
}
