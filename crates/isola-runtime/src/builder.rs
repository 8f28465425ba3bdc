//! Configuring a runtime: engines, tenants and the scheduling mode.

use crate::runtime::Runtime;
use isola_core::{
    CostModel, EngineId, EngineKind, EnginePolicy, EngineSelector, Slo, SloOverride, SplitWhen, TenantId,
    DEFAULT_CONTENTION_WINDOW_NS,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One engine: a pool of worker threads behind a short FIFO queue, standing
/// for a DPU accelerator (or a cluster of its cores).
#[derive(Clone)]
pub struct EngineConfig {
    /// Unique name.
    pub name: String,
    /// What it stands for (an accelerator unless set): the core's policies
    /// and per-kind settings see it.
    pub kind: EngineKind,
    /// Operators it serves (registry names); empty: every operator.
    pub ops: Vec<String>,
    /// Worker threads (the engine's parallel lanes); at least 1.
    pub workers: usize,
    /// Dispatched tasks that may wait in the engine's own FIFO queue beyond
    /// those running: the depth of a hardware queue. Isolation policies keep
    /// it short so that their decisions, not the queue, set the order.
    pub queue_depth: usize,
    /// Predicts service time from operator and size (profiled on this
    /// machine; `isola profile`).
    pub cost: Arc<dyn CostModel>,
    /// The core splits tasks of splittable operators larger than this into
    /// subtasks of about this many bytes (ASTRAEA's task splitting), planned
    /// by the operator; `None`: never split. Native mode never splits.
    pub split_bytes: Option<u64>,
    /// When the core splits tasks (ASTRAEA: only while contended).
    pub split_when: SplitWhen,
    /// The most predicted service of one subtask, ns (see
    /// [`isola_core::SplitRule::time`]); `None`: `split_bytes` alone.
    pub split_time: Option<u64>,
    /// Whether the core learns its operators' costs from the service the
    /// workers measure ([`isola_core::cost_fit`]); `None`: `cost` alone.
    pub learn: Option<isola_core::CostLearning>,
    /// How the core batches a tenant's small tasks for it (`None`: one
    /// task a dispatch). A batch goes to one worker in one hand-off, which
    /// runs its tasks one after another and completes each on its own.
    pub batch: Option<isola_core::BatchRule>,
    /// What its workers do: run operators, copy (DMA) or send (egress).
    pub device: EngineDevice,
    /// It has no threads of its own: the dispatcher runs each of its
    /// tasks itself, to completion, as the core picks it
    /// ([`EngineConfig::on_dispatcher`]).
    pub on_dispatcher: bool,
    /// A whole task the core predicts to take at most this long (ns) runs
    /// on the dispatcher's own thread when none of the engine's workers
    /// has work: the hand-off to a worker and back would cost more than
    /// the task ([`EngineConfig::with_inline_below`]); 0: never.
    pub inline_below: isola_core::Nanos,
}

/// [`EngineConfig::inline_below`]'s default: 2 us, about what the worker
/// path's two thread hand-offs add to a round trip on a 2-core machine
/// (docs/perf.md, "Issue 34: the worker path's round trip").
pub const DEFAULT_INLINE_BELOW: isola_core::Nanos = 2_000;

/// What an engine's workers do with the work the core dispatches to it.
#[derive(Debug, Clone, Default)]
pub enum EngineDevice {
    /// Run operators (accelerators, processing units).
    #[default]
    Compute,
    /// Copy [`crate::Stage::Dma`] transfers into or out of the tenants'
    /// host regions ([`RuntimeBuilder::host_region`]).
    Dma,
    /// Send [`crate::Stage::Egress`] stages' bytes on this port.
    Egress(Arc<crate::EgressPort>),
}

impl std::fmt::Debug for EngineConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineConfig")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("ops", &self.ops)
            .field("workers", &self.workers)
            .field("queue_depth", &self.queue_depth)
            .field("split_bytes", &self.split_bytes)
            .field("split_when", &self.split_when)
            .field("split_time", &self.split_time)
            .field("learn", &self.learn)
            .field("batch", &self.batch)
            .field("device", &self.device)
            .field("on_dispatcher", &self.on_dispatcher)
            .field("inline_below", &self.inline_below)
            .finish_non_exhaustive()
    }
}

