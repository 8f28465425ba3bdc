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
//!
//! Limits (parameters, with defaults as constants): `max_patterns`
//! ([`DEFAULT_MAX_PATTERNS`]) and `max_pattern_bytes`
//! ([`DEFAULT_MAX_PATTERN_BYTES`]) are checked before compiling, so a huge
//! set fails at once; `max_compiled` ([`DEFAULT_MAX_COMPILED`]) bounds the
//! compiled automaton, which also bounds the search's time per input byte
//! (a counted repetition such as `[\s\S]{60000}` compiles to tens of
//! thousands of states and would otherwise scan at kilobytes a second);
//! `max_search_memory` ([`DEFAULT_MAX_SEARCH_MEMORY`]) bounds the
//! worst-case search memory (estimated from the NFA when building);
//! `max_output` bounds the match lines. Every error says which limit, its
//! value and the parameter that raises it; a pattern that does not parse
//! is named with the parser's reason.

use crate::operator::{OpError, Operator};
use crate::watch::{Checkpoint, NeverStop, Watch, WATCH_CHUNK_BYTES};
use isola_core::params::{ParamError, ParamSpec, Params};
use regex_automata::meta::Regex;
use regex_automata::nfa::thompson;
use regex_automata::Input;
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

/// Default `max_patterns`: the most patterns in a set.
pub const DEFAULT_MAX_PATTERNS: u64 = 4096;

/// Default `max_pattern_bytes`: the most pattern text, all patterns
/// together (bytes).
pub const DEFAULT_MAX_PATTERN_BYTES: u64 = 1 << 20;

/// Default `max_compiled`: the most memory the compiled pattern set's
/// automaton (its Thompson NFA) may take, in bytes. The search costs up to
/// this size per input byte where the lazy DFA gives up, so it bounds time
/// as well as memory.
pub const DEFAULT_MAX_COMPILED: u64 = 1 << 20;

/// Default `max_search_memory`: the most memory a search may need in the
/// worst case, in bytes. When the lazy DFA gives up, the PikeVM fallback
/// keeps two tables of `states x 2 x patterns` slots (8 bytes each): 1000
/// literal patterns need about 540 MB there, 10,000 about 27 GB. The
/// estimate is checked at build time, so such a set fails at once instead
/// of aborting the process on its first unlucky input.
pub const DEFAULT_MAX_SEARCH_MEMORY: u64 = 256 << 20;

/// Largest accepted value of any of the limits above: 1 TiB.
pub const MAX_LIMIT: u64 = 1 << 40;

/// The parameters of `regex`, limits included.
pub const SCAN_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "patterns",
        default: "",
        description:
            "file of regular expressions, one per line (default: built-in intrusion-detection signatures)",
    },
    ParamSpec {
        name: "max_patterns",
        default: "4096",
        description: "most patterns in the set, checked before compiling",
    },
    ParamSpec {
        name: "max_pattern_bytes",
        default: "1MiB",
        description:
            "most pattern text, all patterns together (KiB, MiB suffixes allowed), checked before compiling",
    },
    ParamSpec {
        name: "max_compiled",
        default: "1MiB",
        description: "most memory of the compiled automaton (KiB, MiB suffixes allowed); bounds compile and \
                      search time (`[\\s\\S]{60000}` needs several MiB)",
    },
    ParamSpec {
        name: "max_search_memory",
        default: "256MiB",
        description: "most memory a search may need in the worst case (the PikeVM fallback: NFA states x \
                      2 x patterns x 16 bytes), checked when building",
    },
    crate::limits::MAX_OUTPUT_PARAM,
];

/// What a pattern set may cost (see the constants for the defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLimits {
    /// Most patterns (`max_patterns`).
    pub max_patterns: u64,
    /// Most pattern text in bytes (`max_pattern_bytes`).
    pub max_pattern_bytes: u64,
    /// Most memory of the compiled automaton in bytes (`max_compiled`).
    pub max_compiled: u64,
    /// Most worst-case search memory in bytes (`max_search_memory`).
    pub max_search_memory: u64,
    /// Most output in bytes (`max_output`).
    pub max_output: u64,
}

impl Default for ScanLimits {
    fn default() -> Self {
        ScanLimits {
            max_patterns: DEFAULT_MAX_PATTERNS,
            max_pattern_bytes: DEFAULT_MAX_PATTERN_BYTES,
            max_compiled: DEFAULT_MAX_COMPILED,
            max_search_memory: DEFAULT_MAX_SEARCH_MEMORY,
            max_output: crate::limits::DEFAULT_MAX_OUTPUT,
        }
    }
}

