//! Admission control over isolad's tenants: each engine's capacity from
//! its cost model (or its measured profile: the slowest operator's), and
//! the check that the reservations admitted on it fit
//! ([`isola_core::admission`]). The daemon runs the check at load, on a
//! reload, and on every `isola ctl add` and `set`; the Kubernetes driver
//! publishes the same capacity (`isola ctl engines`).

use super::{DaemonEngine, DaemonTenant};
use isola_core::admission::{self, EngineCapacity, OverCommitted};
use isola_core::units::RateUnit;

impl DaemonEngine {
    /// What it can serve at most: `workers / base` tasks/s and `workers /
    /// per_byte` bytes/s of its cost model; with a profile, the least of
    /// its operators' (a reservation holds whichever operator its tenant
    /// runs).
    pub fn capacity(&self) -> EngineCapacity {
        let Some(profile) = &self.profile else {
            return EngineCapacity::of_cost(self.base_ns, self.per_byte_ns, self.workers);
        };
        let least = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        profile
            .operators
            .iter()
            .map(|o| EngineCapacity::of_cost(o.base_ns, o.per_byte_ns, self.workers))
            .reduce(|a, b| EngineCapacity {
                tasks_per_sec: least(a.tasks_per_sec, b.tasks_per_sec),
                bytes_per_sec: least(a.bytes_per_sec, b.bytes_per_sec),
            })
            .unwrap_or(EngineCapacity::of_cost(
                self.base_ns,
                self.per_byte_ns,
                self.workers,
            ))
    }
}

/// What `tenants` reserve on `engine`, in each unit: (tasks/s, bytes/s).
pub fn reserved<'a>(
    engine: &DaemonEngine,
    tenants: impl IntoIterator<Item = &'a DaemonTenant>,
) -> (f64, f64) {
    let (mut tasks, mut bytes) = (0.0, 0.0);
    for t in tenants {
        if let Some(r) = t.slo_on(engine).reservation {
            match r.rate.unit() {
                RateUnit::OpsPerSec => tasks += r.rate.per_sec(),
                RateUnit::BytesPerSec => bytes += r.rate.per_sec(),
            }
        }
    }
    (tasks, bytes)
}

/// Checks that `tenants`' reservations fit every one of `engines`, in the
/// order given (the first that does not fit is named).
pub fn admit<'a>(
    engines: &[DaemonEngine],
    tenants: impl IntoIterator<Item = &'a DaemonTenant> + Clone,
) -> Result<(), Box<OverCommitted>> {
    for e in engines {
        let slos: Vec<(&str, isola_core::units::Rate)> = tenants
            .clone()
            .into_iter()
            .filter_map(|t| Some((t.name(), t.slo_on(e).reservation?.rate)))
            .collect();
        admission::admit(&e.name, &e.capacity(), slos)?;
    }
    Ok(())
}
