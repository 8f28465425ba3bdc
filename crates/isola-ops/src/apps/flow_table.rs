//! `flow-table`: DPUBench's first end-to-end program (section 5.2), a flow
//! table kept across packets: each arriving packet's 5-tuple is looked up,
//! an existing entry's counters are incremented, a new flow gets an entry.
//!
//! # Input and the 5-tuple
//!
//! DPUBench's server reads the 5-tuple from the raw packet's header
//! (pktgen's packets over DPDK). The daemon's packet path hands a kernel
//! the UDP payload of the datagram it received, so the packet travels
//! whole inside that payload, as a raw packet does on the wire: the input
//! is one or more IPv4 packets back to back (`isola load udp --frame ipv4`
//! writes each flow's own 5-tuple into such a header). The key is the
//! 5-tuple (source and destination address, source and destination port,
//! protocol); packets without ports (not UDP or TCP, or fragments) have
//! ports 0. DPUBench's text lists "source IP, destination IP, destination
//! port, source MAC, destination MAC"; IPv4 carries no MACs, and the key
//! is the usual 5-tuple, as its own section calls it.
//!
//! # State
//!
//! One table per operator instance, kept across tasks. The runtime keeps
//! one instance per operator name and parameters, so two flows (or
//! tenants) with the same parameters share a table; the `table` parameter
//! (a name, otherwise unused) gives one its own. The table is `shards`
//! maps, each behind its own lock (a sharded concurrent map: workers on
//! different shards do not wait for each other), keyed with a hasher
//! seeded at random per instance (SipHash), since the keys come from
//! packets and the table lives long.
//!
//! Bounded: at most `capacity` entries, split evenly over the shards (the
//! first `capacity % shards` shards hold one more). A new flow arriving at
//! a full shard evicts that shard's oldest entry, the one inserted first
//! (FIFO, as a flow cache ages out entries; a DPUBench entry is never
//! removed, which is `capacity` at least the number of flows).
//!
//! # Output
//!
//! Per packet, [`REPLY_BYTES`] bytes, big-endian: the flow's packets (`u64`)
//! and bytes (`u64`, IPv4 total lengths) after this packet, then the
//! entries in the table (`u32`). A flow's first packet (or its first
//! since its eviction) reads 1 packet.

use super::flow::tuple_key;
use super::{l4, usize_param, Batch, Kernel};
use crate::operator::{OpError, Operator};
use crate::packet::Packet;
use isola_core::params::{ParamSpec, Params};
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Bytes of output per packet.
pub const REPLY_BYTES: usize = 20;

/// Largest `capacity`.
pub const MAX_CAPACITY: u64 = 1 << 24;

/// Largest `shards`.
pub const MAX_SHARDS: u64 = 1024;

/// The parameters of `flow-table`.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "capacity",
        default: "65536",
        description: "most entries in the table, 1 to 16777216; a new flow in a full shard evicts its \
                      oldest entry (FIFO)",
    },
    ParamSpec {
        name: "shards",
        default: "16",
        description: "independently locked maps the table is split into, 1 to 1024 (at most `capacity`)",
    },
    ParamSpec {
        name: "table",
        default: "",
        description:
            "a name, otherwise unused: flows whose parameters differ only in it get tables of their own",
    },
];

/// A flow's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowCount {
    /// Packets counted.
    pub packets: u64,
    /// Bytes counted (IPv4 total lengths).
    pub bytes: u64,
}

/// One shard: its entries and their insertion order.
#[derive(Debug, Default)]
struct Shard {
    entries: HashMap<u128, FlowCount, RandomState>,
    /// Keys in insertion order; each live key exactly once.
    order: VecDeque<u128>,
}

/// The sharded, bounded flow table (see the module docs).
#[derive(Debug)]
pub struct FlowTable {
    shards: Vec<Mutex<Shard>>,
    /// Capacity of each shard.
    room: Vec<usize>,
    /// Entries over all shards (kept beside the shards, so that a reply
    /// need not lock them all).
    entries: AtomicUsize,
    hasher: RandomState,
}

impl FlowTable {
    /// A table of at most `capacity` entries in `shards` shards (both at
    /// least 1; `shards` at most `capacity`).
    pub fn new(capacity: usize, shards: usize) -> FlowTable {
        let shards = shards.clamp(1, capacity.max(1));
        let capacity = capacity.max(1);
        FlowTable {
            shards: (0..shards).map(|_| Mutex::new(Shard::default())).collect(),
            room: (0..shards)
                .map(|i| capacity / shards + usize::from(i < capacity % shards))
                .collect(),
            entries: AtomicUsize::new(0),
            hasher: RandomState::new(),
        }
    }

