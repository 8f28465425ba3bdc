//! The IO-bound OSMOSIS kernels (section 6.4; PsPIN's `iow`/`ior`
//! handlers): `io-write` and `io-read`, DMA between packets and host
//! memory, "a target memory location ... stored directly in the packet
//! application header". Host memory is a byte buffer standing for the
//! tenant's IOMMU-mapped region of `memory-size` bytes; an access outside it
//! is an error (an IOMMU fault).
//!
//! `io-write`: each UDP or TCP packet's application payload is an 8-byte
//! address (`u64`, big-endian) and then the data to write there. Writes are
//! applied in packet order (a later write to the same bytes wins). Host
//! memory starts zeroed for every batch, and the output is its image from
//! address 0 to the end of the highest write; bytes no packet wrote are
//! zero. The output's size is set by the highest address written, not by
//! the input's: one small packet writing near the end of a 64 MiB region
//! makes a 64 MiB output (bounded by `memory-size`, which callers should set
//! to the region their tenants may use; cost models keyed on input size
//! underestimate such a task). An
//! application payload shorter than the address is an error. It does not
//! split: overlapping writes must be applied in order into one image.
//!
//! `io-read`: each UDP or TCP packet's application payload is a request:
//! an address (`u64`) and a length (`u32`), big-endian (12 bytes; more are
//! ignored, fewer are an error). The answer, as PsPIN's `ior` handler sends
//! it, is a packet back to the requester: IPv4 and UDP, addresses and ports
//! swapped, the request's identification, TTL 64, checksums computed, the
//! bytes read as its payload (at most 65507, a UDP datagram's limit, else
//! an error). Host memory is read-only: the file `memory` (its bytes), or
//! `memory-size` seeded random bytes (`seed`), made when the operator is
//! built. Output: the answers back to back (the input's container). Batches
//! split: answers of consecutive packets concatenate. A 40-byte request may
//! ask for a 65,535-byte answer, so the output is bounded by `max_output`
//! (default [`crate::limits::DEFAULT_MAX_OUTPUT`]).

use super::{
    be_u32, be_u64, chunks, l4, push_packet, seed_of, usize_param, Batch, Emit, Kernel, SampleFlow, SplitMix,
};
use crate::operator::{OpError, Operator};
use crate::packet::Packet;
use etherparse::{IpNumber, Ipv4Header, UdpHeader};
use isola_core::params::Params;
use std::collections::BTreeMap;

/// Largest `memory-size` (and `memory` file): 1 GiB.
pub const MAX_MEMORY: u64 = 1 << 30;

/// Largest read: a UDP datagram's payload in one IPv4 packet.
pub const MAX_READ: usize = 65_535 - 20 - 8;

/// Bytes of an `io-write` application header.
pub const WRITE_HEADER: usize = 8;

/// Bytes of an `io-read` request.
pub const READ_REQUEST: usize = 12;

/// An input error of `op` about the packet at `at`.
fn bad(op: &'static str, at: usize, what: String) -> OpError {
    OpError::Input {
        op,
        reason: format!("IPv4 packet at byte {at}: {what}"),
    }
}

/// The `io-write` kernel.
#[derive(Debug, Clone, Copy)]
pub struct IoWrite {
    memory: usize,
}

impl IoWrite {
    /// Builds from `memory-size` (1 to 1 GiB).
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let memory = usize_param(p, "memory-size", 1..=MAX_MEMORY)?;
        Ok(Box::new(Batch(IoWrite { memory })))
    }
}

impl Kernel for IoWrite {
    /// Host memory up to the end of the highest write so far.
    type State = Vec<u8>;

