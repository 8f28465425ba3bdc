//! OSMOSIS' IO mix over packets (Sec. 6.4, Figs. 12b and 13): a tenant
//! whose pipeline is a compute engine and then a DMA engine (`pipeline =
//! ["pu", "axi"]`, its `direction` a write or a read) runs live as an
//! `isolad` IO flow (`dma = "write"` or `"read"`, docs/daemon.md). Its
//! kernel on the processing units is the calibrated stand-in for its
//! service model (as for `op = "kernel"`), and each packet carries its
//! transfer in its header: an io-write the address and then the data (the
//! stand-in's packet of the size the scenario draws), an io-read the
//! address and the size drawn (then a small stand-in packet for the
//! kernel). Each such tenant attaches to the daemon as a real client
//! (`isola_client` over the daemon's Unix socket) and sets its host
//! window in its own arena, where the writes land and the reads come
//! from. The DMA engine's link is the scenario's bandwidth divided by the
//! run's stretch, so the DMA path is as loaded, against its capacity, as
//! in the scenario.

use anyhow::{bail, Context};
use isola_client::Client;
use isola_core::EngineKind;
use isola_model::scenario::{DeviceSpec, Direction, TenantSpec};
use isola_model::Scenario;
use std::path::Path;

/// Each IO tenant's host window: this many bytes at the start of its
/// connection's arena.
pub(super) const WINDOW: u64 = 1 << 20;

/// Bytes of the stand-in's input an io-read carries after its request.
pub(super) const READ_BODY: u64 = 64;

/// The DMA engine tenant `t`'s pipeline ends on, if it is an IO pipeline
/// (a compute engine, then a DMA engine).
pub(super) fn dma_engine(scenario: &Scenario, t: &TenantSpec) -> Option<usize> {
    let [first, second] = t.workload().stages[..] else {
        return None;
    };
    let compute = matches!(
        scenario.engines[first].kind,
        EngineKind::ProcessingUnits | EngineKind::Accelerator
    );
    (compute && scenario.engines[second].kind == EngineKind::Dma).then_some(second)
}

/// Whether `t` runs as an IO flow.
pub(super) fn is_io(scenario: &Scenario, t: &TenantSpec) -> bool {
    dma_engine(scenario, t).is_some()
}

/// Checks the scenario's IO tenants: one DMA engine for all (the daemon's
/// dma engine), the scenario's only one, and transfers that fit a window
/// and (reads) a reply.
pub(super) fn check(scenario: &Scenario) -> anyhow::Result<()> {
    let dma: Vec<usize> = scenario
        .engines
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == EngineKind::Dma)
        .map(|(i, _)| i)
        .collect();
    for t in &scenario.tenants {
        let Some(e) = dma_engine(scenario, t) else {
            continue;
        };
        if dma.len() != 1 {
            bail!(
                "tenant `{}`: over packets the daemon has one DMA engine, and the scenario has {}",
                t.name,
                dma.len()
            );
        }
        let Some(DeviceSpec::Dma(_)) = scenario.engines.get(e).map(|e| &e.device) else {
            bail!("tenant `{}`: its DMA engine has no link model", t.name);
        };
        let most = t.workload().size.max_bytes();
        if most > WINDOW
            || (t.workload().direction == Direction::Read && most > isola_daemon::io_flow::MAX_READ)
        {
            bail!(
                "tenant `{}`: its transfers reach {most} bytes, above the {} bytes a live IO {} may move",
                t.name,
                if t.workload().direction == Direction::Read {
                    isola_daemon::io_flow::MAX_READ
                } else {
                    WINDOW
                },
                if t.workload().direction == Direction::Read {
                    "read"
                } else {
                    "write"
                }
            );
        }
    }
    Ok(())
}

/// The bytes of the stand-in's input for a packet whose transfer is
/// `drawn` bytes.
pub(super) fn body_bytes(t: &TenantSpec, drawn: u64) -> u64 {
    match t.workload().direction {
        Direction::Write => drawn,
        Direction::Read => READ_BODY,
    }
}

/// What `t`'s sender sends: each of `bodies` (the stand-in's inputs)
/// behind its transfer's header, at addresses spread over the window;
/// `sizes` are the transfers drawn.
pub(super) fn packets(t: &TenantSpec, sizes: &[u64], bodies: &[Vec<u8>]) -> Vec<Vec<u8>> {
    sizes
        .iter()
        .zip(bodies)
        .enumerate()
        .map(|(i, (&size, body))| {
            let len = match t.workload().direction {
                Direction::Write => body.len() as u64,
                Direction::Read => size,
            };
            // 4 KiB apart, wrapping where the transfer would pass the end.
            let addr = (i as u64 * 4096) % (WINDOW - len.min(WINDOW) + 1);
            let mut p = addr.to_be_bytes().to_vec();
            if t.workload().direction == Direction::Read {
                p.extend_from_slice(&(len as u32).to_be_bytes());
            }
            p.extend_from_slice(body);
            p
        })
        .collect()
}

/// The live link of DMA engine `e` under `stretch`, bytes per second.
pub(super) fn live_bandwidth(scenario: &Scenario, e: usize, stretch: f64) -> Option<f64> {
    match scenario.engines.get(e).map(|e| &e.device) {
        Some(DeviceSpec::Dma(d)) => Some(d.bytes_per_sec / stretch),
        _ => None,
    }
}

/// Attaches every IO tenant of `scenario` to the daemon at `socket` as a
/// client holding its host window ([`WINDOW`] bytes at its arena's
/// start); the clients must live as long as the run.
pub(super) fn attach(scenario: &Scenario, socket: &Path) -> anyhow::Result<Vec<Client>> {
    let mut clients = Vec::new();
    for t in scenario.tenants.iter().filter(|t| is_io(scenario, t)) {
        let mut c = Client::connect(socket, &t.name)
            .with_context(|| format!("tenant `{}`: connecting to the daemon", t.name))?;
        c.host_window(0, WINDOW)
            .with_context(|| format!("tenant `{}`: setting its host window", t.name))?;
        clients.push(c);
    }
    Ok(clients)
}

/// The run's note on its DMA link, if it has IO tenants.
pub(super) fn note(scenario: &Scenario, stretch: f64) -> Option<String> {
    let e = scenario.tenants.iter().find_map(|t| dma_engine(scenario, t))?;
    let live = live_bandwidth(scenario, e, stretch)?;
    let model = live * stretch;
    Some(format!(
        "IO tenants ran as isolad `dma` flows: each tenant a client holding a {} KiB host window in its \
         arena, its packets' transfers (real copies into and out of that shared memory) on `{}`, whose \
         link was paced to {:.1} MB/s (the scenario's {:.1} GB/s divided by the run's stretch); its \
         kernel on the processing units the calibrated stand-in; an io-write's data is the stand-in's \
         packet of the size drawn (its IPv4 and UDP headers included)",
        WINDOW >> 10,
        scenario.engines[e].name,
        live / 1e6,
        model / 1e9
    ))
}
