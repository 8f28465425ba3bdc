//! Stopping mid-task: every operator's watched run gives `run`'s output,
//! the stoppable ones really ask their watch chunk by chunk, and a stop is
//! `OpError::Stopped` having done a part of the input.

use isola_ops::scan::RegexScan;
use isola_ops::{
    build_operator, sample_params, text_payload, valid_input, NeverStop, OpError, Operator, Watch, OPERATORS,
    WATCH_CHUNK_BYTES,
};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts its checks and says stop at check number `stop_at` (from 1).
struct Counting {
    stop_at: usize,
    checks: AtomicUsize,
}

impl Counting {
    fn stop_at(stop_at: usize) -> Self {
        Counting {
            stop_at,
            checks: AtomicUsize::new(0),
        }
    }

    fn never() -> Self {
        Self::stop_at(usize::MAX)
    }

    fn checks(&self) -> usize {
        self.checks.load(Ordering::Relaxed)
    }
}

impl Watch for Counting {
    fn should_stop(&self) -> bool {
        self.checks.fetch_add(1, Ordering::Relaxed) + 1 >= self.stop_at
    }
}

/// Input bytes (or, decoding, output bytes) between two checks of `name`:
/// LZ4 frames are made and read by blocks of 4 MiB.
fn chunk_of(name: &str) -> usize {
    match name {
        "lz4" | "unlz4" => 4 << 20,
        _ => WATCH_CHUNK_BYTES,
    }
}

/// Incompressible bytes from a seed (splitmix64).
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Unwatched and watched runs agree, byte for byte (errors included),
    /// over a few chunks of random bytes, for every registered operator.
    #[test]
    fn watched_runs_equal_runs(payload in proptest::collection::vec(any::<u8>(), 0..3 * WATCH_CHUNK_BYTES)) {
        for info in OPERATORS {
            let params = sample_params(info.name);
            let input = valid_input(info.name, &params, &payload).unwrap();
            // Fresh instances: `flow-table` keeps its table across tasks.
            let one = build_operator(info.name, &params).unwrap().run(&input);
            let watched = build_operator(info.name, &params).unwrap().run_watched(&input, &NeverStop);
            if info.name == "ecdsa-sign" {
                // A random nonce per signature (as aws-lc signs).
                prop_assert!(watched.is_ok() && one.is_ok(), "{}", info.name);
            } else {
                prop_assert_eq!(watched, one, "{}", info.name);
            }
        }
    }
}

/// Every stoppable operator asks its watch at least once per chunk of
/// input, and stops when told, having done part of the input only; the
/// others ask once, before any work.
#[test]
fn stoppable_operators_ask_every_chunk_and_stop() {
    let mut stoppable = Vec::new();
    for info in OPERATORS {
        let params = sample_params(info.name);
        let op = build_operator(info.name, &params).unwrap();
        let chunk = chunk_of(info.name);
        let chunks = if chunk > WATCH_CHUNK_BYTES { 3 } else { 10 };
        // About `chunks` chunks of input (framing may shrink the payload).
        let target = chunks * chunk;
        let mut payload_len = target;
        let mut input = valid_input(info.name, &params, &text_payload(payload_len, 7)).unwrap();
        if input.len() < target && !input.is_empty() {
            payload_len = payload_len * target / input.len() + 1;
            input = valid_input(info.name, &params, &text_payload(payload_len, 7)).unwrap();
        }
        let never = Counting::never();
        let out = op.run_watched(&input, &never).unwrap();
        if !op.stoppable() {
            assert_eq!(
                never.checks(),
                1,
                "{}: not stoppable, asks before it starts",
                info.name
            );
            let spent = Counting::stop_at(1);
            assert!(
                matches!(
                    op.run_watched(&input, &spent),
                    Err(OpError::Stopped { done: 0, .. })
                ),
                "{}",
                info.name
            );
            continue;
        }
        stoppable.push(info.name);
        if info.name != "flow-table" {
            assert_eq!(out, op.run(&input).unwrap(), "{}", info.name);
        }
        // Decoders count the output they make, which is the payload.
        let work = input.len().max(
            if op.name().starts_with("un") || op.name() == "inflate" || op.name() == "gunzip" {
                payload_len
            } else {
                0
            },
        );
        assert!(
            never.checks() >= work / chunk,
            "{}: {} checks over {work} bytes",
            info.name,
            never.checks()
        );
        let watch = Counting::stop_at(3);
        match op.run_watched(&input, &watch) {
            Err(OpError::Stopped { op, done, total }) => {
                assert_eq!(op, info.name);
                assert_eq!(total, input.len() as u64, "{op}");
                assert!(done < total, "{op}: {done} of {total}");
            }
            other => panic!("{}: {:?}", info.name, other.map(|o| o.len())),
        }
        assert_eq!(watch.checks(), 3, "{}", info.name);
    }
    // The stoppable set, so that an operator losing its chunking fails here.
    for name in [
        "crc32",
        "lpm",
        "toeplitz",
        "ec-encode",
        "deflate",
        "inflate",
        "huffman",
        "gzip",
        "gunzip",
        "lz4",
        "unlz4",
        "zstd",
        "unzstd",
        "snappy",
        "unsnappy",
        "aes-gcm-encrypt",
        "sha256",
        "aes-ctr",
        "aes-xts",
        "analytics",
        "firewall",
        "histogram",
        "filter",
        "io-read",
    ] {
        assert!(
            stoppable.contains(&name),
            "{name} is not stoppable: {stoppable:?}"
        );
    }
}

