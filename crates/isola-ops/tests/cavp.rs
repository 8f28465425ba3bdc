//! NIST CAVP vectors (see tests/data/cavp/README.md): the digests and
//! AES-GCM operators, whole and split into subtasks, give NIST's answers.

mod common;

use common::unhex;
use isola_ops::{build_operator, run_split};
use std::collections::BTreeMap;

/// The records of a CAVP response file: `Name = value` lines, records
/// separated by blank lines; a bare `FAIL` line is recorded as `FAIL = ""`.
/// Section headers (`[...]`) and comments are skipped.
fn records(file: &str) -> Vec<BTreeMap<String, String>> {
    let path = format!("{}/tests/data/cavp/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = Vec::new();
    let mut current = BTreeMap::new();
    for line in text.lines().map(str::trim).chain([""]) {
        if line.is_empty() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else if line == "FAIL" {
            current.insert("FAIL".to_string(), String::new());
        } else if let Some((k, v)) = line.split_once('=') {
            if !line.starts_with('#') && !line.starts_with('[') {
                current.insert(k.trim().to_string(), v.trim().to_string());
            }
        }
    }
    out
}

#[test]
fn digests_match_nist_and_rfc_1321() {
    let files = [
        ("md5", "rfc-1321.txt", 7),
        ("sha1", "SHA1ShortMsg.rsp", 65),
        ("sha1", "SHA1LongMsg.rsp", 64),
        ("sha256", "SHA256ShortMsg.rsp", 65),
        ("sha256", "SHA256LongMsg.rsp", 64),
        ("sha3-256", "SHA3_256ShortMsg.rsp", 137),
    ];
    for (op, file, expected) in files {
        let op = build_operator(op, &BTreeMap::new()).unwrap();
        let vectors: Vec<_> = records(file)
            .into_iter()
            .filter(|r| r.contains_key("MD"))
            .collect();
        assert_eq!(vectors.len(), expected, "{file}");
        for r in vectors {
            let bits: usize = r["Len"].parse().unwrap();
            // `Len = 0` is written with the placeholder `Msg = 00`.
            let msg = &unhex(&r["Msg"])[..bits / 8];
            let md = unhex(&r["MD"]);
            assert_eq!(op.run(msg).unwrap(), md, "{file} Len = {bits}");
            if op.splitter().is_some() {
                for chunk in [1, 63, 1000] {
                    assert_eq!(
                        run_split(op.as_ref(), msg, chunk).unwrap(),
                        md,
                        "{file} Len = {bits} split {chunk}"
                    );
                }
            }
        }
    }
}

fn gcm_params(r: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut p = BTreeMap::new();
    p.insert("key".to_string(), r["Key"].clone());
    p.insert("iv".to_string(), r["IV"].clone());
    p.insert("aad".to_string(), r["AAD"].clone());
    p
}

#[test]
fn aes_gcm_encryption_matches_nist() {
    for file in [
        "gcmEncryptExtIV128_iv96_tag128.rsp",
        "gcmEncryptExtIV256_iv96_tag128.rsp",
    ] {
        let vectors = records(file);
        assert_eq!(vectors.len(), 375, "{file}");
        for r in vectors {
            let op = build_operator("aes-gcm-encrypt", &gcm_params(&r)).unwrap();
            let pt = unhex(&r["PT"]);
            let expected = [unhex(&r["CT"]), unhex(&r["Tag"])].concat();
            assert_eq!(op.run(&pt).unwrap(), expected, "{file} Count = {}", r["Count"]);
            assert_eq!(
                run_split(op.as_ref(), &pt, 16).unwrap(),
                expected,
                "{file} split, Count = {}",
                r["Count"]
            );
        }
    }
}

#[test]
fn aes_gcm_decryption_matches_nist_including_failures() {
    let vectors = records("gcmDecrypt256_iv96_tag128.rsp");
    assert_eq!(vectors.len(), 375);
    let mut failures = 0;
    for r in vectors {
        let op = build_operator("aes-gcm-decrypt", &gcm_params(&r)).unwrap();
        let input = [unhex(&r["CT"]), unhex(&r["Tag"])].concat();
        match r.get("PT") {
            Some(pt) => assert_eq!(op.run(&input).unwrap(), unhex(pt), "Count = {}", r["Count"]),
            None => {
                assert!(r.contains_key("FAIL"));
                assert!(
                    op.run(&input).is_err(),
                    "a forged tag was accepted, Count = {}",
                    r["Count"]
                );
                failures += 1;
            }
        }
    }
    assert!(failures > 50, "{failures}");
}
