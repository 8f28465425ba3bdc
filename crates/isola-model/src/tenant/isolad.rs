//! The tenant keys only isolad takes: the Unix users and groups that may
//! act as a tenant, how many connections it may hold, its ring sizes, its
//! memory quota's bounds, its ECN threshold and its flow queues on the
//! packet path (their structure: the daemon loads each flow's kernel).

use super::raw::{Id, RawFlow, RawTenant};
use super::EngineRef;
use crate::ingress::TupleRule;
use crate::scenario::source::Source;
use crate::scenario::{Direction, FlowMatch, ScenarioError};
use isola_core::{EngineKind, Slo};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::ops::Range;
use toml::Spanned;

/// The prefix of a flow's `kernel` that names a tenant's WebAssembly
/// module (`wasm:PATH`); any other kernel is a built-in operator.
pub const WASM_PREFIX: &str = "wasm:";

/// What isolad's tenant keys are checked against.
#[derive(Debug, Clone, Copy)]
pub struct DaemonScope<'a> {
    /// The UDP addresses the packet path listens on (a flow must match
    /// packets one of them receives).
    pub udp: &'a [SocketAddr],
    /// The largest memory quota (a connection's arena), bytes.
    pub max_memory_quota: u64,
    /// The most entries of a submission or completion ring.
    pub max_ring_entries: u32,
    /// The daemon's effective uid and gid, what `"self"` stands for.
    pub own_ids: (u32, u32),
}

/// Who may act as a tenant and what each of its connections gets (isolad).
#[derive(Debug, Clone, PartialEq)]
pub struct Access {
    /// Users (uids) who may act as it.
    pub users: Vec<u32>,
    /// Groups (gids) whose members may act as it.
    pub groups: Vec<u32>,
    /// Most connections it may hold at once.
    pub max_connections: u32,
    /// A socket of its own, made by isolad at this path, that admits its
    /// connections as this tenant whatever their uid and gid: attach by
    /// possession (whoever can reach the path; docs/daemon.md).
    pub attach_socket: Option<std::path::PathBuf>,
    /// Submission ring entries per connection (a power of two).
    pub sq_entries: u32,
    /// Completion ring entries per connection (a power of two).
    pub cq_entries: u32,
}

impl Default for Access {
    /// Nobody may act as it; the rings' and connections' defaults.
    fn default() -> Self {
        Access {
            users: Vec::new(),
            groups: Vec::new(),
            max_connections: 16,
            attach_socket: None,
            sq_entries: 256,
            cq_entries: 256,
        }
    }
}

/// One of a tenant's flow queues (OSMOSIS' FMQ), checked: which packets it
/// takes and what runs on each (the daemon loads the kernel).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowModel {
    /// The packets it takes.
    pub rule: TupleRule,
    /// Its kernel: a built-in operator's name, or `wasm:PATH`.
    pub kernel: String,
    /// A built-in kernel's parameters.
    pub params: BTreeMap<String, String>,
    /// Send the kernel's output back to the packet's sender.
    pub reply: bool,
    /// Answer an aborted packet with an error datagram.
    pub error_reply: bool,
    /// A WebAssembly kernel's fuel per packet, if given.
    pub fuel: Option<u64>,
    /// A WebAssembly kernel's memory cap, bytes, if given.
    pub kernel_memory: Option<u64>,
    /// An IO flow's transfer direction (OSMOSIS' IO kernels).
    pub dma: Option<Direction>,
    /// Its queue's place in the tenant's turn (its index among the
    /// tenant's flows is its queue's, [`isola_core::Task::flow`]).
    pub queue: isola_core::FlowQueueSpec,
    /// Packets in its own queue from which ECN-capable ones are marked;
    /// `None`: only the tenant's `ecn_threshold` (over all its queues).
    pub ecn_threshold: Option<usize>,
    /// Where its table is written, for the daemon's errors about it.
    pub span: Range<usize>,
}

