//! What `isola load udp` puts in a datagram beyond random bytes, for
//! kernels that read more than bytes (DPUBench's end-to-end programs):
//!
//! - `--frame ipv4`: each datagram is a whole IPv4/UDP packet (20-byte
//!   IPv4 header with its checksum, 8-byte UDP header without checksum,
//!   then the payload), carrying its flow's own 5-tuple (the flow socket's
//!   address and port, the destination's, protocol 17): the raw packet a
//!   DPU's server reads its 5-tuple from, tunnelled whole in the datagram.
//!   `--size` is then the IPv4 packet's size (at least 28 bytes).
//! - `--payloads FILE`: the application payload of packet k (counting
//!   every packet sent, over all flows) starts with line k mod n of FILE
//!   (lines may write bytes as `\xHH`, and `\r`, `\n`, `\t`, `\\`); the
//!   rest of the payload is the random bytes. A head longer than the room
//!   left is cut.

use anyhow::{bail, Context};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

/// Bytes of the IPv4 and UDP headers `--frame ipv4` writes.
pub const IPV4_UDP_HEADER: usize = 28;

/// Largest `--payloads` file.
const MAX_PAYLOADS_FILE: u64 = 16 << 20;

/// A flow's IPv4 source and destination addresses and UDP ports.
type Tuple = ([u8; 4], [u8; 4], u16, u16);

/// Builds each datagram from the random bytes, the flow's header and the
/// packet's payload head.
#[derive(Debug)]
pub struct Framer {
    /// Per flow: its IPv4 source and destination and ports, if framed.
    tuples: Option<Vec<Tuple>>,
    heads: Vec<Vec<u8>>,
    out: Vec<u8>,
}

impl Framer {
    /// The framing of flows bound at `locals` sending to `to`: IPv4
    /// headers if `ipv4`, payload heads from `payloads`.
    pub fn new(
        ipv4: bool,
        payloads: Option<&Path>,
        locals: &[SocketAddr],
        to: SocketAddr,
    ) -> anyhow::Result<Framer> {
        let tuples = if ipv4 {
            let IpAddr::V4(dst) = to.ip() else {
                bail!("--frame ipv4: --to {to} is not an IPv4 address");
            };
            let tuples = locals
                .iter()
                .map(|l| match l.ip() {
                    IpAddr::V4(src) => Ok((src.octets(), dst.octets(), l.port(), to.port())),
                    IpAddr::V6(_) => bail!("--frame ipv4: a flow bound at {l} is not IPv4"),
                })
                .collect::<anyhow::Result<_>>()?;
            Some(tuples)
        } else {
            None
        };
        let heads = match payloads {
            Some(path) => read_heads(path)?,
            None => Vec::new(),
        };
        Ok(Framer {
            tuples,
            heads,
            out: Vec::new(),
        })
    }

    /// The datagram of packet `k` (counted over all flows) of flow `flow`,
    /// `random.len()` bytes long.
    pub fn frame(&mut self, flow: usize, k: u64, random: &[u8]) -> &[u8] {
        self.out.clear();
        self.out.extend_from_slice(random);
        let mut at = 0;
        if let Some((src, dst, sport, dport)) = self.tuples.as_ref().and_then(|t| t.get(flow)) {
            if self.out.len() >= IPV4_UDP_HEADER {
                let header = ipv4_udp_header(*src, *dst, *sport, *dport, self.out.len() as u16, k as u16);
                self.out[..IPV4_UDP_HEADER].copy_from_slice(&header);
                at = IPV4_UDP_HEADER;
            }
        }
        if !self.heads.is_empty() {
            let head = &self.heads[(k % self.heads.len() as u64) as usize];
            let n = head.len().min(self.out.len() - at);
            self.out[at..at + n].copy_from_slice(&head[..n]);
        }
        &self.out
    }
}

