//! The daemon's configuration file (TOML, documented in docs/daemon.md):
//! its socket, its engines (operators, workers, policy, cost model) and its
//! tenants (SLO, memory quota, ring sizes, the Unix users and groups that
//! may act as them, how many connections each may hold, their latency
//! objective) and where metrics are served. Every mistake is reported with
//! the file, line and key, as scenario files' are.

use isola_core::tenant::{MAX_WEIGHT, MIN_WEIGHT};
use isola_core::LatencyObjective;
use isola_model::quantity::{Duration, Size};
use isola_model::scenario::source::Source;
use isola_model::ScenarioError;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Largest configuration file: 1 MiB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// A checked configuration.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// The file it was read from (absolute when [`DaemonConfig::load`]
    /// read it; `isola_daemon_info` shows it).
    pub path: PathBuf,
    /// Where tenants connect.
    pub socket: PathBuf,
    /// Where Prometheus metrics are served over HTTP (`/metrics`), if
    /// anywhere (`[daemon] metrics`, or `isolad --metrics`).
    pub metrics: Option<SocketAddr>,
    /// Largest input of one task, bytes.
    pub max_input: u64,
    /// The engines, in file order.
    pub engines: Vec<EngineConfig>,
    /// The tenants, in file order.
    pub tenants: Vec<TenantConfig>,
}

/// One engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Its name.
    pub name: String,
    /// Operators it serves (empty: every one).
    pub ops: Vec<String>,
    /// Worker threads.
    pub workers: usize,
    /// Its scheduling policy.
    pub policy: String,
    /// Cost model: fixed part, ns.
    pub base_ns: f64,
    /// Cost model: ns per byte.
    pub per_byte_ns: f64,
}

