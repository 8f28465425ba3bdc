//! The network operators against references their code does not share:
//! `lpm` against a brute-force scan of the route list, `toeplitz` against
//! Microsoft's RSS verification suite, `ip-fragment` against etherparse's
//! defragmentation, `tcp-segment` against etherparse's parsing and checksums;
//! and malformed input is an error, never a panic.

mod common;

use common::{op, params, TempFile};
use etherparse::defrag::IpDefragPool;
use etherparse::{
    IpFragOffset, IpHeaders, IpNumber, Ipv4Header, Ipv4HeaderSlice, Ipv4Options, PacketBuilder, SlicedPacket,
    TcpHeader, TcpOptionElement, TcpSlice,
};
use isola_ops::{build_operator, run_split, text_payload, valid_input, OpError};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

// ---------------------------------------------------------------- lpm

/// The first `len` bits of a `width`-bit address (right-aligned in a u128).
fn mask(width: u32, len: u32) -> u128 {
    if len == 0 {
        0
    } else {
        (u128::MAX >> (128 - len)) << (width - len)
    }
}

/// Brute force: the next hop of the longest prefix containing `addr`, the
/// later line winning between equal prefixes; `u32::MAX` if none.
fn scan(width: u32, routes: &[(u128, u32, u32)], addr: u128) -> u32 {
    let mut best: Option<(u32, u32)> = None;
    for &(prefix, len, hop) in routes {
        if addr & mask(width, len) == prefix && best.is_none_or(|(l, _)| len >= l) {
            best = Some((len, hop));
        }
    }
    best.map_or(u32::MAX, |(_, hop)| hop)
}

fn addr_text(v6: bool, a: u128) -> String {
    if v6 {
        Ipv6Addr::from(a).to_string()
    } else {
        Ipv4Addr::from(a as u32).to_string()
    }
}

fn addr_bytes(v6: bool, a: u128) -> Vec<u8> {
    if v6 {
        a.to_be_bytes().to_vec()
    } else {
        (a as u32).to_be_bytes().to_vec()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random tables over a few base addresses (so prefixes nest and
    /// overlap, and some repeat), looked up with addresses near the bases
    /// (matching prefixes of several lengths) and random ones (mostly no
    /// match: a /0 is rare).
    #[test]
    fn lpm_equals_a_brute_force_scan(
        v6 in any::<bool>(),
        bases in proptest::collection::vec(any::<u128>(), 1..5),
        routes in proptest::collection::vec((any::<usize>(), prop_oneof![20 => 1u32..=128, 1 => Just(0u32)], 0u32..1000), 0..60),
        near in proptest::collection::vec((any::<usize>(), any::<u128>(), 0u32..=128), 0..100),
        random in proptest::collection::vec(any::<u128>(), 0..50),
        chunk in 1usize..200,
    ) {
        let width = if v6 { 128 } else { 32 };
        let fit = |a: u128| if v6 { a } else { a >> 96 };
        let bases: Vec<u128> = bases.into_iter().map(fit).collect();
        let routes: Vec<(u128, u32, u32)> = routes
            .into_iter()
            .map(|(b, len, hop)| {
                // Spread over the family's lengths (not clamped, which would
                // make most IPv4 routes /32).
                let len = len % (width + 1);
                (bases[b % bases.len()] & mask(width, len), len, hop)
            })
            .collect();
        let mut file = String::from("# random table\n\n");
        for &(prefix, len, hop) in &routes {
            file.push_str(&format!("{}/{len} {hop}  # route\n", addr_text(v6, prefix)));
        }
        let file = TempFile::new(file.as_bytes());
        let lpm = op("lpm", &[("family", if v6 { "ipv6" } else { "ipv4" }), ("routes", file.path())]);
        // Near a base: its first `keep` bits, the rest random.
        let addrs: Vec<u128> = near
            .into_iter()
            .map(|(b, noise, keep)| {
                let keep = keep % (width + 1);
                let base = bases[b % bases.len()];
                (base & mask(width, keep)) | (fit(noise) & !mask(width, keep) & mask(width, width))
            })
            .chain(random.into_iter().map(fit))
            .collect();
        let input: Vec<u8> = addrs.iter().flat_map(|&a| addr_bytes(v6, a)).collect();
        let expected: Vec<u8> = addrs.iter().flat_map(|&a| scan(width, &routes, a).to_be_bytes()).collect();
        prop_assert_eq!(&lpm.run(&input).unwrap(), &expected);
        prop_assert_eq!(run_split(lpm.as_ref(), &input, chunk).unwrap(), expected);
    }
}

#[test]
fn lpm_route_file_errors_name_the_file_and_line() {
    let file = TempFile::new(b"# routes\n10.0.0.0/8 1\n\n10.1.0.0/16 2 # ok\n10.2.0.0/40 3\n");
    let err = build_operator("lpm", &params(&[("routes", file.path())]))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("line 5"), "{err}");
    assert!(err.contains(file.path()), "{err}");
    assert!(err.contains("parameter `routes`"), "{err}");

    for bad in [
        "10.0.0.0/8\n",
        "10.0.0.0 1\n",
        "10.0.0.1/8 1\n",
        "10.0.0.0/8 x\n",
        "10.0.0.0/8 1 2\n",
        "2001:db8::/32 1\n",
    ] {
        let file = TempFile::new(format!("1.0.0.0/8 1\n{bad}").as_bytes());
        let err = build_operator("lpm", &params(&[("routes", file.path())]))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("line 2"), "{bad:?}: {err}");
    }
    let file = TempFile::new(b"2001:db8::/32 1\n10.0.0.0/8 1\n");
    let err = build_operator("lpm", &params(&[("family", "ipv6"), ("routes", file.path())]))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("line 2"), "{err}");

    let err = build_operator("lpm", &params(&[("routes", "/nonexistent/isola.routes")]))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("readable route file"), "{err}");
    let err = build_operator("lpm", &params(&[("family", "ipx")]))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("parameter `family`") && err.contains("ipv4, ipv6"),
        "{err}"
    );
}

