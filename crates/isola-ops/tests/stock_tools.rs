//! Outputs equal what the stock tools compute on the same bytes: coreutils'
//! `sha256sum`, `sha1sum`, `md5sum`, and the CRC-32 that `gzip` writes in its
//! trailer (RFC 1952).

use isola_ops::build_operator;
use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    // xorshift64*: deterministic test data.
    let mut x = seed.max(1);
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

fn tool(cmd: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd} must be installed (.ci/run installs it): {e}"));
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{cmd} failed");
    out.stdout
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn digests_match_coreutils() {
    for (n, seed) in [(0, 1), (1, 2), (63, 3), (64, 4), (100_000, 5)] {
        let data = random_bytes(n, seed);
        for (op, cmd) in [("sha256", "sha256sum"), ("sha1", "sha1sum"), ("md5", "md5sum")] {
            let ours = hex(&build_operator(op, &BTreeMap::new()).unwrap().run(&data).unwrap());
            let theirs = String::from_utf8(tool(cmd, &[], &data)).unwrap();
            assert_eq!(
                ours,
                theirs.split_whitespace().next().unwrap(),
                "{op} of {n} bytes"
            );
        }
    }
}

#[test]
fn crc32_matches_the_gzip_trailer() {
    for (n, seed) in [(0, 7), (9, 8), (100_000, 9)] {
        let data = random_bytes(n, seed);
        let gz = tool("gzip", &["-c", "-n"], &data);
        // The trailer is CRC-32 then ISIZE, both little-endian.
        let trailer = &gz[gz.len() - 8..gz.len() - 4];
        let theirs = u32::from_le_bytes(trailer.try_into().unwrap());
        let ours = build_operator("crc32", &BTreeMap::new())
            .unwrap()
            .run(&data)
            .unwrap();
        assert_eq!(ours, theirs.to_be_bytes(), "crc32 of {n} bytes");
    }
}
