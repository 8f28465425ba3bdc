//! A tenant's WebAssembly kernel tried on packets without a daemon
//! (`isola kernel`): the packets read from files or a reader, raw or as
//! hexadecimal text ([`read_packets`]), run in order on one instance of
//! the kernel as an isolad worker runs them ([`run`]), and each packet's
//! outcome as a record for scripts ([`Record`]) or a table for people
//! ([`table`]).

use super::FlowKernel;
use anyhow::{anyhow, bail, Context};
use isola_kernels::{KernelError, KernelLimits, KernelOutput};
use serde::Serialize;
use std::io::Read;
use std::path::{Path, PathBuf};

/// One packet and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// Its file (and line, as hex text), or `stdin`.
    pub from: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// What one packet's run came to.
pub type TrialResult = Result<KernelOutput, KernelError>;

/// The packets, in order: each of `files` (each a packet, or with `hex`
/// one a line), or without files all of `stdin` (one packet, or one a
/// line); none larger than the kernel's memory under `limits`.
pub fn read_packets(
    files: &[PathBuf],
    stdin: &mut dyn Read,
    hex: bool,
    limits: KernelLimits,
) -> anyhow::Result<Vec<Packet>> {
    // A packet larger than the kernel's memory cannot be copied in; hex
    // text takes up to three characters a byte.
    let raw_limit = limits.memory_bytes;
    let hex_limit = raw_limit.saturating_mul(3).saturating_add(4096);
    let limit = if hex { hex_limit } else { raw_limit };
    let mut sources = Vec::new();
    if files.is_empty() {
        let mut bytes = Vec::new();
        stdin
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .context("stdin: cannot read")?;
        if bytes.len() as u64 > limit {
            bail!("stdin: more than {limit} bytes{}", too_large_hint(hex));
        }
        sources.push(("stdin".to_string(), bytes));
    } else {
        for file in files {
            let bytes = isola_model::input::read_bounded(file, limit).map_err(|e| {
                let hint = if e.contains("limit of") {
                    too_large_hint(hex)
                } else {
                    ""
                };
                anyhow!("--packet {}: {e}{hint}", file.display())
            })?;
            sources.push((file.display().to_string(), bytes));
        }
    }
    let mut packets = Vec::new();
    for (from, bytes) in sources {
        if hex {
            packets.extend(hex_packets(&from, &bytes)?);
        } else {
            packets.push(Packet { from, bytes });
        }
    }
    if packets.is_empty() {
        bail!("no packets: the --hex input has no packet lines");
    }
    Ok(packets)
}

/// Why a packet file may be refused for its size.
fn too_large_hint(hex: bool) -> &'static str {
    if hex {
        " (hex text of at most three characters a byte of the kernel's memory, --kernel-memory)"
    } else {
        " (a packet is at most the kernel's memory, --kernel-memory)"
    }
}

/// The packets of hex text `bytes` from `from`, one a line: spaces between
/// digits allowed, blank lines and lines starting with `#` skipped; an
/// error names the line and column.
pub fn hex_packets(from: &str, bytes: &[u8]) -> anyhow::Result<Vec<Packet>> {
    let text = std::str::from_utf8(bytes).map_err(|e| anyhow!("{from}: not hex text: {e}"))?;
    let mut packets = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let at = format!("{from}:{}", n + 1);
        let mut packet = Vec::with_capacity(line.len() / 2);
        let mut high: Option<u8> = None;
        for (col, c) in line.chars().enumerate() {
            if c.is_whitespace() {
                if high.is_some() {
                    bail!("{at}:{}: a byte needs two hex digits", col + 1);
                }
                continue;
            }
            let Some(d) = c.to_digit(16) else {
                bail!("{at}:{}: `{c}` is not a hex digit", col + 1);
            };
            let d = d as u8;
            match high.take() {
                Some(h) => packet.push(h << 4 | d),
                None => high = Some(d),
            }
        }
        if high.is_some() {
            bail!("{at}: an odd number of hex digits (a byte needs two)");
        }
        packets.push(Packet {
            from: at,
            bytes: packet,
        });
    }
    Ok(packets)
}