#[test]
fn lpm_known_routes_and_bad_lengths() {
    let file = TempFile::new(b"0.0.0.0/0 9\n192.0.2.0/24 1\n192.0.2.128/25 2\n192.0.2.7/32 3\n");
    let lpm = op("lpm", &[("routes", file.path())]);
    let input = [[192, 0, 2, 7], [192, 0, 2, 6], [192, 0, 2, 200], [8, 8, 8, 8]].concat();
    assert_eq!(
        lpm.run(&input).unwrap(),
        [3u32, 1, 2, 9].map(u32::to_be_bytes).concat()
    );
    assert!(matches!(
        lpm.run(&[1, 2, 3]),
        Err(OpError::Input { op: "lpm", .. })
    ));
    // The default table (random routes) answers every address, some not found.
    let lpm = op("lpm", &[]);
    let out = lpm.run(&[0u8; 400]).unwrap();
    assert_eq!(out.len(), 400);
    let v6 = op("lpm", &[("family", "ipv6"), ("random-routes", "0")]);
    assert_eq!(v6.run(&[7u8; 32]).unwrap(), [0xFF; 8]);
    assert!(v6.run(&[7u8; 20]).is_err());
}

// ---------------------------------------------------------------- toeplitz

/// A row of the RSS verification suite: destination, destination port,
/// source, source port, the hash of the addresses alone, the hash with ports.
type RssRow<A> = (A, u16, A, u16, u32, u32);

/// Microsoft, "Verifying the RSS Hash Calculation" (Windows driver docs,
/// windows-driver-docs-pr/network/verifying-the-rss-hash-calculation.md),
/// the same suite as the Intel 82599 datasheet section 7.1.2.8.3 and DPDK's
/// app/test/test_thash.c: (destination, destination port, source, source
/// port, IPv4-only hash, IPv4-with-TCP hash), with the default 40-byte key.
#[rustfmt::skip]
const RSS_V4: [RssRow<[u8; 4]>; 5] = [
    ([161, 142, 100, 80], 1766, [66, 9, 149, 187], 2794, 0x323e8fc2, 0x51ccc178),
    ([65, 69, 140, 83], 4739, [199, 92, 111, 2], 14230, 0xd718262a, 0xc626b0ea),
    ([12, 22, 207, 184], 38024, [24, 19, 198, 95], 12898, 0xd2d0a5de, 0x5c2b394a),
    ([209, 142, 163, 6], 2217, [38, 27, 205, 30], 48228, 0x82989176, 0xafc7327f),
    ([202, 188, 127, 2], 1303, [153, 39, 163, 191], 44251, 0x5d1809c5, 0x10e828a2),
];

