//! Checking a scenario: from the raw TOML types (`raw`) to the
//! public ones, refusing what cannot run with the file, line and key of the
//! mistake. The run, engines and service models are checked here; tenants
//! and their workloads in `tenant`.

use super::raw::{RawRun, RawScenario, RawService, RawSize, RawSizeDist};
use super::source::Source;
use super::{per_engine, tenant};
use super::{PolicyRun, RunSpec, Scenario, ScenarioError, ServiceSpec, SizeDist};
use crate::quantity::{Duration, Size};
use isola_core::params::Params;
use isola_core::policy::find_policy;
use isola_core::EngineKind;
use isola_core::{AffineCost, EngineSpec, SchedulerBuilder};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use toml::Spanned;

/// The longest engine or tenant name, in characters: names are table
/// cells, metric labels and file names.
pub const MAX_NAME_CHARS: usize = 64;

/// Refuses an empty or overlong name, or one with control characters.
pub fn check_name(src: &Source<'_>, span: Range<usize>, key: &str, name: &str) -> Result<(), ScenarioError> {
    let chars = name.chars().count();
    let problem = if name.trim().is_empty() {
        Some("must not be empty".to_string())
    } else if chars > MAX_NAME_CHARS {
        Some(format!(
            "is {chars} characters long; names are at most {MAX_NAME_CHARS}"
        ))
    } else if name.chars().any(char::is_control) {
        Some("must not contain control characters".to_string())
    } else {
        None
    };
    match problem {
        Some(p) => Err(src.at(span, Some(key), format!("a name {p}"))),
        None => Ok(()),
    }
}

/// The largest `egress_ratio`: a stage's output at most 1000 times its
/// input, so sizes stay far inside a `u64` through every stage.
pub const MAX_EGRESS_RATIO: f64 = 1000.0;

/// Checks scenario `text`; `path` names it in errors and anchors trace paths.
pub(super) fn scenario(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
    let src = Source {
        file: path.display().to_string(),
        text,
    };
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        // A misspelt table (`[[tenants]]`) is named, rather than what it
        // breaks further down (a `[tenant.workload]` with no `[[tenant]]`).
        if let Some(err) = unknown_table(&src) {
            return err;
        }
        let span = e.span().unwrap_or(0..0);
        src.at(span, None, e.message().trim().to_string())
    })?;
    let kind_defaults = raw.run.as_ref().is_none_or(|r| r.get_ref().policies.is_none());
    let (mut run, policy_spans, policy_ons) = check_run(&src, raw.run)?;
    let mut engines = Vec::with_capacity(raw.engine.len());
    for e in raw.engine {
        let engine = super::engine::check_engine(&src, e, &engines)?;
        engines.push(engine);
    }
    if engines.is_empty() {
        return Err(src.at(0..0, Some("engine"), "a scenario needs at least one [[engine]]"));
    }
    if kind_defaults {
        let kinds: Vec<EngineKind> = engines.iter().map(|e| e.kind).collect();
        run.policies = vec![PolicyRun::kind_defaults(&kinds)];
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let mut tenants = Vec::new();
    for t in raw.tenant {
        let spec = tenant::check_tenant(&src, base, &engines, &tenants, t, run.duration.is_some())?;
        tenants.push(spec);
    }
    if tenants.is_empty() {
        return Err(src.at(0..0, Some("tenant"), "a scenario needs at least one [[tenant]]"));
    }
    let refs = super::engine_refs(&engines);
    for ((p, span), on) in run.policies.iter_mut().zip(&policy_spans).zip(policy_ons) {
        p.on.extend(per_engine::check_policy_on(&src, span.clone(), on, &refs)?);
    }
    // Build the core of every run now, as a driver will (cost models
    // aside), so a bad parameter value or an impossible setup is reported
    // at its line before anything runs.
    for (p, span) in run.policies.iter().zip(policy_spans) {
        let mut b = SchedulerBuilder::new();
        for e in &engines {
            b.engine(EngineSpec::new(
                e.name.clone(),
                e.kind,
                e.core_slots(),
                Arc::new(AffineCost::constant(1)),
            ));
        }
        per_engine::configure(&tenants, p, &mut b);
        if let Err(err) = b.build() {
            return Err(src.at(span, Some("policies"), err.to_string()));
        }
    }
    Ok(Scenario {
        path: path.to_path_buf(),
        run,
        engines,
        tenants,
    })
}

/// The first top-level table of `src` that a scenario does not have, if
/// the text is TOML at all, as an error at its header.
fn unknown_table(src: &Source<'_>) -> Option<ScenarioError> {
    const TABLES: [&str; 3] = ["run", "engine", "tenant"];
    let doc: toml::Table = toml::from_str(src.text).ok()?;
    let name = doc.keys().find(|k| !TABLES.contains(&k.as_str()))?;
    let at = [format!("[[{name}]]"), format!("[{name}]"), format!("[{name}.")]
        .iter()
        .filter_map(|h| src.text.find(h.as_str()))
        .min()
        .unwrap_or(0);
    Some(src.at(
        at..at,
        Some(name),
        format!("unknown table `{name}`: a scenario has [run], [[engine]] and [[tenant]] tables"),
    ))
}

