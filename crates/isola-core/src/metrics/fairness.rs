//! Fairness indices.
//!
//! * Jain's index (Jain, Chiu and Hawe, 1984): `(sum x)^2 / (n sum x^2)`, 1 when
//!   all `x` are equal, `1/n` when one gets everything. Applied to shares
//!   normalised by entitlement (`x_i = share_i / entitled_i`) it measures how
//!   close a weighted allocation is to its weights.
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
}
