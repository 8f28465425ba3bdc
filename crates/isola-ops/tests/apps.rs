//! The papers' tenant applications (MTDA: `analytics`, `flow-monitor`,
//! `ipv4-router`, `firewall`; OSMOSIS: `aggregate`, `reduce`, `histogram`,
//! `filter`, `io-write`, `io-read`) against references their code does not
//! share: packets built and parsed by etherparse, brute-force scans and
//! plain loops written here, `HashMap`/`HashSet`/`BTreeMap` tables; split
//! runs against one-shot runs; and random, truncated or damaged input is an
//! answer or an error, never a panic.

mod common;

use common::{op, params, random_bytes, TempFile};
use etherparse::{
    Ipv4Header, Ipv4HeaderSlice, Ipv4Options, NetSlice, PacketBuilder, SlicedPacket, TransportSlice,
};
use isola_ops::{build_operator, run_split, sample_params, text_payload, valid_input, OpError, Operator};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::Ipv4Addr;

const APPS: [&str; 10] = [
    "analytics",
    "flow-monitor",
    "ipv4-router",
    "firewall",
    "aggregate",
    "reduce",
    "histogram",
    "filter",
    "io-write",
    "io-read",
];

/// The text of the error building `name` with `pairs` gives (any error,
/// unlike `common::param_error`).
fn param_error(name: &str, pairs: &[(&str, &str)]) -> String {
    build_operator(name, &params(pairs)).err().unwrap().to_string()
}

/// A 5-tuple: source, destination, source port, destination port, protocol.
type Tuple = (u32, u32, u16, u16, u8);

/// One test packet: UDP (17), TCP (6) or ICMP echo (1).
#[derive(Debug, Clone)]
struct Pkt {
    src: u32,
    dst: u32,
    sport: u16,
    dport: u16,
    proto: u8,
    ttl: u8,
    payload: Vec<u8>,
}

impl Pkt {
    fn udp(payload: &[u8]) -> Pkt {
        Pkt {
            src: 0x0A00_0001,
            dst: 0x0A00_0002,
            sport: 1000,
            dport: 2000,
            proto: 17,
            ttl: 64,
            payload: payload.to_vec(),
        }
    }

    /// The packet's bytes, built by etherparse (checksums included).
    fn bytes(&self) -> Vec<u8> {
        let b = PacketBuilder::ipv4(self.src.to_be_bytes(), self.dst.to_be_bytes(), self.ttl);
        let mut out = Vec::new();
        match self.proto {
            6 => b
                .tcp(self.sport, self.dport, 7, 1000)
                .ack(9)
                .write(&mut out, &self.payload),
            17 => b.udp(self.sport, self.dport).write(&mut out, &self.payload),
            _ => b.icmpv4_echo_request(1, 2).write(&mut out, &self.payload),
        }
        .unwrap();
        out
    }
}

fn batch(packets: &[Pkt]) -> Vec<u8> {
    packets.iter().flat_map(Pkt::bytes).collect()
}

/// The IPv4 packets of a container, each parsed by etherparse.
fn split_packets(mut data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let h = Ipv4HeaderSlice::from_slice(data).unwrap();
        let (p, rest) = data.split_at(usize::from(h.total_len()));
        out.push(p);
        data = rest;
    }
    out
}

/// What etherparse reads of a packet: (src, dst, sport, dport, proto,
/// total length, application payload). Ports 0 without TCP/UDP.
fn parse(packet: &[u8]) -> (u32, u32, u16, u16, u8, usize, Option<Vec<u8>>) {
    let s = SlicedPacket::from_ip(packet).unwrap();
    let Some(NetSlice::Ipv4(ip)) = &s.net else {
        panic!("not IPv4")
    };
    let h = ip.header();
    let (sport, dport, payload) = match &s.transport {
        Some(TransportSlice::Udp(u)) => (u.source_port(), u.destination_port(), Some(u.payload().to_vec())),
        Some(TransportSlice::Tcp(t)) => (t.source_port(), t.destination_port(), Some(t.payload().to_vec())),
        _ => (0, 0, None),
    };
    (
        u32::from_be_bytes(h.source()),
        u32::from_be_bytes(h.destination()),
        sport,
        dport,
        h.protocol().0,
        usize::from(h.total_len()),
        payload,
    )
}

/// Runs `o` one-shot and split into `chunk`-byte subtasks (when it splits)
/// and checks both agree; the one-shot result.
fn run_both(o: &dyn Operator, input: &[u8], chunk: usize) -> Result<Vec<u8>, OpError> {
    let whole = o.run(input);
    if o.splitter().is_some() {
        let split = run_split(o, input, chunk);
        assert_eq!(
            whole.is_ok(),
            split.is_ok(),
            "{}: {whole:?} vs {split:?}",
            o.name()
        );
        if let (Ok(w), Ok(s)) = (&whole, &split) {
            assert_eq!(w, s, "{} split into {chunk}-byte subtasks", o.name());
        }
    }
    whole
}

