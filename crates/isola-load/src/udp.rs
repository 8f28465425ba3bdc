//! `isola load udp`: a packet generator (pktgen's job), run as its own
//! process against `isolad`'s packet path (`[daemon] udp`). It opens
//! `--flows` UDP sockets on `--bind` (ports the system picks, or
//! consecutive ports from `--src-port` so that the daemon's flow rules can
//! match them), each one 5-tuple, connects them to `--to`, and sends
//! datagrams round robin over the flows: at a rate (`--arrivals` evenly
//! spaced, Poisson, or in bursts), or as fast as a window of packets in
//! flight per flow allows (`--rate max`). Payload sizes are fixed or drawn
//! from a distribution ([`parse_size_dist`]).
//!
//! The daemon's kernel output replaces the payload (crc32c answers 4
//! bytes), so a reply cannot name its packet: each flow keeps its packets
//! in flight in sending order and a reply is matched to the oldest
//! (replies of one flow come back in order: one flow, one kernel, one
//! queue). With `--echo` (the reply is the packet itself: an echo kernel,
//! or `--echo-baseline`) a reply is matched by the sequence number that
//! every packet carries in its first 8 bytes. A packet not answered within
//! `--timeout` of its sending is lost; a run ends once every packet is
//! answered or lost, so a daemon that does not listen costs one timeout,
//! never a hang. The caller's stop flag stops sending; the replies of the
//! packets in flight are still taken.
//!
//! `--echo-baseline` starts a plain batched UDP echo server in this
//! process ([`EchoServer`]) and sends to it instead: the same generator
//! against the cheapest server, for the packet path's overhead.

mod drive;
mod echo;
pub mod frame;
mod report;

pub use drive::{FlowTally, InFlight, Pending, RunOutcome, Tally};
pub use echo::EchoServer;
pub use report::{FlowReport, PaceReport, Throughput, UdpReport};

use crate::{duration_flag, run_length, Length, Progress};
use anyhow::{anyhow, bail, Context};
use isola_core::quantity::{parse_rate, parse_size};
use isola_core::RateUnit;
use isola_model::scenario::SizeDist;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A run's settings as `isola load udp`'s flags give them, unchecked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where to send (`--to`); none with `echo_baseline`.
    pub to: Option<SocketAddr>,
    /// The address the flows' sockets bind (`--bind`).
    pub bind: IpAddr,
    /// How many flows (`--flows`).
    pub flows: u32,
    /// The first flow's source port (`--src-port`).
    pub src_port: Option<u16>,
    /// Payload sizes, as [`parse_size_dist`] reads them (`--size`).
    pub size: String,
    /// Packets per second, or `max` (`--rate`).
    pub rate: String,
    /// How packets at a rate are spaced, as [`parse_arrivals`] reads it
    /// (`--arrivals`).
    pub arrivals: Option<String>,
    /// With `max`: packets in flight per flow (`--window`).
    pub window: Option<u64>,
    /// Packets to measure (`--count`).
    pub count: Option<u64>,
    /// Time to measure (`--duration`).
    pub duration: Option<String>,
    /// Time to send first without counting (`--warmup`).
    pub warmup: String,
    /// When an unanswered packet is lost (`--timeout`).
    pub timeout: String,
    /// Replies carry the packet back (`--echo`).
    pub echo: bool,
    /// Send to an echo server of this process's own (`--echo-baseline`).
    pub echo_baseline: bool,
    /// Send ECN-capable and count the replies' marks (`--ecn`).
    pub ecn: bool,
    /// Each datagram a whole IPv4/UDP packet (`--frame ipv4`).
    pub ipv4: bool,
    /// Payload heads, one a line (`--payloads`).
    pub payloads: Option<PathBuf>,
    /// The seed of the payloads, the sizes and the arrivals (`--seed`).
    pub seed: u64,
}

