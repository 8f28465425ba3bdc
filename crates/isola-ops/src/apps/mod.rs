//! The tenants' applications of the papers, as real operators on batches of
//! packets: MTDA's four datacenter applications (`analytics`,
//! `flow-monitor`, `ipv4-router`, `firewall`; MTDA section V-A.2) and the
//! OSMOSIS/PsPIN datacenter kernels (`aggregate`, `reduce`, `histogram`,
//! `io-read`, `io-write`, `filter`; OSMOSIS section 6.4).
//!
//! # Input: a batch of packets
//!
//! Every one of them takes the container of the other packet operators
//! ([`crate::packet`]): IPv4 packets back to back, each delimited by its
//! header's total length, each header checked (version, length, checksum);
//! a bad or truncated packet is an [`OpError::Input`] naming its byte
//! offset. There is no link layer: a NIC hands the kernels IP packets, and
//! the container stays the one `ip-fragment` and `tcp-segment` read and
//! write, so operators can be chained.
//!
//! Above IPv4, a TCP or UDP packet that is not a fragment (offset 0, no
//! more-fragments flag) has ports and an *application payload*: the UDP
//! payload (up to the UDP length) or the TCP payload (after the data
//! offset). A malformed UDP or TCP header in such a packet is an error.
//! Other packets (other protocols, fragments) have ports 0 and no
//! application payload: the 5-tuple operators still count and match them,
//! the payload kernels skip them (as a sNIC's matching engine would not
//! hand them to the kernel). L4 checksums are not checked.
//!
//! # Splitting
//!
//! Where results combine (concatenated packets, tables merged, sums added),
//! the operator splits into independent subtasks over byte ranges: a
//! subtask handles the packets that *start* in its range, finding the first
//! one by hopping from the start of the input over the total-length fields
//! (two bytes read per packet before it, no checksum), and the reassembly
//! merges the subtasks' results in order. Every packet has exactly one
//! owner and the hops follow the same boundaries as a one-shot run, so a
//! split run equals the one-shot run, errors included.

use crate::operator::{downcast, Carry, OpError, Operator, Splitter};
use crate::packet::{packet_at, Packet};
use crate::watch::{Checkpoint, NeverStop, Watch};
use etherparse::{IpNumber, PacketBuilder};
use isola_core::Subtask;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

pub mod analytics;
pub mod app_recognition;
pub mod filter;
pub mod firewall;
pub mod flow;
pub mod flow_table;
pub mod io;
pub mod kernels;
pub mod router;

/// What one packet carries above IPv4, for the operators of this module.
#[derive(Debug, Clone, Copy)]
pub(crate) struct L4<'a> {
    /// Source port (0 without ports).
    pub(crate) sport: u16,
    /// Destination port (0 without ports).
    pub(crate) dport: u16,
    /// The application payload (`None` without one).
    pub(crate) payload: Option<&'a [u8]>,
}

/// The ports and application payload of `p` (see the module docs).
pub(crate) fn l4<'a>(op: &'static str, p: &Packet<'a>) -> Result<L4<'a>, OpError> {
    let none = L4 {
        sport: 0,
        dport: 0,
        payload: None,
    };
    if p.header.is_fragmenting_payload() {
        return Ok(none);
    }
    let bad = |what: String| OpError::Input {
        op,
        reason: format!("IPv4 packet at byte {}: {what}", p.at),
    };
    let d = p.payload;
    let ports = || (u16::from_be_bytes([d[0], d[1]]), u16::from_be_bytes([d[2], d[3]]));
    match p.header.protocol() {
        IpNumber::UDP => {
            if d.len() < 8 {
                return Err(bad(format!("UDP header truncated ({} bytes)", d.len())));
            }
            let len = usize::from(u16::from_be_bytes([d[4], d[5]]));
            if len < 8 || len > d.len() {
                return Err(bad(format!(
                    "UDP length {len} is not 8 to the {} bytes after the IPv4 header",
                    d.len()
                )));
            }
            let (sport, dport) = ports();
            Ok(L4 {
                sport,
                dport,
                payload: Some(&d[8..len]),
            })
        }
        IpNumber::TCP => {
            if d.len() < 20 {
                return Err(bad(format!("TCP header truncated ({} bytes)", d.len())));
            }
            let header = usize::from(d[12] >> 4) * 4;
            if header < 20 || header > d.len() {
                return Err(bad(format!(
                    "TCP data offset of {header} bytes is not 20 to the {} bytes after the IPv4 header",
                    d.len()
                )));
            }
            let (sport, dport) = ports();
            Ok(L4 {
                sport,
                dport,
                payload: Some(&d[header..]),
            })
        }
        _ => Ok(none),
    }
}

