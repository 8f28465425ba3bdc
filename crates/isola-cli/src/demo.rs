//! `isola demo`: ASTRAEA's experiment, live on this machine
//! (`isola_experiments::astraea::live`), in rounds: prints its results
//! (`LiveResults::text`: per policy the median and range of each figure,
//! the best policy marked, the verdict and any warning about the host),
//! and writes results.json and results.csv.

use crate::progress::Bar;
use anyhow::{bail, Context};
use isola_experiments::astraea::live::{self, LiveConfig, LiveResults};
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
    /// Scale the task counts, a number in (0, 1]: 1 = the paper's 128 LS
    /// and 256 BS tasks; smaller for a quick look (0.05 runs in seconds,
    /// but with 6 LS tasks a run, the first, which meets a BS task already
    /// in service whole, is 17% on its own: judge isolation at scale 1).
    #[arg(long, value_name = "F", default_value_t = 1.0, allow_negative_numbers = true)]
    scale: f64,
    /// Rounds: every policy runs once a round, and each figure is reported
    /// as its median and range over the rounds.
    #[arg(long, value_name = "N", default_value_t = 3)]
    rounds: usize,
    /// Subtask size for the isolation policies (bytes or with a unit).
    #[arg(long, value_name = "SIZE", default_value = "128KiB")]
    split: String,
    /// When the isolation policies split a task: `for_latency` (only while
    /// a latency-sensitive tenant other than its own is active: the LS
    /// tenant's own tasks run whole), `contended` (while any other tenant
    /// is active), `always`.
    #[arg(long, value_name = "WHEN", default_value = "for_latency")]
    split_when: String,
    /// Do not pin the dispatcher and the EC worker to cores of their own.
    #[arg(long)]
    no_pin: bool,
    /// Run the dispatcher and the EC worker in the normal scheduling class.
    /// By default they run in a real-time class (SCHED_FIFO), where the
    /// system permits (root, CAP_SYS_NICE or an RLIMIT_RTPRIO; a warning
    /// says when not), so that a busy host cannot take their cores.
    #[arg(long)]
    no_realtime: bool,
    /// How long Isola's threads poll for work before sleeping, in
    /// microseconds (default 50; the runtime's threads never poll in a
    /// real-time class, where polling would hold the core from the
    /// tenants, so there it is the tenants' waits' only).
    #[arg(long, value_name = "US")]
    poll_us: Option<u64>,
    /// Engine queue depth under the isolation policies: pieces waiting at
    /// the engine beyond the one in service (a hardware queue; 0 = the
    /// dispatcher hands over one piece at a time).
    #[arg(long, value_name = "N", default_value_t = 1)]
    queue_depth: usize,
    /// Isolation policies to compare with native, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "fcfs,drr,sfq,wlbvt,mclock")]
    policies: Vec<String>,
    /// Run each tenant as a process of its own (`isola load`) attached to
    /// an isolad started for each run, over its Unix socket and
    /// shared-memory rings, instead of as threads of this process; the
    /// table adds the cross-process path's cost per LS task.
    #[arg(long)]
    processes: bool,
}

/// Runs `isola demo`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let config = config(args)?;
    crate::args::out_dir("--out", &args.out)?;
    let report = live::run(&config, &mut Bar::new(1000))?;
    write_out(&args.out, &report)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", report.text())?;
        writeln!(out, "results written to {}", args.out.display())?;
    }
    Ok(())
}

/// The experiment's configuration from the flags, each checked.
fn config(args: &Args) -> anyhow::Result<LiveConfig> {
    if !(args.scale > 0.0 && args.scale <= 1.0) {
        bail!("--scale: {} is not in (0, 1]", args.scale);
    }
    if args.rounds == 0 {
        bail!("--rounds: at least 1");
    }
    let split_bytes = match isola_model::quantity::parse_size(&args.split) {
        Ok(0) => bail!("--split: must be at least 1B"),
        Ok(n) => n,
        Err(e) => bail!("--split: {e}"),
    };
    for p in &args.policies {
        isola_core::policy::find_policy(p).with_context(|| format!("--policies: `{p}`"))?;
    }
    let window = isola_runtime::DEFAULT_CONTENTION_WINDOW_NS;
    let split_when = match args.split_when.as_str() {
        "for_latency" => isola_runtime::SplitWhen::ForLatency { window },
        "contended" => isola_runtime::SplitWhen::Contended { window },
        "always" => isola_runtime::SplitWhen::Always,
        other => bail!("--split-when: `{other}`: use for_latency, contended or always"),
    };
    Ok(LiveConfig {
        scale: args.scale,
        split_bytes,
        split_when,
        pin_threads: !args.no_pin,
        realtime: !args.no_realtime,
        poll: args.poll_us.map(std::time::Duration::from_micros),
        queue_depth: args.queue_depth,
        policies: args.policies.clone(),
        rounds: args.rounds,
        processes: match args.processes {
            true => Some(std::env::current_exe().context("--processes: where is this program?")?),
            false => None,
        },
    })
}

fn write_out(dir: &PathBuf, r: &LiveResults) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("results.json");
    std::fs::write(&path, serde_json::to_string_pretty(r)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    let path = dir.join("results.csv");
    std::fs::write(&path, r.csv()).with_context(|| format!("writing {}", path.display()))?;
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
            (&["--scale", "-1"][..], "--scale: -1 is not in (0, 1]"),
            (&["--rounds", "0"][..], "--rounds"),
            (&["--split-when", "never"][..], "--split-when: `never`"),
            (&["--split", "12parsecs"][..], "--split"),
            (&["--policies", "nonesuch"][..], "--policies: `nonesuch`"),
        ] {
            let err = format!("{:#}", config(&parse(flags)).unwrap_err());
            assert!(err.contains(says), "{flags:?}: {err}");
        }
    }
}
