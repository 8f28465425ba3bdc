//! Packet offloads on IPv4: `ip-fragment` (RFC 791 fragmentation) and
//! `tcp-segment` (TCP segmentation offload, TSO), on `etherparse` for
//! parsing and writing headers and computing checksums.
//!
//! Input is IPv4 packets back to back, each delimited by its header's total
//! length; a bad header (version, length, header checksum) or a truncated
//! packet is an error that names the packet's byte offset. Output is every
//! packet's fragments (or segments) back to back, in input order.
//!
//! The fragmentation and segmentation loops are written by hand: no crate
//! fragments IPv4 packets or segments TCP (etherparse parses, builds and
//! defragments, nothing more). Neither operator splits into subtasks: a
//! subtask is planned from the input's length alone, and packet boundaries
//! need the input.
//!
//! Headers written anew (fragments, segments) come from etherparse's
//! [`Ipv4Header`], which has no field for the reserved flag bit (RFC 791:
//! must be zero), so it is written as zero.

use crate::operator::{OpError, Operator};
use etherparse::checksum::Sum16BitWords;
use etherparse::{
    IpFragOffset, IpHeaders, IpNumber, Ipv4Header, Ipv4HeaderSlice, PacketBuilder, TcpHeader,
    TcpOptionElement, TcpSlice,
};
use isola_core::params::Params;

/// Smallest `mtu`: RFC 791's minimum, a 60-byte header and 8 data bytes.
pub const MIN_MTU: u64 = 68;

/// Largest `mss`: an IPv4 packet of 65535 bytes with minimal headers.
pub const MAX_MSS: u64 = 65_495;

/// One checked IPv4 packet of an input.
pub(crate) struct Packet<'a> {
    /// Offset of the packet in the input, for errors.
    pub(crate) at: usize,
    /// The whole packet (header and payload).
    pub(crate) bytes: &'a [u8],
    /// Its header, options included.
    pub(crate) header: Ipv4HeaderSlice<'a>,
    /// What follows the header, up to the total length.
    pub(crate) payload: &'a [u8],
}

/// The IPv4 packets of `input`, back to back: each checked (version, header
/// length, total length, header checksum); the first bad one is an error and
/// ends the iteration.
fn packets<'a>(op: &'static str, input: &'a [u8]) -> impl Iterator<Item = Result<Packet<'a>, OpError>> + 'a {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let rest = input.get(at..).filter(|r| !r.is_empty())?;
        let packet = packet_at(op, rest, at);
        at = match &packet {
            Ok(p) => at + p.bytes.len(),
            Err(_) => input.len(),
        };
        Some(packet)
    })
}

/// The packet at the start of `rest` (which starts `at` bytes into the input).
pub(crate) fn packet_at<'a>(op: &'static str, rest: &'a [u8], at: usize) -> Result<Packet<'a>, OpError> {
    let bad = |reason: String| OpError::Input {
        op,
        reason: format!("IPv4 packet at byte {at}: {reason}"),
    };
    let header = Ipv4HeaderSlice::from_slice(rest).map_err(|e| bad(e.to_string()))?;
    let (header_len, total) = (header.slice().len(), usize::from(header.total_len()));
    if total < header_len {
        return Err(bad(format!(
            "total length {total} is shorter than its {header_len}-byte header"
        )));
    }
    let bytes = rest.get(..total).ok_or_else(|| {
        bad(format!(
            "truncated: total length {total} but {} bytes left",
            rest.len()
        ))
    })?;
    // A header whose checksum is right sums to 0xffff (complement 0).
    if Sum16BitWords::new().add_slice(header.slice()).ones_complement() != 0 {
        return Err(bad(format!(
            "bad header checksum {:#06x}",
            header.header_checksum()
        )));
    }
    Ok(Packet {
        at,
        bytes,
        header,
        payload: bytes.get(header_len..).unwrap_or_default(),
    })
}

/// `header` with its total length set and its checksum recomputed, written.
fn write_header(
    op: &'static str,
    mut header: Ipv4Header,
    total: usize,
    out: &mut Vec<u8>,
    max_output: u64,
) -> Result<(), OpError> {
    crate::limits::check_output(op, out.len().saturating_add(total), max_output)?;
    header.total_len = u16::try_from(total).map_err(|_| OpError::Input {
        op,
        reason: format!("a {total}-byte packet is over IPv4's 65535"),
    })?;
    header.header_checksum = header.calc_header_checksum();
    out.extend_from_slice(&header.to_bytes());
    Ok(())
}

