//! Running a scenario live: the same TOML as the simulator, with real
//! operators on seeded payloads in the live runtime, reported in the
//! simulator's schema (`SimReport`), so one file runs both ways.
//!
//! What runs live: accelerator and processing-unit engines (worker pools of
//! `slots` threads running registered operators; a scenario's service model
//! becomes the cost model), DMA engines (workers copying each transfer into
//! or out of its tenant's host region, in the fragments the core cuts) and
//! egress engines (workers sending each task's bytes as UDP datagrams to a
//! sink the run owns), pipelines (`pipeline = [...]`: each task through
//! its engines one after another, the output of a stage the input of the
//! next, one completion after the last: `live_stages`), every arrival
//! process. A scenario with ingress matching (`match`) runs over real UDP
//! packets through an in-process `isolad` instead ([`crate::live_packets`]:
//! every tenant matched, single-stage compute workloads, open arrivals, the
//! model-only `kernel` op on a calibrated real stand-in, the run dilated to
//! this machine's cores). A scenario whose open-loop rates this machine
//! cannot offer is slowed down (`live_scale`), and its results say so.
//!
//! Every figure is the run recorder's (`isola_model::results::RunRecorder`),
//! fed with each completion (`isola_runtime::record`), as the simulator
//! feeds it: the JSON means the same either way. The runtime keeps no
//! backlog samples, so a live run has no Jain's index under demand (each
//! window's is `null`).

use crate::live_scale;
use crate::live_stages::{self, computes, live_kernel, region_size, transfer_engine, RegionCursor};
use anyhow::bail;
use isola_core::{EngineKind, Nanos, TenantId};
use isola_model::results::RunEnd;
use isola_model::scenario::{ArrivalSpec, DeviceSpec, PolicyRun, ServiceCost};
use isola_model::{PolicyResult, RunRecorder, Scenario, SimReport};
use isola_ops::{sample_params, text_payload, valid_input};
use isola_runtime::record::{record_completion, record_unfinished};
use isola_runtime::{Completion, EgressSink, EngineConfig, HeapRegion, Mode, RuntimeBuilder};
use isola_sim::workload::{ArrivalProcess, SizeSampler};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::live_check::{check_live, check_payloads};

/// Runs every policy of `scenario` (or those in `only`) live.
pub fn run_live(
    scenario: &Scenario,
    only: &[String],
    seed: Option<u64>,
    tick: &mut dyn FnMut(usize, usize, f64),
) -> anyhow::Result<SimReport> {
    check_live(scenario)?;
    let seed = seed.unwrap_or(scenario.run.seed);
    let runs = scenario.run.select(only).map_err(anyhow::Error::msg)?;
    // `solo = true`: each tenant alone first, natively, as the simulator
    // does; its mean latency is every policy's slowdown reference.
    let solo_runs = if scenario.run.solo {
        scenario.tenants.len()
    } else {
        0
    };
    let total = solo_runs + runs.len();
    let mut alone = Vec::with_capacity(solo_runs);
    for t in 0..solo_runs {
        tick(t, total, 0.0);
        let (r, _) = run_policy_live_inner(scenario, &PolicyRun::alone(), seed, false, Some(t))?;
        alone.push(r.tenants[t].latency_ns.mean);
    }
    let mut policies = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        tick(solo_runs + i, total, 0.0);
        let mut result = run_policy_live(scenario, run, seed)?;
        if scenario.run.solo {
            result.add_slowdowns(&alone);
        }
        policies.push(result);
        tick(solo_runs + i, total, 1.0);
    }
    Ok(SimReport {
        scenario: scenario.path.display().to_string(),
        seed,
        policies,
    })
}

/// What a tenant's driver thread submits with.
struct TenantRun<'a> {
    handle: &'a isola_runtime::TenantHandle,
    /// The workload it drives (one of its tenant's).
    workload: &'a isola_model::scenario::WorkloadSpec,
    engines: &'a [isola_model::scenario::EngineModel],
    /// Where its next transfer goes in its host region.
    region: RegionCursor,
}

