//! A flow queue's keys, checked once for both places a tenant declares its
//! queues: isolad's `[[tenant.flow]]` (each flow of the packet path) and a
//! scenario's `[[tenant.workload]]` (each workload). The keys mean the same
//! in both: `weight` (its share of its tenant's turn among its queues of
//! the same priority), `priority` (strict, higher first) and `queue_cap`
//! (the most tasks it holds per engine, at most the tenant's).

use crate::scenario::source::Source;
use crate::scenario::ScenarioError;
use isola_core::FlowQueueSpec;
use toml::Spanned;

/// The highest flow queue priority.
pub const MAX_PRIORITY: i64 = u8::MAX as i64;

/// A flow queue's keys as read, borrowed from the table that holds them.
pub(crate) struct RawFlowQueue<'a> {
    pub(crate) weight: &'a Option<Spanned<f64>>,
    pub(crate) priority: &'a Option<Spanned<i64>>,
    pub(crate) queue_cap: &'a Option<Spanned<i64>>,
}

impl RawFlowQueue<'_> {
    /// Checks the keys of a queue of a tenant whose queues together hold
    /// at most `tenant_cap` tasks.
    pub(crate) fn check(&self, src: &Source<'_>, tenant_cap: usize) -> Result<FlowQueueSpec, ScenarioError> {
        let mut spec = FlowQueueSpec::default();
        if let Some(w) = self.weight {
            spec.weight = *w.get_ref();
        }
        if let Some(p) = self.priority {
            let priority = *p.get_ref();
            spec.priority = u8::try_from(priority).map_err(|_| {
                src.at(
                    p.span(),
                    Some("priority"),
                    format!("must be from 0 to {MAX_PRIORITY}, got {priority}"),
                )
            })?;
        }
        if let Some(c) = self.queue_cap {
            let cap = *c.get_ref();
            if cap < 1 || cap as u64 > tenant_cap as u64 {
                return Err(src.at(
                    c.span(),
                    Some("queue_cap"),
                    format!("must be from 1 to the tenant's queue_cap ({tenant_cap}), got {cap}"),
                ));
            }
            spec.queue_cap = Some(cap as usize);
        }
        // The core's own check of the spec, at the key it names.
        spec.validate().map_err(|(key, why)| {
            let span = match key {
                "weight" => self.weight.as_ref().map(Spanned::span),
                _ => self.queue_cap.as_ref().map(Spanned::span),
            };
            src.at(span.unwrap_or_default(), Some(key), why)
        })?;
        Ok(spec)
    }
}
