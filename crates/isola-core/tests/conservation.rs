//! Nothing vanishes: with finite arrivals, every task accepted by the
//! scheduler is dispatched exactly once and completes, under every policy and
//! with random shapers and memory quotas; every refused task was refused
//! with a typed reason while its channel was really full or its tenant at
//! its quota; and every byte held against a quota is released.

mod support;

use isola_core::{Rate, RateSpec, RejectReason, Slo, TaskId};
use proptest::prelude::*;
use std::collections::HashMap;
use support::{run, Arrival, Setup};

#[derive(Debug, Clone)]
struct TenantCase {
    weight: f64,
    cap: usize,
    limit: Option<(f64, f64)>,
    reservation: Option<f64>,
    quota: Option<u64>,
}

fn tenant() -> impl Strategy<Value = TenantCase> {
    (
        0.25f64..8.0,
        1usize..12,
        proptest::option::of((2e5f64..2e6, 0.0f64..4.0)),
        proptest::option::of(1e4f64..2e5),
        proptest::option::of(1u64..60_000),
    )
        .prop_map(|(weight, cap, limit, reservation, quota)| TenantCase {
            weight,
            cap,
            limit,
            reservation,
            quota,
        })
}

fn slo(c: &TenantCase) -> Slo {
    let spec = |per_sec, burst| RateSpec {
        rate: Rate::ops_per_sec(per_sec).unwrap(),
        burst,
    };
    Slo {
        queue_cap: c.cap,
        memory_quota: c.quota,
        limit: c.limit.map(|(r, b)| spec(r, b)),
        // Keep the reservation at or under the limit, as SLO validation requires.
        reservation: c
            .reservation
            .map(|r| spec(c.limit.map_or(r, |(l, _)| r.min(l)), 0.0)),
        ..Slo::weighted(c.weight)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_accepted_task_is_dispatched_once_and_completes(
        tenants in proptest::collection::vec(tenant(), 1..5),
        slots in 1u32..5,
        fragment in proptest::option::of(64u64..8_192),
        raw in proptest::collection::vec((0u64..200_000, 0usize..8, 1u64..5_000, 1u64..20_000), 0..250),
    ) {
        let mut arrivals: Vec<Arrival> = raw
            .iter()
            .map(|&(at, t, cost, bytes)| Arrival { at, tenant: t % tenants.len(), cost, bytes })
            .collect();
        arrivals.sort_by_key(|a| a.at);
        for info in isola_core::POLICIES {
            let setup = Setup {
                outstanding: 0,
                max_dispatches: u64::MAX,
                arrivals: arrivals.clone(),
                slos: tenants.iter().map(slo).collect(),
                fragment,
                ..Setup::closed(info.name, slots, &[1.0], &[1], 0)
            };
            // The driver asserts that each ChannelFull came from a full channel.
            let out = run(&setup);
            prop_assert_eq!(out.accepted.len() + out.rejected.len(), arrivals.len(), "{}", info.name);
            for (_, reason) in &out.rejected {
                prop_assert!(
                    matches!(reason, RejectReason::ChannelFull { .. } | RejectReason::OverQuota { .. }),
                    "{}: {:?}", info.name, reason
                );
            }
            // Each accepted task is served exactly once: its dispatches
            // (fragments, or the whole task) tile its bytes, in order.
            let bytes = &out.submitted_bytes;
            let mut next_offset: HashMap<TaskId, u64> = HashMap::new();
            for (id, frag) in &out.dispatched_ids {
                let at = next_offset.entry(*id).or_default();
                match frag {
                    None => prop_assert_eq!(*at, 0, "{}: whole task {:?} dispatched twice", info.name, id),
                    Some(f) => prop_assert_eq!(f.offset, *at, "{}: fragment out of order", info.name),
                }
                *at += frag.map_or(bytes.get(id).copied().unwrap_or(0), |f| f.bytes);
            }
            prop_assert_eq!(next_offset.len(), out.accepted.len(), "{}", info.name);
            let done: Vec<TaskId> = out.completions.iter().filter(|c| c.task_done).map(|c| c.task).collect();
            let done_once: HashMap<TaskId, usize> = done.iter().fold(HashMap::new(), |mut m, id| {
                *m.entry(*id).or_default() += 1;
                m
            });
            prop_assert_eq!(done.len(), out.accepted.len(), "{}: task completions", info.name);
            for id in &out.accepted {
                prop_assert_eq!(done_once.get(id), Some(&1), "{}: task {:?}", info.name, id);
                prop_assert_eq!(next_offset.get(id), bytes.get(id), "{}: bytes of {:?}", info.name, id);
            }
            prop_assert_eq!(out.scheduler.in_service(), 0);
            for t in 0..tenants.len() {
                let id = isola_core::TenantId(t as u32);
                prop_assert_eq!(out.scheduler.queued(isola_core::EngineId(0), id), 0);
                prop_assert_eq!(out.scheduler.held(id), 0, "{}: bytes still held", info.name);
            }
        }
    }
}
