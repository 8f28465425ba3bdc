//! Scenario files: one TOML document describes engines, tenants (SLOs and
//! workloads) and the policies to compare. The same format is shared with the
//! live runtime. `docs/scenario-format.md` documents every key.
//!
//! Loading checks everything before anything runs, and every error names the
//! file, line, column and key: syntax errors, unknown keys, malformed or
//! negative quantities, references to undefined engines or policies, keys
//! that do not apply to an engine's kind, and unbounded runs.
//!
//! The types here are descriptions, plain data: a service model, a size
//! distribution or an arrival process as the file states it, and what a
//! service model predicts ([`ServiceCost`], every driver's cost model). What
//! a driver does with them (sampling service times, drawing sizes and
//! arrivals, timing a device) is the driver's (`isola-sim`'s device and
//! workload models).
//!
//! Layout: the public types (this file, and `service` for [`ServiceCost`]),
//! the raw TOML types (`raw`), the checks from one to the other (`check`,
//! `tenant`) and error positions (`source`).

mod check;
mod engine;
mod migrate;
mod pcie;
mod per_engine;
pub(crate) mod raw;
mod service;
pub mod source;
mod tenant;

pub use check::{check_name, MAX_NAME_CHARS};
pub use migrate::MigrateSpec;
pub use pcie::{Arbitration, PcieSpec, CREDIT_BYTES};
pub use service::ServiceCost;

use isola_core::{EngineKind, Nanos, Slo};
use isola_core::{EnginePolicy, EngineSelector, SloOverride, SplitWhen};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A scenario's engines as SLO checks name them.
pub(crate) fn engine_refs(engines: &[EngineModel]) -> Vec<crate::tenant::EngineRef<'_>> {
    engines
        .iter()
        .map(|e| crate::tenant::EngineRef {
            name: &e.name,
            kind: e.kind,
        })
        .collect()
}

/// A scenario that cannot be used, with where and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{file}{}: {}{message}",
    // Line 0: the whole file (it could not be read), no position in it.
    if *line > 0 { format!(":{line}:{column}") } else { String::new() },
    key.as_ref().map(|k| format!("key `{k}`: ")).unwrap_or_default()
)]
pub struct ScenarioError {
    /// The scenario (or trace) file.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The offending key, when known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ScenarioError {
    /// An error about file `file` as a whole (it could not be read, say),
    /// or about `key` in it where one is given, at no position.
    pub fn whole_file(
        file: impl Into<String>,
        key: Option<&str>,
        message: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError {
            file: file.into(),
            line: 0,
            column: 0,
            key: key.map(str::to_string),
            message: message.into(),
        }
    }
}

/// `split_when`'s value: `always`, `contended` or `for_latency` (the last
/// two with contention window `window` ns); an error says what is allowed.
pub fn parse_split_when(value: &str, window: Nanos) -> Result<SplitWhen, String> {
    match value {
        "always" => Ok(SplitWhen::Always),
        "contended" => Ok(SplitWhen::Contended { window }),
        "for_latency" => Ok(SplitWhen::ForLatency { window }),
        other => Err(format!(
            "`{other}`: use \"always\", \"contended\" or \"for_latency\""
        )),
    }
}

/// A loaded, checked scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Where it was read from (used for messages and relative trace paths).
    pub path: PathBuf,
    /// Run settings.
    pub run: RunSpec,
    /// Engines, in file order.
    pub engines: Vec<EngineModel>,
    /// Tenants, in file order.
    pub tenants: Vec<TenantSpec>,
}

/// The `[run]` table.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// Seed of every random stream.
    pub seed: u64,
    /// Virtual time to simulate; `None` runs until every workload is done.
    pub duration: Option<Nanos>,
    /// Policies to compare, each run on the same arrivals.
    pub policies: Vec<PolicyRun>,
    /// Metrics window for time series.
    pub window: Nanos,
    /// Also run each tenant alone, for slowdowns and Fair2.
    pub solo: bool,
    /// Most events one simulated run may process (`max_events`); a run
    /// that would need more is refused or stopped with an error.
    pub max_events: u64,
    /// Most metrics windows a run's time series may hold (`max_windows`).
    pub max_windows: u64,
}

