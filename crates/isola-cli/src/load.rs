//! `isola load`: a tenant load generator, run as its own process against
//! a running `isolad`. It attaches as a tenant with `isola_client`,
//! registers one operator, lays out its inputs (deterministic
//! pseudo-random bytes, made valid for the operator) and output rooms in
//! the tenant's arena, and submits tasks either open loop (arrivals at a
//! rate, Poisson or evenly spaced, that never wait for answers) or closed
//! loop (a fixed number of tasks in flight), for a count of tasks or a
//! duration, after an optional warm-up. It reports the latency of its
//! tasks on its own clock and on the daemon's (arrival to completion),
//! its throughput, and its tasks by outcome, as a table or as JSON.
//!
//! Open loop loses no task: a task due when the ring (or every output
//! room) is full waits for a slot, and the wait is counted as a
//! backpressure delay; its latency from the time it was due is reported
//! beside the latency from its submission. Ctrl-C stops submitting, waits
//! for the answers of the tasks in flight, and still reports (a second
//! Ctrl-C ends the process at once).
//!
//! Like every command it holds no scheduling logic: the daemon schedules;
//! this module checks flags, drives the client ([`drive`]) and prints the
//! [`report`].
//!
//! `isola load udp` ([`udp`]) is the packet generator: UDP datagrams to the
//! daemon's packet path, each flow a socket of its own.

mod drive;
mod report;
mod udp;

use anyhow::{anyhow, bail, Context};
use isola_client::{Client, ClientError};
use isola_core::quantity::{parse_duration, parse_rate, parse_size};
use isola_core::RateUnit;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Exponentially distributed gaps (a Poisson process).
    Poisson,
    /// Evenly spaced.
    Constant,
}

/// How tasks are sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// Arrivals at `rate` tasks per second, spaced by `arrivals`.
    Open {
        /// Tasks per second.
        rate: f64,
        /// Their spacing.
        arrivals: Arrivals,
    },
    /// `concurrency` tasks in flight.
    Closed {
        /// Tasks in flight.
        concurrency: u64,
    },
}

/// When the measurement ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// After this many measured tasks.
    Count(u64),
    /// After this long.
    Duration(Duration),
}

/// The run, checked: what [`drive::run`] needs besides the client.
#[derive(Debug, Clone)]
pub struct Plan {
    /// How tasks are sent.
    pub mode: Mode,
    /// When the measurement ends.
    pub length: Length,
    /// Submitting before the measurement.
    pub warmup: Duration,
    /// The seed of the arrivals.
    pub seed: u64,
}

/// The most tasks a run may count or keep in flight, and the highest rate:
/// far beyond what one tenant process can submit.
const MAX_COUNT: u64 = 10_000_000_000;
const MAX_CONCURRENCY: u64 = 1 << 20;
const MAX_RATE: f64 = 100e6;
/// The lowest rate: a task every 1,000 s on average (a run is at most a day).
const MIN_RATE: f64 = 0.001;
/// The longest measurement or warm-up.
const MAX_RUN: Duration = Duration::from_secs(24 * 3600);

/// `--param`s as a map, each KEY=VALUE.
fn params(given: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for p in given {
        let Some((k, v)) = p.split_once('=').filter(|(k, _)| !k.trim().is_empty()) else {
            bail!("--param: `{p}` is not KEY=VALUE");
        };
        if map.insert(k.trim().to_string(), v.to_string()).is_some() {
            bail!("--param: `{}` is given twice", k.trim());
        }
    }
    Ok(map)
}

/// A duration flag: with its unit, at most [`MAX_RUN`].
/// A load generator's `--count` or `--duration`, and its `--warmup`,
/// checked: what both `isola load` and `isola load udp` take.
pub(crate) fn run_length(
    count: Option<u64>,
    duration: Option<&str>,
    warmup: &str,
) -> anyhow::Result<(Length, Duration)> {
    let length = match (count, duration) {
        (Some(n), None) => {
            if n == 0 || n > MAX_COUNT {
                bail!("--count: {n} is not from 1 to {MAX_COUNT}");
            }
            Length::Count(n)
        }
        (None, Some(d)) => {
            let d = duration_flag("--duration", d)?;
            if d.is_zero() {
                bail!("--duration: must be more than 0s");
            }
            Length::Duration(d)
        }
        _ => bail!("give one of --count and --duration"),
    };
    Ok((length, duration_flag("--warmup", warmup)?))
}

