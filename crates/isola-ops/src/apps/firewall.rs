//! `firewall`: MTDA's firewall, ordered 5-tuple rules over a batch of
//! packets; the first rule that matches decides, the `default` action when
//! none does.
//!
//! A rule matches a packet when the source and destination addresses lie in
//! its prefixes, the ports in its ranges (inclusive) and the protocol is its
//! protocol (or it has none). Packets without ports (not TCP or UDP, or
//! fragments) have ports 0, as in `flow-monitor`. Matching is a linear scan
//! in rule order, what the paper describes ("comparing it against a set of
//! predefined rules") and what iptables does within a chain: its cost grows
//! with the rules scanned.
//!
//! Rules come from a file (`rules`) or are seeded random (`random-rules`,
//! `seed`). File: one rule a line, `ACTION SRC DST SPORTS DPORTS PROTO`:
//! ACTION `allow` or `deny`; SRC and DST `a.b.c.d/len`, `a.b.c.d` (a /32)
//! or `any`; SPORTS and DPORTS `N`, `LO-HI` or `any`; PROTO `tcp`, `udp`,
//! `icmp`, `any` or a protocol number; `#` starts a comment. A prefix with
//! bits set past its length is an error, as in `lpm`'s route files.
//!
//! Random rules have the shape of ClassBench's firewall sets: sources are
//! mostly wide (40% any), destinations mostly narrow (/16 to /32),
//! destination ports a well-known port (50%), a range (20%) or any, source
//! ports mostly any, TCP or UDP (10% any protocol), allow or deny at even
//! odds.
//!
//! Output (`output`): `packets`, the allowed packets back to back, unchanged
//! (the same container as the input); or `verdicts`, one byte per packet,
//! 1 allowed, 0 denied. Batches split: outputs of consecutive packets
//! concatenate.

use super::{chunks, l4, push_packet, seed_of, Batch, Emit, SampleFlow, SplitMix};
use crate::operator::{OpError, Operator};
use crate::packet::Packet;
use isola_core::params::{ParamError, Params};
use std::collections::BTreeMap;

/// Largest `random-rules`.
pub const MAX_RANDOM_RULES: u64 = 1_000_000;

/// One rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rule {
    pub(crate) src: u32,
    pub(crate) src_mask: u32,
    pub(crate) dst: u32,
    pub(crate) dst_mask: u32,
    pub(crate) sport: (u16, u16),
    pub(crate) dport: (u16, u16),
    pub(crate) proto: Option<u8>,
    pub(crate) allow: bool,
}

impl Rule {
    fn matches(&self, src: u32, dst: u32, sport: u16, dport: u16, proto: u8) -> bool {
        src & self.src_mask == self.src
            && dst & self.dst_mask == self.dst
            && (self.sport.0..=self.sport.1).contains(&sport)
            && (self.dport.0..=self.dport.1).contains(&dport)
            && self.proto.is_none_or(|p| p == proto)
    }
}

/// The mask of a `len`-bit prefix (`len` at most 32).
fn mask(len: u32) -> u32 {
    u32::MAX.checked_shl(32 - len.min(32)).unwrap_or(0)
}

/// `a.b.c.d/len`, `a.b.c.d` or `any`: (prefix, mask).
fn parse_prefix(word: &str) -> Result<(u32, u32), String> {
    if word == "any" {
        return Ok((0, 0));
    }
    let (addr, len) = word.split_once('/').unwrap_or((word, "32"));
    let addr: std::net::Ipv4Addr = addr
        .parse()
        .map_err(|_| format!("`{addr}` is not an IPv4 address"))?;
    let len: u32 = len
        .parse()
        .ok()
        .filter(|&l| l <= 32)
        .ok_or_else(|| format!("prefix length `{len}` is not 0 to 32"))?;
    let (addr, mask) = (u32::from(addr), mask(len));
    if addr & !mask != 0 {
        return Err(format!("prefix `{word}` has bits set past its length"));
    }
    Ok((addr, mask))
}

/// `N`, `LO-HI` or `any`.
fn parse_ports(word: &str) -> Result<(u16, u16), String> {
    if word == "any" {
        return Ok((0, u16::MAX));
    }
    let port = |w: &str| {
        w.parse::<u16>()
            .map_err(|_| format!("`{w}` is not a port, 0 to 65535"))
    };
    let (lo, hi) = match word.split_once('-') {
        Some((lo, hi)) => (port(lo)?, port(hi)?),
        None => (port(word)?, port(word)?),
    };
    if lo > hi {
        return Err(format!("port range `{word}` is empty"));
    }
    Ok((lo, hi))
}