/// Default of `[run] max_events`: 200 million events, about half a minute
/// of simulation on this project's machines, far more than any shipped
/// scenario needs.
pub const DEFAULT_MAX_EVENTS: u64 = 200_000_000;

/// Default of `[run] max_windows`: 100,000 windows per time series.
pub const DEFAULT_MAX_WINDOWS: u64 = 100_000;

/// Default metrics window (100 us), widened for long runs so that the
/// run holds at most [`DEFAULT_WINDOWS_PER_RUN`] of them.
pub const DEFAULT_WINDOW_NS: Nanos = 100_000;

/// Windows a run gets by default when its window is not given: a long run
/// gets wider windows rather than more of them.
pub const DEFAULT_WINDOWS_PER_RUN: u64 = 10_000;

impl RunSpec {
    /// The runs `wanted` names, in the scenario's order (all of them if
    /// `wanted` is empty). A name selects the run with that label if there
    /// is one (`sfq` is the run labelled `sfq`, not also `sfq-frag4k`);
    /// otherwise the runs of that policy, a registered alias standing for
    /// its policy (`wfq` is `sfq`). A name that selects nothing is an error
    /// listing the runs.
    pub fn select(&self, wanted: &[String]) -> Result<Vec<&PolicyRun>, String> {
        if wanted.is_empty() {
            return Ok(self.policies.iter().collect());
        }
        let mut chosen = vec![false; self.policies.len()];
        for w in wanted {
            let canonical = isola_core::policy::find_policy(w).map_or(w.as_str(), |p| p.name);
            let by_label = |l: &str| self.policies.iter().position(|r| r.label == l);
            let hits: Vec<usize> = match by_label(w).or_else(|| by_label(canonical)) {
                Some(i) => vec![i],
                None => (0..self.policies.len())
                    .filter(|&i| self.policies[i].name == canonical)
                    .collect(),
            };
            if hits.is_empty() {
                let known: Vec<&str> = self.policies.iter().map(|r| r.label.as_str()).collect();
                return Err(format!(
                    "the scenario runs no policy `{w}` (it runs: {})",
                    known.join(", ")
                ));
            }
            hits.into_iter().for_each(|i| chosen[i] = true);
        }
        Ok(self
            .policies
            .iter()
            .zip(chosen)
            .filter_map(|(r, c)| c.then_some(r))
            .collect())
    }
}

impl PolicyRun {
    /// The run that measures a tenant alone for `solo = true`: natively
    /// (FCFS on whole tasks), labelled `alone`, so that a policy that
    /// confines a tenant even when it is alone is not judged against
    /// itself.
    pub fn alone() -> PolicyRun {
        PolicyRun {
            name: "fcfs".into(),
            label: "alone".into(),
            params: BTreeMap::new(),
            split: None,
            on: Vec::new(),
        }
    }

    /// The run of a scenario that names no policies: every engine under
    /// its kind's default policy (`isola_core::EngineKind::default_policy`,
    /// the daemon's default too), labelled `default`, for a scenario
    /// whose engines are of `kinds`.
    pub fn kind_defaults(kinds: &[EngineKind]) -> PolicyRun {
        let name = EngineKind::Accelerator.default_policy();
        PolicyRun {
            name: name.into(),
            label: "default".into(),
            params: BTreeMap::new(),
            split: None,
            on: EngineKind::ALL
                .into_iter()
                .filter(|k| k.default_policy() != name && kinds.contains(k))
                .map(|k| EnginePolicy {
                    on: EngineSelector::Kind(k),
                    name: k.default_policy().into(),
                    params: BTreeMap::new(),
                })
                .collect(),
        }
    }

