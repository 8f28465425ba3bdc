//! The daemon's configuration file (TOML, documented in docs/daemon.md):
//! its socket, its engines (operators, workers, policy, cost model) and its
//! tenants (SLO, memory quota, ring sizes, the Unix users and groups that
//! may act as them, how many connections each may hold). Every mistake is
//! reported with the file, line and key, as scenario files' are.
//!
//! Tenants are checked in `tenant` (the same check serves live changes).

mod admission;
mod tenant;

pub use admission::{admit, reserved};
pub use tenant::{DaemonTenant, FlowConfig};

use isola_core::{EngineKind, SplitWhen};
use isola_model::quantity::{Duration, Size};
use isola_model::scenario::source::Source;
use isola_model::tenant::{DaemonScope, EngineRef, RawTenant};
use isola_model::ScenarioError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Largest configuration file: 1 MiB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Most tenant seats a daemon holds (configured plus spare).
pub const MAX_TENANT_SEATS: usize = 1024;

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
    /// Tenant seats beyond the configured tenants, for tenants added while
    /// the daemon runs.
    pub spare_tenants: usize,
    /// How long the daemon's threads poll for work before they sleep (in
    /// a real-time class granted by `realtime`, the runtime's never do).
    pub spin: std::time::Duration,
    /// Pin the runtime's dispatcher and workers to cores of their own.
    pub pin_threads: bool,
    /// Run the runtime's dispatcher and workers in a real-time class
    /// (SCHED_FIFO) where the system permits it.
    pub realtime: bool,
    /// Keep the real-time threads under the duty-cycle regime (on by
    /// default: `RuntimeBuilder::realtime_duty_cycle`).
    pub realtime_duty_cycle: bool,
    /// Largest input of one task, bytes.
    pub max_input: u64,
    /// The engines, in file order.
    pub engines: Vec<DaemonEngine>,
    /// The tenants, in file order.
    pub tenants: Vec<DaemonTenant>,
}

/// One engine.
#[derive(Debug, Clone, PartialEq)]
pub struct DaemonEngine {
    /// Its name.
    pub name: String,
    /// What it stands for (`kind = "accelerator"` unless set): OSMOSIS'
    /// processing units are `pu`. Its policy's default follows it.
    pub kind: EngineKind,
    /// Operators it serves (empty: every one).
    pub ops: Vec<String>,
    /// Worker threads; 0: none, the runtime's dispatcher runs the
    /// engine's tasks itself, one at a time, to completion
    /// (`isola_runtime::DaemonEngine::on_dispatcher`).
    pub workers: usize,
    /// Dispatches the core may hand it beyond its workers (the workers'
    /// queue), 0 to 1024.
    pub queue_depth: usize,
    /// A whole task predicted to take at most this long (ns) runs on the
    /// dispatcher's thread while the engine's workers have nothing
    /// (`inline_below`, default 2 us; 0: never;
    /// `isola_runtime::EngineConfig::with_inline_below`).
    pub inline_below: u64,
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
    /// How the engine batches a tenant's small tasks (`batch = { tasks,
    /// bytes, wait }`), if it does.
    pub batch: Option<isola_core::BatchRule>,
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

impl DaemonEngine {
    /// Engine `name` of `kind` with every other key at its default (as
    /// a `[[engine]]` table with only `name` and `kind` gives it): one
    /// worker, no queue, its kind's default policy, a cost of 1 us +
    /// 1 ns/byte, whole tasks, learning where the kind computes.
    pub fn new(name: impl Into<String>, kind: EngineKind) -> DaemonEngine {
        DaemonEngine {
            name: name.into(),
            kind,
            ops: Vec::new(),
            workers: 1,
            queue_depth: 0,
            inline_below: isola_runtime::DEFAULT_INLINE_BELOW,
            policy: kind.default_policy().to_string(),
            params: BTreeMap::new(),
            base_ns: 1_000.0,
            per_byte_ns: 1.0,
            profile: None,
            split: None,
            split_when: SplitWhen::Always,
            split_time: None,
            batch: None,
            learn: isola_model::engine::default_learn(kind, isola_model::engine::EngineContext::Daemon),
            bandwidth: None,
        }
    }
}

impl DaemonConfig {
    /// A daemon listening on `socket` (its admin socket beside it, with
    /// `.admin` added) with every `[daemon]` key at its default and no
    /// engines or tenants yet: what a program that starts isolad fills in
    /// by code ([`DaemonConfig::check_tenant`] checks each tenant it adds
    /// as the file's are).
    pub fn new(socket: PathBuf) -> DaemonConfig {
        let mut admin = socket.clone().into_os_string();
        admin.push(".admin");
        DaemonConfig {
            path: socket
                .parent()
                .map_or_else(PathBuf::new, |d| d.join("isolad.toml")),
            admin_socket: PathBuf::from(admin),
            socket,
            udp: Vec::new(),
            metrics: None,
            spare_tenants: DEFAULT_SPARE_TENANTS,
            spin: isola_runtime::DEFAULT_SPIN,
            pin_threads: false,
            realtime: false,
            realtime_duty_cycle: true,
            max_input: DEFAULT_MAX_INPUT,
            engines: Vec::new(),
            tenants: Vec::new(),
        }
    }
}

/// Tenant seats kept spare unless `spare_tenants` says.
pub const DEFAULT_SPARE_TENANTS: usize = 8;

/// The largest input of one task unless `max_input` says: 64 MiB.
pub const DEFAULT_MAX_INPUT: u64 = 64 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    daemon: Spanned<RawDaemon>,
    #[serde(default)]
    engine: Vec<Spanned<RawEngine>>,
    #[serde(default)]
    tenant: Vec<Spanned<RawTenant>>,
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
    #[serde(default = "on")]
    realtime_duty_cycle: bool,
}