/// `ip-fragment`: IPv4 fragmentation (RFC 791 section 3.2) to an MTU.
///
/// A packet of at most `mtu` bytes passes through unchanged. A bigger one is
/// cut into fragments of at most `mtu` bytes whose data, except the last
/// fragment's, is a multiple of 8 bytes; each has the packet's header with
/// its total length, fragment offset and more-fragments flag set and its
/// checksum recomputed. A packet that is itself a fragment is fragmented
/// further: offsets continue from its own, and its last fragment keeps its
/// more-fragments flag. Options go to the first fragment whole and to the
/// others only those with the copy flag (RFC 791, "Options"), padded to a
/// 4-byte multiple. A packet bigger than `mtu` with don't-fragment set is
/// an error, as are malformed options in a packet that must be fragmented.
#[derive(Debug, Clone, Copy)]
pub struct IpFragment {
    mtu: usize,
    max_output: u64,
}

impl IpFragment {
    /// Builds from `mtu` (68 to 65535) and `max_output` (small fragments
    /// multiply the headers: up to 8.5 times the input).
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let mtu = p.u64_in("mtu", MIN_MTU..=u64::from(u16::MAX))? as usize;
        let max_output = crate::limits::max_output(p)?;
        Ok(Box::new(IpFragment { mtu, max_output }))
    }

    /// Appends the fragments of `packet` to `out`.
    fn fragment(&self, packet: &Packet<'_>, out: &mut Vec<u8>) -> Result<(), OpError> {
        let bad = |reason: String| OpError::Input {
            op: "ip-fragment",
            reason: format!("IPv4 packet at byte {}: {reason}", packet.at),
        };
        let header = packet.header.to_header();
        let later_options = copied_options(packet.header.options()).map_err(bad)?;
        let base = usize::from(header.fragment_offset.value()) * 8;
        let data = packet.payload;
        let mut sent = 0usize;
        loop {
            let mut h = header.clone();
            if sent > 0 {
                h.options = later_options
                    .as_slice()
                    .try_into()
                    .map_err(|_| bad(format!("copied options of {} bytes", later_options.len())))?;
            }
            let header_len = h.header_len();
            // At least 8: the MTU is at least 68 and a header at most 60 bytes.
            let room = self.mtu.saturating_sub(header_len) / 8 * 8;
            let len = room.min(data.len() - sent);
            let last = sent + len == data.len();
            let offset = u16::try_from((base + sent) / 8)
                .ok()
                .and_then(|o| IpFragOffset::try_new(o).ok())
                .ok_or_else(|| bad(format!("fragment offset {} is past 65528", base + sent)))?;
            h.fragment_offset = offset;
            h.more_fragments = !last || header.more_fragments;
            write_header("ip-fragment", h, header_len + len, out, self.max_output)?;
            out.extend_from_slice(data.get(sent..sent + len).unwrap_or_default());
            sent += len;
            if last || len == 0 {
                return Ok(());
            }
        }
    }
}

/// The options of `options` that RFC 791 copies into every fragment (copy
/// flag, the top bit of the type, set), padded with end-of-list to a whole
/// number of 4-byte words.
fn copied_options(options: &[u8]) -> Result<Vec<u8>, String> {
    let mut copied = Vec::new();
    let mut i = 0;
    while let Some(&kind) = options.get(i) {
        match kind {
            0 => break,
            1 => i += 1,
            _ => {
                let option = options
                    .get(i + 1)
                    .map(|&len| usize::from(len))
                    .filter(|&len| len >= 2)
                    .and_then(|len| options.get(i..i + len))
                    .ok_or_else(|| format!("malformed IPv4 option {kind} at option byte {i}"))?;
                if kind & 0x80 != 0 {
                    copied.extend_from_slice(option);
                }
                i += option.len();
            }
        }
    }
    copied.resize(copied.len().div_ceil(4) * 4, 0);
    Ok(copied)
}

