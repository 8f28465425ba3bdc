//! The entries the rings carry, each a fixed number of little-endian
//! 64-bit words (so that every read of shared memory is one aligned atomic
//! load). Encoding is total; decoding of what a peer wrote keeps unknown
//! codes as such, for the reader to refuse.

/// A tenant's request: run registered operator `handle` on
/// `input_len` bytes of the arena at `input_offset`, writing at most
/// `output_cap` bytes at `output_offset`; `tag` comes back on its
/// completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Submission {
    /// The operator, as registered on this connection.
    pub handle: u32,
    /// Reserved: 0.
    pub flags: u32,
    /// Input's first byte in the arena.
    pub input_offset: u64,
    /// Input's length.
    pub input_len: u64,
    /// Output's first byte in the arena.
    pub output_offset: u64,
    /// Room for the output.
    pub output_cap: u64,
    /// The tenant's own tag, returned on the completion.
    pub tag: u64,
}

impl Submission {
    /// Words per entry.
    pub const WORDS: usize = 6;

    /// The entry's words.
    pub fn encode(&self) -> [u64; Self::WORDS] {
        [
            u64::from(self.handle) | u64::from(self.flags) << 32,
            self.input_offset,
            self.input_len,
            self.output_offset,
            self.output_cap,
            self.tag,
        ]
    }

    /// The entry `w` holds (any words decode; the check judges them).
    pub fn decode(w: &[u64; Self::WORDS]) -> Submission {
        Submission {
            handle: w[0] as u32,
            flags: (w[0] >> 32) as u32,
            input_offset: w[1],
            input_len: w[2],
            output_offset: w[3],
            output_cap: w[4],
            tag: w[5],
        }
    }
}

/// The detail codes of [`CompletionStatus::Rejected`] and [`CompletionStatus::OperatorFailed`].
pub mod detail {
    /// Rejected: the tenant's channel on the engine was full.
    pub const CHANNEL_FULL: u32 = 1;
    /// Rejected: the task did not fit the tenant's memory quota.
    pub const OVER_QUOTA: u32 = 2;
    /// Rejected: no engine serves the operator.
    pub const NO_ENGINE: u32 = 3;
    /// Rejected: another reason of the scheduler's.
    pub const OTHER: u32 = 4;
    /// Failed: the operator refused the input or failed.
    pub const OPERATOR: u32 = 1;
    /// Failed: the output did not fit the room the submission gave it
    /// (`output_len` says how much it needed).
    pub const OUTPUT_TOO_LARGE: u32 = 2;
    /// Failed: the operator panicked (the daemon went on).
    pub const PANICKED: u32 = 3;
    /// Failed: the watchdog stopped it at its tenant's service budget
    /// (`budget_action = "stop"`); its partial output was discarded.
    pub const OVER_BUDGET: u32 = 4;
}

/// How a task ended, with a detail code (a reason, an error kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionStatus {
    /// Done: the output is in the arena.
    Ok,
    /// The scheduler refused it (detail: the reason's code).
    Rejected(u32),
    /// The operator refused the input or failed (detail: its kind).
    OperatorFailed(u32),
    /// The entry itself was malformed (detail: `EntryError::code`).
    BadEntry(u32),
    /// Cancelled: the tenant or the daemon stopped before it ran.
    Cancelled,
    /// Abandoned: still running when the daemon's drain ended.
    Abandoned,
    /// A code this version does not know (from a newer peer, or garbage).
    Unknown(u32, u32),
}

impl CompletionStatus {
    fn words(self) -> (u32, u32) {
        match self {
            CompletionStatus::Ok => (0, 0),
            CompletionStatus::Rejected(d) => (1, d),
            CompletionStatus::OperatorFailed(d) => (2, d),
            CompletionStatus::BadEntry(d) => (3, d),
            CompletionStatus::Cancelled => (4, 0),
            CompletionStatus::Abandoned => (5, 0),
            CompletionStatus::Unknown(c, d) => (c, d),
        }
    }

    fn from_words(code: u32, detail: u32) -> CompletionStatus {
        match code {
            0 => CompletionStatus::Ok,
            1 => CompletionStatus::Rejected(detail),
            2 => CompletionStatus::OperatorFailed(detail),
            3 => CompletionStatus::BadEntry(detail),
            4 => CompletionStatus::Cancelled,
            5 => CompletionStatus::Abandoned,
            c => CompletionStatus::Unknown(c, detail),
        }
    }
}

/// A task's one completion: its tag, outcome, output length and timings
/// (ns on the daemon's clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletionEntry {
    /// The submission's tag.
    pub tag: u64,
    /// How it ended.
    pub outcome: CompletionStatus,
    /// Bytes of output written at the submission's output offset.
    pub output_len: u64,
    /// When the daemon took the entry.
    pub arrival_ns: u64,
    /// When it was first dispatched (0 if never).
    pub dispatch_ns: u64,
    /// When it completed.
    pub completion_ns: u64,
    /// Its predicted service time.
    pub predicted_ns: u64,
    /// Its measured service time.
    pub service_ns: u64,
}