/// One tenant.
#[derive(Debug, Clone)]
pub struct TenantConfig {
    /// Its name (what a client says in `Hello`).
    pub name: String,
    /// Its weight.
    pub weight: f64,
    /// Its memory quota: each connection's arena, bytes.
    pub memory_quota: u64,
    /// Users (uids) who may act as it.
    pub users: Vec<u32>,
    /// Groups (gids) whose members may act as it.
    pub groups: Vec<u32>,
    /// Most connections it may hold at once.
    pub max_connections: u32,
    /// Submission ring entries per connection (a power of two).
    pub sq_entries: u32,
    /// Completion ring entries per connection (a power of two).
    pub cq_entries: u32,
    /// How long each of its tasks may take from arrival to completion
    /// (`latency` or `latency_multiple`), if it has an objective.
    pub latency: Option<LatencyObjective>,
}

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
    max_input: Option<Spanned<Size>>,
    metrics: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEngine {
    name: Spanned<String>,
    #[serde(default)]
    ops: Vec<Spanned<String>>,
    workers: Option<Spanned<usize>>,
    policy: Option<Spanned<String>>,
    cost: Option<Spanned<RawCost>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCost {
    base: Duration,
    per_byte_ns: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTenant {
    name: Spanned<String>,
    weight: Option<Spanned<f64>>,
    memory_quota: Spanned<Size>,
    #[serde(default)]
    users: Vec<u32>,
    #[serde(default)]
    groups: Vec<u32>,
    max_connections: Option<Spanned<u32>>,
    sq_entries: Option<Spanned<u32>>,
    cq_entries: Option<Spanned<u32>>,
    latency: Option<Spanned<Duration>>,
    latency_multiple: Option<Spanned<f64>>,
}

impl DaemonConfig {
    /// Reads and checks the configuration at `path`.
    pub fn load(path: &Path) -> Result<DaemonConfig, ScenarioError> {
        let text = isola_model::input::read_text_bounded(path, MAX_CONFIG_BYTES).map_err(|message| {
            ScenarioError {
                file: path.display().to_string(),
                line: 0,
                column: 0,
                key: None,
                message,
            }
        })?;
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
        let mut engines: Vec<EngineConfig> = Vec::new();
        for e in raw.engine {
            let e = e.into_inner();
            let name = e.name.get_ref().clone();
            if engines.iter().any(|o| o.name == name) {
                return Err(src.at(
                    e.name.span(),
                    Some("name"),
                    format!("engine `{name}` is defined twice"),
                ));
            }
            for op in &e.ops {
                if let Err(err) = isola_ops::find_operator(op.get_ref()) {
                    return Err(src.at(op.span(), Some("ops"), err.to_string()));
                }
            }
            let workers = match e.workers {
                Some(w) if !(1..=256).contains(w.get_ref()) => {
                    return Err(src.at(w.span(), Some("workers"), "must be from 1 to 256"))
                }
                Some(w) => w.into_inner(),
                None => 1,
            };
            let policy = match e.policy {
                Some(p) => match isola_core::policy::find_policy(p.get_ref()) {
                    Ok(info) => info.name.to_string(),
                    Err(err) => return Err(src.at(p.span(), Some("policy"), err.to_string())),
                },
                None => "sfq".to_string(),
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
            engines.push(EngineConfig {
                name,
                ops: e.ops.into_iter().map(Spanned::into_inner).collect(),
                workers,
                policy,
                base_ns,
                per_byte_ns,
            });
        }
        if engines.is_empty() {
            return Err(src.at(0..0, Some("engine"), "a daemon needs at least one [[engine]]"));
        }
        let mut tenants: Vec<TenantConfig> = Vec::new();
        for t in raw.tenant {
            let t = t.into_inner();
            let name = t.name.get_ref().clone();
            if tenants.iter().any(|o| o.name == name) {
                return Err(src.at(
                    t.name.span(),
                    Some("name"),
                    format!("tenant `{name}` is defined twice"),
                ));
            }
            let weight = match t.weight {
                Some(w) if !(MIN_WEIGHT..=MAX_WEIGHT).contains(w.get_ref()) => {
                    return Err(src.at(
                        w.span(),
                        Some("weight"),
                        format!("must be between {MIN_WEIGHT} and {MAX_WEIGHT}"),
                    ))
                }
                Some(w) => w.into_inner(),
                None => 1.0,
            };
            let quota = t.memory_quota.get_ref().0;
            if !(4096..=isola_wire::layout::MAX_ARENA_BYTES).contains(&quota) {
                return Err(src.at(
                    t.memory_quota.span(),
                    Some("memory_quota"),
                    format!(
                        "must be from 4KiB to {} bytes",
                        isola_wire::layout::MAX_ARENA_BYTES
                    ),
                ));
            }
            if t.users.is_empty() && t.groups.is_empty() {
                return Err(src.at(
                    t.name.span(),
                    Some("users"),
                    format!("tenant `{name}`: grant it to at least one of `users` (uids) or `groups` (gids)"),
                ));
            }
            let ring = |v: Option<Spanned<u32>>, key: &str| match v {
                Some(n)
                    if !(n.get_ref().is_power_of_two()
                        && *n.get_ref() <= isola_wire::layout::MAX_RING_ENTRIES) =>
                {
                    Err(src.at(
                        n.span(),
                        Some(key),
                        format!(
                            "must be a power of two from 1 to {}",
                            isola_wire::layout::MAX_RING_ENTRIES
                        ),
                    ))
                }
                Some(n) => Ok(n.into_inner()),
                None => Ok(256),
            };
            let max_connections = match t.max_connections {
                Some(m) if *m.get_ref() == 0 => {
                    return Err(src.at(m.span(), Some("max_connections"), "must be at least 1"))
                }
                Some(m) => m.into_inner(),
                None => 16,
            };
            let latency = match (t.latency, t.latency_multiple) {
                (Some(_), Some(m)) => {
                    return Err(src.at(
                        m.span(),
                        Some("latency_multiple"),
                        "give either latency or latency_multiple, not both",
                    ))
                }
                (Some(d), None) if d.get_ref().0 == 0 => {
                    return Err(src.at(d.span(), Some("latency"), "must be greater than zero"))
                }
                (Some(d), None) => Some(LatencyObjective::Absolute(d.into_inner().0)),
                (None, Some(m)) if !(m.get_ref().is_finite() && *m.get_ref() > 0.0) => {
                    return Err(src.at(m.span(), Some("latency_multiple"), "must be a finite number > 0"))
                }
                (None, Some(m)) => Some(LatencyObjective::ServiceMultiple(m.into_inner())),
                (None, None) => None,
            };
            tenants.push(TenantConfig {
                name,
                weight,
                memory_quota: quota,
                users: t.users,
                groups: t.groups,
                max_connections,
                sq_entries: ring(t.sq_entries, "sq_entries")?,
                cq_entries: ring(t.cq_entries, "cq_entries")?,
                latency,
            });
        }
        if tenants.is_empty() {
            return Err(src.at(0..0, Some("tenant"), "a daemon needs at least one [[tenant]]"));
        }
        Ok(DaemonConfig {
            path: path.to_path_buf(),
            socket: base.join(socket),
            metrics,
            max_input,
            engines,
            tenants,
        })
    }
}
