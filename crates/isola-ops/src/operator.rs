//! The operator abstraction and the generic split driver.

use crate::watch::{Checkpoint, Watch, WATCH_CHUNK_BYTES};
use isola_core::params::ParamError;
use isola_core::Subtask;
use isola_core::TaskId;
use std::any::Any;
use std::ops::Range;

/// Why an operator could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpError {
    /// No operator has this name.
    #[error("unknown operator `{name}`; known operators: {known}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// Comma-separated registered names.
        known: String,
    },
    /// A parameter is unknown, missing or invalid.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// The input is not what the operator accepts (corrupt data, bad length).
    #[error("{op}: invalid input: {reason}")]
    Input {
        /// Operator name.
        op: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The input (or the parameters it meets) would pass one of the
    /// operator's resource limits, e.g. `max_output` (see [`crate::limits`]).
    #[error("{op}: {what} would exceed the limit `{limit}` = {allowed}; raise the operator parameter `{limit}` if this is expected")]
    Limit {
        /// Operator name.
        op: &'static str,
        /// The limit, named as the parameter that sets it.
        limit: &'static str,
        /// Its value.
        allowed: u64,
        /// What passed it (e.g. "output bytes").
        what: String,
    },
    /// A tenant's kernel was stopped mid-run: the watchdog (its cycle
    /// limit), its memory cap, a trap, or a request outside its limits.
    /// Not a fault of the input alone: the packet is counted as aborted
    /// and the tenant told.
    #[error("{op}: kernel stopped: {reason}")]
    KernelStopped {
        /// Operator name.
        op: &'static str,
        /// Why, as a stable number (`isola_kernels::KernelError::code`).
        cause: u32,
        /// Why, in words.
        reason: String,
    },
    /// The operator was stopped by its watch (the watchdog: the task ran
    /// over its budget). Its partial output is discarded.
    #[error("{op}: stopped by the watchdog after {done} of {total} input bytes")]
    Stopped {
        /// Operator name.
        op: &'static str,
        /// Input bytes done when it stopped (for work paced by its output,
        /// such as decompression, the input consumed so far).
        done: u64,
        /// Input bytes of the task.
        total: u64,
    },
    /// The operator cannot be split into subtasks.
    #[error("{op} cannot be split into subtasks")]
    NotSplittable {
        /// Operator name.
        op: &'static str,
    },
    /// A subtask's result was not the kind its operator makes (a driver bug:
    /// parts of different operators or tasks were mixed up).
    #[error("{op}: subtask result of the wrong kind")]
    WrongCarry {
        /// Operator name.
        op: &'static str,
    },
}

/// A subtask's result: for independent subtasks, what `reassemble` combines;
/// for ordered ones, the state handed to the next subtask. Only the operator
/// that made it can read it.
pub type Carry = Box<dyn Any + Send>;

/// Reads back a carry made by operator `op`.
pub fn downcast<T: 'static>(op: &'static str, carry: Carry) -> Result<T, OpError> {
    carry
        .downcast::<T>()
        .map(|b| *b)
        .map_err(|_| OpError::WrongCarry { op })
}

/// Splitting whose subtasks write their output in place, into disjoint
/// regions of one preallocated task output: no per-subtask buffers and no
/// reassembly copy. `run_split` (and the runtime) prefer it; every placed
/// operator is also a [`Splitter`] (independent subtasks) through the
/// blanket implementation below, for drivers without a shared output.
pub trait Placement: Operator {
    /// Subtasks for an input of `len` bytes in chunks of about `chunk` bytes.
    fn plan(&self, task: TaskId, len: usize, chunk: usize) -> Result<Vec<Subtask>, OpError>;

    /// Length of the task's output for an input of `input_len` bytes.
    fn output_len(&self, input_len: usize) -> Result<usize, OpError>;

    /// The output ranges subtask `part` writes, in order; the ranges of
    /// different subtasks of one task never overlap.
    fn regions(&self, part: &Subtask, input_len: usize) -> Vec<Range<usize>>;

