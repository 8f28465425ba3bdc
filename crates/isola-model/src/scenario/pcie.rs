//! The PCIe transaction- and link-layer parameters of a DMA engine (its
//! `[engine.pcie]` table): flow-control credits per TLP type, the root
//! complex's costs, the device's outstanding-read limits, DLLP overheads and
//! the ring-buffer protocol's per-transfer accesses. Present, they turn the
//! simple DMA link into `isola_sim::pcie`'s model; absent, the link is as
//! before. Each default names its source.

use super::source::Source;
use super::ScenarioError;
use crate::quantity::{Duration, Size};
use isola_core::Nanos;
use serde::Deserialize;
use toml::Spanned;

/// Data flow-control credits are counted in units of 4 DW = 16 bytes
/// (PCIe Base Specification, sec. 2.6.1, "Flow Control Rules").
pub const CREDIT_BYTES: u64 = 16;

/// Which turns the device's transmitter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arbitration {
    /// One TLP per transfer in service, in turn: each queue pair's
    /// transfer is a queue of its own (commercial NICs, AaaS obs. 4).
    Transfer,
    /// One TLP per tenant's queue in turn, its transfers in order (a DMA
    /// engine with one queue per tenant and round robin across them, the
    /// paper's FPGA prototype, Sec. 3.4).
    Tenant,
}

/// A PCIe link's transaction- and link-layer parameters (AaaS Sec. 3.3-3.4
/// name credits, the root complex, MaxReadReqSize and MaxPayloadSize; the
/// values are the PCIe specification's or typical of the hardware, each
/// marked).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PcieSpec {
    /// TLPs a receiver acknowledges with one ACK DLLP and one UpdateFC DLLP
    /// (ACK coalescing under the spec's AckNak latency timer, sec. 3.6.3;
    /// default 4, the coalescing Xilinx WP350 assumes).
    pub ack_every: u32,
    /// Bytes of one DLLP on the wire: 6 B DLLP + 2 B SDP framing token on
    /// Gen3 and later (spec sec. 4.2.2.3; default 8).
    pub dllp_bytes: u64,
    /// Posted header credits the root complex advertises (one per write
    /// TLP; spec sec. 2.6.1; default 32, of the order root ports advertise;
    /// the paper gives none).
    pub posted_headers: u32,
    /// Posted data credits, in 16 B units (default 256 = 4 KiB of posted
    /// data buffer at the root complex; typical, the paper gives none).
    pub posted_data: u32,
    /// Non-posted header credits (one per read request; default 32, typical).
    pub nonposted_headers: u32,
    /// From the root complex freeing a TLP's buffer to the device seeing the
    /// credit again (UpdateFC scheduling and flight; default 200 ns, an
    /// assumption: the paper gives none).
    pub credit_return: Nanos,
    /// Cache-line size of the host: writes covering only part of a line
    /// need a read-modify-write at the root complex (default 64 B, x86).
    pub cache_line: u64,
    /// Root-complex time per partial-line write (its read-modify-write),
    /// during which later posted writes wait, holding their credits
    /// (AaaS obs. 10: tiny writes "take over PCIe credits within the root
    /// complex"; default 0 = absorbed at line rate; the paper gives no
    /// figure, `isola repro aaas` takes the line's read to be as long as a
    /// DMA read's, `read_latency`).
    pub rmw: Nanos,
    /// From a read request reaching the root complex to its first
    /// completion leaving it (memory access; default 500 ns, the order of
    /// the DMA read latency pcie-bench measured on Xeon E5 hosts,
    /// Neugebauer et al., SIGCOMM 2018). Reads also wait for earlier posted
    /// writes (spec sec. 2.4.1: a read must not pass a posted write).
    pub read_latency: Nanos,
    /// Read requests the device may have outstanding: its tags (default 32,
    /// the 5-bit Tag field without Extended Tag, spec sec. 2.2.6.2).
    pub tags: u32,
    /// Read requests one transfer may have outstanding (a DMA engine whose
    /// read channel per queue waits for a request's data before the next,
    /// up to this many; `None`, the default: only the tags and the
    /// completion buffer limit it).
    pub reads_per_transfer: Option<u32>,
    /// Bytes of completion buffer the device reserves per read request
    /// before issuing it (endpoints advertise infinite completion credits,
    /// spec sec. 2.6.1, and limit reads this way; default 16 KiB = 32 tags
    /// of 512 B, typical).
    pub completion_buffer: u64,
    /// Bytes of descriptor the device reads from the host ring before each
    /// transfer (AaaS Sec. 2, step 2; 0 = none, the default: a DMA engine
    /// driven directly, as the paper's FPGA prototype's).
    pub descriptor: u64,
    /// Bytes of completion entry the device writes to the host after each
    /// transfer (AaaS Sec. 2, step 4; 0 = none, the default).
    pub completion_entry: u64,
    /// Turns at the transmitter (`arbitrate = "transfer"`, the default, or
    /// `"tenant"`).
    pub arbitrate: Arbitration,
}

