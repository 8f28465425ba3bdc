//! A safe owner of AWS-LC's streaming cipher context (`EVP_CIPHER_CTX`).
//!
//! `aws-lc-rs` offers one-shot AEAD and a few block modes, but not the
//! streaming AES-GCM that chained subtasks need, nor AES-XTS; the raw
//! `aws-lc-sys` bindings do, with AWS-LC's assembly (AES-NI, VAES, AVX-512)
//! behind them. Every unsafe call of the crate is in this module.

use std::ffi::c_int;
use std::ptr::NonNull;

/// The ciphers used through this interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvpCipher {
    /// AES-128-GCM (16-byte key, 12-byte IV).
    Aes128Gcm,
    /// AES-256-GCM (32-byte key, 12-byte IV).
    Aes256Gcm,
    /// AES-256-XTS (64-byte key pair, 16-byte tweak as the IV).
    Aes256Xts,
}

impl EvpCipher {
    fn key_len(self) -> usize {
        match self {
            EvpCipher::Aes128Gcm => 16,
            EvpCipher::Aes256Gcm => 32,
            EvpCipher::Aes256Xts => 64,
        }
    }

    fn iv_len(self) -> usize {
        match self {
            EvpCipher::Aes128Gcm | EvpCipher::Aes256Gcm => 12,
            EvpCipher::Aes256Xts => 16,
        }
    }

    fn raw(self) -> *const aws_lc_sys::EVP_CIPHER {
        // SAFETY: these return pointers to static cipher tables.
        unsafe {
            match self {
                EvpCipher::Aes128Gcm => aws_lc_sys::EVP_aes_128_gcm(),
                EvpCipher::Aes256Gcm => aws_lc_sys::EVP_aes_256_gcm(),
                EvpCipher::Aes256Xts => aws_lc_sys::EVP_aes_256_xts(),
            }
        }
    }
}

/// What went wrong in AWS-LC: the function that failed (it fails only on
/// allocation, misuse caught here first, or an input it refuses, such as an
/// XTS unit under one block or a GCM message over its limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvpError(pub &'static str);

impl std::fmt::Display for EvpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AWS-LC {} failed", self.0)
    }
}

/// Inputs are fed in pieces of at most this many bytes (lengths are C ints).
const PIECE: usize = 1 << 30;

/// A keyed cipher context, owned; freed on drop.
pub struct EvpContext {
    ctx: NonNull<aws_lc_sys::EVP_CIPHER_CTX>,
    cipher: EvpCipher,
}

// SAFETY: the context is heap memory owned by this value alone, with no
// shared or thread-local state, so it may move to another thread (between
// chained subtasks); it is never used from two threads at once (no Sync).
unsafe impl Send for EvpContext {}

impl Drop for EvpContext {
    fn drop(&mut self) {
        // SAFETY: `ctx` came from EVP_CIPHER_CTX_new and is freed once, here.
        unsafe { aws_lc_sys::EVP_CIPHER_CTX_free(self.ctx.as_ptr()) }
    }
}

impl std::fmt::Debug for EvpContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvpContext")
            .field("cipher", &self.cipher)
            .finish_non_exhaustive()
    }
}

impl EvpContext {
    /// A context for `cipher` with `key` and `iv`, encrypting or decrypting.
    pub fn new(cipher: EvpCipher, key: &[u8], iv: &[u8], encrypt: bool) -> Result<Self, EvpError> {
        if key.len() != cipher.key_len() || iv.len() != cipher.iv_len() {
            return Err(EvpError("key or IV length check"));
        }
        // SAFETY: a fresh context (checked non-null) is initialised with a
        // static cipher and key and IV buffers of the lengths it reads.
        unsafe {
            let ctx = NonNull::new(aws_lc_sys::EVP_CIPHER_CTX_new()).ok_or(EvpError("EVP_CIPHER_CTX_new"))?;
            let context = EvpContext { ctx, cipher };
            if aws_lc_sys::EVP_CipherInit_ex(
                ctx.as_ptr(),
                cipher.raw(),
                std::ptr::null_mut(),
                key.as_ptr(),
                iv.as_ptr(),
                c_int::from(encrypt),
            ) != 1
            {
                return Err(EvpError("EVP_CipherInit_ex"));
            }
            Ok(context)
        }
    }

    /// Starts over with a new IV (an XTS tweak), keeping the key schedule.
    pub fn set_iv(&mut self, iv: &[u8]) -> Result<(), EvpError> {
        if iv.len() != self.cipher.iv_len() {
            return Err(EvpError("IV length check"));
        }
        // SAFETY: null cipher and key keep the context's; the IV has the
        // length the cipher reads; -1 keeps the direction.
        let ok = unsafe {
            aws_lc_sys::EVP_CipherInit_ex(
                self.ctx.as_ptr(),
                std::ptr::null(),
                std::ptr::null_mut(),
                std::ptr::null(),
                iv.as_ptr(),
                -1,
            )
        };
        if ok == 1 {
            Ok(())
        } else {
            Err(EvpError("EVP_CipherInit_ex (IV)"))
        }
    }

