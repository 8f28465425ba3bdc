//! `ipv4-router`: MTDA's IPv4 router, the forwarding plane of RFC 1812 on a
//! batch of packets.
//!
//! For every packet (its header checksum checked on input, as RFC 1812
//! 5.2.2 asks): a packet whose TTL is 0 or 1 is dropped (it would expire
//! here; a router would send ICMP time exceeded), as is one whose
//! destination no route covers (ICMP unreachable); any other is forwarded
//! with its TTL decremented and its header checksum updated incrementally
//! (RFC 1624 equation 3, `HC' = ~(~HC + ~m + m')` over the 16-bit word
//! holding TTL and protocol), options and payload unchanged.
//!
//! Routes are `lpm`'s: the same parameters (`routes` file or seeded
//! `random-routes`, IPv4 only) build the same `prefix-trie` table, and the
//! next hop is the longest matching prefix's.
//!
//! Output: each forwarded packet, in input order, preceded by its next hop
//! as a `u32`, big-endian (the output port): `[next hop][IPv4 packet]...`,
//! each packet delimited by its total length. Batches split: outputs of
//! consecutive packets concatenate.

use super::{chunks, push_packet, seed_of, Batch, Emit, SampleFlow, SplitMix};
use crate::lpm::{random_routes, table, Table};
use crate::operator::{OpError, Operator};
use crate::packet::Packet;
use isola_core::params::Params;
use std::collections::BTreeMap;

/// The `ipv4-router` kernel.
pub struct Router {
    routes: Table<u32>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("routes", &self.routes.trie.len())
            .finish()
    }
}

impl Router {
    /// Builds from `routes`, `random-routes` and `seed` (as `lpm`).
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        Ok(Box::new(Batch(Router { routes: table(p)? })))
    }
}

/// The header checksum `hc` of a header whose 16-bit word `old` became
/// `new` (RFC 1624 equation 3, in one's complement arithmetic).
pub fn incremental_checksum(hc: u16, old: u16, new: u16) -> u16 {
    !crate::checksum::fold(u64::from(!hc) + u64::from(!old) + u64::from(new))
}

impl Emit for Router {
    fn name(&self) -> &'static str {
        "ipv4-router"
    }

    fn packet(&self, p: &Packet<'_>, out: &mut Vec<u8>) -> Result<(), OpError> {
        let ttl = p.header.ttl();
        if ttl <= 1 {
            return Ok(());
        }
        let hop = self.routes.lookup(u32::from_be_bytes(p.header.destination()));
        if hop == crate::lpm::NO_ROUTE {
            return Ok(());
        }
        out.extend_from_slice(&hop.to_be_bytes());
        let start = out.len();
        out.extend_from_slice(p.bytes);
        // A checked header is at least 20 bytes: TTL at 8, protocol at 9,
        // checksum at 10..12.
        let packet = &mut out[start..];
        let old = u16::from_be_bytes([packet[8], packet[9]]);
        packet[8] = ttl - 1;
        let new = u16::from_be_bytes([packet[8], packet[9]]);
        let hc = incremental_checksum(p.header.header_checksum(), old, new);
        packet[10..12].copy_from_slice(&hc.to_be_bytes());
        Ok(())
    }
}

/// A valid `ipv4-router` input carrying `payload`, for the routes `params`
/// build: UDP packets of up to 1500 bytes. Of every 16 (chosen from the
/// bytes each carries), 14 go to an address inside a route of the table
/// (random host bits), one to a random address (mostly no route) and one
/// has TTL 1 (with an empty table, all go to random addresses).
pub fn sample_input(params: &BTreeMap<String, String>, payload: &[u8]) -> Result<Vec<u8>, OpError> {
    let p = crate::registry::checked_params("ipv4-router", params)?;
    // The prefixes of the table `params` build (random ones generated
    // without building it: sample inputs are made per task size).
    let routes: Vec<(u32, u8)> = if p.raw("routes").is_empty() {
        let count = p.u64_in("random-routes", 0..=crate::lpm::MAX_RANDOM_ROUTES)?;
        let seed = p.u64_in("seed", 0..=u64::MAX)?;
        random_routes::<u32>(count, seed)
            .map(|(a, len, _)| (a, len))
            .collect()
    } else {
        table::<u32>(&p)?
            .trie
            .iter()
            .map(|((a, len), _)| (a, len))
            .collect()
    };
    let per = super::SAMPLE_UDP_PAYLOAD;
    let mut out = Vec::with_capacity(payload.len() + payload.len() / per * 28 + 64);
    for chunk in chunks(payload, per) {
        let mut r = SplitMix(seed_of(chunk));
        let kind = r.below(16);
        let mut dst = r.next_u64() as u32;
        if kind < 14 && !routes.is_empty() {
            let (prefix, len) = routes[r.below(routes.len() as u64) as usize];
            let host = dst.checked_shr(u32::from(len)).unwrap_or(0);
            dst = prefix | host;
        }
        let flow = SampleFlow {
            dst: dst.to_be_bytes(),
            ttl: if kind == 15 { 1 } else { 64 },
            ..SampleFlow::default()
        };
        push_packet(&mut out, &flow, chunk)?;
    }
    Ok(out)
}