/// The largest task `w` submits, bytes.
fn largest_task(w: &isola_model::scenario::WorkloadSpec) -> u64 {
    match &w.arrival {
        ArrivalSpec::Trace(rows) => rows.iter().map(|r| r.bytes).max().unwrap_or(0),
        _ => w.size.max_bytes(),
    }
}

/// One tenant's tasks as its driver thread saw them by the run's end.
#[derive(Default)]
struct TenantTasks {
    /// The completions it received (outputs freed), refusals included.
    completions: Vec<Completion>,
    /// The tasks it submitted that had no completion: task id to (when
    /// submitted, in the runtime's ns; input bytes).
    unfinished: HashMap<u64, (Nanos, u64)>,
    /// How far behind its arrival times the open-loop generator fell at
    /// worst, ns, and how many arrivals it submitted late by over 1 ms.
    worst_lag_ns: Nanos,
    late: u64,
    /// Arrivals it never submitted because the run's wall-clock end came
    /// first.
    dropped_at_end: bool,
}

/// Runs `scenario` live under one policy (the scenario passed [`check_live`]).
pub(crate) fn run_policy_live(
    scenario: &Scenario,
    run: &PolicyRun,
    seed: u64,
) -> anyhow::Result<PolicyResult> {
    run_policy_live_inner(scenario, run, seed, false, None).map(|(r, _)| r)
}

/// Runs `scenario` live under run `run` (checked with [`check_live`]
/// first) and returns, with its results, every call the runtime made on the
/// isolation core ([`isola_runtime::CoreCall`]): replayed into the
/// simulator's core for the same scenario ([`isola_sim::scheduler_for`]),
/// they give the same dispatches.
pub fn run_policy_live_logged(
    scenario: &Scenario,
    run: &PolicyRun,
    seed: u64,
) -> anyhow::Result<(PolicyResult, Vec<isola_runtime::CoreCall>)> {
    check_live(scenario)?;
    run_policy_live_inner(scenario, run, seed, true, None)
}

/// Runs `scenario` live under `run`, logging the core's calls if `record`;
/// with `alone`, only that tenant submits (the others are idle).
fn run_policy_live_inner(
    scenario: &Scenario,
    run: &PolicyRun,
    seed: u64,
    record: bool,
    alone: Option<usize>,
) -> anyhow::Result<(PolicyResult, Vec<isola_runtime::CoreCall>)> {
    if crate::live_packets::uses_packets(scenario) {
        if record {
            bail!("a run over packets keeps no log of the core's calls");
        }
        return crate::live_packets::run_policy(scenario, run, seed, alone).map(|r| (r, Vec::new()));
    }
    // Rates this machine cannot offer are slowed down, and the result says so.
    let factor = live_scale::auto_factor(scenario);
    let slowed = live_scale::slowed(scenario, factor);
    let scenario = &slowed;
    let mut b = RuntimeBuilder::new();
    b.record_core_calls(record);
    b.realtime(crate::live_realtime::runtime_threads());
    let sink = egress_sink(scenario)?;
    let ports = add_engines(&mut b, scenario, run, sink.as_ref())?;
    let region_sizes = add_tenants(&mut b, scenario, run);
    let rt = b.start()?;
    let core_log = rt.core_log();
    let started = Instant::now();
    let deadline = scenario.run.duration.map(|d| started + Duration::from_nanos(d));
    let results = drive_tenants(&rt, scenario, alone, seed, &region_sizes, (started, deadline));
    // The wall time the run actually took: rates are over it, whatever
    // the duration asked (a run that overran its duration says so).
    let elapsed = started.elapsed().as_nanos() as Nanos;
    let ended_ns = rt.now_ns();
    rt.shutdown();
    let tasks = results.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    let calls = core_log.map(|l| l.calls()).unwrap_or_default();
    let mut warnings = run_warnings(scenario, &tasks, elapsed);
    if let Some(sink) = sink {
        // What the sink got of what the egress workers sent (loopback
        // datagrams are dropped only when its buffer overflows).
        let sent: u64 = ports.iter().map(|p| p.sent().bytes).sum();
        let got = sink.wait_for(sent, Duration::from_millis(200));
        if got.bytes != sent {
            warnings.push(format!(
                "the run's egress sink received {} of the {sent} bytes sent ({} datagrams)",
                got.bytes, got.datagrams
            ));
        }
    }
    if factor > 1.0 {
        warnings.insert(0, live_scale::slowed_warning(factor));
    }
    let spent = {
        let done: Vec<Completion> = tasks.iter().flat_map(|t| t.completions.iter().cloned()).collect();
        crate::live_breakdown::notes(scenario, &[], &done)
    };
    warnings.extend(spent);
    let mut result = result(scenario, run, tasks, elapsed, ended_ns);
    result.warnings = warnings;
    Ok((result, calls))
}

