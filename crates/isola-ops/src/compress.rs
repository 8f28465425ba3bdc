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

use crate::limits::{limit_usize, read_to_end_paced, reserve_within, DecodeError};
use crate::operator::{downcast, part_slice, Carry, OpError, Operator, Splitter};
use crate::watch::{Checkpoint, NeverStop, Watch, WATCH_CHUNK_BYTES};
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

    /// Whether a task's input can be compressed in pieces whose outputs,
    /// concatenated, decode to the input: every concatenable codec, and
    /// raw deflate cut as pigz cuts it (each piece its own dictionary,
    /// sync-flushed, the last one final).
    pub fn splittable(self) -> bool {
        self.concatenable() || self == Codec::Deflate
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

    /// Compresses `input` at `level`, asking `at` between chunks of
    /// [`WATCH_CHUNK_BYTES`] input bytes (LZ4: between its 4 MiB blocks),
    /// each fed to the codec's streaming encoder: the stream is the same
    /// whatever the chunks (an unwatched run is this with [`NeverStop`]).
    fn compress(
        self,
        op: &'static str,
        input: &[u8],
        level: u32,
        at: &mut Checkpoint<'_>,
    ) -> Result<Vec<u8>, OpError> {
        let io = |e: std::io::Error| OpError::Input {
            op,
            reason: e.to_string(),
        };
        match self {
            Codec::Deflate => {
                let e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(level));
                stream_write(e, input, at, flate2::write::DeflateEncoder::finish).map_err(|e| e.or_input(io))
            }
            Codec::Huffman => huffman_only(input, at).map_err(|e| e.or_input(io)),
            Codec::Gzip => {
                let e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
                stream_write(e, input, at, flate2::write::GzEncoder::finish).map_err(|e| e.or_input(io))
            }
            Codec::Lz4 => crate::lz4_frame::compress_paced(input, |done| at.check(done)),
            Codec::Zstd => zstd_compress(input, level as i32, at).map_err(|e| e.or_input(io)),
            Codec::Snappy => {
                // Chunks of WATCH_CHUNK_BYTES are whole Snappy blocks (64
                // KiB each), so the blocks are those of one write.
                let e = snap::write::FrameEncoder::new(Vec::new());
                let mut out = stream_write(e, input, at, |e| {
                    e.into_inner().map_err(|e| std::io::Error::other(e.to_string()))
                })
                .map_err(|e| e.or_input(io))?;
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
        self.decompress_watched(
            input,
            limit,
            &mut Checkpoint::new("decompress", input.len(), &NeverStop),
        )
    }

    /// [`Codec::decompress`], asking `at` after about every
    /// [`WATCH_CHUNK_BYTES`] of output (LZ4: after each block, at most 4
    /// MiB): decoding costs what it makes, so a bomb stops too. A stop is
    /// [`DecodeError::Stopped`].
    pub fn decompress_watched(
        self,
        input: &[u8],
        limit: u64,
        at: &mut Checkpoint<'_>,
    ) -> Result<Vec<u8>, DecodeError> {
        at.check(0)?;
        let mut out = Vec::new();
        match self {
            Codec::Deflate | Codec::Huffman => {
                return inflate_one(input, limit, at, flate2::Decompress::new(false), "deflate")
            }
            Codec::Gzip => {
                let read = std::cell::Cell::new(0);
                let reader = flate2::read::MultiGzDecoder::new(Counted(input, &read));
                read_to_end_paced(reader, &mut out, limit, &mut |made| {
                    Ok(at.after(made, read.get())?)
                })?;
            }
            Codec::Lz4 => {
                return crate::lz4_frame::decompress_paced(input, limit, &mut |made, done| {
                    Ok(at.after(made, done)?)
                })
            }
            Codec::Zstd => return zstd_decompress(input, limit, at),
            Codec::Snappy => {
                let read = std::cell::Cell::new(0);
                let reader = snap::read::FrameDecoder::new(Counted(input, &read));
                read_to_end_paced(reader, &mut out, limit, &mut |made| {
                    Ok(at.after(made, read.get())?)
                })?;
            }
        }
        Ok(out)
    }
}

/// A reader of a byte slice that counts the bytes read from it (the input
/// consumed, for a stop's report).
struct Counted<'a>(&'a [u8], &'a std::cell::Cell<usize>);

impl std::io::Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        self.1.set(self.1.get() + n);
        Ok(n)
    }
}

