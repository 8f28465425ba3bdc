//! The load generators' reports for people: `isola load`'s ([`rings()`]:
//! the run's settings, its tasks by outcome, its throughput and its
//! latencies) and `isola load udp`'s ([`udp()`]: per flow and over all flows
//! the packets sent, received and lost, the throughput each way and the
//! reply latency), written the same way. Text for a terminal, returned:
//! the caller prints it.

use crate::rings::{self, ModeReport};
use crate::udp::{self, FlowReport};
use crate::{Percentiles, Stopped};
use isola_report::text::{bytes_binary, duration, si, table};

/// The latency tables' header.
const LATENCY: [&str; 7] = ["count", "mean", "p50", "p90", "p99", "p99.9", "max"];

/// Per-flow rows the table shows (the JSON has every flow).
const TABLE_FLOWS: usize = 16;

/// `isola load`'s report: a summary, tasks by outcome, latencies.
pub fn rings(r: &rings::RingsReport) -> String {
    let sizes: Vec<String> = r
        .by_size
        .iter()
        .map(|s| format!("{}B", bytes_binary(s.size_bytes as f64)))
        .collect();
    let mut out = format!(
        "isola load: {} on {} as tenant `{}` via {}\n",
        r.op,
        sizes.join(","),
        r.tenant,
        r.socket
    );
    out.push_str(&format!(
        "{}; measured {}{}; stopped: {}\n",
        how(&r.mode),
        duration(r.measured_s * 1e9),
        warmup(r.warmup_s),
        stopped_text(r.stopped),
    ));
    out.push_str(&format!("machine: {}\n\n", r.machine));
    out.push_str(&outcomes(&r.counts));
    let t = &r.throughput;
    out.push_str(&format!(
        "\nthroughput: {} tasks/s answered, {} ok/s, {}B/s of input\n\n",
        si(t.tasks_per_s),
        si(t.ok_per_s),
        si(t.bytes_per_s)
    ));
    out.push_str(&latencies(r));
    let b = &r.backpressure;
    if r.mode.kind == "open" || b.delays > 0 {
        out.push_str(&format!(
            "\nbackpressure: {} tasks waited for room (total {}, longest {})\n",
            b.delays,
            duration(b.total_ns as f64),
            duration(b.max_ns as f64)
        ));
    }
    out.push_str(&events(&r.events));
    if r.stray > 0 {
        out.push_str(&format!("{} completions named no task in flight\n", r.stray));
    }
    out
}

/// How tasks were sent, for people.
fn how(m: &ModeReport) -> String {
    match (m.rate_per_s, m.arrivals, m.concurrency) {
        (Some(r), Some(a), _) => format!(
            "open loop, {}/s {}, at most {} in flight ({})",
            si(r),
            if a == rings::Arrivals::Poisson {
                "Poisson arrivals"
            } else {
                "evenly spaced"
            },
            m.in_flight_limit,
            bound_text(m.limited_by)
        ),
        (_, _, Some(c)) if c == m.in_flight_limit => format!("closed loop, {c} in flight"),
        (_, _, Some(c)) => format!(
            "closed loop, {c} asked, {} in flight ({})",
            m.in_flight_limit,
            bound_text(m.limited_by)
        ),
        _ => String::new(),
    }
}

/// ` after a ... warm-up`, if there was one.
fn warmup(s: f64) -> String {
    if s > 0.0 {
        format!(" after a {} warm-up", duration(s * 1e9))
    } else {
        String::new()
    }
}

/// The tasks by outcome: submitted and ok, then every other outcome that
/// happened.
fn outcomes(c: &rings::Counts) -> String {
    let (r, f) = (&c.rejected_by, &c.failed_by);
    let mut rows = vec![row("submitted", c.submitted), row("ok", c.ok)];
    let optional = [
        ("rejected: channel full", r.channel_full),
        ("rejected: over quota", r.over_quota),
        ("rejected: no engine", r.no_engine),
        ("rejected: other", r.other),
        ("failed: operator", f.operator),
        ("failed: output too large", f.output_too_large),
        ("failed: panicked", f.panicked),
        ("bad entry", c.bad_entry),
        ("cancelled", c.cancelled),
        ("abandoned", c.abandoned),
        ("unknown outcome", c.unknown),
        ("unanswered", c.unanswered),
    ];
    rows.extend(
        optional
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|&(name, n)| row(name, n)),
    );
    table(&["outcome", "tasks"], &rows)
}

/// The latencies of ok tasks: both clocks, from the due time (open loop),
/// and by size when there are several.
fn latencies(r: &rings::RingsReport) -> String {
    let mut rows = Vec::new();
    let mut add = |name: String, p: &Percentiles| rows.push(latency_row(name, p));
    add("client (submit to answer)".into(), &r.latency.client);
    add("daemon (arrival to completion)".into(), &r.latency.daemon);
    if let Some(p) = &r.latency.from_due {
        add("client, from due time".into(), p);
    }
    if r.by_size.len() > 1 {
        for s in &r.by_size {
            let size = bytes_binary(s.size_bytes as f64);
            add(format!("  {size}B client"), &s.client);
            add(format!("  {size}B daemon"), &s.daemon);
        }
    }
    latency_table("latency of ok tasks", &rows)
}

/// The daemon's events that happened, in a line.
fn events(e: &rings::Events) -> String {
    let events = [
        ("over budget", e.over_budget),
        ("over quota", e.quota_exceeded),
        ("channel full", e.channel_full),
        ("SLO changed", e.slo_changed),
        ("draining", e.draining),
        ("kernel aborted", e.kernel_aborted),
        ("host written", e.host_written),
        ("unknown", e.unknown),
    ];
    let told: Vec<String> = events
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    if told.is_empty() {
        String::new()
    } else {
        format!("events from the daemon: {}\n", told.join(", "))
    }
}

