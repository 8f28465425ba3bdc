//! Scenario files: one TOML document describes engines, tenants (SLOs and
//! workloads) and the policies to compare. The same format is shared with the
//! live runtime. `docs/scenario-format.md` documents every key.
//!
//! Loading checks everything before anything runs, and every error names the
//! file, line, column and key: syntax errors, unknown keys, malformed or
//! negative quantities, references to undefined engines or policies, keys
//! that do not apply to an engine's kind, and unbounded runs.

use crate::quantity::{parse_size, Duration, Frequency, RateValue, Size};
use isola_core::params::Params;
use isola_core::policy::registry::PolicySetup;
use isola_core::policy::{build_policy, find_policy, TenantShare};
use isola_core::tenant::{MAX_WEIGHT, MIN_WEIGHT};
use isola_core::{EngineKind, LatencyObjective, Nanos, RateSpec, RateUnit, Slo, TenantClass};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// A scenario that cannot be used, with where and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}:{column}: {}{message}", key.as_ref().map(|k| format!("key `{k}`: ")).unwrap_or_default())]
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
    /// Fragment size for DMA and egress engines under this run (OSMOSIS).
    pub fragment: Option<u64>,
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

/// What the device behind an engine is.
#[derive(Debug, Clone, PartialEq)]
pub enum DeviceSpec {
    /// FIFO lanes with a service-time model: accelerators and PU clusters.
    Compute {
        /// Default service model (tenants may override it).
        service: Option<ServiceSpec>,
        /// Clock for `Cycles` models, in Hz.
        clock_hz: f64,
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
    /// The device model.
    pub device: DeviceSpec,
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
}

/// A tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantSpec {
    /// Unique name.
    pub name: String,
    /// Service-level objective.
    pub slo: Slo,
    /// Its workload.
    pub workload: WorkloadSpec,
    /// Ingress matching rule (OSMOSIS' matching engine); packets that match
    /// it go to this tenant's channels.
    pub flow_match: Option<FlowMatch>,
}

// ---------------------------------------------------------------- raw TOML

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    run: Option<Spanned<RawRun>>,
    #[serde(default)]
    engine: Vec<Spanned<RawEngine>>,
    #[serde(default)]
    tenant: Vec<Spanned<RawTenant>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRun {
    seed: Option<u64>,
    duration: Option<Duration>,
    policies: Option<Spanned<Vec<Spanned<RawPolicy>>>>,
    window: Option<Duration>,
    #[serde(default)]
    solo: bool,
}