impl Operator for IpFragment {
    fn name(&self) -> &'static str {
        "ip-fragment"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        // Room for the extra headers of full-size fragments.
        let mut out = Vec::with_capacity(crate::limits::capped_capacity(
            input.len() + input.len() / (self.mtu / 2) * 60,
            self.max_output,
        ));
        for packet in packets("ip-fragment", input) {
            let packet = packet?;
            if packet.bytes.len() <= self.mtu {
                crate::limits::check_output(
                    "ip-fragment",
                    out.len().saturating_add(packet.bytes.len()),
                    self.max_output,
                )?;
                out.extend_from_slice(packet.bytes);
            } else if packet.header.dont_fragment() {
                return Err(OpError::Input {
                    op: "ip-fragment",
                    reason: format!(
                        "IPv4 packet at byte {}: {} bytes with don't-fragment set, over the mtu of {}",
                        packet.at,
                        packet.bytes.len(),
                        self.mtu
                    ),
                });
            } else {
                self.fragment(&packet, &mut out)?;
            }
        }
        Ok(out)
    }
}

/// `tcp-segment`: TCP segmentation offload. Each IPv4+TCP packet's payload
/// is cut into segments of at most `mss` bytes.
///
/// Each segment has the packet's IPv4 header (options included) with its
/// total length set, its identification incremented per segment (wrapping)
/// and its checksum recomputed, and the packet's TCP header (options
/// included) with the sequence number advanced by the payload sent before
/// it, FIN and PSH kept only on the last segment, CWR only on the first, and
/// the checksum computed over the IPv4 pseudo-header, header and payload.
/// Other flags, the acknowledgment number, window and urgent pointer are
/// copied. A packet with at most `mss` payload bytes becomes one segment:
/// itself with both checksums recomputed (the input's TCP checksum is not
/// checked: a stack handing packets to TSO leaves it partial). Not TCP, an
/// IPv4 fragment, a bad TCP header, or a SYN or RST with more than `mss`
/// payload bytes is an error.
#[derive(Debug, Clone, Copy)]
pub struct TcpSegment {
    mss: usize,
    max_output: u64,
}

impl TcpSegment {
    /// Builds from `mss` (1 to 65495) and `max_output` (a small mss
    /// multiplies the headers: up to about 120 times the input at mss 1).
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let mss = p.u64_in("mss", 1..=MAX_MSS)? as usize;
        let max_output = crate::limits::max_output(p)?;
        Ok(Box::new(TcpSegment { mss, max_output }))
    }

    /// Appends the segments of `packet` to `out`.
    fn segment(&self, packet: &Packet<'_>, out: &mut Vec<u8>) -> Result<(), OpError> {
        let bad = |reason: String| OpError::Input {
            op: "tcp-segment",
            reason: format!("IPv4 packet at byte {}: {reason}", packet.at),
        };
        if packet.header.protocol() != IpNumber::TCP {
            return Err(bad(format!("protocol {} is not TCP", packet.header.protocol().0)));
        }
        if packet.header.is_fragmenting_payload() {
            return Err(bad("an IPv4 fragment cannot be segmented".into()));
        }
        let tcp = TcpSlice::from_slice(packet.payload).map_err(|e| bad(e.to_string()))?;
        let (ip, mut th) = (packet.header.to_header(), tcp.to_header());
        let data = tcp.payload();
        if data.len() > self.mss && (th.syn || th.rst) {
            return Err(bad(
                "a SYN or RST with data over the mss cannot be segmented".into()
            ));
        }
        let count = data.len().div_ceil(self.mss).max(1);
        let (fin, psh, cwr) = (th.fin, th.psh, th.cwr);
        for k in 0..count {
            let start = k * self.mss;
            let chunk = data
                .get(start..data.len().min(start + self.mss))
                .unwrap_or_default();
            let (first, last) = (k == 0, k + 1 == count);
            let mut h = ip.clone();
            h.identification = ip.identification.wrapping_add(k as u16);
            th.sequence_number = tcp.sequence_number().wrapping_add(start as u32);
            th.fin = fin && last;
            th.psh = psh && last;
            th.cwr = cwr && first;
            th.checksum = th
                .calc_checksum_ipv4_raw(ip.source, ip.destination, chunk)
                .map_err(|e| bad(e.to_string()))?;
            write_header(
                "tcp-segment",
                h,
                ip.header_len() + th.header_len() + chunk.len(),
                out,
                self.max_output,
            )?;
            out.extend_from_slice(&th.to_bytes());
            out.extend_from_slice(chunk);
        }
        Ok(())
    }
}