/// Loads the kernel at `path` under `limits` with isolad's own loader and
/// runs each packet on its one instance, in order (a stopped packet
/// replaces the instance by a fresh one, as in isolad).
pub fn run(path: &Path, limits: KernelLimits, packets: &[Packet]) -> anyhow::Result<Vec<TrialResult>> {
    let kernel = FlowKernel::wasm(path, limits).map_err(|e| anyhow!(e))?;
    packets
        .iter()
        .map(|p| kernel.run_wasm(&p.bytes).context("not a WebAssembly kernel"))
        .collect()
}

/// Lowercase hex, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes as a record shows them.
#[derive(Debug, Clone, Serialize)]
pub struct Bytes {
    /// In hex.
    pub hex: String,
    /// Their count.
    pub len: usize,
}

/// A DMA write a kernel asked for.
#[derive(Debug, Clone, Serialize)]
pub struct DmaRecord {
    /// The bytes to write, in hex.
    pub hex: String,
    /// Their count.
    pub len: usize,
    /// Where in the tenant's host window.
    pub offset: u64,
}

/// Why a packet was stopped.
#[derive(Debug, Clone, Serialize)]
pub struct Stopped {
    /// The error's stable code.
    pub code: u32,
    /// Its name.
    pub name: &'static str,
    /// What happened.
    pub reason: String,
    /// Whether the kernel's instance was replaced by a fresh one.
    pub restarted: bool,
}

/// One packet's outcome for scripts: a line of `isola kernel --json`
/// (fields in the order of their names).
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    /// The packet's length.
    pub bytes: usize,
    /// The DMA writes it asked for.
    pub dma: Vec<DmaRecord>,
    /// Where it came from.
    pub from: String,
    /// Fuel it used (none when stopped).
    pub fuel_used: Option<u64>,
    /// Whether it ran to its end.
    pub ok: bool,
    /// Its number, from 1.
    pub packet: usize,
    /// Its reply, if it had one.
    pub reply: Option<Bytes>,
    /// Why it was stopped, if it was.
    pub stopped: Option<Stopped>,
}

impl Record {
    /// Packet `n`'s (from 1) record: `p` and its outcome `r`.
    pub fn new(n: usize, p: &Packet, r: &TrialResult) -> Record {
        let mut record = Record {
            bytes: p.bytes.len(),
            dma: Vec::new(),
            from: p.from.clone(),
            fuel_used: None,
            ok: r.is_ok(),
            packet: n,
            reply: None,
            stopped: None,
        };
        match r {
            Ok(out) => {
                record.fuel_used = Some(out.fuel_used);
                record.reply = out.reply.as_deref().map(|b| Bytes {
                    hex: hex(b),
                    len: b.len(),
                });
                record.dma = out
                    .dma
                    .iter()
                    .map(|(offset, b)| DmaRecord {
                        hex: hex(b),
                        len: b.len(),
                        offset: *offset,
                    })
                    .collect();
            }
            Err(e) => {
                record.stopped = Some(Stopped {
                    code: e.code(),
                    name: e.name(),
                    reason: e.to_string(),
                    restarted: e.restarts_kernel(),
                });
            }
        }
        record
    }
}

/// The replies' bytes, concatenated in packet order (a packet without a
/// reply, or stopped, adds nothing).
pub fn replies(results: &[TrialResult]) -> Vec<u8> {
    results
        .iter()
        .filter_map(|r| r.as_ref().ok()?.reply.as_deref())
        .flatten()
        .copied()
        .collect()
}

