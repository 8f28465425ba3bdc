//! The spread of one figure over repeated runs (seeds, rounds): its median
//! and its range.

use serde::{Deserialize, Serialize};

/// The median and the range of one figure over repeated runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The median (the upper middle one of an even count).
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (`None` if there are none). NaNs sort last.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().collect();
        // Sorts `v`: its ends are the range.
        let median = isola_core::metrics::median_f64(&mut v)?;
        Some(Spread {
            median,
            min: *v.first()?,
            max: *v.last()?,
        })
    }

    /// The spread for people as `median [min-max]`, each value shown by
    /// `f`; the median alone when every run agrees (or only one ran).
    pub fn show(&self, f: impl Fn(f64) -> String) -> String {
        let (med, lo, hi) = (f(self.median), f(self.min), f(self.max));
        if lo == hi {
            med
        } else {
            format!("{med} [{lo}-{hi}]")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_is_the_median_and_the_range() {
        let s = Spread::of([0.3, 0.1, 0.2, 0.9]).unwrap();
        assert_eq!((s.median, s.min, s.max), (0.3, 0.1, 0.9));
        assert_eq!(Spread::of([2.0]).map(|s| s.median), Some(2.0));
        assert_eq!(Spread::of([]), None);
    }

    #[test]
    fn a_spread_shows_its_range_only_when_runs_differ() {
        let s = |median, min, max| Spread { median, min, max };
        let pct = |v: f64| format!("{:.2}%", v * 100.0);
        assert_eq!(s(0.02, 0.01, 0.03).show(pct), "2.00% [1.00%-3.00%]");
        assert_eq!(s(0.5, 0.5, 0.5).show(pct), "50.00%");
    }
}
