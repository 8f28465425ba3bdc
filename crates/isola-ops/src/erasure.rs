//! Reed-Solomon erasure coding: `ec-encode` (k data shards in, m parity
//! shards out) and `ec-recover` (all k + m shards in, the lost ones ignored,
//! the k data shards out), on `reed-solomon-erasure` (GF(2^8), the Backblaze
//! systematic Vandermonde code). Any shard size; k up to 128 and m up to 32,
//! as DPU erasure-coding engines allow.
//!
//! The input's length is checked against the parameters: with `shard-size`
//! set, it must be exactly k (encode) or k + m (recover) shards of that
//! size, so a cut or padded input is an error naming the expected and the
//! actual length. With the default `shard-size = auto` the shard size comes
//! from the input, which must be whole equal shards; an input cut to a
//! smaller multiple of the shard count then cannot be told from a valid one
//! of smaller shards, which is why callers that know the size should set it.
//!
//! Splitting `ec-encode` cuts every shard at the same byte offsets: in
//! GF(2^8) each byte position is coded independently (parity byte i depends
//! only on data byte i of each shard), so the parity of each range,
//! concatenated, is the one-shot parity byte for byte.

use crate::operator::{run_split, Carry, OpError, Operator, Placement, Splitter};
use isola_core::params::Params;
use isola_core::{Subtask, TaskId};
use reed_solomon_erasure::galois_8::ReedSolomon;
use std::ops::Range;

/// Largest number of data shards.
pub const MAX_DATA_SHARDS: u64 = 128;
/// Largest number of parity shards.
pub const MAX_PARITY_SHARDS: u64 = 32;

/// Largest `shard-size`: 1 GiB.
pub const MAX_SHARD_SIZE: u64 = 1 << 30;

/// The `shard-size` parameter: `None` for `auto` (any size, the input
/// giving it), else the exact size of every shard.
fn shard_param(p: &Params<'_>) -> Result<Option<usize>, OpError> {
    if p.raw("shard-size") == "auto" {
        return Ok(None);
    }
    Ok(Some(
        crate::limits::size_param(p, "shard-size", 1..=MAX_SHARD_SIZE)? as usize,
    ))
}

/// The size of each of `shards` equal shards in an input of `len` bytes of
/// operator `op`: exactly `fixed` when the parameter sets it, else the
/// input's length over `shards`, which must divide it. A wrong length is an
/// error naming the expected and the actual length.
fn shard_len(
    op: &'static str,
    len: usize,
    shards: usize,
    what: &str,
    fixed: Option<usize>,
) -> Result<usize, OpError> {
    match fixed {
        Some(size) => {
            let expected = size.saturating_mul(shards);
            if len != expected {
                return Err(OpError::Input {
                    op,
                    reason: format!(
                        "expected {expected} bytes ({shards} {what} of shard-size {size}), got {len}"
                    ),
                });
            }
            Ok(size)
        }
        None if len % shards != 0 => Err(OpError::Input {
            op,
            reason: format!(
                "expected a multiple of {shards} bytes ({shards} equal {what}), got {len} \
                 (set `shard-size` to check the exact length)"
            ),
        }),
        None => Ok(len / shards),
    }
}

/// The code's shape, read from the `k` and `m` parameters.
fn code(p: &Params<'_>) -> Result<(usize, usize, ReedSolomon), OpError> {
    let k = p.u64_in("k", 1..=MAX_DATA_SHARDS)? as usize;
    let m = p.u64_in("m", 1..=MAX_PARITY_SHARDS)? as usize;
    // Within GF(2^8)'s 256-shard limit by the bounds above.
    let rs = ReedSolomon::new(k, m).map_err(|e| p.bad("k", &format!("a valid code shape ({e:?})")))?;
    Ok((k, m, rs))
}

/// `ec-encode`: input is k equal-size data shards back to back; output is
/// the m parity shards back to back.
#[derive(Debug)]
pub struct EcEncode {
    k: usize,
    m: usize,
    shard: Option<usize>,
    rs: ReedSolomon,
}

impl EcEncode {
    /// Builds from the `k`, `m` and `shard-size` parameters.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let (k, m, rs) = code(p)?;
        let shard = shard_param(p)?;
        Ok(Box::new(EcEncode { k, m, shard, rs }))
    }

    fn shard_size(&self, len: usize) -> Result<usize, OpError> {
        shard_len("ec-encode", len, self.k, "data shards", self.shard)
    }
}

