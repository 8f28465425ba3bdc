//! Ingress matching: ordered 5-tuple rules, the first that matches a packet
//! decides where it goes. One matcher serves every user: OSMOSIS' matching
//! engine (a packet goes to the flow queue of the tenant whose rule matches
//! it, [`ingress_rules`]) and a firewall (a packet is allowed or denied).
//!
//! A rule matches a packet when its source and destination addresses lie in
//! the rule's prefixes, its ports in the rule's ranges (inclusive) and its
//! protocol is the rule's (or the rule has none). A field a rule leaves out
//! matches anything. A packet no rule matches gets no answer: the caller
//! decides (the simulator drops and counts it, a firewall applies its
//! default). Matching is a linear scan in rule order.

use crate::scenario::{FlowMatch, TenantSpec};
use isola_core::TenantId;
use std::net::Ipv4Addr;

/// The 5-tuple of one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FiveTuple {
    /// Source address.
    pub src_ip: Ipv4Addr,
    /// Destination address.
    pub dst_ip: Ipv4Addr,
    /// Source port (0 for packets without ports).
    pub src_port: u16,
    /// Destination port (0 for packets without ports).
    pub dst_port: u16,
    /// IP protocol number.
    pub proto: u8,
}

/// An IPv4 prefix: the addresses whose first `len` bits are the prefix's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Prefix {
    bits: u32,
    mask: u32,
}

impl Ipv4Prefix {
    /// Every address (`0.0.0.0/0`).
    pub const ANY: Ipv4Prefix = Ipv4Prefix { bits: 0, mask: 0 };

    /// `addr/len`, or `None` when `len` is over 32 or `addr` has bits set
    /// past the first `len`.
    pub fn new(addr: Ipv4Addr, len: u8) -> Option<Ipv4Prefix> {
        let prefix = Ipv4Prefix::masked(addr, len.min(32));
        (len <= 32 && prefix.bits == u32::from(addr)).then_some(prefix)
    }

    /// The `len`-bit prefix of `addr` (bits past `len` cleared; `len` over
    /// 32 counts as 32).
    pub fn masked(addr: Ipv4Addr, len: u8) -> Ipv4Prefix {
        let mask = u32::MAX.checked_shl(32 - u32::from(len.min(32))).unwrap_or(0);
        Ipv4Prefix {
            bits: u32::from(addr) & mask,
            mask,
        }
    }

    /// The single address `addr` (`addr/32`).
    pub fn host(addr: Ipv4Addr) -> Ipv4Prefix {
        Ipv4Prefix::masked(addr, 32)
    }

    /// The prefix's address (bits past its length are zero).
    pub fn addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.bits)
    }

    /// The netmask: the prefix's length in leading one bits.
    pub fn mask(&self) -> u32 {
        self.mask
    }

    /// Whether `addr` lies in the prefix.
    #[inline]
    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        u32::from(addr) & self.mask == self.bits
    }
}

/// An inclusive range of ports, never empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PortRange {
    first: u16,
    last: u16,
}

impl PortRange {
    /// Every port.
    pub const ANY: PortRange = PortRange {
        first: 0,
        last: u16::MAX,
    };

    /// `first..=last`, or `None` when `first > last`.
    pub fn new(first: u16, last: u16) -> Option<PortRange> {
        (first <= last).then_some(PortRange { first, last })
    }

    /// The single port `port`.
    pub fn single(port: u16) -> PortRange {
        PortRange {
            first: port,
            last: port,
        }
    }

    /// The lowest port in the range.
    pub fn first(&self) -> u16 {
        self.first
    }

    /// The highest port in the range.
    pub fn last(&self) -> u16 {
        self.last
    }

    /// Whether `port` lies in the range.
    #[inline]
    pub fn contains(&self, port: u16) -> bool {
        (self.first..=self.last).contains(&port)
    }
}

/// A pattern over 5-tuples: prefixes, port ranges and an optional protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TupleRule {
    /// Source addresses.
    pub src: Ipv4Prefix,
    /// Destination addresses.
    pub dst: Ipv4Prefix,
    /// Source ports.
    pub src_ports: PortRange,
    /// Destination ports.
    pub dst_ports: PortRange,
    /// IP protocol number; `None` matches any.
    pub proto: Option<u8>,
}

impl TupleRule {
    /// The rule that matches every packet.
    pub const ANY: TupleRule = TupleRule {
        src: Ipv4Prefix::ANY,
        dst: Ipv4Prefix::ANY,
        src_ports: PortRange::ANY,
        dst_ports: PortRange::ANY,
        proto: None,
    };

    /// Whether `t` matches the rule.
    #[inline]
    pub fn matches(&self, t: &FiveTuple) -> bool {
        self.src.contains(t.src_ip)
            && self.dst.contains(t.dst_ip)
            && self.src_ports.contains(t.src_port)
            && self.dst_ports.contains(t.dst_port)
            && self.proto.is_none_or(|p| p == t.proto)
    }
}