/// An IPv4 header (no options, don't fragment, TTL 64, protocol UDP, its
/// checksum) and a UDP header (checksum 0: none, as IPv4 allows) for a
/// packet of `total` bytes.
pub fn ipv4_udp_header(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, total: u16, id: u16) -> [u8; 28] {
    let mut h = [0u8; 28];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&total.to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6] = 0x40;
    h[8] = 64;
    h[9] = 17;
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    let sum: u32 = h[..20]
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    let folded = (sum & 0xffff) + (sum >> 16);
    let folded = (folded & 0xffff) + (folded >> 16);
    h[10..12].copy_from_slice(&(!(folded as u16)).to_be_bytes());
    h[20..22].copy_from_slice(&sport.to_be_bytes());
    h[22..24].copy_from_slice(&dport.to_be_bytes());
    h[24..26].copy_from_slice(&total.saturating_sub(20).to_be_bytes());
    h
}

/// The payload heads of `path`, one a line (see the module docs).
fn read_heads(path: &Path) -> anyhow::Result<Vec<Vec<u8>>> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_PAYLOADS_FILE + 1).read_to_string(&mut text))
        .with_context(|| format!("--payloads: cannot read {}", path.display()))?;
    if text.len() as u64 > MAX_PAYLOADS_FILE {
        bail!("--payloads: {} is over {MAX_PAYLOADS_FILE} bytes", path.display());
    }
    let heads = text
        .lines()
        .enumerate()
        .map(|(n, line)| {
            unescape(line).map_err(|e| anyhow::anyhow!("--payloads: {} line {}: {e}", path.display(), n + 1))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if heads.is_empty() {
        bail!("--payloads: {} has no lines", path.display());
    }
    Ok(heads)
}

/// `line` with `\xHH`, `\r`, `\n`, `\t` and `\\` read as the bytes they name.
pub fn unescape(line: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(line.len());
    let mut bytes = line.bytes();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'r') => out.push(b'\r'),
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(b'\\') => out.push(b'\\'),
            Some(b'x') => {
                let hex: Vec<u8> = bytes.by_ref().take(2).collect();
                let v = std::str::from_utf8(&hex)
                    .ok()
                    .filter(|h| h.len() == 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or("`\\x` takes two hex digits")?;
                out.push(v);
            }
            Some(c) => return Err(format!("unknown escape `\\{}`", c as char)),
            None => return Err("a lone `\\` at the end".into()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_as_ipv4_udp_with_a_good_checksum() {
        let locals = ["127.0.0.1:4000".parse().unwrap()];
        let to: SocketAddr = "127.0.0.2:9000".parse().unwrap();
        let mut f = Framer::new(true, None, &locals, to).unwrap();
        let d = f.frame(0, 5, &[0xaa; 100]).to_vec();
        // etherparse, a stock parser, reads it back: lengths, ports,
        // addresses, and (checked by hand) the header checksum.
        let (ip, rest) = etherparse::Ipv4Header::from_slice(&d).unwrap();
        assert_eq!(ip.total_len, 100);
        assert_eq!(ip.calc_header_checksum(), ip.header_checksum);
        assert_eq!((ip.source, ip.destination), ([127, 0, 0, 1], [127, 0, 0, 2]));
        let (udp, payload) = etherparse::UdpHeader::from_slice(rest).unwrap();
        assert_eq!(
            (udp.source_port, udp.destination_port, udp.length),
            (4000, 9000, 80)
        );
        assert_eq!(payload, &[0xaa; 72][..]);
    }

    #[test]
    fn heads_take_turns_and_are_cut_to_the_room() {
        let dir = std::env::temp_dir().join(format!("isola-heads-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("p");
        std::fs::write(&file, "GET / HTTP/1.1\\r\\n\n\\x16\\x03\\x01\n").unwrap();
        let mut f = Framer::new(false, Some(&file), &[], "127.0.0.1:1".parse().unwrap()).unwrap();
        assert_eq!(f.frame(0, 0, &[0; 20]), b"GET / HTTP/1.1\r\n\0\0\0\0");
        assert_eq!(f.frame(0, 1, &[0; 5]), b"\x16\x03\x01\0\0");
        assert_eq!(f.frame(0, 2, &[0; 4]), b"GET ");
        std::fs::write(&file, "bad \\q\n").unwrap();
        let e = Framer::new(false, Some(&file), &[], "127.0.0.1:1".parse().unwrap()).unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
