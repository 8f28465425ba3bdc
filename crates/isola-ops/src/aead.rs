//! AES-GCM (NIST SP 800-38D) with 128- or 256-bit keys and 96-bit IVs, on
//! RustCrypto's `aes-gcm` (AES-NI and CLMUL where the CPU has them).
//!
//! `aes-gcm-encrypt` outputs the ciphertext followed by the 16-byte tag;
//! `aes-gcm-decrypt` takes that layout and outputs the plaintext, or fails
//! when the tag does not authenticate the input.
//!
//! Splitting encryption (ASTRAEA): subtasks cover 16-byte-aligned ranges.
//! Each encrypts its range with the CTR keystream from its block offset and
//! computes GHASH over its own ciphertext alone. Reassembly concatenates the
//! ciphertext and combines the partial hashes by Horner's rule over segments,
//! `S = S * H^n_seg + Y_seg` in GF(2^128), then folds in the AAD in front and
//! the length block at the end, so ciphertext and tag are bit-identical to
//! one-shot encryption. The combination (GF(2^128) multiply and powers of H)
//! is written by hand: no crate exposes GHASH's field arithmetic.

use crate::operator::{downcast, part_slice, Carry, OpError, Operator, Placement, Splitter};
use aes::cipher::{BlockCipherEncrypt, KeyInit, KeyIvInit, StreamCipher, StreamCipherSeek};
use aes_gcm::aead::{Aead, Payload};
use ghash::universal_hash::UniversalHash;
use isola_core::params::Params;
use isola_core::{Subtask, TaskId};
use std::ops::Range;

/// Tag length in bytes.
pub const TAG_BYTES: usize = 16;

/// Multiplies two GF(2^128) elements in GCM's bit order (SP 800-38D,
/// algorithm 1): bit 0 of a block is the most significant bit of the u128.
fn gf_mul(x: u128, y: u128) -> u128 {
    const R: u128 = 0xE1 << 120;
    let mut z = 0u128;
    let mut v = y;
    for i in 0..128 {
        // Branch-free: mask is all ones when bit i of x is set.
        let mask = 0u128.wrapping_sub((x >> (127 - i)) & 1);
        z ^= v & mask;
        let carry = 0u128.wrapping_sub(v & 1);
        v = (v >> 1) ^ (R & carry);
    }
    z
}

/// `h^n`, by squaring (the field's one is the top bit in GCM's order).
fn gf_pow(h: u128, mut n: u64) -> u128 {
    let (mut result, mut base) = (1u128 << 127, h);
    while n > 0 {
        if n & 1 == 1 {
            result = gf_mul(result, base);
        }
        base = gf_mul(base, base);
        n >>= 1;
    }
    result
}

#[derive(Clone)]
enum Cipher {
    Aes128(Box<aes_gcm::Aes128Gcm>, aes::Aes128),
    Aes256(Box<aes_gcm::Aes256Gcm>, aes::Aes256),
}

/// An AES-GCM key, IV and AAD, shared by the encrypt and decrypt operators.
#[derive(Clone)]
struct Gcm {
    key: Vec<u8>,
    iv: [u8; 12],
    aad: Vec<u8>,
    cipher: Cipher,
}

impl std::fmt::Debug for Gcm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("Gcm")
            .field("key_bits", &(self.key.len() * 8))
            .finish_non_exhaustive()
    }
}

impl Gcm {
    fn from_params(p: &Params<'_>) -> Result<Gcm, OpError> {
        let key = p.hex_bytes("key", &[16, 32])?;
        let iv: [u8; 12] = p
            .hex_bytes("iv", &[12])?
            .try_into()
            .map_err(|_| p.bad("iv", "12 hex bytes"))?;
        let aad = p.hex_bytes("aad", &[])?;
        // Lengths were checked above, so the key constructors cannot fail.
        let cipher = if key.len() == 16 {
            Cipher::Aes128(
                Box::new(
                    aes_gcm::Aes128Gcm::new_from_slice(&key).map_err(|_| p.bad("key", "16 or 32 bytes"))?,
                ),
                aes::Aes128::new_from_slice(&key).map_err(|_| p.bad("key", "16 or 32 bytes"))?,
            )
        } else {
            Cipher::Aes256(
                Box::new(
                    aes_gcm::Aes256Gcm::new_from_slice(&key).map_err(|_| p.bad("key", "16 or 32 bytes"))?,
                ),
                aes::Aes256::new_from_slice(&key).map_err(|_| p.bad("key", "16 or 32 bytes"))?,
            )
        };
        Ok(Gcm { key, iv, aad, cipher })
    }

