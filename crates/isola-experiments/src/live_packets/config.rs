//! The daemon a packet run starts, configured by code from the scenario's
//! checked model: the scenario's engines (kind, workers scaled to this
//! machine, the run's policy for each by the core's rule, the run's split
//! where the kind splits), and its tenants built from the keys the
//! scenario gave them by the one tenant check (`isola_model::tenant`), so
//! every SLO key is in force: weight, class, reservation and limit with
//! their bursts, latency objective, budget and its action, queue cap,
//! memory quota and every `[tenant.on.ENGINE]` change. Rates and times are
//! scaled as the run's arrivals and service are ([`time_scale`]).

use super::io;
use super::kernels::Kernel;
use super::scale::Scale;
use anyhow::Context;
use isola_core::{EngineKind, TimeScale};
use isola_daemon::config::DaemonEngine;
use isola_daemon::DaemonConfig;
use isola_model::scenario::{Direction, PolicyRun};
use isola_model::Scenario;
use std::path::Path;

/// A packet tenant's memory quota where its scenario gives none: room for
/// its packets' tasks, queued and in service.
const DEFAULT_QUOTA: &str = "1GiB";

/// How a run at `scale` keeps the scenario's SLOs in force: rates divided
/// by the arrivals' stretch, service times (absolute latency objectives,
/// budgets) multiplied by the kernels' measured over modelled cost.
pub(super) fn time_scale(scale: &Scale) -> TimeScale {
    TimeScale {
        rates_over: scale.stretch,
        times_by: scale.dilation,
    }
}

/// The daemon configuration for one run in folder `dir`: `ports[i]` is
/// tenant `i`'s sender's source port.
pub(super) fn daemon_config(
    scenario: &Scenario,
    run: &PolicyRun,
    kernels: &[Kernel],
    scale: &Scale,
    ports: &[u16],
    dir: &Path,
) -> anyhow::Result<DaemonConfig> {
    let mut config = DaemonConfig::new(dir.join("isolad.sock"));
    config.spare_tenants = 0;
    // The daemon's dispatcher and workers ahead of the machine's other
    // work, as the simulator's engines never wait for a CPU
    // (`crate::live_realtime`).
    config.realtime = crate::live_realtime::for_packets();
    // Ahead of everything all the time: the duty cycle that leaves a
    // busy worker's core to normal threads a fifth of the time protects a
    // host's other work (tenants' clients), but here the other work is
    // the machine's (builds, other sessions), and the run's own senders
    // are real-time above the daemon. With it, on a loaded machine, the
    // PU contention's round robin gave the Congestor 0.58-0.61 of the
    // PUs against 0.64-0.65 without (OSMOSIS: about 2/3).
    config.realtime_duty_cycle = false;
    config.udp = scenario
        .tenants
        .iter()
        .map(|_| "127.0.0.1:0".parse())
        .collect::<Result<_, _>>()?;
    for (i, e) in scenario.engines.iter().enumerate() {
        config
            .engines
            .push(engine(scenario, run, kernels, scale, i, e.kind));
    }
    let origin = scenario.path.display().to_string();
    for (i, t) in scenario.tenants.iter().enumerate() {
        let mut own = vec![
            ("users", Some(toml::Value::Array(vec!["self".into()]))),
            (
                "flow",
                Some(toml::Value::Array(vec![flow(scenario, i, &kernels[i], ports[i])])),
            ),
        ];
        // A quota the scenario gives is kept.
        if t.slo.memory_quota.is_none() {
            own.push(("memory_quota", Some(DEFAULT_QUOTA.into())));
        }
        let mut tenant = config
            .check_changes(t.keys.without_scenario_keys(), &own, &origin)
            .map_err(|e| anyhow::anyhow!("tenant `{}` cannot run over packets: {e}", t.name))?;
        let model = &mut tenant.tenant;
        (model.slo, model.overrides) = time_scale(scale).tenant(&model.slo, &model.overrides);
        // Its packets predicted by its own kernel's cost, as the simulator
        // predicts each tenant's by its own service model.
        if let Some(flow) = tenant.flows.first_mut() {
            flow.cost = Some(flow_cost(&kernels[i]));
        }
        config.tenants.push(tenant);
    }
    config.check().context("the run's daemon configuration")?;
    Ok(config)
}

