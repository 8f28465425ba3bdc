//! The tenant load generator (`isola load`), run as its own process
//! against a running `isolad`. It attaches as a tenant with
//! `isola_client`, registers one operator, lays out its inputs
//! (deterministic pseudo-random bytes, made valid for the operator) and
//! output rooms in the tenant's arena ([`Session::open`]), and submits
//! tasks either open loop (arrivals at a rate, Poisson or evenly spaced,
//! that never wait for answers) or closed loop (a fixed number of tasks in
//! flight), for a count of tasks or a duration, after an optional warm-up
//! ([`Session::run`]). Its [`RingsReport`] has the latency of its tasks on its
//! own clock and on the daemon's (arrival to completion), its throughput,
//! and its tasks by outcome.
//!
//! Open loop loses no task: a task due when the ring (or every output
//! room) is full waits for a slot, and the wait is counted as a
//! backpressure delay; its latency from the time it was due is reported
//! beside the latency from its submission. The caller's stop flag stops
//! submitting; the answers of the tasks in flight are still waited for.
//!
//! It holds no scheduling logic: the daemon schedules.

mod drive;
mod report;

pub use drive::{Backpressure, Counts, Events, Failed, Layout, Rejected, RunOutcome, SizeTally, Tally};
pub use report::{Latency, ModeReport, RingsReport, SizeReport, Throughput};

use crate::{duration_flag, run_length, Length, Progress};
use anyhow::{anyhow, bail, Context};
use isola_client::{Client, ClientError};
use isola_core::quantity::{parse_rate, parse_size};
use isola_core::RateUnit;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// How open-loop arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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

/// The run, checked: what [`Session::run`] needs besides the inputs.
#[derive(Debug, Clone)]
pub struct RingsPlan {
    /// How tasks are sent.
    pub mode: Mode,
    /// When the measurement ends.
    pub length: Length,
    /// Submitting before the measurement.
    pub warmup: Duration,
    /// The seed of the arrivals.
    pub seed: u64,
}

/// A run's settings as `isola load`'s flags give them, unchecked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The daemon's socket (`--socket`).
    pub socket: PathBuf,
    /// The tenant to act as (`--tenant`).
    pub tenant: String,
    /// The operator every task runs (`--op`).
    pub op: String,
    /// Its parameters, each KEY=VALUE (`--param`).
    pub params: Vec<String>,
    /// Input sizes, each with its unit (`--sizes`).
    pub sizes: Vec<String>,
    /// Room for each task's output (`--output-room`).
    pub output_room: Option<String>,
    /// Open loop: tasks per second (`--rate`).
    pub rate: Option<String>,
    /// Open loop: the arrivals' spacing (`--arrivals`).
    pub arrivals: Option<Arrivals>,
    /// Closed loop: tasks in flight (`--concurrency`).
    pub concurrency: Option<u64>,
    /// Tasks to measure (`--count`).
    pub count: Option<u64>,
    /// Time to measure (`--duration`).
    pub duration: Option<String>,
    /// Time to submit first without counting (`--warmup`).
    pub warmup: String,
    /// How long the client polls before it sleeps (`--spin`).
    pub spin: Option<String>,
    /// The seed of the inputs' bytes and the arrivals (`--seed`).
    pub seed: u64,
}

/// The settings that need no daemon, checked.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The run.
    pub plan: RingsPlan,
    /// The operator's parameters.
    pub params: BTreeMap<String, String>,
    /// The input sizes, bytes.
    pub sizes: Vec<u64>,
    /// The output room asked for, bytes.
    pub room: Option<u64>,
    /// How long the client polls before it sleeps.
    pub spin: Option<Duration>,
}

/// The most tasks a run may keep in flight, and the highest rate: far
/// beyond what one tenant process can submit.
const MAX_CONCURRENCY: u64 = 1 << 20;
const MAX_RATE: f64 = 100e6;
/// The lowest rate: a task every 1,000 s on average (a run is at most a day).
const MIN_RATE: f64 = 0.001;

