//! The host's side of the kernel ABI: the per-instance state a store
//! carries, the resource limiter that enforces the memory cap, the host
//! functions a kernel imports, and the checks of every range a kernel
//! hands over.
//!
//! A host function that refuses a request records the typed
//! [`KernelError`] in [`HostState::fault`] and traps the kernel with a
//! plain wasmi error; the caller of the kernel takes the recorded fault
//! first, so the typed reason is never lost in wasmi's error type.

use std::ops::Range;

use wasmi::{Caller, Linker, Memory, ResourceLimiter};
use wasmi_core::LimiterError;

use crate::abi::{self, MAX_DMA_WRITES, MAX_TABLE_ELEMENTS};
use crate::{KernelError, KernelLimits};

/// What a kernel's store carries: its limits, the requests of the packet
/// being run, and the fault that stopped it, if the host stopped it.
#[derive(Debug)]
pub(crate) struct HostState {
    /// The limits it was loaded with.
    pub(crate) limits: KernelLimits,
    /// The instance's memory, once instantiated (host calls need it).
    pub(crate) memory: Option<Memory>,
    /// The reply requested so far in this packet.
    pub(crate) reply: Option<Vec<u8>>,
    /// The DMA writes requested so far in this packet.
    pub(crate) dma: Vec<(u64, Vec<u8>)>,
    /// Output bytes requested so far in this packet (reply and DMA).
    pub(crate) output_bytes: usize,
    /// Why the host stopped the kernel, if it did.
    pub(crate) fault: Option<KernelError>,
}

impl HostState {
    /// A fresh state for a new instance.
    pub(crate) fn new(limits: KernelLimits) -> Self {
        Self {
            limits,
            memory: None,
            reply: None,
            dma: Vec::new(),
            output_bytes: 0,
            fault: None,
        }
    }

    /// Forgets the previous packet's requests and fault.
    pub(crate) fn start_packet(&mut self) {
        self.reply = None;
        self.dma = Vec::new();
        self.output_bytes = 0;
        self.fault = None;
    }

    /// Counts `len` more output bytes against the limit.
    fn charge_output(&mut self, len: usize) -> Result<(), KernelError> {
        let total = self.output_bytes.saturating_add(len);
        if total > self.limits.max_output {
            return Err(KernelError::OutputTooLarge {
                limit: self.limits.max_output,
            });
        }
        self.output_bytes = total;
        Ok(())
    }

    /// `reply(ptr, len)`: appends the bytes to the reply.
    fn reply(&mut self, memory: &[u8], ptr: i32, len: i32) -> Result<(), KernelError> {
        let range = checked_range(memory.len(), abi::REPLY, ptr, len)?;
        self.charge_output(range.len())?;
        self.reply
            .get_or_insert_with(Vec::new)
            .extend_from_slice(&memory[range]);
        Ok(())
    }

    /// `dma_write(host_offset, ptr, len)`: records a DMA write request.
    fn dma_write(&mut self, memory: &[u8], host_offset: i64, ptr: i32, len: i32) -> Result<(), KernelError> {
        let range = checked_range(memory.len(), abi::DMA_WRITE, ptr, len)?;
        let offset =
            u64::try_from(host_offset).map_err(|_| KernelError::BadDmaOffset { offset: host_offset })?;
        if self.dma.len() >= MAX_DMA_WRITES {
            return Err(KernelError::OutputTooLarge {
                limit: self.limits.max_output,
            });
        }
        self.charge_output(range.len())?;
        self.dma.push((offset, memory[range].to_vec()));
        Ok(())
    }
}

/// The range `ptr..ptr+len` of a memory of `memory_len` bytes, both read
/// as unsigned 32-bit values, or [`KernelError::BadPointer`] if any of it
/// lies outside.
pub(crate) fn checked_range(
    memory_len: usize,
    call: &'static str,
    ptr: i32,
    len: i32,
) -> Result<Range<usize>, KernelError> {
    // WebAssembly addresses and sizes are unsigned 32-bit: reinterpret.
    let (ptr, len) = (ptr as u32, len as u32);
    let bad = KernelError::BadPointer { call, ptr, len };
    let start = usize::try_from(ptr).map_err(|_| bad.clone())?;
    let end = start
        .checked_add(usize::try_from(len).map_err(|_| bad.clone())?)
        .ok_or_else(|| bad.clone())?;
    if end > memory_len {
        return Err(bad);
    }
    Ok(start..end)
}

