//! Code the runtime runs but did not write, kept from taking the runtime
//! down: a cost model (a tenant's own, through `with_cost`, or an
//! engine's), a policy or a planner that panics. Operators are guarded by
//! the workers (`worker::guarded`); this module guards what runs on the
//! dispatcher thread, where one panic would otherwise stop every tenant's
//! work.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Runs `f`, turning a panic into its message.
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| crate::worker::panic_message(panic.as_ref()))
}

/// A cost model whose panics are caught: a prediction that panics is no
/// prediction (`None`), which the core treats as it treats a model that
/// does not know the operator. [`GuardedCost::check`] tells a submitter
/// that its model panicked.
#[derive(Debug)]
pub(crate) struct GuardedCost(pub Arc<dyn isola_core::CostModel>);

impl GuardedCost {
    /// `model`, guarded.
    pub(crate) fn wrap(model: Arc<dyn isola_core::CostModel>) -> Arc<GuardedCost> {
        Arc::new(GuardedCost(model))
    }

    /// The prediction, or the panic's message.
    pub(crate) fn check(
        model: &dyn isola_core::CostModel,
        op: &str,
        bytes: u64,
    ) -> Result<Option<u64>, String> {
        catch(|| model.predict(op, bytes))
    }
}

impl isola_core::CostModel for GuardedCost {
    fn predict(&self, op: &str, bytes: u64) -> Option<u64> {
        GuardedCost::check(self.0.as_ref(), op, bytes).ok().flatten()
    }
}