/// A scenario's `match` table: each field it gives must be equal, the
/// others match anything.
impl From<FlowMatch> for TupleRule {
    fn from(m: FlowMatch) -> TupleRule {
        TupleRule {
            src: m.src_ip.map_or(Ipv4Prefix::ANY, Ipv4Prefix::host),
            dst: m.dst_ip.map_or(Ipv4Prefix::ANY, Ipv4Prefix::host),
            src_ports: m.src_port.map_or(PortRange::ANY, PortRange::single),
            dst_ports: m.dst_port.map_or(PortRange::ANY, PortRange::single),
            proto: m.proto,
        }
    }
}

/// Ordered rules, each with what a match means (`A`: a tenant's flow
/// queue, an allow/deny verdict).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSet<A> {
    rules: Vec<(TupleRule, A)>,
}

impl<A> Default for RuleSet<A> {
    fn default() -> Self {
        RuleSet { rules: Vec::new() }
    }
}

impl<A> RuleSet<A> {
    /// The rules, in the order they are tried.
    pub fn new(rules: Vec<(TupleRule, A)>) -> Self {
        RuleSet { rules }
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[(TupleRule, A)] {
        &self.rules
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// What the first rule that matches `t` says, or `None` if none does.
    #[inline]
    pub fn classify(&self, t: &FiveTuple) -> Option<&A> {
        self.rules.iter().find(|(r, _)| r.matches(t)).map(|(_, a)| a)
    }
}

/// OSMOSIS' matching engine for a scenario: one rule per tenant that
/// declares `match`, in tenant order, sending a packet to that tenant's flow
/// queue (its channels). `None` when no tenant declares one: every packet
/// then belongs to the tenant that generated it.
pub fn ingress_rules(tenants: &[TenantSpec]) -> Option<RuleSet<TenantId>> {
    let rules: Vec<(TupleRule, TenantId)> = tenants
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.flow_match.map(|m| (TupleRule::from(m), TenantId(i as u32))))
        .collect();
    (!rules.is_empty()).then(|| RuleSet::new(rules))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(src: [u8; 4], dst_port: u16, proto: u8) -> FiveTuple {
        FiveTuple {
            src_ip: Ipv4Addr::from(src),
            dst_ip: Ipv4Addr::new(10, 255, 0, 1),
            src_port: 1030,
            dst_port,
            proto,
        }
    }

    #[test]
    fn first_matching_rule_wins_and_wildcards_match_anything() {
        let udp_4791 = FlowMatch {
            dst_port: Some(4791),
            proto: Some(17),
            ..FlowMatch::default()
        };
        let from_b = FlowMatch {
            src_ip: Some(Ipv4Addr::new(10, 0, 1, 1)),
            ..FlowMatch::default()
        };
        let m = RuleSet::new(vec![(udp_4791.into(), 0), (from_b.into(), 1)]);
        let mut p = tuple([10, 0, 1, 1], 4001, 17);
        assert_eq!(m.classify(&p), Some(&1));
        p.dst_port = 4791;
        assert_eq!(m.classify(&p), Some(&0), "rule order decides overlaps");
        p.proto = 6;
        assert_eq!(m.classify(&p), Some(&1));
        assert_eq!(m.classify(&tuple([10, 0, 9, 1], 4009, 17)), None);
        assert_eq!(RuleSet::new(vec![(TupleRule::ANY, 7)]).classify(&p), Some(&7));
        assert_eq!(RuleSet::<u8>::default().classify(&p), None);
    }

    #[test]
    fn prefixes_and_port_ranges() {
        let net = Ipv4Prefix::new(Ipv4Addr::new(10, 0, 0, 0), 8).unwrap();
        assert!(net.contains(Ipv4Addr::new(10, 200, 3, 4)));
        assert!(!net.contains(Ipv4Addr::new(11, 0, 0, 0)));
        assert_eq!(net.mask(), 0xFF00_0000);
        assert_eq!(
            Ipv4Prefix::new(Ipv4Addr::new(10, 0, 0, 1), 8),
            None,
            "bits past the length"
        );
        assert_eq!(Ipv4Prefix::new(Ipv4Addr::new(10, 0, 0, 0), 33), None);
        assert_eq!(
            Ipv4Prefix::masked(Ipv4Addr::new(10, 1, 2, 3), 16).addr(),
            Ipv4Addr::new(10, 1, 0, 0)
        );
        assert!(Ipv4Prefix::ANY.contains(Ipv4Addr::BROADCAST));
        assert!(Ipv4Prefix::host(Ipv4Addr::LOCALHOST).contains(Ipv4Addr::LOCALHOST));
        assert!(!Ipv4Prefix::host(Ipv4Addr::LOCALHOST).contains(Ipv4Addr::new(127, 0, 0, 2)));
        let ports = PortRange::new(1024, 2047).unwrap();
        assert!(ports.contains(1024) && ports.contains(2047) && !ports.contains(2048));
        assert_eq!(PortRange::new(5, 4), None);
        let rule = TupleRule {
            src: net,
            dst_ports: ports,
            proto: Some(6),
            ..TupleRule::ANY
        };
        assert!(rule.matches(&tuple([10, 9, 9, 9], 1500, 6)));
        assert!(!rule.matches(&tuple([10, 9, 9, 9], 1500, 17)));
        assert!(!rule.matches(&tuple([10, 9, 9, 9], 80, 6)));
        assert!(!rule.matches(&tuple([12, 9, 9, 9], 1500, 6)));
    }
}