/// The IPv6 rows of the same page (it has three).
#[rustfmt::skip]
const RSS_V6: [RssRow<&str>; 3] = [
    ("3ffe:2501:200:3::1", 1766, "3ffe:2501:200:1fff::7", 2794, 0x2cc18cd5, 0x40207d3d),
    ("ff02::1", 4739, "3ffe:501:8::260:97ff:fe40:efab", 14230, 0x0f0c461c, 0xdde51bbf),
    ("fe80::200:f8ff:fe21:67cf", 38024, "3ffe:1900:4545:3:200:f8ff:fe21:67cf", 44251, 0x4b61e985, 0x02d1feef),
];

/// Runs `toeplitz` with `tuple` over `records` (each an RSS input: source,
/// destination, then ports) and checks each hash.
fn check_rss(tuple: &str, rows: &[(Vec<u8>, u32)]) {
    let t = op("toeplitz", &[("tuple", tuple)]);
    let input: Vec<u8> = rows.iter().flat_map(|(r, _)| r.clone()).collect();
    let expected: Vec<u8> = rows.iter().flat_map(|(_, h)| h.to_be_bytes()).collect();
    assert_eq!(t.run(&input).unwrap(), expected, "{tuple}");
    assert_eq!(
        run_split(t.as_ref(), &input, 1).unwrap(),
        expected,
        "{tuple} split"
    );
}

#[test]
fn toeplitz_matches_the_microsoft_rss_verification_suite() {
    let mut v4_2 = Vec::new();
    let mut v4_4 = Vec::new();
    for (dst, dport, src, sport, ip_only, with_tcp) in RSS_V4 {
        let addrs = [src, dst].concat();
        v4_4.push((
            [&addrs[..], &sport.to_be_bytes(), &dport.to_be_bytes()].concat(),
            with_tcp,
        ));
        v4_2.push((addrs, ip_only));
    }
    let mut v6_2 = Vec::new();
    let mut v6_4 = Vec::new();
    for (dst, dport, src, sport, ip_only, with_tcp) in RSS_V6 {
        let (dst, src): (Ipv6Addr, Ipv6Addr) = (dst.parse().unwrap(), src.parse().unwrap());
        let addrs = [src.octets(), dst.octets()].concat();
        v6_4.push((
            [&addrs[..], &sport.to_be_bytes(), &dport.to_be_bytes()].concat(),
            with_tcp,
        ));
        v6_2.push((addrs, ip_only));
    }
    check_rss("ipv4-2", &v4_2);
    check_rss("ipv4-4", &v4_4);
    check_rss("ipv6-2", &v6_2);
    check_rss("ipv6-4", &v6_4);
}

#[test]
fn toeplitz_rejects_short_keys_and_partial_records() {
    let short = "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01"; // 39 bytes
    let err = build_operator("toeplitz", &params(&[("tuple", "ipv6-4"), ("key", short)]))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("parameter `key`") && err.contains("at least 40 bytes"),
        "{err}"
    );
    assert!(build_operator("toeplitz", &params(&[("tuple", "ipv6-2"), ("key", short)])).is_ok());
    assert!(build_operator("toeplitz", &params(&[("key", "xyz")])).is_err());
    let err = build_operator("toeplitz", &params(&[("tuple", "ipv5")]))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("parameter `tuple`"), "{err}");
    let t = op("toeplitz", &[]);
    assert!(matches!(
        t.run(&[0; 13]),
        Err(OpError::Input { op: "toeplitz", .. })
    ));
    assert_eq!(t.run(&[]).unwrap(), Vec::<u8>::new());
}

// ---------------------------------------------------------------- packets

