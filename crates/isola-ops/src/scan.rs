//! `regex`: multi-pattern matching of a set of regular expressions over the
//! input, as DPU regex engines (and Hyperscan) do for intrusion detection and
//! deep packet inspection.
//!
//! Built on `regex-automata`'s meta regex, compiled once for the whole set
//! (a lazy DFA with literal prefilters such as Aho-Corasick/Teddy): one pass
//! over the input finds every pattern. Matches are leftmost-first and do not
//! overlap, and at one position an earlier pattern wins over a later one:
//! the matches of the alternation `p0|p1|...` in order, as Python's
//! `re.finditer` and PCRE report them, with one difference of Rust's
//! `regex` semantics: an empty match right where the previous match ended
//! is not reported (Python 3.7+ reports it). The output is one line per
//! match, `start end pattern` (byte offsets, end exclusive; pattern index
//! from 0), so any tool can read it.
//!
//! Not splittable: a match may straddle any boundary.

use crate::operator::{OpError, Operator};
use isola_core::params::Params;
use regex_automata::meta::Regex;
use std::fmt::Write;

/// The patterns used when no `patterns` file is given: signatures in the
/// style of intrusion-detection rules (web attacks, shellcode, protocol
/// probes), to exercise literal prefilters and automata alike.
pub const DEFAULT_PATTERNS: &[&str] = &[
    r"GET /[A-Za-z0-9_./-]*\.php\?",
    r"(?i:union\s+select)",
    r"(?i:<script[^>]*>)",
    r"cmd\.exe",
    r"/etc/passwd",
    r"\x90{16,}",
    r"User-Agent: (?:sqlmap|nikto|masscan)",
    r"[A-Za-z0-9+/]{64,}={0,2}",
    r"\b\d{3}-\d{2}-\d{4}\b",
    r"(?:\d{1,3}\.){3}\d{1,3}:\d{2,5}",
];

/// The compiled pattern set.
#[derive(Debug)]
pub struct RegexScan {
    regex: Regex,
}

impl RegexScan {
    /// Builds from `patterns` (a file of one regular expression per line, at
    /// most 16 MiB; empty lines are skipped, where `grep -f` would match
    /// everything), or the built-in set.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let path = p.raw("patterns");
        let from_file;
        let patterns: Vec<&str> = if path.is_empty() {
            DEFAULT_PATTERNS.to_vec()
        } else {
            from_file = crate::operator::read_text_file(path, 16 << 20)
                .map_err(|e| p.bad("patterns", &format!("a readable file of patterns ({e})")))?;
            from_file.lines().filter(|l| !l.is_empty()).collect()
        };
        Ok(Box::new(Self::new(&patterns).map_err(|reason| {
            p.bad("patterns", &format!("valid regular expressions: {reason}"))
        })?))
    }

    /// Compiles `patterns` (Rust `regex` syntax, matching bytes); the error
    /// says which pattern is wrong.
    pub fn new(patterns: &[&str]) -> Result<Self, String> {
        if patterns.is_empty() {
            return Err("no patterns".into());
        }
        // Bytes, not text: `\x90` is the byte 0x90, `.` any byte but a
        // newline, and classes such as `\d` and `\b` are ASCII (as for
        // Python's `re` on bytes). Empty matches may fall anywhere.
        let regex = Regex::builder()
            .syntax(
                regex_automata::util::syntax::Config::new()
                    .unicode(false)
                    .utf8(false),
            )
            .configure(Regex::config().utf8_empty(false))
            .build_many(patterns)
            .map_err(|e| match e.pattern() {
                Some(id) => format!(
                    "pattern {} (`{}`): {e}",
                    id.as_usize() + 1,
                    patterns.get(id.as_usize()).unwrap_or(&"")
                ),
                None => e.to_string(),
            })?;
        Ok(RegexScan { regex })
    }
}

impl Operator for RegexScan {
    fn name(&self) -> &'static str {
        "regex"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        let mut out = String::new();
        for m in self.regex.find_iter(input) {
            // Writing to a String cannot fail.
            let _ = writeln!(out, "{} {} {}", m.start(), m.end(), m.pattern().as_usize());
        }
        Ok(out.into_bytes())
    }
}
