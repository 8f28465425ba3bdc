//! What `isola load` reports: the run's settings, its tasks by outcome, its
//! throughput and its latencies (client's clock, daemon's clock, and for
//! an open loop from each task's due time), as JSON ([`Report`]'s fields)
//! or as a table for people ([`Report::render`]).

use super::drive::{Backpressure, Counts, Events, Layout, Stopped, Tally};
use super::{Arrivals, Input, Length, Mode, Plan, RingsArgs};
use crate::format::table;
use isola_core::metrics::LatencyHistogram;
use isola_report::text::{bytes_binary, duration, si};
use serde::Serialize;
use std::collections::BTreeMap;

/// Latency percentiles of tasks that ended `Ok`, in ns (2 significant
/// digits, the mean and the maximum exact).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Percentiles {
    /// Tasks timed.
    pub count: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

impl Percentiles {
    /// The percentiles of `h`.
    pub(super) fn of(h: &LatencyHistogram) -> Percentiles {
        let s = h.summary();
        // A bucket's upper bound may pass the exact maximum: clamp to it.
        Percentiles {
            count: s.count,
            mean_ns: s.mean,
            p50_ns: s.p50.min(s.max),
            p90_ns: h.quantile(0.9).min(s.max),
            p99_ns: s.p99.min(s.max),
            p999_ns: s.p999.min(s.max),
            max_ns: s.max,
        }
    }

    /// The table cells: count, mean, p50, p90, p99, p99.9, max.
    pub(super) fn cells(&self) -> Vec<String> {
        let d = |ns: u64| duration(ns as f64);
        vec![
            self.count.to_string(),
            duration(self.mean_ns),
            d(self.p50_ns),
            d(self.p90_ns),
            d(self.p99_ns),
            d(self.p999_ns),
            d(self.max_ns),
        ]
    }
}

/// How tasks were sent.
#[derive(Debug, Clone, Serialize)]
pub struct ModeReport {
    /// "open" or "closed".
    pub kind: &'static str,
    /// Open loop: tasks per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
    /// Open loop: the arrivals' spacing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<Arrivals>,
    /// Closed loop: tasks in flight asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u64>,
    /// Tasks in flight at most, as run.
    pub in_flight_limit: u64,
    /// What bounded it: "concurrency", "rings" or "arena".
    pub limited_by: &'static str,
}

/// Tasks and bytes per second over the measured time.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Throughput {
    /// Answered tasks (every outcome) per second.
    pub tasks_per_s: f64,
    /// `Ok` tasks per second.
    pub ok_per_s: f64,
    /// Input bytes of `Ok` tasks per second.
    pub bytes_per_s: f64,
}

/// Latencies of `Ok` tasks.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// On the client's clock: just before submission to the completion
    /// taken off the ring.
    pub client: Percentiles,
    /// On the daemon's: its arrival (entry taken) to its completion.
    pub daemon: Percentiles,
    /// Open loop: from the task's due time (so a backpressure delay counts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_due: Option<Percentiles>,
}

/// One input size's results.
#[derive(Debug, Clone, Serialize)]
pub struct SizeReport {
    /// The size asked for.
    pub size_bytes: u64,
    /// The input's length (the size, made valid for the operator).
    pub input_bytes: u64,
    /// The room its output got.
    pub output_room_bytes: u64,
    /// `Ok` tasks of this size.
    pub ok: u64,
    /// Their latency on the client's clock.
    pub client: Percentiles,
    /// On the daemon's.
    pub daemon: Percentiles,
}

/// The whole report, as `--json` writes it.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The daemon's socket.
    pub socket: String,
    /// The tenant acted as.
    pub tenant: String,
    /// The operator.
    pub op: String,
    /// Its parameters.
    pub params: BTreeMap<String, String>,
    /// How tasks were sent.
    pub mode: ModeReport,
    /// `--count`, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// `--duration`, s, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// The warm-up as run, s.
    pub warmup_s: f64,
    /// Why submitting stopped.
    pub stopped: Stopped,
    /// From the end of the warm-up to the last measured answer, s.
    pub measured_s: f64,
    /// Measured tasks by outcome.
    pub counts: Counts,
    /// Completions of tasks not in flight (should be 0).
    pub stray: u64,
    /// Over `measured_s`.
    pub throughput: Throughput,
    /// Of `Ok` tasks.
    pub latency: Latency,
    /// By input size.
    pub by_size: Vec<SizeReport>,
    /// Open loop: tasks that waited for room.
    pub backpressure: Backpressure,
    /// The daemon's events.
    pub events: Events,
    /// The tenant's arena, bytes.
    pub arena_bytes: u64,
    /// The rings' entries: submission, completion.
    pub ring_entries: [u32; 2],
    /// This machine.
    pub machine: String,
}

