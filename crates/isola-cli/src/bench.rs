//! `isola bench ops`: DPUBench's operator sweep (`isola_load::ops`), as
//! a table, JSON, CSV and one SVG plot per operator. `isola bench sim`:
//! the simulator's events per second for each policy and tenant count
//! (`isola_load::sim`).

use crate::progress::Bar;
use anyhow::{bail, Context};
use isola_load::ops::{payload_of, Sweep};
use std::io::Write;
use std::path::{Path, PathBuf};

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
    let sweep = isola_load::ops::sweep(&ops, &sizes, &args.threads, args.seconds, &mut Bar::new(1000))?;
    if let Some(dir) = &args.out {
        write_out(dir, &sweep)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &sweep)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", sweep.table())?;
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
    let points = isola_load::sim::measure(&policies, &args.tenants, args.seconds, &mut Bar::new(1000));
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &points)?;
        writeln!(out)?;
        return Ok(());
    }
    write!(out, "{}", isola_load::sim::table(&points))?;
    Ok(())
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
    let path = dir.join("results.csv");
    std::fs::write(&path, sweep.csv()).with_context(|| format!("writing {}", path.display()))?;
    for (name, chart) in sweep.charts() {
        let path = dir.join(format!("{name}.svg"));
        std::fs::write(&path, chart.render()).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