impl Operator for TcpSegment {
    fn name(&self) -> &'static str {
        "tcp-segment"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        // Room for the extra headers of full-size segments (a hint: 64 bytes each).
        let mut out = Vec::with_capacity(crate::limits::capped_capacity(
            input.len().saturating_add(input.len() / self.mss * 64),
            self.max_output,
        ));
        for packet in packets("tcp-segment", input) {
            self.segment(&packet?, &mut out)?;
        }
        Ok(out)
    }
}

/// An IPv4 header for sample packets (192.0.2.1 to 198.51.100.7, TTL 64).
fn sample_ip(identification: u16, dont_fragment: bool) -> IpHeaders {
    IpHeaders::Ipv4(
        Ipv4Header {
            identification,
            dont_fragment,
            time_to_live: 64,
            source: [192, 0, 2, 1],
            destination: [198, 51, 100, 7],
            ..Default::default()
        },
        Default::default(),
    )
}

/// Payload bytes per sample packet of at most `max_len` bytes with
/// `headers` bytes of headers (at least 1).
fn per_packet(max_len: usize, headers: usize) -> usize {
    max_len.saturating_sub(headers).max(1)
}

/// The chunks `payload` is carried in (one empty chunk for an empty payload).
fn chunks(payload: &[u8], size: usize) -> Vec<&[u8]> {
    let mut chunks: Vec<&[u8]> = payload.chunks(size).collect();
    if chunks.is_empty() {
        chunks.push(&[]);
    }
    chunks
}

/// `payload` as IPv4 UDP packets of at most `max_len` bytes (at least one),
/// don't-fragment clear: a valid `ip-fragment` input.
pub fn udp_packets(payload: &[u8], max_len: usize) -> Result<Vec<u8>, OpError> {
    let size = per_packet(max_len, Ipv4Header::MIN_LEN + 8);
    let mut out = Vec::with_capacity(payload.len() + payload.len() / size * 28 + 28);
    for (k, chunk) in chunks(payload, size).into_iter().enumerate() {
        PacketBuilder::ip(sample_ip(k as u16, false))
            .udp(4000, 4789)
            .write(&mut out, chunk)
            .map_err(|e| OpError::Input {
                op: "ip-fragment",
                reason: format!("cannot build a sample packet: {e}"),
            })?;
    }
    Ok(out)
}

/// `payload` as the IPv4 TCP packets of one flow, each of at most `max_len`
/// bytes (at least one), with a timestamp option, ACK and PSH on every
/// packet, CWR on the first and FIN on the last: a valid `tcp-segment` input.
pub fn tcp_packets(payload: &[u8], max_len: usize) -> Result<Vec<u8>, OpError> {
    let bad = |e: String| OpError::Input {
        op: "tcp-segment",
        reason: format!("cannot build a sample packet: {e}"),
    };
    let mut tcp = TcpHeader::new(40000, 443, 1_000_000, 65535);
    tcp.set_options(&[
        TcpOptionElement::Noop,
        TcpOptionElement::Noop,
        TcpOptionElement::Timestamp(7, 3),
    ])
    .map_err(|e| bad(e.to_string()))?;
    let size = per_packet(max_len, Ipv4Header::MIN_LEN + tcp.header_len());
    let parts = chunks(payload, size);
    let mut out = Vec::with_capacity(payload.len() + parts.len() * 52);
    let mut seq = tcp.sequence_number;
    for (k, chunk) in parts.iter().enumerate() {
        let mut h = tcp.clone();
        h.sequence_number = seq;
        h.ack = true;
        h.acknowledgment_number = 5000;
        h.psh = true;
        h.cwr = k == 0;
        h.fin = k + 1 == parts.len();
        PacketBuilder::ip(sample_ip(k as u16, true))
            .tcp_header(h)
            .write(&mut out, chunk)
            .map_err(|e| bad(e.to_string()))?;
        seq = seq.wrapping_add(chunk.len() as u32);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copied_options_keep_only_the_copy_flag() {
        // NOP, record route (7, not copied), loose source route (0x83, copied), EOL.
        let options = [1, 7, 3, 4, 0x83, 7, 4, 10, 0, 0, 1, 0];
        assert_eq!(
            copied_options(&options).unwrap(),
            vec![0x83, 7, 4, 10, 0, 0, 1, 0]
        );
        assert_eq!(copied_options(&[1, 1, 1, 0]).unwrap(), Vec::<u8>::new());
        assert!(copied_options(&[0x83, 1, 0, 0]).is_err());
        assert!(copied_options(&[0x83, 9, 0, 0]).is_err());
    }
}