/// The largest UDP payload over IPv4 (65,535 less the IP and UDP headers).
pub const MAX_PAYLOAD: u64 = 65_507;

/// Bytes of the sequence number at the head of each packet.
const SEQ_BYTES: u64 = 8;

/// The most flows (each a socket, so a file descriptor).
const MAX_FLOWS: u32 = 4096;

/// The largest window per flow.
const MAX_WINDOW: u64 = 1 << 16;

/// The highest and lowest rates, packets per second.
const MAX_RATE: f64 = 100e6;
const MIN_RATE: f64 = 0.001;

/// The longest timeout (the packets in flight are kept that long).
const MAX_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest burst.
const MAX_BURST: u32 = 1 << 20;

/// The receive buffer asked for each socket (the system caps it at
/// `net.core.rmem_max`): replies of full windows wait there.
pub const RECV_BUFFER: usize = 4 << 20;

/// How packets at a rate are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrivals {
    /// Exponentially distributed gaps (a Poisson process).
    Poisson,
    /// Evenly spaced.
    Constant,
    /// This many back to back, the bursts evenly spaced at the average rate.
    Bursts(u32),
}

/// How fast packets are sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Packets per second over all flows, spaced by `arrivals`.
    Rate {
        /// Packets per second.
        per_s: f64,
        /// Their spacing.
        arrivals: Arrivals,
    },
    /// As fast as possible, at most `window` packets in flight per flow.
    Max {
        /// Packets in flight per flow.
        window: u64,
    },
}

/// How replies are matched to packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matching {
    /// The oldest packet in flight of the reply's flow.
    Fifo,
    /// The packet whose sequence number the reply's first 8 bytes carry.
    Echo,
}

/// The run, checked.
#[derive(Debug, Clone)]
pub struct UdpPlan {
    /// How many flows.
    pub flows: u32,
    /// Payload sizes.
    pub size: SizeDist,
    /// How fast.
    pub pace: Pace,
    /// When the measurement ends.
    pub length: Length,
    /// Sending before the measurement.
    pub warmup: Duration,
    /// When an unanswered packet is lost.
    pub timeout: Duration,
    /// How replies find their packet.
    pub matching: Matching,
    /// Packets are sent ECN-capable and replies' ECN marks counted.
    pub ecn: bool,
    /// The seed of the payloads, sizes and arrivals.
    pub seed: u64,
}

/// Parses a payload size distribution: `SIZE`, `uniform:MIN-MAX` or
/// `lognormal:MEDIAN,SIGMA` (sizes with their unit, from 1 byte to
/// [`MAX_PAYLOAD`]; the lognormal's draws clamped to that range).
pub fn parse_size_dist(text: &str) -> Result<SizeDist, String> {
    let size = |s: &str| -> Result<u64, String> {
        match parse_size(s.trim())? {
            0 => Err(format!("`{}`: a payload is at least 1B", s.trim())),
            n if n > MAX_PAYLOAD => Err(format!(
                "`{}` is above a UDP datagram's largest payload ({MAX_PAYLOAD} bytes)",
                s.trim()
            )),
            n => Ok(n),
        }
    };
    let text = text.trim();
    if let Some(range) = text.strip_prefix("uniform:") {
        let Some((lo, hi)) = range.split_once('-') else {
            return Err(format!(
                "`{text}`: write uniform:MIN-MAX (e.g. uniform:64B-1500B)"
            ));
        };
        let (min, max) = (size(lo)?, size(hi)?);
        if min > max {
            return Err(format!("`{text}`: {min} bytes is above {max}"));
        }
        Ok(SizeDist::Uniform { min, max })
    } else if let Some(params) = text.strip_prefix("lognormal:") {
        let Some((median, sigma)) = params.split_once(',') else {
            return Err(format!(
                "`{text}`: write lognormal:MEDIAN,SIGMA (e.g. lognormal:512B,0.5)"
            ));
        };
        let median = size(median)?;
        let sigma: f64 = sigma
            .trim()
            .parse()
            .map_err(|_| format!("`{text}`: SIGMA `{}` is not a number", sigma.trim()))?;
        if !(sigma.is_finite() && (0.0..=10.0).contains(&sigma)) {
            return Err(format!("`{text}`: SIGMA must be from 0 to 10"));
        }
        Ok(SizeDist::LogNormal {
            mu: (median as f64).ln(),
            sigma,
            min: 1,
            max: MAX_PAYLOAD,
        })
    } else if let Some((kind, _)) = text.split_once(':') {
        Err(format!(
            "`{text}`: unknown distribution `{kind}` (use SIZE, uniform:MIN-MAX or lognormal:MEDIAN,SIGMA)"
        ))
    } else {
        Ok(SizeDist::Fixed(size(text)?))
    }
}

