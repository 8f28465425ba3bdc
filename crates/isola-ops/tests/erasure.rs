//! Reed-Solomon: whatever up to m shards are lost, ec-recover gives back the
//! data shards ec-encode was given; malformed input is an error, never a panic.

mod common;

use common::random_bytes;
use isola_ops::{build_operator, run_split, Operator};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn op(name: &str, k: usize, m: usize, lost: &[usize]) -> Box<dyn Operator> {
    let mut p = BTreeMap::new();
    p.insert("k".to_string(), k.to_string());
    p.insert("m".to_string(), m.to_string());
    if name == "ec-recover" {
        let l: Vec<String> = lost.iter().map(|i| i.to_string()).collect();
        p.insert("lost".to_string(), l.join(","));
    }
    build_operator(name, &p).unwrap()
}

/// Encodes `data`, overwrites the `lost` shards with garbage, recovers.
fn roundtrip(k: usize, m: usize, shard: usize, lost: &[usize], seed: u64) {
    let data = random_bytes(k * shard, seed);
    let parity = op("ec-encode", k, m, &[]).run(&data).unwrap();
    assert_eq!(parity.len(), m * shard);
    let mut all = [data.clone(), parity].concat();
    for &i in lost {
        all[i * shard..(i + 1) * shard].copy_from_slice(&random_bytes(shard, seed ^ 0xdead));
    }
    let got = op("ec-recover", k, m, lost).run(&all).unwrap();
    assert_eq!(got, data, "k={k} m={m} shard={shard} lost={lost:?}");
}

/// Every subset of `0..n` with at most `max` elements.
fn subsets(n: usize, max: usize) -> Vec<Vec<usize>> {
    (0u32..1 << n)
        .filter(|b| b.count_ones() as usize <= max)
        .map(|b| (0..n).filter(|i| b >> i & 1 == 1).collect())
        .collect()
}

#[test]
fn small_codes_recover_from_every_loss_pattern() {
    for (k, m) in [(1, 1), (2, 1), (3, 2), (4, 3), (5, 2), (6, 4)] {
        for shard in [1, 7, 33] {
            for lost in subsets(k + m, m) {
                roundtrip(k, m, shard, &lost, (k * 100 + m * 10 + shard) as u64);
            }
        }
    }
}

#[test]
fn large_codes_recover_from_random_loss_patterns() {
    for (k, m, shard) in [(10, 4, 4096), (128, 32, 257), (64, 16, 100)] {
        let mut x = 12345u64;
        for _ in 0..10 {
            let mut lost = Vec::new();
            while lost.len() < m {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let i = (x >> 33) as usize % (k + m);
                if !lost.contains(&i) {
                    lost.push(i);
                }
            }
            roundtrip(k, m, shard, &lost, x);
        }
    }
}

#[test]
fn split_encoding_of_a_10_plus_4_code_is_byte_identical() {
    let data = random_bytes(10 * 100_003, 9);
    let enc = op("ec-encode", 10, 4, &[]);
    let whole = enc.run(&data).unwrap();
    for chunk in [64 * 1024, 10_000, 999, 1] {
        assert_eq!(
            run_split(enc.as_ref(), &data, chunk).unwrap(),
            whole,
            "chunk {chunk}"
        );
    }
}

#[test]
fn wrong_lengths_are_errors() {
    assert!(op("ec-encode", 3, 2, &[]).run(&[0u8; 10]).is_err());
    assert!(op("ec-recover", 3, 2, &[0]).run(&[0u8; 11]).is_err());
    assert_eq!(op("ec-encode", 3, 2, &[]).run(&[]).unwrap(), Vec::<u8>::new());
}

proptest! {
    /// Random and truncated bytes, any loss pattern: an answer or an error, no panic.
    #[test]
    fn malformed_input_never_panics(input in proptest::collection::vec(any::<u8>(), 0..2_000), k in 1usize..8, m in 1usize..5, lost in proptest::collection::vec(0usize..12, 0..4)) {
        let mut p = BTreeMap::new();
        p.insert("k".to_string(), k.to_string());
        p.insert("m".to_string(), m.to_string());
        p.insert("lost".to_string(), lost.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(","));
        if let Ok(rec) = build_operator("ec-recover", &p) {
            let _ = rec.run(&input);
        }
        let _ = op("ec-encode", k, m, &[]).run(&input);
    }
}