    /// Runs `part`, writing its output into `regions` (the slices of the task
    /// output for the ranges `regions()` gave, in that order), and returns
    /// what [`Placement::finish`] needs of it.
    fn run_part_into(
        &self,
        part: &Subtask,
        input: &[u8],
        regions: &mut [&mut [u8]],
    ) -> Result<Carry, OpError>;

    /// Completes the task output (e.g. an authentication tag) from every
    /// subtask's carry, in index order.
    fn finish(&self, carries: Vec<Carry>, out: &mut [u8]) -> Result<(), OpError>;
}

/// Disjoint mutable slices of `out` for sorted, non-overlapping `ranges`.
pub fn carve<'a>(mut out: &'a mut [u8], ranges: &[Range<usize>]) -> Result<Vec<&'a mut [u8]>, OpError> {
    let mut slices = Vec::with_capacity(ranges.len());
    let mut at = 0;
    for r in ranges {
        if r.start < at || r.end < r.start || r.end - at > out.len() {
            return Err(OpError::Input {
                op: "split",
                reason: format!("output region {r:?} overlaps or lies outside the output"),
            });
        }
        let rest = std::mem::take(&mut out);
        let (_, tail) = rest.split_at_mut(r.start - at);
        let (slice, tail) = tail.split_at_mut(r.end - r.start);
        slices.push(slice);
        out = tail;
        at = r.end;
    }
    Ok(slices)
}

/// A placed subtask run on buffers of its own.
struct PlacedPart {
    ranges: Vec<Range<usize>>,
    buffers: Vec<Vec<u8>>,
    carry: Carry,
}

impl<T: Placement> Splitter for T {
    fn ordered(&self) -> bool {
        false
    }

    fn plan(&self, task: TaskId, len: usize, chunk: usize) -> Result<Vec<Subtask>, OpError> {
        Placement::plan(self, task, len, chunk)
    }

    /// The subtask writes into buffers of its own, handed back with its carry.
    fn run_part(&self, part: &Subtask, input: &[u8], _: Option<Carry>) -> Result<Carry, OpError> {
        let ranges = self.regions(part, input.len());
        let mut buffers: Vec<Vec<u8>> = ranges.iter().map(|r| vec![0u8; r.len()]).collect();
        let mut slices: Vec<&mut [u8]> = buffers.iter_mut().map(Vec::as_mut_slice).collect();
        let carry = self.run_part_into(part, input, &mut slices)?;
        Ok(Box::new(PlacedPart {
            ranges,
            buffers,
            carry,
        }))
    }

    /// Copies each subtask's buffers into place, then finishes.
    fn reassemble(&self, input_len: usize, parts: Vec<Carry>) -> Result<Vec<u8>, OpError> {
        let op = self.name();
        let mut out = vec![0u8; self.output_len(input_len)?];
        let mut carries = Vec::with_capacity(parts.len());
        for part in parts {
            let part: PlacedPart = downcast(op, part)?;
            for (r, b) in part.ranges.iter().zip(&part.buffers) {
                out.get_mut(r.clone())
                    .ok_or(OpError::WrongCarry { op })?
                    .copy_from_slice(b);
            }
            carries.push(part.carry);
        }
        self.finish(carries, &mut out)?;
        Ok(out)
    }
}

// Helpers for operators whose subtasks cover aligned ranges of the input
// and write the same range of an output as long as the input.

/// Subtasks of an input of `len` bytes in chunks of about `chunk` bytes,
/// every one starting on a multiple of `unit` (a block or a sector).
pub fn aligned_plan(task: TaskId, len: usize, chunk: usize, unit: usize) -> Vec<Subtask> {
    let unit = unit.max(1) as u64;
    // At least `len / u32::MAX` so that `Subtask::ranges` need not enlarge
    // (and so misalign) the chunk to fit the count in its `u32` index.
    let chunk = (chunk as u64).max((len as u64).div_ceil(u32::MAX as u64));
    let chunk = chunk.min(u64::MAX / 2).div_ceil(unit).max(1) * unit;
    Subtask::ranges(task, len as u64, chunk, false)
}

