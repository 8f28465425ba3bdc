//! A workload's `migrate` key: iPipe's host migration (an actor moves to
//! the host when the DPU is overloaded and back when it is not), checked
//! against the engines and the workload's stages.

use super::source::Source;
use super::{DeviceSpec, EngineModel, ScenarioError};
use crate::quantity::Duration;
use isola_core::{EngineKind, Nanos};
use serde::Deserialize;
use std::ops::Range;
use toml::Spanned;

/// A workload's `migrate = { to, via, up, down, every }` as read.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMigrate {
    to: String,
    via: Option<String>,
    up: Duration,
    down: Duration,
    every: Duration,
    keep: Option<f64>,
}

/// Where a workload's new requests may move, and when (iPipe's rule): its
/// stage on engine `from` (its first compute stage, the DPU's cores) is
/// replaced by `via` (if any: the crossing to the host, a DMA engine) and
/// `to` (the host's cores). Every `every`, when `from`'s queued cost per
/// slot is over `up`, the migrating workload whose tenant has the most
/// queued cost there moves its new requests; a moved one moves back when
/// the queued cost per slot is under `down`. Requests already submitted
/// stay where they are. With `keep`, a moved request still takes that
/// share of its cost on `from` first (the DPU receives and forwards it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MigrateSpec {
    /// Index, among the workload's stages, of the stage that moves.
    pub stage: usize,
    /// The engine it moves from (the stage's engine).
    pub from: usize,
    /// The engine it moves to (a compute engine: the host's cores).
    pub to: usize,
    /// A DMA engine crossed before `to` (the PCIe crossing), if any.
    pub via: Option<usize>,
    /// Queued cost per slot of `from` above which a workload moves out, ns.
    pub up: Nanos,
    /// Queued cost per slot of `from` below which it moves back, ns.
    pub down: Nanos,
    /// How often the rule is checked, ns.
    pub every: Nanos,
    /// The share of the stage's cost a moved request still takes on
    /// `from` before it crosses (0: none, and no stage there).
    pub keep: f64,
}

impl MigrateSpec {
    /// The engines a moved request goes through, given the workload's
    /// `stages`: the moving stage replaced by `via` (if any) and `to`.
    pub fn moved_stages(&self, stages: &[usize]) -> Vec<usize> {
        let mut out = Vec::with_capacity(stages.len() + 1);
        out.extend_from_slice(&stages[..self.stage]);
        out.extend(self.kept_stage().map(|_| self.from));
        out.extend(self.via);
        out.push(self.to);
        out.extend_from_slice(&stages[self.stage + 1..]);
        out
    }

    /// The index, among [`Self::moved_stages`], of the stage that takes
    /// `keep` of the cost on `from`, if `keep` is positive.
    pub fn kept_stage(&self) -> Option<usize> {
        (self.keep > 0.0).then_some(self.stage)
    }
}

/// Checks `migrate` (written at `span`) for a workload whose stages are
/// `stages`; `bounded` says whether the run has a `duration` (the rule
/// runs every `every` until the run's end).
pub(super) fn check_migrate(
    src: &Source<'_>,
    engines: &[EngineModel],
    stages: &[usize],
    migrate: Spanned<RawMigrate>,
    bounded: bool,
) -> Result<MigrateSpec, ScenarioError> {
    let span: Range<usize> = migrate.span();
    let raw = migrate.into_inner();
    let bad = |key: &str, why: String| Err(src.at(span.clone(), Some(key), why));
    let index = |key: &str, name: &str| {
        engines.iter().position(|e| e.name == name).ok_or_else(|| {
            let known: Vec<&str> = engines.iter().map(|e| e.name.as_str()).collect();
            src.at(
                span.clone(),
                Some(key),
                format!("no engine named `{name}` (engines: {})", known.join(", ")),
            )
        })
    };
    let compute = |e: usize| matches!(engines[e].device, DeviceSpec::Compute { .. });
    let Some(stage) = stages.iter().position(|&s| compute(s)) else {
        return bad(
            "migrate",
            "the workload has no compute stage to move (its stages are all DMA or egress engines)".into(),
        );
    };
    let from = stages[stage];
    let to = index("to", &raw.to)?;
    if !compute(to) {
        return bad(
            "to",
            format!(
                "`{}` is not a compute engine: a request's work cannot run there",
                raw.to
            ),
        );
    }
    if to == from {
        return bad(
            "to",
            format!("`{}` is the engine the workload moves from", raw.to),
        );
    }
    let via = match &raw.via {
        Some(name) => {
            let v = index("via", name)?;
            if engines[v].kind != EngineKind::Dma {
                return bad(
                    "via",
                    format!("`{name}` is not a dma engine (the crossing to `to`)"),
                );
            }
            Some(v)
        }
        None => None,
    };
    if raw.every.0 == 0 {
        return bad("every", "must be positive".into());
    }
    if raw.down.0 >= raw.up.0 {
        return bad(
            "down",
            "must be below `up` (between the two nothing moves, so that a workload does not flap)".into(),
        );
    }
    let keep = raw.keep.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&keep) {
        return bad("keep", "must be a share from 0 to 1 of the stage's cost".into());
    }
    if !bounded {
        return bad(
            "migrate",
            "the rule is checked every `every` until the run's end: give [run] a `duration`".into(),
        );
    }
    Ok(MigrateSpec {
        stage,
        from,
        to,
        via,
        up: raw.up.0,
        down: raw.down.0,
        every: raw.every.0,
        keep,
    })
}
