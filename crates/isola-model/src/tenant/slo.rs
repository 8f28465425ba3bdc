//! A tenant's service-level objective, checked once for every context:
//! weight, class, reservation and limit with their bursts, latency
//! objective, service budget and what happens at it, queue cap, memory
//! quota, and per-engine changes (`[tenant.on.NAME]`, OSMOSIS Table 2;
//! dmClock's per-server r/w/l), where NAME is an engine's name or an
//! engine kind.

use super::raw::{RawOverride, RawTenant};
use super::EngineRef;
use crate::scenario::source::Source;
use crate::scenario::ScenarioError;
use isola_core::{BudgetAction, EngineKind, EngineSelector, LatencyObjective, RateSpec, Slo, SloOverride};
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;

/// A checked SLO with its per-engine changes.
pub type CheckedSlo = (Slo, Vec<(EngineSelector, SloOverride)>);

/// Where `v` is written, else where the tenant is named.
fn span_or<T>(v: &Option<Spanned<T>>, name_span: &Range<usize>) -> Range<usize> {
    v.as_ref().map_or_else(|| name_span.clone(), Spanned::span)
}

/// Checks `raw`'s SLO keys against `engines`.
pub(super) fn check_slo(
    src: &Source<'_>,
    raw: &RawTenant,
    engines: &[EngineRef<'_>],
) -> Result<CheckedSlo, ScenarioError> {
    let name_span = raw.name.span();
    for (key, v) in [("latency", &raw.latency), ("budget", &raw.budget)] {
        if let Some(d) = v.as_ref().filter(|d| d.get_ref().0 == 0) {
            return Err(src.at(d.span(), Some(key), "must be greater than zero"));
        }
    }
    // Checked with the rest of the SLO (`Slo::validate`).
    let weight = raw.weight.as_ref().map_or(1.0, |w| *w.get_ref());
    let spec = |rate: &Option<Spanned<crate::quantity::RateValue>>, burst: f64| {
        rate.as_ref().map(|r| RateSpec {
            rate: r.get_ref().0,
            burst,
        })
    };
    let burst = raw.burst.as_ref().map_or(0.0, |b| b.get_ref().0 as f64);
    let reservation_burst = match &raw.reservation_burst {
        Some(b) if !(b.get_ref().is_finite() && *b.get_ref() >= 0.0) => {
            return Err(src.at(b.span(), Some("reservation_burst"), "must be >= 0"))
        }
        b => b.as_ref().map_or(0.0, |b| *b.get_ref()),
    };
    let slo = Slo {
        weight,
        class: raw.class.as_ref().map(|c| *c.get_ref()).unwrap_or_default(),
        reservation: spec(&raw.reservation, reservation_burst),
        limit: spec(&raw.limit, burst),
        latency: latency(src, raw)?,
        service_budget: raw.budget.as_ref().map(|b| b.get_ref().0),
        budget_action: budget_action(src, raw)?,
        queue_cap: match &raw.queue_cap {
            Some(c) if *c.get_ref() == 0 => {
                return Err(src.at(c.span(), Some("queue_cap"), "must be at least 1"))
            }
            Some(c) => *c.get_ref(),
            None => isola_core::tenant::DEFAULT_QUEUE_CAP,
        },
        memory_quota: match &raw.memory_quota {
            Some(q) if q.get_ref().0 == 0 => {
                return Err(src.at(q.span(), Some("memory_quota"), "must be greater than zero"))
            }
            q => q.as_ref().map(|q| q.get_ref().0),
        },
        // Its flow queues are set where they are declared (isolad's
        // flows, a scenario's workloads).
        flows: Vec::new(),
    };
    if let Err((field, reason)) = slo.validate() {
        // Where each SLO field `Slo::validate` judges is written.
        let span = match field {
            "weight" => span_or(&raw.weight, &name_span),
            "reservation" => span_or(&raw.reservation, &name_span),
            "limit" => span_or(&raw.limit, &name_span),
            "latency_multiple" => span_or(&raw.latency_multiple, &name_span),
            "queue_cap" => span_or(&raw.queue_cap, &name_span),
            _ => name_span,
        };
        return Err(src.at(span, Some(field), reason));
    }
    let overrides = check_overrides(src, &raw.on, engines, &slo)?;
    Ok((slo, overrides))
}

/// `latency` or `latency_multiple`, not both.
fn latency(src: &Source<'_>, raw: &RawTenant) -> Result<Option<LatencyObjective>, ScenarioError> {
    Ok(match (&raw.latency, &raw.latency_multiple) {
        (Some(_), Some(m)) => {
            return Err(src.at(
                m.span(),
                Some("latency_multiple"),
                "give either latency or latency_multiple, not both",
            ))
        }
        (Some(d), None) => Some(LatencyObjective::Absolute(d.get_ref().0)),
        (None, Some(m)) => Some(LatencyObjective::ServiceMultiple(*m.get_ref())),
        (None, None) => None,
    })
}

/// `budget_action`: `flag`, or `stop` with a budget to stop at.
fn budget_action(src: &Source<'_>, raw: &RawTenant) -> Result<Option<BudgetAction>, ScenarioError> {
    let Some(a) = &raw.budget_action else {
        return Ok(None);
    };
    match BudgetAction::from_name(a.get_ref()) {
        None => Err(src.at(a.span(), Some("budget_action"), "must be `flag` or `stop`")),
        Some(BudgetAction::Stop) if raw.budget.is_none() && raw.on.is_empty() => Err(src.at(
            a.span(),
            Some("budget_action"),
            "`stop` needs a `budget` to stop at",
        )),
        Some(action) => Ok(Some(action)),
    }
}

/// What `NAME` selects: the engine of that name, else every engine of
/// that kind (there must be one).
pub(crate) fn selector(
    src: &Source<'_>,
    span: Range<usize>,
    key: &str,
    name: &str,
    engines: &[EngineRef<'_>],
) -> Result<EngineSelector, ScenarioError> {
    if engines.iter().any(|e| e.name == name) {
        return Ok(EngineSelector::Named(name.to_string()));
    }
    match EngineKind::from_name(name) {
        Some(k) if engines.iter().any(|e| e.kind == k) => Ok(EngineSelector::Kind(k)),
        _ => {
            let known: Vec<&str> = engines.iter().map(|e| e.name).collect();
            Err(src.at(
                span,
                Some(key),
                format!(
                    "`{name}` is neither an engine ({}) nor the kind of one (accelerator, pu, dma, egress)",
                    known.join(", ")
                ),
            ))
        }
    }
}

/// A tenant's `on` tables, checked: each names engines, and the tenant's
/// SLO with them applied is valid on every engine.
fn check_overrides(
    src: &Source<'_>,
    raw: &BTreeMap<String, Spanned<RawOverride>>,
    engines: &[EngineRef<'_>],
    slo: &Slo,
) -> Result<Vec<(EngineSelector, SloOverride)>, ScenarioError> {
    let mut out = Vec::new();
    for (key, o) in raw {
        let span = o.span();
        let on = selector(src, span.clone(), "on", key, engines)?;
        let o = o.get_ref();
        let reservation_burst = match o.reservation_burst {
            Some(b) if !(b.is_finite() && b >= 0.0) => {
                return Err(src.at(span, Some("reservation_burst"), "must be >= 0"))
            }
            b => b.unwrap_or(0.0),
        };
        let limit_burst = o.burst.map_or(0.0, |b| b.0 as f64);
        let change = SloOverride {
            weight: o.weight,
            reservation: o.reservation.map(|r| RateSpec {
                rate: r.0,
                burst: reservation_burst,
            }),
            limit: o.limit.map(|l| RateSpec {
                rate: l.0,
                burst: limit_burst,
            }),
            service_budget: o.budget.map(|b| b.0),
            budget_action: match o.budget_action.as_deref() {
                None => None,
                Some(a) => Some(BudgetAction::from_name(a).ok_or_else(|| {
                    src.at(span.clone(), Some("budget_action"), "must be `flag` or `stop`")
                })?),
            },
        };
        out.push((on, change));
        // Checked as the scheduler will see it, on each engine it reaches.
        for e in engines {
            if let Err((field, reason)) = slo.on_engine(&out, e.name, e.kind).validate() {
                return Err(src.at(span, Some(field), format!("{reason} (on engine `{}`)", e.name)));
            }
        }
    }
    Ok(out)
}