impl Default for PcieSpec {
    fn default() -> Self {
        PcieSpec {
            ack_every: 4,
            dllp_bytes: 8,
            posted_headers: 32,
            posted_data: 256,
            nonposted_headers: 32,
            credit_return: 200,
            cache_line: 64,
            rmw: 0,
            read_latency: 500,
            tags: 32,
            reads_per_transfer: None,
            completion_buffer: 16 * 1024,
            descriptor: 0,
            completion_entry: 0,
            arbitrate: Arbitration::Transfer,
        }
    }
}

/// `[engine.pcie]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPcie {
    ack_every: Option<Spanned<u32>>,
    dllp_bytes: Option<Spanned<Size>>,
    posted_headers: Option<Spanned<u32>>,
    posted_data: Option<Spanned<u32>>,
    nonposted_headers: Option<Spanned<u32>>,
    credit_return: Option<Spanned<Duration>>,
    cache_line: Option<Spanned<Size>>,
    rmw: Option<Spanned<Duration>>,
    read_latency: Option<Spanned<Duration>>,
    tags: Option<Spanned<u32>>,
    reads_per_transfer: Option<Spanned<u32>>,
    completion_buffer: Option<Spanned<Size>>,
    descriptor: Option<Spanned<Size>>,
    completion_entry: Option<Spanned<Size>>,
    arbitrate: Option<Spanned<String>>,
}

/// Checks `[engine.pcie]` of a link with `max_payload` and
/// `max_read_request`: every count at least 1, and buffers large enough that
/// the largest TLP or request can ever be sent (else the link would stall
/// for good).
pub(super) fn check_pcie(
    src: &Source<'_>,
    raw: Spanned<RawPcie>,
    max_payload: u64,
    max_read_request: u64,
) -> Result<PcieSpec, ScenarioError> {
    let table = raw.span();
    let raw = raw.into_inner();
    let d = PcieSpec::default();
    let count = |v: Option<Spanned<u32>>, key: &str, default: u32| match v {
        Some(c) if *c.get_ref() == 0 => Err(src.at(c.span(), Some(key), "must be at least 1")),
        Some(c) => Ok(c.into_inner()),
        None => Ok(default),
    };
    let spanned_size = |v: &Option<Spanned<Size>>| v.as_ref().map(|s| (s.span(), s.get_ref().0));
    let size = |v: &Option<Spanned<Size>>, default: u64| spanned_size(v).map_or(default, |s| s.1);
    let time = |v: Option<Spanned<Duration>>, default: Nanos| v.map_or(default, |t| t.into_inner().0);
    let posted_data_at = raw.posted_data.as_ref().map_or(table.clone(), |s| s.span());
    let spec = PcieSpec {
        ack_every: count(raw.ack_every, "ack_every", d.ack_every)?,
        dllp_bytes: size(&raw.dllp_bytes, d.dllp_bytes),
        posted_headers: count(raw.posted_headers, "posted_headers", d.posted_headers)?,
        posted_data: count(raw.posted_data, "posted_data", d.posted_data)?,
        nonposted_headers: count(raw.nonposted_headers, "nonposted_headers", d.nonposted_headers)?,
        credit_return: time(raw.credit_return, d.credit_return),
        cache_line: size(&raw.cache_line, d.cache_line),
        rmw: time(raw.rmw, d.rmw),
        read_latency: time(raw.read_latency, d.read_latency),
        tags: count(raw.tags, "tags", d.tags)?,
        reads_per_transfer: match raw.reads_per_transfer {
            Some(n) => Some(count(Some(n), "reads_per_transfer", 1)?),
            None => d.reads_per_transfer,
        },
        completion_buffer: size(&raw.completion_buffer, d.completion_buffer),
        descriptor: size(&raw.descriptor, d.descriptor),
        completion_entry: size(&raw.completion_entry, d.completion_entry),
        arbitrate: match raw.arbitrate.as_ref().map(|a| (a.span(), a.get_ref().as_str())) {
            None | Some((_, "transfer")) => Arbitration::Transfer,
            Some((_, "tenant")) => Arbitration::Tenant,
            Some((span, other)) => {
                return Err(src.at(
                    span,
                    Some("arbitrate"),
                    format!("unknown arbitration `{other}`: use transfer or tenant"),
                ))
            }
        },
    };
    if let Some((span, 0)) = spanned_size(&raw.cache_line) {
        return Err(src.at(span, Some("cache_line"), "must be greater than zero"));
    }
    let largest_write = max_payload.max(spec.completion_entry);
    if (spec.posted_data as u64) * CREDIT_BYTES < largest_write {
        let span = posted_data_at;
        return Err(src.at(
            span,
            Some("posted_data"),
            format!(
                "{} credits of 16 B cannot hold one write TLP of {largest_write} B: the link would stall",
                spec.posted_data
            ),
        ));
    }
    let largest_read = max_read_request.max(spec.descriptor);
    if spec.completion_buffer < largest_read {
        let span = spanned_size(&raw.completion_buffer).map_or(table, |s| s.0);
        return Err(src.at(
            span,
            Some("completion_buffer"),
            format!(
                "{} B cannot hold one read of {largest_read} B (max_read_request or descriptor): reads would stall",
                spec.completion_buffer
            ),
        ));
    }
    Ok(spec)
}