fn row(name: &str, n: u64) -> Vec<String> {
    vec![name.to_string(), n.to_string()]
}

/// A latency row: its name, then count, mean, p50, p90, p99, p99.9, max.
fn latency_row(name: String, p: &Percentiles) -> Vec<String> {
    let d = |ns: u64| duration(ns as f64);
    vec![
        name,
        p.count.to_string(),
        duration(p.mean_ns),
        d(p.p50_ns),
        d(p.p90_ns),
        d(p.p99_ns),
        d(p.p999_ns),
        d(p.max_ns),
    ]
}

/// A table of latency rows under `title`.
fn latency_table(title: &str, rows: &[Vec<String>]) -> String {
    let mut header = vec![title];
    header.extend(LATENCY);
    table(&header, rows)
}

fn bound_text(limited_by: &str) -> &'static str {
    match limited_by {
        "arena" => "as many output rooms as the arena holds",
        "rings" => "what the rings hold",
        _ => "the concurrency asked",
    }
}

/// Why a run stopped, for people.
fn stopped_text(s: Stopped) -> &'static str {
    match s {
        Stopped::Count => "count reached",
        Stopped::Duration => "duration reached",
        Stopped::Interrupted => "interrupted",
        Stopped::Draining => "the daemon drains",
        Stopped::Error => "the connection failed",
    }
}

/// `isola load udp`'s report: a summary, packets per flow, latencies.
pub fn udp(r: &udp::UdpReport) -> String {
    let n = r.flows.len();
    let mut out = udp_summary(r);
    let shown: Vec<&FlowReport> = if n > 1 && n <= TABLE_FLOWS {
        r.flows.iter().collect()
    } else {
        Vec::new()
    };
    let rows: Vec<&FlowReport> = shown.into_iter().chain(std::iter::once(&r.total)).collect();
    out.push_str(&packets(&rows));
    if n > TABLE_FLOWS {
        out.push_str(&format!("({n} flows: each in --json)\n"));
    }
    out.push('\n');
    let latency: Vec<Vec<String>> = rows
        .iter()
        .map(|f| latency_row(flow_name(f), &f.latency))
        .collect();
    out.push_str(&latency_table("reply latency", &latency));
    if r.unreachable > 0 {
        out.push_str(&format!(
            "\n{} ICMP errors (port or host unreachable): nothing listens at {}\n",
            r.unreachable, r.to
        ));
    }
    if r.total.late > 0 {
        out.push_str(&format!(
            "{} replies came after their packet's timeout (counted lost; raise --timeout)\n",
            r.total.late
        ));
    }
    out
}

/// The lines above the tables: where from and to, how fast, how replies
/// were matched, this machine.
fn udp_summary(r: &udp::UdpReport) -> String {
    let src = |f: Option<&FlowReport>| f.and_then(|f| f.src.clone()).unwrap_or_default();
    let (first, last) = (src(r.flows.first()), src(r.flows.last()));
    let from = match r.flows.len() {
        1 => format!("1 flow ({first})"),
        2 => format!("2 flows ({first}, {last})"),
        n => format!("{n} flows ({first} ... {last})"),
    };
    let to = if r.echo_baseline {
        format!("{} (this process's echo server)", r.to)
    } else {
        r.to.clone()
    };
    let mut out = format!(
        "isola load udp: to {to} from {from}, payloads {} (mean {}B)\n",
        r.size,
        si(r.mean_size_bytes)
    );
    let p = &r.pace;
    let how = match (p.rate_per_s, p.arrivals, p.window) {
        (Some(r), Some("bursts"), _) => format!("{}/s in bursts of {}", si(r), p.burst.unwrap_or(1)),
        (Some(r), Some("constant"), _) => format!("{}/s evenly spaced", si(r)),
        (Some(r), _, _) => format!("{}/s Poisson arrivals", si(r)),
        (_, _, Some(w)) => format!("as fast as a window of {w} per flow allows"),
        _ => String::new(),
    };
    out.push_str(&format!(
        "{how}; measured {}{}; stopped: {}\n",
        duration(r.measured_s * 1e9),
        warmup(r.warmup_s),
        stopped_text(r.stopped)
    ));
    let matching = if r.matching == "echo" {
        "by the sequence number they echo"
    } else {
        "in order per flow"
    };
    out.push_str(&format!(
        "replies matched {matching}; a packet unanswered after {} is lost\n",
        duration(r.timeout_s * 1e9)
    ));
    out.push_str(&format!("machine: {}\n\n", r.machine));
    out
}

/// A flow's name in the tables: its source, or `all flows`.
fn flow_name(f: &FlowReport) -> String {
    f.src.clone().unwrap_or_else(|| "all flows".into())
}

/// The packets table: sent, received, lost, late and marked, and the
/// throughput each way, of each flow shown and of all.
fn packets(flows: &[&FlowReport]) -> String {
    let rows: Vec<Vec<String>> = flows
        .iter()
        .map(|f| {
            let t = &f.throughput;
            vec![
                flow_name(f),
                f.sent.to_string(),
                f.received.to_string(),
                f.lost.to_string(),
                format!("{:.2}%", f.loss_pct),
                f.late.to_string(),
                f.marked.to_string(),
                si(t.sent_pps),
                si(t.sent_bps),
                si(t.received_pps),
                si(t.received_bps),
            ]
        })
        .collect();
    table(
        &[
            "flow",
            "sent",
            "received",
            "lost",
            "loss",
            "late",
            "marked",
            "pkt/s out",
            "bit/s out",
            "pkt/s in",
            "bit/s in",
        ],
        &rows,
    )
}
