//! [`WasmKernel`]: one tenant kernel, loaded and checked once, run per
//! packet.

use wasmi::{
    CompilationMode, Config, EnforcedLimits, Engine, ExternType, Linker, Memory, Module, ResourceLimiter,
    Store, TrapCode, TypedFunc,
};

use crate::abi::{self, MAX_RECURSION_DEPTH, MAX_STACK_SLOTS};
use crate::host::{self, HostState};
use crate::{KernelError, KernelLimits, KernelOutput};

/// WebAssembly's page size (custom page sizes are off).
const PAGE_BYTES: u64 = 64 * 1024;

/// A tenant's WebAssembly kernel: a compiled module and the one live
/// instance that serves its packets, in order, keeping its state in its
/// own linear memory between them.
///
/// It is `Send` (not `Sync`): it lives on one worker thread at a time and
/// runs one packet at a time (`run` takes `&mut self`).
pub struct WasmKernel {
    module: Module,
    linker: Linker<HostState>,
    limits: KernelLimits,
    metered: bool,
    /// The instance serving packets; `None` after a failed re-instantiation.
    live: Option<Live>,
    restarts: u64,
}

impl std::fmt::Debug for WasmKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmKernel")
            .field("limits", &self.limits)
            .field("metered", &self.metered)
            .field("live", &self.live.is_some())
            .field("restarts", &self.restarts)
            .finish_non_exhaustive()
    }
}

/// An instance and the handles a packet needs.
struct Live {
    store: Store<HostState>,
    memory: Memory,
    packet_buffer: TypedFunc<i32, i32>,
    process: TypedFunc<(i32, i32), i32>,
}

impl WasmKernel {
    /// Checks `module` (WebAssembly binary) against the host API
    /// ([`abi`]) and `limits`, compiles it, and instantiates it.
    ///
    /// Refused as [`KernelError::BadModule`]: bytes that are not valid
    /// WebAssembly (or use a proposal that is off: 64-bit or several
    /// memories, SIMD, custom page sizes), a start function, an import
    /// other than the host functions with their exact types, a missing or
    /// mistyped export. Refused as [`KernelError::MemoryCap`]: a memory
    /// whose declared initial size is above `limits.memory_bytes`.
    /// Nothing of the module runs here.
    pub fn load(module: &[u8], limits: KernelLimits) -> Result<WasmKernel, KernelError> {
        Self::load_with(module, limits, true)
    }

    /// [`load`](Self::load) without fuel metering: no watchdog, so a
    /// kernel loaded this way can loop forever and
    /// [`KernelOutput::fuel_used`] is always 0. For measuring what
    /// metering costs, and for kernels the operator trusts; never for a
    /// tenant's.
    pub fn load_unmetered(module: &[u8], limits: KernelLimits) -> Result<WasmKernel, KernelError> {
        Self::load_with(module, limits, false)
    }

    fn load_with(module: &[u8], limits: KernelLimits, metered: bool) -> Result<WasmKernel, KernelError> {
        let mut config = Config::default();
        config
            .consume_fuel(metered)
            // Compile every function now: errors at load, not mid-packet,
            // and no translation cost charged to a packet.
            .compilation_mode(CompilationMode::Eager)
            // Limits on the module's shape, for modules from anyone.
            .enforced_limits(EnforcedLimits::strict())
            .allow_start_fn(false)
            .wasm_multi_memory(false)
            .wasm_custom_page_sizes(false)
            .set_max_recursion_depth(MAX_RECURSION_DEPTH)
            .set_max_stack_height(MAX_STACK_SLOTS);
        let engine = Engine::new(&config);
        // wasmi 2.0.0's translator panics on some malformed function
        // bodies that its validator lets through (an `assert!` on an
        // empty control stack, found by `tests/hostile.rs`): a tenant's
        // module must not take the daemon down, so a panic while
        // translating or instantiating is a refusal of the module.
        let module = contained("translating it", || Module::new(&engine, module))?
            .map_err(|e| KernelError::BadModule(e.to_string()))?;
        check_module(&module, &limits)?;
        let mut linker = Linker::new(&engine);
        host::define_host_functions(&mut linker)?;
        let live = contained("instantiating it", || {
            instantiate(&engine, &module, &linker, limits)
        })??;
        Ok(WasmKernel {
            module,
            linker,
            limits,
            metered,
            live: Some(live),
            restarts: 0,
        })
    }

