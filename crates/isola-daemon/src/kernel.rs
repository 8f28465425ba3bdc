//! A flow's kernel (OSMOSIS: the code a processing unit runs on each of
//! an FMQ's packets): a built-in operator, or a tenant's WebAssembly
//! module (`kernel = "wasm:PATH"`, `isola_kernels`) run under the flow's
//! fuel limit and memory cap. Either way it is an `Operator`, built once
//! when the configuration is read, so the runtime runs a packet's task
//! like any other and the core schedules it like any other.

use isola_kernels::{KernelLimits, WasmKernel};
use isola_ops::{OpError, Operator};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The prefix of a `kernel` naming a WebAssembly module.
pub const WASM_PREFIX: &str = "wasm:";

/// The operator name a WebAssembly kernel's tasks carry: an engine lists
/// it in `ops` to serve tenants' kernels.
pub const WASM_OPERATOR: &str = "wasm";

/// The largest kernel module read: 16 MiB.
const MAX_MODULE_BYTES: u64 = 16 << 20;

/// Where a flow's kernel comes from: what two configurations compare.
#[derive(Debug, Clone, PartialEq)]
pub enum KernelSource {
    /// A registered operator and its parameters.
    Builtin {
        /// The operator's name.
        name: String,
        /// Its parameters.
        params: BTreeMap<String, String>,
    },
    /// A tenant's WebAssembly module.
    Wasm {
        /// The module's file (resolved against the configuration's folder).
        path: PathBuf,
        /// The module's bytes (as WebAssembly binary): a changed file is a
        /// changed kernel.
        module: Arc<Vec<u8>>,
        /// The limits it runs under.
        limits: KernelLimits,
    },
}

/// A flow's kernel, ready to run: its source and the operator built from
/// it. Two kernels are equal when their sources are.
#[derive(Clone)]
pub struct FlowKernel {
    /// What it was built from.
    pub source: KernelSource,
    operator: Arc<dyn Operator>,
}

impl std::fmt::Debug for FlowKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowKernel")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl PartialEq for FlowKernel {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl FlowKernel {
    /// Built-in operator `name` with `params`; the error says what is wrong.
    pub fn builtin(name: &str, params: BTreeMap<String, String>) -> Result<FlowKernel, String> {
        let operator = isola_ops::build_operator(name, &params).map_err(|e| e.to_string())?;
        Ok(FlowKernel {
            source: KernelSource::Builtin {
                name: name.to_string(),
                params,
            },
            operator: Arc::from(operator),
        })
    }

    /// The WebAssembly module at `path` (binary, or text if its name ends
    /// in `.wat`), checked and compiled now under `limits`; the error says
    /// why it cannot run.
    pub fn wasm(path: &Path, limits: KernelLimits) -> Result<FlowKernel, String> {
        let bytes = isola_model::input::read_bounded(path, MAX_MODULE_BYTES)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let module = if path.extension().is_some_and(|e| e == "wat") {
            wat::parse_bytes(&bytes)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .into_owned()
        } else {
            bytes
        };
        let kernel = WasmKernel::load(&module, limits).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(FlowKernel {
            source: KernelSource::Wasm {
                path: path.to_path_buf(),
                module: Arc::new(module),
                limits,
            },
            operator: Arc::new(WasmOperator {
                kernel: Mutex::new(kernel),
            }),
        })
    }

    /// The operator each packet's task runs.
    pub fn operator(&self) -> &Arc<dyn Operator> {
        &self.operator
    }

    /// Whether its tasks answer with an [`isola_kernels::KernelOutput`] (a WebAssembly
    /// kernel's reply and DMA requests) rather than with the reply itself.
    pub fn is_wasm(&self) -> bool {
        matches!(self.source, KernelSource::Wasm { .. })
    }
}

/// A WebAssembly kernel as an operator. Its one instance keeps the
/// kernel's state between packets, so packets of one flow run one at a
/// time on it (behind the mutex), in the order the workers take them.
struct WasmOperator {
    kernel: Mutex<WasmKernel>,
}

impl Operator for WasmOperator {
    fn name(&self) -> &'static str {
        WASM_OPERATOR
    }

    /// Runs the kernel on one packet; the output is
    /// [`isola_kernels::KernelOutput::to_bytes`]. A stopped kernel is
    /// [`OpError::KernelStopped`], its instance already replaced.
    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        // `WasmKernel::run` never panics and restores its instance after a
        // failure, so a poisoned lock (impossible short of a bug) holds a
        // usable kernel.
        let mut kernel = self.kernel.lock().unwrap_or_else(|p| p.into_inner());
        match kernel.run(input) {
            Ok(out) => Ok(out.to_bytes()),
            Err(e) => Err(OpError::KernelStopped {
                op: WASM_OPERATOR,
                cause: e.code(),
                reason: e.to_string(),
            }),
        }
    }
}
