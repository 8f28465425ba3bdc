//! Receive-side scaling on a multicore SmartNIC: the native DPDK baseline
//! of MTDA (Huang et al., IEEE TSC 2024, §V) and FairNIC (Grant et al.,
//! SIGCOMM 2020, §2), as a device model.
//!
//! Models: the NIC hashes each packet's 5-tuple and puts the packet on one
//! core's receive ring (`hash mod cores`); each core polls its own ring and
//! runs each packet to completion, first come first served; a packet that
//! finds its core's ring full is dropped (the NIC's tail drop). Packets of
//! one flow therefore always wait for the same core, however idle the
//! others are, and tenants whose flows hash to the same core share it in
//! proportion to their packet rates. This is "which core a packet waits
//! for", so it is a device, not a policy: no tenant is chosen, and the
//! scheduler in front holds nothing (the engine's slots are its rings).
//!
//! Leaves out: the NIC's Toeplitz hash and 128-entry indirection table
//! (stood in for by a 64-bit mix of the tuple, which spreads flows as
//! uniformly: what matters is that a flow keeps its core and distinct
//! flows land on cores independently), burst polling (a core takes its
//! ring's packets one by one), and cache effects between cores.

use crate::device::{DeviceWork, Finished, Timer};
use isola_core::Nanos;
use isola_model::ingress::FiveTuple;
use std::collections::VecDeque;

/// The RSS hash of a packet's 5-tuple: a SplitMix64 finaliser over its
/// fields (a stand-in for the NIC's Toeplitz hash; see the module docs).
pub fn rss_hash(t: &FiveTuple) -> u64 {
    let words = [
        u64::from(u32::from(t.src_ip)) << 32 | u64::from(u32::from(t.dst_ip)),
        u64::from(t.src_port) << 24 | u64::from(t.dst_port) << 8 | u64::from(t.proto),
    ];
    words.iter().fold(0x9e37_79b9_7f4a_7c15u64, |h, &w| mix(h ^ w))
}

/// SplitMix64's finaliser (Steele et al., OOPSLA 2014).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One core: the packet in service (with its start) and its ring.
#[derive(Debug, Clone, Default)]
struct Core {
    serving: Option<(DeviceWork, Nanos)>,
    ring: VecDeque<DeviceWork>,
}

/// Cores each fed by its own receive ring, steered by flow hash.
#[derive(Debug, Clone)]
pub struct RssCores {
    cores: Vec<Core>,
    ring: usize,
    overhead: Nanos,
}

impl RssCores {
    /// `cores` cores, each with a ring of `ring` descriptors, each packet
    /// holding its core `overhead` before its service (the dispatch path,
    /// as in [`crate::device::FifoLanes`]).
    pub fn new(cores: u32, ring: u32, overhead: Nanos) -> Self {
        RssCores {
            cores: vec![Core::default(); cores.max(1) as usize],
            ring: ring.max(1) as usize,
            overhead,
        }
    }

    /// Core `c` begins serving `work` at `now` (after its dispatch path).
    fn begin(&mut self, c: usize, now: Nanos, work: DeviceWork, timers: &mut Vec<Timer>) {
        let started = now.saturating_add(self.overhead);
        self.cores[c].serving = Some((work, started));
        timers.push((started.saturating_add(work.service), c as u64));
    }

    /// The core a packet with RSS hash `hash` goes to.
    pub fn core_of(&self, hash: u64) -> usize {
        (hash % self.cores.len() as u64) as usize
    }

    /// Whether the ring of the core for `hash` has room (else the NIC drops
    /// the packet). A packet in service has left its ring.
    pub fn admits(&self, hash: u64) -> bool {
        self.cores[self.core_of(hash)].ring.len() < self.ring
    }

    /// `work` arrives at its core: served now if the core is idle, else
    /// queued on its ring (the caller checked [`admits`](Self::admits)).
    /// The timer's token is the core.
    pub fn start(&mut self, now: Nanos, work: DeviceWork, timers: &mut Vec<Timer>) {
        let c = self.core_of(work.flow_hash);
        if self.cores[c].serving.is_none() {
            self.begin(c, now, work, timers);
        } else {
            self.cores[c].ring.push_back(work);
        }
    }

    /// Core `token` finished its packet; it takes the next from its ring.
    pub fn fire(&mut self, now: Nanos, token: u64, done: &mut Vec<Finished>, timers: &mut Vec<Timer>) {
        let Some(core) = self.cores.get_mut(token as usize) else {
            return;
        };
        let Some((work, started)) = core.serving.take() else {
            return;
        };
        done.push(Finished {
            dispatch: work.dispatch,
            started,
            service: now - started,
            aborted: false,
        });
        if let Some(next) = core.ring.pop_front() {
            self.begin(token as usize, now, next, timers);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn tuple(src_port: u16) -> FiveTuple {
        FiveTuple {
            src_ip: Ipv4Addr::new(10, 0, 0, 1),
            dst_ip: Ipv4Addr::new(10, 255, 0, 1),
            src_port,
            dst_port: 4000,
            proto: 17,
        }
    }

    /// A flow always hashes alike, and many flows spread over 8 cores
    /// within 5% of evenly (64k flows: about 8,000 a core, sd ~85).
    #[test]
    fn flows_keep_their_core_and_spread_evenly() {
        let d = RssCores::new(8, 4, 0);
        assert_eq!(rss_hash(&tuple(7)), rss_hash(&tuple(7)));
        let mut per_core = [0u32; 8];
        for p in 0..65_535u16 {
            per_core[d.core_of(rss_hash(&tuple(p)))] += 1;
        }
        for n in per_core {
            assert!((n as f64 / 8191.9 - 1.0).abs() < 0.05, "{per_core:?}");
        }
    }
}
