//! The one tenant schema: a tenant's keys as every file and command
//! writes them (a scenario's `[[tenant]]`, isolad's `[[tenant]]`,
//! `isola ctl add` and `set`), one raw type ([`RawTenant`]), one check
//! ([`check_tenant`]) and one set of defaults, giving one typed tenant
//! ([`TenantModel`]) that the simulator, the runtime and the daemon are
//! configured from by code.
//!
//! The service-level objective is checked alike everywhere (`slo`); the
//! keys only one context takes are checked beside it and refused, by
//! name, where they do not apply: isolad's access, rings and flow queues
//! (`isolad`), a scenario's `match` and `workload` (whose workload is
//! checked by the scenario, `crate::scenario`).

pub(crate) mod flow_queue;
mod isolad;
mod raw;
mod slo;

pub use isolad::{Access, DaemonScope, FlowModel, WASM_PREFIX};
pub use raw::{Id, RawFlow, RawOverride, RawTenant};
pub use slo::CheckedSlo;

pub(crate) use slo::selector;

use crate::scenario::raw::RawWorkloads;
use crate::scenario::source::Source;
use crate::scenario::{FlowMatch, ScenarioError};
use isola_core::{EngineKind, EngineSelector, Slo, SloOverride};
use toml::Spanned;

/// An engine as per-engine settings name it: by name, or by kind.
#[derive(Debug, Clone, Copy)]
pub struct EngineRef<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its kind.
    pub kind: EngineKind,
}

/// Where a tenant is described, which decides the keys it may have.
#[derive(Debug, Clone, Copy)]
pub enum Context<'a> {
    /// A scenario file: a workload, and `match` where its tasks arrive as
    /// packets.
    Scenario,
    /// isolad's configuration or a live change: who may act as it, its
    /// rings and flow queues, checked against the daemon's limits.
    Daemon(&'a DaemonScope<'a>),
}

/// A checked tenant.
#[derive(Debug, Clone)]
pub struct TenantModel {
    /// Its name.
    pub name: String,
    /// Its SLO on every engine, before per-engine changes. Its
    /// `memory_quota` is the tenant's memory quota where it has one.
    pub slo: Slo,
    /// Its per-engine changes (`[tenant.on.NAME]`).
    pub overrides: Vec<(EngineSelector, SloOverride)>,
    /// isolad's keys: who may act as it, its rings (defaults in a scenario).
    pub access: Access,
    /// ECN: once its flow queues hold this many packets, an ECN-capable
    /// packet is taken in marked Congestion Experienced (isolad; default
    /// half of `queue_cap`, rounded up).
    pub ecn_threshold: usize,
    /// Its flow queues on isolad's packet path (`[[tenant.flow]]`).
    pub flows: Vec<FlowModel>,
    /// A scenario's: the packets its workload arrives as.
    pub flow_match: Option<FlowMatch>,
    /// The keys as read, for a live change of some of them
    /// ([`RawTenant::set`], then [`check_tenant`] again).
    pub raw: RawTenant,
}

/// The tenant keys only isolad takes (who may act as a tenant, its rings,
/// its flow queues); every other key but `name`, `match` and `workload` is
/// a service-level objective key, which every driver enforces.
pub const DAEMON_KEYS: [&str; 8] = [
    "users",
    "groups",
    "max_connections",
    "attach_socket",
    "sq_entries",
    "cq_entries",
    "ecn_threshold",
    "flow",
];

/// Where each context-bound key of `raw` is written, if it is.
fn written(raw: &RawTenant, key: &str) -> Option<std::ops::Range<usize>> {
    use crate::engine::written as at;
    fn first<T>(v: &[Spanned<T>]) -> Option<std::ops::Range<usize>> {
        v.first().map(Spanned::span)
    }
    match key {
        "users" => first(&raw.users),
        "groups" => first(&raw.groups),
        "max_connections" => at(&raw.max_connections),
        "attach_socket" => at(&raw.attach_socket),
        "sq_entries" => at(&raw.sq_entries),
        "cq_entries" => at(&raw.cq_entries),
        "ecn_threshold" => at(&raw.ecn_threshold),
        "flow" => first(&raw.flow),
        "workload" => at(&raw.workload),
        "match" => raw.flow_match.map(|_| raw.name.span()),
        _ => None,
    }
}

/// Checks one tenant table against `engines` in `context` (a scenario's
/// workload is checked by [`crate::Scenario`] beside it).
pub fn check_tenant(
    src: &Source<'_>,
    context: Context<'_>,
    engines: &[EngineRef<'_>],
    raw: RawTenant,
) -> Result<TenantModel, ScenarioError> {
    check_tenant_and_workload(src, context, engines, raw).map(|(t, _)| t)
}

/// [`check_tenant`], with a scenario's workload handed back as read.
pub(crate) fn check_tenant_and_workload(
    src: &Source<'_>,
    context: Context<'_>,
    engines: &[EngineRef<'_>],
    raw: RawTenant,
) -> Result<(TenantModel, Option<Spanned<RawWorkloads>>), ScenarioError> {
    let name = raw.name.get_ref().clone();
    crate::scenario::check_name(src, raw.name.span(), "name", &name)?;
    let (theirs, whose): (&[&str], &str) = match context {
        Context::Scenario => (&DAEMON_KEYS, "isolad's configuration (docs/daemon.md)"),
        Context::Daemon(_) => (&["workload", "match"], "a scenario (docs/scenario-format.md)"),
    };
    if let Some((key, span)) = theirs.iter().find_map(|k| written(&raw, k).map(|s| (*k, s))) {
        return Err(src.at(span, Some(key), format!("only applies to a tenant of {whose}")));
    }
    let (slo, overrides) = slo::check_slo(src, &raw, engines)?;
    let (access, ecn_threshold, flows) = match context {
        Context::Scenario => (Access::default(), slo.queue_cap.div_ceil(2), Vec::new()),
        Context::Daemon(scope) => isolad::check_isolad_keys(src, scope, engines, &raw, &slo)?,
    };
    let mut slo = slo;
    slo.flows = isola_core::FlowQueueSpec::canonical(flows.iter().map(|f: &FlowModel| f.queue).collect());
    let mut raw = raw;
    let workload = raw.workload.take();
    let model = TenantModel {
        name,
        slo,
        overrides,
        access,
        ecn_threshold,
        flows,
        flow_match: raw.flow_match,
        raw,
    };
    Ok((model, workload))
}

/// The service-level objective keys of a tenant (every key a live change
/// may set but isolad's own): what every driver must put in force.
pub fn slo_keys() -> impl Iterator<Item = &'static str> {
    RawTenant::SETTABLE_KEYS
        .iter()
        .copied()
        .filter(|k| !DAEMON_KEYS.contains(k))
}

/// Parses one tenant table from `text` (named `origin` in errors).
pub fn parse_raw_tenant(text: &str, origin: &str) -> Result<RawTenant, ScenarioError> {
    let src = Source {
        file: origin.to_string(),
        text,
    };
    toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        src.at(span, None, e.message().trim().to_string())
    })
}
