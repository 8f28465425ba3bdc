//! The types the C side sees, laid out as `include/isola.h` declares them
//! (`#[repr(C)]`, same names), and the codes that mirror `isola_wire`'s.

use std::ffi::{c_char, c_void};

/// A context, as C holds it: an opaque handle, never dereferenced (by C or
/// by the library). Its value names a live context in the library's
/// table; a destroyed or made-up one is `ISOLA_ERR_BAD_CONTEXT`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct isola_ctx {
    _opaque: [u8; 0],
}

/// What a context is attached as, and its limits.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct isola_info {
    /// The tenant's index in the daemon.
    pub tenant_index: u32,
    /// Reserved: 0.
    pub reserved: u32,
    /// The arena's size in bytes: the tenant's memory quota.
    pub arena_bytes: u64,
    /// The largest input one task may have, bytes.
    pub max_input: u64,
}

/// A buffer: a range of the context's arena (an offset, never an address).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct isola_buf {
    /// Its first byte in the arena.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
}

/// One operator parameter: a key and a value, NUL-terminated UTF-8.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct isola_param {
    /// The parameter's name.
    pub key: *const c_char,
    /// Its value.
    pub value: *const c_char,
}

/// A task to submit: run operator `op` on `input_len` bytes of the arena at
/// `input_offset`, writing at most `output_cap` bytes at `output_offset`;
/// `tag` comes back on its completion (a pointer may travel in it, as
/// `(uint64_t)(uintptr_t)p`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct isola_task {
    /// The operator's handle, from `isola_register` on this context.
    pub op: u32,
    /// Reserved: 0.
    pub flags: u32,
    /// The input's first byte in the arena.
    pub input_offset: u64,
    /// The input's length.
    pub input_len: u64,
    /// The output's first byte in the arena.
    pub output_offset: u64,
    /// Room for the output.
    pub output_cap: u64,
    /// The caller's tag, returned on the completion.
    pub tag: u64,
}

/// A task's completion: its tag, how it ended and its timings (ns on the
/// daemon's clock).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct isola_completion {
    /// The task's tag.
    pub tag: u64,
    /// How it ended: an `ISOLA_OUTCOME_*` code (a newer daemon may send
    /// one this header does not name).
    pub outcome: u32,
    /// The outcome's detail (`ISOLA_REJECTED_*`, `ISOLA_FAILED_*`,
    /// `ISOLA_BAD_ENTRY_*`), 0 when it has none.
    pub detail: u32,
    /// Bytes written at the task's output offset (for
    /// `ISOLA_FAILED_OUTPUT_TOO_LARGE`: bytes it needed).
    pub output_len: u64,
    /// When the daemon took the task.
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

/// One event from the tenant's event ring.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct isola_event {
    /// What happened: an `ISOLA_EVENT_*` code.
    pub kind: u32,
    /// Reserved: 0.
    pub reserved: u32,
    /// Its subject (a task's tag) or value.
    pub value: u64,
    /// A second value, by kind.
    pub detail: u64,
    /// When, ns on the daemon's clock.
    pub at_ns: u64,
}

/// Called once per completion by `isola_progress` and `isola_wait`, with
/// the completion (valid during the call only) and the caller's `arg`. It
/// may call the library again, on this context too.
#[allow(non_camel_case_types)]
pub type isola_completion_cb = Option<unsafe extern "C" fn(c: *const isola_completion, arg: *mut c_void)>;

/// Status: done, the output is in the arena.
pub const ISOLA_OUTCOME_OK: u32 = 0;
/// Status: the scheduler refused the task (detail: `ISOLA_REJECTED_*`).
pub const ISOLA_OUTCOME_REJECTED: u32 = 1;
/// Status: the operator refused the input or failed (detail:
/// `ISOLA_FAILED_*`).
pub const ISOLA_OUTCOME_OPERATOR_FAILED: u32 = 2;
/// Status: the task's entry was malformed (detail: `ISOLA_BAD_ENTRY_*`).
pub const ISOLA_OUTCOME_BAD_ENTRY: u32 = 3;
/// Status: cancelled before it ran.
pub const ISOLA_OUTCOME_CANCELLED: u32 = 4;
/// Status: still running when the daemon's drain ended.
pub const ISOLA_OUTCOME_ABANDONED: u32 = 5;