/// The runtime a live run of `scenario` under `run` starts, its arrivals
/// and SLOs slowed as the run slows them ([`live_scale::slowed`]), not
/// started: for tests and audits that read back the core it builds
/// ([`RuntimeBuilder::scheduler`]).
pub fn runtime_builder(scenario: &Scenario, run: &PolicyRun) -> anyhow::Result<RuntimeBuilder> {
    let slowed = live_scale::slowed(scenario, live_scale::auto_factor(scenario));
    let sink = egress_sink(&slowed)?;
    let mut b = RuntimeBuilder::new();
    add_engines(&mut b, &slowed, run, sink.as_ref())?;
    add_tenants(&mut b, &slowed, run);
    Ok(b)
}

/// The run's own destination for egress engines' sends, if it has any.
fn egress_sink(scenario: &Scenario) -> anyhow::Result<Option<EgressSink>> {
    if !scenario.engines.iter().any(|e| e.kind == EngineKind::Egress) {
        return Ok(None);
    }
    let sink = EgressSink::bind(false).map_err(|e| anyhow::anyhow!("the run's egress sink: {e}"))?;
    Ok(Some(sink))
}

/// Adds `scenario`'s engines to `b` for run `run`: transfer engines (DMA,
/// egress sending to `sink`) and compute engines with the scenario's
/// service model as their cost model. Returns the egress engines' ports.
fn add_engines(
    b: &mut RuntimeBuilder,
    scenario: &Scenario,
    run: &PolicyRun,
    sink: Option<&EgressSink>,
) -> anyhow::Result<Vec<Arc<isola_runtime::EgressPort>>> {
    let mut ports = Vec::new();
    for (engine_index, e) in scenario.engines.iter().enumerate() {
        if let Some(mut config) = transfer_engine(e, sink)? {
            if let isola_runtime::EngineDevice::Egress(port) = &config.device {
                ports.push(Arc::clone(port));
            }
            // Transfers are cut into the run's fragments, as simulated
            // (where the core says the kind splits).
            config.split_bytes = run.split.filter(|_| e.kind.splits_tasks());
            config = config
                .with_split_when(e.split_when)
                .with_split_time(e.split_time)
                .with_batch(e.batch);
            b.engine(config);
            continue;
        }
        b.engine(compute_engine(scenario, run, engine_index)?);
    }
    Ok(ports)
}

/// The configuration of `scenario`'s compute engine `engine_index` for
/// run `run`.
fn compute_engine(scenario: &Scenario, run: &PolicyRun, engine_index: usize) -> anyhow::Result<EngineConfig> {
    let e = &scenario.engines[engine_index];
    let (service, clock_hz) = match &e.device {
        DeviceSpec::Compute {
            service, clock_hz, ..
        } => (service.clone(), *clock_hz),
        _ => (None, 1e9),
    };
    // The scenario's service model is the engine's cost model; a
    // tenant's own model (on its workload) predicts that tenant's tasks
    // (its handle's `with_cost`, in `drive_tenants`), as in the simulator.
    // An engine without one uses its first tenant's, for the scheduler's
    // charges.
    let tenant_model = || {
        scenario
            .tenants
            .iter()
            .flat_map(|t| &t.workloads)
            .find(|w| w.stages.contains(&engine_index))
            .and_then(|w| w.service.clone())
    };
    let cost: Arc<dyn isola_core::CostModel> = match service.or_else(tenant_model) {
        Some(s) => Arc::new(ServiceCost::new(&s, clock_hz)),
        None => bail!("engine `{}` needs a service model to predict costs live", e.name),
    };
    let mut config = EngineConfig::new(&e.name, &[], e.slots as usize, cost)
        .with_queue_depth(e.queue_depth.saturating_sub(e.slots) as usize)
        .with_kind(e.kind)
        .with_split_when(e.split_when)
        .with_split_time(e.split_time)
        .with_batch(e.batch)
        .with_learning(e.learn.then(isola_core::CostLearning::default));
    config.split_bytes = run.split.filter(|_| e.kind.splits_tasks());
    Ok(config)
}