    fn encrypt(&self, msg: &[u8]) -> Vec<u8> {
        let payload = Payload { msg, aad: &self.aad };
        let nonce = (&self.iv).into();
        // AES-GCM encryption fails only for messages over 2^36 bytes.
        match &self.cipher {
            Cipher::Aes128(c, _) => c.encrypt(nonce, payload),
            Cipher::Aes256(c, _) => c.encrypt(nonce, payload),
        }
        .unwrap_or_default()
    }

    fn decrypt(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        if input.len() < TAG_BYTES {
            return Err(OpError::Input {
                op: "aes-gcm-decrypt",
                reason: format!("{} bytes cannot hold the 16-byte tag", input.len()),
            });
        }
        let payload = Payload {
            msg: input,
            aad: &self.aad,
        };
        let nonce = (&self.iv).into();
        match &self.cipher {
            Cipher::Aes128(c, _) => c.decrypt(nonce, payload),
            Cipher::Aes256(c, _) => c.decrypt(nonce, payload),
        }
        .map_err(|_| OpError::Input {
            op: "aes-gcm-decrypt",
            reason: "the tag does not authenticate this ciphertext (wrong key, IV, AAD, or corrupt data)"
                .into(),
        })
    }

    /// `E_K(block)`.
    fn encrypt_block(&self, block: [u8; 16]) -> [u8; 16] {
        let mut b = block.into();
        match &self.cipher {
            Cipher::Aes128(_, a) => a.encrypt_block(&mut b),
            Cipher::Aes256(_, a) => a.encrypt_block(&mut b),
        }
        b.into()
    }

    /// The counter block `IV || n` (big-endian 32-bit counter).
    fn counter(&self, n: u32) -> [u8; 16] {
        let mut j = [0u8; 16];
        j[..12].copy_from_slice(&self.iv);
        j[12..].copy_from_slice(&n.to_be_bytes());
        j
    }

    /// Encrypts `slice`, which starts `offset` bytes into the plaintext, in place.
    fn ctr_at(&self, offset: u64, data: &mut [u8]) {
        let start = self.counter(2);
        // Key and IV lengths are fixed by construction, so this cannot fail.
        match &self.cipher {
            Cipher::Aes128(..) => {
                if let Ok(mut c) = ctr::Ctr32BE::<aes::Aes128>::new_from_slices(&self.key, &start) {
                    c.seek(offset);
                    c.apply_keystream(data);
                }
            }
            Cipher::Aes256(..) => {
                if let Ok(mut c) = ctr::Ctr32BE::<aes::Aes256>::new_from_slices(&self.key, &start) {
                    c.seek(offset);
                    c.apply_keystream(data);
                }
            }
        }
    }

    fn h(&self) -> [u8; 16] {
        self.encrypt_block([0u8; 16])
    }

    /// GHASH of `data` (zero-padded to whole blocks) alone.
    fn ghash(&self, data: &[u8]) -> u128 {
        let mut g = ghash::GHash::new(&self.h().into());
        g.update_padded(data);
        u128::from_be_bytes(g.finalize().into())
    }
}

/// `aes-gcm-encrypt`.
#[derive(Debug)]
pub struct GcmEncrypt(Gcm);

/// `aes-gcm-decrypt`.
#[derive(Debug)]
pub struct GcmDecrypt(Gcm);

impl GcmEncrypt {
    /// Builds from `key`, `iv` and `aad`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        Ok(Box::new(GcmEncrypt(Gcm::from_params(p)?)))
    }
}

impl GcmDecrypt {
    /// Builds from `key`, `iv` and `aad`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        Ok(Box::new(GcmDecrypt(Gcm::from_params(p)?)))
    }
}

