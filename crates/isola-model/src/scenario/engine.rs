//! Checking a scenario's `[[engine]]`: the keys every engine file shares
//! (`crate::engine`: name, kind, split rule), the keys that only some
//! kinds take, and the device model (a compute engine's service, a DMA
//! engine's PCIe link, an egress link, a processing-unit pool's steering).

use super::check::{check_service, MAX_EGRESS_RATIO};
use super::raw::RawEngine;
use super::source::Source;
use super::{DeviceSpec, DmaSpec, EngineModel, ScenarioError, Steering};
use crate::engine::{check_kind, check_split_keys, written, RawSplitKeys};
use crate::quantity::{RateValue, Size};
use isola_core::{EngineKind, RateUnit};
use std::ops::Range;
use toml::Spanned;

/// One `[[engine]]` (`earlier`: those before it): its kind, the keys that
/// kind takes, and its device.
pub(super) fn check_engine(
    src: &Source<'_>,
    raw: Spanned<RawEngine>,
    earlier: &[EngineModel],
) -> Result<EngineModel, ScenarioError> {
    let raw = raw.into_inner();
    let name = crate::engine::check_engine_name(src, &raw.name, earlier.iter().map(|e| e.name.as_str()))?;
    let kind = check_kind(src, raw.kind.as_ref())?;
    check_kind_keys(src, &raw, kind)?;
    let slots = match &raw.slots {
        Some(s) if *s.get_ref() == 0 => return Err(src.at(s.span(), Some("slots"), "must be at least 1")),
        Some(s) => *s.get_ref(),
        None => 1,
    };
    let queue_depth = match &raw.queue_depth {
        Some(q) if *q.get_ref() < slots => {
            return Err(src.at(
                q.span(),
                Some("queue_depth"),
                format!("must be at least slots ({slots})"),
            ))
        }
        Some(q) => *q.get_ref(),
        None => slots,
    };
    let (split_when, split_time) = check_split_keys(
        src,
        RawSplitKeys {
            split_when: raw.split_when.as_ref(),
            contention_window: raw.contention_window.as_ref(),
            split_time: raw.split_time.as_ref(),
        },
    )?;
    let batch = crate::engine::check_batch(src, raw.batch.as_ref())?;
    let egress_ratio = match &raw.egress_ratio {
        Some(r) if !(r.get_ref().is_finite() && (0.0..=MAX_EGRESS_RATIO).contains(r.get_ref())) => {
            return Err(src.at(
                r.span(),
                Some("egress_ratio"),
                format!("must be between 0 and {MAX_EGRESS_RATIO} (a stage's output at most that many times its input)"),
            ))
        }
        Some(r) => *r.get_ref(),
        None => 1.0,
    };
    let steering = check_steering(src, &raw)?;
    let learn = raw
        .learn
        .unwrap_or_else(|| crate::engine::default_learn(kind, crate::engine::EngineContext::Scenario));
    let device = check_device(src, raw, kind)?;
    Ok(EngineModel {
        name,
        steering,
        kind,
        slots,
        queue_depth,
        egress_ratio,
        split_when,
        split_time,
        batch,
        learn,
        device,
    })
}

