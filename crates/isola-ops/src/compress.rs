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
//! Decoders turn corrupt or truncated input, junk after the last stream and
//! a failed checksum into an [`OpError::Input`], never a panic, with one
//! limit of the Snappy framing format: it has no end marker, so a stream cut
//! exactly between chunks is a valid shorter stream (its per-chunk CRC
//! catches any other damage). The same holds for gzip cut exactly between
//! members. A raw deflate stream must end with its final block: nothing may
//! follow but the padding bits of the last byte.
//!
//! Our LZ4 and Zstandard frames carry content checksums (as the stock tools
//! write them); gzip members carry CRC-32 and Snappy chunks CRC-32C.
//!
//! Every decompressor takes an output limit, the `max_output` parameter
//! (default [`crate::limits::DEFAULT_MAX_OUTPUT`], 256 MiB): decoding
//! proceeds in bounded pieces and stops with [`OpError::Limit`] as soon as
//! the output would pass it, so a small bomb costs at most the limit in
//! memory, never the size it claims.

use crate::limits::{limit_usize, read_to_end_limited, reserve_within, DecodeError};
use crate::operator::{downcast, part_slice, Carry, OpError, Operator, Splitter};
use isola_core::params::Params;
use isola_core::Subtask;
use std::cell::RefCell;
use std::io::Write;

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

    /// Decodes `input` (every stream of it, for concatenable codecs),
    /// stopping once the output would pass `limit` bytes.
    pub fn decompress(self, input: &[u8], limit: u64) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        match self {
            Codec::Deflate | Codec::Huffman => return inflate_raw(input, limit),
            Codec::Gzip => {
                read_to_end_limited(flate2::read::MultiGzDecoder::new(input), &mut out, limit)?;
            }
            Codec::Lz4 => return crate::lz4_frame::decompress(input, limit),
            Codec::Zstd => return zstd_decompress(input, limit),
            Codec::Snappy => {
                read_to_end_limited(snap::read::FrameDecoder::new(input), &mut out, limit)?;
            }
        }
        Ok(out)
    }
}

/// An error about corrupt input.
fn corrupt(what: impl std::fmt::Display) -> DecodeError {
    DecodeError::Corrupt(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        what.to_string(),
    ))
}

/// Decodes one raw deflate stream (RFC 1951): it must end with a final
/// block, and nothing may follow it but the padding bits of its last byte
/// (a flipped final-block bit or a cut is an error, not a shorter output).
fn inflate_raw(input: &[u8], limit: u64) -> Result<Vec<u8>, DecodeError> {
    use flate2::{Decompress, FlushDecompress, Status};
    let ceiling = limit_usize(limit).saturating_add(1);
    let mut inflate = Decompress::new(false);
    let mut out = Vec::new();
    loop {
        if out.len() == out.capacity() {
            let more = out.len().max(64 << 10).min(ceiling.saturating_sub(out.len()));
            if more == 0 {
                return Err(DecodeError::OverLimit);
            }
            reserve_within(&mut out, more, ceiling)?;
        }
        let consumed = usize::try_from(inflate.total_in()).unwrap_or(usize::MAX);
        let rest = input.get(consumed..).unwrap_or_default();
        let before = out.len();
        let status = inflate
            .decompress_vec(rest, &mut out, FlushDecompress::None)
            .map_err(|e| corrupt(format!("corrupt deflate stream: {e}")))?;
        if status == Status::StreamEnd {
            break;
        }
        let progress = out.len() != before || inflate.total_in() as usize != consumed;
        if !progress && out.len() < out.capacity() {
            return Err(DecodeError::Corrupt(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "deflate stream cut short (no final block)",
            )));
        }
    }
    if out.len() as u64 > limit {
        return Err(DecodeError::OverLimit);
    }
    let junk = input.len() as u64 - inflate.total_in().min(input.len() as u64);
    if junk > 0 {
        return Err(corrupt(format!(
            "{junk} bytes of junk after the deflate stream's final block"
        )));
    }
    Ok(out)
}

thread_local! {
    /// Zstandard contexts, one per thread and reused: making a context (and
    /// its tables) costs about as much as compressing a few KiB.
    static ZSTD_COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    static ZSTD_DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// One Zstandard frame of `input` at `level`, on this thread's context,
/// with its content size and a content checksum (xxHash-64, as the stock
/// `zstd` writes): the decoder then catches damage the entropy coding lets
/// through.
fn zstd_compress(input: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    ZSTD_COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let compressor = match &mut *slot {
            Some(c) => c,
            None => {
                let mut c = zstd::bulk::Compressor::new(level)?;
                c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
                slot.insert(c)
            }
        };
        compressor.set_compression_level(level)?;
        compressor.compress(input)
    })
}

/// Decodes every frame of `input` within `limit` bytes of output. A frame
/// that states its content size (ours and the stock tool's on files do) is
/// checked against the limit first, then decoded in one call on this
/// thread's context straight into the output; others are streamed through
/// a bounded reader. Checksums are verified when the frame has one.
fn zstd_decompress(input: &[u8], limit: u64) -> Result<Vec<u8>, DecodeError> {
    use zstd::zstd_safe;
    let mut out = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let len = zstd_safe::find_frame_compressed_size(rest).map_err(|code| {
            corrupt(format!(
                "Zstandard frame at byte {}: {}",
                input.len() - rest.len(),
                zstd_safe::get_error_name(code)
            ))
        })?;
        let (frame, after) = rest.split_at(len.min(rest.len()));
        let room = limit.saturating_sub(out.len() as u64);
        // A stated size is trusted only as far as it is plausible for the
        // frame's length, so a forged header cannot make us reserve memory
        // the data could never fill (larger ones are streamed instead).
        let plausible = (frame.len() as u64).saturating_mul(1024).max(1 << 20);
        match zstd_safe::get_frame_content_size(frame) {
            Ok(Some(n)) if n > room => return Err(DecodeError::OverLimit),
            Ok(Some(n)) if n <= plausible => {
                let start = out.len();
                out.reserve_exact(n as usize);
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
                    return Err(corrupt("zstd frame content size mismatch"));
                }
            }
            _ => {
                let mut decoder = zstd::stream::read::Decoder::with_buffer(frame)?.single_frame();
                let limit_here = out.len() as u64 + room;
                read_to_end_limited(&mut decoder, &mut out, limit_here)?;
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

/// Decompresses a codec's stream (concatenated streams included), making
/// at most `max_output` bytes (see [`crate::limits`]).
#[derive(Debug)]
pub struct Decompress {
    name: &'static str,
    codec: Codec,
    max_output: u64,
}

impl Decompress {
    /// Builds `name` for `codec` with an output limit of `max_output` bytes.
    pub fn new(name: &'static str, codec: Codec, max_output: u64) -> Self {
        Decompress {
            name,
            codec,
            max_output,
        }
    }

    /// Builds `name` for `codec` from the `max_output` parameter.
    pub fn build(name: &'static str, codec: Codec, p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        Ok(Box::new(Decompress::new(
            name,
            codec,
            crate::limits::max_output(p)?,
        )))
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
        self.codec
            .decompress(input, self.max_output)
            .map_err(|e| e.into_op_error(self.name, self.max_output))
    }
}