impl ScanLimits {
    /// The limits from their parameters.
    pub fn from_params(p: &Params<'_>) -> Result<Self, OpError> {
        use crate::limits::size_param;
        Ok(ScanLimits {
            max_patterns: p.u64_in("max_patterns", 1..=MAX_LIMIT)?,
            max_pattern_bytes: size_param(p, "max_pattern_bytes", 1..=MAX_LIMIT)?,
            max_compiled: size_param(p, "max_compiled", 1..=MAX_LIMIT)?,
            max_search_memory: size_param(p, "max_search_memory", 1..=MAX_LIMIT)?,
            max_output: crate::limits::max_output(p)?,
        })
    }
}

/// Why a pattern set did not compile.
enum Failure {
    /// A limit was passed.
    Limit(OpError),
    /// A pattern is not a valid regular expression (the message says which
    /// and why).
    Syntax(String),
}

/// A limit error of `regex`.
fn limit(limit: &'static str, allowed: u64, what: String) -> OpError {
    OpError::Limit {
        op: "regex",
        limit,
        allowed,
        what,
    }
}

/// `e` and its causes, `: `-separated (the regex crates put the useful
/// part in the cause: "error parsing pattern 0" says little on its own).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Compiles `patterns` within `limits`: count and text length are checked
/// before any work, the compiled size while compiling.
fn compile(patterns: &[&str], limits: &ScanLimits) -> Result<Compiled, Failure> {
    if patterns.is_empty() {
        return Err(Failure::Syntax("no patterns".into()));
    }
    if patterns.len() as u64 > limits.max_patterns {
        return Err(Failure::Limit(limit(
            "max_patterns",
            limits.max_patterns,
            format!("a set of {} patterns", patterns.len()),
        )));
    }
    let text: u64 = patterns.iter().map(|p| p.len() as u64).sum();
    if text > limits.max_pattern_bytes {
        return Err(Failure::Limit(limit(
            "max_pattern_bytes",
            limits.max_pattern_bytes,
            format!("{text} bytes of patterns"),
        )));
    }
    let compiled = usize::try_from(limits.max_compiled).unwrap_or(usize::MAX);
    // Bytes, not text: `\x90` is the byte 0x90, `.` any byte but a
    // newline, and classes such as `\d` and `\b` are ASCII (as for
    // Python's `re` on bytes). Empty matches may fall anywhere.
    let syntax = regex_automata::util::syntax::Config::new()
        .unicode(false)
        .utf8(false);
    let explain = |e: &dyn std::error::Error, pattern: Option<usize>, size_limit: bool| {
        let cause = with_causes(e);
        if let Some(i) = pattern {
            return Failure::Syntax(format!(
                "pattern {} (`{}`): {cause}",
                i + 1,
                patterns.get(i).unwrap_or(&"")
            ));
        }
        if size_limit {
            return Failure::Limit(limit(
                "max_compiled",
                limits.max_compiled,
                format!("the compiled automaton of {} patterns ({cause})", patterns.len()),
            ));
        }
        Failure::Syntax(cause)
    };
    let regex = Regex::builder()
        .syntax(syntax)
        .configure(
            Regex::config()
                .utf8_empty(false)
                .nfa_size_limit(Some(compiled))
                .onepass_size_limit(Some(compiled))
                .dfa_size_limit(Some(compiled)),
        )
        .build_many(patterns)
        .map_err(|e| explain(&e, e.pattern().map(|p| p.as_usize()), e.size_limit().is_some()))?;
    // The meta regex hides its NFA: the same compile (same syntax, same
    // size limit, so just as bounded) gives its states and slots.
    let nfa = thompson::Compiler::new()
        .syntax(syntax)
        .configure(thompson::Config::new().nfa_size_limit(Some(compiled)))
        .build_many(patterns)
        .map_err(|e| explain(&e, None, e.size_limit().is_some()))?;
    let search = (nfa.states().len() as u64)
        .saturating_mul(nfa.group_info().slot_len() as u64)
        .saturating_mul(2 * 8);
    if search > limits.max_search_memory {
        return Err(Failure::Limit(limit(
            "max_search_memory",
            limits.max_search_memory,
            format!(
                "the worst-case search memory of {} patterns ({} NFA states: {search} bytes)",
                patterns.len(),
                nfa.states().len()
            ),
        )));
    }
    let states = nfa.states().len();
    // The longest match of the set (None if any pattern's is unbounded),
    // from the patterns as the same syntax parses them (they did above).
    let max_len = patterns.iter().try_fold(0usize, |longest, p| {
        let hir = regex_automata::util::syntax::parse_with(p, &syntax).ok()?;
        Some(longest.max(hir.properties().maximum_len()?))
    });
    Ok(Compiled {
        regex,
        states,
        max_len,
    })
}

