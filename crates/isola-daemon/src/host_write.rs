//! Packet kernels' DMA writes into their tenants' host windows (OSMOSIS:
//! a kernel writes to host memory over PCIe through the DMA engine). The
//! window is arena memory a connection of the tenant set aside
//! (`Request::HostWindow`; the latest connection to set one holds it).
//! Each tenant's window is its host region to the runtime
//! ([`TenantWindow`], an `isola_runtime::HostRegion`), so a write is the
//! runtime's own DMA stage (`Stage::Dma`) on the daemon's `kind = "dma"`
//! engine: a task of the tenant, scheduled by the core like every other
//! (WRR by default), split into fragments of the engine's `split` size
//! (OSMOSIS' DMA fragmentation), each a copy into the shared memory at
//! its own offset. The tenant hears `HostWritten` when a write has landed.
//! IO flows (`crate::io_flow`) write and read through the same regions
//! and stages. A DMA engine with a `bandwidth` holds each copy until its
//! link would have carried it (OSMOSIS' AXI path to host memory).

use crate::connection::Conn;
use isola_runtime::{bounds, Direction, HostRegion, RegionError, Stage};
use std::sync::{Arc, Mutex, Weak};

/// Why a packet's DMA writes were not carried out, as the tenant hears it
/// (`KernelAborted`'s detail: the code of `KernelError::BadDmaOffset`).
pub(crate) const UNPLACED_WRITE: u64 = 7;

/// One tenant's window: the connection holding it, its first byte in
/// that connection's arena, and its length.
struct Window {
    conn: Weak<Conn>,
    start: u64,
    len: u64,
}

/// Every tenant seat's host window, if one is set, and the link to host
/// memory they are reached over.
#[derive(Default)]
pub(crate) struct HostWindows {
    seats: Vec<Mutex<Option<Window>>>,
    /// The DMA engine's link (`bandwidth`), ns per byte: a copy of `n`
    /// bytes takes at least `n` times it (none: as fast as memory copies).
    ns_per_byte: Option<f64>,
}

impl std::fmt::Debug for HostWindows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostWindows")
            .field("seats", &self.seats.len())
            .finish()
    }
}

impl HostWindows {
    /// No window yet for any of `seats` tenant seats, reached over a link
    /// of `bandwidth` bytes per second (none: unpaced).
    pub(crate) fn new(seats: usize, bandwidth: Option<f64>) -> HostWindows {
        HostWindows {
            seats: (0..seats).map(|_| Mutex::new(None)).collect(),
            ns_per_byte: bandwidth.map(|b| 1e9 / b),
        }
    }