/// Resolves `ids` (the key `key`), `own` standing for `"self"`.
fn resolve(src: &Source<'_>, key: &str, ids: &[Spanned<Id>], own: u32) -> Result<Vec<u32>, ScenarioError> {
    ids.iter()
        .map(|id| match id.get_ref() {
            Id::Number(n) => Ok(*n),
            Id::Name(s) if s == "self" => Ok(own),
            Id::Name(s) => Err(src.at(
                id.span(),
                Some(key),
                format!("`{s}`: give a number, or \"self\" for the daemon's own"),
            )),
        })
        .collect()
}

/// isolad's keys of `raw` (whose SLO is `slo`): access, ECN threshold, flows.
pub(super) fn check_isolad_keys(
    src: &Source<'_>,
    scope: &DaemonScope<'_>,
    engines: &[EngineRef<'_>],
    raw: &RawTenant,
    slo: &Slo,
) -> Result<(Access, usize, Vec<FlowModel>), ScenarioError> {
    let name = raw.name.get_ref();
    match &raw.memory_quota {
        None => {
            return Err(src.at(
                raw.name.span(),
                Some("memory_quota"),
                format!("tenant `{name}` needs a `memory_quota` (its connections' arena)"),
            ))
        }
        Some(q) if !(4096..=scope.max_memory_quota).contains(&q.get_ref().0) => {
            return Err(src.at(
                q.span(),
                Some("memory_quota"),
                format!("must be from 4KiB to {} bytes", scope.max_memory_quota),
            ))
        }
        Some(_) => {}
    }
    let attach_socket = match &raw.attach_socket {
        Some(p) if !std::path::Path::new(p.get_ref()).is_absolute() || p.get_ref().len() > 100 => {
            return Err(src.at(
                p.span(),
                Some("attach_socket"),
                "must be an absolute path of at most 100 bytes (a Unix socket's address)",
            ))
        }
        Some(p) => Some(std::path::PathBuf::from(p.get_ref())),
        None => None,
    };
    if raw.users.is_empty() && raw.groups.is_empty() && attach_socket.is_none() {
        return Err(src.at(
            raw.name.span(),
            Some("users"),
            format!(
                "tenant `{name}`: grant it to at least one of `users` (uids) or `groups` (gids), or give it an `attach_socket`"
            ),
        ));
    }
    let defaults = Access::default();
    let ring = |v: &Option<Spanned<u32>>, key: &str, default: u32| match v {
        Some(n) if !(n.get_ref().is_power_of_two() && *n.get_ref() <= scope.max_ring_entries) => Err(src.at(
            n.span(),
            Some(key),
            format!("must be a power of two from 1 to {}", scope.max_ring_entries),
        )),
        Some(n) => Ok(*n.get_ref()),
        None => Ok(default),
    };
    let access = Access {
        users: resolve(src, "users", &raw.users, scope.own_ids.0)?,
        groups: resolve(src, "groups", &raw.groups, scope.own_ids.1)?,
        max_connections: match &raw.max_connections {
            Some(m) if *m.get_ref() == 0 => {
                return Err(src.at(m.span(), Some("max_connections"), "must be at least 1"))
            }
            Some(m) => *m.get_ref(),
            None => defaults.max_connections,
        },
        attach_socket,
        sq_entries: ring(&raw.sq_entries, "sq_entries", defaults.sq_entries)?,
        cq_entries: ring(&raw.cq_entries, "cq_entries", defaults.cq_entries)?,
    };
    let ecn_threshold =
        ecn(src, &raw.ecn_threshold, slo.queue_cap, "the tenant's")?.unwrap_or(slo.queue_cap.div_ceil(2));
    if let Some(extra) = raw.flow.get(isola_core::tenant::MAX_FLOW_QUEUES) {
        return Err(src.at(
            extra.span(),
            Some("flow"),
            format!("at most {} flows per tenant", isola_core::tenant::MAX_FLOW_QUEUES),
        ));
    }
    let flows = raw
        .flow
        .iter()
        .map(|f| check_flow(src, scope, engines, f, slo.queue_cap))
        .collect::<Result<_, _>>()?;
    Ok((access, ecn_threshold, flows))
}

/// An `ecn_threshold`: from 1 to `cap` (`whose` queue cap).
fn ecn(
    src: &Source<'_>,
    v: &Option<Spanned<usize>>,
    cap: usize,
    whose: &str,
) -> Result<Option<usize>, ScenarioError> {
    match v {
        Some(t) if !(1..=cap).contains(t.get_ref()) => Err(src.at(
            t.span(),
            Some("ecn_threshold"),
            format!("must be from 1 to {whose} queue_cap ({cap})"),
        )),
        t => Ok(t.as_ref().map(|t| *t.get_ref())),
    }
}

/// One `[[tenant.flow]]`'s structure: its `match` takes packets the
/// daemon receives ([`unserved`]); an IO flow (`dma`) needs a DMA engine
/// and a built-in kernel; `fuel` and `kernel_memory` are a WebAssembly
/// kernel's, `params` a built-in one's.
fn check_flow(
    src: &Source<'_>,
    scope: &DaemonScope<'_>,
    engines: &[EngineRef<'_>],
    f: &Spanned<RawFlow>,
    tenant_cap: usize,
) -> Result<FlowModel, ScenarioError> {
    let span = f.span();
    let f = f.get_ref();
    let queue = super::flow_queue::RawFlowQueue {
        weight: &f.weight,
        priority: &f.priority,
        queue_cap: &f.queue_cap,
    }
    .check(src, tenant_cap)?;
    let own_cap = queue.cap_within(tenant_cap);
    let ecn_threshold = ecn(src, &f.ecn_threshold, own_cap, "the flow's")?;
    let flow_match = f.flow_match.unwrap_or_default();
    if let Some(why) = unserved(&flow_match, scope.udp) {
        return Err(src.at(src.key_in(span, "match"), Some("match"), why));
    }
    let wasm = f.kernel.starts_with(WASM_PREFIX);
    if f.dma.is_some() {
        if wasm {
            return Err(src.at(
                src.key_in(span, "dma"),
                Some("dma"),
                "a WebAssembly kernel asks for its own DMA writes; `dma` is for a built-in kernel's flow",
            ));
        }
        if !engines.iter().any(|e| e.kind == EngineKind::Dma) {
            return Err(src.at(
                src.key_in(span, "dma"),
                Some("dma"),
                "an IO flow needs a `kind = \"dma\"` engine, and the daemon has none",
            ));
        }
    }
    if wasm && !f.params.is_empty() {
        return Err(src.at(
            src.key_in(span, "params"),
            Some("params"),
            "a WebAssembly kernel takes no params",
        ));
    }
    if !wasm {
        for (key, given) in [
            ("fuel", f.fuel.is_some()),
            ("kernel_memory", f.kernel_memory.is_some()),
        ] {
            if given {
                return Err(src.at(
                    span,
                    Some(key),
                    "only a WebAssembly kernel (`wasm:PATH`) takes it",
                ));
            }
        }
    }
    Ok(FlowModel {
        rule: flow_match.into(),
        kernel: f.kernel.clone(),
        params: f
            .params
            .iter()
            .map(|(k, v)| (k.clone(), crate::scenario::raw::value_text(v.clone())))
            .collect(),
        reply: f.reply,
        error_reply: f.error_reply,
        fuel: f.fuel,
        kernel_memory: f.kernel_memory.map(|m| m.0),
        dma: f.dma,
        queue,
        ecn_threshold,
        span,
    })
}

/// Why no packet the daemon receives can match `rule`, if none can: the
/// packet path takes UDP datagrams on the `udp` addresses alone, so a
/// flow for another protocol, port or address would start and never see
/// a packet.
fn unserved(rule: &FlowMatch, udp: &[SocketAddr]) -> Option<String> {
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
