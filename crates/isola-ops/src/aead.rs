//! AES-GCM (NIST SP 800-38D) with 128- or 256-bit keys and 96-bit IVs, on
//! AWS-LC (`aws-lc-rs`: OpenSSL's assembly, AES-NI/VAES and carry-less
//! multiply) with RustCrypto's GHASH for split subtasks.
//!
//! `aes-gcm-encrypt` outputs the ciphertext followed by the 16-byte tag;
//! `aes-gcm-decrypt` takes that layout and outputs the plaintext, or fails
//! when the tag does not authenticate the input.
//!
//! Splitting encryption (ASTRAEA), parameter `split`:
//! - `chained` (default): ordered subtasks that hand AWS-LC's streaming GCM
//!   state from one to the next; every part runs the fused kernel.
//! - `independent`: subtasks that may run in any order on any engine.
//!
//! Independent subtasks cover 16-byte-aligned ranges.
//! Each encrypts its range with the CTR keystream from its block offset and
//! computes GHASH over its own ciphertext alone. Reassembly concatenates the
//! ciphertext and combines the partial hashes by Horner's rule over segments,
//! `S = S * H^n_seg + Y_seg` in GF(2^128), then folds in the AAD in front and
//! the length block at the end, so ciphertext and tag are bit-identical to
//! one-shot encryption. The combination (GF(2^128) multiply and powers of H)
//! is written by hand: no crate exposes GHASH's field arithmetic.

use crate::evp::{EvpCipher, EvpContext, EvpError};
use crate::operator::{
    aligned_plan, copy_part, downcast, own_range, part_slice, Carry, OpError, Operator, Placement, Splitter,
};
use ghash::universal_hash::UniversalHash;
use isola_core::params::Params;
use isola_core::{Subtask, TaskId};
use std::ops::Range;

/// Tag length in bytes.
pub const TAG_BYTES: usize = 16;

/// The longest plaintext AES-GCM allows: 2^32 - 2 blocks (SP 800-38D).
pub const MAX_PLAINTEXT: u64 = (1 << 36) - 32;

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