/// Parses `--arrivals`: `poisson`, `constant` or `bursts:N`.
pub fn parse_arrivals(text: &str) -> Result<Arrivals, String> {
    match text.trim() {
        "poisson" => Ok(Arrivals::Poisson),
        "constant" => Ok(Arrivals::Constant),
        t => match t.strip_prefix("bursts:").map(|n| n.trim().parse::<u32>()) {
            Some(Ok(n)) if (1..=MAX_BURST).contains(&n) => Ok(Arrivals::Bursts(n)),
            Some(_) => Err(format!("`{t}`: a burst is from 1 to {MAX_BURST} packets")),
            None => Err(format!("`{t}`: use poisson, constant or bursts:N")),
        },
    }
}

impl Settings {
    /// Checks the settings that need no socket.
    pub fn check(&self) -> anyhow::Result<UdpPlan> {
        if self.flows == 0 || self.flows > MAX_FLOWS {
            bail!("--flows: {} is not from 1 to {MAX_FLOWS}", self.flows);
        }
        if let Some(first) = self.src_port {
            let last = u32::from(first) + self.flows - 1;
            if first == 0 || last > 65_535 {
                bail!(
                    "--src-port: {} flows from port {first} run past 65535 (or start at 0)",
                    self.flows
                );
            }
        }
        let matching = if self.echo || self.echo_baseline {
            Matching::Echo
        } else {
            Matching::Fifo
        };
        let size = self.size(matching)?;
        let pace = self.pace()?;
        let (length, warmup) = run_length(self.count, self.duration.as_deref(), &self.warmup)?;
        let timeout = duration_flag("--timeout", &self.timeout)?;
        if timeout.is_zero() || timeout > MAX_TIMEOUT {
            bail!("--timeout: {} is not more than 0s and at most 10s", self.timeout);
        }
        Ok(UdpPlan {
            flows: self.flows,
            size,
            pace,
            length,
            warmup,
            timeout,
            matching,
            ecn: self.ecn,
            seed: self.seed,
        })
    }

    /// `--size`, with room for what `--frame ipv4` or `matching` writes at
    /// the head of each packet.
    fn size(&self, matching: Matching) -> anyhow::Result<SizeDist> {
        let mut size = parse_size_dist(&self.size).map_err(|e| anyhow!("--size: {e}"))?;
        let framed = self.ipv4 || self.payloads.is_some();
        if framed && matching == Matching::Echo {
            bail!("--frame ipv4 and --payloads write the head of each packet, where --echo puts its sequence number");
        }
        if self.ipv4 {
            let least = frame::IPV4_UDP_HEADER as u64;
            match &mut size {
                SizeDist::Fixed(n) | SizeDist::Uniform { min: n, .. } if *n < least => {
                    bail!("--size: with --frame ipv4 a packet holds its {least}-byte IPv4 and UDP headers: at least {least}B")
                }
                SizeDist::LogNormal { min, .. } => *min = least,
                _ => {}
            }
        }
        if matching == Matching::Echo {
            // Each packet's first bytes carry its sequence number.
            match &mut size {
                SizeDist::Fixed(n) | SizeDist::Uniform { min: n, .. } if *n < SEQ_BYTES => bail!(
                    "--size: with --echo a payload carries an {SEQ_BYTES}-byte sequence number: at least {SEQ_BYTES}B"
                ),
                SizeDist::LogNormal { min, .. } => *min = SEQ_BYTES,
                _ => {}
            }
        }
        Ok(size)
    }

