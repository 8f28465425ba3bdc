//! The median, as every figure in the workspace reads one: the middle
//! value in order, the upper of the two middle ones of an even count, so
//! a median is always one of the values (a round, a window, a sample that
//! happened). The one definition; the run recorder's percentiles are
//! [`super::LatencyHistogram`]'s.

use std::cmp::Ordering;

/// The median of `values` in `cmp`'s order (the upper middle one of an
/// even count), `None` when there are none. Sorts `values`, stably: of
/// values `cmp` finds equal, the one taken is the one a stable sort puts
/// in the middle.
pub fn median_by<T>(values: &mut [T], cmp: impl FnMut(&T, &T) -> Ordering) -> Option<&T> {
    values.sort_by(cmp);
    values.get(values.len() / 2)
}

/// [`median_by`] in the values' own order.
pub fn median<T: Ord + Copy>(values: &mut [T]) -> Option<T> {
    median_by(values, T::cmp).copied()
}

/// [`median_by`] of floats in [`f64::total_cmp`]'s order (NaNs last).
pub fn median_f64(values: &mut [f64]) -> Option<f64> {
    median_by(values, f64::total_cmp).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_upper_middle_value() {
        assert_eq!(median::<u64>(&mut []), None);
        assert_eq!(median(&mut [7u64]), Some(7));
        assert_eq!(median(&mut [3u64, 1, 2]), Some(2));
        // Of an even count, the upper middle one: a value that occurred.
        assert_eq!(median(&mut [4u64, 1, 3, 2]), Some(3));
        let mut v = [0.3, 0.1, f64::NAN, 0.2];
        assert_eq!(median_f64(&mut v), Some(0.3));
        // Sorted in place, NaNs last.
        assert_eq!(v[..3], [0.1, 0.2, 0.3]);
        // Among equal keys, the stable sort's middle one.
        let mut rounds = [("a", 1.0f64), ("b", 2.0), ("c", 1.0)];
        let m = median_by(&mut rounds, |x, y| x.1.total_cmp(&y.1));
        assert_eq!(m, Some(&("c", 1.0)));
    }
}
