//! # isola-client
//!
//! A tenant's side of `isolad`, for a program that submits work to a shared
//! accelerator from its own process: [`Client::connect`] attaches as a
//! tenant (the daemon checks the process's credentials), maps the region
//! the daemon passed, [`Client::register`] names an operator once, then
//! tasks are written into the arena ([`Client::write`]), submitted on the
//! ring ([`Client::submit`]) and answered on the completion ring
//! ([`Client::poll`], [`Client::wait`]); outputs are read from the arena
//! ([`Client::read`]).
//!
//! What it must not do: trust the daemon's indices or lengths beyond what
//! `isola_wire` checks, or hold scheduling logic; it is a thin layer over
//! the wire format.

#![warn(missing_docs)]

use isola_wire::control::{self, ControlError, Reply, Request};
use isola_wire::{CompletionEntry, Consumer, Producer, Region, RingError, Submission};
use rustix::fd::{AsFd, OwnedFd};
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

pub use isola_wire::entry::{detail, CompletionStatus};

/// What went wrong on the tenant's side.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The control socket failed, or the daemon went away.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// The daemon refused to attach this process as the tenant.
    #[error("refused: {0}")]
    Refused(String),
    /// The daemon refused a request (an operator registration).
    #[error("failed: {0}")]
    Failed(String),
    /// The daemon answered out of turn.
    #[error("unexpected answer from the daemon: {0}")]
    Protocol(String),
    /// The region the daemon passed is not usable.
    #[error(transparent)]
    Region(#[from] isola_wire::RegionError),
    /// A ring: full (submit fewer before waiting) or corrupt.
    #[error(transparent)]
    Ring(#[from] RingError),
    /// The daemon did not answer within the client's reply limit
    /// ([`Client::connect_within`]): it hangs, or is stopped.
    #[error("isolad did not answer {0} within {1:?}")]
    TimedOut(&'static str, std::time::Duration),
}

/// An attached tenant connection.
pub struct Client {
    socket: OwnedFd,
    region: Region,
    sq: Producer,
    cq: Consumer,
    eq: Consumer,
    tenant: u32,
    max_input: u64,
    /// Replies that came while waiting for completions.
    replies: VecDeque<Reply>,
    /// How long `wait` polls the completion ring before it sleeps.
    spin: std::time::Duration,
    /// When the daemon was last seen alive (`check_alive`).
    checked_at: std::time::Instant,
    /// How long a request waits for the daemon's reply (`None`: as long
    /// as it takes).
    reply_limit: Option<std::time::Duration>,
}

/// How often, at most, a submit or an empty poll asks the kernel whether
/// the daemon is still there: 1 ms.
pub const LIVENESS_CHECK: std::time::Duration = std::time::Duration::from_millis(1);

/// How long [`Client::wait`] polls by default before it sleeps: 50 us, as
/// the daemon's own threads.
pub const DEFAULT_SPIN: std::time::Duration = std::time::Duration::from_micros(50);

impl Client {
    /// Connects to the daemon at `socket` and attaches as `tenant`.
    pub fn connect(socket: &Path, tenant: &str) -> Result<Client, ClientError> {
        Client::connect_within(socket, tenant, None)
    }

    /// [`Client::connect`], waiting at most `reply_limit` for the daemon's
    /// answer, then and to every later request (a registration, a host
    /// window): [`ClientError::TimedOut`] when a daemon that accepted the
    /// connection hangs. `None` waits as long as it takes.
    pub fn connect_within(
        socket: &Path,
        tenant: &str,
        reply_limit: Option<std::time::Duration>,
    ) -> Result<Client, ClientError> {
        let fd = control::connect(socket)?;
        let hello = Request::Hello {
            tenant: tenant.to_string(),
            version: control::PROTOCOL_VERSION,
        };
        control::send(fd.as_fd(), &hello, None)?;
        if let Some(limit) = reply_limit {
            if !readable_within(&fd, limit)? {
                return Err(ClientError::TimedOut("the attach", limit));
            }
        }
        match control::recv::<Reply>(fd.as_fd())? {
            (Reply::Welcome { tenant, max_input }, Some(region)) => {
                let region = Region::open(region)?;
                let l = *region.layout();
                Ok(Client {
                    socket: fd,
                    sq: Producer::new(l.sq),
                    cq: Consumer::new(l.cq),
                    eq: Consumer::new(l.eq),
                    region,
                    tenant,
                    max_input,
                    replies: VecDeque::new(),
                    spin: DEFAULT_SPIN,
                    checked_at: std::time::Instant::now(),
                    reply_limit,
                })
            }
            (Reply::Refused { reason }, _) => Err(ClientError::Refused(reason)),
            (other, _) => Err(ClientError::Protocol(format!("{other:?}"))),
        }
    }

    /// Sets how long [`Client::wait`] polls the completion ring before it
    /// sleeps on the socket (zero: it sleeps at once, costing a wake-up per
    /// completion but no CPU).
    pub fn set_spin(&mut self, spin: std::time::Duration) {
        self.spin = spin;
    }

    /// The tenant's index in the daemon.
    pub fn tenant(&self) -> u32 {
        self.tenant
    }

    /// The arena's size: the tenant's memory quota.
    pub fn arena_bytes(&self) -> u64 {
        self.region.layout().geometry.arena_bytes
    }

    /// The largest input one task may have.
    pub fn max_input(&self) -> u64 {
        self.max_input
    }

    /// The region's geometry: the rings' sizes and the arena's. At most
    /// `sq_entries` submissions wait on the ring, and the daemon takes no
    /// more than `cq_entries` it has not answered, so `sq_entries +
    /// cq_entries` tasks at most are in flight at once.
    pub fn geometry(&self) -> isola_wire::Geometry {
        self.region.layout().geometry
    }

    /// Registers operator `op` with `params`; its handle names it in
    /// submissions.
    pub fn register(&mut self, op: &str, params: &BTreeMap<String, String>) -> Result<u32, ClientError> {
        let request = Request::Register {
            op: op.to_string(),
            params: params.clone(),
        };
        control::send(self.socket.as_fd(), &request, None)?;
        loop {
            match self.next_reply()? {
                Reply::Registered { handle } => return Ok(handle),
                Reply::Failed { reason } => return Err(ClientError::Failed(reason)),
                Reply::Kick => continue,
                other => return Err(ClientError::Protocol(format!("{other:?}"))),
            }
        }
    }

    /// Makes the arena's bytes `offset..offset + len` this tenant's host
    /// window: its packet kernels' DMA writes land there (a kernel's host
    /// offset 0 is `offset`), each told as a `HostWritten` event. `len` 0
    /// withdraws it. The daemon refuses a window outside the arena.
    pub fn host_window(&mut self, offset: u64, len: u64) -> Result<(), ClientError> {
        control::send(self.socket.as_fd(), &Request::HostWindow { offset, len }, None)?;
        loop {
            match self.next_reply()? {
                Reply::WindowSet => return Ok(()),
                Reply::Failed { reason } => return Err(ClientError::Failed(reason)),
                Reply::Kick => continue,
                other => return Err(ClientError::Protocol(format!("{other:?}"))),
            }
        }
    }

    /// Tells the daemon that `count` calls meant for it ran in this
    /// process instead, for `reason` (an index into
    /// [`isola_wire::control::FALLBACK_REASONS`]): it counts them in its
    /// metrics. No reply is awaited.
    pub fn report_fallbacks(&mut self, reason: u32, count: u64) -> Result<(), ClientError> {
        control::send(self.socket.as_fd(), &Request::Fallbacks { reason, count }, None)?;
        Ok(())
    }

    /// Writes `data` into the arena at `offset`.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<(), ClientError> {
        Ok(self.region.write_arena(offset, data)?)
    }

    /// Reads `len` bytes of the arena at `offset`.
    pub fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>, ClientError> {
        Ok(self.region.read_arena(offset, len)?)
    }

    /// Reads `out.len()` bytes of the arena at `offset` into `out`.
    pub fn read_into(&self, offset: u64, out: &mut [u8]) -> Result<(), ClientError> {
        Ok(self.region.read_arena_into(offset, out)?)
    }

    /// Puts `s` on the submission ring and tells the daemon.
    pub fn submit(&mut self, s: &Submission) -> Result<(), ClientError> {
        self.submit_all(std::slice::from_ref(s))
    }

    /// Puts every entry of `batch` on the submission ring, then tells the
    /// daemon once (the ring must have room for them all: the entries
    /// before a full ring are submitted, and the error says it was full).
    pub fn submit_all(&mut self, batch: &[Submission]) -> Result<(), ClientError> {
        if self.submit_burst(batch)? < batch.len() {
            return Err(RingError::Full.into());
        }
        Ok(())
    }

    /// Puts the entries of `batch` on the submission ring in order until
    /// it is full, tells the daemon once, and returns how many went on (as
    /// DPDK's enqueue burst: a full ring is a count, not an error).
    pub fn submit_burst(&mut self, batch: &[Submission]) -> Result<usize, ClientError> {
        self.check_alive()?;
        let mut pushed = 0;
        let mut corrupt = None;
        for s in batch {
            match self.sq.push(self.region.words(), &s.encode()) {
                Ok(()) => pushed += 1,
                Err(RingError::Full) => break,
                Err(e) => {
                    corrupt = Some(e);
                    break;
                }
            }
        }
        self.wake_daemon()?;
        match corrupt {
            Some(e) => Err(e.into()),
            None => Ok(pushed),
        }
    }

    /// Wakes the daemon's side of this connection if it sleeps and has
    /// entries to take (it polls for a while after each, and then needs
    /// no wake-up).
    fn wake_daemon(&mut self) -> Result<(), ClientError> {
        let words = self.region.words();
        if self.sq.pending(words)? > 0 && self.sq.consumer_sleeps(words) {
            control::send(self.socket.as_fd(), &Request::Kick, None)?;
        }
        Ok(())
    }

    /// The next completion, if one is ready.
    pub fn poll(&mut self) -> Result<Option<CompletionEntry>, ClientError> {
        let c = self
            .cq
            .pop::<{ CompletionEntry::WORDS }>(self.region.words())?
            .map(|w| CompletionEntry::decode(&w));
        match c {
            // A ring cell freed: the daemon may have waited for one to take more.
            Some(_) => self.wake_daemon()?,
            // Nothing to read: is anyone still writing?
            None => self.check_alive()?,
        }
        Ok(c)
    }

    /// An error if the daemon has gone away (killed, stopped, or it closed
    /// this connection), looked at most once per [`LIVENESS_CHECK`]: the
    /// ring calls make no system call, so a dead daemon would otherwise
    /// go unnoticed by a tenant that only submits and polls.
    fn check_alive(&mut self) -> Result<(), ClientError> {
        let now = std::time::Instant::now();
        if now.duration_since(self.checked_at) < LIVENESS_CHECK {
            return Ok(());
        }
        self.checked_at = now;
        let mut fds = [rustix::event::PollFd::new(
            &self.socket,
            rustix::event::PollFlags::IN,
        )];
        let zero = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        match rustix::event::poll(&mut fds, Some(&zero)) {
            Ok(_) => {
                let seen = fds[0].revents();
                if seen.intersects(rustix::event::PollFlags::HUP | rustix::event::PollFlags::ERR) {
                    return Err(ClientError::Control(ControlError::Closed));
                }
                Ok(())
            }
            Err(e) => Err(ClientError::Control(ControlError::Os {
                what: "poll the daemon's socket",
                source: e,
            })),
        }
    }

    /// The next event on the tenant's event ring (a task over its budget,
    /// a submission over quota or on a full channel), if any.
    pub fn event(&mut self) -> Result<Option<isola_wire::Event>, ClientError> {
        Ok(self
            .eq
            .pop::<{ isola_wire::Event::WORDS }>(self.region.words())?
            .map(|w| isola_wire::Event::decode(&w)))
    }

    /// The next completion, waiting for the daemon's wake-up if none is
    /// ready (an error if the daemon goes away meanwhile).
    pub fn wait(&mut self) -> Result<CompletionEntry, ClientError> {
        let start = std::time::Instant::now();
        loop {
            if let Some(c) = self.poll()? {
                return Ok(c);
            }
            if start.elapsed() < self.spin {
                std::thread::yield_now();
                continue;
            }
            // Say so, look once more, then sleep until the daemon's kick.
            self.cq.sleep(self.region.words(), true);
            if let Some(c) = self.poll()? {
                self.cq.sleep(self.region.words(), false);
                return Ok(c);
            }
            let received = control::recv::<Reply>(self.socket.as_fd());
            self.cq.sleep(self.region.words(), false);
            let (reply, _) = received?;
            if !matches!(reply, Reply::Kick) {
                self.replies.push_back(reply);
            }
        }
    }

    /// The next completion, waiting at most until `deadline` (polling for
    /// the spin, then sleeping on the socket): `None` if none came by then,
    /// or if a signal interrupted the sleep (the caller looks at its
    /// clock and its flags, and calls again). An error if the daemon goes
    /// away meanwhile.
    pub fn wait_until(
        &mut self,
        deadline: std::time::Instant,
    ) -> Result<Option<CompletionEntry>, ClientError> {
        let start = std::time::Instant::now();
        loop {
            if let Some(c) = self.poll()? {
                return Ok(Some(c));
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            if now.duration_since(start) < self.spin {
                std::thread::yield_now();
                continue;
            }
            self.cq.sleep(self.region.words(), true);
            if let Some(c) = self.poll()? {
                self.cq.sleep(self.region.words(), false);
                return Ok(Some(c));
            }
            let readable = readable_within(&self.socket, deadline - now);
            let received = match readable {
                Ok(true) => Some(control::recv::<Reply>(self.socket.as_fd())),
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            };
            self.cq.sleep(self.region.words(), false);
            match received {
                // Timed out or interrupted: one last look, then the caller's turn.
                None => return self.poll(),
                Some(received) => {
                    let (reply, _) = received?;
                    if !matches!(reply, Reply::Kick) {
                        self.replies.push_back(reply);
                    }
                }
            }
        }
    }

    /// The next reply: one that came while waiting for completions, or
    /// the next message, waiting at most the reply limit.
    fn next_reply(&mut self) -> Result<Reply, ClientError> {
        if let Some(r) = self.replies.pop_front() {
            return Ok(r);
        }
        if let Some(limit) = self.reply_limit {
            let deadline = std::time::Instant::now() + limit;
            // A signal cuts the poll short: look again until the deadline.
            while !readable_within(
                &self.socket,
                deadline.saturating_duration_since(std::time::Instant::now()),
            )? {
                if std::time::Instant::now() >= deadline {
                    return Err(ClientError::TimedOut("a request", limit));
                }
            }
        }
        Ok(control::recv::<Reply>(self.socket.as_fd())?.0)
    }
}

/// Whether `socket` has a message (or the daemon closed it) within
/// `timeout`; `false` on a timeout or a signal.
fn readable_within(socket: &OwnedFd, timeout: std::time::Duration) -> Result<bool, ControlError> {
    use rustix::event::{PollFd, PollFlags, Timespec};
    // A timeout past what a timespec holds sleeps a day (then the caller looks again).
    let timeout = Timespec::try_from(timeout).unwrap_or(Timespec {
        tv_sec: 86_400,
        tv_nsec: 0,
    });
    let mut fds = [PollFd::new(socket, PollFlags::IN)];
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(n) => Ok(n > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(source) => Err(ControlError::Os { what: "poll", source }),
    }
}