impl Report {
    /// The report of a run of `args` (checked into `plan`, `inputs`,
    /// `layout`) that measured `t`.
    pub fn new(args: &RingsArgs, plan: &Plan, inputs: &[Input], layout: &Layout, t: &Tally) -> Report {
        let mode = match plan.mode {
            Mode::Open { rate, arrivals } => ModeReport {
                kind: "open",
                rate_per_s: Some(rate),
                arrivals: Some(arrivals),
                concurrency: None,
                in_flight_limit: layout.in_flight_limit,
                limited_by: layout.limited_by,
            },
            Mode::Closed { concurrency } => ModeReport {
                kind: "closed",
                rate_per_s: None,
                arrivals: None,
                concurrency: Some(concurrency),
                in_flight_limit: layout.in_flight_limit,
                limited_by: layout.limited_by,
            },
        };
        let per_s = |n: u64| {
            if t.measured_s > 0.0 {
                n as f64 / t.measured_s
            } else {
                0.0
            }
        };
        let answered = t.counts.submitted - t.counts.unanswered.min(t.counts.submitted);
        Report {
            socket: args.socket.display().to_string(),
            tenant: args.tenant.clone(),
            op: args.op.clone(),
            params: super::params(&args.params).unwrap_or_default(),
            mode,
            count: match plan.length {
                Length::Count(n) => Some(n),
                Length::Duration(_) => None,
            },
            duration_s: match plan.length {
                Length::Count(_) => None,
                Length::Duration(d) => Some(d.as_secs_f64()),
            },
            warmup_s: t.warmup_s,
            stopped: t.stopped,
            measured_s: t.measured_s,
            counts: t.counts.clone(),
            stray: t.stray,
            throughput: Throughput {
                tasks_per_s: per_s(answered),
                ok_per_s: per_s(t.counts.ok),
                bytes_per_s: per_s(t.ok_bytes),
            },
            latency: Latency {
                client: Percentiles::of(&t.client),
                daemon: Percentiles::of(&t.daemon),
                from_due: matches!(plan.mode, Mode::Open { .. }).then(|| Percentiles::of(&t.from_due)),
            },
            by_size: inputs
                .iter()
                .zip(&t.by_size)
                .map(|(i, s)| SizeReport {
                    size_bytes: i.size,
                    input_bytes: i.bytes.len() as u64,
                    output_room_bytes: layout.room_stride,
                    ok: s.ok,
                    client: Percentiles::of(&s.client),
                    daemon: Percentiles::of(&s.daemon),
                })
                .collect(),
            backpressure: t.backpressure.clone(),
            events: t.events.clone(),
            arena_bytes: layout.arena_bytes,
            ring_entries: [layout.ring_entries.0, layout.ring_entries.1],
            machine: crate::format::machine(),
        }
    }

    /// The report for people: a summary, tasks by outcome, latencies.
    pub fn render(&self) -> String {
        let sizes: Vec<String> = self
            .by_size
            .iter()
            .map(|s| format!("{}B", bytes_binary(s.size_bytes as f64)))
            .collect();
        let mut out = format!(
            "isola load: {} on {} as tenant `{}` via {}\n",
            self.op,
            sizes.join(","),
            self.tenant,
            self.socket
        );
        let m = &self.mode;
        let how = match (m.rate_per_s, m.arrivals, m.concurrency) {
            (Some(r), Some(a), _) => format!(
                "open loop, {}/s {}, at most {} in flight ({})",
                si(r),
                if a == Arrivals::Poisson {
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
        };
        let warmup = if self.warmup_s > 0.0 {
            format!(" after a {} warm-up", duration(self.warmup_s * 1e9))
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{how}; measured {}{warmup}; stopped: {}\n",
            duration(self.measured_s * 1e9),
            stopped_text(self.stopped),
        ));
        out.push_str(&format!("machine: {}\n\n", self.machine));

        let c = &self.counts;
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
        out.push_str(&table(&["outcome", "tasks"], &rows));

        let t = &self.throughput;
        out.push_str(&format!(
            "\nthroughput: {} tasks/s answered, {} ok/s, {}B/s of input\n\n",
            si(t.tasks_per_s),
            si(t.ok_per_s),
            si(t.bytes_per_s)
        ));

        let mut rows = Vec::new();
        let mut add = |name: String, p: &Percentiles| {
            let mut r = vec![name];
            r.extend(p.cells());
            rows.push(r);
        };
        add("client (submit to answer)".into(), &self.latency.client);
        add("daemon (arrival to completion)".into(), &self.latency.daemon);
        if let Some(p) = &self.latency.from_due {
            add("client, from due time".into(), p);
        }
        if self.by_size.len() > 1 {
            for s in &self.by_size {
                let size = bytes_binary(s.size_bytes as f64);
                add(format!("  {size}B client"), &s.client);
                add(format!("  {size}B daemon"), &s.daemon);
            }
        }
        out.push_str(&table(
            &[
                "latency of ok tasks",
                "count",
                "mean",
                "p50",
                "p90",
                "p99",
                "p99.9",
                "max",
            ],
            &rows,
        ));

        let b = &self.backpressure;
        if m.kind == "open" || b.delays > 0 {
            out.push_str(&format!(
                "\nbackpressure: {} tasks waited for room (total {}, longest {})\n",
                b.delays,
                duration(b.total_ns as f64),
                duration(b.max_ns as f64)
            ));
        }
        let e = &self.events;
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
        if !told.is_empty() {
            out.push_str(&format!("events from the daemon: {}\n", told.join(", ")));
        }
        if self.stray > 0 {
            out.push_str(&format!("{} completions named no task in flight\n", self.stray));
        }
        out
    }
}

fn row(name: &str, n: u64) -> Vec<String> {
    vec![name.to_string(), n.to_string()]
}

fn bound_text(limited_by: &str) -> &'static str {
    match limited_by {
        "arena" => "as many output rooms as the arena holds",
        "rings" => "what the rings hold",
        _ => "the concurrency asked",
    }
}

/// Why a run stopped, for people.
pub(super) fn stopped_text(s: Stopped) -> &'static str {
    match s {
        Stopped::Count => "count reached",
        Stopped::Duration => "duration reached",
        Stopped::Interrupted => "interrupted",
        Stopped::Draining => "the daemon drains",
        Stopped::Error => "the connection failed",
    }
}
