//! Digital signatures over SHA-256: RSA PKCS#1 v1.5 (RSA-2048), ECDSA on
//! P-256 and DSA with a 2048-bit `p` and 256-bit `q` (FIPS 186-4). One
//! generic signing operator and one generic verifying operator, each
//! parameterised by a [`Scheme`].
//!
//! `*-sign` takes the message and outputs the signature: for RSA the
//! modulus-sized integer, for ECDSA and DSA the DER `SEQUENCE { r, s }`,
//! exactly what `openssl dgst -sha256 -sign key.pem` writes (RSA PKCS#1
//! v1.5 is deterministic, so its bytes are OpenSSL's too; ECDSA signs with
//! a random nonce, DSA with RFC 6979's deterministic one).
//!
//! `*-verify` takes the signature followed by the message; the signature's
//! length comes from its encoding (RSA: the modulus size; ECDSA and DSA: the
//! DER SEQUENCE's header). A valid signature gives an empty output; a
//! signature that does not verify, or one that cannot be framed, is an
//! [`OpError::Input`].
//!
//! Keys: parameter `key` is the path to a PEM file, a PKCS#8 private key
//! for signing, and for verifying either a SubjectPublicKeyInfo public key
//! or the private key. Keys are parsed once, when the operator is built.
//! The default, `demo`, is a built-in key pair per scheme, generated once
//! with the `openssl` CLI (`crates/isola-ops/keys/`): its private half is
//! published, so it is for tests and benchmarks only.
//!
//! RSA and ECDSA run on AWS-LC (`aws-lc-rs`); DSA, which AWS-LC's Rust API
//! does not offer, on RustCrypto's `dsa`. Signatures cover the whole
//! message, so none of these operators splits.

use crate::operator::{read_text_file, OpError, Operator};
use crate::registry::build_operator;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    EcdsaKeyPair, KeyPair, ParsedPublicKey, RsaKeyPair, RsaParameters, RsaSubjectPublicKey,
    ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_ASN1_SIGNING, RSA_PKCS1_2048_8192_SHA256, RSA_PKCS1_SHA256,
};
use dsa::pkcs8::der::Encode;
use dsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use dsa::signature::{Signer, Verifier};
use isola_core::params::{ParamSpec, Params};
use std::collections::BTreeMap;

/// Parameters of the `*-sign` operators.
pub const SIGN_PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "key",
    default: "demo",
    description: "path to a PEM PKCS#8 private key; `demo`: the built-in demo key (published: tests only)",
}];

/// Parameters of the `*-verify` operators.
pub const VERIFY_PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "key",
    default: "demo",
    description: "path to a PEM public key (SPKI) or PKCS#8 private key; `demo`: the built-in demo key",
}];

/// The RSA moduli accepted, in bits (what AWS-LC verifies).
const RSA_BITS: std::ops::RangeInclusive<usize> = 2048..=8192;

/// A signature scheme: algorithm, key type and hash (always SHA-256).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RSA-2048 demo key; 2048 to 8192-bit keys).
    Rsa,
    /// ECDSA on P-256 with SHA-256, DER signatures.
    Ecdsa,
    /// DSA with SHA-256, DER signatures (2048-bit `p`, 256-bit `q` demo key).
    Dsa,
}

impl Scheme {
    /// Every scheme.
    pub const ALL: [Scheme; 3] = [Scheme::Rsa, Scheme::Ecdsa, Scheme::Dsa];

