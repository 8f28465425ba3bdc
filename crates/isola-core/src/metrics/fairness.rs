//! Fairness indices.
//!
//! * Jain's index (Jain, Chiu and Hawe, 1984): `(sum x)^2 / (n sum x^2)`, 1 when
//!   all `x` are equal, `1/n` when one gets everything. Applied to shares
//!   normalised by entitlement (`x_i = share_i / entitled_i`) it measures how
//!   close a weighted allocation is to its weights.
//! * Jain's index against the fair allocation under demand: Jain, Chiu and
//!   Hawe define `x_i = T_i / O_i` with `O_i` the fair allocation, which for
//!   a tenant that asks for less than an equal share is what it asks for.
//!   [`max_min_fair`] computes `O_i` (weighted max-min fairness, water-filling)
//!   and [`jain_of_demand`] the index, so that a tenant given all it asked for
//!   counts as fairly treated however small its share.
//! * MTDA's Fair1 (eq. 1): `sum |w_ep - w_real|` with `w_real = T_i / sum T`.
//! * MTDA's Fair2 (eqs. 2-3): `min slowdown / max slowdown`, with
//!   `slowdown = latency shared / latency alone`.

/// Inputs a fairness index cannot be computed from.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FairnessError {
    /// No values.
    #[error("no values to compute a fairness index over")]
    Empty,
    /// Two input lists differ in length.
    #[error("{left} values but {right} weights")]
    LengthMismatch {
        /// Length of the first list.
        left: usize,
        /// Length of the second list.
        right: usize,
    },
    /// A value is negative or not finite (or a divisor is zero).
    #[error("value {index} is {value}: values must be finite and >= 0 (divisors > 0)")]
    BadValue {
        /// Position of the value.
        index: usize,
        /// The value.
        value: f64,
    },
}

