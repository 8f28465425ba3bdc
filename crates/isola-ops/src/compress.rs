//! Compression: deflate (raw RFC 1951) and gzip (RFC 1952) on `flate2` with
//! the zlib-rs backend, LZ4 (the standard frame format) on `lz4_flex`,
//! Zstandard on `zstd` (libzstd), and Snappy (the framing format) on `snap`.
//! One generic compressor and one generic decompressor, parameterised by the
//! codec.
//!
//! Formats whose streams may be concatenated (LZ4 frames, Zstandard frames,
//! gzip members, Snappy framed streams) split into subtasks that each compress
//! their slice independently; the concatenation is a valid stream that the
//! stock `lz4 -d`, `zstd -d` and `gzip -d` turn back into the original (the
//! tests check it). Raw deflate cannot be concatenated and does not split.
//! Decoders turn corrupt or truncated input into an error, never a panic,
//! with one limit of the Snappy framing format: it has no end marker, so a
//! stream cut exactly between chunks is a valid shorter stream (its per-chunk
//! CRC catches any other damage).

use crate::operator::{downcast, part_slice, Carry, OpError, Operator, Splitter};
use isola_core::params::Params;
use isola_core::Subtask;
use std::io::{Read, Write};

/// A compressed format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// Raw deflate, RFC 1951.
    Deflate,
    /// gzip members, RFC 1952.
    Gzip,
    /// LZ4 frame format (independent blocks).
    Lz4,
    /// Zstandard frames.
    Zstd,
    /// Snappy framing format.
    Snappy,
}

impl Codec {
    /// Whether two streams concatenated form one valid stream.
    pub fn concatenable(self) -> bool {
        !matches!(self, Codec::Deflate)
    }

    /// The compression levels it takes, if any (the default is the
    /// `level` parameter's, in the registry).
    pub fn levels(self) -> Option<std::ops::RangeInclusive<u64>> {
        match self {
            Codec::Deflate | Codec::Gzip => Some(0..=9),
            Codec::Zstd => Some(1..=19),
            Codec::Lz4 | Codec::Snappy => None,
        }
    }

    fn compress(self, input: &[u8], level: u32) -> Result<Vec<u8>, std::io::Error> {
        match self {
            Codec::Deflate => {
                let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(level));
                e.write_all(input)?;
                e.finish()
            }
            Codec::Gzip => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
                e.write_all(input)?;
                e.finish()
            }
            Codec::Lz4 => {
                let info =
                    lz4_flex::frame::FrameInfo::new().block_mode(lz4_flex::frame::BlockMode::Independent);
                let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
                e.write_all(input)?;
                e.finish().map_err(std::io::Error::other)
            }
            Codec::Zstd => zstd::bulk::compress(input, level as i32),
            Codec::Snappy => {
                let mut e = snap::write::FrameEncoder::new(Vec::new());
                e.write_all(input)?;
                e.into_inner().map_err(|e| std::io::Error::other(e.to_string()))
            }
        }
    }

    fn decompress(self, input: &[u8]) -> Result<Vec<u8>, std::io::Error> {
        let mut out = Vec::new();
        match self {
            Codec::Deflate => {
                flate2::read::DeflateDecoder::new(input).read_to_end(&mut out)?;
            }
            Codec::Gzip => {
                flate2::read::MultiGzDecoder::new(input).read_to_end(&mut out)?;
            }
            Codec::Lz4 => {
                // One frame after another until the input is used up; each
                // must be complete (lz4_flex ends a frame quietly at end of
                // input, even without its end mark).
                let mut rest = input;
                while !rest.is_empty() {
                    let len = lz4_frame_len(rest)?;
                    lz4_flex::frame::FrameDecoder::new(&rest[..len]).read_to_end(&mut out)?;
                    rest = &rest[len..];
                }
            }
            Codec::Zstd => {
                out = zstd::stream::decode_all(input)?;
            }
            Codec::Snappy => {
                snap::read::FrameDecoder::new(input).read_to_end(&mut out)?;
            }
        }
        Ok(out)
    }
}

