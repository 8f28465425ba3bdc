//! Running a scenario live: the same TOML as the simulator, with real
//! operators on seeded payloads in the live runtime, reported in the
//! simulator's schema (`SimReport`), so one file runs both ways.
//!
//! What runs live: accelerator and processing-unit engines (worker pools of
//! `slots` threads; a scenario's service model becomes the cost model),
//! single-stage workloads of registered operators, every arrival process.
//! DMA and egress engines, pipelines and ingress matching have no live model
//! and are refused with a message saying so.

use anyhow::bail;
use isola_core::metrics::{fair1, jain_normalized, LatencyHistogram};
use isola_core::{EngineId, EngineKind, Nanos, TenantId, NANOS_PER_SEC};
use isola_model::results::LatencyStats;
use isola_model::scenario::{ArrivalSpec, DeviceSpec, PolicyRun, ServiceCost};
use isola_model::{PolicyResult, Scenario, SimReport, TenantResult};
use isola_ops::{find_operator, sample_params, text_payload, valid_input};
use isola_runtime::{Completion, EngineConfig, Mode, RuntimeBuilder, TaskError};
use isola_sim::workload::{ArrivalProcess, SizeSampler};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Checks that `scenario` can run live; the error says what cannot and why.
pub fn check_live(scenario: &Scenario) -> anyhow::Result<()> {
    for e in &scenario.engines {
        if !matches!(e.kind, EngineKind::Accelerator | EngineKind::ProcessingUnits) {
            bail!(
                "engine `{}` is a {} engine: live runs have no {} model (simulate it with `isola sim`)",
                e.name,
                e.kind,
                e.kind
            );
        }
    }
    for t in &scenario.tenants {
        let w = &t.workload;
        if w.stages.len() != 1 {
            bail!(
                "tenant `{}`: a pipeline of {} stages cannot run live yet; give it one `engine`",
                t.name,
                w.stages.len()
            );
        }
        if let ArrivalSpec::Trace(rows) = &w.arrival {
            if let Some(row) = rows.iter().find(|r| find_operator(&r.op).is_err()) {
                bail!(
                    "tenant `{}`: its trace names operator `{}`, which has no real implementation \
                     (see `isola op --list`)",
                    t.name,
                    row.op
                );
            }
        }
        if t.flow_match.is_some() {
            bail!("tenant `{}`: ingress matching has no live model", t.name);
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

/// Runs every policy of `scenario` (or those in `only`) live.
pub fn run_live(
    scenario: &Scenario,
    only: &[String],
    seed: Option<u64>,
    tick: &mut dyn FnMut(usize, usize, f64),
) -> anyhow::Result<SimReport> {
    check_live(scenario)?;
    let seed = seed.unwrap_or(scenario.run.seed);
    let runs: Vec<&PolicyRun> = scenario
        .run
        .policies
        .iter()
        .filter(|p| only.is_empty() || only.iter().any(|o| o == &p.label || o == &p.name))
        .collect();
    let mut policies = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        tick(i, runs.len(), 0.0);
        policies.push(run_policy_live(scenario, run, seed)?);
        tick(i, runs.len(), 1.0);
    }
    Ok(SimReport {
        scenario: scenario.path.display().to_string(),
        seed,
        policies,
    })
}

/// What one tenant's driver thread reports.
#[derive(Default)]
struct TenantRun {
    /// Completions received before the run's end.
    done: Vec<Completion>,
    /// Tasks refused at submit (queue full).
    rejected: u64,
    /// Tasks accepted; those without a completion by the end are incomplete.
    accepted: u64,
}

/// Runs `scenario` live under one policy (the scenario passed [`check_live`]).
pub(crate) fn run_policy_live(
    scenario: &Scenario,
    run: &PolicyRun,
    seed: u64,
) -> anyhow::Result<PolicyResult> {
    let mut b = RuntimeBuilder::new();
    for e in &scenario.engines {
        let (service, clock_hz) = match &e.device {
            DeviceSpec::Compute { service, clock_hz } => (service.clone(), *clock_hz),
            _ => (None, 1e9),
        };
        // The scenario's service model is the engine's cost model; a
        // tenant's own model (on its workload) predicts that tenant's tasks
        // (its handle's `with_cost`, below), as in the simulator. An engine
        // without one uses its first tenant's, for the scheduler's charges.
        let engine_index = scenario
            .engines
            .iter()
            .position(|x| x.name == e.name)
            .unwrap_or(0);
        let tenant_model = || {
            scenario
                .tenants
                .iter()
                .find(|t| t.workload.stages.first() == Some(&engine_index))
                .and_then(|t| t.workload.service.clone())
        };
        let cost: Arc<dyn isola_core::CostModel> = match service.or_else(tenant_model) {
            Some(s) => Arc::new(ServiceCost::new(&s, clock_hz)),
            None => bail!("engine `{}` needs a service model to predict costs live", e.name),
        };
        let mut config = EngineConfig::new(&e.name, &[], e.slots as usize, cost)
            .with_queue_depth(e.queue_depth.saturating_sub(e.slots) as usize)
            .with_kind(e.kind)
            .with_split_when(e.split_when);
        if e.kind == EngineKind::Accelerator {
            config.split_bytes = run.split;
        }
        b.engine(config);
    }
    for t in &scenario.tenants {
        let id = b.tenant(t.name.clone(), t.slo.clone());
        for (on, change) in &t.overrides {
            b.tenant_on(id, on.clone(), *change);
        }
    }
    b.mode(Mode::Isolated {
        policy: run.name.clone(),
        params: run.params.clone(),
    });
    for p in &run.on {
        b.engine_policy(p.on.clone(), p.name.clone(), p.params.clone());
    }
    let rt = b.start()?;
    let started = Instant::now();
    let deadline = scenario.run.duration.map(|d| started + Duration::from_nanos(d));
    let rt_ref = &rt;
    let results: Vec<anyhow::Result<TenantRun>> = std::thread::scope(|scope| {
        let threads: Vec<_> = scenario
            .tenants
            .iter()
            .enumerate()
            .map(|(i, t)| {
                scope.spawn(move || {
                    let engine = t.workload.stages[0];
                    let mut handle = rt_ref
                        .tenant(TenantId(i as u32))
                        .on_engine(EngineId(engine as u32))?;
                    if let (Some(service), DeviceSpec::Compute { clock_hz, .. }) =
                        (&t.workload.service, &scenario.engines[engine].device)
                    {
                        handle = handle.with_cost(Arc::new(ServiceCost::new(service, *clock_hz)));
                    }
                    drive_tenant(&handle, t, i, seed, started, deadline)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a tenant driver panicked")))
            })
            .collect()
    });
    // With a duration, the run is that long (as simulated); without, it
    // lasts until the last completion.
    let elapsed = scenario
        .run
        .duration
        .unwrap_or(started.elapsed().as_nanos() as Nanos);
    rt.shutdown();
    let runs = results.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    Ok(report(scenario, run, &runs, elapsed))
}

/// Submits one tenant's workload, open or closed loop, until its count,
/// its trace or the run's duration ends, and collects its completions.
fn drive_tenant(
    handle: &isola_runtime::TenantHandle,
    t: &isola_model::scenario::TenantSpec,
    index: usize,
    seed: u64,
    started: Instant,
    deadline: Option<Instant>,
) -> anyhow::Result<TenantRun> {
    let w = &t.workload;
    let mut sizes = SizeSampler::new(&w.size, seed, index);
    // One text payload, grown to the largest size asked for; each task's
    // input is built from a prefix of it. Inputs are cached for at most
    // `CACHED_INPUTS` distinct (size, operator) pairs, so a size
    // distribution with many values cannot exhaust memory.
    const CACHED_INPUTS: usize = 64;
    let mut text: Vec<u8> = Vec::new();
    let mut payloads: HashMap<(u64, String), Arc<Vec<u8>>> = HashMap::new();
    // Each operator's parameters: the workload's over the operator's sample
    // ones (so an AES key or an EC code need not be spelled out to try a
    // scenario); its inputs are built, and its tasks submitted, with them.
    type Params = BTreeMap<String, String>;
    let mut op_params: HashMap<String, Params> = HashMap::new();
    let mut input = |bytes: u64, op: &str| -> anyhow::Result<(Arc<Vec<u8>>, Params)> {
        let params = op_params
            .entry(op.to_string())
            .or_insert_with(|| {
                let mut p = sample_params(op);
                p.extend(w.params.clone());
                p
            })
            .clone();
        if let Some(p) = payloads.get(&(bytes, op.to_string())) {
            return Ok((Arc::clone(p), params));
        }
        if (text.len() as u64) < bytes {
            text = text_payload(bytes as usize, seed ^ index as u64);
        }
        let p = Arc::new(valid_input(op, &params, &text[..bytes as usize])?);
        if payloads.len() < CACHED_INPUTS {
            payloads.insert((bytes, op.to_string()), Arc::clone(&p));
        }
        Ok((p, params))
    };
    let (tx, rx) = crossbeam_channel::unbounded::<Completion>();
    let mut out = TenantRun::default();
    let mut submitted = 0u64;
    let limit = w.count.unwrap_or(u64::MAX);
    let past_deadline = || deadline.is_some_and(|d| Instant::now() >= d);
    let mut submit = |bytes: u64, op: &str, out: &mut TenantRun| -> anyhow::Result<bool> {
        let (payload, params) = input(bytes, op)?;
        handle.submit_to(op, &params, payload, &tx)?;
        out.accepted += 1;
        Ok(true)
    };
    match &w.arrival {
        ArrivalSpec::Closed(n) => {
            let wait_until = Instant::now().max(started + Duration::from_nanos(w.start));
            std::thread::sleep(wait_until.saturating_duration_since(Instant::now()));
            let mut in_flight = 0u64;
            while in_flight < u64::from(*n) && submitted < limit && !past_deadline() {
                if submit(sizes.sample(), &w.op, &mut out)? {
                    in_flight += 1;
                }
                submitted += 1;
            }
            while in_flight > 0 {
                // At the run's end, what is still in flight is incomplete.
                let Some(c) = recv_until(&rx, deadline) else {
                    break;
                };
                in_flight -= 1;
                out.record(c);
                if submitted < limit && !past_deadline() {
                    if submit(sizes.sample(), &w.op, &mut out)? {
                        in_flight += 1;
                    }
                    submitted += 1;
                }
            }
        }
        spec => {
            let mut arrivals = ArrivalProcess::new(spec, w.start, seed, index);
            while submitted < limit {
                let Some(next) = arrivals.next_arrival() else {
                    break;
                };
                let at = started + Duration::from_nanos(next.at);
                if deadline.is_some_and(|d| at >= d) {
                    break;
                }
                std::thread::sleep(at.saturating_duration_since(Instant::now()));
                let (bytes, op) = next.traced.unwrap_or_else(|| (sizes.sample(), w.op.clone()));
                submit(bytes, &op, &mut out)?;
                submitted += 1;
                rx.try_iter().for_each(|c| out.record(c));
            }
            while (out.done.len() as u64) < out.accepted {
                match recv_until(&rx, deadline) {
                    Some(c) => out.record(c),
                    None => break,
                }
            }
        }
    }
    Ok(out)
}

impl TenantRun {
    /// Keeps a completion (its output freed); a task the core refused (a
    /// full channel) is counted as rejected, not as accepted.
    fn record(&mut self, c: Completion) {
        if matches!(c.result, Err(TaskError::Rejected(_))) {
            self.rejected += 1;
            self.accepted -= 1;
        } else {
            self.done.push(c.without_output());
        }
    }
}

/// The next completion, or `None` once `deadline` (if any) has passed.
fn recv_until(rx: &crossbeam_channel::Receiver<Completion>, deadline: Option<Instant>) -> Option<Completion> {
    match deadline {
        Some(d) => rx.recv_deadline(d).ok(),
        None => rx.recv().ok(),
    }
}

/// The simulator's result schema from live completions.
fn report(scenario: &Scenario, run: &PolicyRun, runs: &[TenantRun], elapsed: Nanos) -> PolicyResult {
    let interval = elapsed.max(1);
    let busy: Vec<u64> = runs
        .iter()
        .map(|r| r.done.iter().map(|c| c.service_ns).sum())
        .collect();
    let total_busy: u64 = busy.iter().sum();
    let mut tenants = Vec::new();
    for (i, spec) in scenario.tenants.iter().enumerate() {
        let ok: Vec<&Completion> = runs[i].done.iter().filter(|c| c.result.is_ok()).collect();
        let over_budget = ok.iter().filter(|c| c.over_budget).count();
        let mut hist = LatencyHistogram::new();
        let mut violations = 0u64;
        for c in &ok {
            hist.record(c.latency_ns());
            if spec
                .slo
                .latency
                .is_some_and(|o| c.latency_ns() as f64 > o.bound(c.predicted_ns))
            {
                violations += 1;
            }
        }
        let bytes: u64 = ok.iter().map(|c| c.bytes).sum();
        let share = if total_busy == 0 {
            0.0
        } else {
            busy[i] as f64 / total_busy as f64
        };
        // Its share of each engine's busy time, by the engine each task
        // actually ran on.
        let engine_shares: BTreeMap<String, f64> = scenario
            .engines
            .iter()
            .enumerate()
            .filter_map(|(e, m)| {
                let on = |r: &TenantRun| -> u64 {
                    r.done
                        .iter()
                        .filter(|c| c.engine.index() == e)
                        .map(|c| c.service_ns)
                        .sum()
                };
                let all: u64 = runs.iter().map(on).sum();
                let mine = on(&runs[i]);
                (mine > 0).then(|| (m.name.clone(), mine as f64 / all as f64))
            })
            .collect();
        tenants.push(TenantResult {
            name: spec.name.clone(),
            weight: spec.slo.weight,
            // Tasks over the tenant's service budget count as aborted, as
            // the simulator's watchdog aborts them (live, they run to the
            // end), and so not as completed.
            completed: (ok.len() - over_budget) as u64,
            rejected: runs[i].rejected,
            aborted: (runs[i].done.len() - ok.len() + over_budget) as u64,
            unmatched: 0,
            incomplete: runs[i].accepted.saturating_sub(runs[i].done.len() as u64),
            throughput_ops: ok.len() as f64 * NANOS_PER_SEC as f64 / interval as f64,
            throughput_bps: bytes as f64 * NANOS_PER_SEC as f64 / interval as f64,
            latency_ns: LatencyStats::from(hist.summary()),
            latency_cdf: hist.cdf(),
            sla_violation_rate: if ok.is_empty() {
                0.0
            } else {
                violations as f64 / ok.len() as f64
            },
            engine_time_share: share,
            engine_shares,
            flow_completion_ns: ok.iter().map(|c| c.finished_ns).max().unwrap_or(0),
            slowdown: None,
        });
    }
    let active: Vec<usize> = (0..tenants.len()).filter(|&i| !runs[i].done.is_empty()).collect();
    let weights: Vec<f64> = active.iter().map(|&i| tenants[i].weight).collect();
    let jain = jain_normalized(
        &active.iter().map(|&i| busy[i] as f64).collect::<Vec<_>>(),
        &weights,
    )
    .unwrap_or(1.0);
    let w_total: f64 = weights.iter().sum();
    let expected: Vec<f64> = weights.iter().map(|w| w / w_total).collect();
    let tput: Vec<f64> = active.iter().map(|&i| tenants[i].throughput_bps).collect();
    PolicyResult {
        policy: run.label.clone(),
        policy_name: run.name.clone(),
        jain,
        fair1: fair1(&tput, &expected).unwrap_or(0.0),
        fair2: None,
        duration_ns: interval,
        mean_in_system: 0.0,
        events: runs.iter().map(|r| r.done.len() as u64).sum(),
        tenants,
        series: Vec::new(),
    }
}
