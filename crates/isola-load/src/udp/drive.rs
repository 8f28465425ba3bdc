//! The packet generator's loop: [`run`] sends datagrams as the plan says
//! (at their due times, or while a flow's window has room), takes the
//! replies of every flow (one `poll` over the flows' sockets, then each
//! readable socket until it would block), matches each to its packet
//! ([`InFlight`]), and tallies sent, received, lost and reply latency per
//! flow ([`Tally`]).
//!
//! A packet's latency runs from just before its `send` to just after its
//! reply's `recv`, on this process's clock. A packet not answered within
//! the plan's timeout is lost, and a reply that finds no packet in flight
//! (it came after its packet's timeout, or echoes a sequence number not in
//! flight) is late. The loop is one thread: per packet one `send` and one
//! `recv`, no hand-off between threads.

use super::{Arrivals, Matching, Pace, UdpPlan};
use crate::progress::RunProgress;
use crate::{Length, Progress, Stopped};
use isola_core::metrics::LatencyHistogram;
use isola_sim::workload::SizeSampler;
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The longest the loop waits before it looks at its flags again.
const TICK: Duration = Duration::from_millis(50);

/// How long before a packet's due time the loop stops sleeping and polls
/// instead (sleeps overshoot by tens of microseconds).
const EARLY: Duration = Duration::from_micros(100);

/// How long the loop waits when a socket's send buffer is full.
const BLOCKED: Duration = Duration::from_micros(200);

/// The most packets sent, or replies taken from one socket, before the
/// loop turns to the other side.
const BATCH: usize = 256;

/// What one flow measured (packets sent after the warm-up).
#[derive(Debug, Clone, Default)]
pub struct FlowTally {
    /// Packets sent.
    pub sent: u64,
    /// Replies matched to them within the timeout.
    pub received: u64,
    /// Packets not answered within the timeout.
    pub lost: u64,
    /// Replies that found no packet in flight.
    pub late: u64,
    /// Matched replies whose IP header carried ECN's Congestion
    /// Experienced mark (with `--ecn`).
    pub marked: u64,
    /// Payload bytes sent.
    pub sent_bytes: u64,
    /// Payload bytes of the matched replies.
    pub received_bytes: u64,
    /// Reply latency of the matched packets, ns.
    pub latency: LatencyHistogram,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct Tally {
    /// By flow, as the sockets.
    pub flows: Vec<FlowTally>,
    /// Reply latency over every flow, ns.
    pub latency: LatencyHistogram,
    /// ICMP errors the sockets reported (port or host unreachable):
    /// nothing listens at the address sent to.
    pub unreachable: u64,
    /// Why sending stopped.
    pub stopped: Stopped,
    /// The warm-up as run, s.
    pub warmup_s: f64,
    /// From the end of the warm-up to the last measured packet sent, s.
    pub send_s: f64,
    /// From the end of the warm-up to the last measured packet sent or
    /// reply taken, s.
    pub measured_s: f64,
}

/// The tally, and the error that ended the run early, if one did.
pub struct RunOutcome {
    /// What was measured.
    pub tally: Tally,
    /// Why the run ended early (a socket failed).
    pub error: Option<std::io::Error>,
}

/// A packet in flight.
#[derive(Debug, Clone, Copy)]
pub struct Pending {
    /// Just before its `send`.
    pub sent: Instant,
    /// Sent after the warm-up.
    pub measured: bool,
}

/// One flow's packets in flight, by sequence number (consecutive from
/// `base`): replies are matched to the oldest (in order) or by sequence
/// number (echo); holes left by out-of-order matches are trimmed.
#[derive(Debug, Default)]
pub struct InFlight {
    base: u64,
    slots: VecDeque<Option<Pending>>,
    outstanding: u64,
}

impl InFlight {
    /// The next packet's sequence number.
    pub fn next_seq(&self) -> u64 {
        self.base + self.slots.len() as u64
    }

    /// Packets in flight.
    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }

