//! `regex` against Python's `re` (a backtracking engine no one here wrote):
//! the alternation of the pattern set, in order, over bytes, gives the same
//! leftmost-first, non-overlapping matches and the same winning pattern.

mod common;

use common::{tool_stdout, TempFile};
use isola_ops::build_operator;
use isola_ops::scan::DEFAULT_PATTERNS;
use std::collections::BTreeMap;

/// Python's matches of `patterns` over `haystack`, as `start end pattern` lines.
fn python_matches(patterns: &[&str], haystack: &[u8]) -> String {
    const SCRIPT: &str = r#"
import re, sys
patterns = [l for l in open(sys.argv[1], 'rb').read().split(b'\n') if l]
alternation = b'|'.join(b'(?P<p%d>%s)' % (i, p) for i, p in enumerate(patterns))
out = []
for m in re.finditer(alternation, sys.stdin.buffer.read()):
    which = next(i for i in range(len(patterns)) if m.group('p%d' % i) is not None)
    out.append('%d %d %d\n' % (m.start(), m.end(), which))
sys.stdout.write(''.join(out))
"#;
    let file = TempFile::new(patterns.join("\n").as_bytes());
    String::from_utf8(tool_stdout("python3", &["-c", SCRIPT, file.path()], haystack)).unwrap()
}

/// Traffic-like bytes with the default signatures' targets sprinkled in.
fn traffic(n: usize, seed: u64) -> Vec<u8> {
    let pieces: [&[u8]; 10] = [
        b"GET /index.php?id=1 HTTP/1.1\r\n",
        b"UNION   Select * from users",
        b"<SCRIPT src=x>",
        b"C:\\cmd.exe /c dir",
        b"cat /etc/passwd;",
        &[0x90; 20],
        b"User-Agent: sqlmap/1.7\r\n",
        b"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODk=",
        b" ssn 123-45-6789 ",
        b"10.0.0.1:8080",
    ];
    let mut x = seed | 1;
    let mut out = Vec::new();
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 7 == 0 {
            out.extend_from_slice(pieces[(x >> 8) as usize % pieces.len()]);
        } else {
            out.push((x >> 24) as u8);
        }
    }
    out
}

#[test]
fn default_signatures_match_like_python_re() {
    let op = build_operator("regex", &BTreeMap::new()).unwrap();
    for seed in 1..6 {
        let input = traffic(50_000, seed);
        let ours = String::from_utf8(op.run(&input).unwrap()).unwrap();
        assert!(
            ours.lines().count() > 100,
            "the signatures match: {}",
            ours.lines().count()
        );
        assert_eq!(ours, python_matches(DEFAULT_PATTERNS, &input), "seed {seed}");
    }
}

#[test]
fn a_pattern_file_and_its_errors() {
    let patterns = ["abc", "b+c", "[0-9]{2,}", "x(?:yz)?"];
    let good = TempFile::new((patterns.join("\n") + "\n\n").as_bytes());
    let mut params = BTreeMap::new();
    params.insert("patterns".to_string(), good.path().to_string());
    let op = build_operator("regex", &params).unwrap();
    let input = b"abcbbbc 12345 x xyz 7 abc".repeat(50);
    assert_eq!(
        String::from_utf8(op.run(&input).unwrap()).unwrap(),
        python_matches(&patterns, &input)
    );

    let bad = TempFile::new(b"ok\n(unclosed\n");
    params.insert("patterns".to_string(), bad.path().to_string());
    let err = build_operator("regex", &params).err().unwrap().to_string();
    assert!(err.contains("`patterns`") && err.contains("pattern 2"), "{err}");
    // A name next to the scratch files that no file has.
    params.insert("patterns".to_string(), format!("{}-missing", good.path()));
    let err = build_operator("regex", &params).err().unwrap().to_string();
    assert!(
        err.contains("`patterns`") && err.contains("readable file"),
        "{err}"
    );
}

/// The one documented difference from Python: an empty match where the
/// previous match ended is not reported (Rust `regex` semantics).
#[test]
fn empty_matches_follow_rust_semantics() {
    let scan = isola_ops::scan::RegexScan::new(&["a*"]).unwrap();
    let ours = String::from_utf8(isola_ops::Operator::run(&scan, b"baaab").unwrap()).unwrap();
    assert_eq!(ours, "0 0 0\n1 4 0\n5 5 0\n");
    assert_eq!(python_matches(&["a*"], b"baaab"), "0 0 0\n1 4 0\n4 4 0\n5 5 0\n");
}
