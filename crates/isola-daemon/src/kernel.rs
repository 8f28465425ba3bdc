//! A flow's kernel (OSMOSIS: the code a processing unit runs on each of
//! an FMQ's packets): a built-in operator, or a tenant's WebAssembly
//! module (`kernel = "wasm:PATH"`, `isola_kernels`) run under the flow's
//! fuel limit and memory cap. Either way it is an `Operator`, built once
//! when the configuration is read, so the runtime runs a packet's task
//! like any other and the core schedules it like any other. [`trial`]
//! tries a kernel on packets without a daemon (`isola kernel`).

pub mod trial;

use isola_kernels::{KernelError, KernelLimits, KernelOutput, WasmKernel};
use isola_ops::{OpError, Operator};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The prefix of a `kernel` naming a WebAssembly module.
pub use isola_model::tenant::WASM_PREFIX;

/// The operator name a WebAssembly kernel's tasks carry: an engine lists
/// it in `ops` to serve tenants' kernels.
pub const WASM_OPERATOR: &str = "wasm";

/// The largest kernel module read: 16 MiB.
const MAX_MODULE_BYTES: u64 = 16 << 20;

/// The smallest `kernel_memory`: one WebAssembly page (64 KiB).
pub const MIN_KERNEL_MEMORY: u64 = 64 << 10;

/// The largest `kernel_memory`: 2 GiB, as much as a 32-bit memory addresses
/// with signed pointers.
pub const MAX_KERNEL_MEMORY: u64 = 1 << 31;

/// A kernel limit that cannot be used: the key that sets it and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitError {
    /// The `[[tenant.flow]]` key: `fuel` or `kernel_memory`.
    pub key: &'static str,
    /// What is wrong with it.
    pub message: String,
}