struct RawPolicy {
    name: String,
    label: Option<String>,
    params: BTreeMap<String, String>,
    fragment: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicyTable {
    name: String,
    label: Option<String>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
    fragment: Option<Size>,
}

impl<'de> Deserialize<'de> for RawPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawPolicy;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a policy name, or a table { name, label, params, fragment }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawPolicy, E> {
                Ok(RawPolicy {
                    name: v.into(),
                    label: None,
                    params: BTreeMap::new(),
                    fragment: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawPolicy, A::Error> {
                let t = RawPolicyTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                let params = t.params.into_iter().map(|(k, v)| (k, value_text(v))).collect();
                Ok(RawPolicy {
                    name: t.name,
                    label: t.label,
                    params,
                    fragment: t.fragment.map(|s| s.0),
                })
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEngine {
    name: Spanned<String>,
    kind: Spanned<String>,
    slots: Option<Spanned<u32>>,
    queue_depth: Option<Spanned<u32>>,
    service: Option<Spanned<toml::Value>>,
    clock: Option<Spanned<Frequency>>,
    egress_ratio: Option<Spanned<f64>>,
    bandwidth: Option<Spanned<RateValue>>,
    max_payload: Option<Spanned<Size>>,
    max_read_request: Option<Spanned<Size>>,
    tlp_overhead: Option<Spanned<Size>>,
    tlp_rate: Option<Spanned<RateValue>>,
    packet_overhead: Option<Spanned<Size>>,
}

#[derive(Deserialize, Clone)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
enum RawService {
    Constant { time: Duration },
    Exponential { mean: Duration },
    Affine { base: Duration, per_byte_ns: f64 },
    Table { points: Vec<(Size, Duration)> },
    Cycles { base: f64, per_byte: f64 },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTenant {
    name: Spanned<String>,
    weight: Option<Spanned<f64>>,
    class: Option<TenantClass>,
    reservation: Option<Spanned<RateValue>>,
    reservation_burst: Option<Spanned<f64>>,
    limit: Option<Spanned<RateValue>>,
    burst: Option<Spanned<Size>>,
    latency: Option<Duration>,
    latency_multiple: Option<Spanned<f64>>,
    budget: Option<Duration>,
    queue_cap: Option<Spanned<usize>>,
    #[serde(rename = "match")]
    flow_match: Option<FlowMatch>,
    workload: Spanned<RawWorkload>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    engine: Option<Spanned<String>>,
    pipeline: Option<Spanned<Vec<Spanned<String>>>>,
    op: Option<String>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
    size: Option<RawSize>,
    arrival: Spanned<RawArrival>,
    count: Option<Spanned<u64>>,
    start: Option<Duration>,
    service: Option<Spanned<toml::Value>>,
    #[serde(default)]
    direction: Direction,
    flow: Option<FlowMatch>,
}

enum RawSize {
    Fixed(u64),
    Dist(RawSizeDist),
}

#[derive(Deserialize)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
enum RawSizeDist {
    Fixed {
        size: Size,
    },
    Uniform {
        min: Size,
        max: Size,
    },
    LogNormal {
        mu: f64,
        sigma: f64,
        min: Size,
        max: Size,
    },
    Empirical {
        points: Vec<(Size, f64)>,
    },
}

impl<'de> Deserialize<'de> for RawSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as \"64B\", or a table { dist = ... }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawSize, E> {
                parse_size(v).map(RawSize::Fixed).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawSize, E> {
                Ok(RawSize::Fixed(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawSize, E> {
                u64::try_from(v)
                    .map(RawSize::Fixed)
                    .map_err(|_| E::custom(format!("a size cannot be negative, got {v}")))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawSize, A::Error> {
                RawSizeDist::deserialize(de::value::MapAccessDeserializer::new(map)).map(RawSize::Dist)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
enum RawArrival {
    Poisson(RateValue),
    Constant(RateValue),
    Uniform(RateValue),
    OnOff {
        on: Duration,
        off: Duration,
        rate: RateValue,
    },
    Steps(Vec<(Duration, RateValue)>),
    Closed(u32),
    Trace(String),
}

// ---------------------------------------------------------------- checking

/// Turns byte offsets into line and column, and builds errors.
struct Source<'a> {
    file: String,
    text: &'a str,
}

impl Source<'_> {
    fn at(&self, span: Range<usize>, key: Option<&str>, message: impl Into<String>) -> ScenarioError {
        let message = message.into();
        let start = span.start.min(self.text.len());
        // Serde reports some errors at the enclosing inline table; when the
        // message quotes the offending value and it appears in that table,
        // point at the value itself (and so at its key).
        let start = match (key, quoted(&message)) {
            (None, Some(value)) => {
                let end = span.end.clamp(start, self.text.len());
                self.text[start..end]
                    .find(&format!("\"{value}\""))
                    .map_or(start, |p| start + p)
            }
            _ => start,
        };
        let before = &self.text[..start];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        ScenarioError {
            file: self.file.clone(),
            line,
            column,
            key: key.map(str::to_owned).or_else(|| self.key_near(start)),
            message,
        }
    }

    /// The key whose value starts at `offset` (`key = <offset>`), or the key
    /// written at `offset` (`<offset>key = ...`).
    fn key_near(&self, offset: usize) -> Option<String> {
        let is_key = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        let line_start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let before = self.text[line_start..offset].trim_end();
        if let Some(lhs) = before.strip_suffix('=') {
            let lhs = lhs.trim_end();
            let key: String = lhs.chars().rev().take_while(|&c| is_key(c)).collect();
            if !key.is_empty() {
                return Some(key.chars().rev().collect());
            }
        }
        let after: String = self.text[offset..].chars().take_while(|&c| is_key(c)).collect();
        let rest = self.text[offset + after.len()..].trim_start();
        (!after.is_empty() && rest.starts_with('=')).then_some(after)
    }
}

/// A parameter value as text: strings as written, other values as TOML.
fn value_text(v: toml::Value) -> String {
    match v {
        toml::Value::String(s) => s,
        other => other.to_string(),
    }
}

/// The first `backticked` word of an error message.
fn quoted(message: &str) -> Option<&str> {
    let rest = message.split_once('`')?.1;
    Some(rest.split_once('`')?.0)
}

impl Scenario {
    /// Reads and checks the scenario at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: path.display().to_string(),
            line: 0,
            column: 0,
            key: None,
            message: format!("cannot read: {e}"),
        })?;
        Scenario::parse(&text, path)
    }

    /// Checks scenario `text`; `path` names it in errors and anchors trace paths.
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        let path = path.as_ref();
        let src = Source {
            file: path.display().to_string(),
            text,
        };
        let raw: RawScenario = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            src.at(span, None, e.message().trim().to_string())
        })?;
        let (run, policy_spans) = check_run(&src, raw.run)?;
        let engines = raw
            .engine
            .into_iter()
            .map(|e| check_engine(&src, e))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, e) in engines.iter().enumerate() {
            if engines[..i].iter().any(|o| o.name == e.name) {
                return Err(src.at(
                    0..0,
                    Some("engine.name"),
                    format!("engine `{}` is defined twice", e.name),
                ));
            }
        }
        if engines.is_empty() {
            return Err(src.at(0..0, Some("engine"), "a scenario needs at least one [[engine]]"));
        }
        let base = path.parent().unwrap_or(Path::new("."));
        let mut tenants = Vec::new();
        for t in raw.tenant {
            let spec = check_tenant(&src, base, &engines, &tenants, t, run.duration.is_some())?;
            tenants.push(spec);
        }
        if tenants.is_empty() {
            return Err(src.at(0..0, Some("tenant"), "a scenario needs at least one [[tenant]]"));
        }
        // Build every policy for every engine now, so a bad parameter value
        // or an impossible setup is reported at its line before anything runs.
        let shares: Vec<TenantShare> = tenants
            .iter()
            .map(|t| TenantShare {
                weight: t.slo.weight,
                class: t.slo.class,
                latency: t.slo.latency,
            })
            .collect();
        for (p, span) in run.policies.iter().zip(policy_spans) {
            for e in &engines {
                let slots = if e.kind == EngineKind::Accelerator {
                    e.queue_depth
                } else {
                    e.slots
                };
                let setup = PolicySetup {
                    tenants: &shares,
                    slots,
                };
                if let Err(err) = build_policy(&p.name, &p.params, &setup) {
                    return Err(src.at(span, Some("policies"), format!("engine `{}`: {err}", e.name)));
                }
            }
        }
        Ok(Scenario {
            path: path.to_path_buf(),
            run,
            engines,
            tenants,
        })
    }
}

/// The `[run]` table, and where each policy entry is written.
fn check_run(
    src: &Source<'_>,
    raw: Option<Spanned<RawRun>>,
) -> Result<(RunSpec, Vec<Range<usize>>), ScenarioError> {
    let raw = raw.map(Spanned::into_inner).unwrap_or_default();
    let mut spans = Vec::new();
    let mut policies = Vec::new();
    match raw.policies {
        None => {
            policies.push(PolicyRun {
                name: "fcfs".into(),
                label: "fcfs".into(),
                params: BTreeMap::new(),
                fragment: None,
            });
            spans.push(0..0);
        }
        Some(list) => {
            if list.get_ref().is_empty() {
                return Err(src.at(list.span(), Some("policies"), "give at least one policy"));
            }
            for p in list.into_inner() {
                let span = p.span();
                let p = p.into_inner();
                let info = find_policy(&p.name)
                    .map_err(|e| src.at(span.clone(), Some("policies"), e.to_string()))?;
                Params::new(format!("policy `{}`", info.name), info.params, &p.params)
                    .map_err(|e| src.at(span.clone(), Some("policies"), e.to_string()))?;
                spans.push(span.clone());
                let label = p.label.unwrap_or_else(|| p.name.clone());
                if policies.iter().any(|q: &PolicyRun| q.label == label) {
                    return Err(src.at(
                        span,
                        Some("policies"),
                        format!("two runs are labelled `{label}`: give one a `label`"),
                    ));
                }
                policies.push(PolicyRun {
                    name: p.name,
                    label,
                    params: p.params,
                    fragment: p.fragment,
                });
            }
        }
    }
    if let Some(d) = raw.duration {
        if d.0 == 0 {
            return Err(src.at(0..0, Some("run.duration"), "must be greater than zero"));
        }
    }
    let run = RunSpec {
        seed: raw.seed.unwrap_or(1),
        duration: raw.duration.map(|d| d.0),
        policies,
        window: raw.window.map_or(100_000, |w| w.0).max(1),
        solo: raw.solo,
    };
    Ok((run, spans))
}

fn check_service(src: &Source<'_>, raw: Spanned<toml::Value>) -> Result<ServiceSpec, ScenarioError> {
    let span = raw.span();
    let bad = |m: &str| src.at(span.clone(), Some("service"), m.to_string());
    let value = raw.into_inner();
    if let Some(table) = value.as_table().filter(|t| t.contains_key("profile")) {
        return profile_service(src, table).map_err(|m| bad(&m));
    }
    // No key given: the error is placed at the value it quotes, and so at
    // that value's own key (`mean`, `time`...), as serde's would be.
    let raw = RawService::deserialize(value).map_err(|e| src.at(span.clone(), None, e.message().trim()))?;
    Ok(match raw {
        RawService::Constant { time } => ServiceSpec::Constant(time.0),
        RawService::Exponential { mean } => {
            if mean.0 == 0 {
                return Err(bad("an exponential service needs a mean > 0"));
            }
            ServiceSpec::Exponential(mean.0)
        }
        RawService::Affine { base, per_byte_ns } => {
            if !(per_byte_ns.is_finite() && per_byte_ns >= 0.0) {
                return Err(bad("per_byte_ns must be >= 0"));
            }
            ServiceSpec::Affine {
                base_ns: base.0 as f64,
                per_byte_ns,
            }
        }
        RawService::Table { points } => {
            if points.is_empty() {
                return Err(bad("a table needs at least one [size, time] point"));
            }
            ServiceSpec::Table(points.into_iter().map(|(s, t)| (s.0, t.0 as f64)).collect())
        }
        RawService::Cycles { base, per_byte } => {
            if !(base.is_finite() && base >= 0.0 && per_byte.is_finite() && per_byte >= 0.0) {
                return Err(bad("cycles base and per_byte must be >= 0"));
            }
            ServiceSpec::Cycles { base, per_byte }
        }
    })
}

/// `service = { profile = "FILE", op = "NAME" }`: the operator's measured
/// points from a profile written by `isola profile` (a path relative to the
/// scenario file), as a table service.
fn profile_service(src: &Source<'_>, table: &toml::Table) -> Result<ServiceSpec, String> {
    if let Some(k) = table.keys().find(|k| *k != "profile" && *k != "op") {
        return Err(format!(
            "unknown field `{k}` in a profile service (it takes `profile` and `op`)"
        ));
    }
    let file = table
        .get("profile")
        .and_then(toml::Value::as_str)
        .ok_or("`profile` must be the path of a profile file (from `isola profile`)")?;
    let op = table
        .get("op")
        .and_then(toml::Value::as_str)
        .ok_or("a profile service needs `op`: the operator whose costs to take")?;
    let path = Path::new(&src.file).parent().unwrap_or(Path::new(".")).join(file);
    let shown = path.display();
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read profile {shown}: {e}"))?;
    let profile: isola_core::profile::Profile =
        serde_json::from_str(&text).map_err(|e| format!("{shown} is not a profile: {e}"))?;
    let points: Vec<(u64, f64)> = profile
        .operator(op)
        .map_err(|e| format!("{shown}: {e}"))?
        .points
        .iter()
        .map(|p| (p.bytes, p.median_ns))
        .collect();
    if points.is_empty() || points.iter().any(|p| !(p.1.is_finite() && p.1 >= 0.0)) {
        return Err(format!("{shown}: the profile of `{op}` has no valid points"));
    }
    Ok(ServiceSpec::Table(points))
}

fn check_engine(src: &Source<'_>, raw: Spanned<RawEngine>) -> Result<EngineModel, ScenarioError> {
    let raw = raw.into_inner();
    let kind = match raw.kind.get_ref().as_str() {
        "accelerator" => EngineKind::Accelerator,
        "pu" => EngineKind::ProcessingUnits,
        "dma" => EngineKind::Dma,
        "egress" => EngineKind::Egress,
        other => {
            return Err(src.at(
                raw.kind.span(),
                Some("kind"),
                format!("unknown engine kind `{other}`: use accelerator, pu, dma or egress"),
            ))
        }
    };
    // Keys that only some kinds take: (key, where it is written if present, kinds).
    fn at<T>(v: &Option<Spanned<T>>) -> Option<Range<usize>> {
        v.as_ref().map(Spanned::span)
    }
    use EngineKind::*;
    type KindKey<'k> = (&'k str, Option<Range<usize>>, &'k [EngineKind]);
    let kind_keys: [KindKey; 9] = [
        ("queue_depth", at(&raw.queue_depth), &[Accelerator]),
        ("service", at(&raw.service), &[Accelerator, ProcessingUnits]),
        ("clock", at(&raw.clock), &[ProcessingUnits]),
        ("bandwidth", at(&raw.bandwidth), &[Dma, Egress]),
        ("max_payload", at(&raw.max_payload), &[Dma]),
        ("max_read_request", at(&raw.max_read_request), &[Dma]),
        ("tlp_overhead", at(&raw.tlp_overhead), &[Dma]),
        ("tlp_rate", at(&raw.tlp_rate), &[Dma]),
        ("packet_overhead", at(&raw.packet_overhead), &[Egress]),
    ];
    for (key, span, kinds) in kind_keys {
        if let Some(span) = span.filter(|_| !kinds.contains(&kind)) {
            let names: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
            let message = format!("only applies to {} engines, not {kind}", names.join("/"));
            return Err(src.at(span, Some(key), message));
        }
    }

    let slots = match raw.slots {
        Some(s) if *s.get_ref() == 0 => return Err(src.at(s.span(), Some("slots"), "must be at least 1")),
        Some(s) => s.into_inner(),
        None => 1,
    };
    let queue_depth = match raw.queue_depth {
        Some(q) if *q.get_ref() < slots => {
            return Err(src.at(
                q.span(),
                Some("queue_depth"),
                format!("must be at least slots ({slots})"),
            ))
        }
        Some(q) => q.into_inner(),
        None => slots,
    };
    let egress_ratio = match raw.egress_ratio {
        Some(r) if !(r.get_ref().is_finite() && *r.get_ref() >= 0.0) => {
            return Err(src.at(r.span(), Some("egress_ratio"), "must be >= 0"))
        }
        Some(r) => r.into_inner(),
        None => 1.0,
    };
    let bytes_rate = |v: Option<Spanned<RateValue>>, key: &str| -> Result<f64, ScenarioError> {
        match v {
            None => Err(src.at(
                raw.kind.span(),
                Some(key),
                format!("{kind} engines need a `{key}` (e.g. \"400Gbit/s\")"),
            )),
            Some(r) if r.get_ref().0.unit() != RateUnit::BytesPerSec => Err(src.at(
                r.span(),
                Some(key),
                "must be a data rate such as \"512Gbit/s\" or \"8GB/s\"",
            )),
            Some(r) => Ok(r.into_inner().0.per_sec()),
        }
    };
    let device = match kind {
        Accelerator | ProcessingUnits => DeviceSpec::Compute {
            service: raw.service.map(|s| check_service(src, s)).transpose()?,
            clock_hz: raw.clock.map_or(1e9, |c| c.into_inner().0),
        },
        Dma => {
            let size = |v: Option<Spanned<Size>>, key: &str, default: u64| -> Result<u64, ScenarioError> {
                match v {
                    Some(s) if s.get_ref().0 == 0 && key != "tlp_overhead" => {
                        Err(src.at(s.span(), Some(key), "must be greater than zero"))
                    }
                    Some(s) => Ok(s.into_inner().0),
                    None => Ok(default),
                }
            };
            let tlp_rate = match raw.tlp_rate {
                Some(r) if r.get_ref().0.unit() != RateUnit::OpsPerSec => {
                    return Err(src.at(
                        r.span(),
                        Some("tlp_rate"),
                        "must be a rate of TLPs such as \"50M/s\"",
                    ))
                }
                r => r.map(|r| r.into_inner().0.per_sec()),
            };
            DeviceSpec::Dma(DmaSpec {
                bytes_per_sec: bytes_rate(raw.bandwidth, "bandwidth")?,
                max_payload: size(raw.max_payload, "max_payload", 256)?,
                max_read_request: size(raw.max_read_request, "max_read_request", 512)?,
                tlp_overhead: size(raw.tlp_overhead, "tlp_overhead", 24)?,
                tlp_rate,
            })
        }
        Egress => DeviceSpec::Egress {
            bytes_per_sec: bytes_rate(raw.bandwidth, "bandwidth")?,
            packet_overhead: raw.packet_overhead.map_or(24, |s| s.into_inner().0),
        },
    };
    Ok(EngineModel {
        name: raw.name.into_inner(),
        kind,
        slots,
        queue_depth,
        egress_ratio,
        device,
    })
}

fn check_size(src: &Source<'_>, span: Range<usize>, raw: Option<RawSize>) -> Result<SizeDist, ScenarioError> {
    let bad = |m: String| src.at(span.clone(), Some("size"), m);
    Ok(match raw {
        None => SizeDist::Fixed(64),
        Some(RawSize::Fixed(b)) | Some(RawSize::Dist(RawSizeDist::Fixed { size: Size(b) })) => {
            SizeDist::Fixed(b)
        }
        Some(RawSize::Dist(RawSizeDist::Uniform { min, max })) => {
            if min.0 > max.0 {
                return Err(bad(format!("min {} is above max {}", min.0, max.0)));
            }
            SizeDist::Uniform {
                min: min.0,
                max: max.0,
            }
        }
        Some(RawSize::Dist(RawSizeDist::LogNormal { mu, sigma, min, max })) => {
            if !(mu.is_finite() && sigma.is_finite() && sigma >= 0.0) {
                return Err(bad("lognormal needs a finite mu and sigma >= 0".into()));
            }
            if min.0 > max.0 {
                return Err(bad(format!("min {} is above max {}", min.0, max.0)));
            }
            SizeDist::LogNormal {
                mu,
                sigma,
                min: min.0,
                max: max.0,
            }
        }
        Some(RawSize::Dist(RawSizeDist::Empirical { points })) => {
            if points.is_empty()
                || points.iter().any(|(_, w)| !(w.is_finite() && *w >= 0.0))
                || points.iter().all(|(_, w)| *w == 0.0)
            {
                return Err(bad(
                    "empirical sizes need [size, weight] points with weights >= 0, not all 0".into(),
                ));
            }
            SizeDist::Empirical(points.into_iter().map(|(s, w)| (s.0, w)).collect())
        }
    })
}

fn load_trace(
    src: &Source<'_>,
    span: Range<usize>,
    base: &Path,
    file: &str,
    tenant: &str,
) -> Result<Vec<TraceRow>, ScenarioError> {
    let path = base.join(file);
    let shown = path.display().to_string();
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_path(&path)
        .map_err(|e| src.at(span.clone(), Some("trace"), format!("cannot read {shown}: {e}")))?;
    let at = |line: u64, field: &str, message: String| ScenarioError {
        file: shown.clone(),
        line: line as usize,
        column: 1,
        key: Some(field.to_string()),
        message,
    };
    let headers = reader
        .headers()
        .map_err(|e| at(1, "header", e.to_string()))?
        .clone();
    let want = ["time_ns", "tenant", "op", "bytes"];
    if headers.iter().collect::<Vec<_>>() != want {
        return Err(at(
            1,
            "header",
            format!("expected the columns {}", want.join(",")),
        ));
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| at(e.position().map_or(0, |p| p.line()), "row", e.to_string()))?;
        let line = record.position().map_or(0, |p| p.line());
        if &record[1] != tenant {
            continue;
        }
        let time = record[0].parse::<u64>().map_err(|_| {
            at(
                line,
                "time_ns",
                format!("`{}` is not a whole number of ns", &record[0]),
            )
        })?;
        let bytes = record[3].parse::<u64>().map_err(|_| {
            at(
                line,
                "bytes",
                format!("`{}` is not a whole number of bytes", &record[3]),
            )
        })?;
        rows.push(TraceRow {
            time,
            op: record[2].to_string(),
            bytes,
        });
    }
    rows.sort_by_key(|r| r.time);
    Ok(rows)
}

fn check_tenant(
    src: &Source<'_>,
    base: &Path,
    engines: &[EngineModel],
    earlier: &[TenantSpec],
    raw: Spanned<RawTenant>,
    bounded_by_duration: bool,
) -> Result<TenantSpec, ScenarioError> {
    let raw = raw.into_inner();
    let name = raw.name.get_ref().clone();
    if earlier.iter().any(|t| t.name == name) {
        return Err(src.at(
            raw.name.span(),
            Some("name"),
            format!("tenant `{name}` is defined twice"),
        ));
    }
    let weight = raw.weight.as_ref().map_or(1.0, |w| *w.get_ref());
    if !(MIN_WEIGHT..=MAX_WEIGHT).contains(&weight) {
        let span = raw.weight.as_ref().map_or(raw.name.span(), |w| w.span());
        return Err(src.at(
            span,
            Some("weight"),
            format!("must be between {MIN_WEIGHT} and {MAX_WEIGHT}, got {weight}"),
        ));
    }
    let spec = |rate: Option<Spanned<RateValue>>, burst: f64| {
        rate.map(|r| RateSpec {
            rate: r.into_inner().0,
            burst,
        })
    };
    let burst = raw.burst.as_ref().map_or(0.0, |b| b.get_ref().0 as f64);
    let reservation_burst = match raw.reservation_burst {
        Some(b) if !(b.get_ref().is_finite() && *b.get_ref() >= 0.0) => {
            return Err(src.at(b.span(), Some("reservation_burst"), "must be >= 0"))
        }
        b => b.map_or(0.0, |b| b.into_inner()),
    };
    let latency = match (raw.latency, raw.latency_multiple) {
        (Some(_), Some(m)) => {
            return Err(src.at(
                m.span(),
                Some("latency_multiple"),
                "give either latency or latency_multiple, not both",
            ))
        }
        (Some(d), None) => Some(LatencyObjective::Absolute(d.0)),
        (None, Some(m)) => Some(LatencyObjective::ServiceMultiple(*m.get_ref())),
        (None, None) => None,
    };
    let tenant_span = raw.name.span();
    let slo = Slo {
        weight,
        class: raw.class.unwrap_or_default(),
        reservation: spec(raw.reservation, reservation_burst),
        limit: spec(raw.limit, burst),
        latency,
        service_budget: raw.budget.map(|b| b.0),
        queue_cap: match raw.queue_cap {
            Some(c) if *c.get_ref() == 0 => {
                return Err(src.at(c.span(), Some("queue_cap"), "must be at least 1"))
            }
            Some(c) => c.into_inner(),
            None => isola_core::tenant::DEFAULT_QUEUE_CAP,
        },
        memory_quota: None,
    };
    if let Err((field, reason)) = slo.validate() {
        return Err(src.at(tenant_span, Some(field), reason));
    }

    let w_span = raw.workload.span();
    let w = raw.workload.into_inner();
    let engine_index = |n: &Spanned<String>| {
        engines
            .iter()
            .position(|e| &e.name == n.get_ref())
            .ok_or_else(|| {
                let known: Vec<&str> = engines.iter().map(|e| e.name.as_str()).collect();
                src.at(
                    n.span(),
                    None,
                    format!(
                        "no engine named `{}` (engines: {})",
                        n.get_ref(),
                        known.join(", ")
                    ),
                )
            })
    };
    let stages = match (&w.engine, &w.pipeline) {
        (Some(e), None) => vec![engine_index(e)?],
        (None, Some(p)) if !p.get_ref().is_empty() => {
            p.get_ref().iter().map(engine_index).collect::<Result<_, _>>()?
        }
        (None, Some(p)) => return Err(src.at(p.span(), Some("pipeline"), "give at least one engine")),
        (Some(_), Some(p)) => {
            return Err(src.at(
                p.span(),
                Some("pipeline"),
                "give either engine or pipeline, not both",
            ))
        }
        (None, None) => {
            return Err(src.at(
                w_span,
                Some("workload"),
                "needs `engine = \"...\"` or `pipeline = [...]`",
            ))
        }
    };
    let service = w.service.map(|s| check_service(src, s)).transpose()?;
    for &s in &stages {
        if let DeviceSpec::Compute { service: None, .. } = engines[s].device {
            if service.is_none() {
                return Err(src.at(
                    w_span.clone(),
                    Some("service"),
                    format!(
                        "engine `{}` has no service model: give one here or on the engine",
                        engines[s].name
                    ),
                ));
            }
        }
    }
    let size = check_size(src, w_span.clone(), w.size)?;
    let arrival_span = w.arrival.span();
    let arrival = match w.arrival.into_inner() {
        RawArrival::Poisson(r)
        | RawArrival::Constant(r)
        | RawArrival::Uniform(r)
        | RawArrival::OnOff { rate: r, .. }
            if r.0.unit() != RateUnit::OpsPerSec =>
        {
            return Err(src.at(
                arrival_span,
                Some("arrival"),
                "arrival rates are tasks per second, such as \"500k/s\"",
            ));
        }
        RawArrival::Poisson(r) => ArrivalSpec::Poisson(r.0.per_sec()),
        RawArrival::Constant(r) => ArrivalSpec::Constant(r.0.per_sec()),
        RawArrival::Uniform(r) => ArrivalSpec::Uniform(r.0.per_sec()),
        RawArrival::OnOff { on, off, rate } => {
            if on.0 == 0 {
                return Err(src.at(
                    arrival_span,
                    Some("on"),
                    "the on period must be greater than zero",
                ));
            }
            ArrivalSpec::OnOff {
                on: on.0,
                off: off.0,
                rate: rate.0.per_sec(),
            }
        }
        RawArrival::Steps(steps) => {
            let mut out = Vec::with_capacity(steps.len());
            for (i, (from, rate)) in steps.into_iter().enumerate() {
                let bad = |why: String| Err(src.at(arrival_span.clone(), Some("steps"), why));
                if rate.0.unit() != RateUnit::OpsPerSec {
                    return bad("arrival rates are tasks per second, such as \"500k/s\"".into());
                }
                match out.last() {
                    None if from.0 != 0 => return bad("the first step must start at \"0s\"".into()),
                    Some(&(prev, _)) if from.0 <= prev => {
                        return bad(format!("step {} does not start after the one before it", i + 1))
                    }
                    _ => {}
                }
                out.push((from.0, rate.0.per_sec()));
            }
            if out.is_empty() {
                return Err(src.at(arrival_span, Some("steps"), "give at least one [from, rate] step"));
            }
            ArrivalSpec::Steps(out)
        }
        RawArrival::Closed(n) => {
            if n == 0 {
                return Err(src.at(arrival_span, Some("closed"), "keep at least 1 task outstanding"));
            }
            if n as usize > slo.queue_cap {
                return Err(src.at(
                    arrival_span,
                    Some("closed"),
                    format!("{n} outstanding exceeds queue_cap {}", slo.queue_cap),
                ));
            }
            ArrivalSpec::Closed(n)
        }
        RawArrival::Trace(file) => {
            ArrivalSpec::Trace(load_trace(src, arrival_span.clone(), base, &file, &name)?)
        }
    };
    let count = w.count.map(|c| c.into_inner());
    let finite = count.is_some() || matches!(arrival, ArrivalSpec::Trace(_));
    if !finite && !bounded_by_duration {
        return Err(src.at(
            arrival_span,
            Some("count"),
            "this workload never ends: give it a `count` or give [run] a `duration`",
        ));
    }
    Ok(TenantSpec {
        name,
        slo,
        flow_match: raw.flow_match,
        workload: WorkloadSpec {
            stages,
            op: w.op.unwrap_or_else(|| "generic".into()),
            params: w.params.into_iter().map(|(k, v)| (k, value_text(v))).collect(),
            size,
            arrival,
            count,
            start: w.start.map_or(0, |s| s.0),
            service,
            direction: w.direction,
            flow: w.flow,
        },
    })
}
