//! The Accelerator-as-a-Service paper's PCIe/DMA contention observations
//! 4 to 10 as scenarios on the simulator's PCIe model (`isola_sim::pcie`):
//! two tenants issuing DMA transfers (each its own queue pairs, closed
//! loop) over one PCIe Gen3 x8 link (63 Gbit/s each direction, 24 B of TLP
//! header and framing), with flow-control credits, the device's tags and
//! completion buffer, and the root complex's in-order write pipeline with a
//! read-modify-write for every partial-cache-line write. One host side
//! ([`PLATFORM`]: read latency, read-modify-write, tags) for every case.
//!
//! Two devices, as the paper has two testbeds ([`Link`]): the commercial
//! NIC (Sec. 3.3: obs. 4-6), whose queue pairs read a descriptor before and
//! write a completion entry after each transfer (the ring protocol of
//! Sec. 2) and take turns per queue pair, and the FPGA prototype (Sec. 3.4:
//! obs. 7-10), whose DMA engine issues reads and writes directly and takes
//! turns per tenant ("round robin on the FPGA").
//!
//! Two set-ups per case: `native`, the device alone (64 transfers in
//! flight, the link round-robins TLPs across them, as commercial devices
//! arbitrate queue pairs: observation 4); and Isola, one transfer on the
//! link at a time, chosen by the policy and cut into max-payload fragments
//! (the "re-size DMA to the PCIe MTU" shaping of observation 8). Shaping
//! variants add batching and a rate limit for the small-message case.

use std::fmt::Write;

/// One tenant of a case.
#[derive(Debug, Clone, Copy)]
pub struct Flow {
    /// Its name.
    pub name: &'static str,
    /// Bytes per DMA transfer.
    pub size: u64,
    /// `write` (device to host) or `read` (host to device).
    pub direction: &'static str,
    /// Queue pairs: transfers kept in flight.
    pub qps: u32,
}

/// Which testbed's link a case runs on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Link {
    /// The commercial NIC's (AaaS Sec. 3.3): ring protocol per transfer.
    Nic,
    /// The FPGA prototype's (Sec. 3.4): direct DMA, round robin per tenant,
    /// with `max_payload` and `max_read_request` bytes.
    Fpga {
        /// MaxPayloadSize.
        max_payload: u64,
        /// MaxReadReqSize.
        max_read_request: u64,
    },
}

/// The FPGA prototype's link at the usual sizes (256 B, 512 B).
pub const FPGA: Link = Link::Fpga {
    max_payload: 256,
    max_read_request: 512,
};

/// Bytes of a queue pair's descriptor and completion entry on the NIC
/// (a ConnectX work-queue entry's basic block and a CQE are 64 B; AaaS
/// Sec. 2, steps 2 and 4).
const NIC_RING_ENTRY: u64 = 64;

/// The host side of the paper's platform, one set of figures for every
/// case (both testbeds share the dual Xeon E5-2698 v3 host and its root
/// complex, Sec. 3.1); the spec's and pcie-bench's figures where the paper
/// gives none. Variants change one field to add or remove a mechanism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Platform {
    /// From a read request reaching the root complex to its first
    /// completion: the DMA read latency pcie-bench measured on Xeon E5
    /// hosts (about 500 ns; Neugebauer et al., SIGCOMM 2018).
    pub read_latency_ns: u64,
    /// Root-complex time of a write covering part of a cache line: it reads
    /// the line before merging, the same memory read a DMA read request
    /// waits for, so `read_latency_ns` (the posted pipeline is in order:
    /// later writes wait behind it, holding their credits).
    pub rmw_ns: u64,
    /// Read requests the device may have outstanding: 32, the 5-bit Tag
    /// field without Extended Tag (PCIe spec sec. 2.2.6.2).
    pub tags: u32,
    /// Read requests one transfer may have outstanding: `None` on the
    /// platform (the paper names no such limit; the tags bound them).
    pub reads_per_transfer: Option<u32>,
}

/// The platform every case runs on.
pub const PLATFORM: Platform = Platform {
    read_latency_ns: 500,
    rmw_ns: 500,
    tags: 32,
    reads_per_transfer: None,
};

/// Transfers each tenant keeps queued on the FPGA testbed: the paper does
/// not say; as many as the device has tags, so that a tenant alone can keep
/// every tag busy and its share is set by arbitration, not by its own
/// round trips.
pub const FPGA_DEPTH: u32 = PLATFORM.tags;

/// Fragments Isola keeps in flight on the link: enough to cover its
/// bandwidth-delay product with 256 B fragments (about 5 KB), so that
/// reads are not held to one round trip per fragment.
const ISOLA_SLOTS: u32 = 16;

/// One observation's experiment.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// Short name.
    pub name: &'static str,
    /// The observation, as the paper states it.
    pub claim: &'static str,
    /// The two tenants.
    pub flows: [Flow; 2],
    /// The testbed.
    pub link: Link,
}

/// A tenant.
pub const fn flow(name: &'static str, size: u64, direction: &'static str, qps: u32) -> Flow {
    Flow {
        name,
        size,
        direction,
        qps,
    }
}