/// The rows a person reads, then a line for each stopped packet.
pub fn table(packets: &[Packet], results: &[TrialResult]) -> String {
    let mut notes = String::new();
    let rows: Vec<Vec<String>> = packets
        .iter()
        .zip(results)
        .enumerate()
        .map(|(i, (p, r))| {
            let n = i + 1;
            match r {
                Ok(out) => vec![
                    n.to_string(),
                    p.from.clone(),
                    p.bytes.len().to_string(),
                    out.fuel_used.to_string(),
                    "ok".into(),
                    out.reply.as_deref().map_or("none".into(), preview),
                    dma_summary(&out.dma),
                ],
                Err(e) => {
                    notes.push_str(&format!(
                        "packet {n} stopped ({}, code {}): {e}{}\n",
                        e.name(),
                        e.code(),
                        if e.restarts_kernel() {
                            "; its instance was replaced by a fresh one"
                        } else {
                            ""
                        }
                    ));
                    vec![
                        n.to_string(),
                        p.from.clone(),
                        p.bytes.len().to_string(),
                        "-".into(),
                        format!("stopped: {} ({})", e.name(), e.code()),
                        "-".into(),
                        "-".into(),
                    ]
                }
            }
        })
        .collect();
    let mut out = isola_report::text::table_aligned(
        &[
            "packet",
            "from",
            "bytes",
            "fuel",
            "outcome",
            "reply",
            "dma writes",
        ],
        &rows,
        |col| matches!(col, 2 | 3),
    );
    out.push_str(&notes);
    out
}

/// Bytes of a reply shown in the table.
const PREVIEW_BYTES: usize = 24;

/// A reply for the table: its length, then its first bytes as an escaped
/// string if it is text, in hex otherwise.
fn preview(reply: &[u8]) -> String {
    let shown = &reply[..reply.len().min(PREVIEW_BYTES)];
    let more = if reply.len() > shown.len() { "…" } else { "" };
    let text = shown
        .iter()
        .all(|&b| b.is_ascii_graphic() || b == b' ' || b == b'\n' || b == b'\t');
    let body = if reply.is_empty() {
        String::new()
    } else if text {
        format!(" \"{}{more}\"", shown.escape_ascii())
    } else {
        format!(" {}{more}", hex(shown))
    };
    format!("{} B{body}", reply.len())
}

/// A packet's DMA write requests for the table: length and offset of each
/// (the first three, then how many more).
fn dma_summary(dma: &[(u64, Vec<u8>)]) -> String {
    if dma.is_empty() {
        return "none".into();
    }
    let mut parts: Vec<String> = dma
        .iter()
        .take(3)
        .map(|(offset, bytes)| format!("{} B at {offset}", bytes.len()))
        .collect();
    if dma.len() > 3 {
        parts.push(format!("{} more", dma.len() - 3));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_lines_are_packets_and_mistakes_are_placed() {
        let ps = hex_packets("f", b"# a comment\n68 65 6c6c 6f\n\nff00\n").unwrap();
        assert_eq!(ps.len(), 2);
        assert_eq!(ps[0].bytes, b"hello");
        assert_eq!(ps[0].from, "f:2");
        assert_eq!(ps[1].bytes, [0xff, 0]);
        assert_eq!(ps[1].from, "f:4");
        let e = hex_packets("f", b"00\n0g\n").unwrap_err().to_string();
        assert_eq!(e, "f:2:2: `g` is not a hex digit");
        let e = hex_packets("f", b"abc\n").unwrap_err().to_string();
        assert!(e.starts_with("f:1: an odd number"), "{e}");
        let e = hex_packets("f", b"a bc\n").unwrap_err().to_string();
        assert!(e.starts_with("f:1:2: a byte needs two"), "{e}");
    }

    #[test]
    fn previews_show_text_escaped_and_binary_in_hex() {
        assert_eq!(preview(b"hi\n"), "3 B \"hi\\n\"");
        assert_eq!(preview(&[1, 2]), "2 B 0102");
        assert_eq!(preview(b""), "0 B");
        assert_eq!(preview(&[b'a'; 30]), format!("30 B \"{}…\"", "a".repeat(24)));
        assert_eq!(
            dma_summary(&vec![(0, vec![0; 4]); 5]),
            "4 B at 0, 4 B at 0, 4 B at 0, 2 more"
        );
    }
}
