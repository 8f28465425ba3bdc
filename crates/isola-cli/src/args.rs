//! Argument checks shared by the commands that measure operators
//! (`isola bench ops`, `isola profile`).

use anyhow::bail;
use isola_model::quantity::parse_size;
use isola_ops::{find_operator, OPERATORS};

/// `--ops`: the registry names given (each checked), or every operator.
pub fn operators(given: &[String]) -> anyhow::Result<Vec<&'static str>> {
    if given.is_empty() {
        return Ok(OPERATORS.iter().map(|o| o.name).collect());
    }
    Ok(given
        .iter()
        .map(|n| find_operator(n.trim()).map(|o| o.name))
        .collect::<Result<_, _>>()?)
}

/// `--sizes`: each at least one byte, in bytes or with a unit.
pub fn sizes(given: &[String]) -> anyhow::Result<Vec<u64>> {
    given
        .iter()
        .map(|s| match parse_size(s) {
            Ok(0) => bail!("--sizes: a size must be at least one byte"),
            Ok(n) => Ok(n),
            Err(e) => bail!("--sizes: {e}"),
        })
        .collect()
}

/// `--seconds`: more than 0, at most an hour.
pub fn seconds(s: f64) -> anyhow::Result<f64> {
    if !(s > 0.0 && s <= 3600.0) {
        bail!("--seconds: {s} is not between 0 and 3600");
    }
    Ok(s)
}