/// Length of the LZ4 frame (or skippable frame) at the start of `bytes`, by
/// walking its structure (LZ4 Frame Format 1.6: header, blocks, end mark,
/// optional checksums); an error if it is cut short or not a frame.
/// Written by hand because lz4_flex accepts a frame whose end is missing.
fn lz4_frame_len(bytes: &[u8]) -> Result<usize, std::io::Error> {
    let short = || std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "LZ4 frame cut short");
    let u32_at = |at: usize| -> Result<u32, std::io::Error> {
        let b = bytes.get(at..at + 4).ok_or_else(short)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let magic = u32_at(0)?;
    if (0x184D_2A50..=0x184D_2A5F).contains(&magic) {
        let len = 8 + u32_at(4)? as usize;
        return if bytes.len() >= len { Ok(len) } else { Err(short()) };
    }
    if magic != 0x184D_2204 {
        return Err(std::io::Error::other("not an LZ4 frame (bad magic number)"));
    }
    let flg = *bytes.get(4).ok_or_else(short)?;
    let (block_checksum, content_size, content_checksum, dict_id) =
        (flg & 0x10 != 0, flg & 0x08 != 0, flg & 0x04 != 0, flg & 0x01 != 0);
    // Magic, FLG, BD, optional content size and dictionary id, header checksum.
    let mut at = 4 + 2 + if content_size { 8 } else { 0 } + if dict_id { 4 } else { 0 } + 1;
    loop {
        let size = u32_at(at)?;
        at += 4;
        if size == 0 {
            break;
        }
        at += (size & 0x7FFF_FFFF) as usize + if block_checksum { 4 } else { 0 };
    }
    at += if content_checksum { 4 } else { 0 };
    if bytes.len() < at {
        return Err(short());
    }
    Ok(at)
}

/// Compresses with a codec.
#[derive(Debug)]
pub struct Compress {
    name: &'static str,
    codec: Codec,
    level: u32,
}

impl Compress {
    /// Builds `name` for `codec`, reading `level` if the codec has levels.
    pub fn build(name: &'static str, codec: Codec, p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let level = match codec.levels() {
            Some(range) => p.u64_in("level", range)? as u32,
            None => 0,
        };
        Ok(Box::new(Compress { name, codec, level }))
    }

    fn compress(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        self.codec
            .compress(input, self.level)
            .map_err(|e| OpError::Input {
                op: self.name,
                reason: e.to_string(),
            })
    }
}

impl Operator for Compress {
    fn name(&self) -> &'static str {
        self.name
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        self.compress(input)
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        self.codec.concatenable().then_some(self as &dyn Splitter)
    }
}

impl Splitter for Compress {
    fn ordered(&self) -> bool {
        false
    }

    fn run_part(&self, part: &Subtask, input: &[u8], _: Option<Carry>) -> Result<Carry, OpError> {
        Ok(Box::new(self.compress(part_slice(part, input))?))
    }

    fn reassemble(&self, _input_len: usize, parts: Vec<Carry>) -> Result<Vec<u8>, OpError> {
        let parts: Vec<Vec<u8>> = parts
            .into_iter()
            .map(|c| downcast(self.name, c))
            .collect::<Result<_, _>>()?;
        Ok(parts.concat())
    }
}

/// Decompresses a codec's stream (concatenated streams included).
#[derive(Debug)]
pub struct Decompress {
    name: &'static str,
    codec: Codec,
}

impl Decompress {
    /// Builds `name` for `codec`.
    pub fn new(name: &'static str, codec: Codec) -> Self {
        Decompress { name, codec }
    }
}

impl Operator for Decompress {
    fn name(&self) -> &'static str {
        self.name
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        self.codec.decompress(input).map_err(|e| OpError::Input {
            op: self.name,
            reason: format!("corrupt or truncated stream: {e}"),
        })
    }
}