    /// Holds a copy of `bytes` begun at `start` until the link has carried
    /// it: sleeps for most of a long wait, spins for the rest (a DMA
    /// engine's worker is busy while its link is).
    fn pace(&self, start: std::time::Instant, bytes: usize) {
        let Some(ns_per_byte) = self.ns_per_byte else {
            return;
        };
        let until = start + std::time::Duration::from_nanos((bytes as f64 * ns_per_byte) as u64);
        const SPIN: std::time::Duration = std::time::Duration::from_micros(100);
        loop {
            let now = std::time::Instant::now();
            let Some(left) = until.checked_duration_since(now).filter(|l| !l.is_zero()) else {
                return;
            };
            if left > 2 * SPIN {
                std::thread::sleep(left - SPIN);
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Tenant `t`'s window becomes `conn`'s arena bytes `start..start +
    /// len` (checked against the arena by the caller); `len` 0 withdraws
    /// it if `conn` holds it.
    pub(crate) fn set(&self, t: usize, conn: &Arc<Conn>, start: u64, len: u64) {
        let Some(Ok(mut seat)) = self.seats.get(t).map(Mutex::lock) else {
            return;
        };
        if len > 0 {
            *seat = Some(Window {
                conn: Arc::downgrade(conn),
                start,
                len,
            });
        } else if seat
            .as_ref()
            .is_some_and(|w| std::ptr::eq(w.conn.as_ptr(), Arc::as_ptr(conn)))
        {
            *seat = None;
        }
    }

    /// Tenant seat `t` has no window any more (it is vacated: a tenant
    /// added to the seat later must not write to this one's memory).
    pub(crate) fn clear(&self, t: usize) {
        if let Some(Ok(mut seat)) = self.seats.get(t).map(Mutex::lock) {
            *seat = None;
        }
    }

    /// Tenant `t`'s window now: its connection (still open) and place.
    fn current(&self, t: usize) -> Option<(Arc<Conn>, u64, u64)> {
        let seat = self.seats.get(t)?.lock().ok()?;
        let w = seat.as_ref()?;
        Some((w.conn.upgrade()?, w.start, w.len))
    }
}

/// Tenant `tenant`'s host region as the runtime's DMA engine sees it: its
/// window now (none: a region of 0 bytes, which no write fits).
#[derive(Debug)]
pub(crate) struct TenantWindow {
    pub(crate) windows: Arc<HostWindows>,
    pub(crate) tenant: usize,
}

impl TenantWindow {
    /// The arena offset of `offset..offset + len` in the window, and its
    /// connection.
    fn place(&self, offset: u64, len: u64) -> Result<(Arc<Conn>, u64), RegionError> {
        let (conn, start, size) = self
            .windows
            .current(self.tenant)
            .ok_or(RegionError::OutOfBounds {
                offset,
                len,
                region: 0,
            })?;
        let range = bounds(offset, len, size)?;
        // Inside the window, which lies inside the arena: no overflow.
        Ok((conn, start + range.start as u64))
    }
}

impl HostRegion for TenantWindow {
    fn len(&self) -> u64 {
        self.windows.current(self.tenant).map_or(0, |(_, _, len)| len)
    }

    fn write_at(&self, offset: u64, bytes: &[u8]) -> Result<(), RegionError> {
        let start = std::time::Instant::now();
        let (conn, at) = self.place(offset, bytes.len() as u64)?;
        conn.region
            .write_arena(at, bytes)
            .map_err(|e| RegionError::Unusable(e.to_string()))?;
        self.windows.pace(start, bytes.len());
        Ok(())
    }

    fn read_at(&self, offset: u64, into: &mut [u8]) -> Result<(), RegionError> {
        let start = std::time::Instant::now();
        let (conn, at) = self.place(offset, into.len() as u64)?;
        let bytes = conn
            .region
            .read_arena(at, into.len() as u64)
            .map_err(|e| RegionError::Unusable(e.to_string()))?;
        into.copy_from_slice(&bytes);
        self.windows.pace(start, into.len());
        Ok(())
    }
}

/// Where a packet's DMA transfers stand against its tenant's window.
pub(crate) enum Placement {
    /// Every transfer fits the window; this is the daemon's DMA engine.
    Placed(isola_core::EngineId),
    /// The tenant has no window (no connection of it holds one).
    NoWindow,
    /// A transfer lies outside the window, or the daemon has no DMA
    /// engine: none may be made.
    Unplaced,
}

/// Checks transfers `spans` (offset, length in the window) of tenant
/// `t`'s packet against its window now and the daemon's DMA engine.
pub(crate) fn placement(shared: &crate::Shared, t: usize, spans: &[(u64, u64)]) -> Placement {
    let Some((_, _, window)) = shared.host_windows.current(t) else {
        return Placement::NoWindow;
    };
    let fits = spans
        .iter()
        .all(|&(offset, len)| bounds(offset, len, window).is_ok());
    match (fits, shared.engine_of(isola_core::EngineKind::Dma)) {
        (true, Some(engine)) => Placement::Placed(engine),
        _ => Placement::Unplaced,
    }
}

/// The runtime's DMA stage on `engine`: a transfer `direction` at
/// `offset` in the tenant's window.
pub(crate) fn dma_stage(engine: isola_core::EngineId, direction: Direction, offset: u64) -> Stage {
    Stage::Dma {
        engine,
        direction,
        offset,
    }
}

/// Carries out the DMA writes packet kernel `flow` of tenant `t` asked
/// for: each the runtime's DMA stage on the daemon's DMA engine, the
/// tenant told `HostWritten` as each lands (or `ChannelFull` if the core
/// refused it). A tenant with no connection holding a host window has no
/// host memory to write to, and no one to tell: its writes are discarded
/// and the packet goes on. Otherwise all are checked first
/// ([`placement`]): if one has no place (past the window's end, or no DMA
/// engine), none is made and this answers `false`: the caller aborts the
/// packet with [`UNPLACED_WRITE`] (`Shared::packet_aborted`).
pub(crate) fn carry_out(
    shared: &Arc<crate::Shared>,
    t: usize,
    flow: u64,
    writes: Vec<(u64, Vec<u8>)>,
) -> bool {
    use isola_wire::EventKind;
    if writes.is_empty() {
        return true;
    }
    let spans: Vec<(u64, u64)> = writes.iter().map(|(o, b)| (*o, b.len() as u64)).collect();
    let engine = match placement(shared, t, &spans) {
        Placement::Placed(engine) => engine,
        Placement::NoWindow => return true,
        Placement::Unplaced => return false,
    };
    // Each write waits in its packet's own flow queue.
    let handle = shared
        .runtime
        .tenant(isola_core::TenantId(t as u32))
        .in_flow(flow as u32);
    for (offset, bytes) in writes {
        let len = bytes.len() as u64;
        let told = Arc::clone(shared);
        let on_done: isola_runtime::OnCompletion = Arc::new(move |c| {
            match &c.result {
                Ok(_) => told.tell_tenant_of(t, EventKind::HostWritten, offset, len),
                Err(isola_runtime::TaskError::Rejected(_)) => {
                    told.tell_tenant_of(t, EventKind::ChannelFull, flow, 0)
                }
                Err(_) => told.tell_tenant_of(t, EventKind::KernelAborted, flow, UNPLACED_WRITE),
            }
            told.settle_packet_task(&c);
        });
        let write = vec![dma_stage(engine, Direction::Write, offset)];
        if handle.submit_stages_calling(write, bytes, on_done).is_err() {
            shared.tell_tenant_of(t, EventKind::KernelAborted, flow, UNPLACED_WRITE);
        }
    }
    true
}