pub(crate) fn duration_flag(flag: &str, text: &str) -> anyhow::Result<Duration> {
    let ns = parse_duration(text).map_err(|e| anyhow!("{flag}: {e}"))?;
    let d = Duration::from_nanos(ns);
    if d > MAX_RUN {
        bail!("{flag}: {text} is longer than a day");
    }
    Ok(d)
}

/// Checks the flags that need no daemon: the plan, the sizes, the room.
fn plan(args: &RingsArgs) -> anyhow::Result<Plan> {
    let mode = match (&args.rate, args.concurrency) {
        (Some(rate), None) => {
            let r = parse_rate(rate).map_err(|e| anyhow!("--rate: {e}"))?;
            if r.unit() != RateUnit::OpsPerSec {
                bail!("--rate: {rate} is a data rate; give tasks per second (e.g. 10k/s)");
            }
            if !(MIN_RATE..=MAX_RATE).contains(&r.per_sec()) {
                bail!("--rate: {rate} is not from {MIN_RATE} to {MAX_RATE:e} tasks per second");
            }
            Mode::Open {
                rate: r.per_sec(),
                arrivals: args.arrivals.unwrap_or(Arrivals::Poisson),
            }
        }
        (None, Some(n)) => {
            if args.arrivals.is_some() {
                bail!("--arrivals: only an open loop (--rate) has arrivals");
            }
            if n == 0 || n > MAX_CONCURRENCY {
                bail!("--concurrency: {n} is not from 1 to {MAX_CONCURRENCY}");
            }
            Mode::Closed { concurrency: n }
        }
        _ => bail!("give one of --rate (open loop) and --concurrency (closed loop)"),
    };
    let (length, warmup) = run_length(args.count, args.duration.as_deref(), &args.warmup)?;
    Ok(Plan {
        mode,
        length,
        warmup,
        seed: args.seed,
    })
}

/// `--sizes`, each with its unit and at least a byte (the arena's limit is
/// checked once attached).
fn sizes(given: &[String]) -> anyhow::Result<Vec<u64>> {
    given
        .iter()
        .map(|s| match parse_size(s) {
            Ok(0) => bail!("--sizes: a size must be at least one byte"),
            Ok(n) => Ok(n),
            Err(e) => bail!("--sizes: {e}"),
        })
        .collect()
}

/// The next number of the SplitMix64 sequence at `state` (the inputs'
/// bytes and the Poisson arrivals: deterministic for a seed).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Deterministic pseudo-random bytes from `seed`.
fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&splitmix64(&mut state).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// One input size's bytes and the output room its tasks get.
#[derive(Debug, Clone)]
pub struct Input {
    /// The size asked for (`--sizes`).
    pub size: u64,
    /// The input's bytes (the size's random payload, made valid for the
    /// operator: of the same length for operators that take any bytes).
    pub bytes: Vec<u8>,
    /// Room for the output.
    pub room: u64,
}

/// Each size's input, made valid for `op`, with the room its output needs:
/// `room` if given, else the operator's output measured here plus an eighth.
fn inputs(
    op: &str,
    params: &BTreeMap<String, String>,
    sizes: &[u64],
    room: Option<u64>,
    seed: u64,
) -> anyhow::Result<Vec<Input>> {
    let operator =
        isola_ops::build_operator(op, params).map_err(|e| anyhow!("--op {op} (with its --param): {e}"))?;
    // No more than a GiB of inputs is made here (the arena bounds them
    // further once attached).
    let total: u64 = sizes.iter().sum();
    if total > 1 << 30 {
        bail!("--sizes: {total} bytes of inputs in all; at most 1GiB");
    }
    sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            let payload = random_bytes(
                size as usize,
                seed ^ (i as u64 + 1).wrapping_mul(0x5851_F42D_4C95_7F2D),
            );
            let bytes = isola_ops::valid_input(op, params, &payload)
                .with_context(|| format!("--sizes: making a {size}-byte input for {op}"))?;
            let room = match room {
                Some(r) => r,
                None => {
                    let out = operator
                        .run(&bytes)
                        .with_context(|| format!("--sizes: {op} fails on its own {size}-byte input"))?;
                    let n = out.len() as u64;
                    (n + n / 8).max(1)
                }
            };
            Ok(Input { size, bytes, room })
        })
        .collect()
}

