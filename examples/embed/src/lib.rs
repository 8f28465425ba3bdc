//! # isola-example-embed
//!
//! How an application or a researcher extends and embeds Isola from a
//! crate of their own, without editing Isola: a scheduling policy written
//! here ([`StrictPriority`]), registered by name with the builder
//! ([`STRICT_PRIORITY`]), and a program (`src/main.rs`) that runs the live
//! runtime under it. docs/adding-a-policy.md walks through this file.
//!
//! What it must not do: reach into Isola's internals. It uses only the
//! public `Policy` trait, `PolicyInfo` and the builders.

use isola_core::policy::registry::PolicySetup;
use isola_core::policy::{HeadInfo, Params, Policy, PolicyContext, PolicyError, PolicyInfo};
use isola_core::Nanos;

/// The policy's registry entry: its name (and an alias), what it does,
/// where it comes from, whether it is work-conserving, its parameters
/// (none), and its constructor.
pub const STRICT_PRIORITY: PolicyInfo = PolicyInfo {
    name: "strict-priority",
    aliases: &["prio"],
    description: "Strict priority by weight: the ready tenant with the highest weight always goes first.",
    source: "isola-example-embed (docs/adding-a-policy.md)",
    work_conserving: true,
    params: &[],
    build,
};

fn build(_params: &Params<'_>, setup: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(StrictPriority::new(setup)))
}

/// Strict priority: each tenant's weight is its priority; among the
/// tenants with work ready, the highest goes first (ties: the lower index).
/// A tenant of lower priority waits as long as one above has work: no
/// isolation of the low from the high, which is the point of the example's
/// test (and why Isola's own policies share by weight instead).
#[derive(Debug, Clone)]
pub struct StrictPriority {
    priority: Vec<f64>,
    ready: Vec<bool>,
}

impl StrictPriority {
    /// For `setup`'s tenants.
    pub fn new(setup: &PolicySetup<'_>) -> Self {
        StrictPriority {
            priority: setup.tenants.iter().map(|t| t.weight).collect(),
            ready: vec![false; setup.tenants.len()],
        }
    }
}

impl Policy for StrictPriority {
    fn on_ready(&mut self, _now: Nanos, tenant: usize, _head: &HeadInfo, _cx: &PolicyContext<'_>) {
        self.ready[tenant] = true;
    }

    fn pick(&mut self, _now: Nanos, _cx: &PolicyContext<'_>) -> Option<usize> {
        (0..self.ready.len())
            .filter(|&t| self.ready[t])
            .max_by(|&a, &b| self.priority[a].total_cmp(&self.priority[b]).then(b.cmp(&a)))
    }

    fn on_dispatch(
        &mut self,
        _now: Nanos,
        tenant: usize,
        _served: &HeadInfo,
        next: Option<&HeadInfo>,
        _cx: &PolicyContext<'_>,
    ) {
        // `next` is the tenant's new head if it stays ready.
        self.ready[tenant] = next.is_some();
    }
}