    /// The policy (and its parameters) engine `name` of kind `kind` runs
    /// under this run, by the core's rule ([`EnginePolicy::choose`]: a
    /// policy named for the engine beats its kind's, which beats the
    /// run's own).
    pub fn policy_of(&self, name: &str, kind: EngineKind) -> (&str, &BTreeMap<String, String>) {
        EnginePolicy::choose(&self.on, name, kind)
            .map_or((&self.name, &self.params), |p| (&p.name, &p.params))
    }
}

/// One policy to run, with its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyRun {
    /// Registered policy name.
    pub name: String,
    /// Name in results (defaults to `name`).
    pub label: String,
    /// Policy parameters.
    pub params: BTreeMap<String, String>,
    /// Subtask size under this run for the engines that split (DMA, egress
    /// and accelerators: OSMOSIS' fragments, ASTRAEA's task splitting);
    /// `None`: tasks are served whole. Written `split` (or `fragment`).
    pub split: Option<u64>,
    /// Policies for some engines instead of `name` (by engine name or
    /// kind), each with its parameters: OSMOSIS runs WLBVT on the PUs and
    /// WRR on DMA and egress.
    pub on: Vec<EnginePolicy>,
}

/// How long a task takes on an engine that computes (accelerator, PUs).
#[derive(Debug, Clone, PartialEq)]
pub enum ServiceSpec {
    /// Always the same time.
    Constant(Nanos),
    /// Exponentially distributed with this mean (M/M/c validation).
    Exponential(Nanos),
    /// `base + per_byte x bytes` nanoseconds.
    Affine {
        /// Fixed part (ns).
        base_ns: f64,
        /// Per-byte part (ns).
        per_byte_ns: f64,
    },
    /// Linear interpolation through (bytes, time) points.
    Table(Vec<(u64, f64)>),
    /// `base + per_byte x bytes` cycles at the engine's clock (PUs).
    Cycles {
        /// Fixed cycles.
        base: f64,
        /// Cycles per byte.
        per_byte: f64,
    },
}

impl ServiceSpec {
    /// The same model with every time multiplied by `factor` (> 0): what
    /// a live run uses once it has measured that this machine takes
    /// `factor` times as long (`isola_experiments::live_calibrate`).
    pub fn scaled(&self, factor: f64) -> ServiceSpec {
        debug_assert!(factor.is_finite() && factor > 0.0, "scale factor {factor}");
        let ns = |t: Nanos| (t as f64 * factor).round() as Nanos;
        match self {
            ServiceSpec::Constant(t) => ServiceSpec::Constant(ns(*t)),
            ServiceSpec::Exponential(t) => ServiceSpec::Exponential(ns(*t)),
            ServiceSpec::Affine { base_ns, per_byte_ns } => ServiceSpec::Affine {
                base_ns: base_ns * factor,
                per_byte_ns: per_byte_ns * factor,
            },
            ServiceSpec::Table(points) => {
                ServiceSpec::Table(points.iter().map(|&(b, t)| (b, t * factor)).collect())
            }
            ServiceSpec::Cycles { base, per_byte } => ServiceSpec::Cycles {
                base: base * factor,
                per_byte: per_byte * factor,
            },
        }
    }
}

/// What the device behind an engine is.
#[derive(Debug, Clone, PartialEq)]
pub enum DeviceSpec {
    /// FIFO lanes with a service-time model: accelerators and PU clusters.
    Compute {
        /// Default service model (tenants may override it).
        service: Option<ServiceSpec>,
        /// Clock for `Cycles` models, in Hz.
        clock_hz: f64,
        /// Time each dispatch holds its lane before its service starts (a
        /// doorbell, a descriptor fetch, a run-to-completion core's
        /// dispatch path), charged to no tenant: the simulator's model of
        /// the path a live runtime has by itself (key `dispatch_overhead`).
        dispatch_overhead: Nanos,
    },
    /// A PCIe/DMA link.
    Dma(DmaSpec),
    /// An egress link.
    Egress {
        /// Payload bytes per second.
        bytes_per_sec: f64,
        /// Bytes of framing per packet (preamble, gap, FCS).
        packet_overhead: u64,
    },
}

