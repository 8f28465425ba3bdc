//! One `[[tenant]]` of the daemon's configuration, checked: its SLO (the
//! same keys and checks as a scenario's tenant, `isola_model`'s
//! `check_slo`), its memory quota, ring sizes, the Unix users and groups
//! that may act as it and how many connections it may hold. The same
//! check serves the file, SIGHUP's reload and `isola ctl add`/`set`, so a
//! live change is refused exactly as the file would be.

use crate::kernel::{FlowKernel, WASM_PREFIX};
use isola_core::{EngineSelector, Slo, SloOverride};
use isola_model::quantity::{Duration, RateValue, Size};
use isola_model::scenario::slo::{check_slo, EngineRef, RawSlo};
use isola_model::scenario::source::Source;
use isola_model::ScenarioError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use toml::Spanned;

/// What a tenant table is checked against: the daemon's folder (a kernel
/// module's relative path is resolved against it), its engines, and the
/// UDP addresses its packet path listens on (a flow must match packets
/// one of them receives).
#[derive(Debug, Clone, Copy)]
pub(super) struct Scope<'a> {
    /// The configuration file's folder.
    pub(super) base: &'a Path,
    /// The engines, as SLO checks name them.
    pub(super) engines: &'a [EngineRef<'a>],
    /// `[daemon] udp`.
    pub(super) udp: &'a [SocketAddr],
}

/// One tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantConfig {
    /// Its name (what a client says in `Hello`).
    pub name: String,
    /// Its SLO on every engine, before per-engine changes. Its
    /// `memory_quota` is the tenant's memory quota.
    pub slo: Slo,
    /// Its per-engine changes (`[tenant.on.NAME]`).
    pub overrides: Vec<(EngineSelector, SloOverride)>,
    /// Its memory quota: each connection's arena, and the most bytes of
    /// its tasks queued or in service at once, bytes.
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
    /// Its flow queues on the packet path (`[[tenant.flow]]`): packets
    /// that arrive on the daemon's UDP ingress and match, in order.
    pub flows: Vec<FlowConfig>,
    /// ECN: once its flow queues hold this many packets, a packet that
    /// carries ECN bits (ECT) is taken in marked Congestion Experienced,
    /// its reply carrying the mark back (RFC 3168's early signal); at
    /// `queue_cap` every packet is dropped. 1 to `queue_cap`; default half
    /// of `queue_cap`, rounded up.
    pub ecn_threshold: usize,
    /// The table it was read from, for a live change of some of its keys
    /// (`isola ctl set`), checked again as a whole.
    pub table: toml::Table,
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
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    #[serde(rename = "match")]
    flow_match: Option<Spanned<isola_model::scenario::FlowMatch>>,
    kernel: Spanned<String>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
    #[serde(default = "yes")]
    reply: bool,
    #[serde(default)]
    error_reply: bool,
    /// A WebAssembly kernel's fuel per packet (its cycle limit).
    fuel: Option<Spanned<u64>>,
    /// A WebAssembly kernel's memory cap.
    kernel_memory: Option<Spanned<Size>>,
    /// An IO flow's transfer direction.
    dma: Option<Spanned<isola_runtime::Direction>>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTenant {
    name: Spanned<String>,
    memory_quota: Spanned<Size>,
    #[serde(default)]
    users: Vec<Spanned<Id>>,
    #[serde(default)]
    groups: Vec<Spanned<Id>>,
    max_connections: Option<Spanned<u32>>,
    sq_entries: Option<Spanned<u32>>,
    cq_entries: Option<Spanned<u32>>,
    // The SLO keys, as in a scenario (docs/scenario-format.md).
    weight: Option<Spanned<f64>>,
    class: Option<isola_core::TenantClass>,
    reservation: Option<Spanned<RateValue>>,
    reservation_burst: Option<Spanned<f64>>,
    limit: Option<Spanned<RateValue>>,
    burst: Option<Spanned<Size>>,
    latency: Option<Spanned<Duration>>,
    latency_multiple: Option<Spanned<f64>>,
    budget: Option<Spanned<Duration>>,
    budget_action: Option<Spanned<String>>,
    queue_cap: Option<Spanned<usize>>,
    ecn_threshold: Option<Spanned<usize>>,
    #[serde(default)]
    on: BTreeMap<String, Spanned<isola_model::scenario::slo::RawOverride>>,
    #[serde(default)]
    flow: Vec<Spanned<RawFlow>>,
}

