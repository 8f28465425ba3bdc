//! Compression: deflate (raw RFC 1951) and gzip (RFC 1952) on `flate2` with
//! the zlib-rs backend, Huffman-only deflate on zlib-rs directly, LZ4 (the standard frame format, see [`crate::lz4_frame`]) on the C liblz4's block codec (lz4-sys),
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
use std::cell::RefCell;
use std::io::{Read, Write};

/// A compressed format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// Raw deflate, RFC 1951.
    Deflate,
    /// Raw deflate with Huffman coding only (no LZ77 matches; zlib's
    /// `Z_HUFFMAN_ONLY` strategy), as DPU compression engines offer for speed.
    Huffman,
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
        !matches!(self, Codec::Deflate | Codec::Huffman)
    }

    /// The compression levels it takes, if any (the default is the
    /// `level` parameter's, in the registry).
    pub fn levels(self) -> Option<std::ops::RangeInclusive<u64>> {
        match self {
            Codec::Deflate | Codec::Gzip => Some(0..=9),
            Codec::Zstd => Some(1..=19),
            Codec::Huffman | Codec::Lz4 | Codec::Snappy => None,
        }
    }

    fn compress(self, input: &[u8], level: u32) -> Result<Vec<u8>, std::io::Error> {
        match self {
            Codec::Deflate => {
                let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(level));
                e.write_all(input)?;
                e.finish()
            }
            Codec::Huffman => {
                // flate2 does not expose zlib's strategies: zlib-rs (its
                // backend) does. Window bits -15: raw deflate, no header.
                let config = zlib_rs::DeflateConfig {
                    level: 6,
                    method: zlib_rs::Method::Deflated,
                    window_bits: -15,
                    mem_level: 8,
                    strategy: zlib_rs::Strategy::HuffmanOnly,
                };
                let mut out = vec![0u8; zlib_rs::compress_bound(input.len())];
                let (packed, rc) = zlib_rs::compress_slice(&mut out, input, config);
                if rc != zlib_rs::ReturnCode::Ok {
                    return Err(std::io::Error::other(format!("zlib-rs deflate failed: {rc:?}")));
                }
                let len = packed.len();
                out.truncate(len);
                Ok(out)
            }
            Codec::Gzip => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
                e.write_all(input)?;
                e.finish()
            }
            Codec::Lz4 => Ok(crate::lz4_frame::compress(input)),
            Codec::Zstd => zstd_compress(input, level as i32),
            Codec::Snappy => {
                let mut e = snap::write::FrameEncoder::new(Vec::new());
                e.write_all(input)?;
                let mut out = e.into_inner().map_err(|e| std::io::Error::other(e.to_string()))?;
                if out.is_empty() {
                    // snap writes nothing for no data; a stream is at least
                    // its stream identifier chunk (framing format 4.1).
                    out.extend_from_slice(b"\xff\x06\x00\x00sNaPpY");
                }
                Ok(out)
            }
        }
    }

    fn decompress(self, input: &[u8]) -> Result<Vec<u8>, std::io::Error> {
        let mut out = Vec::new();
        match self {
            Codec::Deflate | Codec::Huffman => {
                flate2::read::DeflateDecoder::new(input).read_to_end(&mut out)?;
            }
            Codec::Gzip => {
                flate2::read::MultiGzDecoder::new(input).read_to_end(&mut out)?;
            }
            Codec::Lz4 => {
                out = crate::lz4_frame::decompress(input)?;
            }
            Codec::Zstd => {
                out = zstd_decompress(input)?;
            }
            Codec::Snappy => {
                snap::read::FrameDecoder::new(input).read_to_end(&mut out)?;
            }
        }
        Ok(out)
    }
}

thread_local! {
    /// Zstandard contexts, one per thread and reused: making a context (and
    /// its tables) costs about as much as compressing a few KiB.
    static ZSTD_COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    static ZSTD_DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// One Zstandard frame of `input` at `level`, on this thread's context.
fn zstd_compress(input: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    ZSTD_COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let compressor = match &mut *slot {
            Some(c) => c,
            None => slot.insert(zstd::bulk::Compressor::new(level)?),
        };
        compressor.set_compression_level(level)?;
        compressor.compress(input)
    })
}

/// Decodes every frame of `input`. A frame that states its content size
/// (ours and the stock tool's on files do) is decoded in one call on this
/// thread's context straight into the output; others are streamed.
fn zstd_decompress(input: &[u8]) -> std::io::Result<Vec<u8>> {
    use zstd::zstd_safe;
    let mut out = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let len = zstd_safe::find_frame_compressed_size(rest)
            .map_err(|code| std::io::Error::other(zstd_safe::get_error_name(code)))?;
        let (frame, after) = rest.split_at(len.min(rest.len()));
        // A stated size is trusted only as far as it is plausible for the
        // frame's length, so a forged header cannot make us reserve memory
        // the data could never fill (larger ones are streamed instead).
        let plausible = (frame.len() as u64).saturating_mul(1024).max(1 << 20);
        match zstd_safe::get_frame_content_size(frame) {
            Ok(Some(n)) if n <= plausible => {
                let start = out.len();
                out.reserve(n as usize);
                let mut cursor = std::io::Cursor::new(&mut out);
                cursor.set_position(start as u64);
                let written = ZSTD_DECOMPRESSOR.with(|cell| {
                    let mut slot = cell.borrow_mut();
                    let decompressor = match &mut *slot {
                        Some(d) => d,
                        None => slot.insert(zstd::bulk::Decompressor::new()?),
                    };
                    decompressor.decompress_to_buffer(frame, &mut cursor)
                })?;
                if written as u64 != n {
                    return Err(std::io::Error::other("zstd frame content size mismatch"));
                }
            }
            _ => {
                zstd::stream::copy_decode(frame, &mut out)?;
            }
        }
        rest = after;
    }
    Ok(out)
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
        // Every compressor writes at least a header: no bytes is no stream.
        if input.is_empty() {
            return Err(OpError::Input {
                op: self.name,
                reason: "empty input is not a compressed stream".into(),
            });
        }
        self.codec.decompress(input).map_err(|e| OpError::Input {
            op: self.name,
            reason: format!("corrupt or truncated stream: {e}"),
        })
    }
}
