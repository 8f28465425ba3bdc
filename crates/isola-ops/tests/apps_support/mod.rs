//! What the application tests share: packets built and parsed with
//! etherparse (references the operators do not use), and small helpers.
#![allow(dead_code, unused_imports)] // each test file uses its own part of it

pub use crate::common::{op, params, random_bytes, TempFile};
pub use etherparse::{
    Ipv4Header, Ipv4HeaderSlice, Ipv4Options, NetSlice, PacketBuilder, SlicedPacket, TransportSlice,
};
pub use isola_ops::{build_operator, run_split, sample_params, text_payload, valid_input, OpError, Operator};
pub use proptest::prelude::*;
pub use std::collections::{BTreeMap, HashMap, HashSet};
pub use std::net::Ipv4Addr;

pub const APPS: [&str; 10] = [
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
pub fn param_error(name: &str, pairs: &[(&str, &str)]) -> String {
    build_operator(name, &params(pairs)).err().unwrap().to_string()
}

/// A 5-tuple: source, destination, source port, destination port, protocol.
pub type Tuple = (u32, u32, u16, u16, u8);

/// One test packet: UDP (17), TCP (6) or ICMP echo (1).
#[derive(Debug, Clone)]
pub struct Pkt {
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
    pub ttl: u8,
    pub payload: Vec<u8>,
}

impl Pkt {
    pub fn udp(payload: &[u8]) -> Pkt {
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
    pub fn bytes(&self) -> Vec<u8> {
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

pub fn batch(packets: &[Pkt]) -> Vec<u8> {
    packets.iter().flat_map(Pkt::bytes).collect()
}

/// The IPv4 packets of a container, each parsed by etherparse.
pub fn split_packets(mut data: &[u8]) -> Vec<&[u8]> {
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
pub fn parse(packet: &[u8]) -> (u32, u32, u16, u16, u8, usize, Option<Vec<u8>>) {
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
pub fn run_both(o: &dyn Operator, input: &[u8], chunk: usize) -> Result<Vec<u8>, OpError> {
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

pub fn pkt_strategy(bases: Vec<u32>) -> impl Strategy<Value = Pkt> {
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

pub fn mask(len: u32) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len)
    }
}
