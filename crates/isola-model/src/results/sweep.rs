//! A scenario run over several seeds (`isola sim --seeds N`): each seed's
//! report, and for every policy and tenant the spread of its figures over
//! the seeds.

use super::{SimReport, Spread};
use serde::Serialize;

/// A scenario over several seeds.
#[derive(Debug, Clone, Serialize)]
pub struct SeedSweep {
    /// The scenario file.
    pub scenario: String,
    /// The seeds, in the order run.
    pub seeds: Vec<u64>,
    /// Per policy (in the scenario's order): the spread over the seeds.
    pub policies: Vec<PolicySpread>,
    /// Each seed's whole report.
    pub runs: Vec<SimReport>,
}

/// One policy's figures over the seeds.
#[derive(Debug, Clone, Serialize)]
pub struct PolicySpread {
    /// The run's label.
    pub policy: String,
    /// Jain's index by weight over the run.
    pub jain: Spread,
    /// MTDA's Fair1.
    pub fair1: Spread,
    /// Per tenant.
    pub tenants: Vec<TenantSpread>,
}

/// One tenant's figures under one policy over the seeds.
#[derive(Debug, Clone, Serialize)]
pub struct TenantSpread {
    /// The tenant.
    pub name: String,
    /// Payload bytes per second.
    pub throughput_bps: Spread,
    /// Median latency, ns.
    pub p50_ns: Spread,
    /// 99th-percentile latency, ns.
    pub p99_ns: Spread,
    /// Fraction of tasks over the SLA.
    pub sla_violation_rate: Spread,
}

impl SeedSweep {
    /// The sweep of `runs` (one report per seed, all of the same scenario
    /// and policies; at least one).
    pub fn of(runs: Vec<SimReport>) -> SeedSweep {
        let first = runs.first();
        let scenario = first.map(|r| r.scenario.clone()).unwrap_or_default();
        let labels: Vec<String> = first
            .map(|r| r.policies.iter().map(|p| p.policy.clone()).collect())
            .unwrap_or_default();
        let policies = labels
            .iter()
            .enumerate()
            .filter_map(|(i, label)| {
                let each: Vec<_> = runs.iter().filter_map(|r| r.policies.get(i)).collect();
                let spread = |f: &dyn Fn(&super::PolicyResult) -> f64| Spread::of(each.iter().map(|p| f(p)));
                let tenants = each
                    .first()?
                    .tenants
                    .iter()
                    .enumerate()
                    .filter_map(|(t, tenant)| {
                        let of = |f: &dyn Fn(&super::TenantResult) -> f64| {
                            Spread::of(each.iter().filter_map(|p| p.tenants.get(t)).map(f))
                        };
                        Some(TenantSpread {
                            name: tenant.name.clone(),
                            throughput_bps: of(&|x| x.throughput_bps)?,
                            p50_ns: of(&|x| x.latency_ns.p50 as f64)?,
                            p99_ns: of(&|x| x.latency_ns.p99 as f64)?,
                            sla_violation_rate: of(&|x| x.sla_violation_rate)?,
                        })
                    })
                    .collect();
                Some(PolicySpread {
                    policy: label.clone(),
                    jain: spread(&|p| p.jain)?,
                    fair1: spread(&|p| p.fair1)?,
                    tenants,
                })
            })
            .collect();
        SeedSweep {
            scenario,
            seeds: runs.iter().map(|r| r.seed).collect(),
            policies,
            runs,
        }
    }
}
