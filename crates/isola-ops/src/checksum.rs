//! Checksums: CRC-32 (ISO-HDLC, as in Ethernet, zlib and gzip), CRC-32C
//! (Castagnoli, as in iSCSI and NVMe), Adler-32 (RFC 1950, zlib's) and the
//! Internet checksum (RFC 1071).
//!
//! Adler-32 comes from `zlib-rs` (SIMD), its parts combined by its
//! `adler32_combine`.
//! CRCs come from `crc-fast` (SIMD folding); a split task's CRC is the
//! combination of its parts' CRCs (`checksum_combine`). Outputs are the raw
//! value, big-endian: 4 bytes for CRCs, 2 for the Internet checksum.

use crate::operator::{downcast, part_slice, Carry, OpError, Operator, Splitter};
use crc_fast::{checksum, checksum_combine, CrcAlgorithm};
use isola_core::Subtask;

/// A CRC-32 variant.
#[derive(Debug, Clone, Copy)]
pub struct CrcOp {
    name: &'static str,
    algorithm: CrcAlgorithm,
}

impl CrcOp {
    /// CRC-32/ISO-HDLC (`crc32`).
    pub const CRC32: CrcOp = CrcOp {
        name: "crc32",
        algorithm: CrcAlgorithm::Crc32IsoHdlc,
    };
    /// CRC-32/ISCSI, Castagnoli (`crc32c`).
    pub const CRC32C: CrcOp = CrcOp {
        name: "crc32c",
        algorithm: CrcAlgorithm::Crc32Iscsi,
    };

    fn value(&self, bytes: &[u8]) -> u32 {
        checksum(self.algorithm, bytes) as u32
    }
}

impl Operator for CrcOp {
    fn name(&self) -> &'static str {
        self.name
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        Ok(self.value(input).to_be_bytes().to_vec())
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        Some(self)
    }
}

impl Splitter for CrcOp {
    fn ordered(&self) -> bool {
        false
    }

    fn run_part(&self, part: &Subtask, input: &[u8], _: Option<Carry>) -> Result<Carry, OpError> {
        let slice = part_slice(part, input);
        Ok(Box::new((self.value(slice), slice.len() as u64)))
    }

    fn reassemble(&self, _input_len: usize, parts: Vec<Carry>) -> Result<Vec<u8>, OpError> {
        let mut acc: Option<u64> = None;
        for part in parts {
            let (crc, len) = downcast::<(u32, u64)>(self.name, part)?;
            acc = Some(match acc {
                None => crc as u64,
                Some(a) => checksum_combine(self.algorithm, a, crc as u64, len),
            });
        }
        let crc = acc.unwrap_or_else(|| checksum(self.algorithm, &[]));
        Ok((crc as u32).to_be_bytes().to_vec())
    }
}

/// Adler-32 (RFC 1950) from its initial value 1 (`adler32`): zlib's
/// `adler32(1, buf, len)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Adler32;

impl Adler32 {
    fn value(bytes: &[u8]) -> u32 {
        zlib_rs::adler32::adler32(1, bytes)
    }
}

impl Operator for Adler32 {
    fn name(&self) -> &'static str {
        "adler32"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        Ok(Adler32::value(input).to_be_bytes().to_vec())
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        Some(self)
    }
}

impl Splitter for Adler32 {
    fn ordered(&self) -> bool {
        false
    }

    fn run_part(&self, part: &Subtask, input: &[u8], _: Option<Carry>) -> Result<Carry, OpError> {
        let slice = part_slice(part, input);
        Ok(Box::new((Adler32::value(slice), slice.len() as u64)))
    }

    fn reassemble(&self, _input_len: usize, parts: Vec<Carry>) -> Result<Vec<u8>, OpError> {
        let mut acc = 1u32;
        for part in parts {
            let (adler, len) = downcast::<(u32, u64)>("adler32", part)?;
            acc = zlib_rs::adler32::adler32_combine(acc, adler, len);
        }
        Ok(acc.to_be_bytes().to_vec())
    }
}

/// The Internet checksum of RFC 1071: the ones'-complement of the
/// ones'-complement sum of the input's 16-bit big-endian words (an odd last
/// byte is padded with zero).
///
/// Written by hand: it is a few lines, and splitting needs the partial sums,
/// which the crates that compute it do not expose. A part that starts at an
/// odd offset pairs its bytes the other way round; by RFC 1071's byte-order
/// independence (section 2(B)) its contribution is its own sum byte-swapped
/// (mod 0xFFFF, multiplying by 256 is rotating by 8 bits).
#[derive(Debug, Clone, Copy, Default)]
pub struct InetChecksum;

/// Ones'-complement sum of `bytes` as big-endian 16-bit words, folded to 16 bits.
fn ones_sum(bytes: &[u8]) -> u16 {
    let mut sum: u64 = 0;
    let mut words = bytes.chunks_exact(2);
    for w in &mut words {
        sum += u16::from_be_bytes([w[0], w[1]]) as u64;
    }
    if let [last] = words.remainder() {
        sum += (*last as u64) << 8;
    }
    fold(sum)
}

/// End-around-carry fold of a wide sum to 16 bits.
pub(crate) fn fold(mut sum: u64) -> u16 {
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    sum as u16
}

impl Operator for InetChecksum {
    fn name(&self) -> &'static str {
        "inet-checksum"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        Ok((!ones_sum(input)).to_be_bytes().to_vec())
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        Some(self)
    }
}

impl Splitter for InetChecksum {
    fn ordered(&self) -> bool {
        false
    }

    fn run_part(&self, part: &Subtask, input: &[u8], _: Option<Carry>) -> Result<Carry, OpError> {
        let sum = ones_sum(part_slice(part, input));
        let contribution = if part.offset % 2 == 1 {
            sum.swap_bytes()
        } else {
            sum
        };
        Ok(Box::new(contribution))
    }

    fn reassemble(&self, _input_len: usize, parts: Vec<Carry>) -> Result<Vec<u8>, OpError> {
        let mut total: u64 = 0;
        for part in parts {
            total += downcast::<u16>("inet-checksum", part)? as u64;
        }
        Ok((!fold(total)).to_be_bytes().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::run_split;

    #[test]
    fn crc_check_values_of_123456789() {
        // The "check" values of the CRC catalogue (Williams / reveng).
        assert_eq!(
            CrcOp::CRC32.run(b"123456789").unwrap(),
            0xCBF4_3926u32.to_be_bytes()
        );
        assert_eq!(
            CrcOp::CRC32C.run(b"123456789").unwrap(),
            0xE306_9283u32.to_be_bytes()
        );
        assert_eq!(
            run_split(&CrcOp::CRC32, b"123456789", 4).unwrap(),
            0xCBF4_3926u32.to_be_bytes()
        );
    }

    #[test]
    fn rfc_1071_numerical_example() {
        // RFC 1071 section 3: bytes 00 01 f2 03 f4 f5 f6 f7 sum to ddf2
        // (with end-around carry); the checksum is its complement.
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(ones_sum(&bytes), 0xddf2);
        assert_eq!(InetChecksum.run(&bytes).unwrap(), [0x22, 0x0d]);
        for chunk in 1..8 {
            assert_eq!(
                run_split(&InetChecksum, &bytes, chunk).unwrap(),
                [0x22, 0x0d],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn ipv4_header_checksum_verifies_to_zero() {
        // A real IPv4 header (its checksum field holds b861): summing it with
        // its checksum gives 0xffff, so the checksum over it is 0.
        let header = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01,
            0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(InetChecksum.run(&header).unwrap(), [0, 0]);
    }
}