/// `tcp`, `udp`, `icmp`, `any` or a protocol number.
fn parse_proto(word: &str) -> Result<Option<u8>, String> {
    match word {
        "any" => Ok(None),
        "tcp" => Ok(Some(6)),
        "udp" => Ok(Some(17)),
        "icmp" => Ok(Some(1)),
        n => n
            .parse::<u8>()
            .map(Some)
            .map_err(|_| format!("`{n}` is not tcp, udp, icmp, any or a protocol number 0 to 255")),
    }
}

/// One rule line (without comment).
pub(crate) fn parse_rule(line: &str) -> Result<Rule, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let [action, src, dst, sport, dport, proto] = words[..] else {
        return Err("expected `allow|deny SRC DST SPORTS DPORTS PROTO`".into());
    };
    let allow = match action {
        "allow" => true,
        "deny" => false,
        a => return Err(format!("action `{a}` is not allow or deny")),
    };
    let (src, src_mask) = parse_prefix(src)?;
    let (dst, dst_mask) = parse_prefix(dst)?;
    Ok(Rule {
        src,
        src_mask,
        dst,
        dst_mask,
        sport: parse_ports(sport)?,
        dport: parse_ports(dport)?,
        proto: parse_proto(proto)?,
        allow,
    })
}

/// Parses a rule file's text; `Err` is the line number and what is wrong.
pub(crate) fn parse_rules(text: &str) -> Result<Vec<Rule>, (usize, String)> {
    let mut rules = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        rules.push(parse_rule(line).map_err(|e| (n + 1, format!("`{line}`: {e}")))?);
    }
    Ok(rules)
}

/// `count` random rules from `seed` (see the module docs).
pub(crate) fn random_rules(count: u64, seed: u64) -> Vec<Rule> {
    const WELL_KNOWN: [u16; 8] = [22, 53, 80, 123, 443, 3306, 6379, 8080];
    let mut r = SplitMix(seed);
    (0..count)
        .map(|_| {
            let src_len = [0, 0, 0, 0, 8, 8, 16, 16, 24, 32][r.below(10) as usize];
            let dst_len = [0, 16, 16, 24, 24, 24, 24, 32, 32, 32][r.below(10) as usize];
            let (src_mask, dst_mask) = (mask(src_len), mask(dst_len));
            let sport = if r.below(5) == 0 {
                (1024, u16::MAX)
            } else {
                (0, u16::MAX)
            };
            let dport = match r.below(10) {
                0..5 => {
                    let p = WELL_KNOWN[r.below(8) as usize];
                    (p, p)
                }
                5..7 => {
                    let lo = r.below(60_000) as u16;
                    (lo, lo + r.below(1000) as u16)
                }
                _ => (0, u16::MAX),
            };
            let proto = match r.below(20) {
                0..9 => Some(6),
                9..18 => Some(17),
                _ => None,
            };
            Rule {
                src: r.next_u64() as u32 & src_mask,
                src_mask,
                dst: r.next_u64() as u32 & dst_mask,
                dst_mask,
                sport,
                dport,
                proto,
                allow: r.below(2) == 0,
            }
        })
        .collect()
}

/// The rules `rules` (a file) or `random-rules` and `seed` give.
pub(crate) fn rules(p: &Params<'_>) -> Result<Vec<Rule>, ParamError> {
    let path = p.raw("rules");
    if path.is_empty() {
        let count = p.u64_in("random-rules", 0..=MAX_RANDOM_RULES)?;
        let seed = p.u64_in("seed", 0..=u64::MAX)?;
        return Ok(random_rules(count, seed));
    }
    let text = crate::operator::read_text_file(path, 64 << 20)
        .map_err(|e| p.bad("rules", &format!("a readable rule file ({e})")))?;
    parse_rules(&text).map_err(|(line, what)| {
        p.bad(
            "rules",
            &format!("rules as `allow|deny SRC DST SPORTS DPORTS PROTO` lines; {path} line {line}: {what}"),
        )
    })
}

/// The `firewall` kernel.
#[derive(Debug)]
pub struct Firewall {
    rules: Vec<Rule>,
    default_allow: bool,
    verdicts: bool,
}

impl Firewall {
    /// Builds from `rules`, `random-rules`, `seed`, `default` and `output`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let default_allow = p.choice("default", &[("deny", false), ("allow", true)])?;
        let verdicts = p.choice("output", &[("packets", false), ("verdicts", true)])?;
        Ok(Box::new(Batch(Firewall {
            rules: rules(p)?,
            default_allow,
            verdicts,
        })))
    }
}