impl ResourceLimiter for HostState {
    /// The memory cap: growth past it traps, and the packet fails with
    /// [`KernelError::MemoryCap`]; growth past the module's own declared
    /// maximum fails the WebAssembly way (`memory.grow` returns -1).
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> Result<bool, LimiterError> {
        if u64::try_from(desired).map_or(true, |d| d > self.limits.memory_bytes) {
            self.fault = Some(KernelError::MemoryCap {
                cap: self.limits.memory_bytes,
            });
            return Err(LimiterError::ResourceLimiterDeniedAllocation);
        }
        Ok(maximum.is_none_or(|max| desired <= max))
    }

    /// Tables: at most [`MAX_TABLE_ELEMENTS`] elements; more fails the
    /// WebAssembly way (`table.grow` returns -1, an instantiation fails).
    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> Result<bool, LimiterError> {
        Ok(desired <= MAX_TABLE_ELEMENTS && maximum.is_none_or(|max| desired <= max))
    }

    fn instances(&self) -> usize {
        1
    }

    fn tables(&self) -> usize {
        // Reference types allow several tables; a few are plenty.
        4
    }

    fn memories(&self) -> usize {
        1
    }
}

/// Records `fault` and answers with the trap that stops the kernel.
fn stop(state: &mut HostState, fault: KernelError) -> wasmi::Error {
    let message = fault.to_string();
    state.fault = Some(fault);
    wasmi::Error::new(message)
}

/// Defines the host functions of [`abi::HOST_MODULE`] in `linker`.
pub(crate) fn define_host_functions(linker: &mut Linker<HostState>) -> Result<(), KernelError> {
    let internal = |e: wasmi::errors::LinkerError| KernelError::BadModule(e.to_string());
    linker
        .func_wrap(
            abi::HOST_MODULE,
            abi::REPLY,
            |mut caller: Caller<'_, HostState>, ptr: i32, len: i32| -> Result<(), wasmi::Error> {
                let Some(memory) = caller.data().memory else {
                    let state = caller.data_mut();
                    return Err(stop(state, KernelError::Trap("no memory".into())));
                };
                let (bytes, state) = memory.data_and_store_mut(&mut caller);
                state.reply(bytes, ptr, len).map_err(|e| stop(state, e))
            },
        )
        .map_err(internal)?;
    linker
        .func_wrap(
            abi::HOST_MODULE,
            abi::DMA_WRITE,
            |mut caller: Caller<'_, HostState>,
             host_offset: i64,
             ptr: i32,
             len: i32|
             -> Result<(), wasmi::Error> {
                let Some(memory) = caller.data().memory else {
                    let state = caller.data_mut();
                    return Err(stop(state, KernelError::Trap("no memory".into())));
                };
                let (bytes, state) = memory.data_and_store_mut(&mut caller);
                state
                    .dma_write(bytes, host_offset, ptr, len)
                    .map_err(|e| stop(state, e))
            },
        )
        .map_err(internal)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked_as_unsigned_32_bit() {
        assert_eq!(checked_range(100, "t", 0, 100).unwrap(), 0..100);
        assert_eq!(checked_range(100, "t", 100, 0).unwrap(), 100..100);
        assert!(checked_range(100, "t", 1, 100).is_err());
        assert!(checked_range(100, "t", 101, 0).is_err());
        assert!(checked_range(100, "t", -1, 1).is_err());
        assert!(checked_range(100, "t", 0, -1).is_err());
        assert!(checked_range(usize::MAX, "t", -1, -1).is_ok_and(|r| r.len() == u32::MAX as usize));
    }

    #[test]
    fn output_is_counted_across_reply_and_dma() {
        let limits = KernelLimits {
            max_output: 10,
            ..KernelLimits::default()
        };
        let mut state = HostState::new(limits);
        let memory = [7u8; 32];
        state.reply(&memory, 0, 6).unwrap();
        state.dma_write(&memory, 0, 0, 4).unwrap();
        assert_eq!(
            state.dma_write(&memory, 0, 0, 1),
            Err(KernelError::OutputTooLarge { limit: 10 })
        );
        assert_eq!(
            state.dma_write(&memory, -1, 0, 0),
            Err(KernelError::BadDmaOffset { offset: -1 })
        );
    }

    #[test]
    fn dma_write_count_is_bounded() {
        let mut state = HostState::new(KernelLimits::default());
        for _ in 0..MAX_DMA_WRITES {
            state.dma_write(&[], 0, 0, 0).unwrap();
        }
        assert!(matches!(
            state.dma_write(&[], 0, 0, 0),
            Err(KernelError::OutputTooLarge { .. })
        ));
    }
}
