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
//! never a hang. Ctrl-C stops sending and still reports.
//!
//! `--echo-baseline` starts a plain batched UDP echo server in this
//! process ([`echo`]) and sends to it instead: the same generator against
//! the cheapest server, for the packet path's overhead.

mod drive;
mod echo;
pub mod frame;
mod report;

use super::Length;
use anyhow::{anyhow, bail, Context};
use isola_core::quantity::{parse_rate, parse_size};
use isola_core::RateUnit;
use isola_model::scenario::SizeDist;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `isola load udp`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("length").required(true).args(["count", "duration"])))]
pub struct Args {
    /// Where to send: the daemon's packet address (its `[daemon] udp`).
    #[arg(
        long,
        value_name = "ADDR",
        required_unless_present = "echo_baseline",
        conflicts_with = "echo_baseline"
    )]
    to: Option<SocketAddr>,
    /// The address the flows' sockets bind.
    #[arg(long, value_name = "IP", default_value = "127.0.0.1")]
    bind: IpAddr,
    /// How many flows, each its own socket (one 5-tuple); packets take
    /// them in turn.
    #[arg(long, value_name = "N", default_value_t = 1)]
    flows: u32,
    /// The first flow's source port, the next flows' the ports after it
    /// (default: ports the system picks).
    #[arg(long, value_name = "PORT")]
    src_port: Option<u16>,
    /// Payload sizes: SIZE (e.g. 64B), uniform:MIN-MAX (e.g.
    /// uniform:64B-1500B) or lognormal:MEDIAN,SIGMA (e.g. lognormal:512B,0.5).
    #[arg(long, value_name = "DIST", default_value = "64B")]
    size: String,
    /// Packets per second over all flows (e.g. 10k/s), or `max`: as fast as
    /// --window allows.
    #[arg(long, value_name = "RATE", default_value = "max")]
    rate: String,
    /// How packets at a rate are spaced: poisson (exponential gaps),
    /// constant, or bursts:N (N back to back, at the average rate;
    /// default poisson).
    #[arg(long, value_name = "KIND")]
    arrivals: Option<String>,
    /// With --rate max: packets in flight per flow (default 64).
    #[arg(long, value_name = "N")]
    window: Option<u64>,
    /// Measure this many packets (after the warm-up), then stop.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Measure for this long (after the warm-up), then stop (e.g. 5s).
    #[arg(long, value_name = "TIME")]
    duration: Option<String>,
    /// Send for this long first, without counting (e.g. 1s).
    #[arg(long, value_name = "TIME", default_value = "0s")]
    warmup: String,
    /// A packet not answered this long after its sending is lost; the run
    /// ends at most this long after its last packet.
    #[arg(long, value_name = "TIME", default_value = "200ms")]
    timeout: String,
    /// Replies carry the packet back (an echo kernel): match them by the
    /// sequence number in its first 8 bytes, not in order.
    #[arg(long)]
    echo: bool,
    /// Send to a plain batched UDP echo server started in this process on
    /// --bind instead of --to (implies --echo): the baseline of the
    /// packet path's throughput.
    #[arg(long)]
    echo_baseline: bool,
    /// Send every packet ECN-capable (ECT(0) in its IP header) and count
    /// the replies that come back marked Congestion Experienced (isolad
    /// marks packets that find their flow queues congested).
    #[arg(long)]
    ecn: bool,
    /// What a datagram is: `raw` (random bytes) or `ipv4` (a whole
    /// IPv4/UDP packet carrying its flow's 5-tuple, for kernels that read
    /// the raw packet, as DPUBench's programs; --size is the IPv4 packet's
    /// size, at least 28B).
    #[arg(long, value_name = "KIND", default_value = "raw", value_parser = ["raw", "ipv4"])]
    frame: String,
    /// Start each packet's payload with a line of FILE, lines in turn over
    /// all packets (`\xHH`, `\r`, `\n`, `\t`, `\\` escapes): traffic that
    /// a kernel's rules recognise.
    #[arg(long, value_name = "FILE")]
    payloads: Option<PathBuf>,
    /// Seed of the payloads, the sizes and the Poisson arrivals.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Print the report as JSON on stdout instead of the table, or with
    /// FILE, write it there (and print the table).
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    json: Option<Option<PathBuf>>,
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
pub struct Plan {
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
fn parse_arrivals(text: &str) -> Result<Arrivals, String> {
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

/// Checks the flags that need no socket.
fn plan(args: &Args) -> anyhow::Result<Plan> {
    if args.flows == 0 || args.flows > MAX_FLOWS {
        bail!("--flows: {} is not from 1 to {MAX_FLOWS}", args.flows);
    }
    if let Some(first) = args.src_port {
        let last = u32::from(first) + args.flows - 1;
        if first == 0 || last > 65_535 {
            bail!(
                "--src-port: {} flows from port {first} run past 65535 (or start at 0)",
                args.flows
            );
        }
    }
    let matching = if args.echo || args.echo_baseline {
        Matching::Echo
    } else {
        Matching::Fifo
    };
    let mut size = parse_size_dist(&args.size).map_err(|e| anyhow!("--size: {e}"))?;
    let framed = args.frame == "ipv4" || args.payloads.is_some();
    if framed && matching == Matching::Echo {
        bail!("--frame ipv4 and --payloads write the head of each packet, where --echo puts its sequence number");
    }
    if args.frame == "ipv4" {
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
    let pace = if args.rate.trim() == "max" {
        if args.arrivals.is_some() {
            bail!("--arrivals: --rate max sends as fast as its window allows; arrivals need a rate");
        }
        let window = args.window.unwrap_or(64);
        if window == 0 || window > MAX_WINDOW {
            bail!("--window: {window} is not from 1 to {MAX_WINDOW}");
        }
        Pace::Max { window }
    } else {
        if args.window.is_some() {
            bail!("--window: only with --rate max (a rate sends whatever is answered)");
        }
        let r = parse_rate(&args.rate).map_err(|e| anyhow!("--rate: {e} (or `max`)"))?;
        if r.unit() != RateUnit::OpsPerSec {
            bail!(
                "--rate: {} is a data rate; give packets per second (e.g. 10k/s)",
                args.rate
            );
        }
        if !(MIN_RATE..=MAX_RATE).contains(&r.per_sec()) {
            bail!(
                "--rate: {} is not from {MIN_RATE} to {MAX_RATE:e} packets per second",
                args.rate
            );
        }
        let arrivals = args
            .arrivals
            .as_deref()
            .map(parse_arrivals)
            .transpose()
            .map_err(|e| anyhow!("--arrivals: {e}"))?
            .unwrap_or(Arrivals::Poisson);
        Pace::Rate {
            per_s: r.per_sec(),
            arrivals,
        }
    };
    let (length, warmup) = super::run_length(args.count, args.duration.as_deref(), &args.warmup)?;
    let timeout = super::duration_flag("--timeout", &args.timeout)?;
    if timeout.is_zero() || timeout > MAX_TIMEOUT {
        bail!("--timeout: {} is not more than 0s and at most 10s", args.timeout);
    }
    Ok(Plan {
        flows: args.flows,
        size,
        pace,
        length,
        warmup,
        timeout,
        matching,
        ecn: args.ecn,
        seed: args.seed,
    })
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

/// Runs `isola load udp`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let plan = plan(args)?;
    if let Some(Some(file)) = &args.json {
        crate::args::out_file("--json", file)?;
    }
    let server = if args.echo_baseline {
        Some(
            echo::EchoServer::start(args.bind)
                .with_context(|| format!("--bind: an echo server on {}", args.bind))?,
        )
    } else {
        None
    };
    let to = match (&server, args.to) {
        (Some(s), _) => s.addr(),
        (None, Some(to)) => to,
        (None, None) => bail!("--to: give the daemon's packet address (or --echo-baseline)"),
    };
    let sockets = open_flows(args.bind, args.src_port, plan.flows, to)?;
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

    // Ctrl-C (or SIGTERM) stops sending; a second one ends the process.
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&stop))
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&stop)))
            .context("handling Ctrl-C")?;
    }
    let framer = if args.frame == "ipv4" || args.payloads.is_some() {
        Some(frame::Framer::new(
            args.frame == "ipv4",
            args.payloads.as_deref(),
            &locals,
            to,
        )?)
    } else {
        None
    };
    let outcome = drive::run(&sockets, &plan, framer, &stop);
    let echoed = server.map(echo::EchoServer::stop);
    let report = report::Report::new(args, &plan, to, &locals, &outcome.tally, echoed);

    super::write_report(&args.json, &report, || report.render())?;
    match outcome.error {
        Some(e) => Err(anyhow!(
            "the run ended early: {e} (the report counts what was sent and answered)"
        )),
        None => Ok(()),
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
