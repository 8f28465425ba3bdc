//! `isola demo`: ASTRAEA's experiment, live on this machine
//! (`isola_experiments::astraea::live`): prints its table, and writes
//! results.json and results.csv.

use crate::format::table;
use crate::progress::Bar;
use anyhow::{bail, Context};
use isola_core::Nanos;
use isola_experiments::astraea::live::{self, LiveConfig, LiveResults, SoloReference};
use isola_experiments::astraea::{BS, LS};
use isola_report::text::{bytes_binary, duration};
use std::io::Write;
use std::path::PathBuf;

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

/// Runs `isola demo`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let config = config(args)?;
    let report = live::run(&config, &mut Bar::new(1000))?;
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

/// The experiment's configuration from the flags, each checked.
fn config(args: &Args) -> anyhow::Result<LiveConfig> {
    if !(args.scale > 0.0 && args.scale <= 1.0) {
        bail!("--scale: {} is not in (0, 1]", args.scale);
    }
    let split_bytes =
        isola_model::quantity::parse_size(&args.split).map_err(|e| anyhow::anyhow!("--split: {e}"))?;
    for p in &args.policies {
        isola_core::policy::find_policy(p).with_context(|| format!("--policies: `{p}`"))?;
    }
    Ok(LiveConfig {
        scale: args.scale,
        split_bytes,
        pin_threads: !args.no_pin,
        queue_depth: args.queue_depth,
        policies: args.policies.clone(),
    })
}

fn print_report(out: &mut impl Write, r: &LiveResults) -> std::io::Result<()> {
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
        bytes_binary(r.setup.split_bytes as f64),
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

fn write_out(dir: &PathBuf, r: &LiveResults) -> anyhow::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        args: Args,
    }

    fn parse(flags: &[&str]) -> Args {
        Wrap::try_parse_from(std::iter::once("demo").chain(flags.iter().copied()))
            .unwrap()
            .args
    }

    /// `isola demo` with no flags runs what `isola repro astraea --live`
    /// runs: the library's defaults.
    #[test]
    fn flag_defaults_are_the_experiments_defaults() {
        assert_eq!(config(&parse(&[])).unwrap(), LiveConfig::default());
    }

    #[test]
    fn bad_flags_name_the_flag() {
        for (flags, says) in [
            (&["--scale", "2"][..], "--scale"),
            (&["--split", "12parsecs"][..], "--split"),
            (&["--policies", "nonesuch"][..], "--policies: `nonesuch`"),
        ] {
            let err = format!("{:#}", config(&parse(flags)).unwrap_err());
            assert!(err.contains(says), "{flags:?}: {err}");
        }
    }
}