/// An error about corrupt input.
fn corrupt(what: impl std::fmt::Display) -> DecodeError {
    DecodeError::Corrupt(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        what.to_string(),
    ))
}

/// Decodes one deflate stream with `inflate` (raw RFC 1951, or wrapped as
/// zlib's RFC 1950 or gzip's RFC 1952 one member, as `inflate` was made;
/// `what` names it in errors): it must end with its final block (and its
/// wrapper's trailer, whose checksum zlib-rs checks), and nothing may follow
/// it but the padding bits of its last byte (a flipped final-block bit or a
/// cut is an error, not a shorter output). Each call of the decoder takes at
/// most [`WATCH_CHUNK_BYTES`] of input and makes at most as much output,
/// asking `at` between them.
pub(crate) fn inflate_one(
    input: &[u8],
    limit: u64,
    at: &mut Checkpoint<'_>,
    mut inflate: flate2::Decompress,
    what: &str,
) -> Result<Vec<u8>, DecodeError> {
    use flate2::{FlushDecompress, Status};
    let limit_len = limit_usize(limit);
    let mut out = Vec::new();
    let mut piece = Vec::with_capacity(WATCH_CHUNK_BYTES);
    loop {
        let consumed = usize::try_from(inflate.total_in()).unwrap_or(usize::MAX);
        let rest = input.get(consumed..).unwrap_or_default();
        let given = &rest[..rest.len().min(WATCH_CHUNK_BYTES)];
        piece.clear();
        let status = inflate
            .decompress_vec(given, &mut piece, FlushDecompress::None)
            .map_err(|e| corrupt(format!("corrupt {what} stream: {e}")))?;
        let taken = usize::try_from(inflate.total_in()).unwrap_or(usize::MAX) - consumed;
        if out.len().saturating_add(piece.len()) > limit_len {
            return Err(DecodeError::OverLimit);
        }
        reserve_within(&mut out, piece.len(), limit_len)?;
        out.extend_from_slice(&piece);
        if status == Status::StreamEnd {
            break;
        }
        if piece.is_empty() && taken == 0 {
            // Neither output room nor input was missing: the stream ends
            // without its final block.
            return Err(DecodeError::Corrupt(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("{what} stream cut short (no final block or trailer)"),
            )));
        }
        at.after(piece.len().max(taken), consumed + taken)?;
    }
    let junk = input.len() as u64 - inflate.total_in().min(input.len() as u64);
    if junk > 0 {
        return Err(corrupt(format!(
            "{junk} bytes of junk after the {what} stream's end"
        )));
    }
    Ok(out)
}

/// Why a streamed step stopped: its watch, or the codec.
enum Step {
    /// The watch said stop ([`OpError::Stopped`]).
    Stopped(OpError),
    /// The codec failed.
    Io(std::io::Error),
}

impl From<std::io::Error> for Step {
    fn from(e: std::io::Error) -> Self {
        Step::Io(e)
    }
}

impl From<OpError> for Step {
    fn from(e: OpError) -> Self {
        Step::Stopped(e)
    }
}

impl Step {
    /// The operator error, with codec failures made by `io`.
    fn or_input(self, io: impl FnOnce(std::io::Error) -> OpError) -> OpError {
        match self {
            Step::Stopped(e) => e,
            Step::Io(e) => io(e),
        }
    }
}

/// One piece of a raw deflate stream compressed in pieces, as pigz
/// compresses in parallel: each piece with a dictionary of its own, every
/// piece but the last ending in a sync flush (its blocks not final, the
/// stream byte-aligned), the last ending in the final block. The pieces
/// concatenated are one valid RFC 1951 stream (no back-reference crosses a
/// piece's start); it is a little larger than one pass's, by what the
/// dictionaries would have matched across the cuts.
fn deflate_piece(input: &[u8], level: u32, last: bool) -> std::io::Result<Vec<u8>> {
    deflate_with(
        input,
        flate2::Compress::new(flate2::Compression::new(level), false),
        last,
    )
}

