//! `isola demo`: ASTRAEA's experiment, live on this machine. A
//! latency-sensitive tenant (128 erasure-coding tasks of 8 KiB blocks) and a
//! bandwidth-sensitive one (256 tasks of 64 KiB blocks), both with 128 data
//! and 32 parity blocks per task and closed loop, share one EC engine; the
//! same work runs natively (FCFS, unsplit) and under each isolation policy.

use crate::format::{duration, table};
use crate::progress::Progress;
use anyhow::{bail, Context};
use isola_core::{LatencyObjective, Nanos, Slo, TenantClass, TenantId};
use isola_runtime::profile::{profile_operator, Profile};
use isola_runtime::workload::{run_closed_loops, ClosedLoop};
use isola_runtime::{Completion, EngineConfig, Mode, RuntimeBuilder};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `isola demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object with every result instead of the table.
    #[arg(long)]
    json: bool,
    /// Folder for results.json and results.csv.
    #[arg(long, value_name = "DIR", default_value = "isola-demo-results")]
    out: PathBuf,
    /// Scale the task counts (1 = the paper's 128 and 256; smaller for a quick look).
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    scale: f64,
    /// Subtask size for the isolation policies (bytes or with a unit).
    #[arg(long, value_name = "SIZE", default_value = "128KiB")]
    split: String,
    /// Do not pin the dispatcher and the EC worker to cores of their own.
    #[arg(long)]
    no_pin: bool,
    /// Engine queue depth under the isolation policies: pieces waiting at
    /// the engine beyond the one in service (a hardware queue; 0 = the
    /// dispatcher hands over one piece at a time).
    #[arg(long, value_name = "N", default_value_t = 1)]
    queue_depth: usize,
    /// Isolation policies to compare with native, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "fcfs,drr,sfq,wlbvt,mclock")]
    policies: Vec<String>,
}

/// The experiment's fixed setup (ASTRAEA's artifact).
const DATA_BLOCKS: usize = 128;
const PARITY_BLOCKS: usize = 32;
const LS_BLOCK: usize = 8 << 10;
const BS_BLOCK: usize = 64 << 10;
const LS_TASKS: usize = 128;
const BS_TASKS: usize = 256;
const LS_WEIGHT: f64 = 16.0;
/// Runs of the bandwidth tenant alone, per policy, to measure overhead.
const OVERHEAD_REPS: usize = 3;
/// Tasks in each of those runs.
const OVERHEAD_TASKS: usize = 48;

/// One tenant's results under one policy.
#[derive(Debug, Clone, Serialize)]
pub struct TenantResult {
    tasks: usize,
    /// Fraction of tasks over the SLA.
    pub sla_violation_rate: f64,
    /// Latency percentiles.
    pub latency_ns: Percentiles,
    throughput_bps: f64,
}

/// Latency percentiles, ns.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: Nanos,
    /// 99th percentile.
    pub p99: Nanos,
}

/// One policy's results.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyResult {
    /// Per tenant.
    pub tenants: BTreeMap<String, TenantResult>,
    /// Bandwidth tenant alone: this policy's throughput over native's
    /// (median of alternating runs).
    pub overhead_ratio: f64,
    /// Bandwidth tenant's throughput while sharing, over its solo throughput.
    pub bandwidth_vs_solo: f64,
    /// Bandwidth tenant's share of the engine while the latency tenant runs,
    /// over its share alone: its bandwidth against solo while they share
    /// (the whole-run figure above hides the loss: the latency tenant's
    /// tasks overlap only the first few percent of the bandwidth tenant's).
    pub bandwidth_while_sharing: f64,
    /// The solo measurements this row's SLAs were judged against.
    solo: SoloReference,
}

/// The demo's results.
#[derive(Debug, Serialize)]
pub struct DemoReport {
    /// What ran.
    pub experiment: &'static str,
    setup: Setup,
    /// Per policy (`native` included).
    pub policies: BTreeMap<String, PolicyResult>,
}

#[derive(Debug, Serialize)]
struct Setup {
    code: String,
    ls_tasks: usize,
    ls_task_bytes: usize,
    bs_tasks: usize,
    bs_task_bytes: usize,
    split_bytes: u64,
    ls_sla: String,
    bs_sla: String,
}

/// The latency-sensitive tenant's name.
pub const LS: &str = "latency-sensitive";
/// The bandwidth-sensitive tenant's name.
pub const BS: &str = "bandwidth-sensitive";

/// Runs `isola demo`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let report = experiment(args)?;
    write_out(&args.out, &report)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        print_report(&mut out, &report)?;
        writeln!(out, "results written to {}", args.out.display())?;
    }
    Ok(())
}

impl Args {
    /// The defaults, as `isola demo` with no arguments (for `isola repro --live`).
    pub fn defaults() -> Args {
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            args: Args,
        }
        // Parsing no arguments only applies the declared defaults.
        <Wrap as clap::Parser>::try_parse_from(["demo"])
            .expect("every argument has a default")
            .args
    }
}

/// Runs the experiment and returns its results (nothing printed).
pub fn experiment(args: &Args) -> anyhow::Result<DemoReport> {
    if !(args.scale > 0.0 && args.scale <= 1.0) {
        bail!("--scale: {} is not in (0, 1]", args.scale);
    }
    let split =
        isola_model::quantity::parse_size(&args.split).map_err(|e| anyhow::anyhow!("--split: {e}"))?;
    for p in &args.policies {
        isola_core::policy::find_policy(p).with_context(|| format!("--policies: `{p}`"))?;
    }
    let ls_tasks = ((LS_TASKS as f64 * args.scale).round() as usize).max(4);
    let bs_tasks = ((BS_TASKS as f64 * args.scale).round() as usize).max(4);
    let params: BTreeMap<String, String> = [
        ("k".to_string(), DATA_BLOCKS.to_string()),
        ("m".to_string(), PARITY_BLOCKS.to_string()),
    ]
    .into();
    let ls_payload = Arc::new(isola_ops::text_payload(DATA_BLOCKS * LS_BLOCK, 1));
    let bs_payload = Arc::new(isola_ops::text_payload(DATA_BLOCKS * BS_BLOCK, 2));

    let overhead_tasks = ((OVERHEAD_TASKS as f64 * args.scale).round() as usize).max(2);
    // Per row: the bandwidth tenant alone (natively, and under the policy),
    // the latency tenant alone, both.
    let runs = (2 + OVERHEAD_REPS) + (2 + 2 * OVERHEAD_REPS) * args.policies.len();
    let mut progress = Progress::new(runs as u64 + 1);
    progress.update(0, "profiling ec-encode");
    let sizes = [split, ls_payload.len() as u64, bs_payload.len() as u64];
    let profile = Profile {
        machine: "this machine".into(),
        operators: vec![profile_operator(
            "ec-encode",
            &params,
            &sizes,
            Duration::from_millis(600),
        )?],
    };
    let cost: Arc<dyn isola_core::CostModel> = Arc::new(profile.cost_model());

    let closed_loop = |t: u32, payload: &Arc<Vec<u8>>, tasks: usize| ClosedLoop {
        tenant: TenantId(t),
        op: "ec-encode".into(),
        params: params.clone(),
        payload: Arc::clone(payload),
        tasks,
        window: 1,
    };
    let ls_loop = |t: u32| closed_loop(t, &ls_payload, ls_tasks);
    let bs_loop = |t: u32| closed_loop(t, &bs_payload, bs_tasks);
    let mut step = 1u64;
    let mut run = |mode: &Mode, label: &str, loops: &[ClosedLoop]| -> anyhow::Result<Vec<Vec<Completion>>> {
        progress.update(step, label.to_string());
        step += 1;
        let rt = runtime(mode, &cost, split, args)?;
        let out = run_closed_loops(&rt, loops)?;
        rt.shutdown();
        Ok(out)
    };

    // A split subtask's predicted cost: DRR's quantum (its `auto` would
    // take the largest task seen, an unsplit 8 MiB one).
    let subtask_ns = cost.predict("ec-encode", split).unwrap_or(1).max(1);
    let native = Mode::Native;
    let mut policies = BTreeMap::new();
    for name in std::iter::once("native").chain(args.policies.iter().map(String::as_str)) {
        let mode = if name == "native" {
            native.clone()
        } else {
            let mut policy_params = BTreeMap::new();
            if isola_core::policy::find_policy(name)?.name == "drr" {
                policy_params.insert("quantum".to_string(), subtask_ns.to_string());
            }
            Mode::Isolated {
                policy: name.to_string(),
                params: policy_params,
            }
        };
        // The bandwidth tenant alone, natively and (for a policy) under the
        // policy, alternating, on shorter runs: the overhead of isolation
        // is the median ratio, and the native runs are the bandwidth
        // tenant's solo reference. Then the latency tenant alone. All are
        // measured right before the shared run they judge: this machine's
        // speed drifts by tens of percent over a minute.
        let short = ClosedLoop {
            tasks: overhead_tasks,
            ..bs_loop(1)
        };
        let mut ratios = Vec::new();
        let mut bs_alone = Vec::new();
        for rep in 1..=OVERHEAD_REPS {
            let label = format!("{name}: bandwidth tenant alone ({rep}/{OVERHEAD_REPS})");
            let theirs = run(&native, &label, std::slice::from_ref(&short))?.remove(0);
            if mode != native {
                let ours = run(&mode, &label, std::slice::from_ref(&short))?.remove(0);
                ratios.push(throughput(&ours) / throughput(&theirs).max(f64::MIN_POSITIVE));
            }
            bs_alone.push(theirs);
        }
        ratios.sort_by(f64::total_cmp);
        let overhead_ratio = ratios.get(ratios.len() / 2).copied().unwrap_or(1.0);
        let ls_alone = run(&native, &format!("{name}: latency tenant alone"), &[ls_loop(0)])?.remove(0);
        let solo = SoloReference {
            ls_service_ns: median(ls_alone.iter().map(|c| c.service_ns)),
            bs_service_ns: median(bs_alone.iter().flatten().map(|c| c.service_ns)),
            bs_throughput_bps: median(bs_alone.iter().map(|run| throughput(run))),
            bs_engine_share: median(bs_alone.iter().map(|run| engine_share(run, span(run)))),
        };
        let both = run(&mode, &format!("{name}: both tenants"), &[ls_loop(0), bs_loop(1)])?;
        policies.insert(name.to_string(), evaluate(&both, solo, overhead_ratio)?);
    }
    drop(progress);

    let report = DemoReport {
        experiment:
            "ASTRAEA (SIGCOMM'25 poster): LS 8 KiB x 128 + BS 64 KiB x 256 erasure-coding tasks on one engine",
        setup: Setup {
            code: format!("Reed-Solomon {DATA_BLOCKS} data + {PARITY_BLOCKS} parity blocks"),
            ls_tasks,
            ls_task_bytes: ls_payload.len(),
            bs_tasks,
            bs_task_bytes: bs_payload.len(),
            split_bytes: split,
            ls_sla: "completion within 2x the task's solo service time".into(),
            bs_sla: "at least 50% of solo bandwidth per task (completion within 2x its solo service time)"
                .into(),
        },
        policies,
    };
    Ok(report)
}

/// A runtime with one EC engine (one worker: one accelerator) and the two
/// tenants; isolation policies split and keep the engine queue empty.
fn runtime(
    mode: &Mode,
    cost: &Arc<dyn isola_core::CostModel>,
    split: u64,
    args: &Args,
) -> anyhow::Result<isola_runtime::Runtime> {
    let mut b = RuntimeBuilder::new();
    let mut engine =
        EngineConfig::new("ec", &["ec-encode"], 1, Arc::clone(cost)).with_queue_depth(args.queue_depth);
    if *mode != Mode::Native {
        engine = engine.with_split(split);
    }
    b.engine(engine);
    b.tenant(
        LS,
        Slo {
            weight: LS_WEIGHT,
            class: TenantClass::LatencySensitive,
            latency: Some(LatencyObjective::ServiceMultiple(2.0)),
            ..Slo::default()
        },
    );
    b.tenant(
        BS,
        Slo {
            class: TenantClass::BandwidthSensitive,
            ..Slo::default()
        },
    );
    b.mode(mode.clone());
    // The EC worker gets a core of its own, the dispatcher another: on this
    // two-core machine that took the latency tenant's violations under
    // sfq from 24-88% (threads moved around) to 4-5% over repeated runs.
    b.pin_threads(!args.no_pin);
    Ok(b.start()?)
}

/// The median (the upper one of an even count; the default when empty).
fn median<T: Copy + Default + PartialOrd>(values: impl Iterator<Item = T>) -> T {
    let mut v: Vec<T> = values.collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn quantile(sorted: &[Nanos], q: f64) -> Nanos {
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len().max(1)) - 1;
    sorted.get(i).copied().unwrap_or(0)
}

/// Input bytes per second from the first submission to the last completion.
fn throughput(done: &[Completion]) -> f64 {
    let first = done.iter().map(|c| c.submitted_ns).min().unwrap_or(0);
    let last = done.iter().map(|c| c.finished_ns).max().unwrap_or(0);
    let bytes: u64 = done.iter().map(|c| c.bytes).sum();
    bytes as f64 * 1e9 / (last.saturating_sub(first)).max(1) as f64
}

/// Each tenant alone on the engine, natively, right before a shared run:
/// the references its SLAs are judged against.
#[derive(Debug, Clone, Copy, Serialize)]
struct SoloReference {
    /// Median service time of a latency-sensitive task.
    ls_service_ns: Nanos,
    /// Median service time of a bandwidth-sensitive task.
    bs_service_ns: Nanos,
    /// The bandwidth tenant's throughput (median over its solo runs).
    bs_throughput_bps: f64,
    /// The bandwidth tenant's share of the engine's time when alone.
    bs_engine_share: f64,
}

/// First submission to last completion of `done`.
fn span(done: &[Completion]) -> (Nanos, Nanos) {
    let first = done.iter().map(|c| c.submitted_ns).min().unwrap_or(0);
    let last = done.iter().map(|c| c.finished_ns).max().unwrap_or(0);
    (first, last)
}

/// The share of `(from, to)` that `done`'s tasks kept the engine busy, each
/// task's service spread evenly over its start-to-finish interval.
fn engine_share(done: &[Completion], (from, to): (Nanos, Nanos)) -> f64 {
    let busy: f64 = done
        .iter()
        .map(|c| {
            let start = c.started_ns.unwrap_or(c.submitted_ns);
            let (lo, hi) = (start.max(from), c.finished_ns.min(to));
            let length = c.finished_ns.saturating_sub(start).max(1);
            c.service_ns as f64 * hi.saturating_sub(lo) as f64 / length as f64
        })
        .sum();
    busy / to.saturating_sub(from).max(1) as f64
}

/// Both tenants' results. A task violates its SLA when it completed later
/// than twice its tenant's solo service time (ASTRAEA's "2x hardware
/// time"; for the bandwidth tenant, the per-task form of "at least half
/// its solo bandwidth").
fn evaluate(
    both: &[Vec<Completion>],
    solo: SoloReference,
    overhead_ratio: f64,
) -> anyhow::Result<PolicyResult> {
    let mut tenants = BTreeMap::new();
    for (name, done, reference) in [
        (LS, &both[0], solo.ls_service_ns),
        (BS, &both[1], solo.bs_service_ns),
    ] {
        if let Some(c) = done.iter().find(|c| c.result.is_err()) {
            bail!("a {name} task failed: {:?}", c.result.as_ref().err());
        }
        let mut latencies: Vec<Nanos> = done.iter().map(Completion::latency_ns).collect();
        latencies.sort_unstable();
        let violations = done.iter().filter(|c| c.latency_ns() > 2 * reference).count();
        tenants.insert(
            name.to_string(),
            TenantResult {
                tasks: done.len(),
                sla_violation_rate: violations as f64 / done.len().max(1) as f64,
                latency_ns: Percentiles {
                    p50: quantile(&latencies, 0.5),
                    p99: quantile(&latencies, 0.99),
                },
                throughput_bps: throughput(done),
            },
        );
    }
    let bandwidth_vs_solo = tenants[BS].throughput_bps / solo.bs_throughput_bps.max(f64::MIN_POSITIVE);
    let bandwidth_while_sharing =
        engine_share(&both[1], span(&both[0])) / solo.bs_engine_share.max(f64::MIN_POSITIVE);
    Ok(PolicyResult {
        tenants,
        overhead_ratio,
        bandwidth_vs_solo,
        bandwidth_while_sharing,
        solo,
    })
}

fn print_report(out: &mut impl Write, r: &DemoReport) -> std::io::Result<()> {
    writeln!(out, "{}", r.experiment)?;
    let span = |f: fn(&SoloReference) -> Nanos| {
        let v: Vec<Nanos> = r.policies.values().map(|p| f(&p.solo)).collect();
        let (lo, hi) = (
            v.iter().min().copied().unwrap_or(0),
            v.iter().max().copied().unwrap_or(0),
        );
        format!("{}-{}", duration(lo as f64), duration(hi as f64))
    };
    writeln!(
        out,
        "{}; solo service time, measured before each row: LS {} per task, BS {} per task; \
         subtasks of {} under isolation\n",
        r.setup.code,
        span(|s| s.ls_service_ns),
        span(|s| s.bs_service_ns),
        crate::svg::bytes_binary(r.setup.split_bytes as f64),
    )?;
    let rows: Vec<Vec<String>> = r
        .policies
        .iter()
        .map(|(name, p)| {
            let (ls, bs) = (&p.tenants[LS], &p.tenants[BS]);
            vec![
                name.clone(),
                format!("{:.2}%", ls.sla_violation_rate * 100.0),
                duration(ls.latency_ns.p50 as f64),
                duration(ls.latency_ns.p99 as f64),
                format!("{:.2}%", bs.sla_violation_rate * 100.0),
                duration(bs.latency_ns.p50 as f64),
                duration(bs.latency_ns.p99 as f64),
                format!("{:.2}", p.bandwidth_vs_solo),
                format!("{:.2}", p.bandwidth_while_sharing),
                format!("{:.3}", p.overhead_ratio),
            ]
        })
        .collect();
    let header = [
        "policy",
        "LS SLA viol",
        "LS p50",
        "LS p99",
        "BS SLA viol",
        "BS p50",
        "BS p99",
        "BS bw/solo",
        "BS bw/solo while LS runs",
        "alone/native",
    ];
    writeln!(out, "{}", table(&header, &rows))?;
    writeln!(
        out,
        "ASTRAEA reports 47.66% LS SLA violations natively and 14.84% with ASTRAEA, under 4% overhead alone."
    )
}

fn write_out(dir: &PathBuf, r: &DemoReport) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("results.json");
    std::fs::write(&path, serde_json::to_string_pretty(r)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    let mut csv =
        String::from("policy,tenant,tasks,sla_violation_rate,p50_ns,p99_ns,throughput_bps,overhead_ratio\n");
    for (name, p) in &r.policies {
        for (t, x) in &p.tenants {
            csv.push_str(&format!(
                "{name},{t},{},{:.6},{},{},{:.0},{:.4}\n",
                x.tasks,
                x.sla_violation_rate,
                x.latency_ns.p50,
                x.latency_ns.p99,
                x.throughput_bps,
                p.overhead_ratio
            ));
        }
    }
    let path = dir.join("results.csv");
    std::fs::write(&path, csv).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