    /// The signing operator's registered name.
    pub const fn sign_name(self) -> &'static str {
        match self {
            Scheme::Rsa => "rsa-sign",
            Scheme::Ecdsa => "ecdsa-sign",
            Scheme::Dsa => "dsa-sign",
        }
    }

    /// The verifying operator's registered name.
    pub const fn verify_name(self) -> &'static str {
        match self {
            Scheme::Rsa => "rsa-verify",
            Scheme::Ecdsa => "ecdsa-verify",
            Scheme::Dsa => "dsa-verify",
        }
    }

    /// The key type, for errors.
    const fn key_type(self) -> &'static str {
        match self {
            Scheme::Rsa => "RSA (2048 to 8192 bits)",
            Scheme::Ecdsa => "EC P-256",
            Scheme::Dsa => "DSA",
        }
    }

    /// The built-in demo key pair: PKCS#8 private key and SPKI public key, PEM.
    const fn demo_keys(self) -> (&'static str, &'static str) {
        match self {
            Scheme::Rsa => (
                include_str!("../keys/rsa-demo.pem"),
                include_str!("../keys/rsa-demo.pub.pem"),
            ),
            Scheme::Ecdsa => (
                include_str!("../keys/ecdsa-demo.pem"),
                include_str!("../keys/ecdsa-demo.pub.pem"),
            ),
            Scheme::Dsa => (
                include_str!("../keys/dsa-demo.pem"),
                include_str!("../keys/dsa-demo.pub.pem"),
            ),
        }
    }

    /// Parses a PKCS#8 private key (DER) of this scheme.
    fn signing_key(self, pkcs8: &[u8]) -> Result<SigningKey, String> {
        Ok(match self {
            Scheme::Rsa => {
                let key = RsaKeyPair::from_pkcs8(pkcs8).map_err(|e| e.to_string())?;
                check_rsa_bits(key.public_modulus_len() * 8)?;
                SigningKey::Rsa(key)
            }
            Scheme::Ecdsa => SigningKey::Ecdsa(
                EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8)
                    .map_err(|e| e.to_string())?,
            ),
            Scheme::Dsa => SigningKey::Dsa(Box::new(
                dsa::SigningKey::from_pkcs8_der(pkcs8).map_err(|e| e.to_string())?,
            )),
        })
    }

    /// Parses a public key (DER) of this scheme: a SubjectPublicKeyInfo, or
    /// for RSA also a PKCS#1 `RSAPublicKey`, for ECDSA an uncompressed point.
    fn verifying_key(self, public: &[u8]) -> Result<VerifyingKey, String> {
        match self {
            Scheme::Rsa => VerifyingKey::rsa(public),
            Scheme::Ecdsa => Ok(VerifyingKey::Ecdsa(
                ParsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, public).map_err(|e| e.to_string())?,
            )),
            Scheme::Dsa => Ok(VerifyingKey::Dsa(Box::new(
                dsa::VerifyingKey::from_public_key_der(public).map_err(|e| e.to_string())?,
            ))),
        }
    }
}

fn check_rsa_bits(bits: usize) -> Result<(), String> {
    if RSA_BITS.contains(&bits) {
        Ok(())
    } else {
        Err(format!(
            "a {bits}-bit RSA modulus; 2048 to 8192 bits are accepted"
        ))
    }
}

/// A parsed private key.
enum SigningKey {
    Rsa(RsaKeyPair),
    Ecdsa(EcdsaKeyPair),
    Dsa(Box<dsa::SigningKey>),
}

impl SigningKey {
    /// Signs `msg` (hashing it with SHA-256).
    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            SigningKey::Rsa(key) => {
                let mut sig = vec![0u8; key.public_modulus_len()];
                key.sign(&RSA_PKCS1_SHA256, &SystemRandom::new(), msg, &mut sig)
                    .map_err(|e| format!("RSA signing failed: {e}"))?;
                Ok(sig)
            }
            SigningKey::Ecdsa(key) => key
                .sign(&SystemRandom::new(), msg)
                .map(|sig| sig.as_ref().to_vec())
                .map_err(|e| format!("ECDSA signing failed: {e}")),
            SigningKey::Dsa(key) => key
                .try_sign(msg)
                .map_err(|e| format!("DSA signing failed: {e}"))?
                .to_der()
                .map_err(|e| format!("DSA signature encoding failed: {e}")),
        }
    }

    /// The matching public key.
    fn verifying_key(&self) -> Result<VerifyingKey, String> {
        match self {
            // PKCS#1 `RSAPublicKey` and an uncompressed point: what
            // `Scheme::verifying_key` takes besides SPKI.
            SigningKey::Rsa(key) => VerifyingKey::rsa(key.public_key().as_ref()),
            SigningKey::Ecdsa(key) => Scheme::Ecdsa.verifying_key(key.public_key().as_ref()),
            SigningKey::Dsa(key) => Ok(VerifyingKey::Dsa(Box::new(key.verifying_key().clone()))),
        }
    }
}

