//! Admission control: a reservation is a promise, so the reservations an
//! engine admits must fit its capacity.
//!
//! An engine's capacity comes from its cost model: a task costs `base_ns +
//! per_byte_ns * bytes` on one of its `workers`, so the engine serves at
//! most `workers * 1e9 / base_ns` tasks per second (of the smallest tasks)
//! and `workers * 1e9 / per_byte_ns` bytes per second (of the largest,
//! where the fixed part vanishes). A reservation takes the fraction of the
//! engine's time its rate needs at that capacity (`rate / capacity` in its
//! own unit); the reservations admitted on an engine must add up to at
//! most the whole of it. The same figures are what the Kubernetes driver
//! publishes as the engine's consumable capacity, so a claim the
//! scheduler allocates is one isolad admits.
//!
//! What it must not do: read a clock, or guess a workload. A reservation
//! in tasks per second is a promise for tasks whose cost is mostly the
//! model's fixed part; one in bytes per second for tasks whose cost is
//! mostly their bytes (the docs say so).

use crate::units::{Rate, RateUnit, NANOS_PER_SEC};

/// What an engine can serve at most, by its cost model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineCapacity {
    /// Tasks per second (`None`: not bounded, the model's fixed part is 0).
    pub tasks_per_sec: Option<f64>,
    /// Bytes per second (`None`: not bounded, the model's per-byte part is 0).
    pub bytes_per_sec: Option<f64>,
}

impl EngineCapacity {
    /// The capacity of `workers` (0 counts as one: the dispatcher runs the
    /// engine's tasks) serving tasks that cost `base_ns + per_byte_ns *
    /// bytes`.
    pub fn of_cost(base_ns: f64, per_byte_ns: f64, workers: usize) -> EngineCapacity {
        let workers = workers.max(1) as f64;
        let rate = |ns: f64| (ns.is_finite() && ns > 0.0).then(|| workers * NANOS_PER_SEC as f64 / ns);
        EngineCapacity {
            tasks_per_sec: rate(base_ns),
            bytes_per_sec: rate(per_byte_ns),
        }
    }

    /// The capacity in `unit`, if bounded.
    pub fn in_unit(&self, unit: RateUnit) -> Option<f64> {
        match unit {
            RateUnit::OpsPerSec => self.tasks_per_sec,
            RateUnit::BytesPerSec => self.bytes_per_sec,
        }
    }

    /// The fraction of the engine a reservation of `rate` takes (0 where
    /// the capacity in its unit is not bounded).
    pub fn share_of(&self, rate: Rate) -> f64 {
        self.in_unit(rate.unit()).map_or(0.0, |cap| rate.per_sec() / cap)
    }
}

/// How much of an engine admitted reservations take: the sum of their
/// shares, above which nothing more is admitted (a rounding slack of one
/// part in a million).
pub const FULL: f64 = 1.0 + 1e-6;

/// A reservation an engine cannot promise.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "engine `{engine}` cannot promise tenant `{tenant}` its reservation of {asked}: its capacity is {capacity} (from its cost model), {others} already reserve {taken:.1}% of it, and this would take {share:.1}% more ({total:.1}% in all)"
)]
pub struct OverCommitted {
    /// The engine.
    pub engine: String,
    /// The tenant refused (the last in the order checked).
    pub tenant: String,
    /// Its reservation, as written (`"500k/s"`).
    pub asked: String,
    /// The engine's capacity, for a person.
    pub capacity: String,
    /// Who reserves before it, for a person.
    pub others: String,
    /// Their share, percent.
    pub taken: f64,
    /// Its share, percent.
    pub share: f64,
    /// Both, percent.
    pub total: f64,
}

/// The capacity as a person reads it (`"1000000 tasks/s and 2000000000 B/s"`).
pub fn describe(capacity: &EngineCapacity) -> String {
    let part = |v: Option<f64>, unit: &str| match v {
        Some(v) => format!("{v:.0} {unit}"),
        None => format!("unbounded {unit}"),
    };
    format!(
        "{} and {}",
        part(capacity.tasks_per_sec, "tasks/s"),
        part(capacity.bytes_per_sec, "B/s")
    )
}

