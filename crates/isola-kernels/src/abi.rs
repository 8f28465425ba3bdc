//! The host API a kernel module is written against (`docs/kernels.md`
//! explains it with an example).
//!
//! A kernel module exports:
//!
//! | export | type | meaning |
//! | --- | --- | --- |
//! | [`MEMORY`] | memory | its linear memory (one, 32-bit, at most the cap) |
//! | [`PACKET_BUFFER`] | `(len: i32) -> i32` | where in its memory the host should copy a packet of `len` bytes |
//! | [`PROCESS`] | `(ptr: i32, len: i32) -> i32` | handle the packet at `ptr..ptr+len`; return 0, or a nonzero error code of its own |
//!
//! and may import, from module [`HOST_MODULE`] (`"isola"`), only:
//!
//! | import | type | meaning |
//! | --- | --- | --- |
//! | [`REPLY`] | `(ptr: i32, len: i32)` | append `len` bytes at `ptr` to this packet's egress reply |
//! | [`DMA_WRITE`] | `(host_offset: i64, ptr: i32, len: i32)` | request a DMA write of `len` bytes at `ptr` to `host_offset` in the tenant's host region |
//!
//! Pointers and lengths are unsigned 32-bit values (as WebAssembly
//! addresses are); the host copies the bytes when the call is made, so the
//! kernel may reuse its buffers at once. A module may not have a start
//! function, import anything else (no memory, table, global or other
//! function), or use 64-bit memory, several memories or SIMD.

use wasmi::ValType;

/// The import module name of the host functions.
pub const HOST_MODULE: &str = "isola";
/// Host function: append bytes to the packet's egress reply.
pub const REPLY: &str = "reply";
/// Host function: request a DMA write into the tenant's host region.
pub const DMA_WRITE: &str = "dma_write";
/// Export: the kernel's linear memory.
pub const MEMORY: &str = "memory";
/// Export: where the host copies the next packet.
pub const PACKET_BUFFER: &str = "packet_buffer";
/// Export: the per-packet entry point.
pub const PROCESS: &str = "process";

/// The most DMA write requests one packet may make (past it the packet
/// fails with [`crate::KernelError::OutputTooLarge`]): bounds the host's
/// bookkeeping for requests of zero bytes, which `max_output` does not.
pub const MAX_DMA_WRITES: usize = 64;
/// The most table elements a kernel may hold (function tables for
/// indirect calls); growing or declaring more fails.
pub const MAX_TABLE_ELEMENTS: usize = 10_000;
/// The deepest WebAssembly call nesting a kernel may reach before it traps
/// with a stack overflow.
pub const MAX_RECURSION_DEPTH: usize = 512;
/// The most interpreter stack slots (8 bytes each) a kernel may use: its
/// stack lives outside the capped linear memory, so it is bounded here.
pub const MAX_STACK_SLOTS: usize = 64 * 1024;

/// The parameter and result types of each host import, by name.
pub(crate) fn import_signature(name: &str) -> Option<(&'static [ValType], &'static [ValType])> {
    match name {
        REPLY => Some((&[ValType::I32, ValType::I32], &[])),
        DMA_WRITE => Some((&[ValType::I64, ValType::I32, ValType::I32], &[])),
        _ => None,
    }
}

/// The parameter and result types of each required function export.
pub(crate) const FUNCTION_EXPORTS: [(&str, &[ValType], &[ValType]); 2] = [
    (PACKET_BUFFER, &[ValType::I32], &[ValType::I32]),
    (PROCESS, &[ValType::I32, ValType::I32], &[ValType::I32]),
];
