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
}
