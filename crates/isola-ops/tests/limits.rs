//! Hostile input, one regression test per reproducer: decompression bombs
//! stop at `max_output` (quickly, without reserving what they claim), our
//! frames carry checksums, every decoder rejects truncation, trailing junk
//! and failed checksums, `ec-recover` checks lengths exactly, and regex
//! sets that would compile or search for minutes fail at once with the
//! limit and its cause.

mod common;

use common::{op, param_error, params, TempFile};
use isola_ops::{build_operator, OpError, DEFAULT_MAX_OUTPUT};
use std::time::{Duration, Instant};

/// (compressor, decompressor) of every codec.
const CODECS: [(&str, &str); 6] = [
    ("deflate", "inflate"),
    ("huffman", "inflate"),
    ("gzip", "gunzip"),
    ("lz4", "unlz4"),
    ("zstd", "unzstd"),
    ("snappy", "unsnappy"),
];

fn is_limit(r: &Result<Vec<u8>, OpError>, allowed: u64) -> bool {
    matches!(r, Err(OpError::Limit { limit: "max_output", allowed: a, .. }) if *a == allowed)
}

fn is_input(r: &Result<Vec<u8>, OpError>) -> bool {
    matches!(r, Err(OpError::Input { .. }))
}

/// A Zstandard frame of `blocks` RLE blocks of 128 KiB zeros (4 bytes
/// each): a bomb of `blocks * 128 KiB`, stating that size or not.
fn zstd_rle_bomb(blocks: usize, stated: Option<u64>) -> Vec<u8> {
    let mut frame = 0xFD2F_B528u32.to_le_bytes().to_vec();
    match stated {
        // Single segment, 8-byte content size.
        Some(n) => {
            frame.push(0xE0);
            frame.extend_from_slice(&n.to_le_bytes());
        }
        // No content size; a 128 KiB window.
        None => frame.extend_from_slice(&[0x00, 7 << 3]),
    }
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = last | 1 << 1 | (128 << 10) << 3;
        frame.extend_from_slice(&header.to_le_bytes()[..3]);
        frame.push(0);
    }
    frame
}

#[test]
fn every_decoder_stops_at_max_output() {
    let zeros = vec![0u8; 2 << 20];
    for (enc, dec) in CODECS {
        let packed = op(enc, &[]).run(&zeros).unwrap();
        let small = op(dec, &[("max_output", "1MiB")]).run(&packed);
        assert!(is_limit(&small, 1 << 20), "{dec}: {small:?}");
        let message = small.unwrap_err().to_string();
        assert!(
            message.contains("max_output") && message.contains("1048576"),
            "{message}"
        );
        // Exactly the limit is allowed.
        let exact = op(dec, &[("max_output", "2097152B")]).run(&packed).unwrap();
        assert_eq!(exact, zeros, "{dec}");
        assert!(is_limit(
            &op(dec, &[("max_output", "2097151B")]).run(&packed),
            2_097_151
        ));
    }
}

/// The 773 KiB zstd of 24 GiB that aborted the process, and a 129 KiB one
/// of 4 GiB: stated sizes over the limit fail before any output.
#[test]
fn zstd_bombs_fail_fast_with_the_default_limit() {
    let unzstd = op("unzstd", &[]);
    let start = Instant::now();
    for stated in [24u64 << 30, 4 << 30, DEFAULT_MAX_OUTPUT + 1] {
        let bomb = zstd_rle_bomb(4, Some(stated));
        assert!(is_limit(&unzstd.run(&bomb), DEFAULT_MAX_OUTPUT), "{stated}");
    }
    assert!(start.elapsed() < Duration::from_secs(1), "{:?}", start.elapsed());
    // Without a stated size, the stream stops at the limit: 300 MiB of
    // RLE blocks against 64 MiB.
    let bomb = zstd_rle_bomb(2400, None);
    assert!(bomb.len() < 16 << 10);
    let r = op("unzstd", &[("max_output", "64MiB")]).run(&bomb);
    assert!(is_limit(&r, 64 << 20), "{r:?}");
    // The same frame within the limit decodes.
    let ok = op("unzstd", &[]).run(&zstd_rle_bomb(8, None)).unwrap();
    assert_eq!(ok, vec![0u8; 8 << 17]);
}

