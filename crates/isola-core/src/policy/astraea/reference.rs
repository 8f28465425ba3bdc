//! ASTRAEA's decision as a scan over every tenant: the implementation before
//! issue 17, kept as the reference the ready index (`index.rs`) is
//! tested (`tests.rs`) and benchmarked against (`next_ref/astraea/N` in
//! `benches/scheduler_next.rs`). Budgets, periods and the pool are
//! [`Astraea`]'s own; only the decision differs.

use super::{Astraea, Tenant};
use crate::policy::registry::{PolicyInfo, PolicySetup};
use crate::policy::{Params, Policy, PolicyError};

/// Registry entry, for registering with
/// [`crate::SchedulerBuilder::register_policy`]; not in [`crate::POLICIES`].
/// Takes `astraea`'s parameters.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "astraea_scan",
    aliases: &[],
    description:
        "ASTRAEA deciding by the pre-issue-17 scan over every tenant (reference for tests and benchmarks).",
    source: "ASTRAEA (Peng et al., SIGCOMM 2025 poster, §2)",
    work_conserving: true,
    params: super::INFO.params,
    build,
};

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(Astraea::with_index(s, super::params(p)?, false)))
}

/// Order of service (smallest first): budget or pool left (0) or not (1),
/// class rank, own budget (0) or pool (1), fraction of budget used (or
/// service per weight), head sequence number.
type PickKey = (u8, u8, u8, f64, u64);

/// The ready tenant first in the order of service, given the pool left.
pub(super) fn scan(tenants: &[Tenant], pool: f64) -> Option<usize> {
    // (budget left: 0, else fall-back: 1; class rank; own budget: 0,
    // pool: 1; order within; head): smallest wins.
    let mut best: Option<(usize, PickKey)> = None;
    for (i, t) in tenants.iter().enumerate() {
        if !t.ready {
            continue;
        }
        let rank = u8::from(!t.latency_sensitive);
        let key = if t.used < t.budget {
            (0, rank, 0, t.used / t.budget, t.head_seq)
        } else if pool > 0.0 {
            (0, rank, 1, t.used / t.budget.max(f64::MIN_POSITIVE), t.head_seq)
        } else {
            (1, 0, 0, t.used / t.weight, t.head_seq)
        };
        let better = match &best {
            None => true,
            Some((_, b)) => (key.0, key.1, key.2)
                .cmp(&(b.0, b.1, b.2))
                .then(key.3.total_cmp(&b.3))
                .then(key.4.cmp(&b.4))
                .is_lt(),
        };
        if better {
            best = Some((i, key));
        }
    }
    best.map(|(i, _)| i)
}
