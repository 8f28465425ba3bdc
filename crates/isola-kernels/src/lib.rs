//! # isola-kernels
//!
//! Tenant-supplied WebAssembly packet kernels: the counterpart of OSMOSIS'
//! tenant-compiled kernel binaries, run to completion once per packet on a
//! processing-unit worker. A tenant hands Isola a WebAssembly module;
//! [`WasmKernel::load`] checks it against the host API ([`abi`], written
//! up in `docs/kernels.md`) and compiles it once, and [`WasmKernel::run`]
//! copies each packet into the module's own linear memory, calls its
//! `process` export under a fresh per-packet fuel budget (the watchdog: a
//! cycle limit) with its memory capped (the tenant's memory segment), and
//! hands back what the kernel asked for: an egress reply and DMA writes
//! into the tenant's host region ([`KernelOutput`]). One instance per
//! kernel lives across packets, so a kernel keeps its state in its own
//! memory; a kernel that fails mid-packet is stopped for that packet and
//! re-instantiated before the next one (see [`WasmKernel::run`]).
//!
//! ```
//! use isola_kernels::{KernelLimits, WasmKernel};
//!
//! // A kernel that replies with the packet (examples/kernels/echo.wat, cut
//! // down: packets land at address 0 of its one page).
//! let module = wat::parse_str(r#"
//!     (module
//!       (import "isola" "reply" (func $reply (param i32 i32)))
//!       (memory (export "memory") 1)
//!       (func (export "packet_buffer") (param i32) (result i32) (i32.const 0))
//!       (func (export "process") (param $ptr i32) (param $len i32) (result i32)
//!         (call $reply (local.get $ptr) (local.get $len))
//!         (i32.const 0)))
//! "#)?;
//! let mut kernel = WasmKernel::load(&module, KernelLimits::default())?;
//! let out = kernel.run(b"hello")?;
//! assert_eq!(out.reply.as_deref(), Some(&b"hello"[..]));
//! assert!(out.dma.is_empty() && out.fuel_used > 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What it must not do: trust the module. Every pointer and length the
//! kernel hands the host is checked against its memory, every byte of
//! output is counted against [`KernelLimits::max_output`], and neither a
//! hostile module nor a hostile packet may panic the host, loop it, or
//! make it allocate beyond the caps. It does not schedule, keep time, spawn
//! threads or perform the sends and DMA writes it reports: the daemon's
//! engines do, through the core, like every other task.
//!
//! ## Engine: wasmi, an interpreter, not wasmtime's JIT
//!
//! Measured on this project's 2-core machine (the method, both sittings
//! and the load are in `docs/perf.md`, "WebAssembly kernels: engine
//! choice"; `scripts/wasm_engines.sh` reproduces them):
//!
//! | | wasmi 2.0 (chosen) | wasmtime 48 (Cranelift) |
//! | --- | ---: | ---: |
//! | clean `cargo build` of the engine alone (dev) | 10-17 s | 156-217 s |
//! | echo kernel, 64 B / 1500 B packet | 0.20 / 0.24 µs | 0.05 / 0.08 µs |
//! | checksum kernel (a loop over the packet), 1500 B | 3.1 µs | 0.44 µs |
//! | loading a module | 7 µs (warm) to 0.24 ms | 1.4-2.8 ms |
//!
//! A packet kernel is short (a header rewrite, a counter, a lookup), so a
//! run is dominated by the calls into the engine and the packet copy, and
//! the JIT saves 0.15-0.25 µs of a per-packet path of several
//! microseconds; a kernel that loops over every byte pays the interpreter
//! about 7 times over. wasmtime's build would cost CI minutes on every run,
//! wasmi's costs seconds. wasmi's fuel metering is built in (1.5-8% of a
//! run), its store limits cap memory, and it generates no machine code at
//! run time. Nothing in this crate's API names the engine: a wasmtime
//! backend behind a feature is the upgrade path if tenants' kernels turn
//! out to be long.

#![warn(missing_docs)]

pub mod abi;
mod host;
mod kernel;

/// `docs/kernels.md`, whose Rust examples run as this crate's doctests
/// (its other blocks are `wat`, `toml`, `sh` and `text`: `isola-cli`'s
/// `kernel_docs` test runs the `isola kernel` ones and parses the
/// configuration).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/kernels.md")]
pub struct KernelsMd;

pub use kernel::WasmKernel;