/// Checks that `reservations` (tenant, rate), in order, fit `engine`'s
/// `capacity`: the share they take in all, or the first that does not fit.
pub fn admit<'a>(
    engine: &str,
    capacity: &EngineCapacity,
    reservations: impl IntoIterator<Item = (&'a str, Rate)>,
) -> Result<f64, Box<OverCommitted>> {
    let mut taken = 0.0;
    let mut names: Vec<&str> = Vec::new();
    for (tenant, rate) in reservations {
        let share = capacity.share_of(rate);
        debug_assert!(share >= 0.0 && share.is_finite(), "a share is a finite fraction");
        if taken + share > FULL {
            return Err(Box::new(OverCommitted {
                engine: engine.to_string(),
                tenant: tenant.to_string(),
                asked: rate.to_string(),
                capacity: describe(capacity),
                others: if names.is_empty() {
                    "no other tenant".to_string()
                } else {
                    format!("tenants {}", names.join(", "))
                },
                taken: taken * 100.0,
                share: share * 100.0,
                total: (taken + share) * 100.0,
            }));
        }
        taken += share;
        names.push(tenant);
    }
    Ok(taken)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn capacity_follows_the_cost_model() {
        let c = EngineCapacity::of_cost(1_000.0, 0.5, 2);
        assert_eq!(c.tasks_per_sec, Some(2_000_000.0));
        assert_eq!(c.bytes_per_sec, Some(4e9));
        let free = EngineCapacity::of_cost(0.0, 0.0, 0);
        assert_eq!(free.tasks_per_sec, None);
        assert_eq!(free.share_of(Rate::ops_per_sec(1e12).unwrap()), 0.0);
        assert_eq!(EngineCapacity::of_cost(1_000.0, 0.0, 0).tasks_per_sec, Some(1e6));
    }

    #[test]
    fn the_reservation_that_overcommits_is_named_with_the_numbers() {
        let c = EngineCapacity::of_cost(1_000.0, 1.0, 1); // 1M tasks/s, 1 GB/s
        let a = Rate::ops_per_sec(600_000.0).unwrap();
        let b = Rate::bytes_per_sec(300e6).unwrap();
        assert!((admit("acc", &c, [("a", a), ("b", b)]).unwrap() - 0.9).abs() < 1e-9);
        let x = Rate::bytes_per_sec(200e6).unwrap();
        let err = admit("acc", &c, [("a", a), ("b", b), ("x", x)]).unwrap_err();
        let text = err.to_string();
        for part in [
            "engine `acc`",
            "tenant `x`",
            "200000000 B/s",
            "1000000 tasks/s",
            "tenants a, b",
            "90.0%",
            "20.0%",
            "110.0%",
        ] {
            assert!(text.contains(part), "{part} missing from: {text}");
        }
    }

    proptest! {
        /// Whatever the rates, a set is admitted exactly when its shares
        /// add up to the engine at most, and the total is that sum.
        #[test]
        fn admitted_exactly_when_the_shares_fit(
            base in 1.0f64..1e6,
            per_byte in 0.01f64..100.0,
            workers in 0usize..8,
            rates in proptest::collection::vec((any::<bool>(), 0.001f64..1.0), 0..8),
        ) {
            let c = EngineCapacity::of_cost(base, per_byte, workers);
            let reservations: Vec<(String, Rate)> = rates
                .iter()
                .enumerate()
                .map(|(i, &(ops, fraction))| {
                    let unit = if ops { RateUnit::OpsPerSec } else { RateUnit::BytesPerSec };
                    let rate = Rate::new(fraction * c.in_unit(unit).unwrap(), unit).unwrap();
                    (format!("t{i}"), rate)
                })
                .collect();
            let sum: f64 = rates.iter().map(|r| r.1).sum();
            let result = admit("e", &c, reservations.iter().map(|(n, r)| (n.as_str(), *r)));
            // Prefix sums decide: the first tenant whose prefix passes FULL is refused.
            let mut prefix = 0.0;
            let refused = rates.iter().position(|r| { prefix += r.1; prefix > FULL });
            match (result, refused) {
                (Ok(total), None) => prop_assert!((total - sum).abs() < 1e-9),
                (Err(e), Some(i)) => prop_assert_eq!(e.tenant, format!("t{i}")),
                (r, i) => prop_assert!(false, "{:?} against prefix refusal {:?}", r, i),
            }
        }
    }
}