fn pkt_strategy(bases: Vec<u32>) -> impl Strategy<Value = Pkt> {
    (
        any::<(usize, usize, u32, u32)>(),
        prop_oneof![Just(22u16), Just(53), Just(80), Just(443), any::<u16>()],
        prop_oneof![Just(1024u16), Just(53), any::<u16>()],
        prop_oneof![4 => Just(17u8), 4 => Just(6), 1 => Just(1)],
        prop_oneof![Just(0u8), Just(1), Just(2), Just(64), any::<u8>()],
        proptest::collection::vec(any::<u8>(), 0..80),
    )
        .prop_map(move |((si, di, sn, dn), dport, sport, proto, ttl, payload)| {
            // Near a base: its top bits kept, a random number of low bits noise.
            let near = |i: usize, noise: u32| {
                let keep = noise % 33;
                let mask = u32::MAX.checked_shl(32 - keep).unwrap_or(0);
                (bases[i % bases.len()] & mask) | (noise.rotate_left(7) & !mask)
            };
            Pkt {
                src: near(si, sn),
                dst: near(di, dn),
                sport,
                dport,
                proto,
                ttl,
                payload,
            }
        })
}

fn mask(len: u32) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len)
    }
}

// ---------------------------------------------------------------- router

/// Brute force: the next hop of the longest prefix holding `addr`, the later
/// line winning between equal prefixes.
fn route_scan(routes: &[(u32, u32, u32)], addr: u32) -> Option<u32> {
    let mut best: Option<(u32, u32)> = None;
    for &(prefix, len, hop) in routes {
        if addr & mask(len) == prefix && best.is_none_or(|(l, _)| len >= l) {
            best = Some((len, hop));
        }
    }
    best.map(|(_, hop)| hop)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Forwarded packets are those with TTL above 1 and a route, in order,
    /// each behind the brute-force next hop, equal to the input packet but
    /// for a TTL one less and a header checksum that etherparse computes
    /// the same from scratch (options included).
    #[test]
    fn router_forwards_like_a_brute_force_scan(
        bases in proptest::collection::vec(any::<u32>(), 1..4),
        routes in proptest::collection::vec((any::<usize>(), 0u32..=32, 0u32..5000), 0..40),
        packets in proptest::collection::vec((any::<usize>(), any::<u32>(), 0u32..=32, any::<u8>(), any::<bool>(), proptest::collection::vec(any::<u8>(), 0..40)), 0..40),
        chunk in 1usize..400,
    ) {
        let routes: Vec<(u32, u32, u32)> = routes
            .into_iter()
            .map(|(b, len, hop)| (bases[b % bases.len()] & mask(len), len, hop))
            .collect();
        let mut file = String::from("# table\n");
        for &(prefix, len, hop) in &routes {
            file.push_str(&format!("{}/{len} {hop}\n", Ipv4Addr::from(prefix)));
        }
        let file = TempFile::new(file.as_bytes());
        let router = op("ipv4-router", &[("routes", file.path())]);
        let mut input = Vec::new();
        let mut expected = Vec::new();
        for (b, noise, keep, ttl, options, payload) in packets {
            let dst = (bases[b % bases.len()] & mask(keep)) | (noise & !mask(keep));
            let mut h = Ipv4Header::new(0, ttl, etherparse::IpNumber::UDP, [192, 0, 2, 9], dst.to_be_bytes()).unwrap();
            h.identification = noise as u16;
            if options {
                h.options = Ipv4Options::try_from(&[1u8, 1, 1, 0][..]).unwrap();
            }
            h.total_len = (h.header_len() + payload.len()) as u16;
            h.header_checksum = h.calc_header_checksum();
            let packet = [&h.to_bytes()[..], &payload].concat();
            input.extend_from_slice(&packet);
            if ttl > 1 {
                if let Some(hop) = route_scan(&routes, dst) {
                    h.time_to_live = ttl - 1;
                    h.header_checksum = h.calc_header_checksum();
                    expected.extend_from_slice(&hop.to_be_bytes());
                    expected.extend_from_slice(&[&h.to_bytes()[..], &payload].concat());
                }
            }
        }
        let out = run_both(router.as_ref(), &input, chunk).unwrap();
        prop_assert_eq!(&out, &expected);
        // The output re-parses: hop, then a packet whose checksum verifies.
        let mut rest = &out[..];
        while !rest.is_empty() {
            let h = Ipv4HeaderSlice::from_slice(&rest[4..]).unwrap();
            prop_assert_eq!(h.to_header().calc_header_checksum(), h.header_checksum());
            rest = &rest[4 + usize::from(h.total_len())..];
        }
    }
}