impl Operator for GcmEncrypt {
    fn name(&self) -> &'static str {
        "aes-gcm-encrypt"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        Ok(self.0.encrypt(input))
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        Some(self)
    }

    fn placement(&self) -> Option<&dyn Placement> {
        Some(self)
    }
}

impl Operator for GcmDecrypt {
    fn name(&self) -> &'static str {
        "aes-gcm-decrypt"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        self.0.decrypt(input)
    }
}

impl Placement for GcmEncrypt {
    /// Ranges aligned to 16-byte blocks (the chunk is rounded up to a multiple of 16).
    fn plan(&self, task: TaskId, len: usize, chunk: usize) -> Result<Vec<Subtask>, OpError> {
        let chunk = chunk.min(usize::MAX / 2).div_ceil(16).max(1) * 16;
        Ok(Subtask::ranges(task, len as u64, chunk as u64, false))
    }

    fn output_len(&self, input_len: usize) -> Result<usize, OpError> {
        Ok(input_len + TAG_BYTES)
    }

    /// The subtask's own range of the ciphertext.
    fn regions(&self, part: &Subtask, _: usize) -> Vec<Range<usize>> {
        let range = part.offset as usize..(part.offset + part.bytes) as usize;
        std::iter::once(range).collect()
    }

    /// Encrypts the range with the keystream from its block offset and
    /// hashes its ciphertext alone: the carry is (GHASH, length).
    fn run_part_into(
        &self,
        part: &Subtask,
        input: &[u8],
        regions: &mut [&mut [u8]],
    ) -> Result<Carry, OpError> {
        let plaintext = part_slice(part, input);
        let [out] = regions else {
            return Err(OpError::WrongCarry {
                op: "aes-gcm-encrypt",
            });
        };
        if part.offset % 16 != 0 || out.len() != plaintext.len() {
            return Err(OpError::Input {
                op: "aes-gcm-encrypt",
                reason: format!(
                    "subtask at {} is not a whole range on a 16-byte block",
                    part.offset
                ),
            });
        }
        out.copy_from_slice(plaintext);
        self.0.ctr_at(part.offset, out);
        Ok(Box::new((self.0.ghash(out), out.len() as u64)))
    }

    /// Horner over segments (AAD, each subtask's ciphertext, the length
    /// block) gives GHASH of the whole; the tag follows the ciphertext.
    fn finish(&self, carries: Vec<Carry>, out: &mut [u8]) -> Result<(), OpError> {
        let h = u128::from_be_bytes(self.0.h());
        let aad = &self.0.aad;
        let mut s = self.0.ghash(aad);
        let mut total = 0u64;
        for c in carries {
            let (ghash, len): (u128, u64) = downcast("aes-gcm-encrypt", c)?;
            s = gf_mul(s, gf_pow(h, len.div_ceil(16))) ^ ghash;
            total += len;
        }
        let lengths = ((aad.len() as u128 * 8) << 64) | (total as u128 * 8);
        s = gf_mul(s ^ lengths, h);
        let tag = s ^ u128::from_be_bytes(self.0.encrypt_block(self.0.counter(1)));
        let at = out.len().checked_sub(TAG_BYTES).ok_or(OpError::WrongCarry {
            op: "aes-gcm-encrypt",
        })?;
        out[at..].copy_from_slice(&tag.to_be_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_identities() {
        let one = 1u128 << 127;
        let h = 0x66e94bd4ef8a2c3b884cfa59ca342b2eu128;
        assert_eq!(gf_mul(h, one), h);
        assert_eq!(gf_mul(one, h), h);
        assert_eq!(gf_pow(h, 0), one);
        assert_eq!(gf_pow(h, 3), gf_mul(h, gf_mul(h, h)));
        // Commutative and distributive.
        let (a, b, c) = (0x1234u128 << 100, 0xdead_beef_u128 << 64, 99u128);
        assert_eq!(gf_mul(a, b), gf_mul(b, a));
        assert_eq!(gf_mul(a, b ^ c), gf_mul(a, b) ^ gf_mul(a, c));
    }
}
