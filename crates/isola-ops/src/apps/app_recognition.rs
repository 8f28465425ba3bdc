//! `app-recognition`: DPUBench's second end-to-end program (section 5.2):
//! the payload of each received packet is matched against regular
//! expressions to recognise its application, and the recognised
//! application's task runs on it: hash the whole packet, compress the
//! payload, or send the packet straight back (echo).
//!
//! # Input
//!
//! As [`super::flow_table`]: one or more IPv4 packets back to back, the
//! raw packets DPUBench's server receives, carried whole in the datagram
//! the daemon hands the kernel (`isola load udp --frame ipv4`). The
//! payload matched is the UDP or TCP application payload; packets without
//! one (other protocols, fragments) take the `default` action.
//!
//! # Rules
//!
//! A rule maps a pattern to an action ([`Action`]). The `rules` file has
//! one rule a line, `ACTION PATTERN` (the pattern is the rest of the line,
//! Rust `regex` syntax over bytes, as the `regex` operator: no Unicode,
//! `^` is the start of the payload); empty lines and `#` comments are
//! skipped. Without a file, [`DEFAULT_RULES`]. The rules compile into one
//! multi-pattern automaton (the `regex` operator's compiler and limits:
//! DPUBench's RXP engine matches a rule set in one pass too), searched
//! once per packet: the rule of the leftmost match wins, at one position
//! the earlier rule. No match: the `default` action.
//!
//! # Actions and output
//!
//! Per packet, the action's output: `hash`, the `hash` digest operator on
//! the whole IPv4 packet ("the hash value of the entire packet"); `compress`,
//! the `compress` operator on the application payload ("the payload section
//! of the packet"); `echo`, the packet itself; `drop`, nothing. A datagram
//! carries one packet, so its reply is that packet's output.

use super::{chunks, l4, push_packet, Batch, Kernel, SampleFlow, SAMPLE_UDP_PAYLOAD};
use crate::operator::{OpError, Operator};
use crate::packet::Packet;
use crate::registry::build_operator;
use crate::scan::{compile_param, ScanLimits};
use isola_core::params::{ParamSpec, Params};
use regex_automata::meta::Regex;
use std::collections::BTreeMap;

/// What a recognised application's packet gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The `hash` digest of the whole packet.
    Hash,
    /// The `compress` compression of the application payload.
    Compress,
    /// The packet itself, sent back.
    Echo,
    /// No output.
    Drop,
}

/// Action names, as rules and `default` write them.
pub const ACTIONS: &[(&str, Action)] = &[
    ("hash", Action::Hash),
    ("compress", Action::Compress),
    ("echo", Action::Echo),
    ("drop", Action::Drop),
];

/// The rules without a `rules` file (DPUBench does not publish its own):
/// HTTP requests are hashed (integrity, deduplication), JSON and XML
/// documents compressed, TLS records echoed.
pub const DEFAULT_RULES: &[(Action, &str)] = &[
    (
        Action::Hash,
        r"^(?:GET|POST|PUT|HEAD|DELETE) /\S* HTTP/1\.[01]\r\n",
    ),
    (Action::Compress, r#"^(?:\{"|\[\{|<\?xml )"#),
    (Action::Echo, r"^\x16\x03[\x00-\x04]"),
];

/// Digest operators `hash` may name.
const HASHES: &[(&str, &str)] = &[
    ("sha256", "sha256"),
    ("sha1", "sha1"),
    ("md5", "md5"),
    ("sha3-256", "sha3-256"),
];

/// Compressors `compress` may name.
const COMPRESSORS: &[(&str, &str)] = &[
    ("lz4", "lz4"),
    ("snappy", "snappy"),
    ("zstd", "zstd"),
    ("gzip", "gzip"),
    ("deflate", "deflate"),
];

/// The parameters of `app-recognition`.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "rules",
        default: "",
        description:
            "rule file, `ACTION PATTERN` lines (ACTION: hash, compress, echo or drop), `#` comments \
                      (default: HTTP requests hash, JSON/XML compress, TLS echo)",
    },
    ParamSpec {
        name: "default",
        default: "echo",
        description: "action for a packet no rule matches: hash, compress, echo or drop",
    },
    ParamSpec {
        name: "hash",
        default: "sha256",
        description: "digest of the hash action: sha256, sha1, md5 or sha3-256",
    },
    ParamSpec {
        name: "compress",
        default: "lz4",
        description: "compressor of the compress action: lz4, snappy, zstd, gzip or deflate",
    },
];