impl EngineConfig {
    /// An engine serving `ops` (empty: all) on `workers` threads, with a
    /// queue depth of 1 and no splitting.
    pub fn new(name: impl Into<String>, ops: &[&str], workers: usize, cost: Arc<dyn CostModel>) -> Self {
        EngineConfig {
            name: name.into(),
            kind: EngineKind::Accelerator,
            ops: ops.iter().map(|s| s.to_string()).collect(),
            workers,
            queue_depth: 1,
            cost,
            split_bytes: None,
            split_when: SplitWhen::Contended {
                window: DEFAULT_CONTENTION_WINDOW_NS,
            },
            split_time: None,
            learn: None,
            batch: None,
            device: EngineDevice::Compute,
            on_dispatcher: false,
            inline_below: DEFAULT_INLINE_BELOW,
        }
    }

    /// Runs its tasks on the dispatcher's own thread instead of worker
    /// threads: one at a time, to completion, each as soon as the core
    /// picks it (one worker, no queue: every task is one decision of the
    /// engine's policy, made when the one before it ended). A DPDK core
    /// that receives, classifies and processes its own packets works so:
    /// no thread hand-off, no wake-up, nothing shared between cores;
    /// on a machine with few cores it serves small tasks fastest. The
    /// price: while a task runs the dispatcher does nothing else (no other
    /// engine is fed, no submission taken), so it suits engines of short
    /// tasks, and a kernel that runs away must be stopped by its own limit
    /// (a WebAssembly kernel's fuel).
    pub fn on_dispatcher(mut self) -> Self {
        self.on_dispatcher = true;
        self.workers = 1;
        self.queue_depth = 0;
        self
    }

    /// Dispatches the core may hand it at once: its workers and its queue,
    /// or its one place on the dispatcher (whatever queue depth was set
    /// after [`EngineConfig::on_dispatcher`]).
    pub fn slots(&self) -> u32 {
        if self.on_dispatcher {
            1
        } else {
            (self.workers + self.queue_depth).min(u32::MAX as usize) as u32
        }
    }

    /// Makes it a DMA engine: its workers copy DMA stages' bytes (its kind
    /// becomes `dma`; it serves no operator).
    pub fn with_dma(mut self) -> Self {
        self.kind = EngineKind::Dma;
        self.device = EngineDevice::Dma;
        self
    }

    /// Makes it an egress engine sending on `port` (its kind becomes
    /// `egress`; it serves no operator).
    pub fn with_egress(mut self, port: Arc<crate::EgressPort>) -> Self {
        self.kind = EngineKind::Egress;
        self.device = EngineDevice::Egress(port);
        self
    }

    /// Sets what the engine stands for.
    pub fn with_kind(mut self, kind: EngineKind) -> Self {
        self.kind = kind;
        self
    }

    /// Sets the queue depth.
    pub fn with_queue_depth(mut self, depth: usize) -> Self {
        self.queue_depth = depth;
        self
    }

    /// Splits tasks larger than `bytes` into subtasks of about that size
    /// (while the engine is contended, unless [`SplitWhen::Always`]).
    pub fn with_split(mut self, bytes: u64) -> Self {
        self.split_bytes = Some(bytes);
        self
    }

    /// Sets when tasks are split.
    pub fn with_split_when(mut self, when: SplitWhen) -> Self {
        self.split_when = when;
        self
    }

    /// Caps each subtask at `ns` of predicted service (`None`: bytes alone).
    pub fn with_split_time(mut self, ns: Option<u64>) -> Self {
        self.split_time = ns;
        self
    }

    /// Batches a tenant's small tasks by `rule` (`None`: one task a dispatch).
    pub fn with_batch(mut self, rule: Option<isola_core::BatchRule>) -> Self {
        self.batch = rule;
        self
    }

