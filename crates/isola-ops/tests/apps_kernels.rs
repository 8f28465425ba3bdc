//! OSMOSIS' tenant applications (`aggregate`, `reduce`, `histogram`,
//! `filter`, `io-write`, `io-read`) and MTDA's `analytics` against
//! references their code does not share: packets built and parsed by
//! etherparse, plain loops and standard tables written here; split runs
//! against one-shot runs; bad payloads and parameters are errors.

mod apps_support;
mod common;

use apps_support::*;

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
