//! The load generator's loop: where inputs and output rooms lie in the
//! arena ([`Layout`]), and [`run`], which submits tasks as the plan says
//! (open loop: at their due times; closed loop: one per answer), takes
//! their completions, and tallies outcomes and latencies ([`Tally`]).
//!
//! The client's clock times a task from just before its submission to
//! when its completion is taken off the ring; the daemon's, from when it
//! took the entry to when it completed it (the completion carries both).
//! Only tasks that ended `Ok` are timed; every outcome is counted.

use super::{Arrivals, Input, Mode, RingsPlan};
use crate::progress::RunProgress;
use crate::{Length, Progress, Stopped};
use anyhow::bail;
use isola_client::{detail, Client, ClientError, CompletionStatus};
use isola_core::metrics::LatencyHistogram;
use isola_wire::{CompletionEntry, EventKind, RingError, Submission};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Offsets in the arena are aligned to a cache line.
const ALIGN: u64 = 64;

/// The longest the loop sleeps before it looks at its flags again.
const TICK: Duration = Duration::from_millis(50);

/// How long before an open-loop task's due time the loop stops sleeping
/// and polls instead.
const EARLY: Duration = Duration::from_micros(100);

/// How long the tasks in flight are waited for once submitting stops.
const GRACE: Duration = Duration::from_secs(10);

/// The gap before the next open-loop arrival at `rate` tasks/s, in s:
/// `1 / rate`, or exponentially distributed with that mean (drawn from
/// `rng`'s sequence).
fn arrival_gap(rate: f64, arrivals: Arrivals, rng: &mut u64) -> f64 {
    match arrivals {
        Arrivals::Constant => 1.0 / rate,
        Arrivals::Poisson => crate::poisson_gap(rate, rng),
    }
}

fn align(n: u64) -> u64 {
    n.div_ceil(ALIGN) * ALIGN
}

/// Where each size's input and each output room lie in the arena.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Each size's input, by index of `--sizes`.
    pub input_offsets: Vec<u64>,
    /// The first output room.
    pub first_room: u64,
    /// The distance between rooms (the largest room, aligned).
    pub room_stride: u64,
    /// How many rooms; each task in flight holds one.
    pub rooms: u64,
    /// How many tasks may be in flight at once: the closed loop's
    /// concurrency, or what the rings hold (open loop), bounded by the rooms.
    pub in_flight_limit: u64,
    /// What bounds `in_flight_limit`: "concurrency", "rings" or "arena".
    pub limited_by: &'static str,
    /// The arena's size (the tenant's memory quota).
    pub arena_bytes: u64,
    /// The rings' sizes: submission, completion.
    pub ring_entries: (u32, u32),
}

impl Layout {
    /// Lays out `inputs` and as many output rooms as the plan may keep in
    /// flight (as many as fit) in `client`'s arena; an error names the flag
    /// whose value does not fit.
    pub fn new(client: &Client, inputs: &[Input], plan: &RingsPlan) -> anyhow::Result<Layout> {
        let arena = client.arena_bytes();
        let mut input_offsets = Vec::with_capacity(inputs.len());
        let mut end = 0u64;
        for i in inputs {
            let len = i.bytes.len() as u64;
            if len > client.max_input() {
                bail!(
                    "--sizes: the {}-byte task's input is {len} bytes; isolad takes at most {} (its max_input)",
                    i.size,
                    client.max_input()
                );
            }
            input_offsets.push(end);
            end = end.saturating_add(align(len.max(1)));
        }
        let room = inputs.iter().map(|i| i.room).max().unwrap_or(1);
        let room_stride = align(room);
        let fit = arena.saturating_sub(end) / room_stride;
        if end > arena || fit == 0 {
            bail!(
                "--sizes, --output-room: inputs of {end} bytes and an output room of {room} bytes do not fit \
                 the tenant's arena of {arena} bytes (its memory_quota)"
            );
        }
        let g = client.geometry();
        let rings = u64::from(g.sq_entries) + u64::from(g.cq_entries);
        let (wanted, by) = match plan.mode {
            Mode::Closed { concurrency } if concurrency <= rings => (concurrency, "concurrency"),
            _ => (rings, "rings"),
        };
        let (in_flight_limit, limited_by) = if fit < wanted {
            (fit, "arena")
        } else {
            (wanted, by)
        };
        Ok(Layout {
            input_offsets,
            first_room: end,
            room_stride,
            rooms: in_flight_limit,
            in_flight_limit,
            limited_by,
            arena_bytes: arena,
            ring_entries: (g.sq_entries, g.cq_entries),
        })
    }