/// Adds `scenario`'s tenants to `b` (with a host region each where the
/// scenario has DMA) and run `run`'s policies; returns each tenant's
/// region size.
fn add_tenants(b: &mut RuntimeBuilder, scenario: &Scenario, run: &PolicyRun) -> Vec<u64> {
    let has_dma = scenario.engines.iter().any(|e| e.kind == EngineKind::Dma);
    let mut region_sizes = Vec::new();
    for t in &scenario.tenants {
        let id = b.tenant(t.name.clone(), t.slo.clone());
        for (on, change) in &t.overrides {
            b.tenant_on(id, on.clone(), *change);
        }
        let size = region_size(t.workloads.iter().map(largest_task).max().unwrap_or(0));
        if has_dma {
            b.host_region(id, Arc::new(HeapRegion::new(size)));
        }
        region_sizes.push(size as u64);
    }
    b.mode(Mode::Isolated {
        policy: run.name.clone(),
        params: run.params.clone(),
    });
    for p in &run.on {
        b.engine_policy(p.on.clone(), p.name.clone(), p.params.clone());
    }
    region_sizes
}

/// Drives every workload of every tenant of `scenario` (or only
/// `alone`'s) on its own thread, each into its tenant's flow queue of its
/// index, until the run ends (`(started, deadline)`); each tenant's tasks.
fn drive_tenants(
    rt: &isola_runtime::Runtime,
    scenario: &Scenario,
    alone: Option<usize>,
    seed: u64,
    region_sizes: &[u64],
    (started, deadline): (Instant, Option<Instant>),
) -> Vec<anyhow::Result<TenantTasks>> {
    std::thread::scope(|scope| {
        let threads: Vec<_> = scenario
            .tenants
            .iter()
            .enumerate()
            .flat_map(|(i, t)| (0..t.workloads.len()).map(move |k| (i, t, k)))
            .map(|(i, t, k)| {
                let thread = scope.spawn(move || {
                    if alone.is_some_and(|a| a != i) {
                        return Ok(TenantTasks::default());
                    }
                    let w = &t.workloads[k];
                    let mut handle = rt.tenant(TenantId(i as u32)).in_flow(k as u32);
                    // Its model predicts its operator stages (on their engine's clock).
                    let clock_hz = w.stages.iter().find_map(|&e| match &scenario.engines[e].device {
                        DeviceSpec::Compute { clock_hz, .. } => Some(*clock_hz),
                        _ => None,
                    });
                    if let (Some(service), Some(clock_hz)) = (&w.service, clock_hz) {
                        handle = handle.with_cost(Arc::new(ServiceCost::new(service, clock_hz)));
                    }
                    let clock = || rt.now_ns();
                    let tenant = TenantRun {
                        handle: &handle,
                        workload: w,
                        engines: &scenario.engines,
                        region: RegionCursor::new(region_sizes[i]),
                    };
                    // A tenant's first workload keeps the tenant's random
                    // streams (as the simulator's does); the others take their own.
                    drive_tenant(tenant, i | (k << 20), seed, (started, deadline), &clock)
                });
                (i, thread)
            })
            .collect();
        let mut tasks: Vec<anyhow::Result<TenantTasks>> = scenario
            .tenants
            .iter()
            .map(|_| Ok(TenantTasks::default()))
            .collect();
        for (i, thread) in threads {
            let got = thread
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("a tenant driver panicked")));
            tasks[i] = match (std::mem::replace(&mut tasks[i], Ok(TenantTasks::default())), got) {
                (Ok(mut all), Ok(one)) => {
                    all.merge(one);
                    Ok(all)
                }
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
        }
        tasks
    })
}