impl Emit for Firewall {
    fn name(&self) -> &'static str {
        "firewall"
    }

    fn packet(&self, p: &Packet<'_>, out: &mut Vec<u8>) -> Result<(), OpError> {
        let t = l4("firewall", p)?;
        let (src, dst) = (
            u32::from_be_bytes(p.header.source()),
            u32::from_be_bytes(p.header.destination()),
        );
        let proto = p.header.protocol().0;
        let allow = self
            .rules
            .iter()
            .find(|r| r.matches(src, dst, t.sport, t.dport, proto))
            .map_or(self.default_allow, |r| r.allow);
        if self.verdicts {
            out.push(u8::from(allow));
        } else if allow {
            out.extend_from_slice(p.bytes);
        }
        Ok(())
    }
}

/// A random address in `prefix`/`mask`.
fn inside(prefix: u32, mask: u32, r: &mut SplitMix) -> u32 {
    prefix | (r.next_u64() as u32 & !mask)
}

/// A random port in `range`.
fn port_in(range: (u16, u16), r: &mut SplitMix) -> u16 {
    range.0 + r.below(u64::from(range.1 - range.0) + 1) as u16
}

/// A valid `firewall` input carrying `payload`, for the rules `params`
/// give: TCP and UDP packets of up to 1500 bytes; three in four (chosen
/// from the bytes each carries) have a 5-tuple inside a random rule (which
/// it matches unless an earlier one does), the others a random one.
pub fn sample_input(params: &BTreeMap<String, String>, payload: &[u8]) -> Result<Vec<u8>, OpError> {
    let p = crate::registry::checked_params("firewall", params)?;
    let rules = rules(&p)?;
    let per = super::SAMPLE_UDP_PAYLOAD - 12;
    let mut out = Vec::with_capacity(payload.len() + payload.len() / per * 40 + 64);
    for chunk in chunks(payload, per) {
        let mut r = SplitMix(seed_of(chunk));
        let mut flow = SampleFlow {
            src: (r.next_u64() as u32).to_be_bytes(),
            dst: (r.next_u64() as u32).to_be_bytes(),
            sport: r.next_u64() as u16,
            dport: r.next_u64() as u16,
            tcp: r.below(2) == 0,
            ttl: 64,
        };
        if r.below(4) != 0 && !rules.is_empty() {
            let rule = rules[r.below(rules.len() as u64) as usize];
            flow.src = inside(rule.src, rule.src_mask, &mut r).to_be_bytes();
            flow.dst = inside(rule.dst, rule.dst_mask, &mut r).to_be_bytes();
            flow.sport = port_in(rule.sport, &mut r);
            flow.dport = port_in(rule.dport, &mut r);
            flow.tcp = match rule.proto {
                Some(6) => true,
                Some(_) => false,
                None => flow.tcp,
            };
        }
        push_packet(&mut out, &flow, chunk)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_lines() {
        let r = parse_rule("allow 10.0.0.0/8 any 1024-65535 443 tcp").unwrap();
        assert_eq!((r.src, r.src_mask, r.dst_mask), (0x0A00_0000, 0xFF00_0000, 0));
        assert_eq!(
            (r.sport, r.dport, r.proto, r.allow),
            ((1024, 65535), (443, 443), Some(6), true)
        );
        let r = parse_rule("deny 192.0.2.1 any any any 47").unwrap();
        assert_eq!((r.src_mask, r.proto, r.allow), (u32::MAX, Some(47), false));
        for bad in [
            "allow 10.0.0.1/8 any any any tcp",
            "allow 10.0.0.0/33 any any any tcp",
            "allow any any 5-4 any tcp",
            "allow any any 70000 any tcp",
            "allow any any any any gre",
            "permit any any any any tcp",
            "allow any any any any",
        ] {
            assert!(parse_rule(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_rules("# c\n\nallow any any any any any\nbad\n")
                .err()
                .map(|e| e.0),
            Some(4)
        );
    }

    #[test]
    fn random_rules_are_deterministic_and_well_formed() {
        let a = random_rules(500, 7);
        assert_eq!(a, random_rules(500, 7));
        assert_ne!(a, random_rules(500, 8));
        for r in &a {
            assert_eq!(r.src & !r.src_mask, 0);
            assert_eq!(r.dst & !r.dst_mask, 0);
            assert!(r.sport.0 <= r.sport.1 && r.dport.0 <= r.dport.1);
        }
        assert!(a.iter().any(|r| r.allow) && a.iter().any(|r| !r.allow));
    }
}