/// An AES-GCM key, IV and AAD, shared by the encrypt and decrypt operators.
///
/// Encryption (one-shot and chained subtasks) and decryption run AWS-LC's
/// fused AES-GCM (the same stitched AES-NI/VAES + carry-less-multiply
/// assembly as OpenSSL). Independent subtasks cannot use it (its counter
/// always starts at the IV's), so they run AWS-LC's AES-CTR from their own
/// counter block and RustCrypto's GHASH.
struct Gcm {
    /// The raw key, for AWS-LC's streaming context (chained subtasks).
    key: Vec<u8>,
    iv: [u8; 12],
    aad: Vec<u8>,
    /// The fused one-shot cipher, for decryption.
    aead: aws_lc_rs::aead::LessSafeKey,
    /// AES-CTR over the same key, for subtasks.
    ctr: aws_lc_rs::cipher::EncryptingKey,
    /// `H = E_K(0^128)`, GHASH's key.
    h: [u8; 16],
    /// `E_K(IV || 1)`, which masks the tag.
    tag_mask: [u8; 16],
    /// GHASH of the AAD alone.
    aad_hash: u128,
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
        Gcm::new(key, iv, aad).map_err(|what| p.bad("key", what).into())
    }

    /// A GCM of `key` (16 or 32 bytes), `iv` and `aad`; what is wrong with
    /// the key otherwise.
    fn new(key: Vec<u8>, iv: [u8; 12], aad: Vec<u8>) -> Result<Gcm, &'static str> {
        use aws_lc_rs::{aead, cipher};
        let bad_key = |_| "16 or 32 bytes";
        let (aead_alg, aes_alg) = if key.len() == 16 {
            (&aead::AES_128_GCM, &cipher::AES_128)
        } else {
            (&aead::AES_256_GCM, &cipher::AES_256)
        };
        let aead = aead::LessSafeKey::new(aead::UnboundKey::new(aead_alg, &key).map_err(bad_key)?);
        let ctr = cipher::EncryptingKey::ctr(cipher::UnboundCipherKey::new(aes_alg, &key).map_err(bad_key)?)
            .map_err(bad_key)?;
        // H and the tag mask are one AES block each: CTR over a zero block
        // from the chosen counter block is exactly E_K(counter block).
        let encrypt_block = |block: [u8; 16]| -> Result<[u8; 16], &'static str> {
            let mut out = [0u8; 16];
            ctr.less_safe_encrypt(&mut out, cipher::EncryptionContext::Iv128(block.into()))
                .map_err(|_| "an AES key")?;
            Ok(out)
        };
        let h = encrypt_block([0u8; 16])?;
        let tag_mask = encrypt_block(counter_block(&iv, 1))?;
        let aad_hash = ghash(&h, &aad);
        Ok(Gcm {
            key,
            iv,
            aad,
            aead,
            ctr,
            h,
            tag_mask,
            aad_hash,
        })
    }

    fn nonce(&self) -> aws_lc_rs::aead::Nonce {
        aws_lc_rs::aead::Nonce::assume_unique_for_key(self.iv)
    }

    /// One-shot encryption. The streaming interface reads the plaintext and
    /// writes the ciphertext in one pass (sealing in place would first copy
    /// the plaintext into the output), and it is the chained subtasks' path,
    /// so splitting costs only the calls.
    fn encrypt(&self, msg: &[u8]) -> Result<Vec<u8>, OpError> {
        let mut stream = GcmStream::start(self, msg.len())?;
        stream.update(msg)?;
        stream.finish()
    }

    fn decrypt(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        if input.len() < TAG_BYTES {
            return Err(OpError::Input {
                op: "aes-gcm-decrypt",
                reason: format!("{} bytes cannot hold the 16-byte tag", input.len()),
            });
        }
        let mut out = input.to_vec();
        let plain_len = self
            .aead
            .open_in_place(self.nonce(), aws_lc_rs::aead::Aad::from(&self.aad), &mut out)
            .map_err(|_| OpError::Input {
                op: "aes-gcm-decrypt",
                reason: "the tag does not authenticate this ciphertext (wrong key, IV, AAD, or corrupt data)"
                    .into(),
            })?
            .len();
        out.truncate(plain_len);
        Ok(out)
    }

    /// Encrypts `data`, which starts `offset` bytes (a multiple of 16) into
    /// the plaintext, in place: CTR from counter block `IV || 2 + offset/16`.
    fn ctr_at(&self, offset: u64, data: &mut [u8]) -> Result<(), OpError> {
        let block = u32::try_from(offset / 16 + 2).map_err(|_| OpError::Input {
            op: "aes-gcm-encrypt",
            reason: format!("offset {offset} is past AES-GCM's 2^32 - 2 blocks"),
        })?;
        let context = aws_lc_rs::cipher::EncryptionContext::Iv128(counter_block(&self.iv, block).into());
        self.ctr
            .less_safe_encrypt(data, context)
            .map(drop)
            .map_err(|_| OpError::Input {
                op: "aes-gcm-encrypt",
                reason: "AES-CTR failed".into(),
            })
    }
}

impl Gcm {
    /// The tag a ciphertext carries under this key, IV and AAD: GHASH over
    /// the AAD, the ciphertext and their lengths, masked by `E_K(IV || 1)`.
    fn tag_of(&self, ciphertext: &[u8]) -> [u8; TAG_BYTES] {
        let mut g = ghash::GHash::new(&self.h.into());
        g.update_padded(&self.aad);
        g.update_padded(ciphertext);
        let lengths = ((self.aad.len() as u128 * 8) << 64) | (ciphertext.len() as u128 * 8);
        g.update(&[lengths.to_be_bytes().into()]);
        let hash = u128::from_be_bytes(g.finalize().into());
        (hash ^ u128::from_be_bytes(self.tag_mask)).to_be_bytes()
    }

    /// Decrypts `ciphertext` (no tag) and appends the tag it should carry,
    /// without judging it: the caller compares.
    fn open_unverified(&self, ciphertext: &[u8]) -> Result<Vec<u8>, OpError> {
        let mut out = Vec::with_capacity(ciphertext.len() + TAG_BYTES);
        out.extend_from_slice(ciphertext);
        self.ctr_at(0, &mut out)?;
        out.extend_from_slice(&self.tag_of(ciphertext));
        Ok(out)
    }
}

