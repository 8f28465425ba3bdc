//! Checking a scenario: from the raw TOML types (`raw`) to the
//! public ones, refusing what cannot run with the file, line and key of the
//! mistake. The run, engines and service models are checked here; tenants
//! and their workloads in `tenant`.

use super::raw::{RawEngine, RawRun, RawScenario, RawService, RawSize, RawSizeDist};
use super::source::Source;
use super::{per_engine, tenant};
use super::{
    DeviceSpec, DmaSpec, EngineModel, PolicyRun, RunSpec, Scenario, ScenarioError, ServiceSpec, SizeDist,
    Steering,
};
use crate::quantity::{Duration, RateValue, Size};
use isola_core::params::Params;
use isola_core::policy::find_policy;
use isola_core::SplitWhen;
use isola_core::{AffineCost, EngineSpec, SchedulerBuilder};
use isola_core::{EngineKind, RateUnit};
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
    let (mut run, policy_spans, policy_ons) = check_run(&src, raw.run)?;
    let name_spans: Vec<Range<usize>> = raw.engine.iter().map(|e| e.get_ref().name.span()).collect();
    let engines = raw
        .engine
        .into_iter()
        .map(|e| check_engine(&src, e))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, e) in engines.iter().enumerate() {
        if engines[..i].iter().any(|o| o.name == e.name) {
            return Err(src.at(
                name_spans[i].clone(),
                Some("name"),
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
        let spec = tenant::check_tenant(&src, base, &engines, &tenants, t, run.duration.is_some())?;
        tenants.push(spec);
    }
    if tenants.is_empty() {
        return Err(src.at(0..0, Some("tenant"), "a scenario needs at least one [[tenant]]"));
    }
    let refs = super::slo::engine_refs(&engines);
    for ((p, span), on) in run.policies.iter_mut().zip(&policy_spans).zip(policy_ons) {
        p.on = per_engine::check_policy_on(&src, span.clone(), on, &refs)?;
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
            policies.push(PolicyRun {
                name: "fcfs".into(),
                label: "fcfs".into(),
                params: BTreeMap::new(),
                split: None,
                on: Vec::new(),
            });
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

/// One `[[engine]]`: its kind, the keys that kind takes, and its device.
fn check_engine(src: &Source<'_>, raw: Spanned<RawEngine>) -> Result<EngineModel, ScenarioError> {
    let raw = raw.into_inner();
    check_name(src, raw.name.span(), "name", raw.name.get_ref())?;
    let kind = match EngineKind::from_name(raw.kind.get_ref()) {
        Some(kind) => kind,
        None => {
            let other = raw.kind.get_ref();
            return Err(src.at(
                raw.kind.span(),
                Some("kind"),
                format!("unknown engine kind `{other}`: use accelerator, pu, dma or egress"),
            ));
        }
    };
    // Keys that only some kinds take: (key, where it is written if present, kinds).
    fn at<T>(v: &Option<Spanned<T>>) -> Option<Range<usize>> {
        v.as_ref().map(Spanned::span)
    }
    use EngineKind::*;
    type KindKey<'k> = (&'k str, Option<Range<usize>>, &'k [EngineKind]);
    let kind_keys: [KindKey; 12] = [
        ("queue_depth", at(&raw.queue_depth), &[Accelerator]),
        ("service", at(&raw.service), &[Accelerator, ProcessingUnits]),
        ("clock", at(&raw.clock), &[ProcessingUnits]),
        ("bandwidth", at(&raw.bandwidth), &[Dma, Egress]),
        ("max_payload", at(&raw.max_payload), &[Dma]),
        ("max_read_request", at(&raw.max_read_request), &[Dma]),
        ("tlp_overhead", at(&raw.tlp_overhead), &[Dma]),
        ("tlp_rate", at(&raw.tlp_rate), &[Dma]),
        ("request_overhead", at(&raw.request_overhead), &[Dma]),
        ("pcie", at(&raw.pcie), &[Dma]),
        ("packet_overhead", at(&raw.packet_overhead), &[Egress]),
        ("steering", at(&raw.steering), &[ProcessingUnits]),
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
    let window = raw
        .contention_window
        .as_ref()
        .map_or(isola_core::DEFAULT_CONTENTION_WINDOW_NS, |w| w.get_ref().0);
    let split_when = match raw.split_when.as_ref() {
        Some(w) => super::parse_split_when(w.get_ref(), window)
            .map_err(|m| src.at(w.span(), Some("split_when"), m))?,
        None => SplitWhen::Always,
    };
    if let (SplitWhen::Always, Some(w)) = (split_when, &raw.contention_window) {
        return Err(src.at(
            w.span(),
            Some("contention_window"),
            "only applies with split_when = \"contended\" or \"for_latency\"",
        ));
    }
    let split_time = match &raw.split_time {
        Some(t) if t.get_ref().0 == 0 => {
            return Err(src.at(t.span(), Some("split_time"), "must be greater than zero"))
        }
        t => t.as_ref().map(|t| t.get_ref().0),
    };
    let egress_ratio = match raw.egress_ratio {
        Some(r) if !(r.get_ref().is_finite() && (0.0..=MAX_EGRESS_RATIO).contains(r.get_ref())) => {
            return Err(src.at(
                r.span(),
                Some("egress_ratio"),
                format!("must be between 0 and {MAX_EGRESS_RATIO} (a stage's output at most that many times its input)"),
            ))
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
            let max_payload = size(raw.max_payload, "max_payload", 256)?;
            let max_read_request = size(raw.max_read_request, "max_read_request", 512)?;
            let pcie = match (raw.pcie, &raw.tlp_rate) {
                (Some(_), Some(r)) => {
                    return Err(src.at(
                        r.span(),
                        Some("tlp_rate"),
                        "does not combine with [engine.pcie], whose posted credits and root-complex costs replace it",
                    ))
                }
                (Some(p), None) => Some(super::pcie::check_pcie(src, p, max_payload, max_read_request)?),
                (None, _) => None,
            };
            if let (Some(_), Some(r)) = (&pcie, &raw.request_overhead) {
                return Err(src.at(
                    r.span(),
                    Some("request_overhead"),
                    "does not combine with [engine.pcie], whose descriptor and completion entry are a request's setup there",
                ));
            }
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
                max_payload,
                max_read_request,
                tlp_overhead: size(raw.tlp_overhead, "tlp_overhead", 24)?,
                tlp_rate,
                request_overhead: raw.request_overhead.map_or(0, |d| d.into_inner().0),
                pcie,
            })
        }
        Egress => DeviceSpec::Egress {
            bytes_per_sec: bytes_rate(raw.bandwidth, "bandwidth")?,
            packet_overhead: raw.packet_overhead.map_or(24, |s| s.into_inner().0),
        },
    };
    let steering = match (raw.steering.as_ref().map(|s| s.get_ref().as_str()), raw.ring) {
        (None | Some("scheduler"), None) => Steering::Scheduler,
        (Some("rss"), ring) => Steering::Rss {
            ring: match ring {
                Some(r) if *r.get_ref() == 0 => {
                    return Err(src.at(r.span(), Some("ring"), "must be at least 1"))
                }
                Some(r) => r.into_inner(),
                None => super::DEFAULT_RSS_RING,
            },
        },
        (Some("scheduler") | None, Some(r)) => {
            return Err(src.at(r.span(), Some("ring"), "only applies with steering = \"rss\""));
        }
        (Some(other), _) => {
            let span = raw.steering.as_ref().map_or(0..0, Spanned::span);
            return Err(src.at(
                span,
                Some("steering"),
                format!("unknown steering `{other}`: use \"scheduler\" or \"rss\""),
            ));
        }
    };
    Ok(EngineModel {
        name: raw.name.into_inner(),
        steering,
        kind,
        slots,
        queue_depth,
        egress_ratio,
        split_when,
        split_time,
        learn: raw.learn.unwrap_or(false),
        device,
    })
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