/// A compiled pattern set and the size of its NFA.
struct Compiled {
    regex: Regex,
    /// NFA states: the PikeVM's most work per input byte.
    states: usize,
    /// The longest match of any pattern, if bounded.
    max_len: Option<usize>,
}

/// Compiles `patterns`, the value of parameter `param` of `p`, within
/// `limits`, as `regex` does (bytes, no Unicode; leftmost-first, an
/// earlier pattern winning at one position): a pattern that does not parse
/// is an error of that parameter saying which and why.
pub(crate) fn compile_param(
    p: &Params<'_>,
    param: &str,
    patterns: &[&str],
    limits: &ScanLimits,
) -> Result<Regex, OpError> {
    match compile(patterns, limits) {
        Ok(c) => Ok(c.regex),
        Err(Failure::Limit(e)) => Err(e),
        Err(Failure::Syntax(reason)) => Err(p
            .bad(param, &format!("valid regular expressions: {reason}"))
            .into()),
    }
}

/// Work of one chunk of a watched scan, in NFA states times input bytes:
/// where the lazy DFA gives up, the PikeVM costs up to its NFA's state
/// count per byte, so a chunk is `max(256, REGEX_WORK_PER_CHUNK / states)`
/// bytes (at most [`WATCH_CHUNK_BYTES`]): 8 Mi state-bytes, a few
/// milliseconds of PikeVM.
pub const REGEX_WORK_PER_CHUNK: usize = 8 << 20;

/// The compiled pattern set.
#[derive(Debug)]
pub struct RegexScan {
    regex: Regex,
    max_output: u64,
    /// The longest match of any pattern, if bounded.
    max_len: Option<usize>,
    /// Input bytes of one chunk of a watched scan.
    chunk: usize,
}

impl RegexScan {
    /// Builds from `patterns` (a file of one regular expression per line, at
    /// most 16 MiB; empty lines are skipped, where `grep -f` would match
    /// everything), or the built-in set, within the limits of its
    /// parameters ([`ScanLimits`]).
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let limits = ScanLimits::from_params(p)?;
        let path = p.raw("patterns");
        let from_file;
        let patterns: Vec<&str> = if path.is_empty() {
            DEFAULT_PATTERNS.to_vec()
        } else {
            from_file = crate::operator::read_text_file(path, 16 << 20)
                .map_err(|e| p.bad("patterns", &format!("a readable file of patterns ({e})")))?;
            from_file.lines().filter(|l| !l.is_empty()).collect()
        };
        let compiled = match compile(&patterns, &limits) {
            Ok(c) => c,
            Err(Failure::Limit(e)) => return Err(e),
            Err(Failure::Syntax(reason)) => {
                return Err(p
                    .bad("patterns", &format!("valid regular expressions: {reason}"))
                    .into())
            }
        };
        Ok(Box::new(RegexScan::from_compiled(compiled, limits.max_output)))
    }

    /// Compiles `patterns` (Rust `regex` syntax, matching bytes) within the
    /// default limits; the error says which pattern is wrong and why.
    pub fn new(patterns: &[&str]) -> Result<Self, OpError> {
        Self::with_limits(patterns, &ScanLimits::default())
    }

    /// Compiles `patterns` within `limits`.
    pub fn with_limits(patterns: &[&str], limits: &ScanLimits) -> Result<Self, OpError> {
        match compile(patterns, limits) {
            Ok(c) => Ok(RegexScan::from_compiled(c, limits.max_output)),
            Err(Failure::Limit(e)) => Err(e),
            Err(Failure::Syntax(reason)) => Err(OpError::Param(ParamError::Bad {
                owner: "operator `regex`".into(),
                param: "patterns".into(),
                value: format!("{} patterns", patterns.len()),
                expected: format!("valid regular expressions: {reason}"),
            })),
        }
    }
}

impl RegexScan {
    /// The operator of a compiled set.
    fn from_compiled(c: Compiled, max_output: u64) -> Self {
        let max_len = c.max_len;
        let chunk = (REGEX_WORK_PER_CHUNK / c.states.max(1)).clamp(256, WATCH_CHUNK_BYTES);
        RegexScan {
            regex: c.regex,
            max_output,
            max_len,
            chunk,
        }
    }