/// A parsed public key.
enum VerifyingKey {
    Rsa {
        key: ParsedPublicKey,
        /// The modulus size in bytes, which every signature has.
        signature_len: usize,
    },
    Ecdsa(ParsedPublicKey),
    Dsa(Box<dsa::VerifyingKey>),
}

impl VerifyingKey {
    /// An RSA public key from SPKI or PKCS#1 `RSAPublicKey` DER.
    fn rsa(public: &[u8]) -> Result<VerifyingKey, String> {
        let pkcs1 = RsaSubjectPublicKey::from_der(public).map_err(|e| e.to_string())?;
        let bits = RsaParameters::public_modulus_len(pkcs1.as_ref()).map_err(|e| e.to_string())?;
        let bits = bits as usize;
        check_rsa_bits(bits)?;
        Ok(VerifyingKey::Rsa {
            key: ParsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, pkcs1.as_ref())
                .map_err(|e| e.to_string())?,
            signature_len: bits.div_ceil(8),
        })
    }

    /// The length of the signature at the front of a verify input.
    fn signature_len(&self, input: &[u8]) -> Result<usize, String> {
        match self {
            VerifyingKey::Rsa { signature_len, .. } if input.len() < *signature_len => Err(format!(
                "malformed signature: {} bytes cannot hold the {signature_len}-byte signature",
                input.len()
            )),
            VerifyingKey::Rsa { signature_len, .. } => Ok(*signature_len),
            VerifyingKey::Ecdsa(_) | VerifyingKey::Dsa(_) => der_sequence_len(input),
        }
    }

    /// Whether `sig` is a valid signature of `msg`.
    fn verify(&self, sig: &[u8], msg: &[u8]) -> bool {
        match self {
            VerifyingKey::Rsa { key, .. } | VerifyingKey::Ecdsa(key) => key.verify_sig(msg, sig).is_ok(),
            VerifyingKey::Dsa(key) => {
                dsa::Signature::try_from(sig).is_ok_and(|sig| key.verify(msg, &sig).is_ok())
            }
        }
    }
}

/// The length, header included, of the DER SEQUENCE that `input` starts
/// with (definite-length DER, up to 64 KiB: signatures are far shorter).
fn der_sequence_len(input: &[u8]) -> Result<usize, String> {
    let total = match *input {
        [0x30, len @ 0..=0x7f, ..] => 2 + usize::from(len),
        [0x30, 0x81, len @ 0x80..=0xff, ..] => 3 + usize::from(len),
        [0x30, 0x82, hi @ 1..=0xff, lo, ..] => 4 + usize::from(u16::from_be_bytes([hi, lo])),
        [0x30, ..] => {
            return Err("malformed signature: the SEQUENCE's length is not in DER form".into());
        }
        _ => return Err("malformed signature: it does not start with a DER SEQUENCE (0x30)".into()),
    };
    if total > input.len() {
        return Err(format!(
            "malformed signature: its SEQUENCE takes {total} bytes, the input has {}",
            input.len()
        ));
    }
    Ok(total)
}

/// The label and DER contents of the first PEM block in `text` (RFC 7468).
fn pem_decode(text: &str) -> Result<(&str, Vec<u8>), String> {
    let mut lines = text.lines().map(str::trim);
    let label = lines
        .by_ref()
        .find_map(|line| line.strip_prefix("-----BEGIN ")?.strip_suffix("-----"))
        .ok_or("no `-----BEGIN ...-----` line")?;
    let end = format!("-----END {label}-----");
    let mut body = String::new();
    for line in lines {
        if line == end {
            return base64_decode(&body)
                .map(|der| (label, der))
                .ok_or_else(|| format!("the {label} block is not valid base64"));
        }
        body.push_str(line);
    }
    Err(format!("no `{end}` line"))
}

