//! `filter`: the OSMOSIS Filtering kernel (section 6.4; PsPIN's
//! `filtering` handler): hash an L7 key of each packet and look it up in a
//! table held on the NIC, keeping the packets whose key is there.
//!
//! The key is the first `key-bytes` bytes of a packet's application payload
//! (the L7 header). It is hashed with Bob Jenkins' lookup2 hash as uthash's
//! `HASH_JEN` computes it (the hash PsPIN's handler uses), and the hash
//! indexes an open-addressing table (linear probing, at most half full) of
//! the filter's keys, compared in full: a packet is kept when its key is in
//! the set. PsPIN's handler reads a 1 MiB table of words at the hashed
//! index and DMAs the packet to the host; here the table holds the keys
//! themselves, so a lookup is exact, and the kept packets are the output.
//! Packets without an application payload, or with one shorter than the
//! key, are dropped.
//!
//! Keys come from a file (`keys`: one key a line, hex, `key-bytes` long;
//! `#` starts a comment) or are seeded random (`random-keys`, `seed`).
//!
//! Output: the kept packets back to back, unchanged (the input's
//! container). Batches split: outputs of consecutive packets concatenate.

use super::{chunks, l4, push_packet, seed_of, Batch, Emit, SampleFlow, SplitMix};
use crate::operator::{OpError, Operator};
use crate::packet::Packet;
use isola_core::params::{ParamError, Params};
use std::collections::BTreeMap;

/// Largest `random-keys`.
pub const MAX_RANDOM_KEYS: u64 = 1 << 22;

/// Largest `key-bytes`.
pub const MAX_KEY_BYTES: u64 = 64;

/// One round of lookup2's mixing.
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    macro_rules! step {
        ($x:ident, $y:ident, $z:ident, $op:tt $s:literal) => {
            *$x = $x.wrapping_sub(*$y).wrapping_sub(*$z) ^ (*$z $op $s);
        };
    }
    step!(a, b, c, >> 13);
    step!(b, c, a, << 8);
    step!(c, a, b, >> 13);
    step!(a, b, c, >> 12);
    step!(b, c, a, << 16);
    step!(c, a, b, >> 5);
    step!(a, b, c, >> 3);
    step!(b, c, a, << 10);
    step!(c, a, b, >> 15);
}

/// Bob Jenkins' lookup2 hash of `key` with uthash's `HASH_JEN` initial value
/// (0xfeedbeef), little-endian words.
pub fn hash_jen(key: &[u8]) -> u32 {
    let (mut a, mut b, mut c) = (0x9e37_79b9u32, 0x9e37_79b9u32, 0xfeed_beefu32);
    let le = |w: &[u8]| w.iter().rev().fold(0u32, |acc, &x| acc << 8 | u32::from(x));
    let mut rest = key;
    while rest.len() >= 12 {
        a = a.wrapping_add(le(&rest[0..4]));
        b = b.wrapping_add(le(&rest[4..8]));
        c = c.wrapping_add(le(&rest[8..12]));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    c = c.wrapping_add(key.len() as u32);
    // The tail: bytes 0..4 into a, 4..8 into b, 8..11 into c's top bytes
    // (its low byte holds the length).
    let mut tail = [0u8; 12];
    tail[..rest.len()].copy_from_slice(rest);
    a = a.wrapping_add(le(&tail[0..4]));
    b = b.wrapping_add(le(&tail[4..8]));
    c = c.wrapping_add(le(&tail[8..11]) << 8);
    mix(&mut a, &mut b, &mut c);
    c
}

/// The filter's keys in an open-addressing table.
#[derive(Debug, Clone)]
pub(crate) struct KeyTable {
    key_bytes: usize,
    /// The distinct keys back to back, in insertion order.
    keys: Vec<u8>,
    /// Per slot: 0 empty, else 1 + the key's index.
    slots: Vec<u32>,
}

impl KeyTable {
    /// A table of `keys` (each `key_bytes` long, duplicates allowed).
    fn new<'a>(key_bytes: usize, keys: impl ExactSizeIterator<Item = &'a [u8]>) -> KeyTable {
        let capacity = (keys.len() * 2).max(16).next_power_of_two();
        let mut t = KeyTable {
            key_bytes,
            keys: Vec::with_capacity(keys.len() * key_bytes),
            slots: vec![0; capacity],
        };
        for k in keys {
            if let Err(slot) = t.find(k) {
                t.keys.extend_from_slice(k);
                t.slots[slot] = (t.keys.len() / key_bytes) as u32;
            }
        }
        t
    }

    /// `Ok` with its slot if `key` is in the table, else `Err` with the
    /// empty slot where it would go.
    fn find(&self, key: &[u8]) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut i = hash_jen(key) as usize & mask;
        loop {
            match self.slots[i] {
                0 => return Err(i),
                k => {
                    let at = (k as usize - 1) * self.key_bytes;
                    if self.keys.get(at..at + self.key_bytes) == Some(key) {
                        return Ok(i);
                    }
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Whether `key` is in the table.
    fn contains(&self, key: &[u8]) -> bool {
        self.find(key).is_ok()
    }

    /// The distinct keys.
    pub(crate) fn keys(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        self.keys.chunks_exact(self.key_bytes)
    }

    /// The table `keys` (a file) or `random-keys`, `seed` and `key-bytes` give.
    pub(crate) fn from_params(p: &Params<'_>) -> Result<KeyTable, ParamError> {
        let key_bytes = p.u64_in("key-bytes", 1..=MAX_KEY_BYTES)? as usize;
        let path = p.raw("keys");
        if path.is_empty() {
            let count = p.u64_in("random-keys", 0..=MAX_RANDOM_KEYS)? as usize;
            let mut r = SplitMix(p.u64_in("seed", 0..=u64::MAX)?);
            let bytes: Vec<u8> = (0..count * key_bytes).map(|_| r.next_u64() as u8).collect();
            return Ok(KeyTable::new(key_bytes, bytes.chunks_exact(key_bytes)));
        }
        let text = crate::operator::read_text_file(path, 256 << 20)
            .map_err(|e| p.bad("keys", &format!("a readable key file ({e})")))?;
        let mut keys = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let key = unhex(line).filter(|k| k.len() == key_bytes).ok_or_else(|| {
                p.bad(
                    "keys",
                    &format!(
                        "keys of {key_bytes} bytes (`key-bytes`) in hex, one a line; {path} line {}: `{line}`",
                        n + 1
                    ),
                )
            })?;
            keys.extend_from_slice(&key);
        }
        Ok(KeyTable::new(key_bytes, keys.chunks_exact(key_bytes)))
    }
}

/// The bytes of hex `text`, if that is what it is.
fn unhex(text: &str) -> Option<Vec<u8>> {
    let digit = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    if text.len() % 2 != 0 {
        return None;
    }
    text.as_bytes()
        .chunks_exact(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

/// The `filter` kernel.
#[derive(Debug)]
pub struct Filter {
    table: KeyTable,
}

impl Filter {
    /// Builds from `keys`, `random-keys`, `seed` and `key-bytes`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        Ok(Box::new(Batch(Filter {
            table: KeyTable::from_params(p)?,
        })))
    }
}