#[test]
fn router_drops_expired_and_unroutable_packets() {
    let file = TempFile::new(b"10.0.0.0/8 1\n10.1.0.0/16 2\n");
    let router = op("ipv4-router", &[("routes", file.path())]);
    let mk = |dst: u32, ttl: u8| Pkt {
        dst,
        ttl,
        ..Pkt::udp(b"x")
    };
    let input = batch(&[
        mk(0x0A01_0203, 64),
        mk(0x0A02_0203, 2),
        mk(0x0A01_0203, 1),
        mk(0x0A01_0203, 0),
        mk(0x0B00_0001, 64),
    ]);
    let out = router.run(&input).unwrap();
    let first = &out[4..];
    let len = usize::from(Ipv4HeaderSlice::from_slice(first).unwrap().total_len());
    assert_eq!(&out[..4], &2u32.to_be_bytes());
    let second = &out[4 + len..];
    assert_eq!(&second[..4], &1u32.to_be_bytes());
    let h = Ipv4HeaderSlice::from_slice(&second[4..]).unwrap();
    assert_eq!(h.ttl(), 1);
    assert_eq!(out.len(), 8 + 2 * len);
    // RFC 1624's own example: HC 0xDD2F, m 0x5555 -> m' 0x3285 gives 0x0000.
    assert_eq!(
        isola_ops::apps::router::incremental_checksum(0xDD2F, 0x5555, 0x3285),
        0x0000
    );
    // A sum that carries twice: ~0x0000 + ~0x0000 + 0x0001 = 0x1ffff.
    assert_eq!(
        isola_ops::apps::router::incremental_checksum(0x0000, 0x0000, 0x0001),
        0xfffe
    );
}

/// The one's complement sum of 16-bit words, folded (RFC 1071).
fn ones_sum(words: &[u16]) -> u16 {
    let mut sum: u32 = words.iter().map(|&w| u32::from(w)).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// RFC 1624's update of a header checksum after any one word changes
    /// equals the checksum computed afresh (RFC 1071) over the new header.
    #[test]
    fn incremental_checksum_equals_a_fresh_one(mut words in any::<[u16; 10]>(), at in 0usize..10, new in any::<u16>()) {
        // A version-4 header is never all zeros; the checksum word is 5.
        words[0] |= 0x4500;
        let at = if at == 5 { 4 } else { at };
        words[5] = 0;
        words[5] = !ones_sum(&words);
        let old = words[at];
        words[at] = new;
        let hc = words[5];
        words[5] = 0;
        let fresh = !ones_sum(&words);
        prop_assert_eq!(isola_ops::apps::router::incremental_checksum(hc, old, new), fresh);
    }
}

// ---------------------------------------------------------------- flow monitor

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The table equals per-5-tuple packet and byte counts of the packets
    /// as etherparse parses them (fragments of large packets included:
    /// they have no ports), sorted by 5-tuple.
    #[test]
    fn flow_table_equals_a_hash_map_of_parsed_packets(
        packets in proptest::collection::vec(pkt_strategy(vec![0x0A00_0000, 0xC0A8_0000]), 0..60),
        big in proptest::collection::vec(0usize..3000, 0..3),
        chunk in 1usize..500,
    ) {
        let mut input = batch(&packets);
        // Large UDP packets fragmented to 576 bytes.
        let frag = op("ip-fragment", &[("mtu", "576")]);
        for (i, &len) in big.iter().enumerate() {
            let mut h = Ipv4Header::new(0, 64, etherparse::IpNumber::UDP, [10, 0, 0, i as u8], [10, 9, 9, 9]).unwrap();
            h.dont_fragment = false;
            let mut p = Vec::new();
            PacketBuilder::ip(etherparse::IpHeaders::Ipv4(h, Default::default())).udp(5, 6).write(&mut p, &vec![7u8; len]).unwrap();
            input.extend_from_slice(&frag.run(&p).unwrap());
        }
        let mut counts: HashMap<Tuple, (u64, u64)> = HashMap::new();
        for p in split_packets(&input) {
            let (src, dst, sport, dport, proto, bytes, _) = parse(p);
            let c = counts.entry((src, dst, sport, dport, proto)).or_default();
            c.0 += 1;
            c.1 += bytes as u64;
        }
        let mut rows: Vec<_> = counts.into_iter().collect();
        rows.sort();
        let mut expected = Vec::new();
        for ((src, dst, sport, dport, proto), (packets, bytes)) in rows {
            expected.extend_from_slice(&src.to_be_bytes());
            expected.extend_from_slice(&dst.to_be_bytes());
            expected.extend_from_slice(&sport.to_be_bytes());
            expected.extend_from_slice(&dport.to_be_bytes());
            expected.extend_from_slice(&[proto, 0, 0, 0]);
            expected.extend_from_slice(&packets.to_be_bytes());
            expected.extend_from_slice(&bytes.to_be_bytes());
        }
        let out = run_both(op("flow-monitor", &[]).as_ref(), &input, chunk).unwrap();
        prop_assert_eq!(out, expected);
    }
}

// ---------------------------------------------------------------- firewall

/// A test rule: (src, src len, dst, dst len, sports, dports, proto, allow).
type TestRule = (u32, u32, u32, u32, (u16, u16), (u16, u16), Option<u8>, bool);