    /// `--rate` with `--arrivals`, or `--rate max` with `--window`.
    fn pace(&self) -> anyhow::Result<Pace> {
        if self.rate.trim() == "max" {
            if self.arrivals.is_some() {
                bail!("--arrivals: --rate max sends as fast as its window allows; arrivals need a rate");
            }
            let window = self.window.unwrap_or(64);
            if window == 0 || window > MAX_WINDOW {
                bail!("--window: {window} is not from 1 to {MAX_WINDOW}");
            }
            return Ok(Pace::Max { window });
        }
        if self.window.is_some() {
            bail!("--window: only with --rate max (a rate sends whatever is answered)");
        }
        let r = parse_rate(&self.rate).map_err(|e| anyhow!("--rate: {e} (or `max`)"))?;
        if r.unit() != RateUnit::OpsPerSec {
            bail!(
                "--rate: {} is a data rate; give packets per second (e.g. 10k/s)",
                self.rate
            );
        }
        if !(MIN_RATE..=MAX_RATE).contains(&r.per_sec()) {
            bail!(
                "--rate: {} is not from {MIN_RATE} to {MAX_RATE:e} packets per second",
                self.rate
            );
        }
        let arrivals = self
            .arrivals
            .as_deref()
            .map(parse_arrivals)
            .transpose()
            .map_err(|e| anyhow!("--arrivals: {e}"))?
            .unwrap_or(Arrivals::Poisson);
        Ok(Pace::Rate {
            per_s: r.per_sec(),
            arrivals,
        })
    }
}

/// The flows' sockets: bound on `bind` (from `src_port` on, or ports the
/// system picks), connected to `to`, non-blocking.
fn open_flows(bind: IpAddr, src_port: Option<u16>, n: u32, to: SocketAddr) -> anyhow::Result<Vec<UdpSocket>> {
    if bind.is_ipv4() != to.is_ipv4() {
        bail!("--bind: {bind} and --to {to} are not of one address family");
    }
    if to.port() == 0 || to.ip().is_unspecified() {
        bail!("--to: {to} names no one to send to");
    }
    (0..n)
        .map(|i| {
            let port = src_port.map_or(0, |p| p + i as u16);
            let at = SocketAddr::new(bind, port);
            let flag = if src_port.is_some() {
                "--src-port"
            } else {
                "--bind"
            };
            let socket = UdpSocket::bind(at).with_context(|| format!("{flag}: cannot bind {at}"))?;
            socket
                .connect(to)
                .with_context(|| format!("--to: cannot send to {to} from {at}"))?;
            socket
                .set_nonblocking(true)
                .context("making a flow's socket non-blocking")?;
            Ok(socket)
        })
        .collect()
}

/// The flows, open and ready to send: their sockets, where they send, and
/// the echo server they send to with `--echo-baseline`.
pub struct Session {
    server: Option<EchoServer>,
    /// Where the flows send.
    pub to: SocketAddr,
    sockets: Vec<UdpSocket>,
    /// The flows' addresses, as their sockets.
    pub locals: Vec<SocketAddr>,
    framer: Option<frame::Framer>,
}