/// The subtask's own range of an output as long as the input.
pub fn own_range(part: &Subtask) -> Vec<Range<usize>> {
    let range = part.offset as usize..(part.offset + part.bytes) as usize;
    std::iter::once(range).collect()
}

/// Copies subtask `part`'s range of `input` into its single output region,
/// checking that the part starts on a multiple of `unit`.
pub fn copy_part<'o>(
    op: &'static str,
    part: &Subtask,
    input: &[u8],
    regions: &'o mut [&mut [u8]],
    unit: usize,
) -> Result<&'o mut [u8], OpError> {
    let data = part_slice(part, input);
    let [out] = regions else {
        return Err(OpError::WrongCarry { op });
    };
    if part.offset % unit as u64 != 0 || out.len() != data.len() {
        return Err(OpError::Input {
            op,
            reason: format!(
                "subtask at {} is not a whole range starting on a {unit}-byte boundary",
                part.offset
            ),
        });
    }
    out.copy_from_slice(data);
    Ok(out)
}

/// The bytes of the file a parameter names (host memory, or the text of
/// [`read_text_file`]), read at most `limit` bytes, so that a wrong path
/// such as a device or a huge file cannot exhaust memory. A larger file is
/// an error of kind [`std::io::ErrorKind::FileTooLarge`].
pub fn read_file(path: &str, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("larger than the {limit}-byte limit"),
        ));
    }
    Ok(bytes)
}

/// The text of the file a parameter names (a key, a route table, a pattern
/// set), read as [`read_file`] does; text that is not UTF-8 is an error.
pub fn read_text_file(path: &str, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read_file(path, limit)?).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// A configured operator (parameters already checked).
pub trait Operator: Send + Sync {
    /// The registered name.
    fn name(&self) -> &'static str;

    /// Runs on the whole input.
    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError>;

    /// How the operator splits into subtasks, if it can.
    fn splitter(&self) -> Option<&dyn Splitter> {
        None
    }

    /// How its subtasks write in place, if they can.
    fn placement(&self) -> Option<&dyn Placement> {
        None
    }

    /// Runs on the whole input like `run`, asking `watch` between chunks
    /// of bounded work; the output is byte-identical to `run`'s. Stops with
    /// [`OpError::Stopped`] when the watch says so.
    ///
    /// The default: an operator whose splitter gives `run`'s exact output
    /// ([`Splitter::identical_output`]) runs as subtasks of about
    /// [`WATCH_CHUNK_BYTES`] input bytes in sequence (as [`run_split`]
    /// does), asking before each; any other asks once before it starts and
    /// then calls `run`. The watch is always asked before any work.
    fn run_watched(&self, input: &[u8], watch: &dyn Watch) -> Result<Vec<u8>, OpError> {
        if self.splitter().is_some_and(|s| s.identical_output()) {
            return split_driver(self, input, WATCH_CHUNK_BYTES, Some(watch));
        }
        Checkpoint::new(self.name(), input.len(), watch).check(0)?;
        self.run(input)
    }

    /// Whether `run_watched` checks its watch between bounded chunks
    /// (true), or can only check before it starts (false: the work is one
    /// indivisible piece). The default goes with the default `run_watched`:
    /// true when the operator has a splitter of identical output.
    fn stoppable(&self) -> bool {
        self.splitter().is_some_and(|s| s.identical_output())
    }
}

/// Splitting an operator's task into subtasks over byte ranges of its input,
/// and rebuilding the task's output from theirs.
pub trait Splitter: Send + Sync {
    /// Whether subtasks must run in index order, each given the previous
    /// one's carry (a hash state); otherwise they are independent.
    fn ordered(&self) -> bool;

    /// Whether a split run's output is byte-identical to the one-shot
    /// `run`'s (true, the default: placement operators, ordered hashes,
    /// combined checksums), or only equivalent (false: a compressor's
    /// concatenated streams, which its decompressor turns back into the same
    /// input). [`Operator::run_watched`]'s default paces only identical
    /// splitters by their subtasks.
    fn identical_output(&self) -> bool {
        true
    }