/// A tenant's one flow's cost model: its kernel's measured cost per
/// packet (the calibrated stand-in's scans the same chain whatever the
/// packet's size, so a constant).
pub(super) fn flow_cost(kernel: &Kernel) -> isola_core::AffineCost {
    isola_core::AffineCost::new(kernel.measured_ns.max(1.0), 0.0)
        .unwrap_or_else(|_| isola_core::AffineCost::constant(1))
}

/// Engine `e` (of `kind`) of the run: its scaled workers (under a static
/// partition one per tenant at least), its policy by the core's rule, its
/// cost model its tenants' mean measured cost (a DMA engine's its link's
/// time per byte; each flow has its own, [`flow_cost`], which predicts
/// its packets), learning as the scenario's engine does (by default not:
/// a learned fit is kept per operator, and every stand-in is the one
/// `firewall`, so it would predict every tenant's packets alike), the
/// run's split where its kind splits, and the scenario's batch rule.
fn engine(
    scenario: &Scenario,
    run: &PolicyRun,
    kernels: &[Kernel],
    scale: &Scale,
    e: usize,
    kind: EngineKind,
) -> DaemonEngine {
    let model = &scenario.engines[e];
    let mut engine = DaemonEngine::new(model.name.clone(), kind);
    let (policy, params) = run.policy_of(&model.name, kind);
    engine.policy = policy.to_string();
    engine.params = params.clone();
    engine.workers = engine_workers(scenario, run, scale, e);
    engine.split = run.split.filter(|_| kind.splits_tasks());
    engine.batch = model.batch;
    engine.learn = model.learn;
    if kind == EngineKind::Dma {
        let bandwidth = io::live_bandwidth(scenario, e, scale.stretch).unwrap_or(1e9);
        engine.bandwidth = Some(bandwidth.round().max(1.0));
        engine.base_ns = 1.0;
        engine.per_byte_ns = 1e9 / bandwidth;
        engine.workers = 1;
        return engine;
    }
    let served: Vec<&Kernel> = scenario
        .tenants
        .iter()
        .zip(kernels)
        .filter(|(t, _)| t.workload().stages[0] == e)
        .map(|(_, k)| k)
        .collect();
    engine.ops = served.iter().map(|k| k.op.clone()).collect();
    engine.ops.dedup();
    engine.queue_depth = model.queue_depth.saturating_sub(model.slots).min(1024) as usize;
    engine.base_ns = (served.iter().map(|k| k.measured_ns).sum::<f64>() / served.len().max(1) as f64)
        .round()
        .max(1.0);
    engine.per_byte_ns = 0.0;
    engine
}

/// Tenant `i`'s one flow: the packets from its sender's `port`, its
/// kernel's operator; an IO tenant's transfer direction (a write's reply,
/// the data written, is not asked for).
fn flow(scenario: &Scenario, i: usize, kernel: &Kernel, port: u16) -> toml::Value {
    let t = &scenario.tenants[i];
    let mut flow = toml::Table::new();
    let mut rule = toml::Table::new();
    rule.insert("src_port".into(), i64::from(port).into());
    rule.insert("proto".into(), 17i64.into());
    flow.insert("match".into(), rule.into());
    flow.insert("kernel".into(), kernel.op.clone().into());
    let params: toml::Table = kernel
        .params
        .iter()
        .map(|(k, v)| (k.clone(), toml::Value::from(v.clone())))
        .collect();
    flow.insert("params".into(), params.into());
    if io::is_io(scenario, t) {
        let write = t.workload().direction == Direction::Write;
        flow.insert("dma".into(), if write { "write" } else { "read" }.into());
        if write {
            flow.insert("reply".into(), false.into());
        }
    }
    flow.into()
}

/// The worker threads engine `e` runs under `run`: its scaled count, or
/// under a static partition, which gives every tenant a worker of its
/// own, at least one per tenant (more threads on the same cores; the rates
/// stay those of the scaled count, so every policy is offered the same
/// packets).
pub(super) fn engine_workers(scenario: &Scenario, run: &PolicyRun, scale: &Scale, e: usize) -> usize {
    let workers = scale.workers[e];
    let engine = &scenario.engines[e];
    if run.policy_of(&engine.name, engine.kind).0 == "static" {
        workers.max(scenario.tenants.len())
    } else {
        workers
    }
}