/// PCIe/DMA link parameters (AaaS section 3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DmaSpec {
    /// Raw link bandwidth in bytes per second, each direction.
    pub bytes_per_sec: f64,
    /// Max payload size of a write TLP.
    pub max_payload: u64,
    /// Max read request size.
    pub max_read_request: u64,
    /// Header and framing bytes per TLP.
    pub tlp_overhead: u64,
    /// TLPs per second the root complex accepts (posted-credit return rate);
    /// every TLP takes at least `1 / tlp_rate`.
    pub tlp_rate: Option<f64>,
    /// Setup time of one DMA request, ns: the engine's command processing,
    /// descriptor and the bus handshake that opens and closes a burst
    /// (OSMOSIS Sec. 6.3: "splitting one large transfer into smaller N
    /// transfers introduces N additional protocol handshakes"). Every
    /// dispatch on the link is one request, so a transfer cut into N
    /// fragments pays it N times. Default 0 (see docs/scenario-format.md).
    pub request_overhead: u64,
    /// Credits, root complex, device read limits and ring protocol: the
    /// transaction-level model (`[engine.pcie]`; absent: the link above).
    pub pcie: Option<PcieSpec>,
}

/// An engine: scheduler view and device model.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineModel {
    /// Unique name.
    pub name: String,
    /// Kind.
    pub kind: EngineKind,
    /// Lanes, processing units, DMA queues or links served in parallel.
    pub slots: u32,
    /// Dispatches the device holds at once (in service and waiting, >= slots).
    pub queue_depth: u32,
    /// Output bytes per input byte (AaaS observation 2).
    pub egress_ratio: f64,
    /// When the engine splits tasks, under runs that give a split size.
    pub split_when: SplitWhen,
    /// The most predicted service of one subtask (`split_time`), ns: each
    /// operator's tasks are cut at the bytes it is predicted to serve in
    /// that time ([`isola_core::SplitRule::time`]).
    pub split_time: Option<Nanos>,
    /// How the engine batches a tenant's small tasks (`batch`), if it does.
    pub batch: Option<isola_core::BatchRule>,
    /// Whether the engine learns each operator's cost from the service it
    /// measures (`learn`, default false in scenarios: a scenario's service
    /// models are its predictions; [`isola_core::cost_fit`]).
    pub learn: bool,
    /// The device model.
    pub device: DeviceSpec,
    /// Which of the engine's slots a dispatch waits for.
    pub steering: Steering,
}

/// How an engine's work reaches its slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Steering {
    /// One queue per tenant in the scheduler, whose policy hands the next
    /// dispatch to whichever slot frees first (every other engine here).
    #[default]
    Scheduler,
    /// Receive-side scaling, as a DPDK application runs on a multicore
    /// SmartNIC (MTDA's and FairNIC's native baseline): the NIC hashes each
    /// packet's 5-tuple to one slot's (core's) receive ring on arrival, and
    /// each core serves its own ring first come first served, each packet
    /// to completion. A packet that finds its ring full is dropped. The
    /// scheduler holds nothing: its policy has nothing left to choose.
    Rss {
        /// Descriptors per core's ring.
        ring: u32,
    },
}

/// DPDK's usual receive ring, descriptors per queue (`nb_rxd` in DPDK's
/// l2fwd/l3fwd examples, `RTE_TEST_RX_DESC_DEFAULT` = 1024).
pub const DEFAULT_RSS_RING: u32 = 1024;

impl EngineModel {
    /// Dispatches the core may have in service on it at once: an
    /// accelerator's queue depth (its hardware queue), else its slots; with
    /// RSS steering, one more than its cores and their rings hold, so that
    /// the core never holds a packet back: each reaches its core's ring or
    /// is dropped there.
    pub fn core_slots(&self) -> u32 {
        match (self.kind, self.steering) {
            (_, Steering::Rss { ring }) => self
                .slots
                .saturating_mul(ring.saturating_add(1))
                .saturating_add(1),
            (EngineKind::Accelerator, _) => self.queue_depth,
            _ => self.slots,
        }
    }
}