/// An IPv4 packet with `header`'s fields (total length and checksum set
/// here) around `payload`.
fn ipv4_packet(mut header: Ipv4Header, payload: &[u8]) -> Vec<u8> {
    header.total_len = (header.header_len() + payload.len()) as u16;
    header.header_checksum = header.calc_header_checksum();
    [&header.to_bytes()[..], payload].concat()
}

/// The header checksum of an IPv4 header as written verifies.
fn checksum_ok(h: &Ipv4HeaderSlice<'_>) -> bool {
    h.to_header().calc_header_checksum() == h.header_checksum()
}

fn test_header(id: u16, options: &[u8]) -> Ipv4Header {
    Ipv4Header {
        identification: id,
        dont_fragment: false,
        time_to_live: 33,
        protocol: IpNumber::UDP,
        source: [10, 0, 0, 1],
        destination: [10, 0, 0, 2],
        options: Ipv4Options::try_from(options).unwrap(),
        ..Default::default()
    }
}

/// Options: NOP, record route (7: not copied), security-like 0x82 of 4
/// bytes (copied), end of list: 12 bytes.
const OPTIONS: [u8; 12] = [1, 7, 3, 4, 0x82, 4, 0xAB, 0xCD, 0, 0, 0, 0];
/// What RFC 791 copies of `OPTIONS` into later fragments.
const COPIED: [u8; 4] = [0x82, 4, 0xAB, 0xCD];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Fragments are valid IPv4 packets within the MTU, their data a
    /// multiple of 8 but for the last, their offsets contiguous from the
    /// packet's own; options follow the copy flag; and etherparse's
    /// defragmentation gives back each original payload.
    #[test]
    fn fragments_reassemble_to_the_original(
        packets in proptest::collection::vec((0usize..12_000, any::<bool>(), prop_oneof![3 => Just(None), 1 => (1u16..500, any::<bool>()).prop_map(Some)]), 1..4),
        mtu in prop_oneof![Just(1500usize), 68usize..4000],
        seed in any::<u64>(),
    ) {
        let mut input = Vec::new();
        let mut originals = Vec::new();
        for (k, &(len, with_options, already)) in packets.iter().enumerate() {
            let payload = text_payload(len, seed ^ k as u64);
            let mut h = test_header(100 + k as u16, if with_options { &OPTIONS } else { &[] });
            if let Some((offset, more)) = already {
                h.fragment_offset = IpFragOffset::try_new(offset).unwrap();
                h.more_fragments = more;
            }
            let packet = ipv4_packet(h.clone(), &payload);
            input.extend_from_slice(&packet);
            originals.push((h, payload, packet));
        }
        let out = op("ip-fragment", &[("mtu", &mtu.to_string())]).run(&input).unwrap();

        let mut rest = &out[..];
        let mut pool = IpDefragPool::<(), ()>::new();
        for (h, payload, packet) in &originals {
            if packet.len() <= mtu {
                prop_assert_eq!(rest.get(..packet.len()), Some(&packet[..]), "fits: unchanged");
                rest = &rest[packet.len()..];
                continue;
            }
            let base = h.fragment_offset.value() as usize * 8;
            let mut data = Vec::new();
            let mut done = false;
            let mut first = true;
            while !done {
                let f = Ipv4HeaderSlice::from_slice(rest).unwrap();
                let total = f.total_len() as usize;
                let frag = &rest[..total];
                rest = &rest[total..];
                prop_assert!(checksum_ok(&f), "fragment header checksum");
                prop_assert!(total <= mtu, "{} > mtu {}", total, mtu);
                prop_assert_eq!(f.identification(), h.identification);
                prop_assert_eq!((f.source(), f.destination(), f.ttl(), f.protocol()), (h.source, h.destination, h.time_to_live, h.protocol));
                prop_assert!(!f.dont_fragment());
                let expected_options: &[u8] = if first { &h.options } else if h.options.is_empty() { &[] } else { &COPIED };
                prop_assert_eq!(f.options(), expected_options);
                prop_assert_eq!(f.fragments_offset().value() as usize * 8, base + data.len(), "offset contiguous");
                let chunk = &frag[f.slice().len()..];
                data.extend_from_slice(chunk);
                done = data.len() == payload.len();
                if !done {
                    prop_assert!(chunk.len() % 8 == 0 && f.more_fragments());
                } else {
                    prop_assert_eq!(f.more_fragments(), h.more_fragments);
                }
                prop_assert!(data.len() <= payload.len());
                first = false;
                // etherparse reassembles the packets that were not already fragments.
                if base == 0 && !h.more_fragments {
                    let sliced = SlicedPacket::from_ip(frag).unwrap();
                    if let Some(whole) = pool.process_sliced_packet(&sliced, (), ()).unwrap() {
                        prop_assert!(done, "reassembled before the last fragment");
                        prop_assert_eq!(&whole.payload, payload);
                    } else {
                        prop_assert!(!done, "not reassembled after the last fragment");
                    }
                }
            }
            prop_assert_eq!(&data, payload);
        }
        prop_assert!(rest.is_empty(), "{} bytes left", rest.len());
    }

    /// Garbage, and valid inputs with one byte changed (checksum fixed or
    /// not), are answered with output or an error, never a panic.
    #[test]
    fn packet_operators_never_panic(
        garbage in proptest::collection::vec(any::<u8>(), 0..3000),
        at in any::<usize>(),
        byte in any::<u8>(),
        fix_checksum in any::<bool>(),
        mtu in 68usize..2000,
        mss in 1usize..2000,
    ) {
        let frag = op("ip-fragment", &[("mtu", &mtu.to_string())]);
        let seg = op("tcp-segment", &[("mss", &mss.to_string())]);
        let _ = frag.run(&garbage);
        let _ = seg.run(&garbage);
        // Garbage behind a plausible header with a right checksum.
        let mut g = garbage.clone();
        if g.len() >= 20 {
            g[0] = 0x45 + (byte % 11);
            let total = (g.len() as u16).min(u16::from_be_bytes([g[2], g[3]]).max(20));
            g[2..4].copy_from_slice(&total.to_be_bytes());
            g[10..12].copy_from_slice(&[0, 0]);
            let ihl = (g[0] & 15) as usize * 4;
            if let Some(h) = g.get(..ihl) {
                let sum = h.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum::<u32>();
                let sum = (sum & 0xFFFF) + (sum >> 16);
                let sum = (sum & 0xFFFF) + (sum >> 16);
                let c = !(sum as u16);
                g[10..12].copy_from_slice(&c.to_be_bytes());
            }
            let _ = frag.run(&g);
            let _ = seg.run(&g);
        }
        for name in ["ip-fragment", "tcp-segment"] {
            let mut input = valid_input(name, &BTreeMap::new(), &garbage).unwrap();
            let i = at % input.len();
            input[i] = byte;
            if fix_checksum {
                if let Ok(h) = Ipv4HeaderSlice::from_slice(&input) {
                    let mut header = h.to_header();
                    header.header_checksum = header.calc_header_checksum();
                    let bytes = header.to_bytes();
                    if bytes.len() <= input.len() {
                        input[..bytes.len()].copy_from_slice(&bytes);
                    }
                }
            }
            let _ = frag.run(&input);
            let _ = seg.run(&input);
        }
    }
}

