//! `isola load`: the tenant load generator, run as its own process
//! against a running `isolad` (`isola_load::rings`), and `isola load udp`,
//! the packet generator ([`udp`], `isola_load::udp`). This module takes
//! the flags, stops a run on Ctrl-C (a second Ctrl-C ends the process at
//! once), shows its progress and prints its report as a table
//! (`isola_load::render`) or JSON; the generators, their checks, their
//! figures and their tables are `isola_load`'s.

mod udp;

use crate::progress::Bar;
use anyhow::{bail, Context};
use isola_load::rings::{self, Session, Settings};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Arguments of `isola load`: the tenant load generator over the rings
/// (no subcommand, as it always was) or `isola load udp`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    /// `udp`: the packet generator.
    #[command(subcommand)]
    kind: Option<Kind>,
    /// Without a subcommand: the tenant load generator's flags.
    #[command(flatten)]
    rings: Option<RingsArgs>,
}

/// `isola load`'s subcommands.
#[derive(Debug, clap::Subcommand)]
enum Kind {
    /// Send UDP datagrams to isolad's packet path (`[daemon] udp`) from
    /// several flows, at a rate or as fast as a window allows; reports
    /// sent, received, lost, throughput and reply latency per flow.
    Udp(udp::Args),
}

/// Arguments of `isola load` over the shared-memory rings.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["rate", "concurrency"])))]
#[command(group(clap::ArgGroup::new("length").required(true).args(["count", "duration"])))]
pub struct RingsArgs {
    /// The daemon's socket (its configuration's `socket`).
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
    /// The tenant to act as (the daemon checks this process's uid and gid).
    #[arg(long, value_name = "NAME")]
    tenant: String,
    /// The operator every task runs (see `isola op --list`).
    #[arg(long, value_name = "OP")]
    op: String,
    /// An operator parameter, KEY=VALUE; repeat for several.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// Input sizes, comma-separated, each with its unit; tasks take them in
    /// turn.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "64B")]
    sizes: Vec<String>,
    /// Room for each task's output (default: the operator's output on the
    /// input, measured here once, plus an eighth).
    #[arg(long, value_name = "SIZE")]
    output_room: Option<String>,
    /// Open loop: tasks arrive at this rate, answered or not (e.g. 10k/s).
    #[arg(long, value_name = "RATE")]
    rate: Option<String>,
    /// How open-loop arrivals are spaced: poisson (exponential gaps) or
    /// constant (default poisson; only with --rate).
    #[arg(long, value_name = "KIND", value_enum)]
    arrivals: Option<Arrivals>,
    /// Closed loop: this many tasks in flight, each answer sending the next.
    #[arg(long, value_name = "N")]
    concurrency: Option<u64>,
    /// Measure this many tasks (after the warm-up), then stop.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Measure for this long (after the warm-up), then stop (e.g. 10s).
    #[arg(long, value_name = "TIME")]
    duration: Option<String>,
    /// Submit for this long first, without counting (e.g. 1s).
    #[arg(long, value_name = "TIME", default_value = "0s")]
    warmup: String,
    /// How long the client polls its completion ring before it sleeps on
    /// the socket (e.g. 50us; 0s sleeps at once).
    #[arg(long, value_name = "TIME")]
    spin: Option<String>,
    /// Seed of the inputs' bytes and the Poisson arrivals.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Print the report as JSON on stdout instead of the table, or with
    /// FILE, write it there (and print the table).
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    json: Option<Option<PathBuf>>,
    /// Attach and lay out the inputs, print `ready` on standard output,
    /// then start when a line (or the end) arrives on standard input: a
    /// harness starts several tenant processes at the same moment.
    #[arg(long)]
    start_on_stdin: bool,
}

/// How open-loop arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Arrivals {
    /// Exponentially distributed gaps (a Poisson process).
    Poisson,
    /// Evenly spaced.
    Constant,
}

impl From<Arrivals> for rings::Arrivals {
    fn from(a: Arrivals) -> Self {
        match a {
            Arrivals::Poisson => rings::Arrivals::Poisson,
            Arrivals::Constant => rings::Arrivals::Constant,
        }
    }
}

/// Runs `isola load`: over the rings, or `isola load udp`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    match (&args.kind, &args.rings) {
        (Some(Kind::Udp(udp)), _) => udp::run(udp),
        (None, Some(rings)) => run_rings(rings),
        // clap asks for --socket and the rest before this is reached.
        (None, None) => bail!("give the tenant load generator's flags (--socket ...) or `udp`"),
    }
}

/// Runs `isola load` over the rings.
fn run_rings(args: &RingsArgs) -> anyhow::Result<()> {
    let settings = Settings {
        socket: args.socket.clone(),
        tenant: args.tenant.clone(),
        op: args.op.clone(),
        params: args.params.clone(),
        sizes: args.sizes.clone(),
        output_room: args.output_room.clone(),
        rate: args.rate.clone(),
        arrivals: args.arrivals.map(Into::into),
        concurrency: args.concurrency,
        count: args.count,
        duration: args.duration.clone(),
        warmup: args.warmup.clone(),
        spin: args.spin.clone(),
        seed: args.seed,
    };
    let checked = settings.check()?;
    if let Some(Some(file)) = &args.json {
        crate::args::out_file("--json", file)?;
    }
    let inputs = rings::inputs(&args.op, &checked.params, &checked.sizes, checked.room, args.seed)?;
    let mut session = Session::open(&settings, &checked, &inputs)?;
    if args.start_on_stdin {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready")?;
        out.flush()?;
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .context("--start-on-stdin: reading the start")?;
    }
    let stop = stop_on_signals()?;
    let outcome = session.run(&inputs, &checked.plan, &stop, &mut Bar::new(1000));
    let report = rings::RingsReport::new(&settings, &checked, &inputs, &session.layout, &outcome.tally);
    write_report(&args.json, &report, || isola_load::render::rings(&report))?;
    outcome.result(&args.socket)
}

/// A flag that Ctrl-C (or SIGTERM) sets, so that a run stops and still
/// reports; a second one ends the process at once.
pub(crate) fn stop_on_signals() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&stop))
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&stop)))
            .context("handling Ctrl-C")?;
    }
    Ok(stop)
}

/// Writes a run's report as `--json` asks: JSON on standard output
/// (`--json`), JSON to FILE and the table on standard output (`--json
/// FILE`), or the table only (no `--json`). Both load generators end here.
pub fn write_report<R: serde::Serialize>(
    json: &Option<Option<PathBuf>>,
    report: &R,
    render: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    match json {
        Some(None) => {
            let mut out = std::io::stdout().lock();
            serde_json::to_writer_pretty(&mut out, report)?;
            writeln!(out)?;
        }
        Some(Some(file)) => {
            let text = serde_json::to_string_pretty(report)?;
            std::fs::write(file, text + "\n")
                .with_context(|| format!("--json: writing {}", file.display()))?;
            print!("{}", render());
        }
        None => print!("{}", render()),
    }
    Ok(())
}