    /// Feeds additional authenticated data (GCM).
    pub fn aad(&mut self, aad: &[u8]) -> Result<(), EvpError> {
        for piece in aad.chunks(PIECE) {
            let mut written: c_int = 0;
            // SAFETY: a null output marks AAD; the input is `piece.len()` bytes.
            let ok = unsafe {
                aws_lc_sys::EVP_CipherUpdate(
                    self.ctx.as_ptr(),
                    std::ptr::null_mut(),
                    &mut written,
                    piece.as_ptr(),
                    piece.len() as c_int,
                )
            };
            if ok != 1 {
                return Err(EvpError("EVP_CipherUpdate (AAD)"));
            }
        }
        Ok(())
    }

    /// Transforms `data` in place (one XTS data unit, or a GCM stretch).
    pub fn update_in_place(&mut self, data: &mut [u8]) -> Result<(), EvpError> {
        if self.cipher == EvpCipher::Aes256Xts && data.len() > PIECE {
            return Err(EvpError("XTS data unit length check"));
        }
        for piece in data.chunks_mut(PIECE) {
            let mut written: c_int = 0;
            let ptr = piece.as_mut_ptr();
            // SAFETY: AWS-LC's GCM and XTS allow the output to be the input
            // (`in == out`); the buffer holds `piece.len()` bytes.
            let ok = unsafe {
                aws_lc_sys::EVP_CipherUpdate(self.ctx.as_ptr(), ptr, &mut written, ptr, piece.len() as c_int)
            };
            if ok != 1 || written as usize != piece.len() {
                return Err(EvpError("EVP_CipherUpdate"));
            }
        }
        Ok(())
    }

    /// Transforms `input`, appending the output to `out` (no zero-filling).
    pub fn update_append(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), EvpError> {
        for piece in input.chunks(PIECE) {
            out.reserve(piece.len());
            let mut written: c_int = 0;
            // SAFETY: the spare capacity holds `piece.len()` bytes (reserved
            // above), which these modes write exactly (checked before the
            // length is extended over them).
            unsafe {
                let end = out.as_mut_ptr().add(out.len());
                if aws_lc_sys::EVP_CipherUpdate(
                    self.ctx.as_ptr(),
                    end,
                    &mut written,
                    piece.as_ptr(),
                    piece.len() as c_int,
                ) != 1
                    || written as usize != piece.len()
                {
                    return Err(EvpError("EVP_CipherUpdate"));
                }
                out.set_len(out.len() + piece.len());
            }
        }
        Ok(())
    }

    /// Finishes GCM encryption and returns the 16-byte tag.
    pub fn gcm_tag(&mut self) -> Result<[u8; 16], EvpError> {
        let mut tag = [0u8; 16];
        let mut written: c_int = 0;
        let mut scratch = [0u8; 16];
        // SAFETY: GCM's final step writes no data (the scratch block has
        // room anyway); the tag buffer holds the 16 bytes asked for.
        unsafe {
            if aws_lc_sys::EVP_CipherFinal_ex(self.ctx.as_ptr(), scratch.as_mut_ptr(), &mut written) != 1
                || written != 0
            {
                return Err(EvpError("EVP_CipherFinal_ex"));
            }
            if aws_lc_sys::EVP_CIPHER_CTX_ctrl(
                self.ctx.as_ptr(),
                aws_lc_sys::EVP_CTRL_GCM_GET_TAG,
                16,
                tag.as_mut_ptr().cast(),
            ) != 1
            {
                return Err(EvpError("EVP_CTRL_GCM_GET_TAG"));
            }
        }
        Ok(tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_checked_before_any_ffi_call() {
        assert!(EvpContext::new(EvpCipher::Aes256Gcm, &[0; 16], &[0; 12], true).is_err());
        assert!(EvpContext::new(EvpCipher::Aes256Gcm, &[0; 32], &[0; 16], true).is_err());
        let mut ctx = EvpContext::new(EvpCipher::Aes256Gcm, &[0; 32], &[0; 12], true).unwrap();
        assert!(ctx.set_iv(&[0; 16]).is_err());
    }

    /// The SP 800-38D test case 13 (AES-256, all-zero key and IV, empty
    /// message): the tag is 530f8afbc74536b9a963b4f1c4cb738b.
    #[test]
    fn gcm_empty_message_tag() {
        let mut ctx = EvpContext::new(EvpCipher::Aes256Gcm, &[0; 32], &[0; 12], true).unwrap();
        let tag = ctx.gcm_tag().unwrap();
        assert_eq!(
            tag,
            [
                0x53, 0x0f, 0x8a, 0xfb, 0xc7, 0x45, 0x36, 0xb9, 0xa9, 0x63, 0xb4, 0xf1, 0xc4, 0xcb, 0x73,
                0x8b
            ]
        );
    }
}