/// The default of a setting that is on unless turned off.
fn on() -> bool {
    true
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
    inline_below: Option<Spanned<Duration>>,
    policy: Option<Spanned<String>>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
    cost: Option<Spanned<RawCost>>,
    profile: Option<Spanned<String>>,
    split: Option<Spanned<Size>>,
    split_when: Option<Spanned<String>>,
    contention_window: Option<Spanned<Duration>>,
    split_time: Option<Spanned<Duration>>,
    batch: Option<Spanned<isola_model::engine::RawBatch>>,
    learn: Option<Spanned<bool>>,
    bandwidth: Option<Spanned<isola_model::quantity::RateValue>>,
}

#[derive(Deserialize, Clone)]
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
        let base = path.parent().unwrap_or(Path::new("."));
        let spare = raw.daemon.get_ref().spare_tenants.clone();
        let mut config = check_daemon_table(&src, path, raw.daemon.into_inner())?;
        let udp = config.udp.clone();
        let mut engines: Vec<DaemonEngine> = Vec::new();
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
            daemon: daemon_scope(&udp),
        };
        let mut tenants: Vec<DaemonTenant> = Vec::new();
        for t in raw.tenant {
            let name_span = t.span();
            let checked = tenant::check_tenant(&src, &scope, t.into_inner())?;
            if tenants.iter().any(|o| o.name() == checked.name()) {
                return Err(src.at(
                    name_span,
                    Some("name"),
                    format!("tenant `{}` is defined twice", checked.name()),
                ));
            }
            tenants.push(checked);
        }
        if tenants.is_empty() {
            return Err(src.at(0..0, Some("tenant"), "a daemon needs at least one [[tenant]]"));
        }
        let spare_tenants = match spare {
            Some(n) if tenants.len() + n.get_ref() > MAX_TENANT_SEATS => {
                return Err(src.at(
                    n.span(),
                    Some("spare_tenants"),
                    format!("tenants and spare ones are at most {MAX_TENANT_SEATS} together"),
                ))
            }
            Some(n) => n.into_inner(),
            None => DEFAULT_SPARE_TENANTS,
        };
        config.engines = engines;
        config.tenants = tenants;
        config.spare_tenants = spare_tenants;
        config.check()?;
        Ok(config)
    }

    /// Checks what no one key decides: a static partition in slots mode
    /// gives every tenant seat, spare ones too, a worker of its own;
    /// otherwise (`mode` "auto" or "slices") an engine with fewer places
    /// than tenant seats is time-sliced among them (FairNIC's form on a
    /// shared accelerator). The file's check runs it; so must a program
    /// that fills a configuration in by code.
    pub fn check(&self) -> Result<(), ScenarioError> {
        admit(&self.engines, &self.tenants).map_err(|e| {
            ScenarioError::whole_file(
                self.path.display().to_string(),
                Some("reservation"),
                e.to_string(),
            )
        })?;
        let slots_mode = |e: &DaemonEngine| e.params.get("mode").is_some_and(|m| m == "slots");
        let seats = self.tenants.len() + self.spare_tenants;
        for e in self
            .engines
            .iter()
            .filter(|e| e.policy == "static" && slots_mode(e))
        {
            if e.workers.max(1) + e.queue_depth < seats {
                return Err(ScenarioError::whole_file(
                    self.path.display().to_string(),
                    Some("spare_tenants"),
                    format!(
                        "engine `{}` runs a static partition with mode = \"slots\", which needs a worker for each of the {seats} tenant seats ({} tenants + spare_tenants); lower spare_tenants, add workers, or leave mode out to time-slice the engine",
                        e.name,
                        self.tenants.len()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The engines as SLO checks name them.
    pub fn engine_refs(&self) -> Vec<EngineRef<'_>> {
        engine_refs(&self.engines)
    }

    /// Checks `text`, one tenant table (what `isola ctl add --file`
    /// sends; named `origin` in errors), against this configuration's
    /// engines and UDP addresses.
    pub fn parse_tenant(&self, text: &str, origin: &str) -> Result<DaemonTenant, ScenarioError> {
        let raw = isola_model::tenant::parse_raw_tenant(text, origin)?;
        self.check_tenant(
            raw,
            &Source {
                file: origin.to_string(),
                text,
            },
        )
    }

    /// Tenant `raw` with `changes` (keys of a tenant table with typed
    /// values; `None` returns a key to its default) applied, checked as a
    /// whole as the file's tenants are: what `isola ctl add` and `set` and
    /// a program filling a configuration in by code get. There is no text
    /// behind it, so an error names the key (and `origin`) alone.
    pub fn check_changes(
        &self,
        mut raw: RawTenant,
        changes: &[(&str, Option<toml::Value>)],
        origin: &str,
    ) -> Result<DaemonTenant, ScenarioError> {
        for (key, value) in changes {
            raw.set(key, value.clone())
                .map_err(|message| ScenarioError::whole_file(origin, Some(key), message))?;
        }
        let src = Source {
            file: origin.into(),
            text: "",
        };
        self.check_tenant(raw, &src)
            .map_err(|e| ScenarioError::whole_file(origin, e.key.as_deref(), e.message))
    }

    /// Checks tenant `raw` (read from `src`) against this configuration's
    /// engines and UDP addresses, with the check its file's tenants had.
    pub fn check_tenant(&self, raw: RawTenant, src: &Source<'_>) -> Result<DaemonTenant, ScenarioError> {
        let engines = self.engine_refs();
        let scope = tenant::Scope {
            base: self.base(),
            engines: &engines,
            daemon: daemon_scope(&self.udp),
        };
        tenant::check_tenant(src, &scope, raw)
    }

    /// The folder a relative path in this configuration is resolved
    /// against: the configuration file's.
    pub fn base(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}

/// The `[daemon]` table: a configuration read from `path` with its keys
/// (the rest at [`DaemonConfig::new`]'s defaults) and no engines or
/// tenants yet.
fn check_daemon_table(
    src: &Source<'_>,
    path: &Path,
    daemon: RawDaemon,
) -> Result<DaemonConfig, ScenarioError> {
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
        None => DEFAULT_MAX_INPUT,
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
    let mut config = DaemonConfig::new(base.join(socket));
    config.path = path.to_path_buf();
    config.admin_socket = admin_socket;
    config.udp = udp;
    config.metrics = metrics;
    config.spin = spin;
    config.pin_threads = daemon.pin_threads;
    config.realtime = daemon.realtime;
    config.realtime_duty_cycle = daemon.realtime_duty_cycle;
    config.max_input = max_input;
    Ok(config)
}

/// The daemon's limits and identity, as tenant checks see them, with
/// its packet path's addresses `udp`.
fn daemon_scope(udp: &[SocketAddr]) -> DaemonScope<'_> {
    DaemonScope {
        udp,
        max_memory_quota: isola_wire::layout::MAX_ARENA_BYTES,
        max_ring_entries: isola_wire::layout::MAX_RING_ENTRIES,
        own_ids: (
            rustix::process::geteuid().as_raw(),
            rustix::process::getegid().as_raw(),
        ),
    }
}

/// The engines by name and kind, as SLO checks see them.
fn engine_refs(engines: &[DaemonEngine]) -> Vec<EngineRef<'_>> {
    engines
        .iter()
        .map(|e| EngineRef {
            name: &e.name,
            kind: e.kind,
        })
        .collect()
}

/// Checks one `[[engine]]` (`earlier` are those before it; `base` anchors
/// a relative profile path). Keys left out take [`DaemonEngine::new`]'s
/// defaults.
fn check_engine(
    src: &Source<'_>,
    base: &Path,
    e: RawEngine,
    earlier: &[DaemonEngine],
) -> Result<DaemonEngine, ScenarioError> {
    let name = isola_model::engine::check_engine_name(src, &e.name, earlier.iter().map(|o| o.name.as_str()))?;
    let kind = isola_model::engine::check_kind(src, e.kind.as_ref())?;
    let mut engine = DaemonEngine::new(name, kind);
    check_ops(src, &e, kind)?;
    engine.ops = e.ops.iter().map(|o| o.get_ref().clone()).collect();
    check_threads(src, &e, &mut engine)?;
    check_policy(src, &e, &mut engine)?;
    check_cost(src, base, &e, &mut engine)?;
    check_split(src, &e, &mut engine)?;
    engine.batch = isola_model::engine::check_batch(src, e.batch.as_ref())?;
    if let Some(l) = &e.learn {
        engine.learn = *l.get_ref();
    }
    engine.bandwidth = check_bandwidth(src, &e, kind)?;
    Ok(engine)
}

/// `ops`: operators the registry has (or a tenant's WebAssembly kernels);
/// none on a DMA or egress engine, which carries the packet path's
/// transfers and runs no operator.
fn check_ops(src: &Source<'_>, e: &RawEngine, kind: EngineKind) -> Result<(), ScenarioError> {
    if let (EngineKind::Dma | EngineKind::Egress, Some(op)) = (kind, e.ops.first()) {
        return Err(src.at(
            op.span(),
            Some("ops"),
            format!("a {kind} engine runs no operator: it carries the packet path's transfers"),
        ));
    }
    for op in e
        .ops
        .iter()
        .filter(|op| op.get_ref() != crate::kernel::WASM_OPERATOR)
    {
        if let Err(err) = isola_ops::find_operator(op.get_ref()) {
            return Err(src.at(op.span(), Some("ops"), err.to_string()));
        }
    }
    Ok(())
}

/// `workers` (0 to 256), `queue_depth` (0 to 1024; none without workers)
/// and `inline_below` (compute engines with workers only; at most 1 ms: a
/// task run on the dispatcher holds every tenant's submissions while it
/// runs).
fn check_threads(src: &Source<'_>, e: &RawEngine, engine: &mut DaemonEngine) -> Result<(), ScenarioError> {
    if let Some(w) = &e.workers {
        if *w.get_ref() > 256 {
            return Err(src.at(w.span(), Some("workers"), "must be from 0 to 256"));
        }
        engine.workers = *w.get_ref();
    }
    if let Some(q) = &e.queue_depth {
        if *q.get_ref() > 1024 {
            return Err(src.at(q.span(), Some("queue_depth"), "must be from 0 to 1024"));
        }
        if engine.workers == 0 && *q.get_ref() > 0 {
            return Err(src.at(
                q.span(),
                Some("queue_depth"),
                "with workers = 0 the dispatcher runs each task as the core picks it: no queue; leave queue_depth out",
            ));
        }
        engine.queue_depth = *q.get_ref();
    }
    if let Some(i) = &e.inline_below {
        let refused = match engine.kind {
            EngineKind::Dma | EngineKind::Egress => Some(
                "only applies to accelerator and pu engines: DMA and egress work always goes to the workers",
            ),
            _ if engine.workers == 0 => {
                Some("with workers = 0 the dispatcher runs every task already; leave inline_below out")
            }
            _ => None,
        };
        if let Some(message) = refused {
            return Err(src.at(i.span(), Some("inline_below"), message));
        }
        if i.get_ref().0 > MAX_INLINE_BELOW_NS {
            return Err(src.at(
                i.span(),
                Some("inline_below"),
                "must be at most 1ms: a task run on the dispatcher holds every tenant's submissions while it runs",
            ));
        }
        engine.inline_below = i.get_ref().0;
    }
    Ok(())
}

/// The most `inline_below` may be: 1 ms.
const MAX_INLINE_BELOW_NS: u64 = 1_000_000;

/// `policy` (a registered one) and its `params`, built once now so that a
/// bad parameter is reported at its line.
fn check_policy(src: &Source<'_>, e: &RawEngine, engine: &mut DaemonEngine) -> Result<(), ScenarioError> {
    engine.params = string_params(e.params.clone());
    let policy_span = e.policy.as_ref().map_or(e.name.span(), |p| p.span());
    if let Some(p) = &e.policy {
        let info = isola_core::policy::find_policy(p.get_ref())
            .map_err(|err| src.at(p.span(), Some("policy"), err.to_string()))?;
        engine.policy = info.name.to_string();
    }
    let share = isola_core::policy::TenantShare {
        weight: 1.0,
        class: isola_core::TenantClass::BestEffort,
        latency: None,
    };
    let setup = isola_core::policy::registry::PolicySetup {
        tenants: &[share],
        slots: (engine.workers.max(1) + engine.queue_depth) as u32,
    };
    isola_core::policy::build_policy(&engine.policy, &engine.params, &setup)
        .map_err(|err| src.at(policy_span, Some("params"), err.to_string()))?;
    Ok(())
}

/// `cost = { base, per_byte_ns }` or `profile = "FILE"`, not both.
fn check_cost(
    src: &Source<'_>,
    base: &Path,
    e: &RawEngine,
    engine: &mut DaemonEngine,
) -> Result<(), ScenarioError> {
    match (&e.profile, &e.cost) {
        (Some(p), Some(_)) => {
            return Err(src.at(p.span(), Some("profile"), "give either cost or profile, not both"))
        }
        (Some(p), None) => {
            let profile =
                read_profile(&base.join(p.get_ref())).map_err(|m| src.at(p.span(), Some("profile"), m))?;
            engine.profile = Some(profile);
        }
        (None, Some(c)) => {
            let cost = c.get_ref();
            if !(cost.per_byte_ns.is_finite() && cost.per_byte_ns >= 0.0) {
                return Err(src.at(c.span(), Some("per_byte_ns"), "must be a finite number >= 0"));
            }
            engine.base_ns = cost.base.0 as f64;
            engine.per_byte_ns = cost.per_byte_ns;
        }
        (None, None) => {}
    }
    Ok(())
}

/// `split`, `split_when` and `split_time`: only on a kind whose tasks
/// may be split (`EngineKind::splits_tasks`: processing units never).
fn check_split(src: &Source<'_>, e: &RawEngine, engine: &mut DaemonEngine) -> Result<(), ScenarioError> {
    if let Some(s) = &e.split {
        if !engine.kind.splits_tasks() {
            return Err(src.at(
                s.span(),
                Some("split"),
                format!(
                    "a {} engine runs each task to completion: its tasks are never split",
                    engine.kind
                ),
            ));
        }
        if s.get_ref().0 == 0 {
            return Err(src.at(
                s.span(),
                Some("split"),
                "must be at least 1B; leave it out to run tasks whole",
            ));
        }
        engine.split = Some(s.get_ref().0);
    }
    let (split_when, split_time) = isola_model::engine::check_split_keys(
        src,
        isola_model::engine::RawSplitKeys {
            split_when: e.split_when.as_ref(),
            contention_window: e.contention_window.as_ref(),
            split_time: e.split_time.as_ref(),
        },
    )?;
    if let (Some(t), None) = (&e.split_time, engine.split) {
        return Err(src.at(
            t.span(),
            Some("split_time"),
            "caps the subtasks of a split: give `split` (the largest subtask, in bytes) too",
        ));
    }
    engine.split_when = split_when;
    engine.split_time = split_time;
    Ok(())
}

/// `bandwidth`: a DMA engine's link, a data rate above 0.
fn check_bandwidth(src: &Source<'_>, e: &RawEngine, kind: EngineKind) -> Result<Option<f64>, ScenarioError> {
    let Some(b) = &e.bandwidth else {
        return Ok(None);
    };
    if kind != EngineKind::Dma {
        return Err(src.at(
            b.span(),
            Some("bandwidth"),
            "only a dma engine has a link bandwidth",
        ));
    }
    let rate = b.get_ref().0;
    let per_sec = rate.per_sec();
    if rate.unit() != isola_core::RateUnit::BytesPerSec || !per_sec.is_finite() || per_sec <= 0.0 {
        return Err(src.at(
            b.span(),
            Some("bandwidth"),
            "must be a data rate above 0, such as \"512Gbit/s\" or \"8GB/s\"",
        ));
    }
    Ok(Some(per_sec))
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