/// Linear scan: the action of the first matching rule, else `default`.
fn firewall_scan(rules: &[TestRule], p: Tuple, default: bool) -> bool {
    let (src, dst, sport, dport, proto) = p;
    for &(rs, sl, rd, dl, sp, dp, pr, allow) in rules {
        if src & mask(sl) == rs
            && dst & mask(dl) == rd
            && sp.0 <= sport
            && sport <= sp.1
            && dp.0 <= dport
            && dport <= dp.1
            && pr.is_none_or(|x| x == proto)
        {
            return allow;
        }
    }
    default
}

fn rule_line(r: &TestRule) -> String {
    let prefix = |a: u32, l: u32| {
        if l == 0 {
            "any".to_string()
        } else if l == 32 {
            Ipv4Addr::from(a).to_string()
        } else {
            format!("{}/{l}", Ipv4Addr::from(a))
        }
    };
    let ports = |(lo, hi): (u16, u16)| match (lo, hi) {
        (0, 65535) => "any".to_string(),
        (lo, hi) if lo == hi => lo.to_string(),
        (lo, hi) => format!("{lo}-{hi}"),
    };
    let proto = match r.6 {
        None => "any".to_string(),
        Some(6) => "tcp".to_string(),
        Some(17) => "udp".to_string(),
        Some(1) => "icmp".to_string(),
        Some(n) => n.to_string(),
    };
    format!(
        "{} {} {} {} {} {proto}  # rule",
        if r.7 { "allow" } else { "deny" },
        prefix(r.0, r.1),
        prefix(r.2, r.3),
        ports(r.4),
        ports(r.5)
    )
}