impl CompletionEntry {
    /// Words per entry.
    pub const WORDS: usize = 8;

    /// The entry's words.
    pub fn encode(&self) -> [u64; Self::WORDS] {
        let (code, detail) = self.outcome.words();
        [
            self.tag,
            u64::from(code) | u64::from(detail) << 32,
            self.output_len,
            self.arrival_ns,
            self.dispatch_ns,
            self.completion_ns,
            self.predicted_ns,
            self.service_ns,
        ]
    }

    /// The entry `w` holds.
    pub fn decode(w: &[u64; Self::WORDS]) -> CompletionEntry {
        CompletionEntry {
            tag: w[0],
            outcome: CompletionStatus::from_words(w[1] as u32, (w[1] >> 32) as u32),
            output_len: w[2],
            arrival_ns: w[3],
            dispatch_ns: w[4],
            completion_ns: w[5],
            predicted_ns: w[6],
            service_ns: w[7],
        }
    }
}

/// What an event tells a tenant (OSMOSIS' event queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A task ran over its service budget (value: the task's tag).
    OverBudget,
    /// A submission did not fit the memory quota (value: its tag).
    QuotaExceeded,
    /// A submission found its channel full (value: its tag).
    ChannelFull,
    /// The operator changed this tenant's SLO.
    SloChanged,
    /// The daemon is draining: no new submissions are taken.
    Draining,
    /// A tenant kernel was stopped on a packet (value: the flow's index
    /// among the tenant's flows; detail: why, as
    /// `isola_kernels::KernelError::code`); the packet is dropped.
    KernelAborted,
    /// A DMA write of one of the tenant's packet kernels landed in its host
    /// window (value: the offset in the window; detail: its length).
    HostWritten,
    /// A code this version does not know.
    Unknown(u32),
}

impl EventKind {
    fn code(self) -> u32 {
        match self {
            EventKind::OverBudget => 1,
            EventKind::QuotaExceeded => 2,
            EventKind::ChannelFull => 3,
            EventKind::SloChanged => 4,
            EventKind::Draining => 5,
            EventKind::KernelAborted => 6,
            EventKind::HostWritten => 7,
            EventKind::Unknown(c) => c,
        }
    }

    fn from_code(c: u32) -> EventKind {
        match c {
            1 => EventKind::OverBudget,
            2 => EventKind::QuotaExceeded,
            3 => EventKind::ChannelFull,
            4 => EventKind::SloChanged,
            5 => EventKind::Draining,
            6 => EventKind::KernelAborted,
            7 => EventKind::HostWritten,
            c => EventKind::Unknown(c),
        }
    }
}

/// One event on a tenant's event ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// Its subject (a tag) or value.
    pub value: u64,
    /// A second value, by kind.
    pub detail: u64,
    /// When, ns on the daemon's clock.
    pub at_ns: u64,
}

impl Event {
    /// Words per entry.
    pub const WORDS: usize = 4;

    /// The entry's words.
    pub fn encode(&self) -> [u64; Self::WORDS] {
        [u64::from(self.kind.code()), self.value, self.detail, self.at_ns]
    }

    /// The entry `w` holds.
    pub fn decode(w: &[u64; Self::WORDS]) -> Event {
        Event {
            kind: EventKind::from_code(w[0] as u32),
            value: w[1],
            detail: w[2],
            at_ns: w[3],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let s = Submission {
            handle: 7,
            flags: 0,
            input_offset: 4096,
            input_len: 64,
            output_offset: 8192,
            output_cap: 4,
            tag: u64::MAX,
        };
        assert_eq!(Submission::decode(&s.encode()), s);
        for outcome in [
            CompletionStatus::Ok,
            CompletionStatus::Rejected(3),
            CompletionStatus::OperatorFailed(1),
            CompletionStatus::BadEntry(2),
            CompletionStatus::Cancelled,
            CompletionStatus::Abandoned,
            CompletionStatus::Unknown(99, 1),
        ] {
            let c = CompletionEntry {
                tag: 1,
                outcome,
                output_len: 4,
                arrival_ns: 10,
                dispatch_ns: 20,
                completion_ns: 30,
                predicted_ns: 5,
                service_ns: 6,
            };
            assert_eq!(CompletionEntry::decode(&c.encode()), c);
        }
        let e = Event {
            kind: EventKind::SloChanged,
            value: 2,
            detail: 3,
            at_ns: 4,
        };
        assert_eq!(Event::decode(&e.encode()), e);
    }
}