/// A uid or gid as written: a number, or `"self"` (the daemon's own
/// effective uid or gid: a single user's setup needs no number).
#[derive(Deserialize)]
#[serde(untagged)]
enum Id {
    Number(u32),
    Name(String),
}

/// Resolves `ids` (the key `key`), `own` standing for `"self"`.
fn resolve(src: &Source<'_>, key: &str, ids: Vec<Spanned<Id>>, own: u32) -> Result<Vec<u32>, ScenarioError> {
    ids.into_iter()
        .map(|id| {
            let span = id.span();
            match id.into_inner() {
                Id::Number(n) => Ok(n),
                Id::Name(s) if s == "self" => Ok(own),
                Id::Name(s) => Err(src.at(
                    span,
                    Some(key),
                    format!("`{s}`: give a number, or \"self\" for the daemon's own"),
                )),
            }
        })
        .collect()
}

impl RawTenant {
    /// Where its name is written.
    pub(super) fn name_span(&self) -> std::ops::Range<usize> {
        self.name.span()
    }
}

/// Checks one tenant table (`raw`, spanning `src`; `table` is the same
/// table as a value, kept for live changes) against the daemon's engines.
pub(super) fn check_tenant(
    src: &Source<'_>,
    scope: &Scope<'_>,
    raw: Spanned<RawTenant>,
    table: toml::Table,
) -> Result<TenantConfig, ScenarioError> {
    let raw = raw.into_inner();
    let name = raw.name.get_ref().clone();
    isola_model::scenario::slo::check_name(src, raw.name.span(), "name", &name)?;
    let quota = raw.memory_quota.get_ref().0;
    if !(4096..=isola_wire::layout::MAX_ARENA_BYTES).contains(&quota) {
        return Err(src.at(
            raw.memory_quota.span(),
            Some("memory_quota"),
            format!(
                "must be from 4KiB to {} bytes",
                isola_wire::layout::MAX_ARENA_BYTES
            ),
        ));
    }
    if raw.users.is_empty() && raw.groups.is_empty() {
        return Err(src.at(
            raw.name.span(),
            Some("users"),
            format!("tenant `{name}`: grant it to at least one of `users` (uids) or `groups` (gids)"),
        ));
    }
    let ring = |v: Option<Spanned<u32>>, key: &str| match v {
        Some(n)
            if !(n.get_ref().is_power_of_two() && *n.get_ref() <= isola_wire::layout::MAX_RING_ENTRIES) =>
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
    let max_connections = match raw.max_connections {
        Some(m) if *m.get_ref() == 0 => {
            return Err(src.at(m.span(), Some("max_connections"), "must be at least 1"))
        }
        Some(m) => m.into_inner(),
        None => 16,
    };
    let fields = RawSlo {
        weight: raw.weight,
        class: raw.class,
        reservation: raw.reservation,
        reservation_burst: raw.reservation_burst,
        limit: raw.limit,
        burst: raw.burst,
        latency: raw.latency,
        latency_multiple: raw.latency_multiple,
        budget: raw.budget,
        budget_action: raw.budget_action,
        queue_cap: raw.queue_cap,
        memory_quota: Some(raw.memory_quota),
        on: raw.on,
    };
    let (slo, overrides) = check_slo(src, raw.name.span(), &name, fields, scope.engines)?;
    let ecn_threshold = match raw.ecn_threshold {
        Some(t) if !(1..=slo.queue_cap).contains(t.get_ref()) => {
            return Err(src.at(
                t.span(),
                Some("ecn_threshold"),
                format!("must be from 1 to the tenant's queue_cap ({})", slo.queue_cap),
            ))
        }
        Some(t) => t.into_inner(),
        None => slo.queue_cap.div_ceil(2),
    };
    let mut flows = Vec::with_capacity(raw.flow.len());
    for f in raw.flow {
        flows.push(check_flow(src, scope, f, quota)?);
    }
    Ok(TenantConfig {
        name,
        slo,
        overrides,
        memory_quota: quota,
        users: resolve(src, "users", raw.users, rustix::process::geteuid().as_raw())?,
        groups: resolve(src, "groups", raw.groups, rustix::process::getegid().as_raw())?,
        max_connections,
        sq_entries: ring(raw.sq_entries, "sq_entries")?,
        cq_entries: ring(raw.cq_entries, "cq_entries")?,
        flows,
        ecn_threshold,
        table,
    })
}

/// One `[[tenant.flow]]` of a tenant whose memory quota is `quota`; a
/// WebAssembly kernel's path is resolved against the scope's folder and
/// the module loaded (checked and compiled) now. An IO flow (`dma`) needs
/// a DMA engine and a built-in kernel. Its `match` must take packets that
/// one of the daemon's UDP addresses receives ([`unserved`]).
fn check_flow(
    src: &Source<'_>,
    scope: &Scope<'_>,
    f: Spanned<RawFlow>,
    quota: u64,
) -> Result<FlowConfig, ScenarioError> {
    let span = f.span();
    let f = f.into_inner();
    let (base, engines) = (scope.base, scope.engines);
    let match_span = f.flow_match.as_ref().map_or(span.clone(), Spanned::span);
    let flow_match = f.flow_match.map(Spanned::into_inner).unwrap_or_default();
    if let Some(why) = unserved(&flow_match, scope.udp) {
        return Err(src.at(match_span, Some("match"), why));
    }
    if let Some(d) = &f.dma {
        if f.kernel.get_ref().starts_with(WASM_PREFIX) {
            return Err(src.at(
                d.span(),
                Some("dma"),
                "a WebAssembly kernel asks for its own DMA writes; `dma` is for a built-in kernel's flow",
            ));
        }
        if !engines.iter().any(|e| e.kind == isola_core::EngineKind::Dma) {
            return Err(src.at(
                d.span(),
                Some("dma"),
                "an IO flow needs a `kind = \"dma\"` engine, and the daemon has none",
            ));
        }
    }
    let params = super::string_params(f.params);
    let kernel_span = f.kernel.span();
    let kernel = match f.kernel.get_ref().strip_prefix(WASM_PREFIX) {
        Some(path) => {
            if !params.is_empty() {
                return Err(src.at(span, Some("params"), "a WebAssembly kernel takes no params"));
            }
            let (fuel, memory) = (f.fuel, f.kernel_memory);
            let limits = crate::kernel::flow_limits(
                fuel.as_ref().map(|v| *v.get_ref()),
                memory.as_ref().map(|m| m.get_ref().0),
                Some(quota),
            )
            .map_err(|e| {
                let at = match e.key {
                    "fuel" => fuel.map(|v| v.span()),
                    _ => memory.map(|m| m.span()),
                };
                src.at(at.unwrap_or(kernel_span.clone()), Some(e.key), e.message)
            })?;
            FlowKernel::wasm(&base.join(path), limits).map_err(|e| src.at(kernel_span, Some("kernel"), e))?
        }
        None => {
            for (key, given) in [
                ("fuel", f.fuel.map(|v| v.span())),
                ("kernel_memory", f.kernel_memory.map(|v| v.span())),
            ] {
                if let Some(at) = given {
                    return Err(src.at(at, Some(key), "only a WebAssembly kernel (`wasm:PATH`) takes it"));
                }
            }
            FlowKernel::builtin(f.kernel.get_ref(), params).map_err(|e| src.at(span, Some("kernel"), e))?
        }
    };
    Ok(FlowConfig {
        rule: flow_match.into(),
        kernel,
        reply: f.reply,
        error_reply: f.error_reply,
        dma: f.dma.map(Spanned::into_inner),
    })
}

/// Why no packet the daemon receives can match `rule`, if none can: the
/// packet path takes UDP datagrams on the `udp` addresses alone, so a
/// flow for another protocol, port or address would start and never see
/// a packet.
fn unserved(rule: &isola_model::scenario::FlowMatch, udp: &[SocketAddr]) -> Option<String> {
    if let Some(p) = rule.proto.filter(|&p| p != 17) {
        return Some(format!(
            "`proto = {p}`: the packet path takes UDP datagrams alone (proto 17)"
        ));
    }
    if udp.is_empty() {
        return Some(
            "the daemon listens for no packets: add the address this flow's packets go to to `[daemon] udp`"
                .to_string(),
        );
    }
    let receives = |a: &SocketAddr| {
        // Port 0: the system picks the port at bind, so any may be it.
        rule.dst_port.is_none_or(|p| a.port() == 0 || p == a.port())
            && rule
                .dst_ip
                .is_none_or(|ip| a.ip().is_unspecified() || a.ip() == IpAddr::V4(ip))
    };
    if udp.iter().any(receives) {
        return None;
    }
    let wanted = match (rule.dst_ip, rule.dst_port) {
        (Some(ip), Some(port)) => format!("{ip}:{port}"),
        (Some(ip), None) => format!("address {ip}"),
        (None, Some(port)) => format!("port {port}"),
        // A rule without a destination matches every listener, found above.
        (None, None) => "its packets".to_string(),
    };
    let listening: Vec<String> = udp.iter().map(ToString::to_string).collect();
    Some(format!(
        "no `[daemon] udp` address receives packets for {wanted} (it listens on {}): add one, or match a destination it serves",
        listening.join(", ")
    ))
}

/// Checks `text`, one tenant table (what `isola ctl add` sends), named
/// `origin` in errors, against `scope`.
pub(super) fn parse_tenant(
    text: &str,
    origin: &str,
    scope: &Scope<'_>,
) -> Result<TenantConfig, ScenarioError> {
    let src = Source {
        file: origin.to_string(),
        text,
    };
    let raw: Spanned<RawTenant> = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        src.at(span, None, e.message().trim().to_string())
    })?;
    let table: toml::Table =
        toml::from_str(text).map_err(|e| src.at(0..0, None, e.message().trim().to_string()))?;
    check_tenant(&src, scope, raw, table)
}

impl TenantConfig {
    /// This tenant with `changes` (keys of a tenant table; a key whose
    /// value is the empty string is removed, returning it to its default)
    /// applied to the table it was read from, checked again as a whole
    /// against `daemon`. The name cannot change.
    pub fn with_changes(
        &self,
        changes: &toml::Table,
        origin: &str,
        daemon: &super::DaemonConfig,
    ) -> Result<TenantConfig, ScenarioError> {
        let mut table = self.table.clone();
        for (key, value) in changes {
            if key == "name" {
                return Err(ScenarioError::whole_file(
                    origin,
                    Some("name"),
                    "a tenant's name cannot change (remove it and add another)",
                ));
            }
            match value {
                toml::Value::String(s) if s.is_empty() => {
                    table.remove(key);
                }
                v => {
                    table.insert(key.clone(), v.clone());
                }
            }
        }
        let text =
            toml::to_string(&table).map_err(|e| ScenarioError::whole_file(origin, None, e.to_string()))?;
        // The text checked is the changed table as written here, not what
        // the user typed: its lines and columns would point nowhere.
        daemon
            .parse_tenant(&text, origin)
            .map_err(|e| ScenarioError::whole_file(origin, e.key.as_deref(), e.message))
    }
}