    /// The limits it was loaded with.
    pub fn limits(&self) -> KernelLimits {
        self.limits
    }

    /// How many times a failed packet has replaced the instance with a
    /// fresh one.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// Runs one packet: asks the kernel where to put it
    /// (`packet_buffer(len)`), checks that range against its memory,
    /// copies the packet there and calls `process(ptr, len)`, both under
    /// one fresh budget of [`KernelLimits::fuel_per_packet`].
    ///
    /// On success, hands back the requests the kernel made. On failure
    /// the kernel's requests for this packet are dropped; if the failure
    /// stopped the kernel mid-packet ([`KernelError::restarts_kernel`]:
    /// out of fuel, a trap, the memory cap, a bad range, too much output),
    /// its instance is replaced by a fresh one from the module before this
    /// returns, since a kernel interrupted at an arbitrary instruction may
    /// have left its state half-updated: its counters and tables start
    /// again, and the next packet is served normally. A kernel that
    /// returns a nonzero code keeps its instance. Never panics, whatever
    /// the module or the packet.
    pub fn run(&mut self, packet: &[u8]) -> Result<KernelOutput, KernelError> {
        let too_large = KernelError::PacketTooLarge {
            len: packet.len(),
            cap: self.limits.memory_bytes,
        };
        if u64::try_from(packet.len()).map_or(true, |len| len > self.limits.memory_bytes) {
            return Err(too_large);
        }
        let len = i32::try_from(packet.len()).map_err(|_| too_large)?;
        if self.live.is_none() {
            // The re-instantiation after a failure failed (it cannot for a
            // module that instantiated once; kept for safety): try again.
            self.live = Some(self.fresh_instance()?);
        }
        let Some(live) = self.live.as_mut() else {
            return Err(KernelError::BadModule("no live instance".into()));
        };
        let metered = self.metered;
        // A panic inside the engine while running (none is known; see
        // `load_with`) stops this packet like a trap and replaces the
        // instance, whose state it may have left half-made.
        let result = contained("running it", || run_packet(live, packet, len, metered))
            .map_err(|e| KernelError::Trap(e.to_string()))
            .and_then(|r| r);
        if let Err(e) = &result {
            if e.restarts_kernel() {
                self.restarts += 1;
                self.live = None;
                self.live = self.fresh_instance().ok();
            }
        }
        result
    }

    fn fresh_instance(&self) -> Result<Live, KernelError> {
        contained("instantiating it", || {
            instantiate(self.module.engine(), &self.module, &self.linker, self.limits)
        })?
    }
}

/// Runs `f`, turning a panic inside the WebAssembly engine into
/// [`KernelError::BadModule`] naming `what` the engine was doing. The
/// closure's state is thrown away or rebuilt by every caller after a
/// panic, hence the `AssertUnwindSafe`.
fn contained<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, KernelError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        KernelError::BadModule(format!("the WebAssembly engine failed {what}: {message}"))
    })
}

/// Checks the module's imports and exports against the host API and its
/// declared memory against the cap.
fn check_module(module: &Module, limits: &KernelLimits) -> Result<(), KernelError> {
    for import in module.imports() {
        let (m, name) = (import.module(), import.name());
        let outside = || KernelError::BadModule(format!("import `{m}`.`{name}` is outside the host API"));
        if m != abi::HOST_MODULE {
            return Err(outside());
        }
        let Some((params, results)) = abi::import_signature(name) else {
            return Err(outside());
        };
        match import.ty() {
            ExternType::Func(f) if f.params() == params && f.results() == results => {}
            _ => {
                return Err(KernelError::BadModule(format!(
                    "import `{m}`.`{name}` has the wrong type (see docs/kernels.md)"
                )))
            }
        }
    }
    match module.get_export(abi::MEMORY) {
        Some(ExternType::Memory(ty)) if ty.is_64() => {
            return Err(KernelError::BadModule("64-bit memory is not allowed".into()))
        }
        Some(ExternType::Memory(ty)) => {
            let initial = ty.minimum().saturating_mul(PAGE_BYTES);
            if initial > limits.memory_bytes {
                return Err(KernelError::MemoryCap {
                    cap: limits.memory_bytes,
                });
            }
        }
        _ => {
            return Err(KernelError::BadModule(format!(
                "no memory exported as `{}`",
                abi::MEMORY
            )))
        }
    }
    for (name, params, results) in abi::FUNCTION_EXPORTS {
        match module.get_export(name) {
            Some(ExternType::Func(f)) if f.params() == params && f.results() == results => {}
            _ => {
                return Err(KernelError::BadModule(format!(
                    "no function `{name}` of type ({params:?}) -> ({results:?}) exported"
                )))
            }
        }
    }
    Ok(())
}