    /// Writes every input at its offset.
    pub fn write_inputs(&self, client: &Client, inputs: &[Input]) -> anyhow::Result<()> {
        for (i, offset) in inputs.iter().zip(&self.input_offsets) {
            client.write(*offset, &i.bytes)?;
        }
        Ok(())
    }

    fn room(&self, slot: u64) -> u64 {
        self.first_room + slot * self.room_stride
    }
}

/// Tasks rejected by the scheduler, by reason.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Rejected {
    /// The tenant's channel on the engine was full.
    pub channel_full: u64,
    /// Over the tenant's memory quota.
    pub over_quota: u64,
    /// No engine serves the operator.
    pub no_engine: u64,
    /// Another reason.
    pub other: u64,
}

/// Tasks whose operator failed, by kind.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Failed {
    /// The operator refused the input or failed.
    pub operator: u64,
    /// The output was larger than its room (see `--output-room`).
    pub output_too_large: u64,
    /// The operator panicked.
    pub panicked: u64,
}

/// Measured tasks by outcome.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Counts {
    /// Submitted after the warm-up.
    pub submitted: u64,
    /// Answered `Ok`.
    pub ok: u64,
    /// Rejected by the scheduler, all reasons.
    pub rejected: u64,
    /// ... by reason.
    pub rejected_by: Rejected,
    /// The operator failed, all kinds.
    pub failed: u64,
    /// ... by kind.
    pub failed_by: Failed,
    /// The daemon found the entry malformed.
    pub bad_entry: u64,
    /// Cancelled before they ran.
    pub cancelled: u64,
    /// Abandoned by a daemon's drain.
    pub abandoned: u64,
    /// An outcome this version does not know.
    pub unknown: u64,
    /// Never answered (the run was stopped, or the daemon went away).
    pub unanswered: u64,
}

/// Open-loop tasks that found no room when they were due.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Backpressure {
    /// Tasks submitted late because the ring or every output room was full.
    pub delays: u64,
    /// Their delays summed, ns.
    pub total_ns: u64,
    /// The longest, ns.
    pub max_ns: u64,
}

/// Events the daemon sent on the event ring, by kind.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Events {
    /// A task ran over its service budget.
    pub over_budget: u64,
    /// A submission did not fit the memory quota.
    pub quota_exceeded: u64,
    /// A submission found its channel full.
    pub channel_full: u64,
    /// The tenant's SLO changed.
    pub slo_changed: u64,
    /// The daemon drains.
    pub draining: u64,
    /// One of the tenant's packet kernels was stopped on a packet.
    pub kernel_aborted: u64,
    /// A packet kernel's DMA write landed in the tenant's host window.
    pub host_written: u64,
    /// Of a kind this version does not know.
    pub unknown: u64,
}