#[test]
fn fragmenting_rejects_df_truncation_and_bad_checksums() {
    let frag = op("ip-fragment", &[("mtu", "576")]);
    let mut h = test_header(9, &[]);
    h.dont_fragment = true;
    let big = ipv4_packet(h.clone(), &[7u8; 1000]);
    let err = frag.run(&big).err().unwrap().to_string();
    assert!(err.contains("don't-fragment"), "{err}");
    // DF is fine when the packet fits.
    let small = ipv4_packet(h, &[7u8; 500]);
    assert_eq!(frag.run(&small).unwrap(), small);

    let ok = ipv4_packet(test_header(10, &[]), &[1u8; 1000]);
    let two = [&ok[..], &ok[..]].concat();
    assert!(frag.run(&two).is_ok());
    let err = frag.run(&two[..two.len() - 1]).err().unwrap().to_string();
    assert!(err.contains("truncated") && err.contains("byte 1020"), "{err}");
    let mut bad = ok.clone();
    bad[10] ^= 1;
    let err = frag.run(&bad).err().unwrap().to_string();
    assert!(err.contains("checksum"), "{err}");
    assert!(frag.run(&[0x60; 40]).is_err(), "IPv6 is not IPv4");
    assert!(frag.run(&ok[..10]).is_err());
    assert_eq!(frag.run(&[]).unwrap(), Vec::<u8>::new());
    // Malformed options in a packet that must be fragmented.
    let bad_options = ipv4_packet(test_header(11, &[0x83, 9, 0, 0]), &[0u8; 1000]);
    assert!(frag.run(&bad_options).is_err());
    // Offsets past the 13-bit field.
    let mut h = test_header(12, &[]);
    h.fragment_offset = IpFragOffset::try_new(8000).unwrap();
    let far = ipv4_packet(h, &[0u8; 4000]);
    assert!(frag.run(&far).is_err());
    let err = build_operator("ip-fragment", &params(&[("mtu", "67")]))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("parameter `mtu`") && err.contains("68 to 65535"),
        "{err}"
    );
}

