//! Unauthenticated AES modes, with 128- or 256-bit keys: CTR (NIST SP
//! 800-38A), the keystream cipher of packet and stream encryption, and XTS
//! (IEEE 1619, NIST SP 800-38E), the tweakable sector cipher of disk
//! encryption.
//!
//! `aes-ctr` runs on AWS-LC (`aws-lc-rs`: OpenSSL's AES-NI/VAES assembly),
//! which measured about 1.3 times RustCrypto's `ctr` over `aes` on 1 MiB in
//! place (AES-256, release build, AVX-512/VAES CPU: 7.9 against 5.9 GB/s).
//! Its `iv` is the whole initial counter block, incremented as one 128-bit
//! big-endian integer, as `openssl enc -aes-*-ctr` does; it is its own
//! inverse.
//!
//! `aes-xts` runs on AWS-LC for AES-256 keys (its VAES/AVX-512 assembly)
//! and on RustCrypto's `xts-mode` over `aes` for AES-128 ones (AWS-LC has
//! no AES-128-XTS). The input is sectors
//! back to back; sector `n`'s tweak is `n` as a 128-bit little-endian integer
//! (Linux dm-crypt's `plain64`, `openssl enc -aes-*-xts -iv`). The last
//! sector may be shorter than the others (ciphertext stealing) but not
//! shorter than one 16-byte block.
//!
//! Splitting: every subtask writes its own range of the output in place.
//! CTR subtasks start on 16-byte blocks and compute their own counter block
//! (`iv + offset / 16`); XTS subtasks cover whole sectors and compute their
//! sector numbers. Either way the result is bit-identical to one-shot.

use crate::evp::{EvpCipher, EvpContext};
use crate::operator::{aligned_plan, copy_part, own_range, Carry, OpError, Operator, Placement, Splitter};
use aes::cipher::KeyInit;
use aws_lc_rs::cipher::{EncryptingKey, EncryptionContext, UnboundCipherKey, AES_128, AES_256};
use isola_core::params::{ParamSpec, Params};
use isola_core::{Subtask, TaskId};
use std::ops::Range;
use xts_mode::Xts128;

/// AES block length in bytes.
const BLOCK: usize = 16;

/// Parameters of `aes-ctr`.
pub const CTR_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "key",
        default: "",
        description: "AES key, hex, 16 or 32 bytes (AES-128 or AES-256)",
    },
    ParamSpec {
        name: "iv",
        default: "",
        description: "initial counter block, hex, 16 bytes (incremented as a 128-bit big-endian integer)",
    },
];

/// Parameters of `aes-xts`.
pub const XTS_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "key",
        default: "",
        description: "key1 || key2, hex, 32 or 64 bytes (AES-128-XTS or AES-256-XTS)",
    },
    ParamSpec {
        name: "sector-size",
        default: "512",
        description: "bytes per sector (data unit), 16 to 16777216 (2^20 blocks, SP 800-38E's limit)",
    },
    ParamSpec {
        name: "sector",
        default: "0",
        description: "number of the first sector; sector n's tweak is n, 128-bit little-endian",
    },
    ParamSpec {
        name: "direction",
        default: "encrypt",
        description: "encrypt or decrypt",
    },
];

/// `aes-ctr`: AES-CTR encryption, which is also its decryption.
pub struct AesCtr {
    key: EncryptingKey,
    key_bits: usize,
    /// The initial counter block, as a big-endian integer.
    iv: u128,
}

impl std::fmt::Debug for AesCtr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("AesCtr")
            .field("key_bits", &self.key_bits)
            .finish_non_exhaustive()
    }
}

impl AesCtr {
    /// Builds from `key` and `iv`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let key = p.hex_bytes("key", &[16, 32])?;
        let iv: [u8; 16] = p
            .hex_bytes("iv", &[16])?
            .try_into()
            .map_err(|_| p.bad("iv", "16 hex bytes"))?;
        let key_bits = key.len() * 8;
        let alg = if key.len() == 16 { &AES_128 } else { &AES_256 };
        let bad_key = |_| p.bad("key", "16 or 32 bytes");
        let key = EncryptingKey::ctr(UnboundCipherKey::new(alg, &key).map_err(bad_key)?).map_err(bad_key)?;
        Ok(Box::new(AesCtr {
            key,
            key_bits,
            iv: u128::from_be_bytes(iv),
        }))
    }
}

impl UnitCipher for AesCtr {
    const NAME: &'static str = "aes-ctr";

    fn unit(&self) -> usize {
        BLOCK
    }

    /// Applies the keystream from the range's own counter block.
    fn apply_at(&self, offset: u64, data: &mut [u8]) -> Result<(), OpError> {
        // The counter wraps modulo 2^128, as OpenSSL's does.
        let counter = self.iv.wrapping_add(u128::from(offset / BLOCK as u64));
        let context = EncryptionContext::Iv128(counter.to_be_bytes().into());
        self.key
            .less_safe_encrypt(data, context)
            .map(drop)
            .map_err(|_| OpError::Input {
                op: Self::NAME,
                reason: "AES-CTR failed".into(),
            })
    }
}

