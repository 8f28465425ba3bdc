//! `isola bench ops`: DPUBench's operator sweep. Throughput (MB/s and
//! operations/s) of every operator for every input size and thread count,
//! as a table, JSON, CSV and one SVG plot per operator. `isola bench sim`:
//! the simulator's events per second for each policy and tenant count.

use crate::format::table_with;
use crate::progress::Bar;
use anyhow::{bail, Context};
use isola_ops::{build_operator, find_operator, sample_params, text_payload, valid_input, Operator};
use isola_report::text::{bytes_binary, duration};
use isola_report::{Axis, Chart, Format, Series};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Arguments of `isola bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// Throughput of every operator for each input size and thread count
    /// (DPUBench's sweep). Each operator runs on its own valid input: a
    /// compressible text payload of the given size, compressed for
    /// decompressors, signed for verifiers, packetised for packet operators.
    Ops(OpsArgs),
    /// The simulator's speed: events per second of wall time for each
    /// policy and tenant count on OSMOSIS' PU contention scaled up (32
    /// PUs, every tenant backlogged; issue 17's goal: >= 5 M events/s at
    /// 128 tenants for every policy).
    Sim(SimArgs),
}

/// Arguments of `isola bench sim`.
#[derive(Debug, clap::Args)]
pub struct SimArgs {
    /// Policies to measure, comma-separated (default: every registered one;
    /// see `isola policies`).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    policies: Vec<String>,
    /// Tenant counts, comma-separated (1 to 65536).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "128,1024")]
    tenants: Vec<usize>,
    /// Seconds of measurement per policy and tenant count (at least one run).
    #[arg(long, value_name = "S", default_value_t = 0.5)]
    seconds: f64,
    /// Print one JSON object with every point to stdout instead of the table.
    #[arg(long)]
    json: bool,
}

/// One policy and tenant count of `isola bench sim`: its speed, or why
/// the policy cannot run the setup (its builder's refusal, e.g. a static
/// partition in `mode = "slots"` with more tenants than slots).
#[derive(Debug, Clone, Serialize)]
struct SimPoint {
    policy: String,
    tenants: usize,
    /// Events one run processes (2 ms simulated).
    events_per_run: u64,
    runs: u32,
    seconds: f64,
    events_per_s: f64,
    ns_per_event: f64,
    /// Events per second of this thread's CPU time: on a shared machine,
    /// what the simulator would do with a core to itself.
    events_per_cpu_s: Option<f64>,
    cannot_run: Option<String>,
}

/// Arguments of `isola bench ops`.
#[derive(Debug, clap::Args)]
pub struct OpsArgs {
    /// Operators to measure, comma-separated (default: all; see `isola op --list`).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    ops: Vec<String>,
    /// Payload sizes, comma-separated, each with its unit (B, KiB, MiB,
    /// GiB, KB, MB, GB).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "64B,256B,1KiB,4KiB,16KiB,64KiB,256KiB,1MiB"
    )]
    sizes: Vec<String>,
    /// The largest payload to allocate for one task: a larger --sizes
    /// entry is refused before anything runs.
    #[arg(long, value_name = "SIZE", default_value = crate::args::DEFAULT_MAX_PAYLOAD)]
    max_payload: String,
    /// Thread counts, comma-separated; each thread runs the operator on its own.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "1")]
    threads: Vec<usize>,
    /// Seconds of measurement per operator, size and thread count.
    #[arg(long, value_name = "S", default_value_t = 0.2)]
    seconds: f64,
    /// Print one JSON object with every point to stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write results.json, results.csv and one SVG plot per operator here.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write each size's payload to DIR/payload-SIZE.bin, so that other
    /// tools (`lz4 -b`, `zstd -b`, `openssl`) can be measured on the same bytes.
    #[arg(long, value_name = "DIR")]
    save_payloads: Option<PathBuf>,
}

/// One measured operator, size and thread count.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Operator name.
    pub op: String,
    /// DPUBench category.
    pub category: String,
    /// Payload bytes per operation (what throughput counts).
    pub size_bytes: u64,
    /// Bytes the operator actually read per operation (payload plus framing,
    /// or compressed size for a decompressor).
    pub input_bytes: u64,
    /// Threads running the operator at once.
    pub threads: usize,
    /// Operations completed.
    pub operations: u64,
    /// Wall-clock seconds measured.
    pub seconds: f64,
    /// Operations per second, all threads together.
    pub ops_per_s: f64,
    /// Payload megabytes (10^6) per second, all threads together.
    pub mb_per_s: f64,
    /// Mean time of one operation on one thread, in ns.
    pub latency_ns: f64,
}

/// The whole sweep, as `--json` prints it.
#[derive(Debug, Serialize)]
struct Sweep {
    seconds_per_point: f64,
    cpus: usize,
    points: Vec<Point>,
}

/// Runs `isola bench`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    match &args.what {
        What::Ops(a) => run_ops(a),
        What::Sim(a) => run_sim(a),
    }
}

fn run_ops(args: &OpsArgs) -> anyhow::Result<()> {
    let ops = crate::args::operators(&args.ops)?;
    let sizes = crate::args::sizes(&args.sizes, crate::args::max_payload(&args.max_payload)?)?;
    if let Some(t) = args.threads.iter().find(|&&t| t == 0 || t > 1024) {
        bail!("--threads: {t} is not a thread count from 1 to 1024");
    }
    crate::args::seconds(args.seconds)?;
    if let Some(dir) = &args.out {
        crate::args::out_dir("--out", dir)?;
    }
    if let Some(dir) = &args.save_payloads {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for &size in &sizes {
            let path = dir.join(format!("payload-{size}.bin"));
            std::fs::write(&path, payload_of(size)).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    let total = (ops.len() * sizes.len() * args.threads.len()) as u64;
    let mut progress = Bar::new(total);
    let mut points = Vec::new();
    for name in &ops {
        let params = sample_params(name);
        let op = build_operator(name, &params)?;
        let category = find_operator(name)?.category;
        for &size in &sizes {
            let payload = payload_of(size);
            let input = valid_input(name, &params, &payload)
                .with_context(|| format!("making a {size}-byte input for {name}"))?;
            op.run(&input)
                .with_context(|| format!("{name} failed on its own valid {size}-byte input"))?;
            for &threads in &args.threads {
                progress.update(
                    points.len() as u64,
                    format!("{name} {} x{threads}", bytes_binary(size as f64)),
                );
                let (operations, seconds) = measure(op.as_ref(), &input, threads, args.seconds);
                let ops_per_s = operations as f64 / seconds;
                points.push(Point {
                    op: name.to_string(),
                    category: category.to_string(),
                    size_bytes: size,
                    input_bytes: input.len() as u64,
                    threads,
                    operations,
                    seconds,
                    ops_per_s,
                    mb_per_s: ops_per_s * size as f64 / 1e6,
                    latency_ns: seconds * threads as f64 / operations.max(1) as f64 * 1e9,
                });
            }
        }
    }
    drop(progress);
    let sweep = Sweep {
        seconds_per_point: args.seconds,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        points,
    };
    if let Some(dir) = &args.out {
        write_out(dir, &sweep)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &sweep)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", render_table(&sweep.points))?;
        if let Some(dir) = &args.out {
            writeln!(out, "results and plots written to {}", dir.display())?;
        }
    }
    Ok(())
}

fn run_sim(args: &SimArgs) -> anyhow::Result<()> {
    crate::args::seconds(args.seconds)?;
    let policies: Vec<String> = if args.policies.is_empty() {
        isola_core::POLICIES.iter().map(|p| p.name.to_string()).collect()
    } else {
        args.policies.clone()
    };
    for p in &policies {
        isola_core::policy::registry::find_policy(p).map_err(|e| anyhow::anyhow!("--policies: {e}"))?;
    }
    if let Some(n) = args.tenants.iter().find(|&&n| !(1..=65_536).contains(&n)) {
        bail!("--tenants: {n} is not a tenant count from 1 to 65536");
    }
    let mut progress = Bar::new((policies.len() * args.tenants.len()) as u64);
    let mut points = Vec::new();
    for p in &policies {
        for &n in &args.tenants {
            progress.update(points.len() as u64, format!("{p} x{n}"));
            let mut point = SimPoint {
                policy: p.clone(),
                tenants: n,
                events_per_run: 0,
                runs: 0,
                seconds: 0.0,
                events_per_s: 0.0,
                ns_per_event: 0.0,
                events_per_cpu_s: None,
                cannot_run: None,
            };
            // The policy and the count were checked above: what fails here
            // is the policy refusing the setup.
            let cpu_before = isola_runtime::host::thread_cpu_ns();
            let speed = isola_sim::speed::contention_scenario(n, p).and_then(|scenario| {
                isola_sim::speed::measure(&scenario, scenario.run.seed, args.seconds)
                    .map_err(|e| e.to_string())
            });
            let cpu = isola_runtime::host::thread_cpu_ns()
                .zip(cpu_before)
                .map(|(after, before)| after.saturating_sub(before));
            match speed {
                Ok(speed) => {
                    point.events_per_run = speed.events;
                    point.runs = speed.runs;
                    point.seconds = speed.seconds;
                    point.events_per_s = speed.events_per_sec();
                    point.ns_per_event = speed.ns_per_event();
                    // The CPU time includes building the scenario (small
                    // beside the runs), so this is a slight underestimate.
                    point.events_per_cpu_s = cpu
                        .filter(|&ns| ns > 0)
                        .map(|ns| (speed.events * u64::from(speed.runs)) as f64 / (ns as f64 / 1e9));
                }
                Err(e) => point.cannot_run = Some(e),
            }
            points.push(point);
        }
    }
    drop(progress);
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &points)?;
        writeln!(out)?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = points
        .iter()
        .filter(|p| p.cannot_run.is_none())
        .map(|p| {
            vec![
                p.policy.clone(),
                p.tenants.to_string(),
                p.events_per_run.to_string(),
                p.runs.to_string(),
                format!("{:.2}", p.events_per_s / 1e6),
                format!("{:.0}", p.ns_per_event),
                p.events_per_cpu_s
                    .map_or("-".into(), |e| format!("{:.2}", e / 1e6)),
            ]
        })
        .collect();
    let header = [
        "policy",
        "tenants",
        "events/run",
        "runs",
        "M events/s",
        "ns/event",
        "M events/CPU-s",
    ];
    write!(out, "{}", table_with(&header, &rows, 1))?;
    for p in &points {
        if let Some(why) = &p.cannot_run {
            writeln!(out, "{} with {} tenants cannot run: {why}", p.policy, p.tenants)?;
        }
    }
    Ok(())
}

/// The payload of `size` bytes every operator gets (seeded by its size).
fn payload_of(size: u64) -> Vec<u8> {
    text_payload(size as usize, size)
}

/// Runs `op` on `input` on `threads` threads for about `seconds`; returns
/// the operations completed by all threads and the wall-clock time.
///
/// Each thread times batches of operations sized to about a millisecond,
/// so reading the clock costs nothing next to the operations.
fn measure(op: &dyn Operator, input: &[u8], threads: usize, seconds: f64) -> (u64, f64) {
    let single = {
        let t = Instant::now();
        std::hint::black_box(op.run(input).ok());
        t.elapsed().as_secs_f64().max(1e-8)
    };
    let batch = ((1e-3 / single) as u64).clamp(1, 1 << 20);
    let budget = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let operations: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let mut done = 0u64;
                    while start.elapsed() < budget {
                        for _ in 0..batch {
                            std::hint::black_box(op.run(std::hint::black_box(input)).ok());
                        }
                        done += batch;
                    }
                    done
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or(0)).sum()
    });
    (operations, start.elapsed().as_secs_f64())
}

fn render_table(points: &[Point]) -> String {
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            vec![
                p.op.clone(),
                p.category.clone(),
                bytes_binary(p.size_bytes as f64),
                p.threads.to_string(),
                format!("{:.1}", p.mb_per_s),
                format!("{:.0}", p.ops_per_s),
                duration(p.latency_ns),
            ]
        })
        .collect();
    table_with(
        &[
            "operator", "category", "size", "threads", "MB/s", "ops/s", "latency",
        ],
        &rows,
        2,
    )
}

fn write_out(dir: &Path, sweep: &Sweep) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let create = |name: &str| {
        let path = dir.join(name);
        std::fs::File::create(&path)
            .map(std::io::BufWriter::new)
            .with_context(|| format!("creating {}", path.display()))
    };
    serde_json::to_writer_pretty(create("results.json")?, sweep)?;
    let mut csv = create("results.csv")?;
    writeln!(
        csv,
        "op,category,size_bytes,input_bytes,threads,operations,seconds,ops_per_s,mb_per_s,latency_ns"
    )?;
    for p in &sweep.points {
        writeln!(
            csv,
            "{},{},{},{},{},{},{:.6},{:.3},{:.3},{:.1}",
            p.op,
            p.category,
            p.size_bytes,
            p.input_bytes,
            p.threads,
            p.operations,
            p.seconds,
            p.ops_per_s,
            p.mb_per_s,
            p.latency_ns
        )?;
    }
    csv.flush()?;
    let mut names: Vec<&str> = sweep.points.iter().map(|p| p.op.as_str()).collect();
    names.dedup();
    for name in names {
        let mine: Vec<&Point> = sweep.points.iter().filter(|p| p.op == name).collect();
        let mut threads: Vec<usize> = mine.iter().map(|p| p.threads).collect();
        threads.sort_unstable();
        threads.dedup();
        let series = threads
            .iter()
            .map(|&t| Series {
                name: format!("{t} thread{}", if t == 1 { "" } else { "s" }),
                points: mine
                    .iter()
                    .filter(|p| p.threads == t)
                    .map(|p| (p.size_bytes as f64, p.mb_per_s))
                    .collect(),
            })
            .collect();
        let chart = Chart::lines(
            format!("{name}: throughput by input size"),
            Axis::new("payload bytes per operation")
                .log2()
                .format(Format::Bytes)
                .ticks_at_data(),
            Axis::new("MB/s"),
            series,
        );
        let path = dir.join(format!("{name}.svg"));
        std::fs::write(&path, chart.render()).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
