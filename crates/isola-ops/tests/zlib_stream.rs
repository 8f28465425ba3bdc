//! The zlib-shaped operators (`zlib-compress`, `zlib-decompress`,
//! `adler32`) against the C zlib, through Python's `zlib` module: each
//! format as zlib's `windowBits` names it, both ways; one stream exactly
//! (junk after it, a second gzip member, a cut or a bad checksum is an
//! error); Adler-32 equal to zlib's.

mod common;

use common::{random_bytes, tool_stdout};
use isola_ops::build_operator;
use std::collections::BTreeMap;

fn op(name: &str, pairs: &[(&str, &str)]) -> Box<dyn isola_ops::Operator> {
    let p: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    build_operator(name, &p).unwrap()
}

/// Python's zlib, `zlib.decompress(stdin, wbits)` or
/// `zlib.compress`-like (`compressobj(6, DEFLATED, wbits)`) of stdin.
fn python_zlib(what: &str, wbits: i32, input: &[u8]) -> Vec<u8> {
    let script = match what {
        "decompress" => format!(
            "import sys, zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read(), {wbits}))"
        ),
        _ => format!(
            "import sys, zlib; c = zlib.compressobj(6, zlib.DEFLATED, {wbits}); \
             sys.stdout.buffer.write(c.compress(sys.stdin.buffer.read()) + c.flush())"
        ),
    };
    tool_stdout("python3", &["-c", &script], input)
}

const FORMATS: [(&str, i32); 3] = [("zlib", 15), ("gzip", 31), ("raw", -15)];

fn inputs() -> Vec<Vec<u8>> {
    vec![
        Vec::new(),
        b"a".to_vec(),
        isola_ops::text_payload(8193, 3),
        random_bytes(70_000, 4),
        isola_ops::text_payload(1 << 20, 5),
    ]
}

#[test]
fn the_c_zlib_inflates_what_we_compress() {
    for (format, wbits) in FORMATS {
        for level in ["0", "1", "9"] {
            let enc = op("zlib-compress", &[("format", format), ("level", level)]);
            for data in inputs() {
                let packed = enc.run(&data).unwrap();
                assert_eq!(
                    python_zlib("decompress", wbits, &packed),
                    data,
                    "{format} level {level}, {} bytes",
                    data.len()
                );
            }
        }
    }
}

#[test]
fn we_inflate_what_the_c_zlib_compresses() {
    for (format, wbits) in FORMATS {
        let dec = op("zlib-decompress", &[("format", format)]);
        let auto = op("zlib-decompress", &[("format", "auto")]);
        for data in inputs() {
            let packed = python_zlib("compress", wbits, &data);
            assert_eq!(dec.run(&packed).unwrap(), data, "{format}, {} bytes", data.len());
            if format != "raw" {
                assert_eq!(auto.run(&packed).unwrap(), data, "auto of {format}");
            }
        }
    }
}

#[test]
fn exactly_one_stream() {
    let data = isola_ops::text_payload(5000, 9);
    for (format, wbits) in FORMATS {
        let dec = op("zlib-decompress", &[("format", format)]);
        let packed = python_zlib("compress", wbits, &data);
        let mut junk = packed.clone();
        junk.push(0);
        let twice = [&packed[..], &packed[..]].concat();
        let cut = &packed[..packed.len() - 1];
        for (what, input) in [
            ("junk after it", &junk[..]),
            ("two streams", &twice[..]),
            ("cut", cut),
        ] {
            let r = dec.run(input);
            assert!(r.is_err(), "{format}, {what}: {:?}", r.map(|o| o.len()));
        }
        if format != "raw" {
            // The trailer's checksum (Adler-32 or CRC-32) is checked.
            let mut bad = packed.clone();
            let at = if format == "zlib" {
                bad.len() - 1
            } else {
                bad.len() - 5
            };
            bad[at] ^= 1;
            let err = dec.run(&bad).unwrap_err().to_string();
            assert!(err.contains("zlib-decompress"), "{format}: {err}");
        }
    }
    let small = op("zlib-decompress", &[("format", "zlib"), ("max_output", "4KiB")]);
    let err = small
        .run(&python_zlib("compress", 15, &data))
        .unwrap_err()
        .to_string();
    assert!(err.contains("max_output"), "{err}");
}

#[test]
fn adler32_is_zlibs() {
    let adler = op("adler32", &[]);
    for data in inputs() {
        let ours = u32::from_be_bytes(adler.run(&data).unwrap().try_into().unwrap());
        let theirs = tool_stdout(
            "python3",
            &[
                "-c",
                "import sys, zlib; print(zlib.adler32(sys.stdin.buffer.read()))",
            ],
            &data,
        );
        let theirs: u32 = String::from_utf8(theirs).unwrap().trim().parse().unwrap();
        assert_eq!(ours, theirs, "{} bytes", data.len());
        for chunk in [1, 5552, 65_537] {
            if data.len() / chunk > 10_000 {
                continue;
            }
            let split = isola_ops::run_split(adler.as_ref(), &data, chunk).unwrap();
            assert_eq!(split, ours.to_be_bytes(), "split {chunk}");
        }
    }
}