/// An LZ4 frame stating a content size over the limit fails before
/// decoding a block.
#[test]
fn lz4_stated_size_over_the_limit_fails_fast() {
    let frame = op("lz4", &[]).run(&vec![0u8; 5 << 20]).unwrap();
    let start = Instant::now();
    assert!(is_limit(
        &op("unlz4", &[("max_output", "4MiB")]).run(&frame),
        4 << 20
    ));
    assert!(start.elapsed() < Duration::from_millis(200));
}

#[test]
fn max_output_is_a_listed_size_parameter() {
    for (_, dec) in CODECS {
        let info = isola_ops::find_operator(dec).unwrap();
        let spec = info.params.iter().find(|p| p.name == "max_output").unwrap();
        assert_eq!(spec.default, "256MiB");
    }
    for name in ["regex", "io-read", "tcp-segment", "ip-fragment"] {
        let info = isola_ops::find_operator(name).unwrap();
        assert!(info.params.iter().any(|p| p.name == "max_output"), "{name}");
    }
    let err = param_error("gunzip", &[("max_output", "lots")]);
    assert!(err.contains("`max_output`") && err.contains("KiB"), "{err}");
    assert!(build_operator("gunzip", &params(&[("max_output", "1GiB")])).is_ok());
}

#[test]
fn our_frames_carry_content_checksums() {
    let data = isola_ops::text_payload(50_000, 3);
    // LZ4: FLG bit 2; zstd: Frame_Header_Descriptor bit 2.
    let lz4 = op("lz4", &[]).run(&data).unwrap();
    assert_ne!(lz4[4] & 0b100, 0, "lz4 content checksum flag");
    let zstd = op("zstd", &[]).run(&data).unwrap();
    assert_ne!(zstd[4] & 0b100, 0, "zstd checksum flag");
    // A damaged checksum is an input error.
    for (enc, dec) in CODECS {
        let mut packed = op(enc, &[]).run(&data).unwrap();
        if matches!(enc, "deflate" | "huffman") {
            continue; // raw deflate has no checksum
        }
        // gzip: CRC-32 before ISIZE; snappy: the first chunk's CRC after
        // its 4-byte header (stream identifier is 10 bytes); others: last.
        let at = match enc {
            "gzip" => packed.len() - 8,
            "snappy" => 14,
            _ => packed.len() - 1,
        };
        packed[at] ^= 0x10;
        assert!(is_input(&op(dec, &[]).run(&packed)), "{dec}");
    }
}

#[test]
fn every_decoder_rejects_junk_and_truncation() {
    let data = isola_ops::text_payload(40_000, 5);
    for (enc, dec) in CODECS {
        let packed = op(enc, &[]).run(&data).unwrap();
        let d = op(dec, &[]);
        assert_eq!(d.run(&packed).unwrap(), data, "{dec}");
        for junk in [&b"\0"[..], b"junk", &[0xff; 9], &[0; 64]] {
            let r = d.run(&[&packed[..], junk].concat());
            assert!(is_input(&r), "{dec} accepted {} junk bytes: {r:?}", junk.len());
        }
        for cut in [1, packed.len() / 3, packed.len() - 1] {
            assert!(is_input(&d.run(&packed[..cut])), "{dec} cut at {cut}");
        }
    }
    // gzip members may be concatenated.
    let gz = op("gzip", &[]).run(&data).unwrap();
    let two = op("gunzip", &[]).run(&[&gz[..], &gz[..]].concat()).unwrap();
    assert_eq!(two, [&data[..], &data[..]].concat());
}