/// Compresses `input` with `c` (raw, zlib- or gzip-wrapped, as it was
/// made): to its end (`last`), or to a sync flush.
pub(crate) fn deflate_with(input: &[u8], mut c: flate2::Compress, last: bool) -> std::io::Result<Vec<u8>> {
    use flate2::{FlushCompress, Status};
    let flush = if last {
        FlushCompress::Finish
    } else {
        FlushCompress::Sync
    };
    let mut out = Vec::with_capacity(input.len() / 2 + 64);
    loop {
        if out.capacity() - out.len() < 64 {
            out.reserve(out.capacity().max(4096));
        }
        let consumed = c.total_in() as usize;
        let status = c
            .compress_vec(&input[consumed..], &mut out, flush)
            .map_err(std::io::Error::other)?;
        let all_in = c.total_in() as usize == input.len();
        // zlib's rule: a flush is complete once a call leaves output room.
        let done = if last {
            status == Status::StreamEnd
        } else {
            all_in && out.len() < out.capacity()
        };
        if done {
            return Ok(out);
        }
    }
}

/// Feeds `input` to the streaming encoder `encoder` in chunks of
/// [`WATCH_CHUNK_BYTES`], asking `at` before each, then `finish`es it.
fn stream_write<W: Write>(
    mut encoder: W,
    input: &[u8],
    at: &mut Checkpoint<'_>,
    finish: impl FnOnce(W) -> std::io::Result<Vec<u8>>,
) -> Result<Vec<u8>, Step> {
    at.each_chunk(input.len(), WATCH_CHUNK_BYTES, |r| {
        encoder.write_all(&input[r]).map_err(Step::Io)
    })?;
    Ok(finish(encoder)?)
}

/// Huffman-only raw deflate on zlib-rs (flate2 does not expose zlib's
/// strategies), fed in chunks of [`WATCH_CHUNK_BYTES`] with no flush
/// between them: the stream of one call.
fn huffman_only(input: &[u8], at: &mut Checkpoint<'_>) -> Result<Vec<u8>, Step> {
    // Window bits -15: raw deflate, no header.
    let config = zlib_rs::DeflateConfig {
        level: 6,
        method: zlib_rs::Method::Deflated,
        window_bits: -15,
        mem_level: 8,
        strategy: zlib_rs::Strategy::HuffmanOnly,
    };
    let mut deflate = zlib_rs::Deflate::new_with_config(config);
    let mut out: Vec<u8> = Vec::with_capacity(zlib_rs::compress_bound(input.len()));
    let failed = |what: &str| Step::Io(std::io::Error::other(format!("zlib-rs deflate failed: {what}")));
    let mut start = 0;
    loop {
        at.check(start)?;
        let end = start.saturating_add(WATCH_CHUNK_BYTES).min(input.len());
        let last = end == input.len();
        let mut chunk = &input[start..end];
        // zlib's flush codes: Z_NO_FLUSH (0) between chunks, Z_FINISH (4)
        // after the last (zlib-rs does not export the type by name).
        let flush: i32 = if last { 4 } else { 0 };
        loop {
            let before = deflate.total_in();
            let status = deflate
                .compress_uninit(
                    chunk,
                    out.spare_capacity_mut(),
                    flush.try_into().map_err(|_| failed("flush code"))?,
                )
                .map_err(|e| failed(e.as_str()))?;
            let taken = usize::try_from(deflate.total_in() - before).unwrap_or(usize::MAX);
            chunk = chunk.get(taken..).unwrap_or_default();
            let written = usize::try_from(deflate.total_out()).unwrap_or(usize::MAX);
            if written > out.capacity() {
                return Err(failed("wrote past its output"));
            }
            // SAFETY: zlib-rs initialised the bytes it reports written,
            // within the spare capacity it was given.
            unsafe { out.set_len(written) };
            match status {
                zlib_rs::Status::StreamEnd => return Ok(out),
                _ if chunk.is_empty() && !last => break,
                zlib_rs::Status::BufError if out.len() == out.capacity() => out.reserve(64 << 10),
                zlib_rs::Status::BufError => return Err(failed("no progress")),
                zlib_rs::Status::Ok => {
                    if out.len() == out.capacity() {
                        out.reserve(64 << 10);
                    }
                }
            }
        }
        start = end;
    }
}