/// What a run that took `elapsed` ns warns of: load generators that fell
/// behind their arrivals, and a run that overran its duration.
fn run_warnings(scenario: &Scenario, tasks: &[TenantTasks], elapsed: Nanos) -> Vec<String> {
    let mut warnings = Vec::new();
    for (t, tasks) in scenario.tenants.iter().zip(tasks) {
        if tasks.late > 0 || tasks.dropped_at_end {
            warnings.push(format!(
                "tenant `{}`'s load generator fell behind its arrivals by up to {} ({} submitted over 1 ms late{}): \
                 this machine could not keep up with the rate, so its figures are for a lower one",
                t.name,
                isola_model::quantity::format_duration(tasks.worst_lag_ns),
                tasks.late,
                if tasks.dropped_at_end {
                    "; the rest were never submitted, the run's time being up"
                } else {
                    ""
                }
            ));
        }
    }
    if let Some(d) = scenario
        .run
        .duration
        .filter(|&d| elapsed > d + d / 10 + 1_000_000)
    {
        warnings.push(format!(
            "the run took {} of wall time for a duration of {} (its last tasks drained); rates are over the {}",
            isola_model::quantity::format_duration(elapsed),
            isola_model::quantity::format_duration(d),
            isola_model::quantity::format_duration(elapsed)
        ));
    }
    warnings
}

/// An operator's parameters, by name.
type Params = BTreeMap<String, String>;

/// A tenant's task inputs. One text payload, grown to the largest size
/// asked for; each task's input is built from a prefix of it. Inputs are
/// cached for at most [`Inputs::CACHED`] distinct (size, operator) pairs,
/// so a size distribution with many values cannot exhaust memory.
struct Inputs<'a> {
    /// The workload's operator parameters.
    params: &'a Params,
    /// Whether the workload computes (else its inputs are plain text).
    computes: bool,
    /// The text's seed.
    seed: u64,
    text: Vec<u8>,
    payloads: HashMap<(u64, String), Arc<Vec<u8>>>,
    /// Each operator's parameters: the workload's over the operator's
    /// sample ones (so an AES key or an EC code need not be spelled out to
    /// try a scenario); its inputs are built, and its tasks submitted,
    /// with them.
    op_params: HashMap<String, Params>,
}

impl Inputs<'_> {
    const CACHED: usize = 64;

    /// The input of `bytes` for operator `op`, and the operator's parameters.
    fn input(&mut self, bytes: u64, op: &str) -> anyhow::Result<(Arc<Vec<u8>>, Params)> {
        let params = self
            .op_params
            .entry(op.to_string())
            .or_insert_with(|| {
                let mut p = sample_params(op);
                p.extend(self.params.clone());
                p
            })
            .clone();
        if let Some(p) = self.payloads.get(&(bytes, op.to_string())) {
            return Ok((Arc::clone(p), params));
        }
        if (self.text.len() as u64) < bytes {
            self.text = text_payload(bytes as usize, self.seed);
        }
        let text = &self.text[..bytes as usize];
        let p = Arc::new(if self.computes && live_kernel(op).is_none() {
            valid_input(op, &params, text)?
        } else {
            text.to_vec()
        });
        if self.payloads.len() < Self::CACHED {
            self.payloads.insert((bytes, op.to_string()), Arc::clone(&p));
        }
        Ok((p, params))
    }
}