    /// Adds the packet numbered [`InFlight::next_seq`].
    pub fn push(&mut self, p: Pending) {
        self.slots.push_back(Some(p));
        self.outstanding += 1;
    }

    /// Takes the oldest packet in flight.
    pub fn take_oldest(&mut self) -> Option<Pending> {
        self.trim();
        let p = self.slots.pop_front().flatten()?;
        self.base += 1;
        self.outstanding -= 1;
        Some(p)
    }

    /// Takes the packet numbered `seq`, if it is in flight.
    pub fn take(&mut self, seq: u64) -> Option<Pending> {
        let i = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        let p = self.slots.get_mut(i)?.take()?;
        self.outstanding -= 1;
        self.trim();
        Some(p)
    }

    /// Removes the packets sent at or before `cutoff`; how many of them
    /// were measured.
    pub fn expire(&mut self, cutoff: Instant) -> u64 {
        let mut lost = 0;
        loop {
            self.trim();
            match self.slots.front() {
                Some(Some(p)) if p.sent <= cutoff => {
                    lost += u64::from(p.measured);
                    self.slots.pop_front();
                    self.base += 1;
                    self.outstanding -= 1;
                }
                _ => return lost,
            }
        }
    }

    /// When the oldest packet in flight was sent.
    pub fn oldest(&self) -> Option<Instant> {
        self.slots.iter().flatten().next().map(|p| p.sent)
    }

    /// Drops the answered slots at the front.
    fn trim(&mut self) {
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.base += 1;
        }
    }
}

/// Whether `e` is an ICMP error a connected UDP socket reports: nothing
/// listens at the address, or it cannot be reached.
fn unreachable(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable
    )
}

/// Whether `e` says the socket's send buffer is full.
fn blocked(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::WouldBlock
        || rustix::io::Errno::from_io_error(e) == Some(rustix::io::Errno::NOBUFS)
}

/// The loop's state.
struct Driver<'a> {
    plan: &'a UdpPlan,
    sockets: &'a [UdpSocket],
    in_flight: Vec<InFlight>,
    tally: Tally,
    start: Instant,
    measure_from: Instant,
    sizes: SizeSampler,
    /// The next packet's size, drawn and not yet sent.
    next_size: Option<usize>,
    /// Payload bytes: the largest size's, each packet a prefix.
    payload: Vec<u8>,
    /// Headers and payload heads written over them, if asked for.
    framer: Option<super::frame::Framer>,
    reply: Vec<u8>,
    next_flow: usize,
    /// At a rate: the next packet's due time, s after `start`.
    next_due_s: f64,
    /// Packets sent, for bursts.
    sent_total: u64,
    rng: u64,
    measured_sent: u64,
    last_send: Option<Instant>,
    last_reply: Option<Instant>,
    progress: RunProgress<'a>,
}

/// Runs `plan` over the flows' `sockets` (connected, non-blocking) until
/// its count or duration or `stop` (Ctrl-C), then takes replies until
/// every packet is answered or lost.
pub(super) fn run(
    sockets: &[UdpSocket],
    plan: &UdpPlan,
    framer: Option<super::frame::Framer>,
    stop: &AtomicBool,
    progress: &mut dyn Progress,
) -> RunOutcome {
    let start = Instant::now();
    let largest = plan.size.max_bytes() as usize;
    let mut d = Driver {
        plan,
        sockets,
        in_flight: sockets.iter().map(|_| InFlight::default()).collect(),
        tally: Tally {
            flows: vec![FlowTally::default(); sockets.len()],
            latency: LatencyHistogram::new(),
            unreachable: 0,
            stopped: Stopped::Error,
            warmup_s: 0.0,
            send_s: 0.0,
            measured_s: 0.0,
        },
        start,
        measure_from: start + plan.warmup,
        sizes: SizeSampler::new(&plan.size, plan.seed, 0),
        next_size: None,
        payload: crate::random_bytes(largest.max(8), plan.seed),
        framer,
        reply: vec![0; 1 << 16],
        next_flow: 0,
        next_due_s: 0.0,
        sent_total: 0,
        rng: plan.seed,
        measured_sent: 0,
        last_send: None,
        last_reply: None,
        progress: RunProgress::new(progress, start),
    };
    let mut fds: Vec<PollFd<'_>> = sockets.iter().map(|s| PollFd::new(s, PollFlags::IN)).collect();
    let result = d
        .send_until_done(&mut fds, stop)
        .and_then(|()| d.wait_for_replies(&mut fds));
    let tally = d.finish();
    RunOutcome {
        tally,
        error: result.err(),
    }
}