/// Largest rule file.
const MAX_RULES_FILE: u64 = 16 << 20;

/// The `app-recognition` kernel.
pub struct AppRecognition {
    regex: Regex,
    /// Each pattern's action, by pattern index.
    actions: Vec<Action>,
    default: Action,
    hash: Box<dyn Operator>,
    compress: Box<dyn Operator>,
}

impl std::fmt::Debug for AppRecognition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppRecognition")
            .field("actions", &self.actions)
            .field("default", &self.default)
            .finish_non_exhaustive()
    }
}

/// `text` as rules (see the module docs); an error names the line.
pub fn parse_rules(text: &str) -> Result<Vec<(Action, &str)>, String> {
    let mut rules = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (action, pattern) = line
            .split_once(char::is_whitespace)
            .map(|(a, p)| (a, p.trim_start()))
            .unwrap_or((line, ""));
        let action = ACTIONS
            .iter()
            .find(|(name, _)| *name == action)
            .map(|&(_, a)| a)
            .ok_or_else(|| {
                format!(
                    "line {}: unknown action `{action}` (hash, compress, echo or drop)",
                    n + 1
                )
            })?;
        if pattern.is_empty() {
            return Err(format!("line {}: `{action:?}` has no pattern after it", n + 1));
        }
        rules.push((action, pattern));
    }
    if rules.is_empty() {
        return Err("no rules".into());
    }
    Ok(rules)
}

impl AppRecognition {
    /// Builds from its parameters.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let path = p.raw("rules");
        let text;
        let rules = if path.is_empty() {
            DEFAULT_RULES.to_vec()
        } else {
            text = crate::operator::read_text_file(path, MAX_RULES_FILE)
                .map_err(|e| p.bad("rules", &format!("a readable rule file ({e})")))?;
            parse_rules(&text).map_err(|e| p.bad("rules", &format!("a rule file: {e}")))?
        };
        let patterns: Vec<&str> = rules.iter().map(|&(_, pat)| pat).collect();
        let regex = compile_param(p, "rules", &patterns, &ScanLimits::default())?;
        let none = BTreeMap::new();
        Ok(Box::new(Batch(AppRecognition {
            regex,
            actions: rules.iter().map(|&(a, _)| a).collect(),
            default: p.choice("default", ACTIONS)?,
            hash: build_operator(p.choice("hash", HASHES)?, &none)?,
            compress: build_operator(p.choice("compress", COMPRESSORS)?, &none)?,
        })))
    }

    /// The action for application payload `payload` (`None`: no payload).
    pub fn classify(&self, payload: Option<&[u8]>) -> Action {
        payload
            .and_then(|d| self.regex.find(d))
            .and_then(|m| self.actions.get(m.pattern().as_usize()).copied())
            .unwrap_or(self.default)
    }
}

impl Kernel for AppRecognition {
    /// The output so far.
    type State = Vec<u8>;

    fn name(&self) -> &'static str {
        "app-recognition"
    }

    /// One packet per datagram: nothing to gain from splitting.
    fn splits(&self) -> bool {
        false
    }

    fn state(&self) -> Vec<u8> {
        Vec::new()
    }

    fn packet(&self, p: &Packet<'_>, out: &mut Vec<u8>) -> Result<(), OpError> {
        let payload = l4("app-recognition", p)?.payload;
        match self.classify(payload) {
            Action::Hash => out.extend_from_slice(&self.hash.run(p.bytes)?),
            Action::Compress => out.extend_from_slice(&self.compress.run(payload.unwrap_or_default())?),
            Action::Echo => out.extend_from_slice(p.bytes),
            Action::Drop => {}
        }
        Ok(())
    }

    fn merge(&self, into: &mut Vec<u8>, later: Vec<u8>) {
        into.extend_from_slice(&later);
    }

    fn finish(&self, out: Vec<u8>) -> Result<Vec<u8>, OpError> {
        Ok(out)
    }
}

