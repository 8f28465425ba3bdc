//! The daemon's configuration file (TOML, documented in docs/daemon.md):
//! its socket, its engines (operators, workers, policy, cost model) and its
//! tenants (SLO, memory quota, ring sizes, the Unix users and groups that
//! may act as them, how many connections each may hold). Every mistake is
//! reported with the file, line and key, as scenario files' are.
//!
//! Tenants are checked in `tenant` (the same check serves live changes).

mod tenant;

pub use tenant::{FlowConfig, TenantConfig};

use isola_core::{EngineKind, SplitWhen};
use isola_model::quantity::{Duration, Size};
use isola_model::scenario::slo::EngineRef;
use isola_model::scenario::source::Source;
use isola_model::ScenarioError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Largest configuration file: 1 MiB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Most tenant slots a daemon holds (configured plus spare).
pub const MAX_TENANT_SLOTS: usize = 1024;

/// A checked configuration.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// The file it was read from (SIGHUP reads it again).
    pub path: PathBuf,
    /// Where tenants connect.
    pub socket: PathBuf,
    /// Where `isola ctl` connects (owner-only).
    pub admin_socket: PathBuf,
    /// UDP addresses the packet path listens on (`[daemon] udp`).
    pub udp: Vec<SocketAddr>,
    /// Where Prometheus metrics are served over HTTP (`/metrics`), if
    /// anywhere (`[daemon] metrics`, or `isolad --metrics`).
    pub metrics: Option<SocketAddr>,
    /// Tenant slots beyond the configured tenants, for tenants added while
    /// the daemon runs.
    pub spare_tenants: usize,
    /// How long the daemon's threads poll for work before they sleep.
    pub spin: std::time::Duration,
    /// Pin the runtime's dispatcher and workers to cores of their own.
    pub pin_threads: bool,
    /// Run the runtime's dispatcher and workers in a real-time class
    /// (SCHED_FIFO) where the system permits it.
    pub realtime: bool,
    /// Largest input of one task, bytes.
    pub max_input: u64,
    /// The engines, in file order.
    pub engines: Vec<EngineConfig>,
    /// The tenants, in file order.
    pub tenants: Vec<TenantConfig>,
}

