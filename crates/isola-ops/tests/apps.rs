//! The papers' tenant applications (MTDA: `analytics`, `flow-monitor`,
//! `ipv4-router`, `firewall`; OSMOSIS: `aggregate`, `reduce`, `histogram`,
//! `filter`, `io-write`, `io-read`) against references their code does not
//! share: packets built and parsed by etherparse, brute-force scans and
//! plain loops written here, `HashMap`/`HashSet`/`BTreeMap` tables; split
//! runs against one-shot runs; and random, truncated or damaged input is an
//! answer or an error, never a panic.

mod apps_support;
mod common;

use apps_support::*;

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