/// A new store and instance of `module`, its handles looked up once.
fn instantiate(
    engine: &Engine,
    module: &Module,
    linker: &Linker<HostState>,
    limits: KernelLimits,
) -> Result<Live, KernelError> {
    let mut store = Store::new(engine, HostState::new(limits));
    store.limiter(|state: &mut HostState| -> &mut dyn ResourceLimiter { state });
    let instance = linker.instantiate_and_start(&mut store, module).map_err(|e| {
        match store.data_mut().fault.take() {
            Some(fault) => fault,
            None => KernelError::BadModule(format!("instantiation failed: {e}")),
        }
    })?;
    let missing = |what: &str| KernelError::BadModule(format!("export `{what}` missing"));
    let memory = instance
        .get_memory(&store, abi::MEMORY)
        .ok_or_else(|| missing(abi::MEMORY))?;
    let packet_buffer = instance
        .get_typed_func::<i32, i32>(&store, abi::PACKET_BUFFER)
        .map_err(|_| missing(abi::PACKET_BUFFER))?;
    let process = instance
        .get_typed_func::<(i32, i32), i32>(&store, abi::PROCESS)
        .map_err(|_| missing(abi::PROCESS))?;
    store.data_mut().memory = Some(memory);
    Ok(Live {
        store,
        memory,
        packet_buffer,
        process,
    })
}

/// One packet on a live instance (see [`WasmKernel::run`]).
fn run_packet(live: &mut Live, packet: &[u8], len: i32, metered: bool) -> Result<KernelOutput, KernelError> {
    let limit = live.store.data().limits.fuel_per_packet;
    live.store.data_mut().start_packet();
    if metered {
        live.store
            .set_fuel(limit)
            .map_err(|e| KernelError::Trap(e.to_string()))?;
    }
    let ptr = live
        .packet_buffer
        .call(&mut live.store, len)
        .map_err(|e| call_error(&mut live.store, e, limit))?;
    let (bytes, _) = live.memory.data_and_store_mut(&mut live.store);
    let range = host::checked_range(bytes.len(), abi::PACKET_BUFFER, ptr, len)?;
    bytes[range].copy_from_slice(packet);
    let code = live
        .process
        .call(&mut live.store, (ptr, len))
        .map_err(|e| call_error(&mut live.store, e, limit))?;
    let fuel_used = if metered {
        limit.saturating_sub(live.store.get_fuel().unwrap_or(0))
    } else {
        0
    };
    let state = live.store.data_mut();
    if code != 0 {
        state.start_packet();
        return Err(KernelError::KernelReported { code });
    }
    Ok(KernelOutput {
        reply: state.reply.take(),
        dma: std::mem::take(&mut state.dma),
        fuel_used,
    })
}

/// The typed reason a call into the kernel failed: the host's recorded
/// fault if it stopped the kernel, else wasmi's trap.
fn call_error(store: &mut Store<HostState>, error: wasmi::Error, limit: u64) -> KernelError {
    if let Some(fault) = store.data_mut().fault.take() {
        return fault;
    }
    match error.as_trap_code() {
        Some(TrapCode::OutOfFuel) => KernelError::OutOfFuel { limit },
        Some(code) => KernelError::Trap(code.to_string()),
        None => KernelError::Trap(error.to_string()),
    }
}