/// The `[run]` table, and where each policy entry is written.
/// Each policy's `on` table is handed back raw: it names engines, which are
/// checked after the run.
type RawOns = Vec<BTreeMap<String, per_engine::RawPolicyChoice>>;

fn check_run(
    src: &Source<'_>,
    raw: Option<Spanned<RawRun>>,
) -> Result<(RunSpec, Vec<Range<usize>>, RawOns), ScenarioError> {
    let raw = raw.map(Spanned::into_inner).unwrap_or_default();
    let mut spans = Vec::new();
    let mut ons = Vec::new();
    let mut policies = Vec::new();
    match raw.policies {
        None => {
            // Each engine's kind's, once the engines are known.
            policies.push(PolicyRun::kind_defaults(&[]));
            spans.push(0..0);
            ons.push(BTreeMap::new());
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
                if p.split == Some(0) {
                    return Err(src.at(
                        span,
                        Some("policies"),
                        "split (or fragment) must be at least 1B; leave it out to serve tasks whole",
                    ));
                }
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
                    split: p.split,
                    on: Vec::new(),
                });
                ons.push(p.on);
            }
        }
    }
    let positive = |v: &Option<Spanned<Duration>>, key: &str| match v {
        Some(d) if d.get_ref().0 == 0 => Err(src.at(d.span(), Some(key), "must be greater than zero")),
        _ => Ok(v.as_ref().map(|d| d.get_ref().0)),
    };
    let duration = positive(&raw.duration, "duration")?;
    let count = |v: &Option<Spanned<u64>>, key: &str, default: u64| match v {
        Some(n) if *n.get_ref() == 0 => Err(src.at(n.span(), Some(key), "must be at least 1")),
        Some(n) => Ok(*n.get_ref()),
        None => Ok(default),
    };
    let max_events = count(&raw.max_events, "max_events", super::DEFAULT_MAX_EVENTS)?;
    let max_windows = count(&raw.max_windows, "max_windows", super::DEFAULT_MAX_WINDOWS)?;
    let window = match (positive(&raw.window, "window")?, duration) {
        (Some(w), Some(d)) if d.div_ceil(w) > max_windows => {
            return Err(src.at(
                raw.window.as_ref().map_or(0..0, Spanned::span),
                Some("window"),
                format!(
                "a {} run in windows of {} makes {} windows, above max_windows = {max_windows}: widen the \
                     window (at least {} ns) or raise max_windows",
                crate::quantity::format_duration(d),
                crate::quantity::format_duration(w),
                d.div_ceil(w),
                d.div_ceil(max_windows)
            ),
            ))
        }
        (Some(w), _) => w,
        (None, Some(d)) => super::DEFAULT_WINDOW_NS.max(d.div_ceil(super::DEFAULT_WINDOWS_PER_RUN)),
        (None, None) => super::DEFAULT_WINDOW_NS,
    };
    let run = RunSpec {
        seed: raw.seed.unwrap_or(1),
        duration,
        policies,
        window,
        solo: raw.solo,
        max_events,
        max_windows,
    };
    Ok((run, spans, ons))
}

/// A `service` table: a distribution, or a profile's measured points.
pub(super) fn check_service(
    src: &Source<'_>,
    raw: Spanned<toml::Value>,
) -> Result<ServiceSpec, ScenarioError> {
    let span = raw.span();
    let bad = |m: &str| src.at(span.clone(), Some("service"), m.to_string());
    let value = raw.into_inner();
    if let Some(table) = value.as_table().filter(|t| t.contains_key("profile")) {
        return profile_service(src, table).map_err(|m| bad(&m));
    }
    // A misspelt key is named (`dsit`), not only the `dist` it hides.
    const KEYS: [&str; 7] = [
        "dist",
        "time",
        "mean",
        "base",
        "per_byte_ns",
        "points",
        "per_byte",
    ];
    if let Some(k) = value
        .as_table()
        .and_then(|t| t.keys().find(|k| !KEYS.contains(&k.as_str())))
    {
        return Err(bad(&format!(
            "unknown field `{k}` (a service is `dist` = \"constant\", \"exponential\", \"affine\", \"table\" or \
             \"cycles\" with its parameters, or `profile` and `op`)"
        )));
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
    let text = crate::input::read_text_bounded(&path, crate::input::MAX_PROFILE_BYTES)
        .map_err(|e| format!("cannot read profile {shown}: {e}"))?;
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

/// A workload's `size`: a fixed size or a distribution (64 B if absent).
pub(super) fn check_size(
    src: &Source<'_>,
    span: Range<usize>,
    raw: Option<RawSize>,
) -> Result<SizeDist, ScenarioError> {
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
                || !points.iter().map(|(_, w)| w).sum::<f64>().is_finite()
            {
                return Err(bad(
                    "empirical sizes need [size, weight] points with finite weights >= 0, not all 0, whose sum is finite"
                        .into(),
                ));
            }
            SizeDist::Empirical(points.into_iter().map(|(s, w)| (s.0, w)).collect())
        }
    })
}
