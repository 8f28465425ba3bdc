//! The daemon's checks of a submission it copied out of a tenant's ring:
//! its operator handle is one the connection registered, its flags are
//! known, its input and output lie inside the arena (checked arithmetic:
//! an offset near `u64::MAX` is not "small after wrapping"), do not
//! overlap, and are not larger than the limits. A failed check fails that
//! entry, with the reason's code on its completion.

use crate::entry::Submission;
use std::ops::Range;

/// Why an entry is refused; its [`EntryError::code`] travels on the
/// completion as `CompletionStatus::BadEntry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// The handle names no operator registered on this connection.
    #[error("operator handle {0} is not registered on this connection")]
    UnknownHandle(u32),
    /// Flags this version does not know are set.
    #[error("unknown flags {0:#x}")]
    UnknownFlags(u32),
    /// The input range does not lie inside the arena.
    #[error("the input range does not lie inside the arena")]
    InputOutsideArena,
    /// The output range does not lie inside the arena.
    #[error("the output range does not lie inside the arena")]
    OutputOutsideArena,
    /// The input and output ranges overlap.
    #[error("the input and output ranges overlap")]
    Overlap,
    /// The input is larger than the daemon takes in one task.
    #[error("the input is larger than the {0} bytes one task may have")]
    TooLarge(u64),
}

impl EntryError {
    /// The code that names it on the wire.
    pub fn code(&self) -> u32 {
        match self {
            EntryError::UnknownHandle(_) => 1,
            EntryError::UnknownFlags(_) => 2,
            EntryError::InputOutsideArena => 3,
            EntryError::OutputOutsideArena => 4,
            EntryError::Overlap => 5,
            EntryError::TooLarge(_) => 6,
        }
    }
}

/// A submission that passed every check: its ranges are inside the arena
/// and disjoint, in `usize` for slicing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedSubmission {
    /// The operator's handle (registered on this connection).
    pub handle: u32,
    /// The input's bytes in the arena.
    pub input: Range<usize>,
    /// The output's room in the arena.
    pub output: Range<usize>,
    /// The tenant's tag.
    pub tag: u64,
}

/// Checks `s` against an arena of `arena_bytes`, the registered handles
/// (`known`) and the largest input one task may have.
pub fn check_submission(
    s: &Submission,
    arena_bytes: u64,
    known: impl Fn(u32) -> bool,
    max_input: u64,
) -> Result<CheckedSubmission, EntryError> {
    if s.flags != 0 {
        return Err(EntryError::UnknownFlags(s.flags));
    }
    if !known(s.handle) {
        return Err(EntryError::UnknownHandle(s.handle));
    }
    if s.input_len > max_input {
        return Err(EntryError::TooLarge(max_input));
    }
    let inside = |offset: u64, len: u64| {
        let end = offset.checked_add(len).filter(|&e| e <= arena_bytes)?;
        Some(usize::try_from(offset).ok()?..usize::try_from(end).ok()?)
    };
    let input = inside(s.input_offset, s.input_len).ok_or(EntryError::InputOutsideArena)?;
    let output = inside(s.output_offset, s.output_cap).ok_or(EntryError::OutputOutsideArena)?;
    let empty = input.is_empty() || output.is_empty();
    if !empty && input.start < output.end && output.start < input.end {
        return Err(EntryError::Overlap);
    }
    // What the checks guarantee the daemon, which slices the arena with it.
    debug_assert!(
        input.end as u64 <= arena_bytes
            && output.end as u64 <= arena_bytes
            && input.len() as u64 == s.input_len
            && output.len() as u64 == s.output_cap
            && s.input_len <= max_input,
        "a checked submission's ranges are its own, inside the arena"
    );
    debug_assert!(
        empty || input.end <= output.start || output.end <= input.start,
        "a checked submission's ranges are disjoint"
    );
    Ok(CheckedSubmission {
        handle: s.handle,
        input,
        output,
        tag: s.tag,
    })
}