/// Direction of a DMA transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Device to host (posted writes).
    #[default]
    Write,
    /// Host to device (read requests and completions).
    Read,
}

/// Task sizes.
#[derive(Debug, Clone, PartialEq)]
pub enum SizeDist {
    /// Always this size.
    Fixed(u64),
    /// Uniform in `[min, max]`.
    Uniform {
        /// Smallest.
        min: u64,
        /// Largest.
        max: u64,
    },
    /// `exp(N(mu, sigma))` clamped to `[min, max]` (OSMOSIS' generator).
    LogNormal {
        /// Mean of the underlying normal.
        mu: f64,
        /// Standard deviation of the underlying normal.
        sigma: f64,
        /// Clamp below.
        min: u64,
        /// Clamp above.
        max: u64,
    },
    /// Sizes with relative weights.
    Empirical(Vec<(u64, f64)>),
}

impl SizeDist {
    /// Its mean size, bytes (a log-normal's before its clamp, then
    /// clamped): the size a task of it typically has.
    pub fn mean_bytes(&self) -> u64 {
        match self {
            SizeDist::Fixed(b) => *b,
            SizeDist::Uniform { min, max } => min + (max - min) / 2,
            SizeDist::LogNormal { mu, sigma, min, max } => {
                ((mu + sigma * sigma / 2.0).exp().round() as u64).clamp(*min, *max)
            }
            SizeDist::Empirical(points) => {
                let total: f64 = points.iter().map(|p| p.1.max(0.0)).sum();
                if total > 0.0 {
                    (points.iter().map(|p| p.0 as f64 * p.1.max(0.0)).sum::<f64>() / total).round() as u64
                } else {
                    0
                }
            }
        }
    }

    /// The largest size it can give.
    pub fn max_bytes(&self) -> u64 {
        match self {
            SizeDist::Fixed(b) => *b,
            SizeDist::Uniform { max, .. } | SizeDist::LogNormal { max, .. } => *max,
            SizeDist::Empirical(points) => points
                .iter()
                .filter(|p| p.1 > 0.0)
                .map(|p| p.0)
                .max()
                .unwrap_or(0),
        }
    }
}

/// When a tenant's tasks arrive.
#[derive(Debug, Clone, PartialEq)]
pub enum ArrivalSpec {
    /// Poisson process with this rate (tasks/s).
    Poisson(f64),
    /// Evenly spaced at this rate.
    Constant(f64),
    /// Inter-arrival times uniform in `[0, 2 / rate]`.
    Uniform(f64),
    /// Poisson at `rate` during `on`, silent during `off`, repeating.
    OnOff {
        /// On period.
        on: Nanos,
        /// Off period.
        off: Nanos,
        /// Rate while on.
        rate: f64,
    },
    /// Poisson whose rate changes over time: `(from, rate)` steps, `from`
    /// counted from the workload's start, ascending, the first at 0.
    Steps(Vec<(Nanos, f64)>),
    /// Keep this many tasks outstanding.
    Closed(u32),
    /// Replay of a CSV trace's rows for this tenant.
    Trace(Vec<TraceRow>),
}

/// One row of a trace: `time_ns,tenant,op,bytes`.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRow {
    /// Arrival time.
    pub time: Nanos,
    /// Operator.
    pub op: String,
    /// Size.
    pub bytes: u64,
}

/// A 5-tuple, with each field optional in a matching rule (wildcard).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowMatch {
    /// Source IPv4 address.
    pub src_ip: Option<std::net::Ipv4Addr>,
    /// Destination IPv4 address.
    pub dst_ip: Option<std::net::Ipv4Addr>,
    /// Source port.
    pub src_port: Option<u16>,
    /// Destination port.
    pub dst_port: Option<u16>,
    /// IP protocol number (6 TCP, 17 UDP).
    pub proto: Option<u8>,
}