/// One engine.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    /// Its name.
    pub name: String,
    /// What it stands for (`kind = "accelerator"` unless set): OSMOSIS'
    /// processing units are `pu`. Its policy's default follows it.
    pub kind: EngineKind,
    /// Operators it serves (empty: every one).
    pub ops: Vec<String>,
    /// Worker threads; 0: none, the runtime's dispatcher runs the
    /// engine's tasks itself, one at a time, to completion
    /// (`isola_runtime::EngineConfig::on_dispatcher`).
    pub workers: usize,
    /// Dispatches the core may hand it beyond its workers (the workers'
    /// queue), 0 to 1024.
    pub queue_depth: usize,
    /// Its scheduling policy.
    pub policy: String,
    /// The policy's parameters.
    pub params: BTreeMap<String, String>,
    /// Cost model: fixed part, ns.
    pub base_ns: f64,
    /// Cost model: ns per byte.
    pub per_byte_ns: f64,
    /// A profile measured by `isola profile` (`profile = "FILE"`): its
    /// operators are predicted by their measured points instead of
    /// `base_ns` and `per_byte_ns`, and operators it lacks are refused.
    pub profile: Option<isola_core::profile::Profile>,
    /// Tasks larger than this are split into pieces of it (splittable
    /// operators only), when `split_when` says so.
    pub split: Option<u64>,
    /// When the core splits.
    pub split_when: SplitWhen,
    /// The most predicted service of one subtask, ns (`split_time`): each
    /// operator's tasks are cut at the bytes it is predicted to serve in
    /// that time (`None`: `split` bytes alone).
    pub split_time: Option<u64>,
    /// Whether the engine learns each operator's cost from the service it
    /// measures (`learn`, default true for accelerators and processing
    /// units): predictions follow what each operator (and parameters)
    /// really took, once it has run 3 times.
    pub learn: bool,
    /// A DMA engine's link to host memory, bytes per second (`bandwidth`):
    /// each copy into or out of a tenant's window takes at least its
    /// bytes over it (OSMOSIS' AXI path; none: as fast as memory copies).
    pub bandwidth: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    daemon: Spanned<RawDaemon>,
    #[serde(default)]
    engine: Vec<Spanned<RawEngine>>,
    #[serde(default)]
    tenant: Vec<Spanned<tenant::RawTenant>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDaemon {
    socket: Spanned<String>,
    admin_socket: Option<Spanned<String>>,
    #[serde(default)]
    udp: Vec<Spanned<String>>,
    max_input: Option<Spanned<Size>>,
    metrics: Option<Spanned<String>>,
    spare_tenants: Option<Spanned<usize>>,
    spin: Option<Spanned<Duration>>,
    #[serde(default)]
    pin_threads: bool,
    #[serde(default)]
    realtime: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEngine {
    name: Spanned<String>,
    kind: Option<Spanned<String>>,
    #[serde(default)]
    ops: Vec<Spanned<String>>,
    workers: Option<Spanned<usize>>,
    queue_depth: Option<Spanned<usize>>,
    policy: Option<Spanned<String>>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
    cost: Option<Spanned<RawCost>>,
    profile: Option<Spanned<String>>,
    split: Option<Spanned<Size>>,
    split_when: Option<Spanned<String>>,
    split_time: Option<Spanned<Duration>>,
    learn: Option<Spanned<bool>>,
    bandwidth: Option<Spanned<isola_model::quantity::RateValue>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCost {
    base: Duration,
    per_byte_ns: f64,
}

impl DaemonConfig {
    /// Reads and checks the configuration at `path`.
    pub fn load(path: &Path) -> Result<DaemonConfig, ScenarioError> {
        let text = isola_model::input::read_text_bounded(path, MAX_CONFIG_BYTES)
            .map_err(|message| ScenarioError::whole_file(path.display().to_string(), None, message))?;
        let mut config = DaemonConfig::parse(&text, path)?;
        config.path = std::fs::canonicalize(path).unwrap_or(config.path);
        Ok(config)
    }

    /// Checks configuration `text`; `path` names it in errors and anchors
    /// a relative socket path.
    pub fn parse(text: &str, path: &Path) -> Result<DaemonConfig, ScenarioError> {
        let src = Source {
            file: path.display().to_string(),
            text,
        };
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            src.at(span, None, e.message().trim().to_string())
        })?;
        let daemon = raw.daemon.into_inner();
        let socket = daemon.socket.get_ref();
        if socket.is_empty() {
            return Err(src.at(daemon.socket.span(), Some("socket"), "give the socket's path"));
        }
        let base = path.parent().unwrap_or(Path::new("."));
        let admin_socket = match &daemon.admin_socket {
            Some(a) if a.get_ref().is_empty() || a.get_ref() == socket => {
                return Err(src.at(a.span(), Some("admin_socket"), "give a path of its own"))
            }
            Some(a) => base.join(a.get_ref()),
            None => base.join(format!("{socket}.admin")),
        };
        let max_input = match daemon.max_input {
            Some(m) if m.get_ref().0 == 0 => {
                return Err(src.at(m.span(), Some("max_input"), "must be at least 1B"))
            }
            Some(m) => m.into_inner().0,
            None => 64 << 20,
        };
        let metrics = match daemon.metrics {
            Some(m) => match m.get_ref().parse::<SocketAddr>() {
                Ok(addr) => Some(addr),
                Err(_) => {
                    return Err(src.at(
                        m.span(),
                        Some("metrics"),
                        format!(
                            "`{}`: give an IP address and a port, such as \"127.0.0.1:9464\"",
                            m.get_ref()
                        ),
                    ))
                }
            },
            None => None,
        };
        let spin = match daemon.spin {
            Some(s) if s.get_ref().0 > 10_000_000 => {
                return Err(src.at(
                    s.span(),
                    Some("spin"),
                    "at most 10ms: a polling thread holds its core",
                ))
            }
            Some(s) => std::time::Duration::from_nanos(s.into_inner().0),
            None => isola_runtime::DEFAULT_SPIN,
        };
        let mut udp = Vec::new();
        for a in &daemon.udp {
            match a.get_ref().parse::<SocketAddr>() {
                Ok(addr) => udp.push(addr),
                Err(_) => {
                    return Err(src.at(
                        a.span(),
                        Some("udp"),
                        format!(
                            "`{}`: give an IP address and a port, such as \"127.0.0.1:9000\"",
                            a.get_ref()
                        ),
                    ))
                }
            }
        }
        let mut engines: Vec<EngineConfig> = Vec::new();
        for e in raw.engine {
            engines.push(check_engine(&src, base, e.into_inner(), &engines)?);
        }
        if engines.is_empty() {
            return Err(src.at(0..0, Some("engine"), "a daemon needs at least one [[engine]]"));
        }
        let refs = engine_refs(&engines);
        let scope = tenant::Scope {
            base,
            engines: &refs,
            udp: &udp,
        };
        // The tenant tables again as values, kept for live changes.
        let tables: Vec<toml::Table> = toml::from_str::<toml::Table>(text)
            .ok()
            .and_then(|mut t| t.remove("tenant"))
            .and_then(|t| match t {
                toml::Value::Array(a) => Some(a.into_iter().filter_map(|v| v.as_table().cloned()).collect()),
                _ => None,
            })
            .unwrap_or_default();
        let mut tenants: Vec<TenantConfig> = Vec::new();
        for (i, t) in raw.tenant.into_iter().enumerate() {
            let name_span = t.get_ref().name_span();
            let checked = tenant::check_tenant(&src, &scope, t, tables.get(i).cloned().unwrap_or_default())?;
            if tenants.iter().any(|o| o.name == checked.name) {
                return Err(src.at(
                    name_span,
                    Some("name"),
                    format!("tenant `{}` is defined twice", checked.name),
                ));
            }
            tenants.push(checked);
        }
        if tenants.is_empty() {
            return Err(src.at(0..0, Some("tenant"), "a daemon needs at least one [[tenant]]"));
        }
        let spare_tenants = match daemon.spare_tenants {
            Some(n) if tenants.len() + n.get_ref() > MAX_TENANT_SLOTS => {
                return Err(src.at(
                    n.span(),
                    Some("spare_tenants"),
                    format!("tenants and spare ones are at most {MAX_TENANT_SLOTS} together"),
                ))
            }
            Some(n) => n.into_inner(),
            None => 8,
        };
        // A static partition in slots mode gives every tenant slot, spare
        // ones too, a worker of its own; otherwise (`mode` "auto" or
        // "slices") an engine with fewer places than tenant slots is
        // time-sliced among them (FairNIC's form on a shared accelerator).
        let slots_mode = |e: &EngineConfig| e.params.get("mode").is_some_and(|m| m == "slots");
        for e in engines.iter().filter(|e| e.policy == "static" && slots_mode(e)) {
            let slots = tenants.len() + spare_tenants;
            if e.workers.max(1) + e.queue_depth < slots {
                return Err(src.at(
                    0..0,
                    Some("spare_tenants"),
                    format!(
                        "engine `{}` runs a static partition with mode = \"slots\", which needs a worker for each of the {slots} tenant slots ({} tenants + spare_tenants); lower spare_tenants, add workers, or leave mode out to time-slice the engine",
                        e.name,
                        tenants.len()
                    ),
                ));
            }
        }
        Ok(DaemonConfig {
            path: path.to_path_buf(),
            socket: base.join(socket),
            admin_socket,
            udp,
            metrics,
            spare_tenants,
            spin,
            pin_threads: daemon.pin_threads,
            realtime: daemon.realtime,
            max_input,
            engines,
            tenants,
        })
    }

    /// The engines as SLO checks name them.
    pub fn engine_refs(&self) -> Vec<EngineRef<'_>> {
        engine_refs(&self.engines)
    }

    /// Checks `text`, one tenant table (what `isola ctl add` sends; named
    /// `origin` in errors), against this configuration's engines and UDP
    /// addresses.
    pub fn parse_tenant(&self, text: &str, origin: &str) -> Result<TenantConfig, ScenarioError> {
        let engines = self.engine_refs();
        let scope = tenant::Scope {
            base: self.base(),
            engines: &engines,
            udp: &self.udp,
        };
        tenant::parse_tenant(text, origin, &scope)
    }

    /// The folder a relative path in this configuration is resolved
    /// against: the configuration file's.
    pub fn base(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}