/// The work of a packet-batch operator: a state folded over the packets in
/// order, merged with the state of the packets after them, then written.
pub(crate) trait Kernel: Send + Sync + 'static {
    /// What the packets so far amount to.
    type State: Send + 'static;

    /// The registered operator name.
    fn name(&self) -> &'static str;

    /// Whether [`Kernel::merge`] is right, so that the operator splits.
    fn splits(&self) -> bool {
        true
    }

    /// Whether a watched run may stop between packets (see
    /// [`Operator::run_watched`]): true unless the kernel keeps state
    /// across tasks, which a stop would leave holding half a batch.
    fn stoppable(&self) -> bool {
        true
    }

    /// The state of no packets.
    fn state(&self) -> Self::State;

    /// Adds packet `p` to `state`.
    fn packet(&self, p: &Packet<'_>, state: &mut Self::State) -> Result<(), OpError>;

    /// Adds `later`, the state of the packets right after those of `into`.
    fn merge(&self, into: &mut Self::State, later: Self::State);

    /// The state of the packets of `parts`, consecutive runs in order.
    fn merge_all(&self, parts: Vec<Self::State>) -> Self::State {
        let mut state = self.state();
        for later in parts {
            self.merge(&mut state, later);
        }
        state
    }

    /// The output.
    fn finish(&self, state: Self::State) -> Result<Vec<u8>, OpError>;
}

/// A [`Kernel`] whose output is each packet's output, concatenated: the
/// state is the output so far, and the outputs of consecutive packets
/// concatenate, so it splits.
pub(crate) trait Emit: Send + Sync + 'static {
    /// The registered operator name.
    fn name(&self) -> &'static str;

    /// Appends the output of packet `p` to `out`.
    fn packet(&self, p: &Packet<'_>, out: &mut Vec<u8>) -> Result<(), OpError>;

    /// The most output a task may make (its `max_output`), checked on the
    /// reassembled output too; unbounded unless the operator says.
    fn max_output(&self) -> u64 {
        u64::MAX
    }
}

impl<E: Emit> Kernel for E {
    /// The output so far.
    type State = Vec<u8>;

    fn name(&self) -> &'static str {
        Emit::name(self)
    }

    fn state(&self) -> Vec<u8> {
        Vec::new()
    }

    fn packet(&self, p: &Packet<'_>, out: &mut Vec<u8>) -> Result<(), OpError> {
        Emit::packet(self, p, out)
    }

    fn merge(&self, into: &mut Vec<u8>, later: Vec<u8>) {
        into.extend_from_slice(&later);
    }

    fn merge_all(&self, parts: Vec<Vec<u8>>) -> Vec<u8> {
        // One allocation of the total size.
        parts.concat()
    }

    fn finish(&self, out: Vec<u8>) -> Result<Vec<u8>, OpError> {
        crate::limits::check_output(Emit::name(self), out.len(), Emit::max_output(self))?;
        Ok(out)
    }
}

/// An operator made of a [`Kernel`].
#[derive(Debug)]
pub(crate) struct Batch<K>(pub(crate) K);

/// The offset of the first packet of `input` that starts at or after
/// `start`, hopping over the total-length fields of those before it; a
/// length that cannot be hopped over is the error a full check gives.
fn first_at(op: &'static str, input: &[u8], start: usize) -> Result<usize, OpError> {
    let mut at = 0usize;
    while at < start && at < input.len() {
        let total = input
            .get(at + 2..at + 4)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])));
        match total {
            Some(t) if t >= 20 && t <= input.len() - at => at += t,
            _ => {
                let rest = input.get(at..).unwrap_or_default();
                return Err(packet_at(op, rest, at).err().unwrap_or_else(|| OpError::Input {
                    op,
                    reason: format!("IPv4 packet at byte {at}: bad total length"),
                }));
            }
        }
    }
    Ok(at)
}