/// Setting the final-block bit of a 405 KB stream's first block used to
/// return that block's 16 KB with success.
#[test]
fn a_flipped_final_block_bit_is_an_error() {
    let data = isola_ops::text_payload(405_000, 9);
    for enc in ["deflate", "huffman"] {
        let mut packed = op(enc, &[]).run(&data).unwrap();
        assert_eq!(packed[0] & 1, 0, "{enc}: the first block is not final");
        packed[0] |= 1;
        let r = op("inflate", &[]).run(&packed);
        assert!(is_input(&r), "{enc}: {:?}", r.map(|o| o.len()));
        assert!(
            r.unwrap_err()
                .to_string()
                .contains("after the deflate stream's end"),
            "{enc}"
        );
    }
}

#[test]
fn ec_recover_checks_the_length_exactly() {
    let (k, m, shard) = (4usize, 2usize, 1000usize);
    let data = common::random_bytes(k * shard, 3);
    let parity = op("ec-encode", &[("k", "4"), ("m", "2")]).run(&data).unwrap();
    let all = [data.clone(), parity].concat();
    let rec = op(
        "ec-recover",
        &[("k", "4"), ("m", "2"), ("lost", "1"), ("shard-size", "1000B")],
    );
    assert_eq!(rec.run(&all).unwrap(), data);
    // Half the input is six shards of 500 bytes: a valid shape, a wrong length.
    for len in [all.len() / 2, all.len() - 6, all.len() + 6, 0] {
        let input = [&all[..], &all[..]].concat();
        let r = rec.run(&input[..len]);
        let message = r.unwrap_err().to_string();
        assert!(
            message.contains("expected 6000 bytes") && message.contains(&format!("got {len}")),
            "{message}"
        );
    }
    let enc = op("ec-encode", &[("k", "4"), ("m", "2"), ("shard-size", "1000B")]);
    assert!(enc.run(&data[..2000]).is_err());
    assert_eq!(enc.run(&data).unwrap().len(), m * shard);
    let err = param_error("ec-recover", &[("k", "4"), ("m", "2"), ("shard-size", "0B")]);
    assert!(err.contains("`shard-size`"), "{err}");
}

/// `[\s\S]{60000}` searched 200 KB for 40 s: it now fails to build, at
/// once, naming `max_compiled` and what the regex crate said.
#[test]
fn huge_compiled_regex_fails_fast() {
    let file = TempFile::new(br"[\s\S]{60000}");
    let start = Instant::now();
    let err = build_operator("regex", &params(&[("patterns", file.path())]))
        .err()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(1), "{:?}", start.elapsed());
    assert!(
        matches!(
            err,
            OpError::Limit {
                limit: "max_compiled",
                ..
            }
        ),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains("max_compiled") && message.contains("limit"),
        "{message}"
    );
    // Raising the limit is what the message says to do.
    assert!(build_operator(
        "regex",
        &params(&[("patterns", file.path()), ("max_compiled", "64MiB")])
    )
    .is_ok());
}

/// 200,000 literal patterns took 48 s to fail with "error building NFA".
#[test]
fn huge_pattern_sets_fail_before_compiling() {
    let many: String = (0..200_000).map(|i| format!("literal{i:07}\n")).collect();
    let file = TempFile::new(many.as_bytes());
    let start = Instant::now();
    let err = build_operator("regex", &params(&[("patterns", file.path())]))
        .err()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(1), "{:?}", start.elapsed());
    assert!(
        matches!(
            err,
            OpError::Limit {
                limit: "max_patterns",
                allowed: 4096,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("200000 patterns"), "{err}");
    let err = build_operator(
        "regex",
        &params(&[("patterns", file.path()), ("max_patterns", "1000000")]),
    )
    .err()
    .unwrap();
    assert!(
        matches!(
            err,
            OpError::Limit {
                limit: "max_pattern_bytes",
                ..
            }
        ),
        "{err}"
    );
    // 2000 literals: compile quickly, but the PikeVM fallback would need
    // ~2 GB: refused with the estimate.
    let lits: Vec<String> = (0..2000).map(|i| format!("literal{i:07}")).collect();
    let refs: Vec<&str> = lits.iter().map(String::as_str).collect();
    let limits = isola_ops::scan::ScanLimits {
        max_compiled: 64 << 20,
        ..Default::default()
    };
    let err = isola_ops::scan::RegexScan::with_limits(&refs, &limits)
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            OpError::Limit {
                limit: "max_search_memory",
                ..
            }
        ),
        "{err}"
    );
    // By default, their automaton is already over `max_compiled`.
    let err = isola_ops::scan::RegexScan::new(&refs).err().unwrap();
    assert!(
        matches!(
            err,
            OpError::Limit {
                limit: "max_compiled",
                ..
            }
        ),
        "{err}"
    );
    // Normal sets still work.
    assert!(isola_ops::scan::RegexScan::new(&refs[..100]).is_ok());
}