/// A valid `app-recognition` input carrying `payload`: UDP packets of up
/// to 1500 bytes, the first of each four starting as an HTTP request,
/// the second as a JSON document, the third as a TLS record, the fourth
/// as the payload (so every default rule and the default action run).
pub fn sample_input(payload: &[u8]) -> Result<Vec<u8>, OpError> {
    const HEADS: [&[u8]; 4] = [
        b"GET /index.html HTTP/1.1\r\n",
        b"{\"tenant\": ",
        b"\x16\x03\x01",
        b"",
    ];
    let room = SAMPLE_UDP_PAYLOAD - HEADS[0].len();
    let mut out = Vec::with_capacity(payload.len() + payload.len() / room * 60 + 64);
    for (i, chunk) in chunks(payload, room).into_iter().enumerate() {
        let data = [HEADS[i % HEADS.len()], chunk].concat();
        push_packet(&mut out, &SampleFlow::default(), &data)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    fn op(params: &[(&str, &str)]) -> Box<dyn Operator> {
        let p: BTreeMap<String, String> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        build_operator("app-recognition", &p).unwrap()
    }

    fn packet(payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        push_packet(&mut out, &SampleFlow::default(), payload).unwrap();
        out
    }

    #[test]
    fn hash_rule_answers_sha2_of_the_whole_packet() {
        let pkt = packet(b"GET /a.html HTTP/1.1\r\nHost: x\r\n\r\n");
        let out = op(&[]).run(&pkt).unwrap();
        assert_eq!(out, sha2::Sha256::digest(&pkt).to_vec());
        let out = op(&[("hash", "md5")]).run(&pkt).unwrap();
        assert_eq!(out, md5::Md5::digest(&pkt).to_vec());
    }

    #[test]
    fn compress_rule_answers_an_lz4_frame_of_the_payload() {
        let payload = [&b"{\"k\": "[..], &[b'7'; 900]].concat();
        let out = op(&[]).run(&packet(&payload)).unwrap();
        assert!(out.len() < payload.len() / 4, "{}", out.len());
        // The stock tool, where installed, reads the frame back.
        let dir = std::env::temp_dir().join(format!("isola-apprec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("p.lz4");
        std::fs::write(&file, &out).unwrap();
        match std::process::Command::new("lz4").arg("-dc").arg(&file).output() {
            Ok(o) => {
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                assert_eq!(o.stdout, payload);
            }
            Err(_) => eprintln!("lz4 not installed: frame not checked with the stock tool"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn echo_default_and_drop() {
        let tls = packet(b"\x16\x03\x03\x00\x10hello");
        assert_eq!(op(&[]).run(&tls).unwrap(), tls);
        let other = packet(b"nothing to recognise");
        assert_eq!(op(&[]).run(&other).unwrap(), other);
        assert!(op(&[("default", "drop")]).run(&other).unwrap().is_empty());
    }

    #[test]
    fn leftmost_match_wins_then_the_earlier_rule() {
        let dir = std::env::temp_dir().join(format!("isola-apprules-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rules = dir.join("rules");
        std::fs::write(&rules, "# test\n\ndrop world\nhash hello\necho hel+o\n").unwrap();
        let o = op(&[("rules", rules.to_str().unwrap())]);
        let pkt = packet(b"hello world");
        assert_eq!(o.run(&pkt).unwrap(), sha2::Sha256::digest(&pkt).to_vec());
        assert!(o.run(&packet(b"world hello")).unwrap().is_empty());
        std::fs::write(&rules, "hash ok\nfrobnicate x\n").unwrap();
        let p: BTreeMap<String, String> = [("rules".to_string(), rules.to_str().unwrap().to_string())].into();
        let e = build_operator("app-recognition", &p).err().unwrap().to_string();
        assert!(e.contains("line 2") && e.contains("frobnicate"), "{e}");
        std::fs::write(&rules, "hash (unclosed\n").unwrap();
        let e = build_operator("app-recognition", &p).err().unwrap().to_string();
        assert!(e.contains("pattern 1"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_sample_input_takes_every_action() {
        let input = sample_input(&[b'x'; 4000]).unwrap();
        let out = op(&[]).run(&input).unwrap();
        assert!(!out.is_empty());
    }
}
