//! Ingress: OSMOSIS' matching engine. Packets carry a 5-tuple; an ordered
//! list of rules (one per tenant that declares `match`) maps each packet to
//! the tenant whose flow management queue (channel) receives it. The first
//! matching rule wins; a field a rule leaves out matches anything. A packet
//! no rule matches is dropped at ingress and counted, never lost silently.
//!
//! Models: which tenant a packet belongs to. Leaves out: the matching
//! engine's own latency and table capacity (it keeps up with line rate).

use crate::scenario::FlowMatch;
use std::net::Ipv4Addr;

/// The 5-tuple of one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FiveTuple {
    /// Source address.
    pub src_ip: Ipv4Addr,
    /// Destination address.
    pub dst_ip: Ipv4Addr,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// IP protocol number.
    pub proto: u8,
}

impl FiveTuple {
    /// The tuple of packet number `seq` of a flow described by `flow` (fields
    /// it leaves out get defaults derived from the generating tenant's index:
    /// 10.0.t.1 -> 10.255.0.1, UDP, destination port 4000 + t, and a source
    /// port that changes per packet as a flow's sockets would).
    pub fn of_packet(flow: Option<&FlowMatch>, tenant: usize, seq: u64) -> FiveTuple {
        let f = flow.copied().unwrap_or_default();
        FiveTuple {
            src_ip: f.src_ip.unwrap_or(Ipv4Addr::new(10, 0, (tenant % 256) as u8, 1)),
            dst_ip: f.dst_ip.unwrap_or(Ipv4Addr::new(10, 255, 0, 1)),
            src_port: f.src_port.unwrap_or(1024 + (seq % 60_000) as u16),
            dst_port: f.dst_port.unwrap_or(4000u16.wrapping_add(tenant as u16)),
            proto: f.proto.unwrap_or(17),
        }
    }
}

impl FlowMatch {
    /// Whether `t` matches this rule (absent fields match anything).
    pub fn matches(&self, t: &FiveTuple) -> bool {
        self.src_ip.is_none_or(|v| v == t.src_ip)
            && self.dst_ip.is_none_or(|v| v == t.dst_ip)
            && self.src_port.is_none_or(|v| v == t.src_port)
            && self.dst_port.is_none_or(|v| v == t.dst_port)
            && self.proto.is_none_or(|v| v == t.proto)
    }
}

/// Ordered matching rules.
#[derive(Debug, Clone, Default)]
pub struct MatchingEngine {
    rules: Vec<(FlowMatch, usize)>,
}

impl MatchingEngine {
    /// Rules in tenant order; `None` when no tenant declares one (every
    /// packet then belongs to the tenant that generated it).
    pub fn new(rules: impl IntoIterator<Item = (usize, Option<FlowMatch>)>) -> Option<Self> {
        let rules: Vec<(FlowMatch, usize)> =
            rules.into_iter().filter_map(|(t, m)| m.map(|m| (m, t))).collect();
        (!rules.is_empty()).then_some(MatchingEngine { rules })
    }

    /// The tenant whose channel receives a packet with tuple `t`.
    pub fn classify(&self, t: &FiveTuple) -> Option<usize> {
        self.rules
            .iter()
            .find(|(m, _)| m.matches(t))
            .map(|&(_, tenant)| tenant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let m = MatchingEngine::new([(0, Some(udp_4791)), (1, Some(from_b)), (2, None)]).unwrap();
        let mut p = FiveTuple::of_packet(None, 1, 7);
        assert_eq!(m.classify(&p), Some(1));
        p.dst_port = 4791;
        assert_eq!(m.classify(&p), Some(0), "rule order decides overlaps");
        p.proto = 6;
        assert_eq!(m.classify(&p), Some(1));
        let stranger = FiveTuple::of_packet(None, 9, 0);
        assert_eq!(m.classify(&stranger), None);
        assert!(MatchingEngine::new([(0, None)]).is_none());
    }

    #[test]
    fn source_ports_vary_per_packet() {
        assert_ne!(
            FiveTuple::of_packet(None, 0, 1).src_port,
            FiveTuple::of_packet(None, 0, 2).src_port
        );
    }
}