thread_local! {
    /// Zstandard contexts, one per thread and reused: making a context (and
    /// its tables) costs about as much as compressing a few KiB.
    static ZSTD_COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    static ZSTD_DECOMPRESSOR: RefCell<Option<zstd::zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
}

/// One Zstandard frame of `input` at `level`, on this thread's context,
/// with its content size and a content checksum (xxHash-64, as the stock
/// `zstd` writes): the decoder then catches damage the entropy coding lets
/// through. The input is streamed in chunks of [`WATCH_CHUNK_BYTES`],
/// asking `at` before each, with the whole size pledged up front (so the
/// parameters and header are those of a one-shot compression).
fn zstd_compress(input: &[u8], level: i32, at: &mut Checkpoint<'_>) -> Result<Vec<u8>, Step> {
    use zstd::zstd_safe::zstd_sys::ZSTD_EndDirective;
    use zstd::zstd_safe::{InBuffer, OutBuffer, ResetDirective};
    let zstd_err = |code| Step::Io(std::io::Error::other(zstd::zstd_safe::get_error_name(code)));
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
        // A run stopped mid-frame leaves the context in that frame (where
        // parameters cannot change).
        compressor
            .context_mut()
            .reset(ResetDirective::SessionOnly)
            .map_err(zstd_err)?;
        compressor.set_compression_level(level)?;
        let ctx = compressor.context_mut();
        ctx.set_pledged_src_size(Some(input.len() as u64))
            .map_err(zstd_err)?;
        let mut out: Vec<u8> = Vec::with_capacity(zstd::zstd_safe::compress_bound(input.len()));
        let mut start = 0;
        loop {
            at.check(start)?;
            let end = start.saturating_add(WATCH_CHUNK_BYTES).min(input.len());
            let last = end == input.len();
            let directive = if last {
                ZSTD_EndDirective::ZSTD_e_end
            } else {
                ZSTD_EndDirective::ZSTD_e_continue
            };
            let mut src = InBuffer::around(&input[start..end]);
            loop {
                if out.len() == out.capacity() {
                    out.reserve(64 << 10);
                }
                let pos = out.len();
                let mut dst = OutBuffer::around_pos(&mut out, pos);
                let left = ctx
                    .compress_stream2(&mut dst, &mut src, directive)
                    .map_err(zstd_err)?;
                let consumed = src.pos == end - start;
                if last && left == 0 {
                    return Ok(out);
                }
                if !last && consumed {
                    break;
                }
            }
            start = end;
        }
    })
}

