//! `analytics`: MTDA's real-time analytics (RTA), a windowed aggregation
//! over the records a batch of packets carries.
//!
//! The application payload of every UDP or TCP packet is whole
//! [`RECORD_BYTES`]-byte records, big-endian: key `u32`, timestamp `u64`
//! (microseconds), value `i32`. A payload that is not whole records is an
//! error. Records fall into tumbling windows of `window` microseconds
//! (window start = timestamp rounded down to a multiple of `window`); per
//! window and key the operator keeps the count, sum, minimum and maximum of
//! the values, in a hash table (the memory-intensive part MTDA names).
//!
//! Output: one [`AGGREGATE_BYTES`]-byte row per (window, key) that has
//! records, sorted by window start then key, big-endian: window start `u64`
//! (µs), key `u32`, count `u32` (saturating; it cannot saturate below 64 GiB
//! of records), sum `i64`, minimum `i32`, maximum `i32`.
//!
//! The paper gives no record format or window (its RTA is cited, not
//! specified); this is the classic tumbling-window group-by of stream
//! processors. Batches split: tables of consecutive packets merge.

use super::{chunks, l4, push_packet, Batch, FxMap, Kernel, SampleFlow};
use crate::operator::{OpError, Operator};
use crate::packet::Packet;
use isola_core::params::Params;

/// Bytes per input record.
pub const RECORD_BYTES: usize = 16;

/// Bytes per output row.
pub const AGGREGATE_BYTES: usize = 32;

/// Largest `window`: a day in microseconds.
pub const MAX_WINDOW_US: u64 = 86_400_000_000;

/// Count, sum, minimum, maximum of one (window, key).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Agg {
    count: u64,
    sum: i64,
    min: i32,
    max: i32,
}

impl Agg {
    fn of(value: i32) -> Agg {
        Agg {
            count: 1,
            sum: i64::from(value),
            min: value,
            max: value,
        }
    }

    fn add(&mut self, other: &Agg) {
        self.count += other.count;
        self.sum = self.sum.wrapping_add(other.sum);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

/// The `analytics` kernel.
#[derive(Debug, Clone, Copy)]
pub struct Analytics {
    window: u64,
}

impl Analytics {
    /// Builds from `window` (microseconds, 1 to a day).
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let window = p.u64_in("window", 1..=MAX_WINDOW_US)?;
        Ok(Box::new(Batch(Analytics { window })))
    }
}

impl Kernel for Analytics {
    /// (window start << 32 | key) to its aggregate.
    type State = FxMap<u128, Agg>;

    fn name(&self) -> &'static str {
        "analytics"
    }

    fn state(&self) -> Self::State {
        FxMap::default()
    }

    fn packet(&self, p: &Packet<'_>, table: &mut Self::State) -> Result<(), OpError> {
        let Some(records) = l4("analytics", p)?.payload else {
            return Ok(());
        };
        if records.len() % RECORD_BYTES != 0 {
            return Err(OpError::Input {
                op: "analytics",
                reason: format!(
                    "IPv4 packet at byte {}: a {}-byte payload is not whole {RECORD_BYTES}-byte records",
                    p.at,
                    records.len()
                ),
            });
        }
        for r in records.chunks_exact(RECORD_BYTES) {
            let key = u32::from_be_bytes([r[0], r[1], r[2], r[3]]);
            let ts = u64::from_be_bytes([r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11]]);
            let value = i32::from_be_bytes([r[12], r[13], r[14], r[15]]);
            let start = ts - ts % self.window;
            let agg = Agg::of(value);
            table
                .entry(u128::from(start) << 32 | u128::from(key))
                .and_modify(|a| a.add(&agg))
                .or_insert(agg);
        }
        Ok(())
    }

    fn merge(&self, into: &mut Self::State, later: Self::State) {
        for (k, agg) in later {
            into.entry(k).and_modify(|a| a.add(&agg)).or_insert(agg);
        }
    }

    fn finish(&self, table: Self::State) -> Result<Vec<u8>, OpError> {
        let mut rows: Vec<(u128, Agg)> = table.into_iter().collect();
        rows.sort_unstable_by_key(|&(k, _)| k);
        let mut out = Vec::with_capacity(rows.len() * AGGREGATE_BYTES);
        for (k, a) in rows {
            out.extend_from_slice(&((k >> 32) as u64).to_be_bytes());
            out.extend_from_slice(&(k as u32).to_be_bytes());
            out.extend_from_slice(&u32::try_from(a.count).unwrap_or(u32::MAX).to_be_bytes());
            out.extend_from_slice(&a.sum.to_be_bytes());
            out.extend_from_slice(&a.min.to_be_bytes());
            out.extend_from_slice(&a.max.to_be_bytes());
        }
        Ok(out)
    }
}

/// Distinct keys of the sample records.
const SAMPLE_KEYS: u32 = 1024;

/// Microseconds between sample records.
const SAMPLE_GAP_US: u64 = 100;

/// A valid `analytics` input carrying `payload`: a record per 16 payload
/// bytes (zero-padded), key from its first 4 bytes (1024 keys), value from
/// the next 4, timestamps 100 µs apart from 0 with up to 99 µs of jitter
/// from the payload; in UDP packets of up to 92 records (1500-byte packets).
pub fn sample_input(payload: &[u8]) -> Result<Vec<u8>, OpError> {
    let per = super::SAMPLE_UDP_PAYLOAD / RECORD_BYTES * RECORD_BYTES;
    let mut out = Vec::with_capacity(payload.len() + payload.len() / per * 28 + 64);
    let mut index = 0u64;
    let flow = SampleFlow::default();
    for chunk in chunks(payload, per) {
        let mut records = Vec::with_capacity(chunk.len().div_ceil(RECORD_BYTES) * RECORD_BYTES);
        for c in chunk.chunks(RECORD_BYTES) {
            let mut b = [0u8; RECORD_BYTES];
            b[..c.len()].copy_from_slice(c);
            let key = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) % SAMPLE_KEYS;
            let value = i32::from_be_bytes([b[4], b[5], b[6], b[7]]);
            let ts = index * SAMPLE_GAP_US + u64::from(b[8]) % SAMPLE_GAP_US;
            records.extend_from_slice(&key.to_be_bytes());
            records.extend_from_slice(&ts.to_be_bytes());
            records.extend_from_slice(&value.to_be_bytes());
            index += 1;
        }
        push_packet(&mut out, &flow, &records)?;
    }
    Ok(out)
}
