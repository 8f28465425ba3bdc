//! Operators that map every fixed-size input record to a 4-byte result on
//! its own (`lpm`: an address to its next hop; `toeplitz`: a flow tuple to
//! its RSS hash), with the splitting they share.
//!
//! Records are independent, so a task splits into subtasks of whole records
//! that write their results in place ([`Placement`]): record `i` of the input
//! gives bytes `4 i .. 4 i + 4` of the output, whichever subtask computes it.

use crate::operator::{aligned_plan, part_slice, run_split, Carry, OpError, Operator, Placement, Splitter};
use isola_core::{Subtask, TaskId};
use std::ops::Range;

/// Bytes of output per record.
pub const RESULT_BYTES: usize = 4;

/// The per-record function of a [`PerRecord`] operator.
pub trait RecordMap: Send + Sync {
    /// The registered operator name.
    fn name(&self) -> &'static str;

    /// Bytes per input record (at least 1).
    fn record_len(&self) -> usize;

    /// Maps `records` (whole records, back to back) to `out`, which holds
    /// [`RESULT_BYTES`] per record.
    fn map_records(&self, records: &[u8], out: &mut [u8]);
}

/// An operator made of a [`RecordMap`]: input is whole records back to back
/// (another length is an error), output is one 4-byte result per record.
#[derive(Debug)]
pub struct PerRecord<M>(pub M);

impl<M: RecordMap> PerRecord<M> {
    /// Number of records in `len` input bytes, or an error naming the
    /// operator when `len` is not a whole number of records.
    fn records(&self, len: usize) -> Result<usize, OpError> {
        let size = self.0.record_len().max(1);
        if len % size != 0 {
            return Err(OpError::Input {
                op: self.0.name(),
                reason: format!("{len} bytes are not whole {size}-byte records"),
            });
        }
        Ok(len / size)
    }
}

impl<M: RecordMap> Operator for PerRecord<M> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    /// One subtask covering every record: the same path as a split run.
    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        run_split(self, input, input.len().max(1))
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        Some(self)
    }

    fn placement(&self) -> Option<&dyn Placement> {
        Some(self)
    }
}

impl<M: RecordMap> Placement for PerRecord<M> {
    /// Ranges of whole records (the chunk is rounded up to a whole record).
    fn plan(&self, task: TaskId, len: usize, chunk: usize) -> Result<Vec<Subtask>, OpError> {
        self.records(len)?;
        Ok(aligned_plan(task, len, chunk, self.0.record_len()))
    }

    fn output_len(&self, input_len: usize) -> Result<usize, OpError> {
        Ok(self.records(input_len)? * RESULT_BYTES)
    }

    /// The results of the subtask's own records.
    fn regions(&self, part: &Subtask, _: usize) -> Vec<Range<usize>> {
        let size = self.0.record_len().max(1) as u64;
        let first = part.offset / size * RESULT_BYTES as u64;
        let end = (part.offset + part.bytes) / size * RESULT_BYTES as u64;
        std::iter::once(first as usize..end as usize).collect()
    }

    fn run_part_into(
        &self,
        part: &Subtask,
        input: &[u8],
        regions: &mut [&mut [u8]],
    ) -> Result<Carry, OpError> {
        let records = part_slice(part, input);
        let size = self.0.record_len().max(1);
        let [out] = regions else {
            return Err(OpError::WrongCarry { op: self.0.name() });
        };
        if part.offset % size as u64 != 0
            || records.len() % size != 0
            || out.len() != records.len() / size * RESULT_BYTES
        {
            return Err(OpError::Input {
                op: self.0.name(),
                reason: format!(
                    "subtask at {} of {} bytes is not whole {size}-byte records",
                    part.offset,
                    records.len()
                ),
            });
        }
        self.0.map_records(records, out);
        Ok(Box::new(()))
    }

    fn finish(&self, _: Vec<Carry>, _: &mut [u8]) -> Result<(), OpError> {
        Ok(())
    }
}

/// `payload` trimmed to whole `size`-byte records; a payload shorter than
/// one record gives one record: the payload padded with zeros.
pub fn whole_records(payload: &[u8], size: usize) -> Vec<u8> {
    let size = size.max(1);
    let whole = payload.len() / size * size;
    if whole == 0 {
        let mut one = payload.to_vec();
        one.resize(size, 0);
        one
    } else {
        payload.get(..whole).unwrap_or_default().to_vec()
    }
}