/// The limits a tenant's kernel runs under, fixed when it is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelLimits {
    /// Fuel per packet: the watchdog (OSMOSIS' kernel cycle limit). wasmi
    /// charges one unit per WebAssembly operator executed (`block`,
    /// `loop`, `end`, `else`, `return`, `nop` and `drop` are free); a
    /// packet whose kernel spends more is stopped with
    /// [`KernelError::OutOfFuel`]. The budget covers both calls a packet
    /// makes (`packet_buffer` and `process`).
    pub fuel_per_packet: u64,
    /// The linear-memory cap in bytes: the tenant's memory segment. A
    /// module declaring more initial memory is refused at load; a
    /// `memory.grow` past it stops the packet with
    /// [`KernelError::MemoryCap`].
    pub memory_bytes: u64,
    /// The most bytes of output one packet may request: its reply and its
    /// DMA writes together ([`KernelError::OutputTooLarge`] past it).
    pub max_output: usize,
}

impl Default for KernelLimits {
    /// One million fuel (as many WebAssembly operators), 1 MiB of memory
    /// (16 pages) and 64 KiB of output per packet.
    fn default() -> Self {
        Self {
            fuel_per_packet: 1_000_000,
            memory_bytes: 1 << 20,
            max_output: 64 << 10,
        }
    }
}

/// What one packet's kernel asked the host to do. Nothing has been done
/// yet: the caller carries out the requests (through the core's egress and
/// DMA engines).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelOutput {
    /// An egress send request: the bytes of every `reply` call of this
    /// packet, concatenated in call order; `None` if the kernel never
    /// called `reply`.
    pub reply: Option<Vec<u8>>,
    /// DMA write requests into the tenant's host region, in call order:
    /// (offset in the region, bytes). The offset is the kernel's: the
    /// caller must check it against the region before writing.
    pub dma: Vec<(u64, Vec<u8>)>,
    /// The fuel this packet used (both calls): a count of WebAssembly
    /// operators executed, the kernel's cost in OSMOSIS' cycles, for the
    /// scheduler's accounting. Always 0 for an unmetered kernel.
    pub fuel_used: u64,
}

/// Why a kernel could not be loaded, or why one packet's run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// The packet used up its fuel: stopped by the watchdog.
    #[error("kernel ran out of fuel (limit {limit} per packet)")]
    OutOfFuel {
        /// The per-packet fuel limit it ran under.
        limit: u64,
    },
    /// The kernel trapped: an out-of-bounds access, `unreachable`, an
    /// integer division by zero, a stack overflow, and so on.
    #[error("kernel trapped: {0}")]
    Trap(String),
    /// The kernel's memory would exceed its cap: a `memory.grow` past it
    /// while running, or a module that declares more initial memory.
    #[error("kernel memory would exceed its cap of {cap} bytes")]
    MemoryCap {
        /// The cap, [`KernelLimits::memory_bytes`].
        cap: u64,
    },
    /// The module is not WebAssembly, fails validation, lacks an export
    /// of the host API, or imports something outside it.
    #[error("bad kernel module: {0}")]
    BadModule(String),
    /// The packet's reply and DMA writes together exceed
    /// [`KernelLimits::max_output`], or it made more than
    /// [`abi::MAX_DMA_WRITES`] DMA writes.
    #[error(
        "kernel output exceeds its limit of {limit} bytes (or {} DMA writes)",
        abi::MAX_DMA_WRITES
    )]
    OutputTooLarge {
        /// The output limit, [`KernelLimits::max_output`].
        limit: usize,
    },
    /// The kernel passed the host a range outside its linear memory (to
    /// `reply` or `dma_write`, or as the answer of `packet_buffer`).
    #[error("kernel passed a range outside its memory to {call}: ptr {ptr}, len {len}")]
    BadPointer {
        /// The host function or export involved.
        call: &'static str,
        /// The pointer, as the unsigned 32-bit address WebAssembly means.
        ptr: u32,
        /// The length, as an unsigned 32-bit count.
        len: u32,
    },
    /// The kernel asked for a DMA write at a negative host offset.
    #[error("kernel asked for a DMA write at negative offset {offset}")]
    BadDmaOffset {
        /// The offset it passed.
        offset: i64,
    },
    /// `process` returned this nonzero code: an error the kernel itself
    /// reported. Its requests for this packet are dropped; its instance
    /// is kept (it returned normally).
    #[error("kernel reported error code {code}")]
    KernelReported {
        /// The code `process` returned.
        code: i32,
    },
    /// The packet is larger than the kernel's memory cap (or than 2 GiB):
    /// it cannot be copied in. The kernel did not run.
    #[error("packet of {len} bytes does not fit a kernel memory of {cap} bytes")]
    PacketTooLarge {
        /// The packet's length.
        len: usize,
        /// The memory cap.
        cap: u64,
    },
}

impl KernelError {
    /// Whether this failure stopped the kernel mid-packet, so that its
    /// instance is replaced by a fresh one (its memory, and so its state,
    /// starts again from the module): every error except a kernel-reported
    /// code and a packet that never ran.
    pub fn restarts_kernel(&self) -> bool {
        !matches!(
            self,
            KernelError::KernelReported { .. }
                | KernelError::PacketTooLarge { .. }
                | KernelError::BadModule(_)
        )
    }
}