/// Observations 4 to 10.
pub const CASES: [Case; 6] = [
    Case {
        name: "obs4-queue-pairs",
        claim: "obs. 4: with 4 KB writes, the throughput ratio equals the QP ratio (2 QPs vs 1: ~52 vs ~26 Gbit/s)",
        flows: [flow("a-2qp", 4096, "write", 2), flow("b-1qp", 4096, "write", 1)],
        link: Link::Nic,
    },
    Case {
        name: "obs5-size-mix",
        claim: "obs. 5: 4 KB writes against 256 B writes (1 QP each): throughput ratio non-linear in the size ratio (0.83x to 10.5x over sizes)",
        flows: [flow("a-4k", 4096, "write", 1), flow("b-256", 256, "write", 1)],
        link: Link::Nic,
    },
    Case {
        name: "obs6-9-directions",
        claim: "obs. 6: device-to-host writes steal 1.08-3.39x bandwidth from host-to-device reads; obs. 9: reads and writes colocated are predictable (full duplex)",
        flows: [flow("a-write", 4096, "write", 2), flow("b-read", 4096, "read", 2)],
        link: Link::Nic,
    },
    Case {
        name: "obs7-iops-vs-rate",
        claim: "obs. 7: 512 B + 64 B reads are IOPS-fair but data-rate-unfair; fairness is ternary (IOPS, data rate, neither)",
        flows: [flow("a-512", 512, "read", FPGA_DEPTH), flow("b-64", 64, "read", FPGA_DEPTH)],
        link: FPGA,
    },
    Case {
        name: "obs8-read-mtu",
        claim: "obs. 8: reads below MaxReadReqSize are IOPS-fair, above it data-rate-fair, mixed ones unpredictable",
        flows: [flow("a-4k-read", 4096, "read", 1), flow("b-256-read", 256, "read", 1)],
        link: FPGA,
    },
    Case {
        name: "obs10-small-writes",
        claim: "obs. 10: 16 B writes beside 4 KB writes take over root-complex credits: aggregate throughput drops by 85%",
        flows: [flow("a-4k", 4096, "write", 4), flow("b-16", 16, "write", 4)],
        link: FPGA,
    },
];

/// How the link is driven.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Setup {
    /// The device alone: every transfer in flight, TLPs round-robined.
    Native,
    /// Isola: one transfer at a time, by the policy, in fragments.
    Isolated,
    /// Isola, with tenant B keeping `n` transfers queued and the engine
    /// batching up to `n` of a tenant's transfers, 4 KiB in all, into one
    /// DMA ([`isola_core::BatchRule`]).
    Batched(u32),
    /// Isola, with tenant B limited to this many transfers per second.
    Limited(f64),
}

/// The scenario of `case` under `setup`.
pub fn scenario(case: &Case, setup: Setup) -> String {
    let slots = if setup == Setup::Native { 64 } else { ISOLA_SLOTS };
    let mut flows = case.flows;
    let (mut extra, mut batch) = (String::new(), String::new());
    match setup {
        Setup::Batched(n) => {
            flows[1].qps = n;
            batch = format!("batch = {{ tasks = {n}, bytes = \"4KiB\" }}\n");
        }
        Setup::Limited(rate) => extra = format!("limit = \"{rate:.0}/s\"\n"),
        _ => {}
    }
    link_scenario(
        &format!("{} ({setup:?})", case.name),
        case.link,
        &PLATFORM,
        (slots, &batch),
        "2ms",
        &flows,
        &["", &extra],
    )
}

/// A scenario of `flows` on `link` of `platform` with `slots` transfers
/// in flight at most (and `engine_extra` added to the engine's table), run
/// for `duration`; `extra[i]` is added to tenant `i`'s table.
pub fn link_scenario(
    title: &str,
    link: Link,
    platform: &Platform,
    (slots, engine_extra): (u32, &str),
    duration: &str,
    flows: &[Flow],
    extra: &[&str],
) -> String {
    let (mps, mrrs, pcie) = match link {
        Link::Nic => (
            256,
            512,
            format!("descriptor = \"{NIC_RING_ENTRY}B\"\ncompletion_entry = \"{NIC_RING_ENTRY}B\"\n"),
        ),
        Link::Fpga {
            max_payload,
            max_read_request,
        } => (
            max_payload,
            max_read_request,
            "arbitrate = \"tenant\"\n".to_string(),
        ),
    };
    let Platform {
        read_latency_ns,
        rmw_ns,
        tags,
        reads_per_transfer,
    } = platform;
    let pcie = match reads_per_transfer {
        Some(n) => format!("{pcie}reads_per_transfer = {n}\n"),
        None => pcie,
    };
    let mut s = format!(
        "# AaaS {title}, generated by `isola repro aaas`.\n\
         [run]\nseed = 3\nduration = \"{duration}\"\nwindow = \"100us\"\npolicies = [\"fcfs\"]\n\n\
         [[engine]]\nname = \"pcie\"\nkind = \"dma\"\nslots = {slots}\nbandwidth = \"63Gbit/s\"\n\
         max_payload = \"{mps}B\"\nmax_read_request = \"{mrrs}B\"\ntlp_overhead = \"24B\"\n{engine_extra}\
         [engine.pcie]\nread_latency = \"{read_latency_ns}ns\"\nrmw = \"{rmw_ns}ns\"\ntags = {tags}\n{pcie}"
    );
    for (i, f) in flows.iter().enumerate() {
        let extra = extra.get(i).copied().unwrap_or("");
        let _ = write!(
            s,
            "\n[[tenant]]\nname = \"{}\"\nqueue_cap = {}\n{extra}[tenant.workload]\nengine = \"pcie\"\nsize = \"{}B\"\n\
             arrival = {{ closed = {} }}\ndirection = \"{}\"\n",
            f.name,
            f.qps.max(64),
            f.size,
            f.qps,
            f.direction
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_and_setup_parses() {
        for case in &CASES {
            for setup in [
                Setup::Native,
                Setup::Isolated,
                Setup::Batched(256),
                Setup::Limited(1e5),
            ] {
                let text = scenario(case, setup);
                let s = isola_model::Scenario::parse(&text, "aaas.toml")
                    .unwrap_or_else(|e| panic!("{text}\n{e}"));
                assert_eq!(s.tenants.len(), 2);
            }
        }
    }
}