/// The engines by name and kind, as SLO checks see them.
fn engine_refs(engines: &[EngineConfig]) -> Vec<EngineRef<'_>> {
    engines
        .iter()
        .map(|e| EngineRef {
            name: &e.name,
            kind: e.kind,
        })
        .collect()
}

/// Checks one `[[engine]]` (`earlier` are those before it; `base` anchors
/// a relative profile path).
fn check_engine(
    src: &Source<'_>,
    base: &Path,
    e: RawEngine,
    earlier: &[EngineConfig],
) -> Result<EngineConfig, ScenarioError> {
    let name = e.name.get_ref().clone();
    isola_model::scenario::slo::check_name(src, e.name.span(), "name", &name)?;
    if earlier.iter().any(|o| o.name == name) {
        return Err(src.at(
            e.name.span(),
            Some("name"),
            format!("engine `{name}` is defined twice"),
        ));
    }
    let kind = match &e.kind {
        None => EngineKind::Accelerator,
        Some(k) => match EngineKind::from_name(k.get_ref()) {
            Some(kind) => kind,
            None => {
                return Err(src.at(
                    k.span(),
                    Some("kind"),
                    format!(
                        "unknown engine kind `{}`: use accelerator, pu, dma or egress",
                        k.get_ref()
                    ),
                ))
            }
        },
    };
    // A DMA engine carries packet kernels' writes into tenants' host
    // windows, an egress engine the packet path's replies: neither runs
    // an operator.
    if let (EngineKind::Dma | EngineKind::Egress, Some(op)) = (kind, e.ops.first()) {
        return Err(src.at(
            op.span(),
            Some("ops"),
            format!("a {kind} engine runs no operator: it carries the packet path's transfers"),
        ));
    }
    for op in &e.ops {
        // A tenant's WebAssembly kernels run as the operator `wasm`.
        if op.get_ref() == crate::kernel::WASM_OPERATOR {
            continue;
        }
        if let Err(err) = isola_ops::find_operator(op.get_ref()) {
            return Err(src.at(op.span(), Some("ops"), err.to_string()));
        }
    }
    let workers = match e.workers {
        Some(w) if *w.get_ref() > 256 => {
            return Err(src.at(w.span(), Some("workers"), "must be from 0 to 256"))
        }
        Some(w) => w.into_inner(),
        None => 1,
    };
    let queue_depth = match e.queue_depth {
        Some(q) if *q.get_ref() > 1024 => {
            return Err(src.at(q.span(), Some("queue_depth"), "must be from 0 to 1024"))
        }
        Some(q) if workers == 0 && *q.get_ref() > 0 => {
            return Err(src.at(
                q.span(),
                Some("queue_depth"),
                "with workers = 0 the dispatcher runs each task as the core picks it: no queue; leave queue_depth out",
            ))
        }
        Some(q) => q.into_inner(),
        None => 0,
    };
    let params = string_params(e.params);
    let policy_span = e.policy.as_ref().map_or(e.name.span(), |p| p.span());
    let policy = match e.policy {
        Some(p) => match isola_core::policy::find_policy(p.get_ref()) {
            Ok(info) => info.name.to_string(),
            Err(err) => return Err(src.at(p.span(), Some("policy"), err.to_string())),
        },
        None => default_policy(kind).to_string(),
    };
    // Built once now, so that a bad parameter is reported at its line.
    let share = isola_core::policy::TenantShare {
        weight: 1.0,
        class: isola_core::TenantClass::BestEffort,
        latency: None,
    };
    let setup = isola_core::policy::registry::PolicySetup {
        tenants: &[share],
        slots: (workers.max(1) + queue_depth) as u32,
    };
    if let Err(err) = isola_core::policy::build_policy(&policy, &params, &setup) {
        return Err(src.at(policy_span, Some("params"), err.to_string()));
    }
    let profile = match (&e.profile, &e.cost) {
        (Some(p), Some(_)) => {
            return Err(src.at(p.span(), Some("profile"), "give either cost or profile, not both"))
        }
        (Some(p), None) => {
            Some(read_profile(&base.join(p.get_ref())).map_err(|m| src.at(p.span(), Some("profile"), m))?)
        }
        (None, _) => None,
    };
    let (base_ns, per_byte_ns) = match e.cost {
        Some(c) => {
            let span = c.span();
            let c = c.into_inner();
            if !(c.per_byte_ns.is_finite() && c.per_byte_ns >= 0.0) {
                return Err(src.at(span, Some("per_byte_ns"), "must be a finite number >= 0"));
            }
            (c.base.0 as f64, c.per_byte_ns)
        }
        None => (1_000.0, 1.0),
    };
    let split = match e.split {
        Some(s) if s.get_ref().0 == 0 => {
            return Err(src.at(
                s.span(),
                Some("split"),
                "must be at least 1B; leave it out to run tasks whole",
            ))
        }
        s => s.map(|s| s.into_inner().0),
    };
    let split_when = match &e.split_when {
        Some(w) => {
            isola_model::scenario::parse_split_when(w.get_ref(), isola_core::DEFAULT_CONTENTION_WINDOW_NS)
                .map_err(|m| src.at(w.span(), Some("split_when"), m))?
        }
        None => SplitWhen::Always,
    };
    let split_time = match e.split_time {
        Some(t) if split.is_none() => {
            return Err(src.at(
                t.span(),
                Some("split_time"),
                "caps the subtasks of a split: give `split` (the largest subtask, in bytes) too",
            ))
        }
        Some(t) if t.get_ref().0 == 0 => {
            return Err(src.at(t.span(), Some("split_time"), "must be greater than zero"))
        }
        t => t.map(|t| t.into_inner().0),
    };
    let learn = match e.learn {
        Some(l) => l.into_inner(),
        None => matches!(kind, EngineKind::Accelerator | EngineKind::ProcessingUnits),
    };
    let bandwidth = match e.bandwidth {
        None => None,
        Some(b) if kind != EngineKind::Dma => {
            return Err(src.at(
                b.span(),
                Some("bandwidth"),
                "only a dma engine has a link bandwidth",
            ))
        }
        Some(b) => {
            let rate = b.get_ref().0;
            let per_sec = rate.per_sec();
            if rate.unit() != isola_core::RateUnit::BytesPerSec || !per_sec.is_finite() || per_sec <= 0.0 {
                return Err(src.at(
                    b.span(),
                    Some("bandwidth"),
                    "must be a data rate above 0, such as \"512Gbit/s\" or \"8GB/s\"",
                ));
            }
            Some(per_sec)
        }
    };
    let ops = e.ops.into_iter().map(Spanned::into_inner).collect();
    Ok(EngineConfig {
        name,
        kind,
        ops,
        workers,
        queue_depth,
        policy,
        params,
        base_ns,
        per_byte_ns,
        profile,
        split,
        split_when,
        split_time,
        learn,
        bandwidth,
    })
}