/// Rejected: the tenant's channel on the engine was full.
pub const ISOLA_REJECTED_CHANNEL_FULL: u32 = 1;
/// Rejected: the task did not fit the tenant's memory quota.
pub const ISOLA_REJECTED_OVER_QUOTA: u32 = 2;
/// Rejected: no engine serves the operator.
pub const ISOLA_REJECTED_NO_ENGINE: u32 = 3;
/// Rejected: another reason of the scheduler's.
pub const ISOLA_REJECTED_OTHER: u32 = 4;
/// Operator failed: it refused the input or failed.
pub const ISOLA_FAILED_OPERATOR: u32 = 1;
/// Operator failed: the output did not fit its room (`output_len` says
/// how much it needed).
pub const ISOLA_FAILED_OUTPUT_TOO_LARGE: u32 = 2;
/// Operator failed: it panicked (the daemon went on).
pub const ISOLA_FAILED_PANICKED: u32 = 3;
/// Operator failed: the watchdog stopped it at its tenant's service budget
/// (`budget_action = "stop"`); its partial output was discarded.
pub const ISOLA_FAILED_OVER_BUDGET: u32 = 4;
/// Bad entry: the handle is not registered on this connection.
pub const ISOLA_BAD_ENTRY_UNKNOWN_HANDLE: u32 = 1;
/// Bad entry: reserved flags were set.
pub const ISOLA_BAD_ENTRY_UNKNOWN_FLAGS: u32 = 2;
/// Bad entry: the input is not inside the arena.
pub const ISOLA_BAD_ENTRY_INPUT_OUTSIDE: u32 = 3;
/// Bad entry: the output is not inside the arena.
pub const ISOLA_BAD_ENTRY_OUTPUT_OUTSIDE: u32 = 4;
/// Bad entry: the input and output overlap.
pub const ISOLA_BAD_ENTRY_OVERLAP: u32 = 5;
/// Bad entry: the input is larger than one task may have.
pub const ISOLA_BAD_ENTRY_TOO_LARGE: u32 = 6;

/// Event: a task ran over its service budget (value: its tag).
pub const ISOLA_EVENT_OVER_BUDGET: u32 = 1;
/// Event: a task did not fit the memory quota (value: its tag).
pub const ISOLA_EVENT_QUOTA_EXCEEDED: u32 = 2;
/// Event: a task found its channel full (value: its tag).
pub const ISOLA_EVENT_CHANNEL_FULL: u32 = 3;
/// Event: the operator changed this tenant's SLO.
pub const ISOLA_EVENT_SLO_CHANGED: u32 = 4;
/// Event: the daemon is draining; it takes no more tasks.
pub const ISOLA_EVENT_DRAINING: u32 = 5;
/// A packet kernel was stopped (value: the flow, detail: why).
pub const ISOLA_EVENT_KERNEL_ABORTED: u32 = 6;
/// A packet kernel's DMA write landed in the host window (value: its
/// offset there, detail: its length).
pub const ISOLA_EVENT_HOST_WRITTEN: u32 = 7;

/// The C view of a wire completion.
pub(crate) fn completion(c: &isola_wire::CompletionEntry) -> isola_completion {
    let (outcome, detail) = outcome_code(c.outcome);
    isola_completion {
        tag: c.tag,
        outcome,
        detail,
        output_len: c.output_len,
        arrival_ns: c.arrival_ns,
        dispatch_ns: c.dispatch_ns,
        completion_ns: c.completion_ns,
        predicted_ns: c.predicted_ns,
        service_ns: c.service_ns,
    }
}