/// A tenant's workload.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSpec {
    /// Engines each task goes through, in order (indices into the engines).
    pub stages: Vec<usize>,
    /// Operator name.
    pub op: String,
    /// Operator parameters (`key = value`), for live runs; the simulator
    /// takes costs from the service model instead.
    pub params: BTreeMap<String, String>,
    /// Sizes.
    pub size: SizeDist,
    /// Arrivals.
    pub arrival: ArrivalSpec,
    /// Number of tasks, if bounded.
    pub count: Option<u64>,
    /// When the first task may arrive.
    pub start: Nanos,
    /// Service model for compute stages, overriding the engine's.
    pub service: Option<ServiceSpec>,
    /// Direction on DMA stages.
    pub direction: Direction,
    /// The 5-tuple its packets carry (matched at ingress).
    pub flow: Option<FlowMatch>,
    /// How many flows its packets cycle over (source ports `1024..1024 +
    /// flows`, unless `flow` fixes the port); `None`: a new source port per
    /// packet, as a flow's sockets would. What RSS steering hashes.
    pub flows: Option<u32>,
    /// How long each of its `flows` lives before a new flow (a new source
    /// port, so a new RSS hash) takes its place, the flows' ends staggered
    /// evenly over a life; `None`: the same flows for the whole run.
    pub flow_life: Option<Nanos>,
    /// How many times its predicted service its tasks really take
    /// (`measured_over_predicted`, default 1): the scheduler is told the
    /// service model's prediction, the device takes this multiple of its
    /// draw. A tenant whose costs the model gets wrong (issue 29).
    pub measured_over_predicted: f64,
    /// iPipe's host migration (`migrate`): where its new requests may move
    /// and when; `None`: they always run on `stages`.
    pub migrate: Option<MigrateSpec>,
}

/// A tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantSpec {
    /// Unique name.
    pub name: String,
    /// Service-level objective (tenant-wide).
    pub slo: Slo,
    /// Its SLO's changes on some engines (by engine name or kind).
    pub overrides: Vec<(EngineSelector, SloOverride)>,
    /// Its workloads, in file order: each feeds its own flow queue (its
    /// index is the queue's, [`isola_core::Task::flow`]; `slo.flows` says
    /// how they share the tenant's turn). At least one.
    pub workloads: Vec<WorkloadSpec>,
    /// Ingress matching rule (OSMOSIS' matching engine); packets that match
    /// it go to this tenant's channels.
    pub flow_match: Option<FlowMatch>,
    /// Its keys as read: a live driver that starts isolad builds the
    /// daemon's tenant from them with the one tenant check
    /// ([`crate::tenant`]), so every key the scenario sets is in force.
    pub keys: crate::tenant::RawTenant,
}

impl TenantSpec {
    /// Its first workload: the only one of a tenant written with one
    /// `[tenant.workload]` table.
    pub fn workload(&self) -> &WorkloadSpec {
        &self.workloads[0]
    }

    /// Its first workload, to change.
    pub fn workload_mut(&mut self) -> &mut WorkloadSpec {
        &mut self.workloads[0]
    }

    /// Its SLO and per-engine changes as a run at time scale `scale`
    /// enforces them ([`isola_core::Slo::scaled`]).
    pub fn scaled_slo(&self, scale: isola_core::TimeScale) -> (Slo, Vec<(EngineSelector, SloOverride)>) {
        scale.tenant(&self.slo, &self.overrides)
    }
}

impl Scenario {
    /// Reads and checks the scenario at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        let path = path.as_ref();
        let text = crate::input::read_text_bounded(path, crate::input::MAX_SCENARIO_BYTES)
            .map_err(|message| ScenarioError::whole_file(path.display().to_string(), None, message))?;
        Scenario::parse(&text, path)
    }

    /// Checks scenario `text`; `path` names it in errors and anchors trace paths.
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        check::scenario(text, path.as_ref())
    }
}
