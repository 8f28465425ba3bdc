//! The compute-bound OSMOSIS datacenter kernels (section 6.4, from the
//! PsPIN benchmark handlers `aggregate_global`, `reduce_l1` and
//! `histogram_l1`): `aggregate`, `reduce` and `histogram`.
//!
//! Each reads the application payload of every UDP or TCP packet as 32-bit
//! big-endian words (network order; PsPIN's RISC-V cores read them
//! little-endian, in their native order); a payload that is not whole words
//! is an error (PsPIN assumes it and drops the tail). Where PsPIN adds into
//! per-cluster scratchpads with atomics and combines them at the end of the
//! message, these add into one state per subtask and merge them: the
//! operators split, and the split result equals the one-shot result.
//!
//! - `aggregate`: the sum of every word (unsigned), as PsPIN's aggregation
//!   of a message into one value. Output: 16 bytes, the sum (`u64`; PsPIN
//!   wraps at 32 bits, this does not below 2^32 words) then the number of
//!   words (`u64`), big-endian.
//! - `reduce`: each packet's payload is a vector of `i32`; the output is
//!   their element-wise sum (wrapping at 32 bits, as PsPIN's `amo_add` on
//!   int32 and MPI_SUM on MPI_INT do), as long as the longest vector
//!   (shorter ones add into its first elements), `i32` big-endian each:
//!   the reduction step of an Allreduce.
//! - `histogram`: each word is a value (`u32`) counted into one of `bins`
//!   equal-width bins over 0..2^32 (bin = value x bins / 2^32). PsPIN
//!   uses the value as the bin index, assuming it is below its 1024 bins;
//!   equal-width bins take any value. Output: `bins` counts, `u64`
//!   big-endian each.

use super::{l4, udp_units, Batch, Kernel};
use crate::operator::{OpError, Operator};
use crate::packet::Packet;
use isola_core::params::Params;

/// Largest `bins`.
pub const MAX_BINS: u64 = 1 << 20;

/// The words of `p`'s application payload (empty without one).
fn words<'a>(op: &'static str, p: &Packet<'a>) -> Result<&'a [u8], OpError> {
    let payload = l4(op, p)?.payload.unwrap_or_default();
    if payload.len() % 4 != 0 {
        return Err(OpError::Input {
            op,
            reason: format!(
                "IPv4 packet at byte {}: a {}-byte payload is not whole 4-byte words",
                p.at,
                payload.len()
            ),
        });
    }
    Ok(payload)
}

/// A 4-byte chunk as a big-endian `u32`.
fn word(w: &[u8]) -> u32 {
    u32::from_be_bytes([w[0], w[1], w[2], w[3]])
}

/// The `aggregate` kernel.
#[derive(Debug, Clone, Copy)]
pub struct Aggregate;

impl Aggregate {
    /// Builds (no parameters).
    pub fn build(_: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        Ok(Box::new(Batch(Aggregate)))
    }
}

impl Kernel for Aggregate {
    /// (sum, words).
    type State = (u64, u64);

    fn name(&self) -> &'static str {
        "aggregate"
    }

    fn state(&self) -> (u64, u64) {
        (0, 0)
    }

    fn packet(&self, p: &Packet<'_>, s: &mut (u64, u64)) -> Result<(), OpError> {
        let payload = words("aggregate", p)?;
        let sum = payload
            .chunks_exact(4)
            .fold(0u64, |acc, w| acc + u64::from(word(w)));
        s.0 = s.0.wrapping_add(sum);
        s.1 += (payload.len() / 4) as u64;
        Ok(())
    }

    fn merge(&self, into: &mut (u64, u64), later: (u64, u64)) {
        into.0 = into.0.wrapping_add(later.0);
        into.1 += later.1;
    }

    fn finish(&self, (sum, count): (u64, u64)) -> Result<Vec<u8>, OpError> {
        Ok([sum.to_be_bytes(), count.to_be_bytes()].concat())
    }
}

/// The `reduce` kernel.
#[derive(Debug, Clone, Copy)]
pub struct Reduce;

impl Reduce {
    /// Builds (no parameters).
    pub fn build(_: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        Ok(Box::new(Batch(Reduce)))
    }
}

/// Adds `b` into `a` element-wise, lengthening `a` to `b`'s length.
fn add_into(a: &mut Vec<i32>, b: impl ExactSizeIterator<Item = i32>) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x = x.wrapping_add(y);
    }
}

impl Kernel for Reduce {
    /// The sum so far.
    type State = Vec<i32>;

    fn name(&self) -> &'static str {
        "reduce"
    }

    fn state(&self) -> Vec<i32> {
        Vec::new()
    }

    fn packet(&self, p: &Packet<'_>, sum: &mut Vec<i32>) -> Result<(), OpError> {
        let payload = words("reduce", p)?;
        add_into(sum, payload.chunks_exact(4).map(|w| word(w) as i32));
        Ok(())
    }

    fn merge(&self, into: &mut Vec<i32>, later: Vec<i32>) {
        add_into(into, later.into_iter());
    }

    fn finish(&self, sum: Vec<i32>) -> Result<Vec<u8>, OpError> {
        Ok(sum.iter().flat_map(|x| x.to_be_bytes()).collect())
    }
}

/// The `histogram` kernel.
#[derive(Debug, Clone, Copy)]
pub struct Histogram {
    bins: u64,
}

impl Histogram {
    /// Builds from `bins` (1 to 2^20).
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let bins = p.u64_in("bins", 1..=MAX_BINS)?;
        Ok(Box::new(Batch(Histogram { bins })))
    }
}

impl Kernel for Histogram {
    /// The counts so far.
    type State = Vec<u64>;

    fn name(&self) -> &'static str {
        "histogram"
    }

    fn state(&self) -> Vec<u64> {
        vec![0; self.bins as usize]
    }

    fn packet(&self, p: &Packet<'_>, counts: &mut Vec<u64>) -> Result<(), OpError> {
        for w in words("histogram", p)?.chunks_exact(4) {
            // Below `bins`: the value is below 2^32.
            let bin = (u64::from(word(w)) * self.bins) >> 32;
            if let Some(c) = counts.get_mut(bin as usize) {
                *c += 1;
            }
        }
        Ok(())
    }

    fn merge(&self, into: &mut Vec<u64>, later: Vec<u64>) {
        for (a, b) in into.iter_mut().zip(later) {
            *a += b;
        }
    }

    fn finish(&self, counts: Vec<u64>) -> Result<Vec<u8>, OpError> {
        Ok(counts.iter().flat_map(|c| c.to_be_bytes()).collect())
    }
}

/// A valid input of `aggregate`, `reduce` or `histogram` carrying
/// `payload`: its bytes as words (zero-padded to a whole word) in UDP
/// packets of up to 1500 bytes (368 words each).
pub fn sample_input(payload: &[u8]) -> Result<Vec<u8>, OpError> {
    udp_units(payload, 4)
}