/// Refuses a key that `kind` does not take.
fn check_kind_keys(src: &Source<'_>, raw: &RawEngine, kind: EngineKind) -> Result<(), ScenarioError> {
    use EngineKind::*;
    type KindKey<'k> = (&'k str, Option<Range<usize>>, &'k [EngineKind]);
    let kind_keys: [KindKey; 13] = [
        ("queue_depth", written(&raw.queue_depth), &[Accelerator]),
        ("service", written(&raw.service), &[Accelerator, ProcessingUnits]),
        ("clock", written(&raw.clock), &[ProcessingUnits]),
        (
            "dispatch_overhead",
            written(&raw.dispatch_overhead),
            &[Accelerator, ProcessingUnits],
        ),
        ("bandwidth", written(&raw.bandwidth), &[Dma, Egress]),
        ("max_payload", written(&raw.max_payload), &[Dma]),
        ("max_read_request", written(&raw.max_read_request), &[Dma]),
        ("tlp_overhead", written(&raw.tlp_overhead), &[Dma]),
        ("tlp_rate", written(&raw.tlp_rate), &[Dma]),
        ("request_overhead", written(&raw.request_overhead), &[Dma]),
        ("pcie", written(&raw.pcie), &[Dma]),
        ("packet_overhead", written(&raw.packet_overhead), &[Egress]),
        ("steering", written(&raw.steering), &[ProcessingUnits]),
    ];
    for (key, span, kinds) in kind_keys {
        if let Some(span) = span.filter(|_| !kinds.contains(&kind)) {
            let names: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
            let message = format!("only applies to {} engines, not {kind}", names.join("/"));
            return Err(src.at(span, Some(key), message));
        }
    }
    Ok(())
}

/// A processing-unit pool's `steering` (and an RSS `ring`).
fn check_steering(src: &Source<'_>, raw: &RawEngine) -> Result<Steering, ScenarioError> {
    Ok(
        match (raw.steering.as_ref().map(|s| s.get_ref().as_str()), &raw.ring) {
            (None | Some("scheduler"), None) => Steering::Scheduler,
            (Some("rss"), ring) => Steering::Rss {
                ring: match ring {
                    Some(r) if *r.get_ref() == 0 => {
                        return Err(src.at(r.span(), Some("ring"), "must be at least 1"))
                    }
                    Some(r) => *r.get_ref(),
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
        },
    )
}

/// A link's `bandwidth` (a data rate, which DMA and egress engines need).
fn bytes_rate(
    src: &Source<'_>,
    at: Range<usize>,
    kind: EngineKind,
    v: Option<Spanned<RateValue>>,
) -> Result<f64, ScenarioError> {
    let key = "bandwidth";
    match v {
        None => Err(src.at(
            at,
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
}

/// The engine's device model.
fn check_device(src: &Source<'_>, raw: RawEngine, kind: EngineKind) -> Result<DeviceSpec, ScenarioError> {
    let at = raw.kind.as_ref().map_or_else(|| raw.name.span(), Spanned::span);
    Ok(match kind {
        EngineKind::Accelerator | EngineKind::ProcessingUnits => DeviceSpec::Compute {
            service: raw.service.map(|s| check_service(src, s)).transpose()?,
            clock_hz: raw.clock.map_or(1e9, |c| c.into_inner().0),
            dispatch_overhead: raw.dispatch_overhead.map_or(0, |d| d.into_inner().0),
        },
        EngineKind::Dma => DeviceSpec::Dma(check_dma(src, raw, at)?),
        EngineKind::Egress => DeviceSpec::Egress {
            bytes_per_sec: bytes_rate(src, at, kind, raw.bandwidth)?,
            packet_overhead: raw.packet_overhead.map_or(24, |s| s.into_inner().0),
        },
    })
}

/// A DMA engine's PCIe link (`at`: where its kind is written).
fn check_dma(src: &Source<'_>, raw: RawEngine, at: Range<usize>) -> Result<DmaSpec, ScenarioError> {
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
    let pcie =
        match (raw.pcie, &raw.tlp_rate) {
            (Some(_), Some(r)) => return Err(src.at(
                r.span(),
                Some("tlp_rate"),
                "does not combine with [engine.pcie], whose posted credits and root-complex costs replace it",
            )),
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
    Ok(DmaSpec {
        bytes_per_sec: bytes_rate(src, at, EngineKind::Dma, raw.bandwidth)?,
        max_payload,
        max_read_request,
        tlp_overhead: size(raw.tlp_overhead, "tlp_overhead", 24)?,
        tlp_rate,
        request_overhead: raw.request_overhead.map_or(0, |d| d.into_inner().0),
        pcie,
    })
}