#[test]
fn sample_fragmentation_input_fragments_at_the_default_mtu() {
    let input = valid_input("ip-fragment", &BTreeMap::new(), &text_payload(20_000, 1)).unwrap();
    let out = op("ip-fragment", &[]).run(&input).unwrap();
    assert!(
        out.len() > input.len() + 10 * 20,
        "{} -> {}",
        input.len(),
        out.len()
    );
}

/// One IPv4 TCP packet through etherparse's builder.
fn tcp_packet(ip: Ipv4Header, tcp: TcpHeader, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ip(IpHeaders::Ipv4(ip, Default::default()))
        .tcp_header(tcp)
        .write(&mut out, payload)
        .unwrap();
    out
}

type Flags = (bool, bool, bool, bool, bool, bool);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Segments carry the payload in order, with contiguous sequence numbers,
    /// checksums that etherparse verifies, identification counting up, FIN
    /// and PSH only on the last segment, CWR only on the first, everything
    /// else copied.
    #[test]
    fn segments_carry_the_payload_with_valid_checksums(
        packets in proptest::collection::vec((0usize..30_000, any::<u32>(), any::<u16>(), any::<(bool, bool, bool, bool, bool, bool)>(), any::<bool>(), any::<bool>()), 1..4),
        mss in prop_oneof![Just(1460usize), 16usize..3000],
        seed in any::<u64>(),
    ) {
        let mut input = Vec::new();
        let mut originals = Vec::new();
        for (k, &(len, seq, id, flags, ts, ip_options)) in packets.iter().enumerate() {
            let payload = text_payload(len, seed ^ k as u64);
            let (fin, psh, cwr, ece, urg, ack) = flags;
            let mut tcp = TcpHeader::new(1000 + k as u16, 80, seq, 4096);
            (tcp.fin, tcp.psh, tcp.cwr, tcp.ece, tcp.urg, tcp.ack) = (fin, psh, cwr, ece, urg, ack);
            tcp.urgent_pointer = if urg { 3 } else { 0 };
            tcp.acknowledgment_number = 77;
            if ts {
                tcp.set_options(&[TcpOptionElement::Noop, TcpOptionElement::Noop, TcpOptionElement::Timestamp(1, 2)]).unwrap();
            }
            let mut ip = test_header(id, if ip_options { &OPTIONS } else { &[] });
            ip.dont_fragment = true;
            input.extend_from_slice(&tcp_packet(ip.clone(), tcp.clone(), &payload));
            originals.push((ip, tcp, payload, flags));
        }
        let out = op("tcp-segment", &[("mss", &mss.to_string())]).run(&input).unwrap();

        let mut rest = &out[..];
        for (ip, tcp, payload, flags) in &originals {
            let (fin, psh, cwr, ..): Flags = *flags;
            let count = payload.len().div_ceil(mss).max(1);
            let mut data = Vec::new();
            for k in 0..count {
                let h = Ipv4HeaderSlice::from_slice(rest).unwrap();
                let total = h.total_len() as usize;
                let packet = &rest[..total];
                rest = &rest[total..];
                prop_assert!(checksum_ok(&h), "IPv4 header checksum");
                prop_assert_eq!(h.identification(), ip.identification.wrapping_add(k as u16));
                prop_assert_eq!(h.options(), &ip.options[..]);
                prop_assert!(h.dont_fragment());
                prop_assert_eq!(h.protocol(), IpNumber::TCP);
                let t = TcpSlice::from_slice(&packet[h.slice().len()..]).unwrap();
                prop_assert_eq!(t.calc_checksum_ipv4(h.source(), h.destination()).unwrap(), t.checksum(), "TCP checksum");
                prop_assert_eq!(t.sequence_number(), tcp.sequence_number.wrapping_add(data.len() as u32));
                prop_assert!(t.payload().len() <= mss);
                let (first, last) = (k == 0, k + 1 == count);
                prop_assert_eq!((t.fin(), t.psh(), t.cwr()), (fin && last, psh && last, cwr && first));
                let mut same = t.to_header();
                (same.sequence_number, same.checksum, same.fin, same.psh, same.cwr) =
                    (tcp.sequence_number, tcp.checksum, tcp.fin, tcp.psh, tcp.cwr);
                prop_assert_eq!(&same, tcp, "other TCP fields copied");
                data.extend_from_slice(t.payload());
            }
            prop_assert_eq!(&data, payload);
        }
        prop_assert!(rest.is_empty(), "{} bytes left", rest.len());
    }
}

