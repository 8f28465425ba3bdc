//! What `isola load udp` reports: the run's settings, then per flow and
//! over all flows the packets sent, received and lost, the throughput in
//! packets and bits per second each way, and the reply latency, as data
//! that serialises as its JSON ([`UdpReport`]'s fields). Percentiles are
//! `isola load`'s.

use super::drive::{FlowTally, Tally};
use super::{Arrivals, Matching, Pace, Settings, UdpPlan};
use crate::{Length, Percentiles, Stopped};
use isola_core::metrics::LatencyHistogram;
use serde::Serialize;
use std::net::SocketAddr;

/// Packets and bits of payload per second, each way.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Throughput {
    /// Packets sent per second (over the sending time).
    pub sent_pps: f64,
    /// Payload bits sent per second.
    pub sent_bps: f64,
    /// Replies received per second (over the measured time).
    pub received_pps: f64,
    /// Reply payload bits received per second.
    pub received_bps: f64,
}

/// One flow's results, or every flow's together.
#[derive(Debug, Clone, Serialize)]
pub struct FlowReport {
    /// The flow's source address (absent for the total).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    /// Packets sent after the warm-up.
    pub sent: u64,
    /// Replies matched to them within the timeout.
    pub received: u64,
    /// Packets not answered within the timeout.
    pub lost: u64,
    /// `lost` in percent of `sent`.
    pub loss_pct: f64,
    /// Replies that found no packet in flight (after their timeout).
    pub late: u64,
    /// Matched replies marked Congestion Experienced (ECN; with `--ecn`).
    pub marked: u64,
    /// Payload bytes sent.
    pub sent_bytes: u64,
    /// Payload bytes of the matched replies.
    pub received_bytes: u64,
    /// Each way.
    pub throughput: Throughput,
    /// Reply latency: just before the send to just after the reply's recv.
    pub latency: Percentiles,
}

/// How fast packets were sent.
#[derive(Debug, Clone, Serialize)]
pub struct PaceReport {
    /// "rate" or "max".
    pub kind: &'static str,
    /// At a rate: packets per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
    /// At a rate: "poisson", "constant" or "bursts".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<&'static str>,
    /// Bursts: packets back to back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    /// Max: packets in flight per flow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
}

/// The whole report, as `--json` writes it.
#[derive(Debug, Clone, Serialize)]
pub struct UdpReport {
    /// Where packets went.
    pub to: String,
    /// Whether that was this process's echo server (`--echo-baseline`).
    pub echo_baseline: bool,
    /// Datagrams the echo server sent back (with `--echo-baseline`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub echoed: Option<u64>,
    /// `--size` as given.
    pub size: String,
    /// The mean payload sent, bytes.
    pub mean_size_bytes: f64,
    /// How fast.
    pub pace: PaceReport,
    /// How replies found their packet: "fifo" (the oldest in flight of
    /// their flow) or "echo" (the sequence number they carry).
    pub matching: &'static str,
    /// `--count`, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// `--duration`, s, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// The warm-up as run, s.
    pub warmup_s: f64,
    /// When an unanswered packet is lost, s.
    pub timeout_s: f64,
    /// Why sending stopped.
    pub stopped: Stopped,
    /// From the end of the warm-up to the last packet sent, s.
    pub send_s: f64,
    /// ... to the last packet sent or reply received, s.
    pub measured_s: f64,
    /// Every flow together.
    pub total: FlowReport,
    /// By flow.
    pub flows: Vec<FlowReport>,
    /// ICMP errors (port or host unreachable) the sockets reported:
    /// nothing listens at `to`.
    pub unreachable: u64,
    /// This machine.
    pub machine: String,
}

/// A per-second figure over `s` seconds (0 over no time).
fn per_s(n: u64, s: f64) -> f64 {
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

/// A flow's (or the total's) row of the report.
fn flow_report(src: Option<String>, t: &FlowTally, latency: &LatencyHistogram, tally: &Tally) -> FlowReport {
    FlowReport {
        src,
        sent: t.sent,
        received: t.received,
        lost: t.lost,
        loss_pct: if t.sent > 0 {
            100.0 * t.lost as f64 / t.sent as f64
        } else {
            0.0
        },
        late: t.late,
        marked: t.marked,
        sent_bytes: t.sent_bytes,
        received_bytes: t.received_bytes,
        throughput: Throughput {
            sent_pps: per_s(t.sent, tally.send_s),
            sent_bps: 8.0 * per_s(t.sent_bytes, tally.send_s),
            received_pps: per_s(t.received, tally.measured_s),
            received_bps: 8.0 * per_s(t.received_bytes, tally.measured_s),
        },
        latency: Percentiles::of(latency),
    }
}

impl UdpReport {
    /// The report of a run of `settings` (checked into `plan`) to `to`
    /// from the flows at `locals` that measured `t`; `echoed` is the echo
    /// server's count.
    pub fn new(
        settings: &Settings,
        plan: &UdpPlan,
        to: SocketAddr,
        locals: &[SocketAddr],
        t: &Tally,
        echoed: Option<u64>,
    ) -> UdpReport {
        let mut sum = FlowTally::default();
        for f in &t.flows {
            sum.sent += f.sent;
            sum.received += f.received;
            sum.lost += f.lost;
            sum.late += f.late;
            sum.marked += f.marked;
            sum.sent_bytes += f.sent_bytes;
            sum.received_bytes += f.received_bytes;
        }
        let pace = match plan.pace {
            Pace::Rate { per_s, arrivals } => PaceReport {
                kind: "rate",
                rate_per_s: Some(per_s),
                arrivals: Some(match arrivals {
                    Arrivals::Poisson => "poisson",
                    Arrivals::Constant => "constant",
                    Arrivals::Bursts(_) => "bursts",
                }),
                burst: match arrivals {
                    Arrivals::Bursts(n) => Some(n),
                    _ => None,
                },
                window: None,
            },
            Pace::Max { window } => PaceReport {
                kind: "max",
                rate_per_s: None,
                arrivals: None,
                burst: None,
                window: Some(window),
            },
        };
        UdpReport {
            to: to.to_string(),
            echo_baseline: settings.echo_baseline,
            echoed,
            size: settings.size.trim().to_string(),
            mean_size_bytes: if sum.sent > 0 {
                sum.sent_bytes as f64 / sum.sent as f64
            } else {
                0.0
            },
            pace,
            matching: match plan.matching {
                Matching::Fifo => "fifo",
                Matching::Echo => "echo",
            },
            count: match plan.length {
                Length::Count(n) => Some(n),
                Length::Duration(_) => None,
            },
            duration_s: match plan.length {
                Length::Count(_) => None,
                Length::Duration(d) => Some(d.as_secs_f64()),
            },
            warmup_s: t.warmup_s,
            timeout_s: plan.timeout.as_secs_f64(),
            stopped: t.stopped,
            send_s: t.send_s,
            measured_s: t.measured_s,
            total: flow_report(None, &sum, &t.latency, t),
            flows: t
                .flows
                .iter()
                .zip(locals)
                .map(|(f, at)| flow_report(Some(at.to_string()), f, &f.latency, t))
                .collect(),
            unreachable: t.unreachable,
            machine: isola_runtime::host::machine(),
        }
    }
}
