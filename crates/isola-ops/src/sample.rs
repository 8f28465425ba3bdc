//! Valid inputs for any operator: what benchmarks, profiling, the runtime's
//! seeded workloads and the registry-wide tests feed each operator.
//!
//! [`valid_input`] wraps a payload in the framing the operator expects: a
//! decompressor gets the payload compressed, `ec-recover` gets it encoded,
//! a verifier gets it signed, packet operators and the applications get it
//! as packets (records, words, keys or IO requests in them); operators
//! that take any bytes get the payload itself. [`text_payload`] makes
//! compressible, text-like payloads from a seed, and [`sample_params`] the
//! parameters every operator builds with.

use crate::operator::OpError;
use crate::registry::{build_operator, find_operator};
use std::collections::BTreeMap;

/// Parameters every operator builds with (required ones filled in), for
/// tests and benchmarks that go over the whole registry.
pub fn sample_params(name: &str) -> BTreeMap<String, String> {
    let pairs: &[(&str, &str)] = match name {
        "ec-encode" => &[("k", "4"), ("m", "2")],
        "ec-recover" => &[("k", "4"), ("m", "2"), ("lost", "1,4")],
        "aes-gcm-encrypt" | "aes-gcm-decrypt" => &[
            (
                "key",
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            ),
            ("iv", "cafebabefacedbaddecaf888"),
            ("aad", "feedfacedeadbeef"),
        ],
        "aes-ctr" => &[
            ("key", "2b7e151628aed2a6abf7158809cf4f3c"),
            ("iv", "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"),
        ],
        "aes-xts" => &[(
            "key",
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\
             202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
        )],
        _ => &[],
    };
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A deterministic, compressible payload of `len` bytes: text-like runs of
/// words with noise, roughly 3:1 for fast compressors.
pub fn text_payload(len: usize, seed: u64) -> Vec<u8> {
    const WORDS: [&[u8]; 8] = [
        b"tenant ",
        b"isolation ",
        b"dpu ",
        b"accelerator ",
        b"queue ",
        b"latency ",
        b"share ",
        b"\n",
    ];
    // xorshift64: any non-zero state works; the seed only varies the text.
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 5 == 0 {
            out.push(x as u8);
        } else {
            out.extend_from_slice(WORDS[(x >> 8) as usize % WORDS.len()]);
        }
    }
    out.truncate(len);
    out
}

/// An input that operator `name`, built with `params`, accepts, carrying
/// `payload` (its length is close to the payload's; exact for operators
/// that take any bytes).
pub fn valid_input(
    name: &str,
    params: &BTreeMap<String, String>,
    payload: &[u8],
) -> Result<Vec<u8>, OpError> {
    let info = find_operator(name)?;
    // An operator's input is its inverse operator's output.
    let encoded_by = match info.name {
        "inflate" => Some("deflate"),
        "gunzip" => Some("gzip"),
        "unlz4" => Some("lz4"),
        "unzstd" => Some("zstd"),
        "unsnappy" => Some("snappy"),
        "aes-gcm-decrypt" => Some("aes-gcm-encrypt"),
        "zlib-decompress" => Some("zlib-compress"),
        _ => None,
    };
    if let Some(encoder) = encoded_by {
        let mut encoder_params = params.clone();
        encoder_params
            .retain(|k, _| find_operator(encoder).is_ok_and(|e| e.params.iter().any(|p| p.name == k)));
        return build_operator(encoder, &encoder_params)?.run(payload);
    }
    match info.name {
        "ec-encode" => Ok(whole_shards(params, payload)?.to_vec()),
        "ec-recover" => {
            let data = whole_shards(params, payload)?;
            let mut encode_params = params.clone();
            encode_params.remove("lost");
            let parity = build_operator("ec-encode", &encode_params)?.run(&data)?;
            Ok([&data[..], &parity].concat())
        }
        "lpm" => crate::lpm::sample_input(params, payload),
        "toeplitz" => crate::toeplitz::sample_input(params, payload),
        "ip-fragment" => crate::packet::udp_packets(payload, 9000),
        "tcp-segment" => crate::packet::tcp_packets(payload, 64_000),
        "aes-xts" => crate::cipher::xts_input(params, payload),
        "aes-gcm" => Ok(crate::aead::inband_input(
            &[0x42; 32],
            &[7; 12],
            b"sample aad",
            payload,
        )),
        "rsa-verify" | "ecdsa-verify" | "dsa-verify" => crate::sign::signed_input(info.name, params, payload),
        "analytics" => crate::apps::analytics::sample_input(payload),
        "flow-monitor" | "flow-table" => crate::apps::flow::sample_input(payload),
        "app-recognition" => crate::apps::app_recognition::sample_input(payload),
        "ipv4-router" => crate::apps::router::sample_input(params, payload),
        "firewall" => crate::apps::firewall::sample_input(params, payload),
        "aggregate" | "reduce" | "histogram" => crate::apps::kernels::sample_input(payload),
        "io-write" => crate::apps::io::write_input(params, payload),
        "io-read" => crate::apps::io::read_input(params, payload),
        "filter" => crate::apps::filter::sample_input(params, payload),
        _ => Ok(payload.to_vec()),
    }
}

/// The longest prefix of `payload` that divides into the `k` data shards
/// of an erasure code (at least one byte per shard: padded with zeros).
fn whole_shards<'a>(
    params: &BTreeMap<String, String>,
    payload: &'a [u8],
) -> Result<std::borrow::Cow<'a, [u8]>, OpError> {
    let k: usize = params
        .get("k")
        .and_then(|k| k.parse().ok())
        .filter(|&k| k > 0)
        .ok_or_else(|| OpError::Input {
            op: "sample",
            reason: "an erasure-code input needs parameter k".into(),
        })?;
    let whole = payload.len() / k * k;
    Ok(if whole == 0 {
        std::borrow::Cow::Owned(vec![0u8; k])
    } else {
        std::borrow::Cow::Borrowed(&payload[..whole])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::OPERATORS;

    #[test]
    fn every_operator_runs_on_its_valid_input() {
        for info in OPERATORS {
            let params = sample_params(info.name);
            let op = build_operator(info.name, &params).unwrap();
            for len in [0usize, 1, 100, 5_000] {
                let input = valid_input(info.name, &params, &text_payload(len, 7)).unwrap();
                if let Err(e) = op.run(&input) {
                    panic!("{} on a valid input of {len} payload bytes: {e}", info.name);
                }
            }
        }
    }

    #[test]
    fn text_payload_is_deterministic_and_compressible() {
        assert_eq!(text_payload(1000, 3), text_payload(1000, 3));
        assert_ne!(text_payload(1000, 3), text_payload(1000, 4));
        let lz4 = build_operator("lz4", &BTreeMap::new()).unwrap();
        let packed = lz4.run(&text_payload(100_000, 1)).unwrap();
        assert!(packed.len() < 60_000, "{}", packed.len());
    }
}
