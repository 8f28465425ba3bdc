//! What a scenario needs to run live, checked before the run: each
//! engine's device model, no RSS steering or host migration (the
//! simulator's alone), real operators for every tenant's tasks, and sizes
//! a live run can allocate. The error says what cannot run and why.

use crate::live_stages::{computes, live_kernel};
use anyhow::bail;
use isola_core::EngineKind;
use isola_model::scenario::{ArrivalSpec, DeviceSpec};
use isola_model::Scenario;
use isola_ops::{find_operator, sample_params};

/// Checks that `scenario` can run live; the error says what cannot and why.
pub fn check_live(scenario: &Scenario) -> anyhow::Result<()> {
    for e in &scenario.engines {
        match (e.kind, &e.device) {
            (EngineKind::Dma, DeviceSpec::Dma(_)) | (EngineKind::Egress, DeviceSpec::Egress { .. }) => {}
            (EngineKind::Accelerator | EngineKind::ProcessingUnits, DeviceSpec::Compute { .. }) => {}
            _ => bail!(
                "engine `{}` is a {} engine without its device model, which a live run needs",
                e.name,
                e.kind
            ),
        }
        if e.steering != isola_model::scenario::Steering::Scheduler {
            bail!(
                "engine `{}` steers by RSS (`steering = \"rss\"`), a NIC's per-core receive rings that only \
                 the simulator models; the live runtime schedules every engine through its policy",
                e.name
            );
        }
    }
    let migrates = |t: &&isola_model::scenario::TenantSpec| t.workloads.iter().any(|w| w.migrate.is_some());
    if let Some(t) = scenario.tenants.iter().find(migrates) {
        bail!(
            "tenant `{}`: `migrate` (host migration) is modelled only by `isola sim`",
            t.name
        );
    }
    if crate::live_packets::uses_packets(scenario) {
        return crate::live_packets::check(scenario);
    }
    for (t, w) in scenario
        .tenants
        .iter()
        .flat_map(|t| t.workloads.iter().map(move |w| (t, w)))
    {
        if !computes(w, &scenario.engines) {
            // Transfers only: its tasks are bytes, whatever its `op`.
            continue;
        }
        if let ArrivalSpec::Trace(rows) = &w.arrival {
            if let Some(row) = rows
                .iter()
                .find(|r| live_kernel(&r.op).is_none() && find_operator(&r.op).is_err())
            {
                bail!(
                    "tenant `{}`: its trace names operator `{}`, which has no real implementation \
                     (see `isola op --list`)",
                    t.name,
                    row.op
                );
            }
        }
        if live_kernel(&w.op).is_some() {
            continue;
        }
        if let Ok(info) = find_operator(&w.op) {
            let mut params = sample_params(&w.op);
            params.extend(w.params.clone());
            if let Err(e) = isola_ops::build_operator(info.name, &params) {
                bail!("tenant `{}`: {e}", t.name);
            }
        } else {
            bail!(
                "tenant `{}`: operator `{}` has no real implementation, so it cannot run live; \
                 give the workload an `op` from `isola op --list` (the simulator accepts any name)",
                t.name,
                w.op
            );
        }
    }
    Ok(())
}

/// Refuses a scenario whose tasks could be larger than `max_payload`
/// bytes: a live run allocates every task's input (and its operator the
/// output), so a size drawn up to a petabyte must be refused before the
/// run, not found by the allocator.
pub fn check_payloads(scenario: &Scenario, max_payload: u64) -> anyhow::Result<()> {
    for (t, w) in scenario
        .tenants
        .iter()
        .flat_map(|t| t.workloads.iter().map(move |w| (t, w)))
    {
        let largest = match &w.arrival {
            ArrivalSpec::Trace(rows) => rows.iter().map(|r| r.bytes).max().unwrap_or(0),
            _ => w.size.max_bytes(),
        };
        if largest > max_payload {
            bail!(
                "tenant `{}`: its tasks reach {largest} bytes, above the largest payload a live run allocates \
                 ({max_payload} bytes); raise it with --max-payload if this machine has the memory",
                t.name
            );
        }
    }
    Ok(())
}