    /// Counts a packet of `bytes` bytes for flow `key` (inserting it, and
    /// evicting its shard's oldest entry if that shard is full); returns
    /// the flow's counters after it and the table's entries.
    pub fn count(&self, key: u128, bytes: u64) -> (FlowCount, usize) {
        let i = (self.hasher.hash_one(key) % self.shards.len() as u64) as usize;
        let after = {
            // A worker that panicked mid-update left counters, never a
            // broken map: keep counting.
            let mut shard = self.shards[i].lock().unwrap_or_else(|e| e.into_inner());
            let shard = &mut *shard;
            if !shard.entries.contains_key(&key) {
                let evicted = shard.entries.len() >= self.room[i]
                    && shard
                        .order
                        .pop_front()
                        .is_some_and(|old| shard.entries.remove(&old).is_some());
                if !evicted {
                    self.entries.fetch_add(1, Ordering::Relaxed);
                }
                shard.order.push_back(key);
            }
            let c = shard.entries.entry(key).or_default();
            c.packets += 1;
            c.bytes += bytes;
            *c
        };
        (after, self.len())
    }

    /// Entries in the table now.
    pub fn len(&self) -> usize {
        self.entries.load(Ordering::Relaxed)
    }

    /// Whether the table has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Flow `key`'s counters, if it has an entry.
    pub fn get(&self, key: u128) -> Option<FlowCount> {
        let i = (self.hasher.hash_one(key) % self.shards.len() as u64) as usize;
        let shard = self.shards[i].lock().unwrap_or_else(|e| e.into_inner());
        shard.entries.get(&key).copied()
    }
}

/// The `flow-table` kernel.
#[derive(Debug)]
pub struct FlowTableKernel {
    table: FlowTable,
}

impl FlowTableKernel {
    /// Builds from `capacity` and `shards`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let capacity = usize_param(p, "capacity", 1..=MAX_CAPACITY)?;
        let shards = usize_param(p, "shards", 1..=MAX_SHARDS)?;
        if shards > capacity {
            return Err(p
                .bad("shards", &format!("at most `capacity` ({capacity}) shards"))
                .into());
        }
        Ok(Box::new(Batch(FlowTableKernel {
            table: FlowTable::new(capacity, shards),
        })))
    }

    /// The table (for tests and inspection).
    pub fn table(&self) -> &FlowTable {
        &self.table
    }
}

/// Packet `p`'s 5-tuple key (the order of [`tuple_key`]).
pub(crate) fn packet_key(op: &'static str, p: &Packet<'_>) -> Result<u128, OpError> {
    let t = l4(op, p)?;
    Ok(tuple_key(
        u32::from_be_bytes(p.header.source()),
        u32::from_be_bytes(p.header.destination()),
        t.sport,
        t.dport,
        p.header.protocol().0,
    ))
}

impl Kernel for FlowTableKernel {
    /// The output so far (the table itself lives in the kernel).
    type State = Vec<u8>;

