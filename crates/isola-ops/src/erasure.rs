//! Reed-Solomon erasure coding: `ec-encode` (k data shards in, m parity
//! shards out) and `ec-recover` (all k + m shards in, the lost ones ignored,
//! the k data shards out), on `reed-solomon-erasure` (GF(2^8), the Backblaze
//! systematic Vandermonde code). Any shard size; k up to 128 and m up to 32,
//! as DPU erasure-coding engines allow.
//!
//! Splitting `ec-encode` cuts every shard at the same byte offsets: in
//! GF(2^8) each byte position is coded independently (parity byte i depends
//! only on data byte i of each shard), so the parity of each range,
//! concatenated, is the one-shot parity byte for byte.

use crate::operator::{downcast, Carry, OpError, Operator, Splitter};
use isola_core::params::Params;
use isola_core::{Subtask, TaskId};
use reed_solomon_erasure::galois_8::ReedSolomon;

/// Largest number of data shards.
pub const MAX_DATA_SHARDS: u64 = 128;
/// Largest number of parity shards.
pub const MAX_PARITY_SHARDS: u64 = 32;

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
    rs: ReedSolomon,
}

impl EcEncode {
    /// Builds from the `k` and `m` parameters.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let (k, m, rs) = code(p)?;
        Ok(Box::new(EcEncode { k, m, rs }))
    }

    fn shard_size(&self, len: usize) -> Result<usize, OpError> {
        if len % self.k != 0 {
            return Err(OpError::Input {
                op: "ec-encode",
                reason: format!("{len} bytes are not {} equal data shards", self.k),
            });
        }
        Ok(len / self.k)
    }

    /// Writes the parity of bytes `[off, off + len)` of every data shard (of
    /// size `shard`) into `out`, m parity ranges of `len` bytes back to back.
    fn encode_range_into(
        &self,
        input: &[u8],
        shard: usize,
        off: usize,
        len: usize,
        out: &mut [u8],
    ) -> Result<(), OpError> {
        if len == 0 {
            return Ok(());
        }
        let data: Vec<&[u8]> = (0..self.k)
            .map(|i| &input[i * shard + off..i * shard + off + len])
            .collect();
        let mut parity: Vec<&mut [u8]> = out.chunks_mut(len).collect();
        self.rs
            .encode_sep(&data, &mut parity)
            .map_err(|e| OpError::Input {
                op: "ec-encode",
                reason: format!("{e:?}"),
            })
    }
}

impl Operator for EcEncode {
    fn name(&self) -> &'static str {
        "ec-encode"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        let shard = self.shard_size(input.len())?;
        let mut out = vec![0u8; self.m * shard];
        self.encode_range_into(input, shard, 0, shard, &mut out)?;
        Ok(out)
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        Some(self)
    }
}

impl Splitter for EcEncode {
    fn ordered(&self) -> bool {
        false
    }

    /// Ranges of the shard size: a subtask of `chunk` input bytes covers
    /// `chunk / k` bytes of every shard.
    fn plan(&self, task: TaskId, len: usize, chunk: usize) -> Result<Vec<Subtask>, OpError> {
        let shard = self.shard_size(len)?;
        let per_shard = (chunk / self.k).max(1);
        Ok(Subtask::ranges(task, shard as u64, per_shard as u64, false))
    }

    fn run_part(&self, part: &Subtask, input: &[u8], _: Option<Carry>) -> Result<Carry, OpError> {
        let shard = self.shard_size(input.len())?;
        let (off, len) = (part.offset as usize, part.bytes as usize);
        if off + len > shard {
            return Err(OpError::Input {
                op: "ec-encode",
                reason: format!("subtask range {off}+{len} is outside the {shard}-byte shards"),
            });
        }
        let mut parity = vec![0u8; self.m * len];
        self.encode_range_into(input, shard, off, len, &mut parity)?;
        Ok(Box::new(parity))
    }

    fn reassemble(&self, parts: Vec<Carry>) -> Result<Vec<u8>, OpError> {
        // Each part holds its range of every parity shard, back to back.
        let parts: Vec<Vec<u8>> = parts
            .into_iter()
            .map(|c| downcast("ec-encode", c))
            .collect::<Result<_, _>>()?;
        let mut out = Vec::with_capacity(parts.iter().map(Vec::len).sum());
        for j in 0..self.m {
            for p in &parts {
                let len = p.len() / self.m;
                out.extend_from_slice(&p[j * len..(j + 1) * len]);
            }
        }
        Ok(out)
    }
}

/// `ec-recover`: input is all k + m shards back to back (the bytes of the
/// `lost` ones are ignored); output is the k data shards back to back.
#[derive(Debug)]
pub struct EcRecover {
    k: usize,
    m: usize,
    lost: Vec<usize>,
    rs: ReedSolomon,
}

impl EcRecover {
    /// Builds from the `k`, `m` and `lost` parameters.
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
        Ok(Box::new(EcRecover { k, m, lost, rs }))
    }
}

impl Operator for EcRecover {
    fn name(&self) -> &'static str {
        "ec-recover"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        let n = self.k + self.m;
        if input.len() % n != 0 {
            return Err(OpError::Input {
                op: "ec-recover",
                reason: format!("{} bytes are not {n} equal shards (k + m)", input.len()),
            });
        }
        let shard = input.len() / n;
        if shard == 0 {
            return Ok(Vec::new());
        }
        let mut shards: Vec<Option<Vec<u8>>> = (0..n)
            .map(|i| (!self.lost.contains(&i)).then(|| input[i * shard..(i + 1) * shard].to_vec()))
            .collect();
        self.rs
            .reconstruct_data(&mut shards)
            .map_err(|e| OpError::Input {
                op: "ec-recover",
                reason: format!("{e:?}"),
            })?;
        let mut out = Vec::with_capacity(self.k * shard);
        for s in shards.iter().take(self.k) {
            // reconstruct_data fills every data shard or returns an error.
            out.extend_from_slice(s.as_deref().unwrap_or_default());
        }
        Ok(out)
    }
}