impl Operator for EcEncode {
    fn name(&self) -> &'static str {
        "ec-encode"
    }

    fn placement(&self) -> Option<&dyn Placement> {
        Some(self)
    }

    /// One subtask covering the whole shards: the same path as a split run.
    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        run_split(self, input, input.len().max(1))
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        Some(self)
    }
}

impl Placement for EcEncode {
    /// Ranges of the shard size: a subtask of `chunk` input bytes covers
    /// `chunk / k` bytes of every shard.
    fn plan(&self, task: TaskId, len: usize, chunk: usize) -> Result<Vec<Subtask>, OpError> {
        let shard = self.shard_size(len)?;
        let per_shard = (chunk / self.k).max(1);
        Ok(Subtask::ranges(task, shard as u64, per_shard as u64, false))
    }

    fn output_len(&self, input_len: usize) -> Result<usize, OpError> {
        Ok(self.m * self.shard_size(input_len)?)
    }

    /// The subtask's range of each of the m parity shards.
    fn regions(&self, part: &Subtask, input_len: usize) -> Vec<Range<usize>> {
        let shard = input_len / self.k;
        let (off, len) = (part.offset as usize, part.bytes as usize);
        (0..self.m)
            .map(|j| j * shard + off..j * shard + off + len)
            .collect()
    }

    fn run_part_into(
        &self,
        part: &Subtask,
        input: &[u8],
        regions: &mut [&mut [u8]],
    ) -> Result<Carry, OpError> {
        let shard = self.shard_size(input.len())?;
        let (off, len) = (part.offset as usize, part.bytes as usize);
        if off + len > shard || regions.len() != self.m || regions.iter().any(|r| r.len() != len) {
            return Err(OpError::Input {
                op: "ec-encode",
                reason: format!("subtask range {off}+{len} does not fit {shard}-byte shards"),
            });
        }
        if len > 0 {
            let data: Vec<&[u8]> = (0..self.k)
                .map(|i| &input[i * shard + off..i * shard + off + len])
                .collect();
            self.rs.encode_sep(&data, regions).map_err(|e| OpError::Input {
                op: "ec-encode",
                reason: format!("{e:?}"),
            })?;
        }
        Ok(Box::new(()))
    }

    fn finish(&self, _: Vec<Carry>, _: &mut [u8]) -> Result<(), OpError> {
        Ok(())
    }
}

/// `ec-recover`: input is all k + m shards back to back (the bytes of the
/// `lost` ones are ignored); output is the k data shards back to back.
#[derive(Debug)]
pub struct EcRecover {
    k: usize,
    m: usize,
    lost: Vec<usize>,
    shard: Option<usize>,
    rs: ReedSolomon,
}

impl EcRecover {
    /// Builds from the `k`, `m`, `lost` and `shard-size` parameters.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let (k, m, rs) = code(p)?;
        let expected = format!(
            "comma-separated distinct shard indices below {} (at most m = {m} of them)",
            k + m
        );
        let mut lost = Vec::new();
        for part in p.raw("lost").split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match part.parse::<usize>() {
                Ok(i) if i < k + m && !lost.contains(&i) => lost.push(i),
                _ => return Err(p.bad("lost", &expected).into()),
            }
        }
        if lost.len() > m {
            return Err(p.bad("lost", &expected).into());
        }
        let shard = shard_param(p)?;
        Ok(Box::new(EcRecover {
            k,
            m,
            lost,
            shard,
            rs,
        }))
    }
}

impl Operator for EcRecover {
    fn name(&self) -> &'static str {
        "ec-recover"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        let n = self.k + self.m;
        let shard = shard_len("ec-recover", input.len(), n, "shards (k + m)", self.shard)?;
        if shard == 0 {
            return Ok(Vec::new());
        }
        // One copy of all the shards, rebuilt in place: the data shards
        // come first, so the output is the copy's first k shards.
        let mut work = input.to_vec();
        let mut shards: Vec<(&mut [u8], bool)> = work
            .chunks_mut(shard)
            .enumerate()
            .map(|(i, s)| (s, !self.lost.contains(&i)))
            .collect();
        self.rs
            .reconstruct_data(&mut shards)
            .map_err(|e| OpError::Input {
                op: "ec-recover",
                reason: format!("{e:?}"),
            })?;
        work.truncate(self.k * shard);
        Ok(work)
    }
}