    fn name(&self) -> &'static str {
        "flow-table"
    }

    /// Each packet's reply depends on those before it.
    fn splits(&self) -> bool {
        false
    }

    /// The table outlives the task: a stop mid-batch would leave it
    /// holding part of a batch whose output is discarded.
    fn stoppable(&self) -> bool {
        false
    }

    fn state(&self) -> Vec<u8> {
        Vec::new()
    }

    fn packet(&self, p: &Packet<'_>, out: &mut Vec<u8>) -> Result<(), OpError> {
        let key = packet_key("flow-table", p)?;
        let (c, entries) = self.table.count(key, p.bytes.len() as u64);
        out.extend_from_slice(&c.packets.to_be_bytes());
        out.extend_from_slice(&c.bytes.to_be_bytes());
        out.extend_from_slice(&u32::try_from(entries).unwrap_or(u32::MAX).to_be_bytes());
        Ok(())
    }

    fn merge(&self, into: &mut Vec<u8>, later: Vec<u8>) {
        into.extend_from_slice(&later);
    }

    fn finish(&self, out: Vec<u8>) -> Result<Vec<u8>, OpError> {
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::{push_packet, SampleFlow};
    use crate::registry::build_operator;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn packet(flow: u8, len: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let f = SampleFlow {
            sport: 1000 + u16::from(flow),
            ..SampleFlow::default()
        };
        push_packet(&mut out, &f, &vec![7u8; len]).unwrap();
        out
    }

    fn reply(out: &[u8]) -> (u64, u64, u32) {
        (
            u64::from_be_bytes(out[0..8].try_into().unwrap()),
            u64::from_be_bytes(out[8..16].try_into().unwrap()),
            u32::from_be_bytes(out[16..20].try_into().unwrap()),
        )
    }

    fn op(capacity: usize, shards: usize) -> Box<dyn Operator> {
        let p: BTreeMap<String, String> = [
            ("capacity".to_string(), capacity.to_string()),
            ("shards".to_string(), shards.to_string()),
        ]
        .into();
        build_operator("flow-table", &p).unwrap()
    }

    #[test]
    fn counts_persist_across_tasks_and_new_flows_are_inserted() {
        let o = op(100, 4);
        assert_eq!(reply(&o.run(&packet(1, 10)).unwrap()), (1, 38, 1));
        assert_eq!(reply(&o.run(&packet(1, 12)).unwrap()), (2, 78, 1));
        assert_eq!(reply(&o.run(&packet(2, 0)).unwrap()), (1, 28, 2));
        // Two packets in one task: one reply each, in order.
        let both = [packet(2, 0), packet(1, 0)].concat();
        let out = o.run(&both).unwrap();
        assert_eq!(out.len(), 2 * REPLY_BYTES);
        assert_eq!(reply(&out[..20]), (2, 56, 2));
        assert_eq!(reply(&out[20..]), (3, 106, 2));
    }

    #[test]
    fn bad_parameters_and_packets_are_errors() {
        let p: BTreeMap<String, String> = [
            ("shards".to_string(), "8".to_string()),
            ("capacity".to_string(), "4".to_string()),
        ]
        .into();
        let e = build_operator("flow-table", &p).err().unwrap().to_string();
        assert!(e.contains("shards"), "{e}");
        let o = op(10, 1);
        assert!(o.run(b"not a packet at all").is_err());
        let mut p = packet(1, 4);
        p.truncate(25);
        assert!(o.run(&p).is_err());
    }

    /// The model: one shard, FIFO eviction, exact counters.
    #[derive(Default)]
    struct Model {
        counts: BTreeMap<u8, (u64, u64)>,
        order: VecDeque<u8>,
    }

    impl Model {
        fn count(&mut self, flow: u8, bytes: u64, capacity: usize) -> (u64, u64, u32) {
            if !self.counts.contains_key(&flow) {
                if self.counts.len() >= capacity {
                    let old = self.order.pop_front().unwrap();
                    self.counts.remove(&old);
                }
                self.order.push_back(flow);
            }
            let c = self.counts.entry(flow).or_default();
            c.0 += 1;
            c.1 += bytes;
            (c.0, c.1, self.counts.len() as u32)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Every reply equals a FIFO-evicting model's, for one shard.
        #[test]
        fn one_shard_agrees_with_a_fifo_model(
            capacity in 1usize..8,
            packets in prop::collection::vec((0u8..12, 0usize..40), 1..120),
        ) {
            let o = op(capacity, 1);
            let mut model = Model::default();
            for (flow, len) in packets {
                let got = reply(&o.run(&packet(flow, len)).unwrap());
                prop_assert_eq!(got, model.count(flow, 28 + len as u64, capacity));
            }
        }

        /// With room for every flow in every shard, any sharding counts
        /// exactly; a tight table never holds more than its capacity.
        #[test]
        fn sharded_tables_count_exactly_and_stay_bounded(
            shards in 1usize..8,
            capacity in 8usize..64,
            packets in prop::collection::vec((0u8..40, 0usize..40), 1..200),
        ) {
            let roomy = op(40 * shards, shards);
            let tight = op(capacity, shards.min(capacity));
            let mut model = Model::default();
            for (flow, len) in packets {
                let (p, b, n) = reply(&roomy.run(&packet(flow, len)).unwrap());
                let (mp, mb, mn) = model.count(flow, 28 + len as u64, 40);
                prop_assert_eq!((p, b, n), (mp, mb, mn));
                let (_, _, held) = reply(&tight.run(&packet(flow, len)).unwrap());
                prop_assert!(held as usize <= capacity);
            }
        }
    }
}
