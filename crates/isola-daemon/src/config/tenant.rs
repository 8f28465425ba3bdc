//! One `[[tenant]]` of the daemon: checked by the one tenant check
//! (`isola_model::tenant::check_tenant`, as a scenario's tenant and a live
//! change are), with its flows' kernels loaded here (a WebAssembly module
//! is checked and compiled now). The same check serves the file, SIGHUP's
//! reload and `isola ctl add`/`set`, so a live change is refused exactly
//! as the file would be.

use crate::kernel::{FlowKernel, WASM_PREFIX};
use isola_core::{EngineSelector, Slo, SloOverride};
use isola_model::scenario::source::Source;
use isola_model::tenant::{Context, DaemonScope, EngineRef, FlowModel, RawTenant, TenantModel};
use isola_model::ScenarioError;
use std::path::Path;

/// What a tenant table is checked against: the daemon's folder (a kernel
/// module's relative path is resolved against it), its engines, and its
/// limits and UDP addresses.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scope<'a> {
    /// The configuration file's folder.
    pub(super) base: &'a Path,
    /// The engines, as SLO checks name them.
    pub(super) engines: &'a [EngineRef<'a>],
    /// The daemon's limits, identity and UDP addresses.
    pub(super) daemon: DaemonScope<'a>,
}

/// One tenant.
#[derive(Debug, Clone)]
pub struct DaemonTenant {
    /// The tenant as checked: its SLO and per-engine changes, who may act
    /// as it, its rings, its flows' structure, and its keys as read (for a
    /// live change).
    pub tenant: TenantModel,
    /// Its flow queues on the packet path, in order, with their kernels
    /// loaded (one per `tenant.flows`).
    pub flows: Vec<FlowConfig>,
}

impl PartialEq for DaemonTenant {
    /// The same tenant, as the core and the daemon see it: the keys as
    /// read and where its flows are written aside (a file reloaded with
    /// its lines moved changes nothing), its flows by what they run.
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (&self.tenant, &other.tenant);
        a.name == b.name
            && a.slo == b.slo
            && a.overrides == b.overrides
            && a.access == b.access
            && a.ecn_threshold == b.ecn_threshold
            && self.flows == other.flows
    }
}

/// One of a tenant's flow queues (OSMOSIS' FMQ): which packets it takes
/// (a 5-tuple rule; fields left out match anything) and the kernel that
/// runs on each of them.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowConfig {
    /// The packets it takes.
    pub rule: isola_model::ingress::TupleRule,
    /// The kernel run on each packet's payload: a built-in operator or a
    /// tenant's WebAssembly module.
    pub kernel: FlowKernel,
    /// Send the kernel's output back to the packet's sender (egress).
    pub reply: bool,
    /// Tell the sender of a packet that was aborted (its kernel stopped,
    /// its DMA request refused) with an error datagram
    /// ([`crate::error_reply`]) in place of the reply; default off.
    pub error_reply: bool,
    /// OSMOSIS' IO kernels (`dma = "write"` or `"read"`): each packet's
    /// header names a transfer into or out of the tenant's host window,
    /// carried out by the daemon's DMA engine after the kernel
    /// (`crate::io_flow`); the task's output is the data written or read.
    pub dma: Option<isola_runtime::Direction>,
    /// Its flow queue's place in the tenant's turn (also in the tenant's
    /// SLO, `Slo::flows`, which the core schedules by).
    pub queue: isola_core::FlowQueueSpec,
    /// Packets in its own queue from which ECN-capable ones are marked
    /// (`None`: only the tenant's `ecn_threshold` applies).
    pub ecn_threshold: Option<usize>,
    /// The flow's own cost model, set by code (a harness that knows what
    /// each flow's kernel costs): its packets are predicted by it instead
    /// of by their engine's model, as a scenario's tenant is predicted by
    /// its own service model. `None` (a configuration file's flows): the
    /// engine's model. An engine that learns costs predicts by what it
    /// learned of the operator once it has, which takes the place of this.
    pub cost: Option<isola_core::AffineCost>,
}