/// One tenant's driver: what it submits with, and what it has seen.
struct Driver<'a> {
    handle: &'a isola_runtime::TenantHandle,
    workload: &'a isola_model::scenario::WorkloadSpec,
    engines: &'a [isola_model::scenario::EngineModel],
    /// Where its next transfer goes in its host region.
    region: RegionCursor,
    inputs: Inputs<'a>,
    /// Each operator built once (building can be costly), for its stages.
    operators: HashMap<String, Arc<dyn isola_ops::Operator>>,
    tx: crossbeam_channel::Sender<Completion>,
    rx: crossbeam_channel::Receiver<Completion>,
    clock: &'a dyn Fn() -> Nanos,
    sizes: SizeSampler,
    /// The workload's count.
    limit: u64,
    submitted: u64,
    started: Instant,
    deadline: Option<Instant>,
    out: TenantTasks,
}

impl Driver<'_> {
    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Submits a task of `bytes` for operator `op` through the workload's
    /// stages.
    fn submit(&mut self, bytes: u64, op: &str) -> anyhow::Result<bool> {
        let (payload, params) = self.inputs.input(bytes, op)?;
        let operator = match self.operators.get(op) {
            _ if !self.inputs.computes => None,
            Some(o) => Some(Arc::clone(o)),
            None => {
                let o = live_stages::build(op, &params)?;
                self.operators.insert(op.to_string(), Arc::clone(&o));
                Some(o)
            }
        };
        let stages = live_stages::stages(
            self.workload,
            self.engines,
            operator.as_ref(),
            self.region.next(payload.len() as u64),
        )?;
        let at = (self.clock)();
        let id = self.handle.submit_stages_to(stages, payload, &self.tx)?;
        self.out.unfinished.insert(id, (at, bytes));
        Ok(true)
    }

    /// A closed loop of `n` tasks in flight.
    fn closed(&mut self, n: u32) -> anyhow::Result<()> {
        let w = self.workload;
        // A start past the run's end waits no longer than the run.
        let start = self.started + Duration::from_nanos(w.start);
        let wait_until = Instant::now().max(self.deadline.map_or(start, |d| start.min(d)));
        std::thread::sleep(wait_until.saturating_duration_since(Instant::now()));
        let mut in_flight = 0u64;
        while in_flight < u64::from(n) && self.submitted < self.limit && !self.past_deadline() {
            let bytes = self.sizes.sample();
            if self.submit(bytes, &w.op)? {
                in_flight += 1;
            }
            self.submitted += 1;
        }
        while in_flight > 0 {
            // At the run's end, what is still in flight is incomplete.
            let Some(c) = recv_until(&self.rx, self.deadline) else {
                break;
            };
            in_flight -= 1;
            self.out.record(c);
            if self.submitted < self.limit && !self.past_deadline() {
                let bytes = self.sizes.sample();
                if self.submit(bytes, &w.op)? {
                    in_flight += 1;
                }
                self.submitted += 1;
            }
        }
        Ok(())
    }

    /// Open-loop arrivals `spec`, from the streams of `seed` and tenant
    /// `index`.
    fn open(&mut self, spec: &ArrivalSpec, seed: u64, index: usize) -> anyhow::Result<()> {
        let w = self.workload;
        let mut arrivals = ArrivalProcess::new(spec, w.start, seed, index);
        while self.submitted < self.limit {
            let Some(next) = arrivals.next_arrival() else {
                break;
            };
            let at = self.started + Duration::from_nanos(next.at);
            if self.deadline.is_some_and(|d| at >= d) {
                break;
            }
            // The wall clock ends the run too: a generator that fell
            // behind stops at the run's end instead of going on.
            if self.past_deadline() {
                self.out.dropped_at_end = true;
                break;
            }
            let now = Instant::now();
            let lag = now.saturating_duration_since(at).as_nanos() as Nanos;
            self.out.worst_lag_ns = self.out.worst_lag_ns.max(lag);
            self.out.late += u64::from(lag > 1_000_000);
            std::thread::sleep(at.saturating_duration_since(now));
            let (bytes, op) = match next.traced {
                Some((bytes, op)) => (bytes, op.spec().name.as_str()),
                None => (self.sizes.sample(), w.op.as_str()),
            };
            self.submit(bytes, op)?;
            self.submitted += 1;
            self.rx.try_iter().for_each(|c| self.out.record(c));
        }
        while !self.out.unfinished.is_empty() {
            match recv_until(&self.rx, self.deadline) {
                Some(c) => self.out.record(c),
                None => break,
            }
        }
        Ok(())
    }
}