/// The limits a WebAssembly kernel of a `[[tenant.flow]]` runs under, from
/// its `fuel` and `kernel_memory` keys (`None` where absent) and its
/// tenant's `memory_quota` (`None`: no tenant, as for `isola kernel`
/// without `--memory-quota`). The defaults are [`KernelLimits::default`]'s,
/// the memory no more than the quota; `fuel` must be at least 1 and
/// `kernel_memory` from [`MIN_KERNEL_MEMORY`] to the quota and
/// [`MAX_KERNEL_MEMORY`]. isolad's configuration and `isola kernel` both
/// check with this.
pub fn flow_limits(
    fuel: Option<u64>,
    kernel_memory: Option<u64>,
    memory_quota: Option<u64>,
) -> Result<KernelLimits, LimitError> {
    let mut limits = KernelLimits::default();
    if let Some(fuel) = fuel {
        if fuel == 0 {
            return Err(LimitError {
                key: "fuel",
                message: "must be at least 1".into(),
            });
        }
        limits.fuel_per_packet = fuel;
    }
    let top = memory_quota.unwrap_or(u64::MAX).min(MAX_KERNEL_MEMORY);
    match kernel_memory {
        Some(bytes) if !(MIN_KERNEL_MEMORY..=top).contains(&bytes) => {
            let message = match memory_quota {
                Some(quota) => format!(
                    "must be from 64KiB (one WebAssembly page) to the tenant's memory_quota ({quota} bytes) and at most 2GiB"
                ),
                None => "must be from 64KiB (one WebAssembly page) to 2GiB".to_string(),
            };
            return Err(LimitError {
                key: "kernel_memory",
                message,
            });
        }
        Some(bytes) => limits.memory_bytes = bytes,
        None => limits.memory_bytes = limits.memory_bytes.min(memory_quota.unwrap_or(u64::MAX)),
    }
    Ok(limits)
}

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
    /// The same operator as a WebAssembly kernel's, for [`FlowKernel::run_wasm`].
    wasm: Option<Arc<WasmOperator>>,
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
            wasm: None,
        })
    }

    /// The WebAssembly module at `path` (binary, or text if its name ends
    /// in `.wat`), checked and compiled now under `limits`; the error says
    /// why it cannot run and names the file (a text module's syntax error
    /// as `path:line:column`).
    pub fn wasm(path: &Path, limits: KernelLimits) -> Result<FlowKernel, String> {
        let bytes = isola_model::input::read_bounded(path, MAX_MODULE_BYTES)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let module = if path.extension().is_some_and(|e| e == "wat") {
            // Told the path, the parser's errors name it with the line and
            // column (`expected `)``, then ` --> path:3:14` and the line).
            wat::Parser::new()
                .parse_bytes(Some(path), &bytes)
                .map_err(|e| e.to_string())?
                .into_owned()
        } else {
            bytes
        };
        let kernel = WasmKernel::load(&module, limits).map_err(|e| format!("{}: {e}", path.display()))?;
        let wasm = Arc::new(WasmOperator {
            kernel: Mutex::new(kernel),
        });
        Ok(FlowKernel {
            source: KernelSource::Wasm {
                path: path.to_path_buf(),
                module: Arc::new(module),
                limits,
            },
            operator: wasm.clone(),
            wasm: Some(wasm),
        })
    }

    /// Runs a WebAssembly kernel on one packet, on the instance and behind
    /// the lock its operator's tasks use in isolad, and tells all of it:
    /// its requests and the fuel they took, or why it was stopped (its
    /// instance then already replaced). State carries from one packet to
    /// the next. `None` for a built-in kernel.
    pub fn run_wasm(&self, packet: &[u8]) -> Option<Result<KernelOutput, KernelError>> {
        self.wasm.as_ref().map(|w| w.run_packet(packet))
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

impl WasmOperator {
    /// Runs the kernel on one packet.
    fn run_packet(&self, input: &[u8]) -> Result<KernelOutput, KernelError> {
        // `WasmKernel::run` never panics and restores its instance after a
        // failure, so a poisoned lock (impossible short of a bug) holds a
        // usable kernel.
        let mut kernel = self.kernel.lock().unwrap_or_else(|p| p.into_inner());
        kernel.run(input)
    }
}

impl Operator for WasmOperator {
    fn name(&self) -> &'static str {
        WASM_OPERATOR
    }

    /// Runs the kernel on one packet; the output is
    /// [`isola_kernels::KernelOutput::to_bytes`]. A stopped kernel is
    /// [`OpError::KernelStopped`], its instance already replaced.
    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        match self.run_packet(input) {
            Ok(out) => Ok(out.to_bytes()),
            Err(e) => Err(OpError::KernelStopped {
                op: WASM_OPERATOR,
                cause: e.code(),
                reason: e.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flows_limits_are_checked_and_defaulted() {
        let d = KernelLimits::default();
        assert_eq!(flow_limits(None, None, None), Ok(d));
        let l = flow_limits(Some(7), None, Some(256 << 10)).unwrap();
        assert_eq!((l.fuel_per_packet, l.memory_bytes), (7, 256 << 10));
        assert_eq!(
            flow_limits(None, Some(128 << 10), None).unwrap().memory_bytes,
            128 << 10
        );
        assert_eq!(flow_limits(Some(0), None, None).unwrap_err().key, "fuel");
        for (memory, quota) in [(1024, None), (2 << 20, Some(1 << 20)), (4 << 30, None)] {
            let e = flow_limits(None, Some(memory), quota).unwrap_err();
            assert_eq!(e.key, "kernel_memory", "{memory} {quota:?}");
            assert_eq!(
                e.message.contains("memory_quota"),
                quota.is_some(),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn a_wat_syntax_error_names_the_file_line_and_column() {
        let dir = std::env::temp_dir().join(format!("isolad-kernel-wat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("typo.wat");
        std::fs::write(
            &path,
            "(module\n  (memory 1)\n  (func (result i32) (i32.cnst 0)))\n",
        )
        .unwrap();
        let e = FlowKernel::wasm(&path, KernelLimits::default()).unwrap_err();
        assert!(e.contains(&format!("{}:3:23", path.display())), "{e}");
        assert!(!e.contains("<anon>"), "{e}");
        let missing = dir.join("nowhere.wat");
        let e = FlowKernel::wasm(&missing, KernelLimits::default()).unwrap_err();
        assert!(
            e.starts_with(&format!("{}: cannot read", missing.display())),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn run_wasm_reports_what_the_operator_runs() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kernels/counter.wat");
        let k = FlowKernel::wasm(&path, KernelLimits::default()).unwrap();
        let first = k.run_wasm(b"ab").unwrap().unwrap();
        assert!(first.fuel_used > 0);
        // The operator's tasks share the instance: the count goes on.
        let via_op = KernelOutput::from_bytes(&k.operator().run(b"a").unwrap()).unwrap();
        assert_eq!(via_op.reply.unwrap()[..8], 2u64.to_le_bytes());
        let third = k.run_wasm(b"").unwrap().unwrap();
        assert_eq!(third.reply.unwrap()[..8], 3u64.to_le_bytes());
        let builtin = FlowKernel::builtin("crc32c", BTreeMap::new()).unwrap();
        assert!(builtin.run_wasm(b"x").is_none());
    }
}