    /// The leftmost-first match starting at or after `start` in `hay`, as
    /// one search over `start..` finds it, searched in windows: with a
    /// longest match `max` known, the window from `pos` ends at `pos +
    /// chunk + max`, and a match found starting by `pos + chunk` is the
    /// one the whole search finds (every match starting earlier fits the
    /// window; look-around still sees the whole haystack); otherwise no
    /// match starts in `pos..=pos + chunk` and the next window starts
    /// after it. `at` is asked before each window. Without a bound the
    /// window is the rest of the input: one search, one check.
    fn find_from(
        &self,
        hay: &[u8],
        start: usize,
        at: &mut Checkpoint<'_>,
        cache: &mut regex_automata::meta::Cache,
    ) -> Result<Option<regex_automata::Match>, OpError> {
        let mut pos = start;
        while pos <= hay.len() {
            at.check(pos)?;
            let end = match self.max_len {
                Some(max) => pos.saturating_add(self.chunk).saturating_add(max).min(hay.len()),
                None => hay.len(),
            };
            let whole = end == hay.len();
            match self.regex.search_with(cache, &Input::new(hay).span(pos..end)) {
                Some(m) if whole || m.start() <= pos + self.chunk => return Ok(Some(m)),
                None if whole => return Ok(None),
                _ => pos = pos + self.chunk + 1,
            }
        }
        Ok(None)
    }

    /// One line per match (as `find_iter`), asking `watch` before each
    /// search window; more than `max_output` bytes of lines is an error.
    fn scan(&self, input: &[u8], watch: &dyn Watch) -> Result<Vec<u8>, OpError> {
        let mut at = Checkpoint::new("regex", input.len(), watch);
        let mut cache = self.regex.create_cache();
        let allowed = crate::limits::limit_usize(self.max_output);
        let mut out = Vec::new();
        let mut line = String::new();
        let mut start = 0;
        let mut last_end = None;
        while let Some(mut m) = self.find_from(input, start, &mut at, &mut cache)? {
            // find_iter's rule: an empty match right where the previous
            // match ended is skipped; the search goes on a byte later.
            if m.is_empty() && Some(m.end()) == last_end {
                match self.find_from(input, start + 1, &mut at, &mut cache)? {
                    Some(next) => m = next,
                    None => break,
                }
            }
            start = m.end();
            last_end = Some(m.end());
            line.clear();
            // Writing to a String cannot fail.
            let _ = writeln!(line, "{} {} {}", m.start(), m.end(), m.pattern().as_usize());
            crate::limits::reserve_within(&mut out, line.len(), allowed)
                .map_err(|_| crate::limits::output_limit("regex", self.max_output))?;
            out.extend_from_slice(line.as_bytes());
        }
        Ok(out)
    }
}

impl Operator for RegexScan {
    fn name(&self) -> &'static str {
        "regex"
    }

    /// One line per match; more than `max_output` bytes of them is an error.
    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        self.scan(input, &NeverStop)
    }

    /// The scan in windows of `max(256, REGEX_WORK_PER_CHUNK / NFA states)`
    /// bytes when every pattern has a longest match (see `find_from`);
    /// otherwise each search for the next match is one chunk, asked
    /// between matches only.
    fn run_watched(&self, input: &[u8], watch: &dyn Watch) -> Result<Vec<u8>, OpError> {
        self.scan(input, watch)
    }

    /// Only when every pattern's matches are of bounded length.
    fn stoppable(&self) -> bool {
        self.max_len.is_some()
    }
}

#[cfg(test)]
mod watch_tests {
    use super::*;
    use proptest::prelude::*;

    /// `find_iter`'s lines, the reference of the windowed scan.
    fn reference(scan: &RegexScan, hay: &[u8]) -> Vec<u8> {
        let mut out = String::new();
        for m in scan.regex.find_iter(hay) {
            let _ = writeln!(out, "{} {} {}", m.start(), m.end(), m.pattern().as_usize());
        }
        out.into_bytes()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Windows of a few bytes (look-around, empty matches, alternations
        /// of different lengths) find exactly `find_iter`'s matches.
        #[test]
        fn windowed_scans_equal_find_iter(
            hay in proptest::collection::vec(proptest::sample::select(b"ab c".to_vec()), 0..300),
            chunk in 1usize..20,
            set in 0usize..4,
        ) {
            let sets: [&[&str]; 4] = [
                &["a{2,5}", "b|ab"],
                &[r"\bab?\b", "c{0,2}"],
                &["(?:ab|a){0,3}", " "],
                &["a b$", "^b", "[ab]{3}"],
            ];
            let mut scan = RegexScan::new(sets[set]).unwrap();
            prop_assert!(scan.max_len.is_some());
            scan.chunk = chunk;
            prop_assert_eq!(scan.run(&hay).unwrap(), reference(&scan, &hay));
        }
    }
}