impl Emit for Filter {
    fn name(&self) -> &'static str {
        "filter"
    }

    fn packet(&self, p: &Packet<'_>, out: &mut Vec<u8>) -> Result<(), OpError> {
        let payload = l4("filter", p)?.payload.unwrap_or_default();
        if let Some(key) = payload.get(..self.table.key_bytes) {
            if self.table.contains(key) {
                out.extend_from_slice(p.bytes);
            }
        }
        Ok(())
    }
}

/// A valid `filter` input carrying `payload`, for the keys `params` give:
/// UDP packets of up to 1500 bytes, each a key then a chunk of the payload;
/// the key is one of the table's for half of them (chosen from the bytes
/// each carries), else random (almost never in the table).
pub fn sample_input(params: &BTreeMap<String, String>, payload: &[u8]) -> Result<Vec<u8>, OpError> {
    let p = crate::registry::checked_params("filter", params)?;
    let table = KeyTable::from_params(&p)?;
    let keys: Vec<&[u8]> = table.keys().collect();
    let per = super::SAMPLE_UDP_PAYLOAD - table.key_bytes;
    let mut out = Vec::with_capacity(payload.len() + payload.len() / per * 100 + 128);
    let flow = SampleFlow::default();
    for chunk in chunks(payload, per) {
        let mut r = SplitMix(seed_of(chunk));
        let mut data: Vec<u8> = if r.below(2) == 0 && !keys.is_empty() {
            keys[r.below(keys.len() as u64) as usize].to_vec()
        } else {
            (0..table.key_bytes).map(|_| r.next_u64() as u8).collect()
        };
        data.extend_from_slice(chunk);
        push_packet(&mut out, &flow, &data)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of uthash's `HASH_JEN` macro, as in PsPIN's filtering handler,
    /// compiled with cc.
    #[test]
    fn hash_jen_equals_uthash() {
        let vectors: [(&[u8], u32); 6] = [
            (b"", 0x0ee1c8aa),
            (b"a", 0xfb48d8c3),
            (b"abcdefgh", 0x6709899b),
            (b"tenant-7", 0x0104cca7),
            (b"0123456789ab", 0xea85fc7c),
            (b"The quick brown fox jumps over the lazy dog", 0x6fb02613),
        ];
        for (key, hash) in vectors {
            assert_eq!(hash_jen(key), hash, "{:?}", String::from_utf8_lossy(key));
        }
    }

    #[test]
    fn tables_hold_distinct_keys() {
        let keys: Vec<[u8; 2]> = (0..300u16).map(|k| (k % 200).to_be_bytes()).collect();
        let t = KeyTable::new(2, keys.iter().map(|k| &k[..]));
        assert_eq!(t.keys().len(), 200);
        assert!((0..200u16).all(|k| t.contains(&k.to_be_bytes())));
        assert!(!(200..1000u16).any(|k| t.contains(&k.to_be_bytes())));
        let empty = KeyTable::new(3, std::iter::empty());
        assert!(!empty.contains(b"abc"));
    }
}
