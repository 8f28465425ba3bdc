//! Operators shaped like zlib's own calls, for the zlib interposer
//! (`adapters/zlib`): one whole stream in the format zlib's `windowBits`
//! chooses, compressed or decompressed in one task.
//!
//! - `zlib-compress` (`format` = `zlib` | `gzip` | `raw`, `level` 0-9):
//!   the input as one complete stream, as `deflate(Z_FINISH)` makes it
//!   (RFC 1950's header and Adler-32, RFC 1952's one member and CRC-32, or
//!   bare RFC 1951). Not byte-identical to the C zlib's output, but any
//!   inflater decodes it to the input.
//! - `zlib-decompress` (`format` = `zlib` | `gzip` | `raw` | `auto`,
//!   `max_output`): exactly one stream, nothing after it: what one
//!   `inflate(Z_FINISH)` call on a whole stream returns. `auto` reads zlib
//!   or gzip by gzip's magic bytes, as `windowBits` 32 + 15 does. A second
//!   gzip member, trailing bytes, a cut stream or a failed checksum is an
//!   error, so an interposer that falls back to the C zlib on an error
//!   gives that zlib's own answer.
//!
//! Neither splits: a split gzip task would be several members, which a
//! zlib `inflate` stops after the first of.

use crate::compress::{deflate_with, inflate_one};
use crate::limits::DecodeError;
use crate::operator::{OpError, Operator};
use crate::watch::{Checkpoint, NeverStop, Watch};
use isola_core::params::{ParamSpec, Params};

/// A stream's wrapper, as zlib's `windowBits` chooses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrapper {
    /// RFC 1950: a 2-byte header and an Adler-32 trailer (`windowBits` 8-15).
    Zlib,
    /// RFC 1952, one member (`windowBits` 16 + 8-15).
    Gzip,
    /// RFC 1951 alone (`windowBits` -8 to -15).
    Raw,
    /// Decoding only: zlib or gzip, by gzip's magic (`windowBits` 32 + 8-15).
    Auto,
}

impl Wrapper {
    /// Its name in the `format` parameter and in errors.
    pub fn name(self) -> &'static str {
        match self {
            Wrapper::Zlib => "zlib",
            Wrapper::Gzip => "gzip",
            Wrapper::Raw => "raw deflate",
            Wrapper::Auto => "zlib or gzip",
        }
    }

    /// An inflater for it (`Auto` resolved by `input`'s first bytes).
    fn inflater(self, input: &[u8]) -> (flate2::Decompress, Wrapper) {
        match self {
            Wrapper::Zlib => (flate2::Decompress::new(true), self),
            Wrapper::Gzip => (flate2::Decompress::new_gzip(15), self),
            Wrapper::Raw => (flate2::Decompress::new(false), self),
            Wrapper::Auto if input.starts_with(&[0x1f, 0x8b]) => Wrapper::Gzip.inflater(input),
            Wrapper::Auto => Wrapper::Zlib.inflater(input),
        }
    }

    /// A deflater for it at `level` (`Auto` is not a format to write).
    fn deflater(self, level: u32) -> flate2::Compress {
        let level = flate2::Compression::new(level);
        match self {
            Wrapper::Zlib | Wrapper::Auto => flate2::Compress::new(level, true),
            Wrapper::Gzip => flate2::Compress::new_gzip(level, 15),
            Wrapper::Raw => flate2::Compress::new(level, false),
        }
    }
}

/// Every `format` by its name; `auto` (last) decodes only.
const FORMATS: [(&str, Wrapper); 4] = [
    ("zlib", Wrapper::Zlib),
    ("gzip", Wrapper::Gzip),
    ("raw", Wrapper::Raw),
    ("auto", Wrapper::Auto),
];

/// The `format` parameter of `zlib-compress`.
pub const COMPRESS_FORMAT: ParamSpec = ParamSpec {
    name: "format",
    default: "zlib",
    description: "zlib (RFC 1950), gzip (RFC 1952, one member) or raw (RFC 1951)",
};

/// The `format` parameter of `zlib-decompress`.
pub const DECOMPRESS_FORMAT: ParamSpec = ParamSpec {
    name: "format",
    default: "zlib",
    description: "zlib, gzip (one member), raw, or auto (zlib or gzip by the gzip magic)",
};

/// `zlib-compress`.
#[derive(Debug)]
pub struct ZlibCompress {
    wrapper: Wrapper,
    level: u32,
}

impl ZlibCompress {
    /// Builds from `format` and `level`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let wrapper = p.choice(
            "format",
            &[
                ("zlib", Wrapper::Zlib),
                ("gzip", Wrapper::Gzip),
                ("raw", Wrapper::Raw),
            ],
        )?;
        let level = p.u64_in("level", 0..=9)? as u32;
        Ok(Box::new(ZlibCompress { wrapper, level }))
    }
}

impl Operator for ZlibCompress {
    fn name(&self) -> &'static str {
        "zlib-compress"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        deflate_with(input, self.wrapper.deflater(self.level), true).map_err(|e| OpError::Input {
            op: "zlib-compress",
            reason: e.to_string(),
        })
    }
}

/// `zlib-decompress`.
#[derive(Debug)]
pub struct ZlibDecompress {
    wrapper: Wrapper,
    max_output: u64,
}

impl ZlibDecompress {
    /// Builds from `format` and `max_output`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let wrapper = p.choice("format", &FORMATS)?;
        let max_output = crate::limits::max_output(p)?;
        Ok(Box::new(ZlibDecompress { wrapper, max_output }))
    }

    fn decompress(&self, input: &[u8], watch: &dyn Watch) -> Result<Vec<u8>, OpError> {
        let mut at = Checkpoint::new("zlib-decompress", input.len(), watch);
        let (inflater, wrapper) = self.wrapper.inflater(input);
        inflate_one(input, self.max_output, &mut at, inflater, wrapper.name())
            .map_err(|e: DecodeError| e.into_op_error("zlib-decompress", self.max_output))
    }
}

impl Operator for ZlibDecompress {
    fn name(&self) -> &'static str {
        "zlib-decompress"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        self.decompress(input, &NeverStop)
    }

    fn run_watched(&self, input: &[u8], watch: &dyn Watch) -> Result<Vec<u8>, OpError> {
        self.decompress(input, watch)
    }

    fn stoppable(&self) -> bool {
        true
    }
}