    /// Runs a whole task predicted to take at most `ns` on the
    /// dispatcher's thread when none of the engine's workers has work (0:
    /// every task goes to a worker). A worker's hand-off and its report
    /// back are two thread hand-offs, each a wake-up or, with polling
    /// threads on a machine with fewer cores than threads, a wait for a
    /// core: 2-2.5 us more on a 2-core machine (docs/perf.md, "Issue 34:
    /// the worker path's round trip"), many times a 64 B task.
    /// A task that runs here is the engine's only one (its workers are
    /// idle), charged and timed as a worker's would be, so nothing about
    /// the engine's share changes. Its price is the dispatcher's time, so
    /// only operators that check a watch between bounded chunks
    /// ([`isola_ops::Operator::stoppable`]) run here, watched: a task
    /// still running at 8 x `ns` ([`crate::INLINE_OVERRUN`]) is stopped
    /// and run again from the start on a worker, and its tenant's tasks
    /// on this engine go to the workers for 10 ms, doubled at each further
    /// stop up to 10 s; a task of one chunk (asked only before it starts)
    /// runs to its end, and two of a tenant's in a row past 8 x `ns`
    /// demote it alike. Subtasks, batches and non-compute engines always
    /// go to the workers.
    pub fn with_inline_below(mut self, ns: isola_core::Nanos) -> Self {
        self.inline_below = ns;
        self
    }

    /// Learns the operators' costs online (`None`: the configured model alone).
    pub fn with_learning(mut self, learning: Option<isola_core::CostLearning>) -> Self {
        self.learn = learning;
        self
    }

    /// Whether it serves operator `op`.
    pub(crate) fn serves(&self, op: &str) -> bool {
        matches!(self.device, EngineDevice::Compute)
            && (self.ops.is_empty() || self.ops.iter().any(|o| o == op))
    }
}

/// How the core schedules the engines' tasks.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// First come first served over every tenant, tasks whole: what an
    /// application gets on a DPU without Isola (the core's `fcfs` with no
    /// split rule).
    Native,
    /// Through the isolation core, each engine under the policy
    /// [`RuntimeBuilder::engine_policy`] gives it, else its kind's default
    /// (`isola_core::EngineKind::default_policy`): isolad's mode.
    ByEngine,
    /// Through the isolation core with this policy (a registry name) and
    /// parameters.
    Isolated {
        /// Policy name (see `isola policies`).
        policy: String,
        /// Its parameters.
        params: BTreeMap<String, String>,
    },
}

/// Why a runtime could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// No engine was configured.
    #[error("a runtime needs at least one engine")]
    NoEngines,
    /// No tenant was configured.
    #[error("a runtime needs at least one tenant")]
    NoTenants,
    /// An engine has no workers.
    #[error("engine `{0}` needs at least one worker")]
    NoWorkers(String),
    /// An engine serves an operator the registry does not have.
    #[error("engine `{engine}`: {source}")]
    UnknownOperator {
        /// The engine.
        engine: String,
        /// The registry's error, listing the known operators.
        source: isola_ops::OpError,
    },
    /// The isolation core refused the configuration (bad policy or
    /// parameters, duplicate names, invalid SLO).
    #[error(transparent)]
    Scheduler(#[from] isola_core::BuildError),
    /// A thread could not be started.
    #[error("could not start a thread: {0}")]
    Thread(String),
}

/// Builds a [`Runtime`].
#[derive(Debug)]
pub struct RuntimeBuilder {
    pub(crate) engines: Vec<EngineConfig>,
    pub(crate) tenants: Vec<(String, Slo)>,
    pub(crate) mode: Mode,
    pub(crate) spin: std::time::Duration,
    pub(crate) pin: bool,
    pub(crate) realtime: Option<crate::Realtime>,
    pub(crate) realtime_duty_cycle: bool,
    pub(crate) record_core_calls: bool,
    /// Tenants' host regions, for DMA stages.
    pub(crate) regions: Vec<(TenantId, Arc<dyn crate::HostRegion>)>,
    /// Per-engine changes to tenants' SLOs.
    overrides: Vec<(TenantId, EngineSelector, SloOverride)>,
    /// Policies for some engines (isolated mode).
    engine_policies: Vec<EnginePolicy>,
    /// Policies the caller registered beside the built-in ones.
    registered: Vec<isola_core::policy::PolicyInfo>,
    /// Names of operators the caller builds itself, which engines may list.
    caller_ops: Vec<String>,
}

/// Default time threads poll their channel before sleeping: 50 us.
pub const DEFAULT_SPIN: std::time::Duration = std::time::Duration::from_micros(50);

impl Default for RuntimeBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl RuntimeBuilder {
    /// An empty configuration in native mode.
    pub fn new() -> Self {
        RuntimeBuilder {
            engines: Vec::new(),
            tenants: Vec::new(),
            mode: Mode::Native,
            spin: DEFAULT_SPIN,
            pin: false,
            realtime: None,
            realtime_duty_cycle: true,
            record_core_calls: false,
            regions: Vec::new(),
            overrides: Vec::new(),
            engine_policies: Vec::new(),
            registered: Vec::new(),
            caller_ops: Vec::new(),
        }
    }