#[test]
fn regex_limit_defaults_are_the_constants() {
    use isola_ops::limits::parse_size;
    use isola_ops::scan::*;
    let default = |name: &str| {
        let spec = SCAN_PARAMS.iter().find(|p| p.name == name).unwrap();
        // A count is a plain number; sizes carry their unit.
        spec.default
            .parse()
            .ok()
            .or_else(|| parse_size(spec.default))
            .unwrap()
    };
    let limits = ScanLimits::default();
    assert_eq!(default("max_patterns"), DEFAULT_MAX_PATTERNS);
    assert_eq!(default("max_pattern_bytes"), DEFAULT_MAX_PATTERN_BYTES);
    assert_eq!(default("max_compiled"), DEFAULT_MAX_COMPILED);
    assert_eq!(default("max_search_memory"), DEFAULT_MAX_SEARCH_MEMORY);
    assert_eq!(default("max_output"), DEFAULT_MAX_OUTPUT);
    assert_eq!(limits.max_patterns, DEFAULT_MAX_PATTERNS);
    // The built-in set is well within every limit.
    assert!(build_operator("regex", &params(&[])).is_ok());
}

#[test]
fn regex_errors_name_the_pattern_and_the_cause() {
    let file = TempFile::new(b"fine\n(unclosed\n");
    let err = build_operator("regex", &params(&[("patterns", file.path())]))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("pattern 2 (`(unclosed`)"), "{err}");
    assert!(err.contains("unclosed group"), "{err}");
}

#[test]
fn regex_output_is_limited() {
    let file = TempFile::new(b"x*");
    let scan = op("regex", &[("patterns", file.path()), ("max_output", "1KiB")]);
    assert!(is_limit(&scan.run(&[b'y'; 10_000]), 1024));
    assert!(scan.run(&[b'y'; 10]).is_ok());
}

/// Operators whose output multiplies their input: `tcp-segment` at mss 1
/// (a 40-byte header per payload byte), `ip-fragment` at mtu 68, `io-read`
/// (40-byte requests for 65,507-byte answers).
#[test]
fn amplifying_packet_operators_stop_at_max_output() {
    let payload = isola_ops::text_payload(20_000, 2);
    for (name, pairs) in [
        ("tcp-segment", vec![("mss", "1")]),
        ("ip-fragment", vec![("mtu", "68")]),
        ("io-read", vec![]),
    ] {
        let input = isola_ops::valid_input(name, &params(&pairs), &payload).unwrap();
        let full = op(name, &pairs).run(&input).unwrap();
        let mut small = pairs.clone();
        small.push(("max_output", "16KiB"));
        assert!(full.len() > 16 << 10, "{name}: {}", full.len());
        assert!(is_limit(&op(name, &small).run(&input), 16 << 10), "{name}");
        let mut exact = pairs.clone();
        let len = format!("{}B", full.len());
        exact.push(("max_output", &len));
        assert_eq!(op(name, &exact).run(&input).unwrap(), full, "{name}");
    }
}
