//! Argument checks shared by the commands: the operators and sizes of
//! those that measure operators (`isola bench ops`, `isola profile`), the
//! payload limit, and output places, checked before any work is done.

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

/// Default of `--max-payload`, the largest payload a command allocates
/// for one task: as much as an operator may write by default
/// (`isola_ops::DEFAULT_MAX_OUTPUT`), so that input and output of a task
/// together stay within a few hundred MiB.
pub const DEFAULT_MAX_PAYLOAD: &str = "256MiB";

/// `--max-payload`: a size with its unit, at least one byte.
pub fn max_payload(given: &str) -> anyhow::Result<u64> {
    match parse_size(given) {
        Ok(0) => bail!("--max-payload: must be at least 1B"),
        Ok(n) => Ok(n),
        Err(e) => bail!("--max-payload: {e}"),
    }
}

/// `--sizes`: each with its unit, at least one byte and at most
/// `max_payload` bytes (checked before anything is allocated).
pub fn sizes(given: &[String], max_payload: u64) -> anyhow::Result<Vec<u64>> {
    given
        .iter()
        .map(|s| match parse_size(s) {
            Ok(0) => bail!("--sizes: a size must be at least one byte"),
            Ok(n) if n > max_payload => bail!(
                "--sizes: {s} is above the largest payload this command allocates ({max_payload} bytes); \
                 raise it with --max-payload if this machine has the memory"
            ),
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

/// Checks, before the work, that `dir` (given as `flag`) is a folder this
/// command can write in: creates it if needed and writes a probe file.
pub fn out_dir(flag: &str, dir: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("{flag} {}: cannot create it: {e}", dir.display()))?;
    probe(flag, dir)
}

/// Checks, before the work, that `file` (given as `flag`) can be written:
/// its folder exists and is writable (the file itself is not touched).
pub fn out_file(flag: &str, file: &std::path::Path) -> anyhow::Result<()> {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if !dir.is_dir() {
        bail!(
            "{flag} {}: {} is not a folder that exists",
            file.display(),
            dir.display()
        );
    }
    probe(flag, dir)
}

/// Writes and removes a probe file in `dir`.
fn probe(flag: &str, dir: &std::path::Path) -> anyhow::Result<()> {
    let probe = dir.join(format!(".isola-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .map_err(|e| anyhow::anyhow!("{flag} {}: cannot write there: {e}", dir.display()))?;
    std::fs::remove_file(&probe).ok();
    Ok(())
}
