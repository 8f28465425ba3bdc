//! The engine keys every file that describes an engine shares (a
//! scenario's `[[engine]]`, isolad's `[[engine]]`), checked once here:
//! its name, its kind (an accelerator unless said), and its split rule
//! (`split_when`, `contention_window`, `split_time`) and its batch rule
//! (`batch = { tasks, bytes, wait }`). Whether a kind's
//! tasks may be split at all, and the policy it runs unless told, are the
//! core's ([`isola_core::EngineKind::splits_tasks`],
//! [`isola_core::EngineKind::default_policy`]). The keys only one context
//! has (a scenario's device models, isolad's operators and threads) are
//! checked by that context's file.

use crate::quantity::{Duration, Size};
use crate::scenario::source::Source;
use crate::scenario::{check_name, parse_split_when, ScenarioError};
use isola_core::{BatchRule, EngineKind, SplitWhen};
use serde::Deserialize;
use std::ops::Range;
use toml::Spanned;

/// An engine's `name`, checked (a name, and not one of `earlier`).
pub fn check_engine_name<'e>(
    src: &Source<'_>,
    name: &Spanned<String>,
    earlier: impl IntoIterator<Item = &'e str>,
) -> Result<String, ScenarioError> {
    check_name(src, name.span(), "name", name.get_ref())?;
    if earlier.into_iter().any(|o| o == name.get_ref()) {
        return Err(src.at(
            name.span(),
            Some("name"),
            format!("engine `{}` is defined twice", name.get_ref()),
        ));
    }
    Ok(name.get_ref().clone())
}

/// An engine's `kind`: `accelerator` (the default), `pu`, `dma` or `egress`.
pub fn check_kind(src: &Source<'_>, kind: Option<&Spanned<String>>) -> Result<EngineKind, ScenarioError> {
    let Some(k) = kind else {
        return Ok(EngineKind::Accelerator);
    };
    EngineKind::from_name(k.get_ref()).ok_or_else(|| {
        src.at(
            k.span(),
            Some("kind"),
            format!(
                "unknown engine kind `{}`: use accelerator, pu, dma or egress",
                k.get_ref()
            ),
        )
    })
}

/// An engine's split keys, as read.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawSplitKeys<'a> {
    /// `split_when`: `always` (the default), `contended` or `for_latency`.
    pub split_when: Option<&'a Spanned<String>>,
    /// `contention_window`: how recent another tenant's work must be for
    /// the engine to count as contended.
    pub contention_window: Option<&'a Spanned<Duration>>,
    /// `split_time`: the most predicted service of one subtask.
    pub split_time: Option<&'a Spanned<Duration>>,
}

/// When an engine splits, and the most predicted service of a subtask
/// (ns), from its split keys.
pub fn check_split_keys(
    src: &Source<'_>,
    raw: RawSplitKeys<'_>,
) -> Result<(SplitWhen, Option<u64>), ScenarioError> {
    let window = raw
        .contention_window
        .map_or(isola_core::DEFAULT_CONTENTION_WINDOW_NS, |w| w.get_ref().0);
    let split_when = match raw.split_when {
        Some(w) => {
            parse_split_when(w.get_ref(), window).map_err(|m| src.at(w.span(), Some("split_when"), m))?
        }
        None => SplitWhen::Always,
    };
    if let (SplitWhen::Always, Some(w)) = (split_when, raw.contention_window) {
        return Err(src.at(
            w.span(),
            Some("contention_window"),
            "only applies with split_when = \"contended\" or \"for_latency\"",
        ));
    }
    let split_time = match raw.split_time {
        Some(t) if t.get_ref().0 == 0 => {
            return Err(src.at(t.span(), Some("split_time"), "must be greater than zero"))
        }
        t => t.map(|t| t.get_ref().0),
    };
    Ok((split_when, split_time))
}

/// An engine's `batch` table, as read: `batch = { tasks = 16, bytes =
/// "4KiB", wait = "20us" }` ([`isola_core::BatchRule`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBatch {
    /// The most tasks in one batch (2 to [`isola_core::MAX_BATCH_TASKS`]).
    pub tasks: Spanned<u32>,
    /// The most bytes of a batch's tasks together (default: no limit).
    pub bytes: Option<Spanned<Size>>,
    /// How long a tenant's first task may wait for its batch to fill
    /// (default: 0, no wait).
    pub wait: Option<Spanned<Duration>>,
}

/// An engine's batch rule from its `batch` table, if it has one.
pub fn check_batch(
    src: &Source<'_>,
    raw: Option<&Spanned<RawBatch>>,
) -> Result<Option<BatchRule>, ScenarioError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let b = raw.get_ref();
    let tasks = *b.tasks.get_ref();
    let max = isola_core::MAX_BATCH_TASKS;
    if !(2..=max).contains(&tasks) {
        return Err(src.at(
            b.tasks.span(),
            Some("batch.tasks"),
            format!("must be 2 to {max} (a batch of one is no batch: leave `batch` out)"),
        ));
    }
    let bytes = match &b.bytes {
        Some(s) if s.get_ref().0 == 0 => {
            return Err(src.at(s.span(), Some("batch.bytes"), "must be at least 1B"))
        }
        Some(s) => s.get_ref().0,
        None => u64::MAX,
    };
    let wait = b.wait.as_ref().map_or(0, |w| w.get_ref().0);
    let rule = BatchRule::new(tasks, bytes, wait);
    debug_assert!(rule.is_some(), "the keys were checked");
    Ok(rule)
}

/// Where an engine is described, which decides what its `learn` defaults to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineContext {
    /// A scenario: the engine's service model is its true cost.
    Scenario,
    /// isolad: the engine runs real operators on a configured cost model.
    Daemon,
}

/// Whether an engine learns its operators' costs unless its `learn` says
/// (decided here alone): where it runs real operators on configured,
/// guessed costs (isolad's accelerators and processing units), yes; a DMA
/// or egress engine, whose cost is its link's, no; in a scenario, whose
/// service model is the engine's own cost, no (learning there would only
/// add a fit's noise to exact predictions; a scenario whose tenants' costs
/// differ from the model, `measured_over_predicted`, sets `learn`).
pub fn default_learn(kind: EngineKind, context: EngineContext) -> bool {
    context == EngineContext::Daemon && matches!(kind, EngineKind::Accelerator | EngineKind::ProcessingUnits)
}

/// Where a key is written, if it is.
pub fn written<T>(v: &Option<Spanned<T>>) -> Option<Range<usize>> {
    v.as_ref().map(Spanned::span)
}