fn check(values: &[f64], positive: bool) -> Result<(), FairnessError> {
    if values.is_empty() {
        return Err(FairnessError::Empty);
    }
    match values
        .iter()
        .position(|&v| !v.is_finite() || v < 0.0 || (positive && v == 0.0))
    {
        Some(index) => Err(FairnessError::BadValue {
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

fn same_len(a: &[f64], b: &[f64]) -> Result<(), FairnessError> {
    if a.len() == b.len() {
        Ok(())
    } else {
        Err(FairnessError::LengthMismatch {
            left: a.len(),
            right: b.len(),
        })
    }
}

/// Jain's index of `values`. All zeros count as perfectly fair (1.0).
pub fn jain_index(values: &[f64]) -> Result<f64, FairnessError> {
    check(values, false)?;
    let sum: f64 = values.iter().sum();
    let sum_sq: f64 = values.iter().map(|x| x * x).sum();
    if sum_sq == 0.0 {
        return Ok(1.0);
    }
    Ok(sum * sum / (values.len() as f64 * sum_sq))
}

/// Jain's index of `served` normalised by `entitlement` (both in any unit;
/// only proportions matter): 1.0 when each got exactly its entitled share.
pub fn jain_normalized(served: &[f64], entitlement: &[f64]) -> Result<f64, FairnessError> {
    same_len(served, entitlement)?;
    check(entitlement, true)?;
    check(served, false)?;
    let total_e: f64 = entitlement.iter().sum();
    let x: Vec<f64> = served
        .iter()
        .zip(entitlement)
        .map(|(s, e)| s / (e / total_e))
        .collect();
    jain_index(&x)
}

/// The weighted max-min fair allocation of `capacity` among tenants that
/// ask for `demand` (water-filling): every tenant gets `min(demand_i,
/// weight_i * level)`, with the one `level` at which the allocations use
/// the capacity, or everyone's demand if the capacity covers it all.
pub fn max_min_fair(demand: &[f64], weights: &[f64], capacity: f64) -> Result<Vec<f64>, FairnessError> {
    same_len(demand, weights)?;
    check(demand, false)?;
    check(weights, true)?;
    check(&[capacity], false)?;
    Ok(water_fill(capacity, demand, weights, &vec![0.0; demand.len()]))
}

/// Water-filling with floors: every tenant ends with `clamp(level x
/// weight_i, floor_i, demand_i)` for the `level` at which the total is
/// `budget`, or with its whole demand when the demands fit. Nobody gets
/// more than its demand. Inputs are not checked: weights must be positive
/// and floors at most the demands. ([`max_min_fair`] is the checked form
/// without floors; ASTRAEA's allocation gives latency-sensitive tenants
/// floors.)
pub(crate) fn water_fill(budget: f64, demand: &[f64], weight: &[f64], floor: &[f64]) -> Vec<f64> {
    let n = demand.len();
    let at = |level: f64, i: usize| (level * weight[i]).clamp(floor[i], demand[i].max(0.0));
    let total = |level: f64| (0..n).map(|i| at(level, i)).sum::<f64>();
    // The total is piecewise linear in the level, with breakpoints where a
    // tenant's share leaves its floor or reaches its demand.
    let mut points: Vec<f64> = (0..n)
        .filter(|&i| demand[i] > 0.0)
        .flat_map(|i| [floor[i] / weight[i], demand[i] / weight[i]])
        .collect();
    points.sort_by(f64::total_cmp);
    let Some(&top) = points.last() else {
        return floor.to_vec();
    };
    if total(top) <= budget {
        return (0..n).map(|i| demand[i].max(0.0)).collect();
    }
    // The scan below stops at the first breakpoint whose total passes the
    // budget. The total never falls as the level rises (each tenant's part
    // does not, and floating-point addition in a fixed order is monotone),
    // so that breakpoint is found by bisection, O(n log n) in all instead
    // of a scan's O(n^2), and the scan starts there with the level and
    // arithmetic a scan from the first breakpoint would have reached it
    // with: the same result to the bit.
    let first = points.partition_point(|&p| total(p) <= budget);
    let mut low = first.checked_sub(1).map_or(0.0, |i| points[i]);
    for &p in &points[first..] {
        let (f_low, f_p) = (total(low), total(p));
        if f_p > budget && p > low {
            let level = low + (budget - f_low) * (p - low) / (f_p - f_low);
            return (0..n).map(|i| at(level, i)).collect();
        }
        low = p;
    }
    (0..n).map(|i| at(low, i)).collect()
}

/// Jain's index of `served` against each tenant's weighted max-min fair
/// allocation of `capacity`, given what each asked for (`demand`, at least
/// what it was served; all in one unit). Tenants that asked for nothing are
/// left out; 1.0 when fewer than two remain; 0.0 when two or more asked and
/// none was served. A tenant served all it asked for scores 1 however small
/// its share; one held under its fair allocation scores `served / fair`.
/// Like every Jain's index it measures equality, not efficiency: capacity
/// left idle lowers it only insofar as some tenants are held further below
/// their fair allocation than others. A capacity under the total served is
/// taken as the total served.
pub fn jain_of_demand(
    served: &[f64],
    demand: &[f64],
    weights: &[f64],
    capacity: f64,
) -> Result<f64, FairnessError> {
    same_len(served, demand)?;
    same_len(served, weights)?;
    check(served, false)?;
    check(&[capacity], false)?;
    if let Some(index) = (0..served.len()).find(|&i| served[i] > demand[i] * (1.0 + 1e-9) + 1e-9) {
        return Err(FairnessError::BadValue {
            index,
            value: served[index],
        });
    }
    let fair = max_min_fair(demand, weights, capacity.max(served.iter().sum()))?;
    let x: Vec<f64> = served
        .iter()
        .zip(&fair)
        .filter(|(_, f)| **f > 0.0)
        .map(|(s, f)| s / f)
        .collect();
    if x.len() < 2 {
        return Ok(1.0);
    }
    if x.iter().all(|&v| v == 0.0) {
        return Ok(0.0);
    }
    jain_index(&x)
}

/// MTDA's Fair1: `sum |expected_i - T_i / sum T|`. Lower is fairer; 0 is exact.
/// `expected` are the expected weights (they should sum to 1).
pub fn fair1(throughputs: &[f64], expected: &[f64]) -> Result<f64, FairnessError> {
    same_len(throughputs, expected)?;
    check(throughputs, false)?;
    check(expected, false)?;
    let total: f64 = throughputs.iter().sum();
    if total == 0.0 {
        return Err(FairnessError::BadValue { index: 0, value: 0.0 });
    }
    Ok(throughputs
        .iter()
        .zip(expected)
        .map(|(t, w)| (w - t / total).abs())
        .sum())
}

/// MTDA's Fair2: `min_i slowdown_i / max_i slowdown_i`, with
/// `slowdown_i = shared_i / alone_i` (request latencies). 1 is fairest.
pub fn fair2(shared: &[f64], alone: &[f64]) -> Result<f64, FairnessError> {
    same_len(shared, alone)?;
    check(shared, true)?;
    check(alone, true)?;
    let slow: Vec<f64> = shared.iter().zip(alone).map(|(s, a)| s / a).collect();
    let min = slow.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = slow.iter().cloned().fold(0.0, f64::max);
    Ok(min / max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} vs {b}");
    }

    #[test]
    fn jain_hand_computed() {
        close(jain_index(&[1.0, 1.0, 1.0, 1.0]).unwrap(), 1.0, 1e-12);
        close(jain_index(&[1.0, 0.0, 0.0, 0.0]).unwrap(), 0.25, 1e-12);
        // (1+2+3)^2 / (3 x (1+4+9)) = 36/42
        close(jain_index(&[1.0, 2.0, 3.0]).unwrap(), 36.0 / 42.0, 1e-12);
        // OSMOSIS Fig. 4 under RR: B holds 2/3 of the PUs, A 1/3: (1)^2/(2 x (1/9+4/9)) = 0.9
        close(jain_index(&[1.0 / 3.0, 2.0 / 3.0]).unwrap(), 0.9, 1e-12);
        // Weighted: 1:3 allocation against 1:3 weights is perfectly fair...
        close(jain_normalized(&[25.0, 75.0], &[1.0, 3.0]).unwrap(), 1.0, 1e-12);
        // ...and an even split against 1:3 weights is not: x = (2, 2/3) -> 0.8
        close(jain_normalized(&[50.0, 50.0], &[1.0, 3.0]).unwrap(), 0.8, 1e-12);
        assert_eq!(jain_index(&[]), Err(FairnessError::Empty));
        assert!(matches!(
            jain_index(&[1.0, -1.0]),
            Err(FairnessError::BadValue { index: 1, .. })
        ));
        assert!(jain_normalized(&[1.0], &[0.0]).is_err());
    }

    #[test]
    fn max_min_fair_by_hand() {
        // 10 among demands 2, 8, 8: the small one is satisfied, the others split the rest.
        assert_eq!(
            max_min_fair(&[2.0, 8.0, 8.0], &[1.0; 3], 10.0).unwrap(),
            vec![2.0, 4.0, 4.0]
        );
        // Weights 1:3 over 8 with both asking for more: 2 and 6.
        assert_eq!(
            max_min_fair(&[10.0, 10.0], &[1.0, 3.0], 8.0).unwrap(),
            vec![2.0, 6.0]
        );
        // Capacity covers every demand: each gets its demand.
        assert_eq!(
            max_min_fair(&[1.0, 2.0], &[1.0, 1.0], 10.0).unwrap(),
            vec![1.0, 2.0]
        );
        assert!(max_min_fair(&[1.0], &[0.0], 1.0).is_err());
        assert!(max_min_fair(&[1.0], &[1.0], f64::NAN).is_err());
    }

    #[test]
    fn jain_of_demand_forgives_small_demands_but_not_starvation() {
        // A victim asking for 1 gets 1, two congestors split the rest evenly: fair.
        close(
            jain_of_demand(&[1.0, 4.5, 4.5], &[1.0, 50.0, 50.0], &[1.0; 3], 10.0).unwrap(),
            1.0,
            1e-12,
        );
        // Judged by weight alone the same allocation looks unfair.
        assert!(jain_normalized(&[1.0, 4.5, 4.5], &[1.0; 3]).unwrap() < 0.85);
        // A victim that asked for 5 but got 1 is starved: x = (1/3.33, 1.35, 1.35).
        let j = jain_of_demand(&[1.0, 4.5, 4.5], &[5.0, 50.0, 50.0], &[1.0; 3], 10.0).unwrap();
        assert!(j < 0.85, "{j}");
        // Capacity 10, both asking for 10, 2 + 2 served: held equally far
        // below their fair 5 each, which Jain's index (equality, not
        // efficiency) counts as fair.
        close(
            jain_of_demand(&[2.0, 2.0], &[10.0, 10.0], &[1.0; 2], 10.0).unwrap(),
            1.0,
            1e-12,
        );
        // Held unequally far below it: x = (0.2, 0.4) -> 0.36 / 0.4.
        let idle = jain_of_demand(&[1.0, 2.0], &[10.0, 10.0], &[1.0; 2], 10.0).unwrap();
        close(idle, 9.0 / 10.0, 1e-12);
        // Both waited and nobody was served: 0.
        assert_eq!(
            jain_of_demand(&[0.0, 0.0], &[3.0, 1.0], &[1.0; 2], 10.0).unwrap(),
            0.0
        );
        // Served more than asked for: an error.
        assert!(jain_of_demand(&[2.0, 1.0], &[1.0, 1.0], &[1.0; 2], 10.0).is_err());
        // Nobody (or one tenant) asking: 1.
        assert_eq!(
            jain_of_demand(&[0.0, 3.0], &[0.0, 3.0], &[1.0, 1.0], 3.0).unwrap(),
            1.0
        );
    }

    #[test]
    fn fair1_reproduces_mtdas_worked_example() {
        let q = [0.25; 4];
        // MTDA section V: DPDK's throughputs give Fair1 = 0.145, MTDA's 0.02.
        close(fair1(&[4.349, 3.284, 3.273, 4.439], &q).unwrap(), 0.145, 0.0005);
        close(fair1(&[5.288, 5.342, 5.343, 5.045], &q).unwrap(), 0.02, 0.0005);
        close(fair1(&[1.0, 1.0], &[0.5, 0.5]).unwrap(), 0.0, 1e-12);
        // One tenant gets everything: |0.5-1| + |0.5-0| = 1.
        close(fair1(&[1.0, 0.0], &[0.5, 0.5]).unwrap(), 1.0, 1e-12);
        assert!(fair1(&[1.0], &[0.5, 0.5]).is_err());
        assert!(fair1(&[0.0, 0.0], &[0.5, 0.5]).is_err());
    }

    #[test]
    fn fair2_is_min_over_max_slowdown() {
        // Slowdowns 2, 4, 1 -> 1/4.
        close(
            fair2(&[20.0, 40.0, 10.0], &[10.0, 10.0, 10.0]).unwrap(),
            0.25,
            1e-12,
        );
        close(fair2(&[3.0, 6.0], &[1.0, 2.0]).unwrap(), 1.0, 1e-12);
        assert!(fair2(&[1.0], &[0.0]).is_err());
    }

    /// Water-filling as it was written before the bisection: the scan over
    /// every breakpoint from the first, the reference the fast form must
    /// match to the bit.
    fn water_fill_by_full_scan(budget: f64, demand: &[f64], weight: &[f64], floor: &[f64]) -> Vec<f64> {
        let n = demand.len();
        let at = |level: f64, i: usize| (level * weight[i]).clamp(floor[i], demand[i].max(0.0));
        let total = |level: f64| (0..n).map(|i| at(level, i)).sum::<f64>();
        let mut points: Vec<f64> = (0..n)
            .filter(|&i| demand[i] > 0.0)
            .flat_map(|i| [floor[i] / weight[i], demand[i] / weight[i]])
            .collect();
        points.sort_by(f64::total_cmp);
        let Some(&top) = points.last() else {
            return floor.to_vec();
        };
        if total(top) <= budget {
            return (0..n).map(|i| demand[i].max(0.0)).collect();
        }
        let mut low = 0.0;
        for &p in &points {
            let (f_low, f_p) = (total(low), total(p));
            if f_p > budget && p > low {
                let level = low + (budget - f_low) * (p - low) / (f_p - f_low);
                return (0..n).map(|i| at(level, i)).collect();
            }
            low = p;
        }
        (0..n).map(|i| at(low, i)).collect()
    }

    proptest::proptest! {
        /// The bisection finds the breakpoint the full scan stops at and
        /// gives the same allocation bit for bit, ties and floors included
        /// (values drawn from a few levels so that breakpoints coincide).
        #[test]
        fn water_fill_matches_the_full_scan(
            cases in proptest::collection::vec((0u8..6, 1u8..4, 0u8..4, proptest::bool::ANY), 1..40),
            budget in 0.0f64..60.0,
            jitter in 0.0f64..1.0,
        ) {
            let demand: Vec<f64> = cases.iter().map(|c| f64::from(c.0) * (1.0 + jitter)).collect();
            let weight: Vec<f64> = cases.iter().map(|c| f64::from(c.1) / 3.0).collect();
            let floor: Vec<f64> = cases
                .iter()
                .zip(&demand)
                .map(|(c, &d)| if c.3 { d.min(f64::from(c.2)) } else { 0.0 })
                .collect();
            let fast = water_fill(budget, &demand, &weight, &floor);
            let slow = water_fill_by_full_scan(budget, &demand, &weight, &floor);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(&fast), bits(&slow));
        }

        /// Water-filling gives nobody more than it asks, uses the capacity
        /// (or every demand), and leaves no unsatisfied tenant at a lower
        /// level per weight than anyone else.
        #[test]
        fn max_min_fair_is_max_min_fair(
            cases in proptest::collection::vec((0.0f64..100.0, 0.1f64..10.0), 1..8),
            capacity in 0.0f64..400.0,
        ) {
            let (demand, weights): (Vec<f64>, Vec<f64>) = cases.into_iter().unzip();
            let fair = max_min_fair(&demand, &weights, capacity).unwrap();
            let eps = 1e-9 * (1.0 + capacity);
            let used: f64 = fair.iter().sum();
            proptest::prop_assert!((used - capacity.min(demand.iter().sum())).abs() <= eps);
            for i in 0..fair.len() {
                proptest::prop_assert!(fair[i] >= 0.0 && fair[i] <= demand[i] + eps);
                if fair[i] < demand[i] - eps {
                    for j in 0..fair.len() {
                        proptest::prop_assert!(fair[j] / weights[j] <= fair[i] / weights[i] + eps);
                    }
                }
            }
        }
    }
}