/// The input of `aes-gcm` for `key` (16 or 32 bytes), `iv`, `aad` and `data`.
pub fn inband_input(key: &[u8], iv: &[u8; 12], aad: &[u8], data: &[u8]) -> Vec<u8> {
    let mut input = Vec::with_capacity(1 + key.len() + 16 + aad.len() + data.len());
    input.push(key.len() as u8);
    input.extend_from_slice(key);
    input.extend_from_slice(iv);
    input.extend_from_slice(&(aad.len() as u32).to_be_bytes());
    input.extend_from_slice(aad);
    input.extend_from_slice(data);
    input
}

/// `aes-gcm`: AES-GCM shaped like OpenSSL's EVP calls, for the OpenSSL
/// provider (`adapters/openssl`): each task carries its own key, IV and
/// AAD, so one registration serves every message.
///
/// Input: the key's length (one byte, 16 or 32), the key, the 12-byte IV,
/// the AAD's length (4 bytes, big-endian), the AAD, then the data.
/// Output: the data transformed (same length), then the 16-byte tag over
/// the AAD and the ciphertext: to encrypt, the tag to send; to decrypt, the
/// tag the ciphertext must carry, which the caller compares with the one it
/// was given (as EVP's final does). Decryption does not judge the tag here,
/// as OpenSSL's streaming decryption hands out plaintext before its final.
#[derive(Debug)]
pub struct InbandGcm {
    encrypt: bool,
}

/// The `direction` parameter of `aes-gcm`.
pub const INBAND_GCM_PARAMS: &[isola_core::params::ParamSpec] = &[isola_core::params::ParamSpec {
    name: "direction",
    default: "encrypt",
    description: "encrypt or decrypt (the output's tag is then the one the ciphertext must carry)",
}];

impl InbandGcm {
    /// Builds from `direction`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let encrypt = p.choice("direction", &[("encrypt", true), ("decrypt", false)])?;
        Ok(Box::new(InbandGcm { encrypt }))
    }

    /// The GCM the input's header describes, and the data after it.
    fn parse(input: &[u8]) -> Result<(Gcm, &[u8]), OpError> {
        let bad = |reason: String| OpError::Input {
            op: "aes-gcm",
            reason,
        };
        let (&key_len, rest) = input
            .split_first()
            .ok_or_else(|| bad("an empty input has no key".into()))?;
        let key_len = usize::from(key_len);
        if key_len != 16 && key_len != 32 {
            return Err(bad(format!("key length {key_len}: must be 16 or 32")));
        }
        let header = key_len + 12 + 4;
        if rest.len() < header {
            return Err(bad(format!(
                "{} bytes cannot hold a {key_len}-byte key, a 12-byte IV and the AAD's length",
                input.len()
            )));
        }
        let (key, rest) = rest.split_at(key_len);
        let (iv, rest) = rest.split_at(12);
        let (aad_len, rest) = rest.split_at(4);
        let aad_len = u32::from_be_bytes(aad_len.try_into().expect("4 bytes")) as usize;
        if rest.len() < aad_len {
            return Err(bad(format!(
                "the AAD's length {aad_len} is past the input's end ({} bytes left)",
                rest.len()
            )));
        }
        let (aad, data) = rest.split_at(aad_len);
        if data.len() as u64 > MAX_PLAINTEXT {
            return Err(bad(format!("{} bytes: over AES-GCM's limit", data.len())));
        }
        let iv: [u8; 12] = iv.try_into().expect("12 bytes");
        let gcm = Gcm::new(key.to_vec(), iv, aad.to_vec()).map_err(|what| bad(format!("key: {what}")))?;
        Ok((gcm, data))
    }
}

impl Operator for InbandGcm {
    fn name(&self) -> &'static str {
        "aes-gcm"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        let (gcm, data) = InbandGcm::parse(input)?;
        if self.encrypt {
            gcm.encrypt(data)
        } else {
            gcm.open_unverified(data)
        }
    }
}

/// The counter block `IV || n` (big-endian 32-bit counter).
fn counter_block(iv: &[u8; 12], n: u32) -> [u8; 16] {
    let mut j = [0u8; 16];
    j[..12].copy_from_slice(iv);
    j[12..].copy_from_slice(&n.to_be_bytes());
    j
}