/// Which way `aes-xts` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Plaintext sectors in, ciphertext out.
    Encrypt,
    /// Ciphertext sectors in, plaintext out.
    Decrypt,
}

/// An XTS key pair over AES-128 or AES-256.
enum XtsKey {
    /// AES-128-XTS on RustCrypto's `xts-mode` (AWS-LC offers only
    /// AES-256-XTS).
    Aes128(Box<Xts128<aes::Aes128>>),
    /// AES-256-XTS on AWS-LC (VAES/AVX-512 assembly): `key1 || key2`.
    Aes256(Box<[u8; 64]>),
}

impl XtsKey {
    /// Splits `key1 || key2` (32 or 64 bytes) into the data and tweak keys;
    /// `None` for other lengths, or when the halves are equal (OpenSSL
    /// rejects those too, and FIPS 140 requires it: the tweak key would be
    /// the data key, which XTS's security proof excludes).
    fn new(key: &[u8]) -> Option<XtsKey> {
        let (k1, k2) = key.split_at(key.len() / 2);
        if k1 == k2 {
            return None;
        }
        match key.len() {
            32 => Some(XtsKey::Aes128(Box::new(Xts128::new(
                aes::Aes128::new_from_slice(k1).ok()?,
                aes::Aes128::new_from_slice(k2).ok()?,
            )))),
            64 => Some(XtsKey::Aes256(Box::new(key.try_into().ok()?))),
            _ => None,
        }
    }

    /// Runs whole sectors of `sector_size` bytes in place (the last may be
    /// shorter; the caller checks every one holds at least one block), the
    /// first with tweak `first`, the next `first + 1`, and so on.
    fn sectors(
        &self,
        data: &mut [u8],
        sector_size: usize,
        first: u128,
        direction: Direction,
    ) -> Result<(), OpError> {
        let tweaks = (0u128..).map(|i| first.wrapping_add(i).to_le_bytes());
        match self {
            XtsKey::Aes128(xts) => {
                for (sector, tweak) in data.chunks_mut(sector_size).zip(tweaks) {
                    match direction {
                        Direction::Encrypt => xts.encrypt_sector(sector, tweak.into()),
                        Direction::Decrypt => xts.decrypt_sector(sector, tweak.into()),
                    }
                }
            }
            XtsKey::Aes256(key) => {
                let failed = |e: crate::evp::EvpError| OpError::Input {
                    op: AesXts::NAME,
                    reason: e.to_string(),
                };
                let encrypt = direction == Direction::Encrypt;
                let mut ctx = EvpContext::new(EvpCipher::Aes256Xts, &key[..], &first.to_le_bytes(), encrypt)
                    .map_err(failed)?;
                for (i, (sector, tweak)) in data.chunks_mut(sector_size).zip(tweaks).enumerate() {
                    if i > 0 {
                        ctx.set_iv(&tweak).map_err(failed)?;
                    }
                    ctx.update_in_place(sector).map_err(failed)?;
                }
            }
        }
        Ok(())
    }
}

/// `aes-xts`: AES-XTS encryption or decryption of whole sectors.
pub struct AesXts {
    key: XtsKey,
    sector_size: usize,
    first_sector: u64,
    direction: Direction,
}

impl std::fmt::Debug for AesXts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        let key_bits = match self.key {
            XtsKey::Aes128(_) => 2 * 128,
            XtsKey::Aes256(_) => 2 * 256,
        };
        f.debug_struct("AesXts")
            .field("key_bits", &key_bits)
            .field("sector_size", &self.sector_size)
            .field("first_sector", &self.first_sector)
            .field("direction", &self.direction)
            .finish_non_exhaustive()
    }
}

/// The `sector-size` parameter: one block to SP 800-38E's limit of 2^20
/// blocks per data unit.
fn sector_size(p: &Params<'_>) -> Result<usize, OpError> {
    let size = p.u64_in("sector-size", BLOCK as u64..=(BLOCK as u64) << 20)?;
    Ok(size as usize)
}