/// One size's latencies.
#[derive(Debug, Clone, Default)]
pub struct SizeTally {
    /// Tasks of this size answered `Ok`.
    pub ok: u64,
    /// On the client's clock.
    pub client: LatencyHistogram,
    /// On the daemon's.
    pub daemon: LatencyHistogram,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct Tally {
    /// Tasks by outcome.
    pub counts: Counts,
    /// `Ok` tasks, submission to completion taken, on the client's clock.
    pub client: LatencyHistogram,
    /// `Ok` tasks, the daemon's arrival to completion.
    pub daemon: LatencyHistogram,
    /// Open loop: `Ok` tasks from their due time to completion taken.
    pub from_due: LatencyHistogram,
    /// By size (as `--sizes`).
    pub by_size: Vec<SizeTally>,
    /// Input bytes of `Ok` tasks.
    pub ok_bytes: u64,
    /// Open-loop delays for want of room.
    pub backpressure: Backpressure,
    /// The daemon's events.
    pub events: Events,
    /// Completions whose tag was not in flight (a daemon's mistake).
    pub stray: u64,
    /// From the end of the warm-up to the last measured answer, s.
    pub measured_s: f64,
    /// The warm-up as run, s.
    pub warmup_s: f64,
    /// Why submitting stopped.
    pub stopped: Stopped,
}

/// The tally, and the error that ended the run early, if one did.
pub struct RunOutcome {
    /// What was measured.
    pub tally: Tally,
    /// Why the run ended early (the connection failed).
    pub error: Option<ClientError>,
}

/// A task in flight.
struct InFlight {
    /// When it was handed to the ring.
    submitted: Instant,
    /// When it was due (open loop; its submission otherwise).
    due: Instant,
    /// Its size's index.
    size: usize,
    /// Its output room.
    room: u64,
    /// Submitted after the warm-up.
    measured: bool,
}

/// The loop's state.
struct Driver<'a> {
    handle: u32,
    layout: &'a Layout,
    input_lens: Vec<u64>,
    sizes: Vec<u64>,
    plan: &'a RingsPlan,
    start: Instant,
    measure_from: Instant,
    next: u64,
    in_flight: HashMap<u64, InFlight>,
    free_rooms: Vec<u64>,
    measured_submitted: u64,
    last_answer: Option<Instant>,
    /// Open loop: the next task's due time, s after `start`.
    next_due_s: f64,
    rng: u64,
    /// Since when due tasks find no room.
    blocked_since: Option<Instant>,
    tally: Tally,
    progress: RunProgress<'a>,
}

/// Runs `plan` on `client` with operator `handle` and the inputs `layout`
/// placed (sizes and lengths as `inputs`), until its count or duration,
/// `stop` (Ctrl-C), the daemon's drain, or an error; then waits for the
/// answers of the tasks in flight.
pub(super) fn run(
    client: &mut Client,
    handle: u32,
    inputs: &[Input],
    layout: &Layout,
    plan: &RingsPlan,
    stop: &AtomicBool,
    progress: &mut dyn Progress,
) -> RunOutcome {
    let start = Instant::now();
    let mut d = Driver {
        handle,
        layout,
        input_lens: inputs.iter().map(|i| i.bytes.len() as u64).collect(),
        sizes: inputs.iter().map(|i| i.size).collect(),
        plan,
        start,
        measure_from: start + plan.warmup,
        next: 0,
        in_flight: HashMap::new(),
        free_rooms: (0..layout.rooms).rev().collect(),
        measured_submitted: 0,
        last_answer: None,
        next_due_s: 0.0,
        rng: plan.seed,
        blocked_since: None,
        tally: Tally {
            counts: Counts::default(),
            client: LatencyHistogram::new(),
            daemon: LatencyHistogram::new(),
            from_due: LatencyHistogram::new(),
            by_size: vec![SizeTally::default(); inputs.len()],
            ok_bytes: 0,
            backpressure: Backpressure::default(),
            events: Events::default(),
            stray: 0,
            measured_s: 0.0,
            warmup_s: 0.0,
            stopped: Stopped::Error,
        },
        progress: RunProgress::new(progress, start),
    };
    let result = d
        .submit_until_done(client, stop)
        .and_then(|()| d.wait_for_answers(client));
    let mut tally = d.finish();
    let error = result.err();
    // A drain ends with the daemon closing the connection: it stays the reason.
    if error.is_some() && tally.stopped != Stopped::Draining {
        tally.stopped = Stopped::Error;
    }
    RunOutcome { tally, error }
}

