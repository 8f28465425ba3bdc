//! `isola load udp`: the packet generator (`isola_load::udp`) from its
//! flags: sends datagrams from several flows to isolad's packet path (or
//! to an echo server of this process's own), then prints the report.

use super::{stop_on_signals, write_report};
use crate::progress::Bar;
use isola_load::udp::{Session, Settings};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

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

/// Runs `isola load udp`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let settings = Settings {
        to: args.to,
        bind: args.bind,
        flows: args.flows,
        src_port: args.src_port,
        size: args.size.clone(),
        rate: args.rate.clone(),
        arrivals: args.arrivals.clone(),
        window: args.window,
        count: args.count,
        duration: args.duration.clone(),
        warmup: args.warmup.clone(),
        timeout: args.timeout.clone(),
        echo: args.echo,
        echo_baseline: args.echo_baseline,
        ecn: args.ecn,
        ipv4: args.frame == "ipv4",
        payloads: args.payloads.clone(),
        seed: args.seed,
    };
    let plan = settings.check()?;
    if let Some(Some(file)) = &args.json {
        crate::args::out_file("--json", file)?;
    }
    let session = Session::open(&settings, &plan)?;
    let stop = stop_on_signals()?;
    let (report, result) = session.run(&settings, &plan, &stop, &mut Bar::new(1000));
    write_report(&args.json, &report, || isola_load::render::udp(&report))?;
    result
}