    /// Byte ranges of an input of `len` bytes in chunks of about `chunk`
    /// bytes (the operator may align them).
    fn plan(&self, task: TaskId, len: usize, chunk: usize) -> Result<Vec<Subtask>, OpError> {
        Ok(Subtask::ranges(task, len as u64, chunk as u64, self.ordered()))
    }

    /// Runs subtask `part` of the task whose whole input is `input` (the
    /// subtask reads only its own range: [`part_slice`] for operators whose
    /// parts are contiguous). Ordered subtasks get the previous subtask's
    /// carry (`None` for the first).
    fn run_part(&self, part: &Subtask, input: &[u8], previous: Option<Carry>) -> Result<Carry, OpError>;

    /// Builds the output of a task whose input was `input_len` bytes from the
    /// carries of every subtask in index order (for ordered splitters, only
    /// the last one's).
    fn reassemble(&self, input_len: usize, parts: Vec<Carry>) -> Result<Vec<u8>, OpError>;
}

/// The contiguous range of `input` that subtask `part` covers (empty if the
/// part lies outside the input).
pub fn part_slice<'a>(part: &Subtask, input: &'a [u8]) -> &'a [u8] {
    let start = (part.offset as usize).min(input.len());
    let end = (part.offset + part.bytes).min(input.len() as u64) as usize;
    &input[start..end.max(start)]
}

/// Runs `op` on `input` as subtasks of about `chunk` bytes, one after
/// another, and reassembles: what the runtime does with workers, without them.
pub fn run_split<O: Operator + ?Sized>(op: &O, input: &[u8], chunk: usize) -> Result<Vec<u8>, OpError> {
    split_driver(op, input, chunk, None)
}

/// [`run_split`], asking `watch` (if any) before each subtask; the input
/// done so far is counted as the share of subtasks done (subtasks are of
/// about equal size; an erasure code's cover columns of every shard).
fn split_driver<O: Operator + ?Sized>(
    op: &O,
    input: &[u8],
    chunk: usize,
    watch: Option<&dyn Watch>,
) -> Result<Vec<u8>, OpError> {
    let mut at = watch.map(|w| Checkpoint::new(op.name(), input.len(), w));
    if let Some(at) = &mut at {
        // Before any work, planning and the output buffer included.
        at.check(0)?;
    }
    let split = op.splitter().ok_or(OpError::NotSplittable { op: op.name() })?;
    let parts = split.plan(TaskId(0), input.len(), chunk)?;
    let count = parts.len().max(1) as u128;
    let mut check = |i: usize| match &mut at {
        Some(at) if i > 0 => at.check((input.len() as u128 * i as u128 / count) as usize),
        _ => Ok(()),
    };
    if let Some(place) = op.placement() {
        let mut out = vec![0u8; place.output_len(input.len())?];
        let mut carries = Vec::with_capacity(parts.len());
        for (i, p) in parts.iter().enumerate() {
            check(i)?;
            let ranges = place.regions(p, input.len());
            let mut slices = carve(&mut out, &ranges)?;
            carries.push(place.run_part_into(p, input, &mut slices)?);
        }
        place.finish(carries, &mut out)?;
        return Ok(out);
    }
    if split.ordered() {
        let mut carry = None;
        for (i, p) in parts.iter().enumerate() {
            check(i)?;
            carry = Some(split.run_part(p, input, carry)?);
        }
        split.reassemble(input.len(), carry.into_iter().collect())
    } else {
        let mut outs = Vec::with_capacity(parts.len());
        for (i, p) in parts.iter().enumerate() {
            check(i)?;
            outs.push(split.run_part(p, input, None)?);
        }
        split.reassemble(input.len(), outs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_files_are_read_up_to_a_limit() {
        let path = std::env::temp_dir().join(format!("isola-read-limit-{}", std::process::id()));
        std::fs::write(&path, "0123456789").unwrap();
        let path = path.to_str().unwrap();
        assert_eq!(read_text_file(path, 10).unwrap(), "0123456789");
        assert!(read_text_file(path, 9)
            .unwrap_err()
            .to_string()
            .contains("9-byte limit"));
        assert!(read_text_file("/nonexistent/isola", 10).is_err());
    }
}