/// GHASH under key `h` of `data` (zero-padded to whole blocks) alone.
fn ghash(h: &[u8; 16], data: &[u8]) -> u128 {
    let mut g = ghash::GHash::new(&(*h).into());
    g.update_padded(data);
    u128::from_be_bytes(g.finalize().into())
}

/// How `aes-gcm-encrypt` splits into subtasks (parameter `split`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcmSplit {
    /// Ordered subtasks carrying AWS-LC's streaming GCM state: the fused
    /// AES-GCM kernel runs on every part, so splitting costs almost nothing.
    Chained,
    /// Independent subtasks (any order, any engine): CTR from each part's
    /// block offset and GHASH partials combined at the end. Slower, since
    /// no library runs the fused kernel from an arbitrary counter.
    Independent,
}

/// `aes-gcm-encrypt`.
#[derive(Debug)]
pub struct GcmEncrypt {
    independent: IndependentGcm,
    split: GcmSplit,
}

/// `aes-gcm-encrypt` split into independent subtasks that write in place.
#[derive(Debug)]
pub struct IndependentGcm(Gcm);

/// `aes-gcm-decrypt`.
#[derive(Debug)]
pub struct GcmDecrypt(Gcm);

impl GcmEncrypt {
    /// Builds from `key`, `iv`, `aad` and `split`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let split = p.choice(
            "split",
            &[
                ("chained", GcmSplit::Chained),
                ("independent", GcmSplit::Independent),
            ],
        )?;
        Ok(Box::new(GcmEncrypt {
            independent: IndependentGcm(Gcm::from_params(p)?),
            split,
        }))
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
        self.independent.0.encrypt(input)
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        match self.split {
            GcmSplit::Chained => Some(self),
            GcmSplit::Independent => Some(&self.independent),
        }
    }

    fn placement(&self) -> Option<&dyn Placement> {
        match self.split {
            GcmSplit::Chained => None,
            GcmSplit::Independent => Some(&self.independent),
        }
    }
}

impl Operator for IndependentGcm {
    fn name(&self) -> &'static str {
        "aes-gcm-encrypt"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        self.0.encrypt(input)
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

/// AWS-LC's streaming AES-GCM encryption and the ciphertext so far: the
/// carry between chained subtasks.
struct GcmStream {
    ctx: EvpContext,
    ciphertext: Vec<u8>,
}

/// An error of AWS-LC's streaming interface (it fails only on allocation,
/// misuse, or a message over AES-GCM's length limit).
fn stream_error(e: EvpError) -> OpError {
    OpError::Input {
        op: "aes-gcm-encrypt",
        reason: format!("{e} (messages are limited to 2^36 - 32 bytes)"),
    }
}

impl GcmStream {
    /// A context keyed and IV'd, with the AAD absorbed, for a plaintext of
    /// `len` bytes.
    fn start(gcm: &Gcm, len: usize) -> Result<GcmStream, OpError> {
        let cipher = if gcm.key.len() == 16 {
            EvpCipher::Aes128Gcm
        } else {
            EvpCipher::Aes256Gcm
        };
        let mut ctx = EvpContext::new(cipher, &gcm.key, &gcm.iv, true).map_err(stream_error)?;
        ctx.aad(&gcm.aad).map_err(stream_error)?;
        Ok(GcmStream {
            ctx,
            ciphertext: Vec::with_capacity(len.saturating_add(TAG_BYTES)),
        })
    }

    /// Encrypts the next `plaintext` bytes, appending their ciphertext.
    fn update(&mut self, plaintext: &[u8]) -> Result<(), OpError> {
        self.ctx
            .update_append(plaintext, &mut self.ciphertext)
            .map_err(stream_error)
    }

    /// Finishes: the ciphertext followed by the tag.
    fn finish(mut self) -> Result<Vec<u8>, OpError> {
        let tag = self.ctx.gcm_tag().map_err(stream_error)?;
        let mut out = std::mem::take(&mut self.ciphertext);
        out.extend_from_slice(&tag);
        Ok(out)
    }
}

impl Splitter for GcmEncrypt {
    /// Chained subtasks run in order, each continuing the previous one's
    /// stream.
    fn ordered(&self) -> bool {
        true
    }

