//! Compressors and decompressors against the stock tools, both ways, whole
//! and split; and every decoder turns random or truncated bytes into an
//! error, never a panic.

mod common;

use common::{tool_stdout, TempFile};
use isola_ops::{build_operator, run_split, sample_params};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Compressible but not trivial: the text-like payload benchmarks use.
fn sample(n: usize) -> Vec<u8> {
    isola_ops::text_payload(n, 1)
}

#[test]
fn stock_tools_decompress_our_output_whole_and_split() {
    for (op, cmd) in [("gzip", "gzip"), ("lz4", "lz4"), ("zstd", "zstd")] {
        let enc = build_operator(op, &BTreeMap::new()).unwrap();
        for n in [0, 1, 1000, 300_000] {
            let data = sample(n);
            let whole = enc.run(&data).unwrap();
            assert_eq!(
                tool_stdout(cmd, &["-d", "-c"], &whole),
                data,
                "{cmd} -d of our {op}, {n} bytes"
            );
            for chunk in [4096, 65_537] {
                let split = run_split(enc.as_ref(), &data, chunk).unwrap();
                assert_eq!(
                    tool_stdout(cmd, &["-d", "-c"], &split),
                    data,
                    "{cmd} -d of our split {op}, {n} bytes"
                );
            }
        }
    }
}

#[test]
fn we_decompress_the_stock_tools_output() {
    for (cmd, args, op) in [
        ("gzip", &["-c", "-n"][..], "gunzip"),
        ("lz4", &["-c"][..], "unlz4"),
        // Linked blocks, block checksums, 64 KiB blocks.
        ("lz4", &["-c", "-BD"][..], "unlz4"),
        ("lz4", &["-c", "-BX", "-B4"][..], "unlz4"),
        ("zstd", &["-c", "-q"][..], "unzstd"),
    ] {
        let dec = build_operator(op, &BTreeMap::new()).unwrap();
        for n in [0, 17, 250_000] {
            let data = sample(n);
            let theirs = tool_stdout(cmd, args, &data);
            assert_eq!(
                dec.run(&theirs).unwrap(),
                data,
                "our {op} of {cmd} output, {n} bytes"
            );
        }
    }
}

/// Frames that state their content size (lz4 writes it only for files).
#[test]
fn we_decompress_stock_frames_with_content_sizes() {
    let data = sample(300_000);
    let file = TempFile::new(&data);
    let path = file.path();
    for (cmd, args, op) in [
        ("lz4", vec!["-c", "--content-size", path], "unlz4"),
        ("zstd", vec!["-c", "-q", path], "unzstd"),
    ] {
        let theirs = tool_stdout(cmd, &args, &[]);
        let dec = build_operator(op, &BTreeMap::new()).unwrap();
        assert_eq!(dec.run(&theirs).unwrap(), data, "our {op} of {cmd} {args:?}");
        // The stated size is checked against what the blocks hold.
        let mut wrong = theirs.clone();
        wrong.truncate(wrong.len() - 8);
        assert!(dec.run(&wrong).is_err(), "{op} accepted a truncated frame");
    }
}

