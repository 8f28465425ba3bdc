//! `isola profile`: measure operators' service time against input size on
//! this machine, fit it, and save the profile (the runtime's and the
//! simulator's cost model: `service = { profile = "FILE", op = "NAME" }`).

use crate::progress::Bar;
use anyhow::Context;
use isola_runtime::profile::{profile_operators, ProfileFile};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `isola profile`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Operators to profile, comma-separated (default: all).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    ops: Vec<String>,
    /// Payload sizes to measure, comma-separated, each with its unit (B,
    /// KiB, MiB, GiB, KB, MB, GB).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "64B,1KiB,16KiB,256KiB,1MiB"
    )]
    sizes: Vec<String>,
    /// The largest payload to allocate for one task: a larger --sizes
    /// entry is refused before anything runs.
    #[arg(long, value_name = "SIZE", default_value = crate::args::DEFAULT_MAX_PAYLOAD)]
    max_payload: String,
    /// An operator parameter (e.g. k=128 for erasure coding), for every
    /// profiled operator that takes it; repeatable.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// Seconds of measurement per operator.
    #[arg(long, value_name = "S", default_value_t = 0.3)]
    seconds: f64,
    /// The profile file to write (JSON).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Print the profile as JSON instead of the table.
    #[arg(long)]
    json: bool,
}

/// Runs `isola profile`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let ops = crate::args::operators(&args.ops)?;
    let sizes = crate::args::sizes(&args.sizes, crate::args::max_payload(&args.max_payload)?)?;
    crate::args::seconds(args.seconds)?;
    crate::args::out_file("--out", &args.out)?;
    let mut given = BTreeMap::new();
    for p in &args.params {
        let (k, v) = p
            .split_once('=')
            .with_context(|| format!("--param `{p}`: expected KEY=VALUE"))?;
        given.insert(k.trim().to_string(), v.trim().to_string());
    }
    let budget = Duration::from_secs_f64(args.seconds);
    let mut progress = Bar::new(ops.len() as u64);
    let mut tell = |i: usize, op: &str| progress.update(i as u64, op.to_string());
    let machine = isola_runtime::host::machine();
    let profile = profile_operators(&ops, &given, &sizes, budget, machine, &mut tell)?;
    drop(progress);
    profile.save(&args.out)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &profile)?;
        writeln!(out)?;
        return Ok(());
    }
    write!(out, "{}", isola_runtime::profile::table(&profile))?;
    writeln!(
        out,
        "profile written to {} (predictions interpolate the measured points; \"affine err\" is how far the best straight line strays from them)",
        args.out.display()
    )?;
    Ok(())
}