    /// Adds an engine.
    pub fn engine(&mut self, config: EngineConfig) -> EngineId {
        self.engines.push(config);
        EngineId(self.engines.len() as u32 - 1)
    }

    /// Adds a tenant with its SLO.
    pub fn tenant(&mut self, name: impl Into<String>, slo: Slo) -> TenantId {
        self.tenants.push((name.into(), slo));
        TenantId(self.tenants.len() as u32 - 1)
    }

    /// Gives tenant `tenant` the host region its DMA stages copy into and
    /// out of (a later call replaces it): an allocated buffer
    /// ([`crate::HeapRegion`]) or any [`crate::HostRegion`], such as a
    /// shared memory arena.
    pub fn host_region(&mut self, tenant: TenantId, region: Arc<dyn crate::HostRegion>) -> &mut Self {
        self.regions.push((tenant, region));
        self
    }

    /// Changes tenant `tenant`'s SLO on the engines `on` selects (see
    /// `isola_core::Tenant::slo_on`).
    pub fn tenant_on(&mut self, tenant: TenantId, on: EngineSelector, change: SloOverride) -> &mut Self {
        self.overrides.push((tenant, on, change));
        self
    }

    /// In isolated mode, runs policy `name` with `params` on the engines
    /// `on` selects instead of the mode's policy (native mode is `fcfs`
    /// everywhere).
    pub fn engine_policy(
        &mut self,
        on: EngineSelector,
        name: impl Into<String>,
        params: BTreeMap<String, String>,
    ) -> &mut Self {
        self.engine_policies.push(EnginePolicy {
            on,
            name: name.into(),
            params,
        });
        self
    }

    /// Registers policy `info`, written outside Isola, so that the mode and
    /// [`RuntimeBuilder::engine_policy`] can name it (see
    /// `isola_core::SchedulerBuilder::register_policy` and
    /// docs/adding-a-policy.md).
    pub fn register_policy(&mut self, info: isola_core::policy::PolicyInfo) -> &mut Self {
        self.registered.push(info);
        self
    }

    /// Sets the mode (native, or isolated under a policy).
    pub fn mode(&mut self, mode: Mode) -> &mut Self {
        self.mode = mode;
        self
    }

    /// Declares `name` (the `Operator::name` of operators the caller
    /// builds itself and submits with `TenantHandle::submit_operator*`,
    /// such as a tenant's WebAssembly kernel) so that engines may list it
    /// in their `ops` beside the registered operators.
    pub fn caller_operator(&mut self, name: &str) -> &mut Self {
        self.caller_ops.push(name.to_string());
        self
    }

    /// How long the dispatcher, workers and waiting tickets poll before
    /// sleeping (0: sleep at once). Polling turns a wake-up of tens of
    /// microseconds into one of well under one, at the price of that much
    /// CPU after each piece of work. A dispatcher or worker granted a
    /// real-time class ([`RuntimeBuilder::realtime`]) never polls.
    pub fn spin(&mut self, spin: std::time::Duration) -> &mut Self {
        self.spin = spin;
        self
    }

    /// Pins the dispatcher to the first CPU and the engine workers, in turn,
    /// to the others (all to the one, on a single CPU), so that an engine's
    /// work is not moved between cores or queued behind the dispatcher's
    /// (where the system allows; otherwise threads are left unpinned).
    pub fn pin_threads(&mut self, pin: bool) -> &mut Self {
        self.pin = pin;
        self
    }

    /// Runs the dispatcher and the workers in real-time class `realtime`
    /// (`None`: the normal class), so that no normal thread of this machine
    /// (a tenant's, another program's) can take their core while they
    /// work. Where the system refuses (no `CAP_SYS_NICE`, no
    /// `RLIMIT_RTPRIO`) they run in the normal class; each thread's outcome
    /// is in [`crate::Runtime::threads`]. All of them run at the one
    /// priority given (`threads.rs` says why), and under the duty-cycle
    /// regime, on by default ([`RuntimeBuilder::realtime_duty_cycle`]).
    pub fn realtime(&mut self, realtime: Option<crate::Realtime>) -> &mut Self {
        self.realtime = realtime;
        self
    }