impl KernelError {
    /// A stable number for this kind of failure, for a tenant's event
    /// queue and the C API (the `detail` of `ISOLA_EVENT_KERNEL_ABORTED`
    /// in `include/isola.h`):
    /// 1 out of fuel, 2 trap, 3 memory cap, 4 bad module, 5 output too
    /// large, 6 bad pointer, 7 bad DMA offset, 8 kernel-reported code,
    /// 9 packet too large.
    pub fn code(&self) -> u32 {
        match self {
            KernelError::OutOfFuel { .. } => 1,
            KernelError::Trap(_) => 2,
            KernelError::MemoryCap { .. } => 3,
            KernelError::BadModule(_) => 4,
            KernelError::OutputTooLarge { .. } => 5,
            KernelError::BadPointer { .. } => 6,
            KernelError::BadDmaOffset { .. } => 7,
            KernelError::KernelReported { .. } => 8,
            KernelError::PacketTooLarge { .. } => 9,
        }
    }

    /// The name of this kind of failure, as `docs/kernels.md` writes it
    /// (`OutOfFuel`, `Trap`, `MemoryCap`, `BadModule`, `OutputTooLarge`,
    /// `BadPointer`, `BadDmaOffset`, `KernelReported`, `PacketTooLarge`):
    /// stable, like [`KernelError::code`].
    pub fn name(&self) -> &'static str {
        match self {
            KernelError::OutOfFuel { .. } => "OutOfFuel",
            KernelError::Trap(_) => "Trap",
            KernelError::MemoryCap { .. } => "MemoryCap",
            KernelError::BadModule(_) => "BadModule",
            KernelError::OutputTooLarge { .. } => "OutputTooLarge",
            KernelError::BadPointer { .. } => "BadPointer",
            KernelError::BadDmaOffset { .. } => "BadDmaOffset",
            KernelError::KernelReported { .. } => "KernelReported",
            KernelError::PacketTooLarge { .. } => "PacketTooLarge",
        }
    }
}

/// Bytes of the header [`KernelOutput::to_bytes`] writes: a flag, the
/// reply's length and the count of DMA writes.
const FRAME_HEADER: usize = 1 + 4 + 4;

impl KernelOutput {
    /// The output as one byte string (for drivers whose tasks answer with
    /// bytes, such as the runtime's operators): a flag byte (1: a reply
    /// follows), the reply's length (u32, little-endian), the number of
    /// DMA writes (u32), the reply, then each write as its offset (u64),
    /// length (u32) and bytes. `fuel_used` is not carried (the runtime
    /// measures a task's cost itself). [`KernelOutput::from_bytes`] reads
    /// it back.
    pub fn to_bytes(&self) -> Vec<u8> {
        let reply = self.reply.as_deref().unwrap_or_default();
        let dma_bytes: usize = self.dma.iter().map(|(_, b)| 12 + b.len()).sum();
        let mut out = Vec::with_capacity(FRAME_HEADER + reply.len() + dma_bytes);
        out.push(u8::from(self.reply.is_some()));
        // Both fit a u32: output is capped by `max_output` (a usize the
        // host checks against at most 2^31 bytes of kernel memory).
        out.extend_from_slice(&(reply.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.dma.len() as u32).to_le_bytes());
        out.extend_from_slice(reply);
        for (offset, bytes) in &self.dma {
            out.extend_from_slice(&offset.to_le_bytes());
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        out
    }

    /// Reads what [`KernelOutput::to_bytes`] wrote; `None` if `bytes` is
    /// not such an output (cut short, or with bytes left over).
    pub fn from_bytes(bytes: &[u8]) -> Option<KernelOutput> {
        let mut rest = bytes;
        let mut take = |n: usize| -> Option<&[u8]> {
            let (head, tail) = (rest.get(..n)?, rest.get(n..)?);
            rest = tail;
            Some(head)
        };
        let u32_at = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let has_reply = match take(1)?[0] {
            0 => false,
            1 => true,
            _ => return None,
        };
        let reply_len = u32_at(take(4)?);
        let writes = u32_at(take(4)?);
        let reply = take(reply_len)?.to_vec();
        if !has_reply && !reply.is_empty() {
            return None;
        }
        let mut dma = Vec::with_capacity(writes.min(abi::MAX_DMA_WRITES));
        for _ in 0..writes {
            let offset = u64::from_le_bytes(take(8)?.try_into().ok()?);
            let len = u32_at(take(4)?);
            dma.push((offset, take(len)?.to_vec()));
        }
        rest.is_empty().then_some(KernelOutput {
            reply: has_reply.then_some(reply),
            dma,
            fuel_used: 0,
        })
    }
}
