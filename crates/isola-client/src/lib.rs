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
use isola_wire::{Completion, Consumer, Producer, Region, RingError, Submission};
use rustix::fd::{AsFd, OwnedFd};
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

pub use isola_wire::entry::{detail, Outcome};

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
}

impl Client {
    /// Connects to the daemon at `socket` and attaches as `tenant`.
    pub fn connect(socket: &Path, tenant: &str) -> Result<Client, ClientError> {
        let fd = control::connect(socket)?;
        let hello = Request::Hello {
            tenant: tenant.to_string(),
            version: control::PROTOCOL_VERSION,
        };
        control::send(fd.as_fd(), &hello, None)?;
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
                })
            }
            (Reply::Refused { reason }, _) => Err(ClientError::Refused(reason)),
            (other, _) => Err(ClientError::Protocol(format!("{other:?}"))),
        }
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

    /// Writes `data` into the arena at `offset`.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<(), ClientError> {
        Ok(self.region.write_arena(offset, data)?)
    }

    /// Reads `len` bytes of the arena at `offset`.
    pub fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>, ClientError> {
        Ok(self.region.read_arena(offset, len)?)
    }

    /// Puts `s` on the submission ring and tells the daemon.
    pub fn submit(&mut self, s: &Submission) -> Result<(), ClientError> {
        self.submit_all(std::slice::from_ref(s))
    }

    /// Puts every entry of `batch` on the submission ring, then tells the
    /// daemon once (the ring must have room for them all: the entries
    /// before a full ring are submitted, and the error says it was full).
    pub fn submit_all(&mut self, batch: &[Submission]) -> Result<(), ClientError> {
        let mut pushed = Ok(());
        for s in batch {
            pushed = self.sq.push(self.region.words(), &s.encode());
            if pushed.is_err() {
                break;
            }
        }
        control::send(self.socket.as_fd(), &Request::Kick, None)?;
        Ok(pushed?)
    }

    /// The next completion, if one is ready.
    pub fn poll(&mut self) -> Result<Option<Completion>, ClientError> {
        Ok(self
            .cq
            .pop::<{ Completion::WORDS }>(self.region.words())?
            .map(|w| Completion::decode(&w)))
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
    pub fn wait(&mut self) -> Result<Completion, ClientError> {
        loop {
            if let Some(c) = self.poll()? {
                return Ok(c);
            }
            let (reply, _) = control::recv::<Reply>(self.socket.as_fd())?;
            if !matches!(reply, Reply::Kick) {
                self.replies.push_back(reply);
            }
        }
    }

    fn next_reply(&mut self) -> Result<Reply, ClientError> {
        match self.replies.pop_front() {
            Some(r) => Ok(r),
            None => Ok(control::recv::<Reply>(self.socket.as_fd())?.0),
        }
    }
}
