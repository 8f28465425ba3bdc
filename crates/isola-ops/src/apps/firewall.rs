//! `firewall`: MTDA's firewall, ordered 5-tuple rules over a batch of
//! packets; the first rule that matches decides, the `default` action when
//! none does.
//!
//! The rules are `isola_model::ingress` rules, the matcher ingress uses: a
//! rule matches a packet when the source and destination addresses lie in
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
use isola_model::ingress::{FiveTuple, Ipv4Prefix, PortRange, RuleSet, TupleRule};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// Largest `random-rules`.
pub const MAX_RANDOM_RULES: u64 = 1_000_000;

/// One rule: the packets it matches, and whether it allows them.
pub(crate) type Rule = (TupleRule, bool);

/// `a.b.c.d/len`, `a.b.c.d` or `any`.
fn parse_prefix(word: &str) -> Result<Ipv4Prefix, String> {
    if word == "any" {
        return Ok(Ipv4Prefix::ANY);
    }
    let (addr, len) = word.split_once('/').unwrap_or((word, "32"));
    let addr: std::net::Ipv4Addr = addr
        .parse()
        .map_err(|_| format!("`{addr}` is not an IPv4 address"))?;
    let len: u8 = len
        .parse()
        .ok()
        .filter(|&l| l <= 32)
        .ok_or_else(|| format!("prefix length `{len}` is not 0 to 32"))?;
    Ipv4Prefix::new(addr, len).ok_or_else(|| format!("prefix `{word}` has bits set past its length"))
}

/// `N`, `LO-HI` or `any`.
fn parse_ports(word: &str) -> Result<PortRange, String> {
    if word == "any" {
        return Ok(PortRange::ANY);
    }
    let port = |w: &str| {
        w.parse::<u16>()
            .map_err(|_| format!("`{w}` is not a port, 0 to 65535"))
    };
    let (lo, hi) = match word.split_once('-') {
        Some((lo, hi)) => (port(lo)?, port(hi)?),
        None => (port(word)?, port(word)?),
    };
    PortRange::new(lo, hi).ok_or_else(|| format!("port range `{word}` is empty"))
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
    let rule = TupleRule {
        src: parse_prefix(src)?,
        dst: parse_prefix(dst)?,
        src_ports: parse_ports(sport)?,
        dst_ports: parse_ports(dport)?,
        proto: parse_proto(proto)?,
    };
    Ok((rule, allow))
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
            let src_len: u8 = [0, 0, 0, 0, 8, 8, 16, 16, 24, 32][r.below(10) as usize];
            let dst_len: u8 = [0, 16, 16, 24, 24, 24, 24, 32, 32, 32][r.below(10) as usize];
            let src_ports = if r.below(5) == 0 {
                PortRange::new(1024, u16::MAX).expect("1024 <= 65535")
            } else {
                PortRange::ANY
            };
            let dst_ports = match r.below(10) {
                0..5 => PortRange::single(WELL_KNOWN[r.below(8) as usize]),
                5..7 => {
                    let lo = r.below(60_000) as u16;
                    // lo + 999 < 61,000: never past u16::MAX, never below lo.
                    PortRange::new(lo, lo + r.below(1000) as u16).expect("lo <= lo + n")
                }
                _ => PortRange::ANY,
            };
            let proto = match r.below(20) {
                0..9 => Some(6),
                9..18 => Some(17),
                _ => None,
            };
            // Drawn in this order: source, destination, action.
            let src = Ipv4Prefix::masked(Ipv4Addr::from(r.next_u64() as u32), src_len);
            let dst = Ipv4Prefix::masked(Ipv4Addr::from(r.next_u64() as u32), dst_len);
            let rule = TupleRule {
                src,
                dst,
                src_ports,
                dst_ports,
                proto,
            };
            (rule, r.below(2) == 0)
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
    /// The rules; a match's value says whether the packet is allowed.
    rules: RuleSet<bool>,
    default_allow: bool,
    verdicts: bool,
}

impl Firewall {
    /// Builds from `rules`, `random-rules`, `seed`, `default` and `output`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let default_allow = p.choice("default", &[("deny", false), ("allow", true)])?;
        let verdicts = p.choice("output", &[("packets", false), ("verdicts", true)])?;
        Ok(Box::new(Batch(Firewall {
            rules: RuleSet::new(rules(p)?),
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
        let tuple = FiveTuple {
            src_ip: Ipv4Addr::from(p.header.source()),
            dst_ip: Ipv4Addr::from(p.header.destination()),
            src_port: t.sport,
            dst_port: t.dport,
            proto: p.header.protocol().0,
        };
        let allow = self.rules.classify(&tuple).copied().unwrap_or(self.default_allow);
        if self.verdicts {
            out.push(u8::from(allow));
        } else if allow {
            out.extend_from_slice(p.bytes);
        }
        Ok(())
    }
}

/// A random address in `prefix`.
fn inside(prefix: Ipv4Prefix, r: &mut SplitMix) -> u32 {
    u32::from(prefix.addr()) | (r.next_u64() as u32 & !prefix.mask())
}

/// A random port in `range`.
fn port_in(range: PortRange, r: &mut SplitMix) -> u16 {
    range.first() + r.below(u64::from(range.last() - range.first()) + 1) as u16
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
            let (rule, _) = rules[r.below(rules.len() as u64) as usize];
            flow.src = inside(rule.src, &mut r).to_be_bytes();
            flow.dst = inside(rule.dst, &mut r).to_be_bytes();
            flow.sport = port_in(rule.src_ports, &mut r);
            flow.dport = port_in(rule.dst_ports, &mut r);
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
        let (r, allow) = parse_rule("allow 10.0.0.0/8 any 1024-65535 443 tcp").unwrap();
        assert_eq!(
            (u32::from(r.src.addr()), r.src.mask(), r.dst.mask()),
            (0x0A00_0000, 0xFF00_0000, 0)
        );
        assert_eq!(
            (r.src_ports, r.dst_ports, r.proto, allow),
            (
                PortRange::new(1024, 65535).unwrap(),
                PortRange::single(443),
                Some(6),
                true
            )
        );
        let (r, allow) = parse_rule("deny 192.0.2.1 any any any 47").unwrap();
        assert_eq!((r.src.mask(), r.proto, allow), (u32::MAX, Some(47), false));
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
        for (r, _) in &a {
            assert_eq!(u32::from(r.src.addr()) & !r.src.mask(), 0);
            assert_eq!(u32::from(r.dst.addr()) & !r.dst.mask(), 0);
            assert!(r.src_ports.first() <= r.src_ports.last() && r.dst_ports.first() <= r.dst_ports.last());
        }
        assert!(a.iter().any(|r| r.1) && a.iter().any(|r| !r.1));
    }
}