#[test]
fn round_trips_of_every_codec() {
    for (enc, dec) in [
        ("deflate", "inflate"),
        ("gzip", "gunzip"),
        ("lz4", "unlz4"),
        ("zstd", "unzstd"),
        ("snappy", "unsnappy"),
    ] {
        let data = sample(100_000);
        let c = build_operator(enc, &BTreeMap::new()).unwrap().run(&data).unwrap();
        assert!(
            c.len() < data.len() / 2,
            "{enc} compresses: {} -> {}",
            data.len(),
            c.len()
        );
        assert_eq!(
            build_operator(dec, &BTreeMap::new()).unwrap().run(&c).unwrap(),
            data,
            "{enc}/{dec}"
        );
    }
    let mut p = BTreeMap::new();
    p.insert("level".to_string(), "42".to_string());
    let err = build_operator("zstd", &p).err().unwrap();
    assert!(
        err.to_string().contains("`level`") && err.to_string().contains("1 to 19"),
        "{err}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Valid streams cut short are errors (except Snappy's, whose framing
    /// format has no end marker: a cut between chunks is a valid shorter
    /// stream); random bytes and streams with a flipped byte (which formats
    /// without a checksum may still decode) give an answer or an error,
    /// never a panic.
    #[test]
    fn decoders_reject_truncation_and_survive_garbage(garbage in proptest::collection::vec(any::<u8>(), 0..3_000), cut in 0usize..4_000, flip in any::<(usize, u8)>()) {
        for (enc, dec) in [("deflate", "inflate"), ("gzip", "gunzip"), ("lz4", "unlz4"), ("zstd", "unzstd"), ("snappy", "unsnappy")] {
            let d = build_operator(dec, &sample_params(dec)).unwrap();
            let _ = d.run(&garbage);
            let valid = build_operator(enc, &BTreeMap::new()).unwrap().run(&sample(5_000)).unwrap();
            if cut < valid.len() && dec != "unsnappy" {
                prop_assert!(d.run(&valid[..cut]).is_err(), "{} accepted a stream cut at {} of {}", dec, cut, valid.len());
            }
            let mut flipped = valid.clone();
            let i = flip.0 % flipped.len();
            flipped[i] ^= flip.1 | 1;
            let _ = d.run(&flipped);
        }
    }
}

/// Huffman-only deflate: a raw deflate stream that the stock zlib (Python's
/// `zlib` module, windowBits -15) inflates, and that uses no LZ77 matches:
/// a repeated 3-byte pattern costs at least its entropy, log2(3) bits a
/// byte, where ordinary deflate shrinks it to almost nothing.
#[test]
fn huffman_only_is_raw_deflate_without_matches() {
    let huffman = build_operator("huffman", &BTreeMap::new()).unwrap();
    for data in [sample(200_000), b"abc".repeat(10_000), Vec::new()] {
        let packed = huffman.run(&data).unwrap();
        let inflated = tool_stdout(
            "python3",
            &[
                "-c",
                "import sys, zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read(), -15))",
            ],
            &packed,
        );
        assert_eq!(inflated, data, "zlib inflate of our huffman output");
    }
    let repeated = b"abc".repeat(10_000);
    let huffman_len = huffman.run(&repeated).unwrap().len();
    let deflate_len = build_operator("deflate", &BTreeMap::new())
        .unwrap()
        .run(&repeated)
        .unwrap()
        .len();
    assert!(
        huffman_len * 8 >= repeated.len() * 3 / 2,
        "{huffman_len} bytes: matches were used"
    );
    assert!(deflate_len < 200, "deflate {deflate_len}");
}

/// Raw deflate split as pigz splits it (each piece a dictionary of its
/// own, sync-flushed, the last one final): the stock zlib (Python's
/// `zlib`, windowBits -15) inflates the concatenated pieces to the input,
/// for pieces of every size, level 1 to 9, and a piece that is empty.
#[test]
fn split_raw_deflate_is_one_stream_the_stock_zlib_inflates() {
    let inflate = |packed: &[u8]| {
        tool_stdout(
            "python3",
            &[
                "-c",
                "import sys, zlib; d = zlib.decompressobj(-15); out = d.decompress(sys.stdin.buffer.read()); assert d.eof, 'no final block'; sys.stdout.buffer.write(out)",
            ],
            packed,
        )
    };
    for level in ["1", "6", "9"] {
        let params = BTreeMap::from([("level".to_string(), level.to_string())]);
        let enc = build_operator("deflate", &params).unwrap();
        assert!(enc.splitter().is_some(), "raw deflate splits");
        for n in [0, 1, 5_000, 300_000] {
            let data = sample(n);
            for chunk in [1, 4096, 65_537] {
                if n / chunk > 10_000 {
                    continue;
                }
                let split = run_split(enc.as_ref(), &data, chunk).unwrap();
                assert_eq!(
                    inflate(&split),
                    data,
                    "level {level}, {n} bytes in pieces of {chunk}"
                );
            }
        }
    }
}