/// Standard base64 (RFC 4648 §4) with padding; `None` if malformed.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    if text.len() % 4 != 0 {
        return None;
    }
    let data = text
        .strip_suffix("==")
        .or_else(|| text.strip_suffix('='))
        .unwrap_or(text);
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in data.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        // `acc` keeps fewer than 8 pending bits, so it never overflows.
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// The `key` parameter's PEM block: its label and DER contents.
fn key_block(p: &Params<'_>, demo_pem: &'static str, expected: &str) -> Result<(String, Vec<u8>), OpError> {
    let path = p.raw("key");
    let text = if path == "demo" {
        std::borrow::Cow::Borrowed(demo_pem)
    } else {
        std::borrow::Cow::Owned(
            read_text_file(path, 1 << 20)
                .map_err(|e| p.bad("key", &format!("{expected} (cannot read it: {e})")))?,
        )
    };
    let (label, der) = pem_decode(&text).map_err(|e| p.bad("key", &format!("{expected} ({e})")))?;
    Ok((label.to_string(), der))
}

/// Why a PEM block with `label` is not what was expected.
fn wrong_label(label: &str) -> String {
    let hint = if label.ends_with("PRIVATE KEY") {
        "; convert it with `openssl pkcs8 -topk8 -nocrypt`"
    } else {
        ""
    };
    format!("it holds a `{label}` block{hint}")
}

/// `*-sign`: the message in, its signature out.
pub struct Sign {
    scheme: Scheme,
    key: SigningKey,
}

impl std::fmt::Debug for Sign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("Sign")
            .field("scheme", &self.scheme)
            .finish_non_exhaustive()
    }
}

impl Sign {
    /// Builds the `scheme` signer from `key`.
    pub fn build(scheme: Scheme, p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let expected = format!("a PEM file holding a PKCS#8 {} private key", scheme.key_type());
        let (label, der) = key_block(p, scheme.demo_keys().0, &expected)?;
        if label != "PRIVATE KEY" {
            return Err(p
                .bad("key", &format!("{expected} ({})", wrong_label(&label)))
                .into());
        }
        let key = scheme
            .signing_key(&der)
            .map_err(|e| p.bad("key", &format!("{expected} ({e})")))?;
        Ok(Box::new(Sign { scheme, key }))
    }
}

impl Operator for Sign {
    fn name(&self) -> &'static str {
        self.scheme.sign_name()
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        self.key.sign(input).map_err(|reason| OpError::Input {
            op: self.name(),
            reason,
        })
    }
}

/// `*-verify`: the signature then the message in; empty output if the
/// signature is valid, else an error.
pub struct Verify {
    scheme: Scheme,
    key: VerifyingKey,
}

impl std::fmt::Debug for Verify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verify")
            .field("scheme", &self.scheme)
            .finish_non_exhaustive()
    }
}

impl Verify {
    /// Builds the `scheme` verifier from `key` (a public or private key).
    pub fn build(scheme: Scheme, p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let expected = format!(
            "a PEM file holding a {} public key (SPKI) or PKCS#8 private key",
            scheme.key_type()
        );
        let (label, der) = key_block(p, scheme.demo_keys().1, &expected)?;
        let key = match label.as_str() {
            "PUBLIC KEY" => scheme.verifying_key(&der),
            "PRIVATE KEY" => scheme.signing_key(&der).and_then(|k| k.verifying_key()),
            _ => Err(wrong_label(&label)),
        }
        .map_err(|e| p.bad("key", &format!("{expected} ({e})")))?;
        Ok(Box::new(Verify { scheme, key }))
    }

    /// A `scheme` verifier for a DER public key: a SubjectPublicKeyInfo (or,
    /// for RSA, a PKCS#1 `RSAPublicKey`; for ECDSA, an uncompressed point).
    pub fn from_public_der(scheme: Scheme, public: &[u8]) -> Result<Verify, OpError> {
        let key = scheme.verifying_key(public).map_err(|e| OpError::Input {
            op: scheme.verify_name(),
            reason: format!("not a {} public key: {e}", scheme.key_type()),
        })?;
        Ok(Verify { scheme, key })
    }

