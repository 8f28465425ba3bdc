//! `toeplitz`: the Toeplitz hash of Receive-Side Scaling (RSS), which NICs
//! and DPUs compute over each packet's flow tuple to pick its receive queue.
//!
//! Input is records back to back in RSS input order (source address,
//! destination address, then for 4-tuples source port and destination port;
//! network byte order): 8 bytes for `ipv4-2`, 12 for `ipv4-4`, 32 for
//! `ipv6-2`, 36 for `ipv6-4`. Output is one 4-byte big-endian hash per
//! record. The default key is the 40-byte key of Microsoft's RSS
//! verification suite.
//!
//! Written by hand: no well-kept crate computes it, and with the key
//! expanded once, at construction, it is a few lines: the key becomes a
//! table of the 32-bit contribution of every byte value at every record
//! position (`record_len * 256` words), so hashing a record is one lookup
//! and one XOR per byte. Records are independent: the operator splits into
//! subtasks of whole records ([`crate::records`]).

use crate::operator::{OpError, Operator};
use crate::records::{whole_records, PerRecord, RecordMap, RESULT_BYTES};
use isola_core::params::{ParamError, Params};
use std::collections::BTreeMap;

/// Microsoft's RSS verification key (also the default of many NIC drivers).
pub const DEFAULT_KEY: &str =
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa";

/// The tuple choices of the `tuple` parameter and their record lengths.
const TUPLES: &[(&str, usize)] = &[("ipv4-2", 8), ("ipv4-4", 12), ("ipv6-2", 32), ("ipv6-4", 36)];

/// Record length in bytes for the `tuple` parameter.
pub fn record_len(p: &Params<'_>) -> Result<usize, ParamError> {
    p.choice("tuple", TUPLES)
}

/// The Toeplitz hash with a key expanded for one record length.
#[derive(Debug, Clone)]
pub struct Toeplitz {
    /// `table[i][v]`: the hash contribution of byte value `v` at position `i`.
    table: Vec<[u32; 256]>,
}

impl Toeplitz {
    /// Expands `key` for records of `record_len` bytes; the key must be at
    /// least `record_len + 4` bytes (every input bit needs a 32-bit window
    /// of the key starting at its position).
    pub fn new(key: &[u8], record_len: usize) -> Option<Toeplitz> {
        if key.len() < record_len.checked_add(4)? {
            return None;
        }
        let table = (0..record_len)
            .map(|i| {
                // Key bits 8i .. 8i + 40: the windows of the byte's 8 bits.
                let window = key
                    .get(i..)
                    .unwrap_or_default()
                    .iter()
                    .chain(std::iter::repeat(&0))
                    .take(5)
                    .fold(0u64, |w, &b| (w << 8) | b as u64);
                // Bit j (0 = most significant) of the input byte selects the
                // key window starting j bits in.
                let bit: [u32; 8] = std::array::from_fn(|j| (window >> (8 - j)) as u32);
                std::array::from_fn(|v| {
                    (0..8)
                        .filter(|j| v & (0x80 >> j) != 0)
                        .fold(0u32, |h, j| h ^ bit[j])
                })
            })
            .collect();
        Some(Toeplitz { table })
    }

    /// The hash of one record (bytes past the expanded length are ignored).
    pub fn hash(&self, record: &[u8]) -> u32 {
        record
            .iter()
            .zip(&self.table)
            .fold(0u32, |h, (&b, t)| h ^ t[b as usize])
    }

    /// Builds the operator from `key` and `tuple`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let len = record_len(p)?;
        let key = p.hex_bytes("key", &[])?;
        let hash = Toeplitz::new(&key, len).ok_or_else(|| {
            p.bad(
                "key",
                &format!(
                    "hex bytes, at least {} bytes for tuple `{}` ({len}-byte records)",
                    len + 4,
                    p.raw("tuple")
                ),
            )
        })?;
        Ok(Box::new(PerRecord(hash)))
    }
}

impl RecordMap for Toeplitz {
    fn name(&self) -> &'static str {
        "toeplitz"
    }

    fn record_len(&self) -> usize {
        self.table.len()
    }

    fn map_records(&self, records: &[u8], out: &mut [u8]) {
        let size = self.table.len().max(1);
        for (record, result) in records.chunks_exact(size).zip(out.chunks_exact_mut(RESULT_BYTES)) {
            result.copy_from_slice(&self.hash(record).to_be_bytes());
        }
    }
}

/// A valid `toeplitz` input carrying `payload`: whole records of the
/// `tuple` in `params` (at least one, zero-padded).
pub fn sample_input(params: &BTreeMap<String, String>, payload: &[u8]) -> Result<Vec<u8>, OpError> {
    let p = crate::registry::checked_params("toeplitz", params)?;
    Ok(whole_records(payload, record_len(&p)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, bit by bit: for every set input bit (most significant
    /// first), XOR in the 32 key bits starting at that bit's position.
    fn bitwise(key: &[u8], input: &[u8]) -> u32 {
        let key_bit = |n: usize| (key[n / 8] >> (7 - n % 8)) & 1;
        let mut h = 0u32;
        for n in 0..input.len() * 8 {
            if (input[n / 8] >> (7 - n % 8)) & 1 == 1 {
                h ^= (0..32).fold(0u32, |w, k| (w << 1) | key_bit(n + k) as u32);
            }
        }
        h
    }

    #[test]
    fn table_equals_the_bitwise_definition() {
        let key: Vec<u8> = (0..40u32).map(|i| (i * 151 + 7) as u8).collect();
        for len in [1usize, 8, 12, 36] {
            let t = Toeplitz::new(&key, len).unwrap();
            let input: Vec<u8> = (0..len as u32).map(|i| (i * 97 + 3) as u8).collect();
            assert_eq!(t.hash(&input), bitwise(&key, &input), "len {len}");
        }
        assert!(Toeplitz::new(&key, 37).is_none());
    }
}