impl Settings {
    /// Checks the settings that need no daemon: the plan, the parameters,
    /// the operator, the sizes, the room and the spin.
    pub fn check(&self) -> anyhow::Result<Checked> {
        let plan = self.plan()?;
        let params = params(&self.params)?;
        isola_ops::find_operator(&self.op).map_err(|e| anyhow!("--op: {e}"))?;
        let sizes = sizes(&self.sizes)?;
        let room = match &self.output_room {
            Some(r) => match parse_size(r) {
                Ok(0) => bail!("--output-room: must be at least 1B"),
                Ok(n) => Some(n),
                Err(e) => bail!("--output-room: {e}"),
            },
            None => None,
        };
        let spin = self
            .spin
            .as_deref()
            .map(|s| duration_flag("--spin", s))
            .transpose()?;
        Ok(Checked {
            plan,
            params,
            sizes,
            room,
            spin,
        })
    }

    /// The plan: open or closed loop, and how long.
    fn plan(&self) -> anyhow::Result<RingsPlan> {
        let mode = match (&self.rate, self.concurrency) {
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
                    arrivals: self.arrivals.unwrap_or(Arrivals::Poisson),
                }
            }
            (None, Some(n)) => {
                if self.arrivals.is_some() {
                    bail!("--arrivals: only an open loop (--rate) has arrivals");
                }
                if n == 0 || n > MAX_CONCURRENCY {
                    bail!("--concurrency: {n} is not from 1 to {MAX_CONCURRENCY}");
                }
                Mode::Closed { concurrency: n }
            }
            _ => bail!("give one of --rate (open loop) and --concurrency (closed loop)"),
        };
        let (length, warmup) = run_length(self.count, self.duration.as_deref(), &self.warmup)?;
        Ok(RingsPlan {
            mode,
            length,
            warmup,
            seed: self.seed,
        })
    }
}

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
pub fn inputs(
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
            let payload = crate::random_bytes(
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

/// A tenant attached to isolad, its operator registered and its inputs
/// written in its arena: ready to run.
pub struct Session {
    client: Client,
    handle: u32,
    /// Where the inputs and the output rooms lie.
    pub layout: Layout,
}

impl Session {
    /// Attaches as `settings`' tenant, registers its operator and lays out
    /// `inputs` (an error says which setting the daemon refused).
    pub fn open(settings: &Settings, checked: &Checked, inputs: &[Input]) -> anyhow::Result<Session> {
        let (socket, tenant, op) = (&settings.socket, &settings.tenant, &settings.op);
        let mut client = Client::connect(socket, tenant).map_err(|e| attach_error(socket, tenant, e))?;
        if let Some(spin) = checked.spin {
            client.set_spin(spin);
        }
        let handle = client.register(op, &checked.params).map_err(|e| match e {
            ClientError::Failed(reason) => anyhow!("--op {op}: isolad refused to register it: {reason}"),
            other => anyhow!("registering {op} with isolad: {other}"),
        })?;
        let layout = Layout::new(&client, inputs, &checked.plan)?;
        layout.write_inputs(&client, inputs)?;
        Ok(Session {
            client,
            handle,
            layout,
        })
    }

    /// Runs `plan` with `inputs` (as laid out) until its count or duration,
    /// `stop`, the daemon's drain, or an error; then waits for the answers
    /// of the tasks in flight.
    pub fn run(
        &mut self,
        inputs: &[Input],
        plan: &RingsPlan,
        stop: &AtomicBool,
        progress: &mut dyn Progress,
    ) -> RunOutcome {
        drive::run(
            &mut self.client,
            self.handle,
            inputs,
            &self.layout,
            plan,
            stop,
            progress,
        )
    }
}

impl RunOutcome {
    /// Whether the run ran to its end: else why it ended early, for the
    /// daemon at `socket` (the report counts what was answered).
    pub fn result(self, socket: &Path) -> anyhow::Result<()> {
        match (self.error, self.tally.stopped) {
            (Some(e), _) => Err(anyhow!(
                "the run ended early: {e} (the report counts what was answered)"
            )),
            (None, crate::Stopped::Draining) => Err(anyhow!(
                "the run ended early: isolad at {} drains (the report counts what was answered)",
                socket.display()
            )),
            (None, _) => Ok(()),
        }
    }
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