/// A counted repetition over 200 KB (about a second of PikeVM): stopped at
/// its third check, the scan has done a small part of the input.
#[test]
fn a_slow_regex_stops_early() {
    let scan = RegexScan::new(&[r"[\s\S]{2000}"]).unwrap();
    assert!(scan.stoppable());
    let input = text_payload(200_000, 3);
    let watch = Counting::stop_at(3);
    match scan.run_watched(&input, &watch) {
        Err(OpError::Stopped { done, total, .. }) => {
            assert_eq!(total, 200_000);
            assert!(done > 0 && done <= total / 20, "done {done}");
        }
        other => panic!("{:?}", other.map(|o| o.len())),
    }
    // Unbounded patterns ask between matches only.
    assert!(!RegexScan::new(&["a+"]).unwrap().stoppable());
}

/// Deflate at level 9 of incompressible bytes: a stop after the third
/// check has compressed about three chunks.
#[test]
fn deflate_of_noise_stops_within_chunks() {
    let mut params = BTreeMap::new();
    params.insert("level".to_string(), "9".to_string());
    let op = build_operator("deflate", &params).unwrap();
    let input = noise(3 << 20, 11);
    let watch = Counting::stop_at(3);
    match op.run_watched(&input, &watch) {
        Err(OpError::Stopped { done, total, .. }) => {
            assert_eq!(total, 3 << 20);
            assert_eq!(done, 2 * WATCH_CHUNK_BYTES as u64);
        }
        other => panic!("{:?}", other.map(|o| o.len())),
    }
    // Streamed chunk by chunk, the stream is the one-shot stream.
    let sample = &input[..(5 * WATCH_CHUNK_BYTES) / 2];
    assert_eq!(
        op.run_watched(sample, &NeverStop).unwrap(),
        op.run(sample).unwrap()
    );
    let inflate = build_operator("inflate", &BTreeMap::new()).unwrap();
    assert_eq!(inflate.run(&op.run(sample).unwrap()).unwrap(), sample);
}

/// Reed-Solomon with 64 data shards stops between column ranges.
#[test]
fn wide_erasure_codes_stop() {
    let mut params = BTreeMap::new();
    params.insert("k".to_string(), "64".to_string());
    params.insert("m".to_string(), "4".to_string());
    let op = build_operator("ec-encode", &params).unwrap();
    let input = noise(64 * 10 * 1024, 5);
    let never = Counting::never();
    assert_eq!(op.run_watched(&input, &never).unwrap(), op.run(&input).unwrap());
    assert!(never.checks() >= 10, "{}", never.checks());
    let watch = Counting::stop_at(3);
    match op.run_watched(&input, &watch) {
        Err(OpError::Stopped { done, total, .. }) => {
            assert!(done > 0 && done < total / 2, "{done} of {total}")
        }
        other => panic!("{:?}", other.map(|o| o.len())),
    }
}