    fn name(&self) -> &'static str {
        "io-write"
    }

    fn splits(&self) -> bool {
        false
    }

    fn state(&self) -> Vec<u8> {
        Vec::new()
    }

    fn packet(&self, p: &Packet<'_>, host: &mut Vec<u8>) -> Result<(), OpError> {
        let Some(payload) = l4("io-write", p)?.payload else {
            return Ok(());
        };
        if payload.len() < WRITE_HEADER {
            return Err(bad(
                "io-write",
                p.at,
                format!("a {}-byte payload has no 8-byte address", payload.len()),
            ));
        }
        let addr = be_u64(payload, 0);
        let data = &payload[WRITE_HEADER..];
        let range = usize::try_from(addr)
            .ok()
            .and_then(|a| Some(a..a.checked_add(data.len())?))
            .filter(|r| r.end <= self.memory)
            .ok_or_else(|| {
                bad(
                    "io-write",
                    p.at,
                    format!(
                        "a {}-byte write at {addr:#x} is outside the {}-byte host memory",
                        data.len(),
                        self.memory
                    ),
                )
            })?;
        if host.len() < range.end {
            host.resize(range.end, 0);
        }
        host[range].copy_from_slice(data);
        Ok(())
    }

    fn merge(&self, into: &mut Vec<u8>, later: Vec<u8>) {
        // Not used (the operator does not split): a later image's zeros are
        // not writes.
        if into.len() < later.len() {
            into.resize(later.len(), 0);
        }
    }

    fn finish(&self, host: Vec<u8>) -> Result<Vec<u8>, OpError> {
        Ok(host)
    }
}

/// The `io-read` kernel.
pub struct IoRead {
    host: Vec<u8>,
    max_output: u64,
}

impl std::fmt::Debug for IoRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IoRead")
            .field("memory", &self.host.len())
            .finish()
    }
}

/// Host memory for `io-read`: the `memory` file, or `memory-size` random
/// bytes from `seed`.
fn host_memory(p: &Params<'_>) -> Result<Vec<u8>, OpError> {
    let path = p.raw("memory");
    if path.is_empty() {
        let size = usize_param(p, "memory-size", 1..=MAX_MEMORY)?;
        let mut r = SplitMix(p.u64_in("seed", 0..=u64::MAX)?);
        let mut host = Vec::with_capacity(size + 8);
        while host.len() < size {
            host.extend_from_slice(&r.next_u64().to_le_bytes());
        }
        host.truncate(size);
        return Ok(host);
    }
    let size = |bytes: u64| {
        p.bad(
            "memory",
            &format!("a file of 1 byte to 1 GiB of host memory ({path} has {bytes} bytes)"),
        )
    };
    match crate::operator::read_file(path, MAX_MEMORY) {
        Ok(host) if !host.is_empty() => Ok(host),
        Ok(_) => Err(size(0).into()),
        // Read up to one byte past the limit.
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => Err(size(MAX_MEMORY + 1).into()),
        Err(e) => Err(p
            .bad("memory", &format!("a readable host memory file ({e})"))
            .into()),
    }
}

impl IoRead {
    /// Builds from `memory`, or `memory-size` and `seed`, and `max_output`
    /// (a 40-byte request may ask for a 65,535-byte answer).
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        Ok(Box::new(Batch(IoRead {
            host: host_memory(p)?,
            max_output: crate::limits::max_output(p)?,
        })))
    }
}

