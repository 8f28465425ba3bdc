//! OSMOSIS' IO kernels on the packet path (Sec. 6.4, Figs. 12b and 13;
//! PsPIN's `iow` and `ior` handlers): a flow with `dma = "write"` or
//! `dma = "read"` moves each packet's bytes between the wire and its
//! tenant's host window through the daemon's DMA engine, "a target memory
//! location ... stored directly in the packet application header".
//!
//! - `dma = "write"`: the payload is an 8-byte address (big-endian) and
//!   then the data; the data is DMA-written into the window at that
//!   address. The task's output (the reply, if the flow replies) is the
//!   data written.
//! - `dma = "read"`: the payload is a request, an address (`u64`) and a
//!   length (`u32`), big-endian (12 bytes), perhaps followed by more; that
//!   many bytes DMA-read from the window at that address are the task's
//!   output, the reply.
//!
//! Each packet is one task of two stages, OSMOSIS' pipeline `pu -> axi`:
//! the flow's kernel on its engine (the handler's work on a processing
//! unit: it runs on the data of a write, on the bytes after a read's
//! request; its output is set aside), then the runtime's DMA stage on the
//! daemon's `kind = "dma"` engine into or out of the tenant's window, the
//! one DMA path `crate::host_write` also uses: scheduled by the engine's
//! policy, split into fragments of its `split` size. The header is
//! untrusted: it is read and checked against the window when the packet
//! is taken in, and a packet whose request is short, empty, longer than a
//! reply can carry ([`MAX_READ`]) or has no place in the window (or whose
//! tenant holds no window, or whose daemon has no DMA engine) is not run:
//! it is counted aborted and the tenant told `KernelAborted` (detail
//! `UNPLACED_WRITE`, or `TOO_LONG_READ`). A window withdrawn while the
//! task waits fails its DMA stage, checked before any byte is copied.

use crate::host_write::{dma_stage, placement, Placement, UNPLACED_WRITE};
use isola_ops::{OpError, Operator};
use isola_runtime::{Direction, Stage};
use std::sync::Arc;

/// Bytes of an io-write's header: the address.
pub const WRITE_HEADER: usize = 8;

/// Bytes of an io-read's request: the address and the length.
pub const READ_REQUEST: usize = 12;

/// The longest read: what one UDP reply over IPv4 carries.
pub const MAX_READ: u64 = 65_507;

/// Why an io-read was not run, as the tenant hears it (`KernelAborted`'s
/// detail: the code of `KernelError::OutputTooLarge`): it asked for more
/// than [`MAX_READ`] bytes.
pub const TOO_LONG_READ: u64 = 5;

/// One packet's transfer, as its header asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// First byte in the window.
    pub offset: u64,
    /// Bytes moved.
    pub len: u64,
    /// Where the kernel's input starts in the payload.
    pub body: usize,
}

/// Reads the header of a packet of a `direction` flow; the error is the
/// code the tenant is told.
pub fn parse(direction: Direction, payload: &[u8]) -> Result<Transfer, u64> {
    let u64_at = |at: usize| {
        payload
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_be_bytes)
    };
    let offset = u64_at(0).ok_or(UNPLACED_WRITE)?;
    let (len, body) = match direction {
        Direction::Write => ((payload.len() - WRITE_HEADER) as u64, WRITE_HEADER),
        Direction::Read => {
            let len = payload
                .get(8..READ_REQUEST)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_be_bytes)
                .ok_or(UNPLACED_WRITE)?;
            (u64::from(len), READ_REQUEST)
        }
    };
    if len == 0 {
        return Err(UNPLACED_WRITE);
    }
    if direction == Direction::Read && len > MAX_READ {
        return Err(TOO_LONG_READ);
    }
    Ok(Transfer { offset, len, body })
}

/// The stages of one packet of tenant `t`'s `direction` flow whose first
/// stage is `operator` (an [`IoStage`]): checked against the tenant's
/// window now. The error is the code the tenant is told.
pub(crate) fn stages(
    shared: &crate::Shared,
    t: usize,
    direction: Direction,
    operator: &Arc<dyn Operator>,
    payload: &[u8],
) -> Result<Vec<Stage>, u64> {
    let transfer = parse(direction, payload)?;
    match placement(shared, t, &[(transfer.offset, transfer.len)]) {
        Placement::Placed(engine) => Ok(vec![
            Stage::Run {
                operator: Arc::clone(operator),
                engine: None,
            },
            dma_stage(engine, direction, transfer.offset),
        ]),
        Placement::NoWindow | Placement::Unplaced => Err(UNPLACED_WRITE),
    }
}

/// The processing unit's stage of an IO flow's packet: the flow's kernel
/// on the packet's body (its output set aside), answering what the DMA
/// stage takes: a write's data, or as many bytes as a read asks (which
/// the read replaces with the window's). It carries the kernel's name, so
/// the kernel's engine serves it.
pub struct IoStage {
    kernel: Arc<dyn Operator>,
    direction: Direction,
}

impl IoStage {
    /// `kernel` on a `direction` flow's packets.
    pub fn new(kernel: Arc<dyn Operator>, direction: Direction) -> IoStage {
        IoStage { kernel, direction }
    }
}

impl Operator for IoStage {
    fn name(&self) -> &'static str {
        self.kernel.name()
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        let bad = |code| OpError::Input {
            op: self.kernel.name(),
            reason: format!("an IO request the packet path should have refused (code {code})"),
        };
        let transfer = parse(self.direction, input).map_err(bad)?;
        let body = input.get(transfer.body..).unwrap_or_default();
        self.kernel.run(body)?;
        Ok(match self.direction {
            Direction::Write => body.to_vec(),
            Direction::Read => vec![0; transfer.len as usize],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(addr: u64, tail: &[u8]) -> Vec<u8> {
        let mut p = addr.to_be_bytes().to_vec();
        p.extend_from_slice(tail);
        p
    }

    #[test]
    fn headers_are_read_big_endian_and_checked() {
        let w = request(0x0102, b"data");
        assert_eq!(
            parse(Direction::Write, &w),
            Ok(Transfer {
                offset: 0x0102,
                len: 4,
                body: 8
            })
        );
        let r = request(7, &300u32.to_be_bytes());
        assert_eq!(
            parse(Direction::Read, &r),
            Ok(Transfer {
                offset: 7,
                len: 300,
                body: 12
            })
        );
        // Short, empty, or longer than a reply: refused, never a panic.
        for short in [&[][..], &[1, 2, 3], &request(1, &[])[..]] {
            assert_eq!(parse(Direction::Write, short), Err(UNPLACED_WRITE));
        }
        assert_eq!(parse(Direction::Read, &request(1, &[0, 0])), Err(UNPLACED_WRITE));
        assert_eq!(parse(Direction::Read, &request(1, &[0; 4])), Err(UNPLACED_WRITE));
        let huge = request(0, &u32::MAX.to_be_bytes());
        assert_eq!(parse(Direction::Read, &huge), Err(TOO_LONG_READ));
    }
}