impl<K: Kernel> Batch<K> {
    /// Folds the packets that start in `range` into `state`, telling
    /// `watch` of each packet's bytes (it asks its watch every chunk).
    fn fold(
        &self,
        input: &[u8],
        range: Range<usize>,
        state: &mut K::State,
        watch: &mut Checkpoint<'_>,
    ) -> Result<(), OpError> {
        let op = self.0.name();
        let end = range.end.min(input.len());
        let mut at = first_at(op, input, range.start)?;
        while at < end {
            let p = packet_at(op, input.get(at..).unwrap_or_default(), at)?;
            at += p.bytes.len();
            self.0.packet(&p, state)?;
            watch.after(p.bytes.len(), at)?;
        }
        Ok(())
    }

    /// The whole batch, packet after packet, asking `watch` before the
    /// first and after about every [`crate::WATCH_CHUNK_BYTES`] of packets.
    fn run_with(&self, input: &[u8], watch: &dyn Watch) -> Result<Vec<u8>, OpError> {
        let mut at = Checkpoint::new(self.0.name(), input.len(), watch);
        at.check(0)?;
        let mut state = self.0.state();
        self.fold(input, 0..input.len(), &mut state, &mut at)?;
        self.0.finish(state)
    }
}

impl<K: Kernel> Operator for Batch<K> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        self.run_with(input, &NeverStop)
    }

    /// Packet after packet as `run` (not by subtasks, each of which hops
    /// over the packets before it), asking between packets every chunk;
    /// a kernel that keeps state across tasks asks only before it starts.
    fn run_watched(&self, input: &[u8], watch: &dyn Watch) -> Result<Vec<u8>, OpError> {
        if self.0.stoppable() {
            return self.run_with(input, watch);
        }
        Checkpoint::new(self.0.name(), input.len(), watch).check(0)?;
        self.run(input)
    }

    fn stoppable(&self) -> bool {
        self.0.stoppable()
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        if self.0.splits() {
            Some(self)
        } else {
            None
        }
    }
}

impl<K: Kernel> Splitter for Batch<K> {
    fn ordered(&self) -> bool {
        false
    }

    fn run_part(&self, part: &Subtask, input: &[u8], _: Option<Carry>) -> Result<Carry, OpError> {
        let start = usize::try_from(part.offset).unwrap_or(usize::MAX);
        let end = usize::try_from(part.offset.saturating_add(part.bytes)).unwrap_or(usize::MAX);
        let mut state = self.0.state();
        let mut unwatched = Checkpoint::new(self.0.name(), input.len(), &NeverStop);
        self.fold(input, start..end, &mut state, &mut unwatched)?;
        Ok(Box::new(state))
    }

    fn reassemble(&self, _: usize, parts: Vec<Carry>) -> Result<Vec<u8>, OpError> {
        let op = self.0.name();
        let states = parts
            .into_iter()
            .map(|part| downcast::<K::State>(op, part))
            .collect::<Result<Vec<_>, _>>()?;
        self.0.finish(self.0.merge_all(states))
    }
}