impl Emit for IoRead {
    fn name(&self) -> &'static str {
        "io-read"
    }

    fn max_output(&self) -> u64 {
        self.max_output
    }

    fn packet(&self, p: &Packet<'_>, out: &mut Vec<u8>) -> Result<(), OpError> {
        let t = l4("io-read", p)?;
        let Some(request) = t.payload else {
            return Ok(());
        };
        if request.len() < READ_REQUEST {
            return Err(bad(
                "io-read",
                p.at,
                format!("a {}-byte payload is not a 12-byte read request", request.len()),
            ));
        }
        let (addr, len) = (be_u64(request, 0), be_u32(request, 8) as usize);
        if len > MAX_READ {
            return Err(bad(
                "io-read",
                p.at,
                format!("a {len}-byte read does not fit a UDP answer (at most {MAX_READ})"),
            ));
        }
        let data = usize::try_from(addr)
            .ok()
            .and_then(|a| self.host.get(a..a.checked_add(len)?))
            .ok_or_else(|| {
                bad(
                    "io-read",
                    p.at,
                    format!(
                        "a {len}-byte read at {addr:#x} is outside the {}-byte host memory",
                        self.host.len()
                    ),
                )
            })?;
        crate::limits::check_output("io-read", out.len().saturating_add(28 + len), self.max_output)?;
        let build = || -> Result<(Ipv4Header, UdpHeader), String> {
            let mut ip = Ipv4Header::new(
                (8 + len) as u16,
                64,
                IpNumber::UDP,
                p.header.destination(),
                p.header.source(),
            )
            .map_err(|e| e.to_string())?;
            ip.identification = p.header.identification();
            ip.header_checksum = ip.calc_header_checksum();
            let udp =
                UdpHeader::with_ipv4_checksum(t.dport, t.sport, &ip, data).map_err(|e| e.to_string())?;
            Ok((ip, udp))
        };
        let (ip, udp) = build().map_err(|e| bad("io-read", p.at, format!("cannot build the answer: {e}")))?;
        out.extend_from_slice(&ip.to_bytes());
        out.extend_from_slice(&udp.to_bytes());
        out.extend_from_slice(data);
        Ok(())
    }
}

/// A valid `io-write` input carrying `payload`: UDP packets of up to 1500
/// bytes, each an address then a chunk of the payload. The chunks are laid
/// out back to back in host memory in a shuffled order (so the writes land
/// at scattered addresses and the image is as long as the payload), wrapped
/// into `memory-size` when the payload is longer.
pub fn write_input(params: &BTreeMap<String, String>, payload: &[u8]) -> Result<Vec<u8>, OpError> {
    let memory = usize_param(
        &crate::registry::checked_params("io-write", params)?,
        "memory-size",
        1..=MAX_MEMORY,
    )?;
    let parts: Vec<&[u8]> = chunks(payload, super::SAMPLE_UDP_PAYLOAD - WRITE_HEADER)
        .into_iter()
        .map(|c| &c[..c.len().min(memory)])
        .collect();
    // Fisher-Yates over the placement order.
    let mut order: Vec<usize> = (0..parts.len()).collect();
    let mut r = SplitMix(payload.len() as u64);
    for i in (1..order.len()).rev() {
        order.swap(i, r.below(i as u64 + 1) as usize);
    }
    let mut addr = vec![0usize; parts.len()];
    let mut at = 0usize;
    for &i in &order {
        addr[i] = at % (memory - parts[i].len() + 1);
        at += parts[i].len();
    }
    let mut out = Vec::with_capacity(payload.len() + parts.len() * 36);
    let flow = SampleFlow::default();
    for (part, &addr) in parts.iter().zip(&addr) {
        let mut data = (addr as u64).to_be_bytes().to_vec();
        data.extend_from_slice(part);
        push_packet(&mut out, &flow, &data)?;
    }
    Ok(out)
}

/// A valid `io-read` input for `payload`: read requests, one per 1472 bytes
/// of the payload (at least one), each as long as its chunk (at most the
/// host memory) at an address in host memory chosen from the chunk's bytes.
/// The answers carry as many bytes as the payload has.
pub fn read_input(params: &BTreeMap<String, String>, payload: &[u8]) -> Result<Vec<u8>, OpError> {
    let p = crate::registry::checked_params("io-read", params)?;
    let memory = if p.raw("memory").is_empty() {
        usize_param(&p, "memory-size", 1..=MAX_MEMORY)?
    } else {
        host_memory(&p)?.len()
    };
    let parts = chunks(payload, super::SAMPLE_UDP_PAYLOAD);
    let mut out = Vec::with_capacity(parts.len() * 40);
    let flow = SampleFlow::default();
    for part in parts {
        let len = part.len().min(memory);
        let addr = SplitMix(seed_of(part)).below((memory - len + 1) as u64);
        let mut request = addr.to_be_bytes().to_vec();
        request.extend_from_slice(&(len as u32).to_be_bytes());
        push_packet(&mut out, &flow, &request)?;
    }
    Ok(out)
}