impl AesXts {
    /// Builds from `key`, `sector-size`, `sector` and `direction`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        const EXPECTED: &str = "hex bytes, 32 or 64 bytes long, whose two halves differ";
        let key = XtsKey::new(&p.hex_bytes("key", &[32, 64])?).ok_or_else(|| p.bad("key", EXPECTED))?;
        Ok(Box::new(AesXts {
            key,
            sector_size: sector_size(p)?,
            first_sector: p.u64_in("sector", 0..=u64::MAX)?,
            direction: p.choice(
                "direction",
                &[("encrypt", Direction::Encrypt), ("decrypt", Direction::Decrypt)],
            )?,
        }))
    }

    /// Checks that `data` divides into sectors of at least one block each.
    fn check(&self, data: &[u8]) -> Result<(), OpError> {
        let last = data.len() % self.sector_size;
        if last != 0 && last < BLOCK {
            return Err(OpError::Input {
                op: Self::NAME,
                reason: format!(
                    "{} bytes end in a sector of {last} bytes; with {}-byte sectors the last \
                     may be shorter, but at least 16 bytes",
                    data.len(),
                    self.sector_size
                ),
            });
        }
        Ok(())
    }

    /// Runs `data`, which starts at sector `first` (a whole number of
    /// sectors but the last), in place.
    fn apply(&self, first: u128, data: &mut [u8]) -> Result<(), OpError> {
        self.check(data)?;
        self.key.sectors(data, self.sector_size, first, self.direction)
    }
}

impl UnitCipher for AesXts {
    const NAME: &'static str = "aes-xts";

    fn unit(&self) -> usize {
        self.sector_size
    }

    /// Runs the range's sectors, numbered from its offset.
    fn apply_at(&self, offset: u64, data: &mut [u8]) -> Result<(), OpError> {
        let first = u128::from(self.first_sector) + u128::from(offset / self.sector_size as u64);
        self.apply(first, data)
    }
}

/// A cipher that transforms its input in place unit by unit (CTR blocks,
/// XTS sectors), so that a range starting on a unit runs on its own: one
/// `Operator` and one `Placement` implementation serve them all.
trait UnitCipher: Send + Sync {
    /// The registered name.
    const NAME: &'static str;
    /// Subtasks start on multiples of this many bytes.
    fn unit(&self) -> usize;
    /// Transforms `data`, which starts `offset` bytes (a multiple of
    /// `unit`) into the input, in place.
    fn apply_at(&self, offset: u64, data: &mut [u8]) -> Result<(), OpError>;
}

impl<T: UnitCipher> Operator for T {
    fn name(&self) -> &'static str {
        T::NAME
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        let mut out = input.to_vec();
        self.apply_at(0, &mut out)?;
        Ok(out)
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        Some(self)
    }

    fn placement(&self) -> Option<&dyn Placement> {
        Some(self)
    }
}

impl<T: UnitCipher> Placement for T {
    /// Ranges of whole units (the chunk is rounded up to a multiple).
    fn plan(&self, task: TaskId, len: usize, chunk: usize) -> Result<Vec<Subtask>, OpError> {
        Ok(aligned_plan(task, len, chunk, self.unit()))
    }

    fn output_len(&self, input_len: usize) -> Result<usize, OpError> {
        Ok(input_len)
    }

    /// The subtask's own range.
    fn regions(&self, part: &Subtask, _: usize) -> Vec<Range<usize>> {
        own_range(part)
    }

    fn run_part_into(
        &self,
        part: &Subtask,
        input: &[u8],
        regions: &mut [&mut [u8]],
    ) -> Result<Carry, OpError> {
        let out = copy_part(T::NAME, part, input, regions, self.unit())?;
        self.apply_at(part.offset, out)?;
        Ok(Box::new(()))
    }

    /// Nothing to add: the subtasks wrote the whole output.
    fn finish(&self, _: Vec<Carry>, _: &mut [u8]) -> Result<(), OpError> {
        Ok(())
    }
}

/// AES-XTS of one data unit under a raw 16-byte `tweak` (test vectors give
/// tweaks that are not sector numbers), in place. `key` is `key1 || key2`,
/// 32 or 64 bytes; `data` must hold at least one block.
pub fn xts_with_tweak(
    key: &[u8],
    tweak: [u8; 16],
    data: &mut [u8],
    direction: Direction,
) -> Result<(), OpError> {
    let key = XtsKey::new(key).ok_or_else(|| OpError::Input {
        op: AesXts::NAME,
        reason: format!(
            "a {}-byte key; XTS takes 32 or 64 bytes whose two halves differ",
            key.len()
        ),
    })?;
    if data.len() < BLOCK {
        return Err(OpError::Input {
            op: AesXts::NAME,
            reason: format!("{} bytes is shorter than one 16-byte block", data.len()),
        });
    }
    // One data unit: the whole of `data` as one sector.
    key.sectors(data, data.len(), u128::from_le_bytes(tweak), direction)
}

/// `payload` made a valid `aes-xts` input for `params`: a last sector
/// shorter than one block is padded with zeros to 16 bytes.
pub fn xts_input(
    params: &std::collections::BTreeMap<String, String>,
    payload: &[u8],
) -> Result<Vec<u8>, OpError> {
    let checked = Params::new(format!("operator `{}`", AesXts::NAME), XTS_PARAMS, params)?;
    let size = sector_size(&checked)?;
    let mut input = payload.to_vec();
    let last = input.len() % size;
    if input.is_empty() || (last != 0 && last < BLOCK) {
        input.resize(input.len() - last + BLOCK, 0);
    }
    Ok(input)
}