/// An outcome's code and detail, as the wire carries them.
pub fn outcome_code(o: isola_wire::CompletionStatus) -> (u32, u32) {
    use isola_wire::CompletionStatus;
    match o {
        CompletionStatus::Ok => (ISOLA_OUTCOME_OK, 0),
        CompletionStatus::Rejected(d) => (ISOLA_OUTCOME_REJECTED, d),
        CompletionStatus::OperatorFailed(d) => (ISOLA_OUTCOME_OPERATOR_FAILED, d),
        CompletionStatus::BadEntry(d) => (ISOLA_OUTCOME_BAD_ENTRY, d),
        CompletionStatus::Cancelled => (ISOLA_OUTCOME_CANCELLED, 0),
        CompletionStatus::Abandoned => (ISOLA_OUTCOME_ABANDONED, 0),
        CompletionStatus::Unknown(c, d) => (c, d),
    }
}

/// The C view of a wire event.
pub(crate) fn event(e: &isola_wire::Event) -> isola_event {
    isola_event {
        kind: event_code(e.kind),
        reserved: 0,
        value: e.value,
        detail: e.detail,
        at_ns: e.at_ns,
    }
}

/// An event kind's code, as the wire carries it.
pub fn event_code(k: isola_wire::EventKind) -> u32 {
    use isola_wire::EventKind;
    match k {
        EventKind::OverBudget => ISOLA_EVENT_OVER_BUDGET,
        EventKind::QuotaExceeded => ISOLA_EVENT_QUOTA_EXCEEDED,
        EventKind::ChannelFull => ISOLA_EVENT_CHANNEL_FULL,
        EventKind::SloChanged => ISOLA_EVENT_SLO_CHANGED,
        EventKind::Draining => ISOLA_EVENT_DRAINING,
        EventKind::KernelAborted => ISOLA_EVENT_KERNEL_ABORTED,
        EventKind::HostWritten => ISOLA_EVENT_HOST_WRITTEN,
        EventKind::Unknown(c) => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use isola_wire::{CompletionEntry, CompletionStatus, Event, EventKind};

    /// The codes are the wire's: a completion's second word holds
    /// `code | detail << 32`, an event's first word its kind.
    #[test]
    fn codes_are_the_wires() {
        for o in [
            CompletionStatus::Ok,
            CompletionStatus::Rejected(2),
            CompletionStatus::OperatorFailed(3),
            CompletionStatus::BadEntry(6),
            CompletionStatus::Cancelled,
            CompletionStatus::Abandoned,
            CompletionStatus::Unknown(77, 9),
        ] {
            let c = CompletionEntry {
                tag: 1,
                outcome: o,
                output_len: 0,
                arrival_ns: 0,
                dispatch_ns: 0,
                completion_ns: 0,
                predicted_ns: 0,
                service_ns: 0,
            };
            let w = c.encode()[1];
            assert_eq!(outcome_code(o), (w as u32, (w >> 32) as u32), "{o:?}");
        }
        use isola_wire::entry::detail;
        use isola_wire::EntryError;
        assert_eq!(
            [
                ISOLA_REJECTED_CHANNEL_FULL,
                ISOLA_REJECTED_OVER_QUOTA,
                ISOLA_REJECTED_NO_ENGINE,
                ISOLA_REJECTED_OTHER,
                ISOLA_FAILED_OPERATOR,
                ISOLA_FAILED_OUTPUT_TOO_LARGE,
                ISOLA_FAILED_PANICKED,
                ISOLA_FAILED_OVER_BUDGET,
            ],
            [
                detail::CHANNEL_FULL,
                detail::OVER_QUOTA,
                detail::NO_ENGINE,
                detail::OTHER,
                detail::OPERATOR,
                detail::OUTPUT_TOO_LARGE,
                detail::PANICKED,
                detail::OVER_BUDGET,
            ]
        );
        assert_eq!(
            [
                ISOLA_BAD_ENTRY_UNKNOWN_HANDLE,
                ISOLA_BAD_ENTRY_UNKNOWN_FLAGS,
                ISOLA_BAD_ENTRY_INPUT_OUTSIDE,
                ISOLA_BAD_ENTRY_OUTPUT_OUTSIDE,
                ISOLA_BAD_ENTRY_OVERLAP,
                ISOLA_BAD_ENTRY_TOO_LARGE,
            ],
            [
                EntryError::UnknownHandle(0).code(),
                EntryError::UnknownFlags(0).code(),
                EntryError::InputOutsideArena.code(),
                EntryError::OutputOutsideArena.code(),
                EntryError::Overlap.code(),
                EntryError::TooLarge(0).code(),
            ]
        );
        for k in [
            EventKind::OverBudget,
            EventKind::QuotaExceeded,
            EventKind::ChannelFull,
            EventKind::SloChanged,
            EventKind::Draining,
            EventKind::KernelAborted,
            EventKind::HostWritten,
            EventKind::Unknown(42),
        ] {
            let e = Event {
                kind: k,
                value: 0,
                detail: 0,
                at_ns: 0,
            };
            assert_eq!(u64::from(event_code(k)), e.encode()[0], "{k:?}");
        }
    }
}

// Why an adapter's call ran in its own process (`isola_fallback_reason`):
// indices into `isola_wire::control::FALLBACK_REASONS`, whose names label
// isolad's metric (the library's unit test checks the two agree).
/// No tenant configured.
pub const ISOLA_FALLBACK_UNCONFIGURED: u32 = 0;
/// isolad could not be reached.
pub const ISOLA_FALLBACK_ABSENT: u32 = 1;
/// isolad refused to attach the process as the tenant.
pub const ISOLA_FALLBACK_REFUSED: u32 = 2;
/// The task was rejected: memory quota.
pub const ISOLA_FALLBACK_OVER_QUOTA: u32 = 3;
/// The task was rejected: the tenant's channel is full.
pub const ISOLA_FALLBACK_CHANNEL_FULL: u32 = 4;
/// The submission ring stayed full.
pub const ISOLA_FALLBACK_RING_FULL: u32 = 5;
/// No room in the arena for the task's buffers.
pub const ISOLA_FALLBACK_NO_ARENA: u32 = 6;
/// isolad went away during the call.
pub const ISOLA_FALLBACK_DISCONNECTED: u32 = 7;
/// No completion within the adapter's time limit.
pub const ISOLA_FALLBACK_TIMEOUT: u32 = 8;
/// Any other failure.
pub const ISOLA_FALLBACK_FAILED: u32 = 9;
/// How many reasons there are.
pub const ISOLA_FALLBACK_REASONS: u32 = 10;

#[cfg(test)]
mod fallback_tests {
    use super::*;
    use isola_wire::control::FALLBACK_REASONS;

    #[test]
    fn the_reasons_are_the_daemons() {
        let ours = [
            (ISOLA_FALLBACK_UNCONFIGURED, "unconfigured"),
            (ISOLA_FALLBACK_ABSENT, "absent"),
            (ISOLA_FALLBACK_REFUSED, "refused"),
            (ISOLA_FALLBACK_OVER_QUOTA, "over_quota"),
            (ISOLA_FALLBACK_CHANNEL_FULL, "channel_full"),
            (ISOLA_FALLBACK_RING_FULL, "ring_full"),
            (ISOLA_FALLBACK_NO_ARENA, "no_arena"),
            (ISOLA_FALLBACK_DISCONNECTED, "disconnected"),
            (ISOLA_FALLBACK_TIMEOUT, "timeout"),
            (ISOLA_FALLBACK_FAILED, "failed"),
        ];
        assert_eq!(ours.len(), ISOLA_FALLBACK_REASONS as usize);
        assert_eq!(FALLBACK_REASONS.len(), ISOLA_FALLBACK_REASONS as usize);
        for (value, name) in ours {
            assert_eq!(FALLBACK_REASONS[value as usize], name);
        }
    }
}
