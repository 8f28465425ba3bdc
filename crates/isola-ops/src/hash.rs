//! Digests: MD5, SHA-1, SHA-256 and SHA3-256 (RustCrypto). The output is the
//! raw digest, as `sha256sum` and friends print before hex encoding.
//!
//! A split hash runs as ordered subtasks: each one feeds its slice to the
//! hash state it is handed and hands the state on; the last one's state is
//! finalised. The digest equals the one-shot digest by construction of the
//! Merkle-Damgard (and sponge) constructions; the property tests check it.

use crate::operator::{downcast, part_slice, Carry, OpError, Operator, Splitter};
use isola_core::Subtask;
use sha2::Digest;
use std::marker::PhantomData;

/// A digest operator over any RustCrypto hash `D`.
#[derive(Debug)]
pub struct HashOp<D> {
    name: &'static str,
    hash: PhantomData<fn() -> D>,
}

impl<D> HashOp<D> {
    /// The operator registered as `name`.
    pub const fn new(name: &'static str) -> Self {
        HashOp {
            name,
            hash: PhantomData,
        }
    }
}

impl<D: Digest + Clone + Send + 'static> Operator for HashOp<D> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        Ok(D::digest(input).to_vec())
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        Some(self)
    }
}

impl<D: Digest + Clone + Send + 'static> Splitter for HashOp<D> {
    fn ordered(&self) -> bool {
        true
    }

    fn run_part(&self, part: &Subtask, input: &[u8], previous: Option<Carry>) -> Result<Carry, OpError> {
        let mut state = match previous {
            Some(c) => downcast::<D>(self.name, c)?,
            None => D::new(),
        };
        state.update(part_slice(part, input));
        Ok(Box::new(state))
    }

    fn reassemble(&self, _input_len: usize, mut parts: Vec<Carry>) -> Result<Vec<u8>, OpError> {
        let state = match parts.pop() {
            Some(c) => downcast::<D>(self.name, c)?,
            None => D::new(),
        };
        Ok(state.finalize().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// Examples from FIPS 180-2 (SHA-1, SHA-256), RFC 1321 (MD5) and the
    /// NIST FIPS 202 example values (SHA3-256).
    #[test]
    fn published_test_vectors() {
        let cases: [(&dyn Operator, &[u8], &str); 7] = [
            (
                &HashOp::<sha2::Sha256>::new("sha256"),
                b"abc",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (
                &HashOp::<sha2::Sha256>::new("sha256"),
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
            ),
            (
                &HashOp::<sha1::Sha1>::new("sha1"),
                b"abc",
                "a9993e364706816aba3e25717850c26c9cd0d89d",
            ),
            (
                &HashOp::<md5::Md5>::new("md5"),
                b"",
                "d41d8cd98f00b204e9800998ecf8427e",
            ),
            (
                &HashOp::<md5::Md5>::new("md5"),
                b"message digest",
                "f96b697d7cb7938d525a2f31aaf161d0",
            ),
            (
                &HashOp::<sha3::Sha3_256>::new("sha3-256"),
                b"abc",
                "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532",
            ),
            (
                &HashOp::<sha3::Sha3_256>::new("sha3-256"),
                b"",
                "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a",
            ),
        ];
        for (op, input, want) in cases {
            assert_eq!(hex(&op.run(input).unwrap()), want, "{}", op.name());
            assert_eq!(
                hex(&crate::run_split(op, input, 7).unwrap()),
                want,
                "{} split",
                op.name()
            );
        }
    }

    #[test]
    fn a_million_a() {
        let input = vec![b'a'; 1_000_000];
        let op = HashOp::<sha2::Sha256>::new("sha256");
        let want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
        assert_eq!(hex(&crate::run_split(&op, &input, 65_536).unwrap()), want);
    }
}
