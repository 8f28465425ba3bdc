//! Outputs equal what the stock tools compute on the same bytes: coreutils'
//! `sha256sum`, `sha1sum`, `md5sum`, and the CRC-32 that `gzip` writes in its
//! trailer (RFC 1952).

mod common;

use common::{hex, random_bytes, tool_stdout};
use isola_ops::build_operator;
use std::collections::BTreeMap;

#[test]
fn digests_match_coreutils() {
    for (n, seed) in [(0, 1), (1, 2), (63, 3), (64, 4), (100_000, 5)] {
        let data = random_bytes(n, seed);
        for (op, cmd) in [("sha256", "sha256sum"), ("sha1", "sha1sum"), ("md5", "md5sum")] {
            let ours = hex(&build_operator(op, &BTreeMap::new()).unwrap().run(&data).unwrap());
            let theirs = String::from_utf8(tool_stdout(cmd, &[], &data)).unwrap();
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
        let gz = tool_stdout("gzip", &["-c", "-n"], &data);
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