/// Parameters as operators and policies take them: strings, a TOML value
/// of another type written as TOML writes it (`3`, `true`, `1.5`).
pub(crate) fn string_params(params: BTreeMap<String, toml::Value>) -> BTreeMap<String, String> {
    params
        .into_iter()
        .map(|(k, v)| match v {
            toml::Value::String(s) => (k, s),
            other => (k, other.to_string()),
        })
        .collect()
}

/// The policy an engine of `kind` runs unless its `policy` says: the
/// papers' own for the processing units (OSMOSIS' WLBVT), start-time fair
/// queuing by weight for an accelerator.
pub fn default_policy(kind: EngineKind) -> &'static str {
    match kind {
        EngineKind::ProcessingUnits => "wlbvt",
        // OSMOSIS' DMA engine and egress: weighted round robin.
        EngineKind::Dma | EngineKind::Egress => "wrr",
        EngineKind::Accelerator => "sfq",
    }
}

/// The profile at `path` (written by `isola profile`), with at least one
/// usable operator.
fn read_profile(path: &Path) -> Result<isola_core::profile::Profile, String> {
    let shown = path.display();
    let text = isola_model::input::read_text_bounded(path, isola_model::input::MAX_PROFILE_BYTES)
        .map_err(|e| format!("cannot read profile {shown}: {e}"))?;
    let profile: isola_core::profile::Profile = serde_json::from_str(&text)
        .map_err(|e| format!("{shown} is not a profile (from `isola profile`): {e}"))?;
    if profile.operators.iter().all(|o| o.model().is_none()) {
        return Err(format!("{shown}: no operator in it has a usable measured point"));
    }
    Ok(profile)
}
