//! The operator abstraction and the generic split driver.

use isola_core::params::ParamError;
use isola_core::Subtask;
use isola_core::TaskId;
use std::any::Any;

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
}

/// Splitting an operator's task into subtasks over byte ranges of its input,
/// and rebuilding the task's output from theirs.
pub trait Splitter: Send + Sync {
    /// Whether subtasks must run in index order, each given the previous
    /// one's carry (a hash state); otherwise they are independent.
    fn ordered(&self) -> bool;

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

    /// Builds the task's output from the carries of every subtask in index
    /// order (for ordered splitters, only the last one's).
    fn reassemble(&self, parts: Vec<Carry>) -> Result<Vec<u8>, OpError>;
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
pub fn run_split(op: &dyn Operator, input: &[u8], chunk: usize) -> Result<Vec<u8>, OpError> {
    let split = op.splitter().ok_or(OpError::NotSplittable { op: op.name() })?;
    let parts = split.plan(TaskId(0), input.len(), chunk)?;
    if split.ordered() {
        let mut carry = None;
        for p in &parts {
            carry = Some(split.run_part(p, input, carry)?);
        }
        split.reassemble(carry.into_iter().collect())
    } else {
        let outs = parts
            .iter()
            .map(|p| split.run_part(p, input, None))
            .collect::<Result<Vec<_>, _>>()?;
        split.reassemble(outs)
    }
}