/// Decodes every frame of `input` within `limit` bytes of output, on this
/// thread's context, streamed in pieces of at most [`WATCH_CHUNK_BYTES`] of
/// output (asking `at` between them). A frame that states its content size
/// (ours and the stock tool's on files do) is checked against the limit
/// first and its output reserved once when plausible; the decoder checks
/// the stated size and the content checksum when the frame has one.
fn zstd_decompress(input: &[u8], limit: u64, at: &mut Checkpoint<'_>) -> Result<Vec<u8>, DecodeError> {
    use zstd::zstd_safe::{self, InBuffer, OutBuffer, ResetDirective};
    let zstd_err = |code| {
        corrupt(format!(
            "corrupt Zstandard frame: {}",
            zstd_safe::get_error_name(code)
        ))
    };
    let limit_len = limit_usize(limit);
    let mut out = Vec::new();
    let mut piece: Vec<u8> = Vec::with_capacity(WATCH_CHUNK_BYTES);
    let mut rest = input;
    ZSTD_DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let dctx = match &mut *slot {
            Some(d) => d,
            None => slot.insert(zstd_safe::DCtx::try_create().ok_or_else(|| {
                DecodeError::Corrupt(std::io::Error::other("cannot make a Zstandard context"))
            })?),
        };
        while !rest.is_empty() {
            let frame_at = input.len() - rest.len();
            let len = zstd_safe::find_frame_compressed_size(rest).map_err(|code| {
                corrupt(format!(
                    "Zstandard frame at byte {frame_at}: {}",
                    zstd_safe::get_error_name(code)
                ))
            })?;
            let (frame, after) = rest.split_at(len.min(rest.len()));
            let room = limit.saturating_sub(out.len() as u64);
            // A stated size is trusted only as far as it is plausible for the
            // frame's length, so a forged header cannot make us reserve memory
            // the data could never fill.
            let plausible = (frame.len() as u64).saturating_mul(1024).max(1 << 20);
            match zstd_safe::get_frame_content_size(frame) {
                Ok(Some(n)) if n > room => return Err(DecodeError::OverLimit),
                Ok(Some(n)) if n <= plausible => reserve_within(&mut out, n as usize, limit_len)?,
                _ => {}
            }
            // A run stopped mid-frame leaves the context in that frame.
            dctx.reset(ResetDirective::SessionOnly).map_err(zstd_err)?;
            let mut src = InBuffer::around(frame);
            loop {
                piece.clear();
                let before = src.pos;
                let left = {
                    let mut dst = OutBuffer::around(&mut piece);
                    dctx.decompress_stream(&mut dst, &mut src).map_err(zstd_err)?
                };
                if out.len().saturating_add(piece.len()) > limit_len {
                    return Err(DecodeError::OverLimit);
                }
                reserve_within(&mut out, piece.len(), limit_len)?;
                out.extend_from_slice(&piece);
                if left == 0 {
                    break;
                }
                if piece.is_empty() && src.pos == before {
                    return Err(corrupt(format!("Zstandard frame at byte {frame_at} cut short")));
                }
                at.after(piece.len().max(src.pos - before), frame_at + src.pos)?;
            }
            rest = after;
        }
        Ok(out)
    })
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

    fn compress(&self, input: &[u8], watch: &dyn Watch) -> Result<Vec<u8>, OpError> {
        let mut at = Checkpoint::new(self.name, input.len(), watch);
        self.codec.compress(self.name, input, self.level, &mut at)
    }
}

impl Operator for Compress {
    fn name(&self) -> &'static str {
        self.name
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        self.compress(input, &NeverStop)
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        self.codec.splittable().then_some(self as &dyn Splitter)
    }

    /// The codec's streaming encoder, fed chunk by chunk (see
    /// [`Codec`]'s `compress`): `run` is this with [`NeverStop`].
    fn run_watched(&self, input: &[u8], watch: &dyn Watch) -> Result<Vec<u8>, OpError> {
        self.compress(input, watch)
    }

    fn stoppable(&self) -> bool {
        true
    }
}

impl Splitter for Compress {
    fn ordered(&self) -> bool {
        false
    }

    /// Concatenated streams: equivalent to `run`'s stream, not identical.
    fn identical_output(&self) -> bool {
        false
    }

    fn run_part(&self, part: &Subtask, input: &[u8], _: Option<Carry>) -> Result<Carry, OpError> {
        let piece = part_slice(part, input);
        if self.codec == Codec::Deflate {
            let last = part.index + 1 == part.count;
            return deflate_piece(piece, self.level, last)
                .map(|out| Box::new(out) as Carry)
                .map_err(|e| OpError::Input {
                    op: self.name,
                    reason: e.to_string(),
                });
        }
        Ok(Box::new(self.compress(piece, &NeverStop)?))
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
        self.run_watched(input, &NeverStop)
    }

    /// Decodes in pieces of about [`WATCH_CHUNK_BYTES`] of output (LZ4:
    /// of a block, at most 4 MiB), asking `watch` between them: `run` is
    /// this with [`NeverStop`].
    fn run_watched(&self, input: &[u8], watch: &dyn Watch) -> Result<Vec<u8>, OpError> {
        // Every compressor writes at least a header: no bytes is no stream.
        if input.is_empty() {
            return Err(OpError::Input {
                op: self.name,
                reason: "empty input is not a compressed stream".into(),
            });
        }
        let mut at = Checkpoint::new(self.name, input.len(), watch);
        self.codec
            .decompress_watched(input, self.max_output, &mut at)
            .map_err(|e| e.into_op_error(self.name, self.max_output))
    }

    fn stoppable(&self) -> bool {
        true
    }
}