/// The daemon's refusal or a failure to reach it, said with the socket.
fn attach_error(socket: &Path, tenant: &str, e: ClientError) -> anyhow::Error {
    match e {
        ClientError::Refused(reason) => anyhow!(
            "isolad at {} refused tenant `{tenant}`: {reason}",
            socket.display()
        ),
        ClientError::Control(isola_wire::control::ControlError::Os { what, source }) => anyhow!(
            "cannot reach isolad at {}: {what}: {source} (is the daemon running, and is this its socket?)",
            socket.display()
        ),
        other => anyhow!(
            "attaching to isolad at {} as `{tenant}`: {other}",
            socket.display()
        ),
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
    let plan = plan(args)?;
    let params = params(&args.params)?;
    isola_ops::find_operator(&args.op).map_err(|e| anyhow!("--op: {e}"))?;
    let sizes = sizes(&args.sizes)?;
    let room = match &args.output_room {
        Some(r) => match parse_size(r) {
            Ok(0) => bail!("--output-room: must be at least 1B"),
            Ok(n) => Some(n),
            Err(e) => bail!("--output-room: {e}"),
        },
        None => None,
    };
    let spin = args
        .spin
        .as_deref()
        .map(|s| duration_flag("--spin", s))
        .transpose()?;
    if let Some(Some(file)) = &args.json {
        crate::args::out_file("--json", file)?;
    }
    let inputs = inputs(&args.op, &params, &sizes, room, args.seed)?;

    let mut client = Client::connect(&args.socket, &args.tenant)
        .map_err(|e| attach_error(&args.socket, &args.tenant, e))?;
    if let Some(spin) = spin {
        client.set_spin(spin);
    }
    let handle = client.register(&args.op, &params).map_err(|e| match e {
        ClientError::Failed(reason) => anyhow!("--op {}: isolad refused to register it: {reason}", args.op),
        other => anyhow!("registering {} with isolad: {other}", args.op),
    })?;
    let layout = drive::Layout::new(&client, &inputs, &plan)?;
    layout.write_inputs(&client, &inputs)?;
    if args.start_on_stdin {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready")?;
        out.flush()?;
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .context("--start-on-stdin: reading the start")?;
    }

    // Ctrl-C (or SIGTERM) stops submitting; a second one ends the process.
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&stop))
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&stop)))
            .context("handling Ctrl-C")?;
    }
    let outcome = drive::run(&mut client, handle, &inputs, &layout, &plan, &stop);
    let report = report::Report::new(args, &plan, &inputs, &layout, &outcome.tally);

    write_report(&args.json, &report, || report.render())?;
    match (outcome.error, outcome.tally.stopped) {
        (Some(e), _) => Err(anyhow!(
            "the run ended early: {e} (the report counts what was answered)"
        )),
        (None, drive::Stopped::Draining) => Err(anyhow!(
            "the run ended early: isolad at {} drains (the report counts what was answered)",
            args.socket.display()
        )),
        (None, _) => Ok(()),
    }
}

/// Writes a run's report as `--json` asks: JSON on standard output
/// (`--json`), JSON to FILE and the table on standard output (`--json
/// FILE`), or the table only (no `--json`). Both load generators end here.
pub(crate) fn write_report<R: serde::Serialize>(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_key_value_pairs_given_once() {
        let p = params(&["k=4".into(), "m = 2".into()]).unwrap();
        assert_eq!(p.get("k").map(String::as_str), Some("4"));
        assert_eq!(p.get("m").map(String::as_str), Some(" 2"));
        for bad in ["k", "=4"] {
            let e = params(&[bad.into()]).unwrap_err().to_string();
            assert!(e.starts_with("--param:"), "{e}");
        }
        let e = params(&["k=1".into(), "k=2".into()]).unwrap_err().to_string();
        assert!(e.contains("twice"), "{e}");
    }

    #[test]
    fn random_bytes_are_deterministic_and_seeded() {
        assert_eq!(random_bytes(100, 7), random_bytes(100, 7));
        assert_ne!(random_bytes(100, 7), random_bytes(100, 8));
        assert_eq!(random_bytes(13, 1).len(), 13);
        assert_eq!(random_bytes(13, 1)[..], random_bytes(64, 1)[..13]);
    }

    #[test]
    fn the_default_room_holds_the_operators_output() {
        let ins = inputs("crc32c", &BTreeMap::new(), &[64, 4096], None, 1).unwrap();
        assert_eq!(ins[1].bytes.len(), 4096);
        assert!(ins.iter().all(|i| i.room >= 4));
        let e = inputs(
            "crc32c",
            &BTreeMap::from([("nope".into(), "1".into())]),
            &[64],
            None,
            1,
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--op crc32c"), "{e}");
    }
}