impl Session {
    /// Starts the echo server (with `--echo-baseline`), opens the flows
    /// (ECN-capable with `--ecn`) and reads what `--frame ipv4` and
    /// `--payloads` write into each packet.
    pub fn open(settings: &Settings, plan: &UdpPlan) -> anyhow::Result<Session> {
        let server = if settings.echo_baseline {
            Some(
                EchoServer::start(settings.bind)
                    .with_context(|| format!("--bind: an echo server on {}", settings.bind))?,
            )
        } else {
            None
        };
        let to = match (&server, settings.to) {
            (Some(s), _) => s.addr(),
            (None, Some(to)) => to,
            (None, None) => bail!("--to: give the daemon's packet address (or --echo-baseline)"),
        };
        let sockets = open_flows(settings.bind, settings.src_port, plan.flows, to)?;
        if plan.ecn {
            for s in &sockets {
                isola_runtime::ip_tos::set_send_tos(s, isola_runtime::ip_tos::ECN_ECT0)
                    .and_then(|()| isola_runtime::ip_tos::set_recv_tos(s, true))
                    .context("--ecn: setting a flow's socket to send ECT(0) and read replies' marks")?;
            }
        }
        let locals: Vec<SocketAddr> = sockets
            .iter()
            .map(UdpSocket::local_addr)
            .collect::<Result<_, _>>()
            .context("reading a flow's address")?;
        let framer = if settings.ipv4 || settings.payloads.is_some() {
            Some(frame::Framer::new(
                settings.ipv4,
                settings.payloads.as_deref(),
                &locals,
                to,
            )?)
        } else {
            None
        };
        Ok(Session {
            server,
            to,
            sockets,
            locals,
            framer,
        })
    }

    /// Runs `plan` over the flows until its count or duration or `stop`,
    /// then takes replies until every packet is answered or lost; stops
    /// the echo server. The report, and the error that ended the run
    /// early, if one did.
    pub fn run(
        self,
        settings: &Settings,
        plan: &UdpPlan,
        stop: &AtomicBool,
        progress: &mut dyn Progress,
    ) -> (UdpReport, anyhow::Result<()>) {
        let outcome = drive::run(&self.sockets, plan, self.framer, stop, progress);
        let echoed = self.server.map(EchoServer::stop);
        let report = UdpReport::new(settings, plan, self.to, &self.locals, &outcome.tally, echoed);
        let result = match outcome.error {
            Some(e) => Err(anyhow!(
                "the run ended early: {e} (the report counts what was sent and answered)"
            )),
            None => Ok(()),
        };
        (report, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_into_distributions_and_refuse_clearly() {
        assert_eq!(parse_size_dist("64B"), Ok(SizeDist::Fixed(64)));
        assert_eq!(
            parse_size_dist("uniform:64B-1.5KB"),
            Ok(SizeDist::Uniform { min: 64, max: 1500 })
        );
        let SizeDist::LogNormal { mu, sigma, min, max } = parse_size_dist("lognormal:512B,0.5").unwrap()
        else {
            panic!("a lognormal")
        };
        assert!((mu.exp() - 512.0).abs() < 1e-9 && sigma == 0.5 && (min, max) == (1, MAX_PAYLOAD));
        for (bad, says) in [
            ("64", "no unit"),
            ("0B", "at least 1B"),
            ("64KiB", "largest payload"),
            ("uniform:64B", "uniform:MIN-MAX"),
            ("uniform:1KB-64B", "above"),
            ("lognormal:512B", "MEDIAN,SIGMA"),
            ("lognormal:512B,x", "not a number"),
            ("lognormal:512B,-1", "from 0 to 10"),
            ("zipf:1", "unknown distribution"),
        ] {
            let e = parse_size_dist(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn arrivals_are_poisson_constant_or_bursts() {
        assert_eq!(parse_arrivals("poisson"), Ok(Arrivals::Poisson));
        assert_eq!(parse_arrivals("constant"), Ok(Arrivals::Constant));
        assert_eq!(parse_arrivals("bursts:8"), Ok(Arrivals::Bursts(8)));
        for bad in ["bursts:0", "bursts:x", "bursty"] {
            assert!(parse_arrivals(bad).is_err(), "{bad}");
        }
    }
}