/// FxHash (rustc's hasher): a multiply-rotate hash for the integer keys of
/// the flow and aggregation tables, several times faster than SipHash. The
/// keys come from packets, so a tenant could aim collisions at it; the
/// tables are per batch, which bounds the damage to that tenant's task.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_u128(&mut self, n: u128) {
        self.add(n as u64);
        self.add((n >> 64) as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` with [`FxHasher`].
pub(crate) type FxMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// splitmix64: the seeded generator of the random tables (routes, rules,
/// keys) and of sample inputs.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
        }
    }
}

/// Largest UDP payload of a sample packet: a 1500-byte IPv4 MTU.
pub(crate) const SAMPLE_UDP_PAYLOAD: usize = 1500 - 20 - 8;

/// The flow of a sample packet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SampleFlow {
    pub(crate) src: [u8; 4],
    pub(crate) dst: [u8; 4],
    pub(crate) sport: u16,
    pub(crate) dport: u16,
    /// TCP (else UDP).
    pub(crate) tcp: bool,
    pub(crate) ttl: u8,
}

impl Default for SampleFlow {
    fn default() -> Self {
        SampleFlow {
            src: [192, 0, 2, 1],
            dst: [198, 51, 100, 7],
            sport: 4000,
            dport: 4789,
            tcp: false,
            ttl: 64,
        }
    }
}

/// Appends an IPv4 packet of `flow` carrying `payload` (TCP: ACK, PSH,
/// sequence number 1) to `out`, with its checksums.
pub(crate) fn push_packet(out: &mut Vec<u8>, flow: &SampleFlow, payload: &[u8]) -> Result<(), OpError> {
    let ip = PacketBuilder::ipv4(flow.src, flow.dst, flow.ttl);
    let written = if flow.tcp {
        ip.tcp(flow.sport, flow.dport, 1, 65535)
            .ack(1)
            .psh()
            .write(out, payload)
    } else {
        ip.udp(flow.sport, flow.dport).write(out, payload)
    };
    written.map_err(|e| OpError::Input {
        op: "sample",
        reason: format!("cannot build a sample packet: {e}"),
    })
}

/// `payload` cut into chunks of at most `size` bytes (at least one chunk,
/// empty for an empty payload).
pub(crate) fn chunks(payload: &[u8], size: usize) -> Vec<&[u8]> {
    let mut chunks: Vec<&[u8]> = payload.chunks(size.max(1)).collect();
    if chunks.is_empty() {
        chunks.push(&[]);
    }
    chunks
}

/// A seed from the bytes of `chunk` (FNV-1a), so that sample packets vary
/// with the payload they carry.
pub(crate) fn seed_of(chunk: &[u8]) -> u64 {
    chunk.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `payload` as UDP packets of at most [`SAMPLE_UDP_PAYLOAD`] bytes each
/// of `unit` bytes (zero-padded to a whole number of units), from `flow`.
pub(crate) fn udp_units(payload: &[u8], unit: usize) -> Result<Vec<u8>, OpError> {
    let per = SAMPLE_UDP_PAYLOAD / unit * unit;
    let mut out = Vec::with_capacity(payload.len() + payload.len() / per * 28 + 64);
    let flow = SampleFlow::default();
    for chunk in chunks(payload, per) {
        let mut data = chunk.to_vec();
        data.resize(chunk.len().div_ceil(unit) * unit, 0);
        push_packet(&mut out, &flow, &data)?;
    }
    Ok(out)
}

/// Reads a whole-number parameter `name` as bytes in `range`.
pub(crate) fn usize_param(
    p: &isola_core::params::Params<'_>,
    name: &str,
    range: std::ops::RangeInclusive<u64>,
) -> Result<usize, OpError> {
    let v = p.u64_in(name, range)?;
    usize::try_from(v).map_err(|_| OpError::from(p.bad(name, "a size this machine can address")))
}

/// Bounds-checked big-endian reads of a packet's bytes.
pub(crate) fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// [`be_u32`] for 8 bytes.
pub(crate) fn be_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_below_stays_below() {
        let mut r = SplitMix(3);
        assert!((0..1000).all(|_| r.below(7) < 7));
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn hops_find_packet_starts_and_report_bad_lengths() {
        let mut input = Vec::new();
        push_packet(&mut input, &SampleFlow::default(), &[1, 2, 3]).unwrap();
        let first = input.len();
        push_packet(&mut input, &SampleFlow::default(), &[4; 10]).unwrap();
        assert_eq!(first_at("t", &input, 0).unwrap(), 0);
        assert_eq!(first_at("t", &input, 1).unwrap(), first);
        assert_eq!(first_at("t", &input, first).unwrap(), first);
        assert_eq!(first_at("t", &input, first + 1).unwrap(), input.len());
        input[first + 2] = 0xff;
        assert!(first_at("t", &input, first + 1).is_err());
    }
}