#[test]
fn segmenting_rejects_what_is_not_plain_tcp() {
    let seg = op("tcp-segment", &[("mss", "100")]);
    let udp = ipv4_packet(test_header(1, &[]), &[0u8; 300]);
    let err = seg.run(&udp).err().unwrap().to_string();
    assert!(err.contains("not TCP"), "{err}");
    let mut syn = TcpHeader::new(1, 2, 3, 4);
    syn.syn = true;
    let ip = test_header(1, &[]);
    assert!(seg
        .run(&tcp_packet(ip.clone(), syn.clone(), &[0u8; 300]))
        .is_err());
    assert!(seg.run(&tcp_packet(ip.clone(), syn, &[0u8; 50])).is_ok());
    let mut frag = ip.clone();
    frag.more_fragments = true;
    assert!(seg
        .run(&tcp_packet(frag, TcpHeader::new(1, 2, 3, 4), &[0u8; 50]))
        .is_err());
    // A TCP data offset past the packet.
    let mut short = tcp_packet(ip, TcpHeader::new(1, 2, 3, 4), &[]);
    short[32] = 0xF0;
    assert!(seg.run(&short).is_err());
    let err = build_operator("tcp-segment", &params(&[("mss", "0")]))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("parameter `mss`"), "{err}");
}

// ---------------------------------------------------------------- speed

/// Rough single-core throughput on 1 MiB of valid input. Run with
/// `cargo test --release -p isola-ops --test net -- --ignored --nocapture`.
#[test]
#[ignore]
fn throughput_on_one_mebibyte() {
    let cases: [(&str, &[(&str, &str)]); 7] = [
        ("lpm", &[]),
        ("lpm", &[("family", "ipv6")]),
        ("toeplitz", &[]),
        ("toeplitz", &[("tuple", "ipv6-4")]),
        ("ip-fragment", &[]),
        ("tcp-segment", &[]),
        ("crc32c", &[]),
    ];
    for (name, pairs) in cases {
        let p = params(pairs);
        let o = build_operator(name, &p).unwrap();
        let input = valid_input(name, &p, &text_payload(1 << 20, 5)).unwrap();
        o.run(&input).unwrap();
        let start = std::time::Instant::now();
        let mut runs = 0u32;
        while start.elapsed().as_secs_f64() < 1.0 {
            std::hint::black_box(o.run(&input).unwrap());
            runs += 1;
        }
        let secs = start.elapsed().as_secs_f64() / f64::from(runs);
        println!(
            "{name} {pairs:?}: {:.0} MiB/s ({:.2} ms per {} bytes)",
            input.len() as f64 / secs / (1 << 20) as f64,
            secs * 1e3,
            input.len()
        );
    }
}