    /// Keeps the real-time threads under the duty-cycle regime (on by
    /// default; `threads.rs`): none of them polls (a real-time thread that
    /// polls holds its core for the whole poll, whatever `sched_yield`
    /// says, so [`RuntimeBuilder::spin`] is then the tenants' ticket waits'
    /// only), and a busy worker runs its tasks in the normal class once it
    /// has run [`crate::REALTIME_RUN`] of a [`crate::REALTIME_PERIOD`] on
    /// average in its class, so that a backlogged worker neither holds
    /// its core against every normal thread nor runs into the kernel's
    /// real-time throttling. Threads that do not poll are woken for each
    /// piece of work, so the runtime also asks, while it runs, that idle
    /// cores stay quick to wake ([`crate::Runtime::idle_latency`]). Off:
    /// real-time threads poll as the spin says and never leave their class.
    pub fn realtime_duty_cycle(&mut self, on: bool) -> &mut Self {
        self.realtime_duty_cycle = on;
        self
    }

    /// What a runtime thread in `role` keeps in its real-time class: that
    /// role's regime under the duty cycle, [`crate::threads::Regime::Plain`]
    /// without it.
    pub(crate) fn regime(&self, role: crate::threads::Regime) -> crate::threads::Regime {
        if self.realtime_duty_cycle {
            role
        } else {
            crate::threads::Regime::Plain
        }
    }

    /// Keeps a log of every call on the isolation core ([`crate::CoreCall`],
    /// read with [`crate::Runtime::core_log`]); for tests and audits, as
    /// it grows with every message the dispatcher handles.
    pub fn record_core_calls(&mut self, record: bool) -> &mut Self {
        self.record_core_calls = record;
        self
    }

    /// The isolation core this configuration runs on, as the runtime builds
    /// it: one channel per tenant per engine (capped at the tenant's queue
    /// cap), each engine with its [`EngineConfig::slots`] (so its queue
    /// stays as short as configured and the policy sets the order) and its
    /// split rule; native mode is the core's `fcfs` on whole tasks.
    pub fn scheduler(&self) -> Result<isola_core::Scheduler, BuildError> {
        let mut sb = isola_core::SchedulerBuilder::new();
        for info in &self.registered {
            sb.register_policy(*info);
        }
        for (name, slo) in &self.tenants {
            sb.tenant(name.clone(), slo.clone());
        }
        let native = self.mode == Mode::Native;
        for e in &self.engines {
            let slots = e.slots();
            // Split where the kind may be (the core decides which) and
            // the engine's rule says so; native mode serves tasks whole.
            let split = e
                .split_bytes
                .filter(|_| !native && e.kind.splits_tasks())
                .map(|bytes| isola_core::SplitRule {
                    bytes,
                    when: e.split_when,
                    time: e.split_time,
                });
            sb.engine(
                isola_core::EngineSpec::new(
                    e.name.clone(),
                    e.kind,
                    slots,
                    crate::guard::GuardedCost::wrap(Arc::clone(&e.cost)),
                )
                .with_split_rule(split)
                .with_batch(e.batch.filter(|_| !native))
                .with_learning(e.learn),
            );
        }
        for (tenant, on, change) in &self.overrides {
            sb.tenant_on(*tenant, on.clone(), *change);
        }
        match &self.mode {
            Mode::Native => {
                sb.policy("fcfs", BTreeMap::new());
            }
            Mode::Isolated { policy, params } => {
                sb.policy(policy.clone(), params.clone());
            }
            Mode::ByEngine => {}
        }
        if self.mode != Mode::Native {
            for p in &self.engine_policies {
                sb.engine_policy(p.on.clone(), p.name.clone(), p.params.clone());
            }
        }
        Ok(sb.build()?)
    }

    /// Starts the runtime's threads.
    pub fn start(self) -> Result<Runtime, BuildError> {
        if self.engines.is_empty() {
            return Err(BuildError::NoEngines);
        }
        if self.tenants.is_empty() {
            return Err(BuildError::NoTenants);
        }
        for e in &self.engines {
            if e.workers == 0 {
                return Err(BuildError::NoWorkers(e.name.clone()));
            }
            for op in e.ops.iter().filter(|op| !self.caller_ops.contains(op)) {
                isola_ops::find_operator(op).map_err(|source| BuildError::UnknownOperator {
                    engine: e.name.clone(),
                    source,
                })?;
            }
        }
        Runtime::start(self)
    }
}