fn rule_strategy() -> impl Strategy<Value = TestRule> {
    let bases = [0x0A00_0000u32, 0xC0A8_0000];
    let port_range = prop_oneof![
        Just((0u16, 65535u16)),
        prop_oneof![Just(22u16), Just(53), Just(80), Just(443), Just(1024)].prop_map(|p| (p, p)),
        (any::<u16>(), 0u16..2000).prop_map(|(lo, span)| (lo, lo.saturating_add(span))),
    ];
    (
        any::<(usize, usize, u32, u32)>(),
        0u32..=32,
        0u32..=32,
        port_range.clone(),
        port_range,
        prop_oneof![Just(None), Just(Some(6u8)), Just(Some(17)), Just(Some(1))],
        any::<bool>(),
    )
        .prop_map(move |((si, di, sn, dn), sl, dl, sp, dp, proto, allow)| {
            let near = |i: usize, n: u32| bases[i % 2] | (n & 0xFFFF);
            (
                near(si, sn) & mask(sl),
                sl,
                near(di, dn) & mask(dl),
                dl,
                sp,
                dp,
                proto,
                allow,
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Verdicts and allowed packets equal a linear first-match scan of the
    /// rules written here, over tuples etherparse reads.
    #[test]
    fn firewall_equals_a_linear_scan(
        rules in proptest::collection::vec(rule_strategy(), 0..30),
        packets in proptest::collection::vec(pkt_strategy(vec![0x0A00_0000, 0xC0A8_0000]), 0..60),
        default_allow in any::<bool>(),
        chunk in 1usize..500,
    ) {
        let text: String = rules.iter().map(|r| rule_line(r) + "\n").collect();
        let file = TempFile::new(format!("# rules\n\n{text}").as_bytes());
        let default = if default_allow { "allow" } else { "deny" };
        let input = batch(&packets);
        let mut verdicts = Vec::new();
        let mut allowed = Vec::new();
        for p in split_packets(&input) {
            let (src, dst, sport, dport, proto, _, _) = parse(p);
            let allow = firewall_scan(&rules, (src, dst, sport, dport, proto), default_allow);
            verdicts.push(u8::from(allow));
            if allow {
                allowed.extend_from_slice(p);
            }
        }
        let fw = op("firewall", &[("rules", file.path()), ("default", default), ("output", "verdicts")]);
        prop_assert_eq!(run_both(fw.as_ref(), &input, chunk).unwrap(), verdicts);
        let fw = op("firewall", &[("rules", file.path()), ("default", default)]);
        prop_assert_eq!(run_both(fw.as_ref(), &input, chunk).unwrap(), allowed);
    }
}

#[test]
fn firewall_rule_file_errors_name_the_file_and_line() {
    let file = TempFile::new(b"allow any any any 80 tcp\n# ok\ndeny 10.0.0.1/8 any any any any\n");
    let err = param_error("firewall", &[("rules", file.path())]);
    assert!(err.contains("line 3") && err.contains(file.path()), "{err}");
    assert!(err.contains("bits set past its length"), "{err}");
    let err = param_error("firewall", &[("rules", "/nonexistent/rules")]);
    assert!(err.contains("parameter `rules`"), "{err}");
    let err = param_error("firewall", &[("default", "maybe")]);
    assert!(
        err.contains("parameter `default`") && err.contains("deny, allow"),
        "{err}"
    );
    let err = param_error("firewall", &[("output", "json")]);
    assert!(err.contains("parameter `output`"), "{err}");
    let err = param_error("firewall", &[("random-rules", "1000001")]);
    assert!(err.contains("parameter `random-rules`"), "{err}");
}

// ---------------------------------------------------------------- analytics

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Rows equal a `BTreeMap` group-by of the records by (window, key).
    #[test]
    fn analytics_equals_a_group_by(
        records in proptest::collection::vec((0u32..20, 0u64..10_000_000, any::<i32>()), 0..300),
        cuts in proptest::collection::vec(0usize..40, 0..20),
        window in 1u64..3_000_000,
        tcp in any::<bool>(),
        chunk in 1usize..800,
    ) {
        let mut packets = Vec::new();
        let mut rest = &records[..];
        for &c in cuts.iter().chain(std::iter::once(&usize::MAX)) {
            let (now, later) = rest.split_at(c.min(rest.len()));
            let payload: Vec<u8> = now
                .iter()
                .flat_map(|&(k, ts, v)| [&k.to_be_bytes()[..], &ts.to_be_bytes(), &v.to_be_bytes()].concat())
                .collect();
            packets.push(Pkt { proto: if tcp { 6 } else { 17 }, ..Pkt::udp(&payload) });
            rest = later;
        }
        // An ICMP packet in between carries no records.
        packets.insert(packets.len() / 2, Pkt { proto: 1, ..Pkt::udp(&[1, 2, 3]) });
        let mut groups: BTreeMap<(u64, u32), (u32, i64, i32, i32)> = BTreeMap::new();
        for &(k, ts, v) in &records {
            let g = groups.entry((ts / window * window, k)).or_insert((0, 0, i32::MAX, i32::MIN));
            g.0 += 1;
            g.1 += i64::from(v);
            g.2 = g.2.min(v);
            g.3 = g.3.max(v);
        }
        let expected: Vec<u8> = groups
            .iter()
            .flat_map(|(&(w, k), &(n, s, lo, hi))| {
                [&w.to_be_bytes()[..], &k.to_be_bytes(), &n.to_be_bytes(), &s.to_be_bytes(), &lo.to_be_bytes(), &hi.to_be_bytes()].concat()
            })
            .collect();
        let a = op("analytics", &[("window", &window.to_string())]);
        prop_assert_eq!(run_both(a.as_ref(), &batch(&packets), chunk).unwrap(), expected);
    }
}

// ---------------------------------------------------------------- PsPIN kernels

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// `aggregate`, `reduce` and `histogram` equal plain loops over the
    /// vectors the packets carry.
    #[test]
    fn word_kernels_equal_plain_loops(
        vectors in proptest::collection::vec(proptest::collection::vec(any::<i32>(), 0..50), 0..30),
        bins in 1u64..3000,
        chunk in 1usize..600,
    ) {
        let packets: Vec<Pkt> = vectors
            .iter()
            .map(|v| Pkt::udp(&v.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>()))
            .collect();
        let input = batch(&packets);

        let mut sum = 0u64;
        let mut words = 0u64;
        let mut reduced: Vec<i32> = Vec::new();
        let mut counts = vec![0u64; bins as usize];
        for v in &vectors {
            for (i, &x) in v.iter().enumerate() {
                sum += u64::from(x as u32);
                words += 1;
                if reduced.len() <= i {
                    reduced.push(0);
                }
                reduced[i] = reduced[i].wrapping_add(x);
                // Equal-width bins: bin b holds [b * 2^32 / bins, (b + 1) * 2^32 / bins).
                let b = (0..bins).find(|&b| u128::from(x as u32) * u128::from(bins) < u128::from(b + 1) << 32).unwrap();
                counts[b as usize] += 1;
            }
        }
        let agg = run_both(op("aggregate", &[]).as_ref(), &input, chunk).unwrap();
        prop_assert_eq!(agg, [sum.to_be_bytes(), words.to_be_bytes()].concat());
        let red = run_both(op("reduce", &[]).as_ref(), &input, chunk).unwrap();
        prop_assert_eq!(red, reduced.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>());
        let hist = run_both(op("histogram", &[("bins", &bins.to_string())]).as_ref(), &input, chunk).unwrap();
        prop_assert_eq!(hist, counts.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>());
    }

    /// The kept packets are those whose first 8 payload bytes are in the
    /// key set (a `HashSet` here), unchanged and in order.
    #[test]
    fn filter_keeps_the_packets_whose_key_is_in_the_set(
        keys in proptest::collection::vec(any::<[u8; 8]>(), 0..50),
        packets in proptest::collection::vec((any::<Option<usize>>(), any::<[u8; 8]>(), proptest::collection::vec(any::<u8>(), 0..30), 0u8..4), 0..60),
        chunk in 1usize..600,
    ) {
        let file: String = keys.iter().map(|k| common::hex(k) + "\n").collect();
        let file = TempFile::new(format!("# keys\n{file}").as_bytes());
        let set: HashSet<[u8; 8]> = keys.iter().copied().collect();
        let packets: Vec<Pkt> = packets
            .into_iter()
            .map(|(pick, random, rest, kind)| {
                let key = match pick {
                    Some(i) if !keys.is_empty() => keys[i % keys.len()],
                    _ => random,
                };
                match kind {
                    // A payload too short for a key, or ICMP: dropped.
                    0 => Pkt::udp(&key[..(rest.len() % 8)]),
                    1 => Pkt { proto: 1, ..Pkt::udp(&key) },
                    2 => Pkt { proto: 6, ..Pkt::udp(&[&key[..], &rest].concat()) },
                    _ => Pkt::udp(&[&key[..], &rest].concat()),
                }
            })
            .collect();
        let input = batch(&packets);
        let mut expected = Vec::new();
        for p in split_packets(&input) {
            if let (.., Some(payload)) = parse(p) {
                if payload.len() >= 8 && set.contains(&<[u8; 8]>::try_from(&payload[..8]).unwrap()) {
                    expected.extend_from_slice(p);
                }
            }
        }
        let f = op("filter", &[("keys", file.path())]);
        prop_assert_eq!(run_both(f.as_ref(), &input, chunk).unwrap(), expected);
    }

    /// io-write's image is a zeroed buffer with the writes applied in order
    /// (a loop here); io-read of that image (as a `memory` file) answers
    /// each write's range with a UDP packet back to the writer, checksums
    /// verified by etherparse, carrying the bytes written there, and the
    /// data itself for every write no later one overlaps.
    #[test]
    fn io_write_then_read_round_trips(
        writes in proptest::collection::vec((0usize..3000, proptest::collection::vec(any::<u8>(), 0..300)), 1..30),
        chunk in 1usize..600,
    ) {
        let packets: Vec<Pkt> = writes
            .iter()
            .enumerate()
            .map(|(i, (addr, data))| Pkt {
                src: 0x0A00_0000 + i as u32,
                sport: 5000 + i as u16,
                ..Pkt::udp(&[&(*addr as u64).to_be_bytes()[..], data].concat())
            })
            .collect();
        let mut image = Vec::new();
        for (addr, data) in &writes {
            if image.len() < addr + data.len() {
                image.resize(addr + data.len(), 0);
            }
            image[*addr..addr + data.len()].copy_from_slice(data);
        }
        let out = op("io-write", &[("memory-size", "4096")]).run(&batch(&packets)).unwrap();
        prop_assert_eq!(&out, &image);
        prop_assume!(!image.is_empty());

        let memory = TempFile::new(&image);
        let requests: Vec<Pkt> = packets
            .iter()
            .zip(&writes)
            .map(|(p, (addr, data))| Pkt {
                payload: [&(*addr as u64).to_be_bytes()[..], &(data.len() as u32).to_be_bytes()].concat(),
                ..p.clone()
            })
            .collect();
        let reader = op("io-read", &[("memory", memory.path())]);
        let answers = run_both(reader.as_ref(), &batch(&requests), chunk).unwrap();
        let answers = split_packets(&answers);
        prop_assert_eq!(answers.len(), writes.len());
        for (i, (answer, (addr, data))) in answers.iter().zip(&writes).enumerate() {
            let s = SlicedPacket::from_ip(answer).unwrap();
            let Some(NetSlice::Ipv4(ip)) = &s.net else { panic!("not IPv4") };
            let Some(TransportSlice::Udp(udp)) = &s.transport else { panic!("not UDP") };
            let h = ip.header().to_header();
            prop_assert_eq!(h.calc_header_checksum(), h.header_checksum);
            prop_assert_eq!(udp.to_header().calc_checksum_ipv4(&h, udp.payload()).unwrap(), udp.checksum());
            prop_assert_eq!((u32::from_be_bytes(h.destination), udp.destination_port()), (packets[i].src, packets[i].sport));
            prop_assert_eq!((u32::from_be_bytes(h.source), udp.source_port()), (packets[i].dst, packets[i].dport));
            prop_assert_eq!(udp.payload(), &image[*addr..addr + data.len()]);
            let overwritten = writes[i + 1..].iter().any(|(a, d)| *a < addr + data.len() && *addr < a + d.len() && !d.is_empty());
            if !overwritten {
                prop_assert_eq!(udp.payload(), &data[..]);
            }
        }
    }
}

#[test]
fn io_errors_name_the_packet_and_the_limit() {
    let w = op("io-write", &[("memory-size", "100")]);
    let err = w
        .run(&batch(&[Pkt::udp(&[&96u64.to_be_bytes()[..], &[1; 5]].concat())]))
        .unwrap_err();
    assert!(
        err.to_string().contains("outside the 100-byte host memory"),
        "{err}"
    );
    let err = w.run(&batch(&[Pkt::udp(&[1, 2, 3])])).unwrap_err();
    assert!(err.to_string().contains("no 8-byte address"), "{err}");
    assert_eq!(
        w.run(&batch(&[Pkt::udp(&[&95u64.to_be_bytes()[..], &[1; 5]].concat())]))
            .unwrap()
            .len(),
        100
    );
    let err = w.run(&batch(&[Pkt::udp(&u64::MAX.to_be_bytes())])).unwrap_err();
    assert!(err.to_string().contains("outside"), "{err}");

    let r = op("io-read", &[("memory-size", "1000")]);
    let req = |addr: u64, len: u32| Pkt::udp(&[&addr.to_be_bytes()[..], &len.to_be_bytes()].concat());
    assert!(r.run(&batch(&[req(990, 10)])).is_ok());
    let err = r
        .run(&batch(&[req(0, 10), req(991, 10)]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("outside the 1000-byte host memory") && err.contains("packet at byte 40"),
        "{err}"
    );
    let err = r.run(&batch(&[req(u64::MAX, 2)])).unwrap_err().to_string();
    assert!(err.contains("outside"), "{err}");
    let err = r.run(&batch(&[req(0, 70_000)])).unwrap_err().to_string();
    assert!(err.contains("does not fit a UDP answer"), "{err}");
    let err = r.run(&batch(&[Pkt::udp(&[0; 11])])).unwrap_err().to_string();
    assert!(err.contains("not a 12-byte read request"), "{err}");
    // Random host memory is the seed's.
    let a = op("io-read", &[("memory-size", "1000"), ("seed", "5")])
        .run(&batch(&[req(0, 100)]))
        .unwrap();
    let b = op("io-read", &[("memory-size", "1000"), ("seed", "6")])
        .run(&batch(&[req(0, 100)]))
        .unwrap();
    assert_ne!(a, b);
    let empty = TempFile::new(b"");
    let err = param_error("io-read", &[("memory", empty.path())]);
    assert!(
        err.contains("parameter `memory`") && err.contains("has 0 bytes"),
        "{err}"
    );
    let err = param_error("io-write", &[("memory-size", "0")]);
    assert!(err.contains("parameter `memory-size`"), "{err}");
}

#[test]
fn bad_payloads_and_parameters_are_errors() {
    let a = op("analytics", &[]);
    let err = a
        .run(&batch(&[Pkt::udp(&[0; 16]), Pkt::udp(&[0; 17])]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not whole 16-byte records") && err.contains("packet at byte 44"),
        "{err}"
    );
    for name in ["aggregate", "reduce", "histogram"] {
        let err = op(name, &[])
            .run(&batch(&[Pkt::udp(&[0; 6])]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not whole 4-byte words"), "{name}: {err}");
    }
    let err = param_error("analytics", &[("window", "0")]);
    assert!(err.contains("parameter `window`"), "{err}");
    let err = param_error("histogram", &[("bins", "0")]);
    assert!(err.contains("parameter `bins`"), "{err}");
    let err = param_error("filter", &[("key-bytes", "65")]);
    assert!(err.contains("parameter `key-bytes`"), "{err}");
    let keys = TempFile::new(b"0011223344556677\n# short key:\n00112233\n");
    let err = param_error("filter", &[("keys", keys.path())]);
    assert!(err.contains("line 3") && err.contains("keys of 8 bytes"), "{err}");
    let err = param_error("ipv4-router", &[("random-routes", "-1")]);
    assert!(err.contains("parameter `random-routes`"), "{err}");
    let err = param_error("ipv4-router", &[("family", "ipv6")]);
    assert!(err.contains("has no parameter `family`"), "{err}");

    // Malformed packets: a truncated one, a bad UDP length, a bad TCP offset.
    // Zeros: whole records and words, an address and an empty read or write.
    let good = Pkt::udp(&[0; 48]).bytes();
    let mut udp_len = good.clone();
    udp_len[24..26].copy_from_slice(&100u16.to_be_bytes());
    let mut tcp = Pkt {
        proto: 6,
        ..Pkt::udp(b"abcd")
    }
    .bytes();
    tcp[32] = 0x30;
    for name in APPS {
        let o = build_operator(name, &sample_params(name)).unwrap();
        let err = o
            .run(&[&good[..], &good[..good.len() - 1]].concat())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("packet at byte {}", good.len())) && err.contains("truncated"),
            "{name}: {err}"
        );
        if name != "ipv4-router" {
            // The router works at layer 3 only.
            let err = o.run(&udp_len).unwrap_err().to_string();
            assert!(err.contains("UDP length 100"), "{name}: {err}");
            let err = o.run(&tcp).unwrap_err().to_string();
            assert!(err.contains("TCP data offset"), "{name}: {err}");
        }
        assert!(o.run(&[]).is_ok(), "{name} on no packets");
    }
}

// ---------------------------------------------------------------- sample inputs

/// The seeded workloads exercise both sides of each decision.
#[test]
fn sample_inputs_exercise_every_outcome() {
    let payload = text_payload(300_000, 3);
    let run = |name: &str, pairs: &[(&str, &str)]| {
        let p = params(pairs);
        let input = valid_input(name, &p, &payload).unwrap();
        let out = build_operator(name, &p).unwrap().run(&input).unwrap();
        (split_packets(&input).len(), out)
    };
    let (n, out) = run("firewall", &[("output", "verdicts")]);
    let allowed = out.iter().filter(|&&v| v == 1).count();
    assert_eq!(out.len(), n);
    assert!(allowed > n / 10 && allowed < n * 9 / 10, "{allowed} of {n}");
    let (n, out) = run("filter", &[]);
    let kept = split_packets(&out).len();
    assert!(kept > n / 4 && kept < n * 3 / 4, "{kept} of {n}");
    let (n, out) = run("ipv4-router", &[]);
    let mut forwarded = 0;
    let mut rest = &out[..];
    while !rest.is_empty() {
        let len = usize::from(Ipv4HeaderSlice::from_slice(&rest[4..]).unwrap().total_len());
        rest = &rest[4 + len..];
        forwarded += 1;
    }
    assert!(forwarded > n * 3 / 4 && forwarded < n, "{forwarded} of {n}");
    let (_, out) = run("flow-monitor", &[]);
    assert!(out.len() / 32 > 20, "{} flows", out.len() / 32);
    let (_, out) = run("analytics", &[]);
    assert!(out.len() / 32 > 1024, "{} rows", out.len() / 32);
    let (_, out) = run("io-write", &[]);
    assert_eq!(out.len(), payload.len());
    let (_, out) = run("io-read", &[]);
    let read: usize = split_packets(&out).iter().map(|p| p.len() - 28).sum();
    assert_eq!(read, payload.len());
}

// ---------------------------------------------------------------- robustness

/// An IPv4 header checksum fixed in place, if `data` starts with a header.
fn fix_checksum(data: &mut [u8]) {
    if let Ok(h) = Ipv4HeaderSlice::from_slice(data) {
        let sum = h.to_header().calc_header_checksum();
        data[10..12].copy_from_slice(&sum.to_be_bytes());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Garbage, truncated valid input and valid input with a byte changed
    /// (checksum fixed or not) get an output or an error, never a panic,
    /// and split runs agree with one-shot runs.
    #[test]
    fn applications_never_panic(
        garbage in proptest::collection::vec(any::<u8>(), 0..2000),
        payload in proptest::collection::vec(any::<u8>(), 0..3000),
        cut in any::<usize>(),
        at in any::<usize>(),
        byte in any::<u8>(),
        fix in any::<bool>(),
        chunk in 1usize..2000,
    ) {
        for name in APPS {
            let p = sample_params(name);
            let o = build_operator(name, &p).unwrap();
            let _ = run_both(o.as_ref(), &garbage, chunk);
            let valid = valid_input(name, &p, &payload).unwrap();
            prop_assert!(run_both(o.as_ref(), &valid, chunk).is_ok(), "{}", name);
            let _ = run_both(o.as_ref(), &valid[..cut % (valid.len() + 1)], chunk);
            let mut damaged = valid.clone();
            let i = at % damaged.len();
            damaged[i] = byte;
            if fix {
                // The header of the packet holding the byte: the hop finds it.
                let mut start = 0;
                while start + 4 <= damaged.len() {
                    let len = usize::from(u16::from_be_bytes([damaged[start + 2], damaged[start + 3]]));
                    if len < 20 || start + len > i {
                        break;
                    }
                    start += len;
                }
                fix_checksum(&mut damaged[start..]);
            }
            let _ = run_both(o.as_ref(), &damaged, chunk);
        }
    }
}

/// Every registered operator (not only these) answers random bytes and its
/// damaged valid input with an output or an error, never a panic.
#[test]
fn every_operator_survives_damaged_input() {
    for info in isola_ops::OPERATORS {
        let p = sample_params(info.name);
        let o = build_operator(info.name, &p).unwrap();
        for seed in 0..8u64 {
            let _ = o.run(&random_bytes(seed as usize * 97, seed));
            let valid = valid_input(info.name, &p, &text_payload(2000, seed)).unwrap();
            for k in 0..4usize {
                let mut damaged = valid.clone();
                if !damaged.is_empty() {
                    let i = (seed as usize * 7919 + k * 104_729) % damaged.len();
                    damaged[i] ^= 1 << ((k + seed as usize) % 8);
                }
                let _ = o.run(&damaged);
                let _ = o.run(&valid[..valid.len() * k / 4]);
            }
        }
    }
}

// ---------------------------------------------------------------- speed

/// Rough single-core throughput on 1 MiB of payload. Run with
/// `cargo test --release -p isola-ops --test apps -- --ignored --nocapture`.
#[test]
#[ignore]
fn throughput_on_one_mebibyte() {
    for name in APPS {
        let p = sample_params(name);
        let o = build_operator(name, &p).unwrap();
        let input = valid_input(name, &p, &text_payload(1 << 20, 5)).unwrap();
        let rate = common::calls_per_second(|| {
            std::hint::black_box(o.run(&input).unwrap());
        });
        println!("{name}: {:.0} MiB/s of payload", rate);
    }
}