    fn run_part(&self, part: &Subtask, input: &[u8], previous: Option<Carry>) -> Result<Carry, OpError> {
        let mut stream = match previous {
            Some(carry) => downcast::<GcmStream>("aes-gcm-encrypt", carry)?,
            None => GcmStream::start(&self.independent.0, input.len())?,
        };
        if stream.ciphertext.len() as u64 != part.offset {
            return Err(OpError::WrongCarry {
                op: "aes-gcm-encrypt",
            });
        }
        stream.update(part_slice(part, input))?;
        Ok(Box::new(stream))
    }

    fn reassemble(&self, input_len: usize, parts: Vec<Carry>) -> Result<Vec<u8>, OpError> {
        let stream = match parts.into_iter().last() {
            Some(carry) => downcast::<GcmStream>("aes-gcm-encrypt", carry)?,
            // No subtasks: an empty plaintext.
            None => GcmStream::start(&self.independent.0, 0)?,
        };
        if stream.ciphertext.len() != input_len {
            return Err(OpError::WrongCarry {
                op: "aes-gcm-encrypt",
            });
        }
        stream.finish()
    }
}

impl Placement for IndependentGcm {
    /// Ranges aligned to 16-byte blocks (the chunk is rounded up to a
    /// multiple of 16); over AES-GCM's length limit is an error, since past
    /// it the 32-bit counter would wrap.
    fn plan(&self, task: TaskId, len: usize, chunk: usize) -> Result<Vec<Subtask>, OpError> {
        if len as u64 > MAX_PLAINTEXT {
            return Err(OpError::Input {
                op: "aes-gcm-encrypt",
                reason: format!("{len} bytes is over AES-GCM's limit of 2^36 - 32"),
            });
        }
        Ok(aligned_plan(task, len, chunk, 16))
    }

    fn output_len(&self, input_len: usize) -> Result<usize, OpError> {
        Ok(input_len + TAG_BYTES)
    }

    /// The subtask's own range of the ciphertext.
    fn regions(&self, part: &Subtask, _: usize) -> Vec<Range<usize>> {
        own_range(part)
    }

    /// Encrypts the range with the keystream from its block offset and
    /// hashes its ciphertext alone: the carry is (GHASH, length).
    fn run_part_into(
        &self,
        part: &Subtask,
        input: &[u8],
        regions: &mut [&mut [u8]],
    ) -> Result<Carry, OpError> {
        let out = copy_part("aes-gcm-encrypt", part, input, regions, 16)?;
        self.0.ctr_at(part.offset, out)?;
        Ok(Box::new((ghash(&self.0.h, out), out.len() as u64)))
    }

    /// Horner over segments (AAD, each subtask's ciphertext, the length
    /// block) gives GHASH of the whole; the tag follows the ciphertext.
    fn finish(&self, carries: Vec<Carry>, out: &mut [u8]) -> Result<(), OpError> {
        let h = u128::from_be_bytes(self.0.h);
        let mut s = self.0.aad_hash;
        let mut total = 0u64;
        // Subtasks have equal lengths but the last: H^n is computed once
        // per distinct length, and each subtask costs one multiply.
        let mut power: Option<(u64, u128)> = None;
        for c in carries {
            let (ghash, len): (u128, u64) = downcast("aes-gcm-encrypt", c)?;
            let blocks = len.div_ceil(16);
            let h_n = match power {
                Some((n, h_n)) if n == blocks => h_n,
                _ => gf_pow(h, blocks),
            };
            power = Some((blocks, h_n));
            s = gf_mul(s, h_n) ^ ghash;
            total += len;
        }
        // The carries must cover the whole ciphertext (a driver that lost
        // or repeated a subtask would otherwise get a wrong tag silently).
        if total as usize != out.len().saturating_sub(TAG_BYTES) {
            return Err(OpError::WrongCarry {
                op: "aes-gcm-encrypt",
            });
        }
        let lengths = ((self.0.aad.len() as u128 * 8) << 64) | (total as u128 * 8);
        s = gf_mul(s ^ lengths, h);
        let tag = s ^ u128::from_be_bytes(self.0.tag_mask);
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
