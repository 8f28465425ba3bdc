//! `flow-monitor`: MTDA's flow monitor, a 5-tuple flow table with packet
//! and byte counters over a batch of packets.
//!
//! Each packet counts towards its flow, the 5-tuple (source address,
//! destination address, source port, destination port, protocol); packets
//! without ports (not TCP or UDP, or fragments) have ports 0. Bytes are the
//! IPv4 total length (header included), as NetFlow and IPFIX count them.
//!
//! Output: one [`FLOW_BYTES`]-byte row per flow, sorted by the 5-tuple in
//! that field order, big-endian: source address (4 bytes), destination
//! address (4), source port `u16`, destination port `u16`, protocol (1
//! byte), 3 zero bytes, packets `u64`, bytes `u64`. No parameters; batches
//! split (tables of consecutive packets merge).

use super::{chunks, l4, push_packet, seed_of, Batch, FxMap, Kernel, SampleFlow};
use crate::operator::{OpError, Operator};
use crate::packet::Packet;
use isola_core::params::Params;

/// Bytes per output row.
pub const FLOW_BYTES: usize = 32;

/// The `flow-monitor` kernel.
#[derive(Debug, Clone, Copy)]
pub struct FlowMonitor;

impl FlowMonitor {
    /// Builds (no parameters).
    pub fn build(_: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        Ok(Box::new(Batch(FlowMonitor)))
    }
}

/// A 5-tuple as one number whose order is the tuple's (field by field).
pub(crate) fn tuple_key(src: u32, dst: u32, sport: u16, dport: u16, proto: u8) -> u128 {
    u128::from(src) << 96
        | u128::from(dst) << 64
        | u128::from(sport) << 48
        | u128::from(dport) << 32
        | u128::from(proto) << 24
}

impl Kernel for FlowMonitor {
    /// 5-tuple key to (packets, bytes).
    type State = FxMap<u128, (u64, u64)>;

    fn name(&self) -> &'static str {
        "flow-monitor"
    }

    fn state(&self) -> Self::State {
        FxMap::default()
    }

    fn packet(&self, p: &Packet<'_>, table: &mut Self::State) -> Result<(), OpError> {
        let t = l4("flow-monitor", p)?;
        let key = tuple_key(
            u32::from_be_bytes(p.header.source()),
            u32::from_be_bytes(p.header.destination()),
            t.sport,
            t.dport,
            p.header.protocol().0,
        );
        let c = table.entry(key).or_insert((0, 0));
        c.0 += 1;
        c.1 += p.bytes.len() as u64;
        Ok(())
    }

    fn merge(&self, into: &mut Self::State, later: Self::State) {
        for (k, (packets, bytes)) in later {
            let c = into.entry(k).or_insert((0, 0));
            c.0 += packets;
            c.1 += bytes;
        }
    }

    fn finish(&self, table: Self::State) -> Result<Vec<u8>, OpError> {
        let mut rows: Vec<(u128, (u64, u64))> = table.into_iter().collect();
        rows.sort_unstable_by_key(|&(k, _)| k);
        let mut out = Vec::with_capacity(rows.len() * FLOW_BYTES);
        for (k, (packets, bytes)) in rows {
            out.extend_from_slice(&k.to_be_bytes()[..16]);
            out.extend_from_slice(&packets.to_be_bytes());
            out.extend_from_slice(&bytes.to_be_bytes());
        }
        Ok(out)
    }
}

/// Flows of the sample traffic.
const SAMPLE_FLOWS: u64 = 64;

/// A valid `flow-monitor` input carrying `payload`: packets of up to 1500
/// bytes, each of one of 64 flows (chosen from the bytes it carries; a
/// third TCP, the rest UDP) from 10.0.0.0/16 hosts to eight servers.
pub fn sample_input(payload: &[u8]) -> Result<Vec<u8>, OpError> {
    let per = super::SAMPLE_UDP_PAYLOAD - 12;
    let mut out = Vec::with_capacity(payload.len() + payload.len() / per * 40 + 64);
    for chunk in chunks(payload, per) {
        let f = seed_of(chunk) % SAMPLE_FLOWS;
        let flow = SampleFlow {
            src: [10, 0, (f / 8) as u8, 1 + (f % 8) as u8],
            dst: [192, 168, 1, (f % 8) as u8 + 10],
            sport: 32768 + f as u16,
            dport: [80, 443, 53, 8080][(f % 4) as usize],
            tcp: f % 3 == 0,
            ttl: 64,
        };
        push_packet(&mut out, &flow, chunk)?;
    }
    Ok(out)
}