    /// Checks that `signature` is a valid signature of `message`.
    pub fn verify(&self, signature: &[u8], message: &[u8]) -> Result<(), OpError> {
        if self.key.verify(signature, message) {
            Ok(())
        } else {
            Err(OpError::Input {
                op: self.name(),
                reason: "signature does not verify".into(),
            })
        }
    }
}

impl Operator for Verify {
    fn name(&self) -> &'static str {
        self.scheme.verify_name()
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        let len = self.key.signature_len(input).map_err(|reason| OpError::Input {
            op: self.name(),
            reason,
        })?;
        let (signature, message) = input.split_at(len);
        self.verify(signature, message)?;
        Ok(Vec::new())
    }
}

/// A valid input for verifier `name` built with `params`: `payload` signed
/// with the same key (so `key` must be a private key, or `demo`), the
/// signature first.
pub fn signed_input(
    name: &str,
    params: &BTreeMap<String, String>,
    payload: &[u8],
) -> Result<Vec<u8>, OpError> {
    let scheme = Scheme::ALL
        .into_iter()
        .find(|s| s.verify_name() == name)
        .ok_or_else(|| OpError::Input {
            op: "sample",
            reason: format!("`{name}` is not a signature verifier"),
        })?;
    let signature = build_operator(scheme.sign_name(), params)?.run(payload)?;
    Ok([&signature[..], payload].concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_and_rejects_garbage() {
        assert_eq!(base64_decode("").unwrap(), b"");
        assert_eq!(base64_decode("Zg==").unwrap(), b"f");
        assert_eq!(base64_decode("Zm8=").unwrap(), b"fo");
        assert_eq!(base64_decode("Zm9v").unwrap(), b"foo");
        assert_eq!(base64_decode("Zm9vYmFy").unwrap(), b"foobar");
        assert_eq!(base64_decode("+/+/").unwrap(), [0xfb, 0xff, 0xbf]);
        for bad in ["Zm9", "Zm9v!", "Zg=a", "Z===", "Zm 9"] {
            assert!(base64_decode(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn der_sequence_framing() {
        assert_eq!(der_sequence_len(&[0x30, 0x02, 1, 2, 3]), Ok(4));
        assert_eq!(
            der_sequence_len(&[0x30, 0x81, 0x80])
                .err()
                .map(|e| e.contains("takes 131")),
            Some(true)
        );
        assert!(
            der_sequence_len(&[0x30, 0x81, 0x7f]).is_err(),
            "non-minimal length"
        );
        assert!(der_sequence_len(&[0x30, 0x80]).is_err(), "indefinite length");
        assert!(der_sequence_len(&[0x31, 0x00]).is_err());
        assert!(der_sequence_len(&[]).is_err());
        let mut long = vec![0x30, 0x82, 0x01, 0x00];
        long.resize(4 + 256, 0);
        assert_eq!(der_sequence_len(&long), Ok(260));
    }

    #[test]
    fn demo_keys_are_pairs() {
        for scheme in Scheme::ALL {
            let (private, public) = scheme.demo_keys();
            let (label, der) = pem_decode(private).unwrap();
            assert_eq!(label, "PRIVATE KEY");
            let signer = scheme.signing_key(&der).unwrap();
            let (label, der) = pem_decode(public).unwrap();
            assert_eq!(label, "PUBLIC KEY");
            let from_public = scheme.verifying_key(&der).unwrap();
            let from_private = signer.verifying_key().unwrap();
            let sig = signer.sign(b"demo").unwrap();
            assert!(from_public.verify(&sig, b"demo"), "{scheme:?}");
            assert!(from_private.verify(&sig, b"demo"), "{scheme:?}");
            assert!(!from_public.verify(&sig, b"demo!"), "{scheme:?}");
        }
    }
}
