//! A tenant's service-level objective as written in TOML (a scenario's
//! `[[tenant]]`, the daemon's `[[tenant]]`, a live change through
//! `isola ctl`), checked once for all of them: weight, class, reservation
//! and limit with their bursts, latency objective, service budget, queue
//! cap, memory quota, and per-engine changes (`[tenant.on.NAME]`).

/// Checks a name (a tenant's, an engine's): 1 to 64 characters, no
/// control characters.
pub use super::check::check_name;
use super::per_engine::check_overrides;
pub use super::per_engine::RawOverride;
use super::source::Source;
use super::ScenarioError;
use crate::quantity::{Duration, RateValue, Size};
use isola_core::tenant::{MAX_WEIGHT, MIN_WEIGHT};
use isola_core::{EngineKind, EngineSelector, LatencyObjective, RateSpec, Slo, SloOverride, TenantClass};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;

/// An engine as per-engine settings name it: by name, or by kind.
#[derive(Debug, Clone, Copy)]
pub struct EngineRef<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its kind.
    pub kind: EngineKind,
}

/// A scenario's engines as SLO checks name them.
pub(super) fn engine_refs(engines: &[super::EngineModel]) -> Vec<EngineRef<'_>> {
    engines
        .iter()
        .map(|e| EngineRef {
            name: &e.name,
            kind: e.kind,
        })
        .collect()
}

/// The SLO keys of a `[[tenant]]` table, as read (each field is the key
/// of the same name; see docs/scenario-format.md).
#[derive(Default, Deserialize)]
pub struct RawSlo {
    /// `weight`.
    pub weight: Option<Spanned<f64>>,
    /// `class`.
    pub class: Option<TenantClass>,
    /// `reservation`.
    pub reservation: Option<Spanned<RateValue>>,
    /// `reservation_burst`.
    pub reservation_burst: Option<Spanned<f64>>,
    /// `limit`.
    pub limit: Option<Spanned<RateValue>>,
    /// `burst` (the limit's).
    pub burst: Option<Spanned<Size>>,
    /// `latency`.
    pub latency: Option<Spanned<Duration>>,
    /// `latency_multiple`.
    pub latency_multiple: Option<Spanned<f64>>,
    /// `budget`.
    pub budget: Option<Spanned<Duration>>,
    /// `budget_action`: `flag` or `stop`.
    pub budget_action: Option<Spanned<String>>,
    /// `queue_cap`.
    pub queue_cap: Option<Spanned<usize>>,
    /// `memory_quota`.
    pub memory_quota: Option<Spanned<Size>>,
    /// `[tenant.on.NAME]` tables.
    #[serde(default)]
    pub on: BTreeMap<String, Spanned<RawOverride>>,
}

/// A checked SLO with its per-engine changes.
pub type CheckedSlo = (Slo, Vec<(EngineSelector, SloOverride)>);

/// Checks tenant `name`'s SLO keys (`name_span` is where the tenant is
/// named, for errors about keys it lacks) against `engines`.
pub fn check_slo(
    src: &Source<'_>,
    name_span: Range<usize>,
    name: &str,
    raw: RawSlo,
    engines: &[EngineRef<'_>],
) -> Result<CheckedSlo, ScenarioError> {
    // Where each SLO field is written, for errors found by `Slo::validate`.
    let span_of = |v: Option<Range<usize>>| v.unwrap_or_else(|| name_span.clone());
    let field_spans = [
        (
            "reservation",
            span_of(raw.reservation.as_ref().map(Spanned::span)),
        ),
        ("limit", span_of(raw.limit.as_ref().map(Spanned::span))),
        (
            "latency_multiple",
            span_of(raw.latency_multiple.as_ref().map(Spanned::span)),
        ),
        ("queue_cap", span_of(raw.queue_cap.as_ref().map(Spanned::span))),
    ];
    for (key, v) in [("latency", &raw.latency), ("budget", &raw.budget)] {
        if let Some(d) = v.as_ref().filter(|d| d.get_ref().0 == 0) {
            return Err(src.at(d.span(), Some(key), "must be greater than zero"));
        }
    }
    let weight = raw.weight.as_ref().map_or(1.0, |w| *w.get_ref());
    if !(MIN_WEIGHT..=MAX_WEIGHT).contains(&weight) {
        let span = raw.weight.as_ref().map_or(name_span.clone(), |w| w.span());
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
        (Some(d), None) => Some(LatencyObjective::Absolute(d.into_inner().0)),
        (None, Some(m)) => Some(LatencyObjective::ServiceMultiple(*m.get_ref())),
        (None, None) => None,
    };
    let budget_action = match &raw.budget_action {
        None => None,
        Some(a) => match isola_core::BudgetAction::from_name(a.get_ref()) {
            None => return Err(src.at(a.span(), Some("budget_action"), "must be `flag` or `stop`")),
            Some(isola_core::BudgetAction::Stop) if raw.budget.is_none() && raw.on.is_empty() => {
                return Err(src.at(
                    a.span(),
                    Some("budget_action"),
                    "`stop` needs a `budget` to stop at",
                ))
            }
            Some(action) => Some(action),
        },
    };
    let slo = Slo {
        weight,
        class: raw.class.unwrap_or_default(),
        reservation: spec(raw.reservation, reservation_burst),
        limit: spec(raw.limit, burst),
        latency,
        service_budget: raw.budget.map(|b| b.into_inner().0),
        budget_action,
        queue_cap: match raw.queue_cap {
            Some(c) if *c.get_ref() == 0 => {
                return Err(src.at(c.span(), Some("queue_cap"), "must be at least 1"))
            }
            Some(c) => c.into_inner(),
            None => isola_core::tenant::DEFAULT_QUEUE_CAP,
        },
        memory_quota: match raw.memory_quota {
            Some(q) if q.get_ref().0 == 0 => {
                return Err(src.at(q.span(), Some("memory_quota"), "must be greater than zero"))
            }
            q => q.map(|q| q.into_inner().0),
        },
    };
    if let Err((field, reason)) = slo.validate() {
        let span = field_spans
            .iter()
            .find(|(k, _)| *k == field)
            .map_or(name_span, |(_, s)| s.clone());
        return Err(src.at(span, Some(field), reason));
    }
    let overrides = check_overrides(src, raw.on, engines, name, &slo)?;
    Ok((slo, overrides))
}
