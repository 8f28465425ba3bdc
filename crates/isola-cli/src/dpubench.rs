//! `isola dpubench e2e`: DPUBench's end-to-end programs live
//! (`isola_experiments::dpubench`): prints the flow-table sweep
//! (throughput and loss against packet size and gap) and the
//! application-recognition sweep (latency and the server's CPU use) as
//! `dpubench::table` writes them, or the JSON report.

use crate::progress::Bar;
use anyhow::{bail, Context};
use isola_experiments::dpubench::{self, E2eConfig, Programs};
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `isola dpubench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// DPUBench's end-to-end programs (section 5.2) over isolad's packet
    /// path: starts an isolad in this process with a tenant per program
    /// (flow `kernel = "flow-table"` and `"app-recognition"`), runs
    /// `isola load udp --frame ipv4` against it as a process of its own for
    /// each point (constant inter-packet gaps, as pktgen's delay), and
    /// reports the flow table's throughput and loss against packet size and
    /// gap (Fig. 14) and application recognition's latency and server CPU
    /// use (Fig. 15, 16; a mix of payloads matching each rule, then each
    /// action alone). The defaults are scaled to a 2-core VM's loopback
    /// (DPUBench: a client machine sending to a 25 GbE BlueField-2); a run takes about 80 s.
    /// Progress goes to stderr.
    E2e(E2eArgs),
}

/// Arguments of `isola dpubench e2e`.
#[derive(Debug, clap::Args)]
pub struct E2eArgs {
    /// Which programs: flow-table, app-recognition or both.
    #[arg(long, value_name = "WHICH", default_value = "both", value_parser = ["flow-table", "app-recognition", "both"])]
    programs: String,
    /// Flow-table packet sizes (IPv4 bytes, 64 to 1500), comma-separated.
    #[arg(
        long,
        value_name = "SIZES",
        value_delimiter = ',',
        default_value = "64B,256B,512B,1024B,1500B"
    )]
    sizes: Vec<String>,
    /// Flow-table inter-packet gaps, comma-separated (e.g. 100us).
    #[arg(
        long,
        value_name = "GAPS",
        value_delimiter = ',',
        default_value = "1ms,200us,100us,50us,20us"
    )]
    gaps: Vec<String>,
    /// Application-recognition packet sizes, comma-separated.
    #[arg(
        long,
        value_name = "SIZES",
        value_delimiter = ',',
        default_value = "64B,512B,1500B"
    )]
    app_sizes: Vec<String>,
    /// Application-recognition gaps, comma-separated; each action alone
    /// runs at the first.
    #[arg(long, value_name = "GAPS", value_delimiter = ',', default_value = "1ms,200us")]
    app_gaps: Vec<String>,
    /// How long each point measures.
    #[arg(long, value_name = "TIME", default_value = "1s")]
    duration: String,
    /// Sending before each point's measurement.
    #[arg(long, value_name = "TIME", default_value = "200ms")]
    warmup: String,
    /// The client's flows (sockets, each its own 5-tuple).
    #[arg(long, value_name = "N", default_value_t = 64)]
    flows: u32,
    /// The flow table's capacity (entries).
    #[arg(long, value_name = "N", default_value_t = 65536)]
    table_capacity: u64,
    /// The flow table's shards.
    #[arg(long, value_name = "N", default_value_t = 16)]
    table_shards: u64,
    /// The daemon's processing-unit workers (replies come back in order
    /// per flow only with 1).
    #[arg(long, value_name = "N", default_value_t = 1)]
    workers: usize,
    /// How long the daemon's threads poll for work before sleeping
    /// (`[daemon] spin`, isolad's default 50us). Polling shows as server
    /// CPU use at any rate; 0us sleeps at once (less CPU, but every packet
    /// then waits for thread wake-ups, which a busy machine delays).
    #[arg(long, value_name = "TIME", default_value = "50us")]
    spin: String,
    /// Print the report as JSON on stdout instead of the tables, or with
    /// FILE, write it there (and print the tables).
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    json: Option<Option<PathBuf>>,
}

/// Runs `isola dpubench`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    match &args.command {
        Sub::E2e(a) => e2e(a),
    }
}

fn sizes(flag: &str, given: &[String]) -> anyhow::Result<Vec<u64>> {
    given
        .iter()
        .map(|s| {
            let n = isola_core::quantity::parse_size(s.trim()).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
            if !(dpubench::MIN_SIZE..=dpubench::MAX_SIZE).contains(&n) {
                bail!(
                    "{flag}: {s} is not from {}B to {}B",
                    dpubench::MIN_SIZE,
                    dpubench::MAX_SIZE
                );
            }
            Ok(n)
        })
        .collect()
}

fn gaps(flag: &str, given: &[String]) -> anyhow::Result<Vec<Duration>> {
    given
        .iter()
        .map(|g| {
            let d = isola_load::duration_flag(flag, g)?;
            if d.is_zero() || d > Duration::from_secs(1) {
                bail!("{flag}: {g} is not more than 0 and at most 1s");
            }
            Ok(d)
        })
        .collect()
}

fn e2e(a: &E2eArgs) -> anyhow::Result<()> {
    if let Some(Some(file)) = &a.json {
        crate::args::out_file("--json", file)?;
    }
    let config = E2eConfig {
        program: std::env::current_exe().context("where is this program (the client)?")?,
        programs: match a.programs.as_str() {
            "flow-table" => Programs::FlowTable,
            "app-recognition" => Programs::AppRecognition,
            _ => Programs::Both,
        },
        sizes: sizes("--sizes", &a.sizes)?,
        gaps: gaps("--gaps", &a.gaps)?,
        app_sizes: sizes("--app-sizes", &a.app_sizes)?,
        app_gaps: gaps("--app-gaps", &a.app_gaps)?,
        duration: isola_load::duration_flag("--duration", &a.duration)?,
        warmup: isola_load::duration_flag("--warmup", &a.warmup)?,
        flows: a.flows,
        table_capacity: a.table_capacity,
        table_shards: a.table_shards,
        workers: a.workers,
        spin: isola_load::duration_flag("--spin", &a.spin)?,
    };
    let report = dpubench::run(&config, &mut Bar::new(1000))?;
    crate::load::write_report(&a.json, &report, || dpubench::table(&report))
}
