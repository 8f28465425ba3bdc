//! Rate shaping for reservations and limits, in bytes/s or ops/s.
//!
//! The shaper is the generic cell rate algorithm (GCRA, ITU-T I.371), the
//! virtual-scheduling form of a token bucket: it keeps a theoretical arrival
//! time `tat`; work conforms at `now` if `now >= tat - tolerance`, and serving
//! `u` units moves `tat` to `max(tat, now) + u / rate`. With
//! `tolerance = burst / rate` this admits at most `rate x W + burst` units plus
//! one task in any window of length `W`, exactly like a token bucket of depth
//! `burst`, but it answers "when may the next task go" directly, which is what
//! a sans-IO scheduler must tell its driver. The `max(tat, now)` is also the
//! rule that gives an idle tenant no credit for the time it was idle (beyond
//! its burst), as mClock's tags do.
//!
//! Written by hand: GCRA is a few lines, and the crates that offer it
//! (`governor`) read the clock themselves, which the core must not do.

use crate::tenant::RateSpec;
use crate::units::{Bytes, Nanos, RateUnit};

/// A GCRA shaper for one tenant on one engine.
#[derive(Debug, Clone)]
pub struct RateShaper {
    unit: RateUnit,
    nanos_per_unit: f64,
    tolerance_ns: f64,
    tat: f64,
}

impl RateShaper {
    /// A shaper for `spec`, with no work charged yet.
    pub fn new(spec: RateSpec) -> Self {
        let nanos_per_unit = spec.rate.nanos_per_unit();
        RateShaper {
            unit: spec.rate.unit(),
            nanos_per_unit,
            tolerance_ns: spec.burst * nanos_per_unit,
            tat: 0.0,
        }
    }

    /// Whether work may be served at `now`.
    #[inline]
    pub fn conforms(&self, now: Nanos) -> bool {
        now as f64 >= self.tat - self.tolerance_ns
    }

    /// The earliest time at which work conforms (`conforms(ready_at())` holds).
    #[inline]
    pub fn ready_at(&self) -> Nanos {
        (self.tat - self.tolerance_ns).max(0.0).ceil() as Nanos
    }

    /// Records that a task of `bytes` bytes was served at `now`.
    #[inline]
    pub fn charge(&mut self, now: Nanos, bytes: Bytes) {
        self.charge_from(now, bytes);
    }

    /// Records a task of `bytes` bytes served, spacing it from the later of
    /// the previous theoretical time and `floor` rather than from now. With
    /// `floor` = when the tenant last became backlogged, this is mClock's
    /// reservation tag `R = max(R_prev + 1/r, arrival)`: service that came
    /// late is caught up while the tenant stays backlogged, and idle time
    /// still earns nothing.
    #[inline]
    pub fn charge_from(&mut self, floor: Nanos, bytes: Bytes) {
        self.tat = self.tat.max(floor as f64) + self.unit.units_of(bytes) * self.nanos_per_unit;
    }

    /// Whether every piece of a task is held to the rate (bytes), or only a
    /// task's first (operations: the rest of a started task may follow).
    #[inline]
    pub fn paces_pieces(&self) -> bool {
        self.unit == RateUnit::BytesPerSec
    }

    /// Records one piece of a task (an engine's fragment) as `charge_from`
    /// does: its bytes for a byte rate; for an ops rate one operation for
    /// the task's `first` piece and nothing for the others, since a task
    /// the engine fragments is still one operation of its tenant's.
    #[inline]
    pub fn charge_piece(&mut self, floor: Nanos, bytes: Bytes, first: bool) {
        if first || self.paces_pieces() {
            self.charge_from(floor, bytes);
        }
    }

    /// Whether a piece may go at `now`: it conforms, or it `continues` a
    /// task already started and only a task's first piece is paced.
    #[inline]
    pub fn admits_piece(&self, now: Nanos, continues: bool) -> bool {
        self.conforms(now) || (continues && !self.paces_pieces())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;
    use proptest::prelude::*;

    fn spec(per_sec: f64, unit: RateUnit, burst: f64) -> RateSpec {
        RateSpec {
            rate: Rate::new(per_sec, unit).unwrap(),
            burst,
        }
    }

    #[test]
    fn paces_ops_at_the_rate() {
        // 1M ops/s: one op per microsecond, no burst.
        let mut s = RateShaper::new(spec(1e6, RateUnit::OpsPerSec, 0.0));
        assert!(s.conforms(0));
        s.charge(0, 9999);
        assert!(!s.conforms(999));
        assert_eq!(s.ready_at(), 1000);
        assert!(s.conforms(1000));
    }

    #[test]
    fn idle_time_earns_no_credit_beyond_the_burst() {
        let mut s = RateShaper::new(spec(1e6, RateUnit::OpsPerSec, 2.0));
        // After a long idle period, at most burst + 1 ops go back to back.
        let now = 1_000_000;
        let mut served = 0;
        while s.conforms(now) {
            s.charge(now, 1);
            served += 1;
        }
        assert_eq!(served, 3);
    }

    proptest! {
        /// In every window of length W: served units <= rate x W + burst + one task.
        #[test]
        fn gcra_bound_holds_in_every_window(
            per_sec in 1e3f64..1e7,
            burst in 0.0f64..5000.0,
            sizes in proptest::collection::vec(1u64..4096, 1..200),
            gaps in proptest::collection::vec(0u64..5000, 200),
            window in 1u64..100_000,
        ) {
            let mut s = RateShaper::new(spec(per_sec, RateUnit::BytesPerSec, burst));
            let mut now = 0;
            let mut served: Vec<(Nanos, u64)> = Vec::new();
            for (i, &b) in sizes.iter().enumerate() {
                now += gaps[i];
                now = now.max(s.ready_at());
                prop_assert!(s.conforms(now));
                s.charge(now, b);
                served.push((now, b));
            }
            let max_task = *sizes.iter().max().unwrap() as f64;
            for (i, &(t0, _)) in served.iter().enumerate() {
                let in_window: u64 = served[i..].iter().take_while(|&&(t, _)| t < t0 + window).map(|&(_, b)| b).sum();
                let bound = per_sec * window as f64 / 1e9 + burst + max_task;
                prop_assert!(in_window as f64 <= bound + 1e-6, "{} > {}", in_window, bound);
            }
        }
    }
}
