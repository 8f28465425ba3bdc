//! The live DMA engine's work: a packet kernel's DMA write into its
//! tenant's host window (OSMOSIS: a kernel writes to host memory over
//! PCIe through the DMA engine). The window is arena memory a connection
//! of the tenant set aside (`Request::HostWindow`); a write is a task of
//! the tenant on the daemon's `kind = "dma"` engine, scheduled by the
//! core like every other task (WRR by default) and split by it into
//! fragments of the engine's `split` size (OSMOSIS' DMA fragmentation),
//! each fragment a real copy into the shared memory at its own offset.
//! The tenant hears `HostWritten` when the whole write has landed.

use crate::connection::Conn;
use isola_core::{Subtask, TaskId};
use isola_ops::operator::part_slice;
use isola_ops::{Carry, OpError, Operator, Splitter};
use std::sync::Arc;

/// The operator name of a DMA write: a `kind = "dma"` engine serves it.
pub const HOST_WRITE_OPERATOR: &str = "host-write";

/// One DMA write: its bytes go to the arena of `conn` at `at` onward
/// (already checked to lie inside the connection's host window).
pub(crate) struct HostWrite {
    conn: Arc<Conn>,
    at: u64,
}

/// Why a write cannot go where a kernel asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HostWriteError {
    /// No connection of the tenant has set a host window.
    #[error("the tenant has no host window (a connection sets one with host_window)")]
    NoWindow,
    /// The write reaches past the window's end.
    #[error("a DMA write of {len} bytes at {offset} reaches past the host window of {window} bytes")]
    OutsideWindow {
        /// The kernel's host offset.
        offset: u64,
        /// The write's length.
        len: u64,
        /// The window's length.
        window: u64,
    },
}

impl HostWrite {
    /// A write of `len` bytes at host offset `offset` into `conn`'s window
    /// (`window`: its arena offset and length), or why it cannot be.
    pub(crate) fn new(
        conn: Arc<Conn>,
        window: (u64, u64),
        offset: u64,
        len: u64,
    ) -> Result<HostWrite, HostWriteError> {
        let (start, size) = window;
        match offset.checked_add(len) {
            Some(end) if end <= size => Ok(HostWrite {
                conn,
                // Inside the window, which lies inside the arena: no overflow.
                at: start + offset,
            }),
            _ => Err(HostWriteError::OutsideWindow {
                offset,
                len,
                window: size,
            }),
        }
    }

    /// Copies `bytes` to `at + from` in the arena.
    fn copy(&self, from: u64, bytes: &[u8]) -> Result<(), OpError> {
        self.conn
            .region
            .write_arena(self.at + from, bytes)
            .map_err(|e| OpError::Input {
                op: HOST_WRITE_OPERATOR,
                reason: e.to_string(),
            })
    }
}

impl Operator for HostWrite {
    fn name(&self) -> &'static str {
        HOST_WRITE_OPERATOR
    }

    /// The whole write at once; the answer is empty.
    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        self.copy(0, input)?;
        Ok(Vec::new())
    }

    fn splitter(&self) -> Option<&dyn Splitter> {
        Some(self)
    }
}

impl Splitter for HostWrite {
    /// Fragments land independently, each at its own offset.
    fn ordered(&self) -> bool {
        false
    }

    fn plan(&self, task: TaskId, len: usize, chunk: usize) -> Result<Vec<Subtask>, OpError> {
        Ok(Subtask::ranges(task, len as u64, chunk as u64, false))
    }

    /// One fragment: its bytes, copied to their place.
    fn run_part(&self, part: &Subtask, input: &[u8], _: Option<Carry>) -> Result<Carry, OpError> {
        self.copy(part.offset, part_slice(part, input))?;
        Ok(Box::new(()))
    }

    fn reassemble(&self, _: usize, _: Vec<Carry>) -> Result<Vec<u8>, OpError> {
        Ok(Vec::new())
    }
}

/// Why a packet's DMA writes were not carried out, as the tenant hears it
/// (`KernelAborted`'s detail: the code of `KernelError::BadDmaOffset`).
pub(crate) const UNPLACED_WRITE: u64 = 7;

/// Carries out the DMA writes packet kernel `flow` of tenant `t` asked
/// for: each a task of the tenant on the daemon's DMA engine, the tenant
/// told `HostWritten` as each lands (or `ChannelFull` if the core refused
/// it). A tenant with no connection holding a host window has no host
/// memory to write to, and no one to tell: its writes are discarded and
/// the packet goes on. Otherwise all are placed first: if one has no
/// place (past the window's end, or no DMA engine), none is made, the
/// tenant is told `KernelAborted` with [`UNPLACED_WRITE`], and this
/// answers `false` (the packet is aborted).
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
    let placed: Result<Vec<(HostWrite, u64, Vec<u8>)>, HostWriteError> = writes
        .into_iter()
        .map(|(offset, bytes)| {
            let write = shared.host_write(t, offset, bytes.len() as u64)?;
            Ok((write, offset, bytes))
        })
        .collect();
    let placed = match placed {
        Err(HostWriteError::NoWindow) => return true,
        placed => placed.ok(),
    };
    let handle = shared.dma_engine().and_then(|e| {
        shared
            .runtime
            .tenant(isola_core::TenantId(t as u32))
            .on_engine(e)
            .ok()
    });
    let (Some(placed), Some(handle)) = (placed, handle) else {
        shared.tell_tenant_of(t, EventKind::KernelAborted, flow, UNPLACED_WRITE);
        return false;
    };
    for (write, offset, bytes) in placed {
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
            told.keep(&c);
        });
        if handle
            .submit_operator_calling(Arc::new(write), bytes, on_done)
            .is_err()
        {
            shared.tell_tenant_of(t, EventKind::KernelAborted, flow, UNPLACED_WRITE);
        }
    }
    true
}