impl Driver<'_> {
    /// Submits and takes answers until the plan, a signal or the daemon
    /// stops it.
    fn submit_until_done(&mut self, client: &mut Client, stop: &AtomicBool) -> Result<(), ClientError> {
        loop {
            if stop.load(Ordering::Relaxed) {
                self.tally.stopped = Stopped::Interrupted;
                return Ok(());
            }
            if self.read_events(client)? {
                self.tally.stopped = Stopped::Draining;
                return Ok(());
            }
            let now = Instant::now();
            if let Some(why) = self.done(now) {
                self.tally.stopped = why;
                return Ok(());
            }
            self.submit_due(client)?;
            while let Some(c) = client.poll()? {
                self.answer(c);
            }
            self.show_progress();
            let now = Instant::now();
            let mut deadline = now + TICK;
            if let (Mode::Open { .. }, None) = (self.plan.mode, self.blocked_since) {
                // Sleeps overshoot by tens of us (timer slack): wake
                // EARLY before the due time, and poll the rest of the way.
                let due = self.due_at();
                let wake = due.checked_sub(EARLY).filter(|&w| w > now).unwrap_or(due);
                deadline = deadline.min(wake);
            }
            if let Length::Duration(d) = self.plan.length {
                deadline = deadline.min(self.measure_from + d);
            }
            if !self.in_flight.is_empty() {
                if let Some(c) = client.wait_until(deadline)? {
                    self.answer(c);
                }
            } else if deadline > now + EARLY {
                std::thread::sleep(deadline - now);
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Waits (up to [`GRACE`]) for the answers of the tasks in flight.
    fn wait_for_answers(&mut self, client: &mut Client) -> Result<(), ClientError> {
        let end = Instant::now() + GRACE;
        while !self.in_flight.is_empty() {
            let now = Instant::now();
            if now >= end {
                break;
            }
            if let Some(c) = client.wait_until(end.min(now + TICK))? {
                self.answer(c);
            }
            self.show_progress();
        }
        self.read_events(client)?;
        Ok(())
    }

    /// Why submitting is over at `now`, if it is.
    fn done(&self, now: Instant) -> Option<Stopped> {
        match self.plan.length {
            Length::Count(n) if self.measured_submitted >= n => Some(Stopped::Count),
            Length::Duration(d) if now >= self.measure_from + d => Some(Stopped::Duration),
            _ => None,
        }
    }

    /// The next open-loop task's due time.
    fn due_at(&self) -> Instant {
        self.start + Duration::from_secs_f64(self.next_due_s)
    }

    /// Moves the open loop's due time on by one gap.
    fn advance_due(&mut self, rate: f64, arrivals: Arrivals) {
        self.next_due_s += arrival_gap(rate, arrivals, &mut self.rng);
    }

    /// Submits every task due now that has room; a due task without room
    /// (the ring or every output room full) waits, counted as backpressure.
    fn submit_due(&mut self, client: &mut Client) -> Result<(), ClientError> {
        loop {
            let now = Instant::now();
            let due = match self.plan.mode {
                Mode::Open { .. } => self.due_at() <= now,
                Mode::Closed { .. } => (self.in_flight.len() as u64) < self.layout.in_flight_limit,
            };
            if !due {
                // Caught up: no task waits for room.
                self.blocked_since = None;
                return Ok(());
            }
            if self.done(now).is_some() {
                return Ok(());
            }
            let Some(&room) = self.free_rooms.last() else {
                self.blocked_since.get_or_insert(now);
                return Ok(());
            };
            let size = (self.next % self.sizes.len() as u64) as usize;
            let entry = Submission {
                handle: self.handle,
                flags: 0,
                input_offset: self.layout.input_offsets[size],
                input_len: self.input_lens[size],
                output_offset: self.layout.room(room),
                output_cap: self.layout.room_stride,
                tag: self.next,
            };
            let submitted = Instant::now();
            match client.submit(&entry) {
                Ok(()) => {}
                Err(ClientError::Ring(RingError::Full)) => {
                    self.blocked_since.get_or_insert(now);
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
            self.free_rooms.pop();
            let due = match self.plan.mode {
                Mode::Open { .. } => self.due_at(),
                Mode::Closed { .. } => submitted,
            };
            let measured = due >= self.measure_from;
            if let (Some(since), true) = (self.blocked_since, measured) {
                let late = submitted.duration_since(since.max(due)).as_nanos() as u64;
                let b = &mut self.tally.backpressure;
                b.delays += 1;
                b.total_ns += late;
                b.max_ns = b.max_ns.max(late);
            }
            self.in_flight.insert(
                self.next,
                InFlight {
                    submitted,
                    due,
                    size,
                    room,
                    measured,
                },
            );
            self.next += 1;
            if measured {
                self.measured_submitted += 1;
                self.tally.counts.submitted += 1;
            }
            if let Mode::Open { rate, arrivals } = self.plan.mode {
                self.advance_due(rate, arrivals);
            }
        }
    }

    /// Tallies completion `c`.
    fn answer(&mut self, c: CompletionEntry) {
        let taken = Instant::now();
        let Some(f) = self.in_flight.remove(&c.tag) else {
            self.tally.stray += 1;
            return;
        };
        self.free_rooms.push(f.room);
        if !f.measured {
            return;
        }
        self.last_answer = Some(taken);
        let t = &mut self.tally;
        let n = &mut t.counts;
        match c.outcome {
            CompletionStatus::Ok => {
                n.ok += 1;
                let client_ns = taken.duration_since(f.submitted).as_nanos() as u64;
                let daemon_ns = c.completion_ns.saturating_sub(c.arrival_ns);
                t.client.record(client_ns);
                t.daemon.record(daemon_ns);
                if let Mode::Open { .. } = self.plan.mode {
                    t.from_due.record(taken.duration_since(f.due).as_nanos() as u64);
                }
                let s = &mut t.by_size[f.size];
                s.ok += 1;
                s.client.record(client_ns);
                s.daemon.record(daemon_ns);
                t.ok_bytes += self.input_lens[f.size];
            }
            CompletionStatus::Rejected(d) => {
                n.rejected += 1;
                let r = &mut n.rejected_by;
                match d {
                    detail::CHANNEL_FULL => r.channel_full += 1,
                    detail::OVER_QUOTA => r.over_quota += 1,
                    detail::NO_ENGINE => r.no_engine += 1,
                    _ => r.other += 1,
                }
            }
            CompletionStatus::OperatorFailed(d) => {
                n.failed += 1;
                let f = &mut n.failed_by;
                match d {
                    detail::OUTPUT_TOO_LARGE => f.output_too_large += 1,
                    detail::PANICKED => f.panicked += 1,
                    _ => f.operator += 1,
                }
            }
            CompletionStatus::BadEntry(_) => n.bad_entry += 1,
            CompletionStatus::Cancelled => n.cancelled += 1,
            CompletionStatus::Abandoned => n.abandoned += 1,
            CompletionStatus::Unknown(..) => n.unknown += 1,
        }
    }

    /// Counts the daemon's events; whether it drains.
    fn read_events(&mut self, client: &mut Client) -> Result<bool, ClientError> {
        let mut draining = false;
        while let Some(e) = client.event()? {
            let n = &mut self.tally.events;
            match e.kind {
                EventKind::OverBudget => n.over_budget += 1,
                EventKind::QuotaExceeded => n.quota_exceeded += 1,
                EventKind::ChannelFull => n.channel_full += 1,
                EventKind::SloChanged => n.slo_changed += 1,
                EventKind::Draining => {
                    n.draining += 1;
                    draining = true;
                }
                EventKind::KernelAborted => n.kernel_aborted += 1,
                EventKind::HostWritten => n.host_written += 1,
                EventKind::Unknown(_) => n.unknown += 1,
            }
        }
        Ok(draining)
    }

    /// Moves the progress bar, ten times a second at most.
    fn show_progress(&mut self) {
        let ok = self.tally.counts.ok;
        self.progress.show(
            self.plan.length,
            self.measure_from,
            self.measured_submitted,
            || format!("{ok} ok"),
        );
    }

    /// The tally, with the tasks still in flight counted unanswered.
    fn finish(mut self) -> Tally {
        let t = &mut self.tally;
        t.counts.unanswered = self.in_flight.values().filter(|f| f.measured).count() as u64;
        t.warmup_s = self.plan.warmup.min(self.start.elapsed()).as_secs_f64();
        t.measured_s = self.last_answer.map_or(0.0, |a| {
            a.saturating_duration_since(self.measure_from).as_secs_f64()
        });
        self.tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_keep_their_rate() {
        let mut rng = 1;
        assert_eq!(arrival_gap(1e4, Arrivals::Constant, &mut rng), 1e-4);
        let n = 200_000;
        let gaps: Vec<f64> = (0..n)
            .map(|_| arrival_gap(1e4, Arrivals::Poisson, &mut rng))
            .collect();
        let mean = gaps.iter().sum::<f64>() / n as f64;
        assert!((mean - 1e-4).abs() < 1e-4 * 0.01, "{mean}");
        // Exponential: a fraction 1/e of the gaps exceed the mean.
        let above = gaps.iter().filter(|&&g| g > 1e-4).count() as f64 / n as f64;
        assert!((above - (-1.0f64).exp()).abs() < 0.01, "{above}");
        assert!(gaps.iter().all(|g| g.is_finite() && *g >= 0.0));
    }
}
