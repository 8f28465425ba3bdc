//! What `isola load` reports: the run's settings, its tasks by outcome, its
//! throughput and its latencies (client's clock, daemon's clock, and for
//! an open loop from each task's due time), as data that serialises as its
//! JSON ([`RingsReport`]'s fields).

use super::drive::{Backpressure, Counts, Events, Layout, Tally};
use super::{Arrivals, Checked, Input, Mode, Settings};
use crate::{Length, Percentiles, Stopped};
use serde::Serialize;
use std::collections::BTreeMap;

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
pub struct RingsReport {
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

impl RingsReport {
    /// The report of a run of `settings` (checked into `checked`, its
    /// inputs laid out by `layout`) that measured `t`.
    pub fn new(
        settings: &Settings,
        checked: &Checked,
        inputs: &[Input],
        layout: &Layout,
        t: &Tally,
    ) -> RingsReport {
        let plan = &checked.plan;
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
        RingsReport {
            socket: settings.socket.display().to_string(),
            tenant: settings.tenant.clone(),
            op: settings.op.clone(),
            params: checked.params.clone(),
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
            machine: isola_runtime::host::machine(),
        }
    }
}