impl Driver<'_> {
    /// Sends and takes replies until the plan or a signal stops it.
    fn send_until_done(&mut self, fds: &mut [PollFd<'_>], stop: &AtomicBool) -> std::io::Result<()> {
        loop {
            if stop.load(Ordering::Relaxed) {
                self.tally.stopped = Stopped::Interrupted;
                return Ok(());
            }
            let now = Instant::now();
            if let Some(why) = self.done(now) {
                self.tally.stopped = why;
                return Ok(());
            }
            self.expire(now);
            let next_send = self.send_due()?;
            let now = Instant::now();
            let mut deadline = now + TICK;
            if let Some(at) = next_send {
                // Sleep until EARLY before a due time, and poll without
                // waiting from there.
                deadline = deadline.min(at.checked_sub(EARLY).unwrap_or(now));
            }
            if let Some(at) = self.next_expiry() {
                deadline = deadline.min(at);
            }
            if let Length::Duration(d) = self.plan.length {
                deadline = deadline.min(self.measure_from + d);
            }
            self.take_replies(fds, deadline.saturating_duration_since(now))?;
            self.show_progress();
        }
    }

    /// Takes replies until every packet in flight is answered or lost.
    fn wait_for_replies(&mut self, fds: &mut [PollFd<'_>]) -> std::io::Result<()> {
        loop {
            let now = Instant::now();
            self.expire(now);
            let Some(at) = self.next_expiry() else {
                return Ok(());
            };
            self.take_replies(fds, at.saturating_duration_since(now).min(TICK))?;
            self.show_progress();
        }
    }

    /// Why sending is over at `now`, if it is.
    fn done(&self, now: Instant) -> Option<Stopped> {
        match self.plan.length {
            Length::Count(n) if self.measured_sent >= n => Some(Stopped::Count),
            Length::Duration(d) if now >= self.measure_from + d => Some(Stopped::Duration),
            _ => None,
        }
    }

    /// Counts the packets sent more than the timeout ago as lost.
    fn expire(&mut self, now: Instant) {
        let Some(cutoff) = now.checked_sub(self.plan.timeout) else {
            return;
        };
        for (f, t) in self.in_flight.iter_mut().zip(&mut self.tally.flows) {
            t.lost += f.expire(cutoff);
        }
    }

    /// When the oldest packet in flight times out.
    fn next_expiry(&self) -> Option<Instant> {
        self.in_flight
            .iter()
            .filter_map(InFlight::oldest)
            .min()
            .map(|t| t + self.plan.timeout)
    }

    /// The next packet's due time, at a rate.
    fn due_at(&self) -> Instant {
        self.start + Duration::from_secs_f64(self.next_due_s)
    }

    /// Moves the due time on by one gap.
    fn advance_due(&mut self, per_s: f64, arrivals: Arrivals) {
        self.next_due_s += match arrivals {
            Arrivals::Constant => 1.0 / per_s,
            Arrivals::Poisson => crate::poisson_gap(per_s, &mut self.rng),
            Arrivals::Bursts(n) if self.sent_total % u64::from(n) == 0 => f64::from(n) / per_s,
            Arrivals::Bursts(_) => 0.0,
        };
    }

    /// Sends what is due (at a rate) or what the windows allow (max), a
    /// batch at most, the flows strictly in turn; when to send next (now,
    /// if the batch was cut short; none while the next flow's window is
    /// full).
    fn send_due(&mut self) -> std::io::Result<Option<Instant>> {
        let flows = self.sockets.len();
        match self.plan.pace {
            Pace::Rate { per_s, arrivals } => {
                for _ in 0..BATCH {
                    let now = Instant::now();
                    if self.done(now).is_some() {
                        return Ok(Some(now));
                    }
                    let due = self.due_at();
                    if due > now {
                        return Ok(Some(due));
                    }
                    if !self.send_one(self.next_flow)? {
                        return Ok(Some(now + BLOCKED));
                    }
                    self.next_flow = (self.next_flow + 1) % flows;
                    self.advance_due(per_s, arrivals);
                }
                Ok(Some(Instant::now()))
            }
            Pace::Max { window } => {
                // Strictly in turn: a flow whose window is full holds the
                // next packet until one of its replies (or a timeout).
                for _ in 0..BATCH {
                    let i = self.next_flow;
                    if self.in_flight[i].outstanding() >= window {
                        return Ok(None);
                    }
                    if self.done(Instant::now()).is_some() {
                        return Ok(Some(Instant::now()));
                    }
                    if !self.send_one(i)? {
                        return Ok(Some(Instant::now() + BLOCKED));
                    }
                    self.next_flow = (i + 1) % flows;
                }
                Ok(Some(Instant::now()))
            }
        }
    }

    /// Sends the next packet on flow `i`; false if its socket's buffer is
    /// full (the packet stays next).
    fn send_one(&mut self, i: usize) -> std::io::Result<bool> {
        let size = match self.next_size {
            Some(s) => s,
            None => *self.next_size.insert(self.sizes.sample() as usize),
        };
        let datagram: &[u8] = match &mut self.framer {
            Some(f) => f.frame(i, self.sent_total, &self.payload[..size]),
            None => {
                let seq = self.in_flight[i].next_seq().to_le_bytes();
                let head = size.min(seq.len());
                self.payload[..head].copy_from_slice(&seq[..head]);
                &self.payload[..size]
            }
        };
        let mut tries = 0;
        let sent = loop {
            let sent = Instant::now();
            match self.sockets[i].send(datagram) {
                Ok(_) => break sent,
                // An ICMP error from an earlier packet, reported (and
                // cleared) here; this packet was not sent: again.
                Err(e) if unreachable(&e) && tries < 2 => {
                    self.tally.unreachable += 1;
                    tries += 1;
                }
                Err(e) if blocked(&e) || unreachable(&e) => return Ok(false),
                Err(e) => return Err(e),
            }
        };
        self.next_size = None;
        self.sent_total += 1;
        let measured = sent >= self.measure_from;
        self.in_flight[i].push(Pending { sent, measured });
        if measured {
            self.measured_sent += 1;
            self.last_send = Some(sent);
            let t = &mut self.tally.flows[i];
            t.sent += 1;
            t.sent_bytes += size as u64;
        }
        Ok(true)
    }

    /// Waits up to `wait` for a reply, then takes the replies of every
    /// readable socket.
    fn take_replies(&mut self, fds: &mut [PollFd<'_>], wait: Duration) -> std::io::Result<()> {
        let ts = Timespec {
            tv_sec: wait.as_secs() as _,
            tv_nsec: wait.subsec_nanos() as _,
        };
        match poll(fds, Some(&ts)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => return Ok(()),
            Ok(_) => {}
            Err(e) => return Err(e.into()),
        }
        for (i, fd) in fds.iter_mut().enumerate() {
            if fd.revents().is_empty() {
                continue;
            }
            fd.clear_revents();
            self.take_from(i)?;
        }
        Ok(())
    }

    /// Takes the replies waiting on flow `i`'s socket (a batch at most).
    fn take_from(&mut self, i: usize) -> std::io::Result<()> {
        for _ in 0..BATCH {
            let received = if self.plan.ecn {
                isola_runtime::ip_tos::recv_with_tos(&self.sockets[i], &mut self.reply)
            } else {
                self.sockets[i].recv(&mut self.reply).map(|len| (len, 0))
            };
            let (len, tos) = match received {
                Ok(got) => got,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if unreachable(&e) => {
                    self.tally.unreachable += 1;
                    continue;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let at = Instant::now();
            let f = &mut self.in_flight[i];
            let packet = match self.plan.matching {
                Matching::Fifo => f.take_oldest(),
                Matching::Echo => self
                    .reply
                    .get(..8)
                    .filter(|_| len >= 8)
                    .and_then(|b| b.try_into().ok())
                    .and_then(|b| f.take(u64::from_le_bytes(b))),
            };
            let t = &mut self.tally.flows[i];
            match packet {
                Some(p) if p.measured => {
                    let ns = at.duration_since(p.sent).as_nanos() as u64;
                    t.received += 1;
                    t.received_bytes += len as u64;
                    let ce = isola_runtime::ip_tos::ECN_CE;
                    t.marked += u64::from(tos & isola_runtime::ip_tos::ECN_MASK == ce);
                    t.latency.record(ns);
                    self.tally.latency.record(ns);
                    self.last_reply = Some(at);
                }
                Some(_) => {}
                None if at >= self.measure_from => t.late += 1,
                None => {}
            }
        }
        Ok(())
    }

    /// Moves the progress bar, ten times a second at most.
    fn show_progress(&mut self) {
        let received: u64 = self.tally.flows.iter().map(|f| f.received).sum();
        self.progress
            .show(self.plan.length, self.measure_from, self.measured_sent, || {
                format!("{received} answered")
            });
    }

    /// The tally, with the packets still in flight (none, unless a socket
    /// failed) counted lost.
    fn finish(mut self) -> Tally {
        for (f, t) in self.in_flight.iter_mut().zip(&mut self.tally.flows) {
            t.lost += f.expire(Instant::now() + Duration::from_secs(3600));
        }
        let t = &mut self.tally;
        let since = |at: Option<Instant>| {
            at.map_or(0.0, |a| {
                a.saturating_duration_since(self.measure_from).as_secs_f64()
            })
        };
        t.warmup_s = self.plan.warmup.min(self.start.elapsed()).as_secs_f64();
        t.send_s = since(self.last_send);
        t.measured_s = t.send_s.max(since(self.last_reply));
        self.tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, ms: u64) -> Pending {
        Pending {
            sent: base + Duration::from_millis(ms),
            measured: true,
        }
    }

    #[test]
    fn replies_in_order_take_the_oldest_packet() {
        let t0 = Instant::now();
        let mut f = InFlight::default();
        for ms in 0..3 {
            assert_eq!(f.next_seq(), ms);
            f.push(at(t0, ms));
        }
        assert_eq!(f.take_oldest().map(|p| p.sent), Some(t0));
        assert_eq!(f.outstanding(), 2);
        assert_eq!(f.oldest(), Some(t0 + Duration::from_millis(1)));
        assert_eq!(f.next_seq(), 3);
    }

    #[test]
    fn echoed_replies_take_their_own_packet_in_any_order() {
        let t0 = Instant::now();
        let mut f = InFlight::default();
        for ms in 0..4 {
            f.push(at(t0, ms));
        }
        assert_eq!(f.take(2).map(|p| p.sent), Some(t0 + Duration::from_millis(2)));
        assert!(f.take(2).is_none(), "a duplicate finds nothing");
        assert!(f.take(9).is_none(), "nor a number never sent");
        assert_eq!(f.take(0).map(|p| p.sent), Some(t0));
        assert_eq!((f.outstanding(), f.next_seq()), (2, 4));
        // Packet 1 times out; 3 is still in flight.
        assert_eq!(f.expire(t0 + Duration::from_millis(1)), 1);
        assert_eq!(f.outstanding(), 1);
        assert!(f.take(1).is_none(), "its reply comes late");
        assert_eq!(f.oldest(), Some(t0 + Duration::from_millis(3)));
        assert_eq!(f.expire(t0 + Duration::from_millis(10)), 1);
        assert_eq!((f.outstanding(), f.oldest()), (0, None));
        assert_eq!(f.next_seq(), 4);
    }
}
