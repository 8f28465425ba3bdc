//! Fuzz-style properties of every decoder: random bytes and valid streams
//! with random damage (bit flips, truncation, appended junk) never panic,
//! always stop within `max_output`, and fail with an input or limit error;
//! where the format has a checksum, a damaged stream that still decodes
//! gives back exactly the original. Random data round-trips through our
//! encoders and decoders, whole and split. The case count is proptest's
//! default (`PROPTEST_CASES` overrides it).

use isola_ops::{build_operator, run_split, OpError, Operator};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// (compressor, decompressor, whether damage is caught by a checksum).
/// Snappy chunks carry CRCs, but the framing format's reserved skippable
/// chunk types (0x80-0xfd) let one flipped type bit drop a whole chunk.
const CODECS: [(&str, &str, bool); 6] = [
    ("deflate", "inflate", false),
    ("huffman", "inflate", false),
    ("gzip", "gunzip", true),
    ("lz4", "unlz4", true),
    ("zstd", "unzstd", true),
    ("snappy", "unsnappy", false),
];

/// The output limit of these tests: small, so a bomb is caught quickly.
const LIMIT: u64 = 64 << 10;

fn decoder(name: &str) -> Box<dyn Operator> {
    let p: BTreeMap<String, String> = [("max_output".to_string(), format!("{LIMIT}B"))].into();
    build_operator(name, &p).unwrap()
}

fn encoder(name: &str) -> Box<dyn Operator> {
    build_operator(name, &BTreeMap::new()).unwrap()
}

/// A decoder's answer is within the limit, or an input or limit error.
fn well_behaved(r: &Result<Vec<u8>, OpError>) -> Result<(), TestCaseError> {
    match r {
        Ok(out) => prop_assert!(out.len() as u64 <= LIMIT, "{} bytes", out.len()),
        Err(OpError::Input { .. }) | Err(OpError::Limit { .. }) => {}
        Err(e) => prop_assert!(false, "unexpected error {e}"),
    }
    Ok(())
}

/// Data worth compressing: runs and random bytes, at most 4 KiB.
fn data() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..64),
            (any::<u8>(), 0usize..512).prop_map(|(b, n)| vec![b; n]),
        ],
        0..12,
    )
    .prop_map(|parts| parts.concat())
}

/// Damage to a valid stream.
#[derive(Debug, Clone)]
enum Damage {
    /// Flip bit `bit` of byte `at` (modulo the length).
    Flip { at: usize, bit: u8 },
    /// Keep the first `at` bytes (modulo the length).
    Cut { at: usize },
    /// Append bytes.
    Junk(Vec<u8>),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Damage::Flip { at, bit }),
        any::<usize>().prop_map(|at| Damage::Cut { at }),
        prop::collection::vec(any::<u8>(), 1..32).prop_map(Damage::Junk),
    ]
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2_048)) {
        for (_, dec, _) in CODECS {
            well_behaved(&decoder(dec).run(&bytes))?;
        }
    }

    /// Random bytes behind a valid magic number / header reach the block
    /// decoders instead of failing on the first byte.
    #[test]
    fn random_bodies_behind_valid_headers_never_panic(body in prop::collection::vec(any::<u8>(), 0..2_048)) {
        for (enc, dec, _) in CODECS {
            let header = encoder(enc).run(b"").unwrap();
            let keep = header.len().min(match enc {
                "gzip" => 10,
                "lz4" => 15,
                "zstd" => 6,
                "snappy" => 10,
                _ => 0,
            });
            let input = [&header[..keep], &body[..]].concat();
            well_behaved(&decoder(dec).run(&input))?;
        }
    }

    #[test]
    fn damaged_streams_fail_or_give_the_original(data in data(), damage in damage()) {
        for (enc, dec, checksummed) in CODECS {
            let valid = encoder(enc).run(&data).unwrap();
            let d = decoder(dec);
            prop_assert_eq!(&d.run(&valid).unwrap(), &data, "{} of valid input", dec);
            let (damaged, must_fail) = match &damage {
                Damage::Flip { at, bit } => {
                    let mut v = valid.clone();
                    let i = at % v.len();
                    v[i] ^= 1 << bit;
                    (v, false)
                }
                // Snappy streams have no end marker: a cut between chunks is
                // a valid shorter stream.
                Damage::Cut { at } => (valid[..at % valid.len()].to_vec(), dec != "unsnappy"),
                Damage::Junk(junk) => ([&valid[..], junk].concat(), dec != "unsnappy"),
            };
            let r = d.run(&damaged);
            well_behaved(&r)?;
            if must_fail {
                prop_assert!(r.is_err(), "{} accepted {:?}", dec, damage);
            }
            if let (Ok(out), true) = (&r, checksummed) {
                prop_assert_eq!(out, &data, "{} decoded damage {:?} to other data", dec, damage);
            }
        }
    }

    #[test]
    fn round_trips_whole_and_split(data in data(), chunk in 1usize..2_000) {
        for (enc, dec, _) in CODECS {
            let e = encoder(enc);
            let d = decoder(dec);
            prop_assert_eq!(&d.run(&e.run(&data).unwrap()).unwrap(), &data, "{}", enc);
            if e.splitter().is_some() {
                let split = run_split(e.as_ref(), &data, chunk).unwrap();
                prop_assert_eq!(&d.run(&split).unwrap(), &data, "split {}", enc);
            }
        }
    }
}