impl DaemonTenant {
    /// Its name (what a client says in `Hello`).
    pub fn name(&self) -> &str {
        &self.tenant.name
    }

    /// Its SLO on every engine, before per-engine changes.
    pub fn slo(&self) -> &Slo {
        &self.tenant.slo
    }

    /// Its SLO on `engine`: the tenant-wide one with the engine's changes.
    pub fn slo_on(&self, engine: &super::DaemonEngine) -> Slo {
        self.tenant
            .slo
            .on_engine(&self.tenant.overrides, &engine.name, engine.kind)
    }

    /// Its per-engine changes (`[tenant.on.NAME]`).
    pub fn overrides(&self) -> &[(EngineSelector, SloOverride)] {
        &self.tenant.overrides
    }

    /// Its memory quota: each connection's arena, and the most bytes of
    /// its tasks queued or in service at once (a daemon's tenant always
    /// has one).
    pub fn memory_quota(&self) -> u64 {
        let quota = self.tenant.slo.memory_quota;
        assert!(
            quota.is_some(),
            "a daemon's tenant is checked to have a memory quota"
        );
        quota.unwrap_or(0)
    }

    /// This tenant with `changes` (keys of a tenant table with typed
    /// values; `None` returns a key to its default) applied to its keys as
    /// read, checked again as a whole against `daemon` (errors name the
    /// key, and `origin`). The name cannot change.
    pub fn with_changes(
        &self,
        changes: &[(&str, Option<toml::Value>)],
        origin: &str,
        daemon: &super::DaemonConfig,
    ) -> Result<DaemonTenant, ScenarioError> {
        daemon.check_changes(self.tenant.raw.clone(), changes, origin)
    }
}

/// Checks one tenant table (`raw`, read from `src`) against the daemon's
/// scope, and loads its flows' kernels.
pub(super) fn check_tenant(
    src: &Source<'_>,
    scope: &Scope<'_>,
    raw: RawTenant,
) -> Result<DaemonTenant, ScenarioError> {
    let tenant = isola_model::tenant::check_tenant(src, Context::Daemon(&scope.daemon), scope.engines, raw)?;
    let quota = tenant.slo.memory_quota;
    let flows = tenant
        .flows
        .iter()
        .map(|f| load_flow(src, scope.base, f, quota))
        .collect::<Result<_, _>>()?;
    Ok(DaemonTenant { tenant, flows })
}

/// Flow `f` of a tenant whose memory quota is `quota`, its kernel loaded:
/// a WebAssembly module's path is resolved against `base`, the module
/// checked against its limits and compiled; a built-in kernel found.
fn load_flow(
    src: &Source<'_>,
    base: &Path,
    f: &FlowModel,
    quota: Option<u64>,
) -> Result<FlowConfig, ScenarioError> {
    let kernel = match f.kernel.strip_prefix(WASM_PREFIX) {
        Some(path) => {
            let limits = crate::kernel::flow_limits(f.fuel, f.kernel_memory, quota)
                .map_err(|e| src.at(src.key_in(f.span.clone(), e.key), Some(e.key), e.message))?;
            FlowKernel::wasm(&base.join(path), limits)
                .map_err(|e| src.at(src.key_in(f.span.clone(), "kernel"), Some("kernel"), e))?
        }
        None => FlowKernel::builtin(&f.kernel, f.params.clone())
            .map_err(|e| src.at(src.key_in(f.span.clone(), "kernel"), Some("kernel"), e))?,
    };
    Ok(FlowConfig {
        rule: f.rule,
        kernel,
        reply: f.reply,
        error_reply: f.error_reply,
        dma: f.dma,
        queue: f.queue,
        ecn_threshold: f.ecn_threshold,
        cost: None,
    })
}
