//! What the engines that learn costs have learned of their operators
//! (`isola_core::cost_fit`), published for readers on other threads
//! (isolad's `isola ctl costs` and metrics) at most every
//! [`PUBLISH_EVERY_NS`]: the core lives on the dispatcher thread, and a
//! copy now and then costs the task path nothing.

use super::Dispatcher;
use isola_core::{EngineId, Nanos};

/// How often the learned costs are copied out: 50 ms.
pub(crate) const PUBLISH_EVERY_NS: Nanos = 50_000_000;

impl Dispatcher {
    /// Copies every engine's learned costs into the shared state, if an
    /// engine learns and the last copy is older than [`PUBLISH_EVERY_NS`].
    pub(super) fn publish_costs(&mut self, now: Nanos) {
        if !self.learns || now < self.costs_published.saturating_add(PUBLISH_EVERY_NS) {
            return;
        }
        self.costs_published = now;
        let costs = (0..self.scheduler.engine_count())
            .map(|e| self.scheduler.learned_costs(EngineId(e as u32)))
            .collect();
        self.shared.learned_costs.publish(costs);
    }
}
