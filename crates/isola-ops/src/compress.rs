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
//! Decoders turn corrupt or truncated input into an error, never a panic.

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

    /// The compression levels it takes, and its default, if any.
    pub fn levels(self) -> Option<(std::ops::RangeInclusive<u64>, u64)> {
        match self {
            Codec::Deflate | Codec::Gzip => Some((0..=9, 6)),
            Codec::Zstd => Some((1..=19, 3)),
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
                // One frame after another until the input is used up.
                let mut rest = input;
                while !rest.is_empty() {
                    let mut d = lz4_flex::frame::FrameDecoder::new(rest);
                    d.read_to_end(&mut out)?;
                    let used = rest.len() - d.get_ref().len();
                    if used == 0 {
                        return Err(std::io::Error::other("trailing bytes are not an LZ4 frame"));
                    }
                    rest = &rest[used..];
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
            Some((range, _)) => p.u64_in("level", range)? as u32,
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