/// Submits one tenant's workload, open or closed loop, until its count,
/// its trace or the run's duration ends (`(started, deadline)`), and
/// collects its completions; `clock` is the runtime's.
fn drive_tenant(
    tenant: TenantRun<'_>,
    index: usize,
    seed: u64,
    (started, deadline): (Instant, Option<Instant>),
    clock: &dyn Fn() -> Nanos,
) -> anyhow::Result<TenantTasks> {
    let TenantRun {
        handle,
        workload: w,
        engines,
        region,
    } = tenant;
    let (tx, rx) = crossbeam_channel::unbounded::<Completion>();
    let mut driver = Driver {
        handle,
        workload: w,
        engines,
        region,
        inputs: Inputs {
            params: &w.params,
            // A workload of transfers only moves bytes: its inputs are plain text.
            computes: computes(w, engines),
            seed: seed ^ index as u64,
            text: Vec::new(),
            payloads: HashMap::new(),
            op_params: HashMap::new(),
        },
        operators: HashMap::new(),
        tx,
        rx,
        clock,
        sizes: SizeSampler::new(&w.size, seed, index),
        limit: w.count.unwrap_or(u64::MAX),
        submitted: 0,
        started,
        deadline,
        out: TenantTasks::default(),
    };
    match &w.arrival {
        ArrivalSpec::Closed(n) => driver.closed(*n)?,
        spec => driver.open(spec, seed, index)?,
    }
    Ok(driver.out)
}

impl TenantTasks {
    /// Adds what another of the tenant's workloads saw.
    fn merge(&mut self, other: TenantTasks) {
        self.completions.extend(other.completions);
        self.unfinished.extend(other.unfinished);
        self.worst_lag_ns = self.worst_lag_ns.max(other.worst_lag_ns);
        self.late += other.late;
        self.dropped_at_end |= other.dropped_at_end;
    }

    /// Keeps a completion, its output freed.
    fn record(&mut self, c: Completion) {
        self.unfinished.remove(&c.task);
        self.completions.push(c.without_output());
    }
}

/// The next completion, or `None` once `deadline` (if any) has passed.
fn recv_until(rx: &crossbeam_channel::Receiver<Completion>, deadline: Option<Instant>) -> Option<Completion> {
    match deadline {
        Some(d) => rx.recv_deadline(d).ok(),
        None => rx.recv().ok(),
    }
}

/// The run's result: every tenant's completions, in the order they came,
/// and its unfinished tasks (in flight when the run ended at `ended_ns`,
/// the runtime's clock) through the run recorder, over `elapsed` ns.
fn result(
    scenario: &Scenario,
    run: &PolicyRun,
    tasks: Vec<TenantTasks>,
    elapsed: Nanos,
    ended_ns: Nanos,
) -> PolicyResult {
    let mut recorder = RunRecorder::for_scenario(scenario, |_| true);
    let mut completions: Vec<Completion> = Vec::new();
    let mut unfinished = Vec::new();
    for (i, t) in tasks.into_iter().enumerate() {
        completions.extend(t.completions);
        unfinished.extend(
            t.unfinished
                .into_values()
                .map(|(at, bytes)| (TenantId(i as u32), at, bytes)),
        );
    }
    // In completion order, as the recorder wants them.
    completions.sort_by_key(|c| c.finished_ns);
    for c in &completions {
        record_completion(&mut recorder, c);
    }
    for (tenant, at, bytes) in unfinished {
        record_unfinished(&mut recorder, tenant, bytes, at, ended_ns);
    }
    recorder.finish(RunEnd {
        label: run.label.clone(),
        policy_name: run.name.clone(),
        duration: Some(elapsed),
        events: completions.len() as u64,
    })
}
