//! Quantities as people write them, in scenario files, flags and operator
//! parameters: durations (`50ms`), sizes (`4KiB`), rates (`500k/s`,
//! `512Gbit/s`, `2GB/s`) and frequencies (`1GHz`). This is the one checked
//! conversion every such value goes through: a number without its unit is
//! refused (`duration = "20"` is 20 what?), and so are negative,
//! non-finite, malformed and out-of-range values; nothing is silently
//! clamped. Which values may be zero is the caller's rule. Errors say what
//! was expected; the caller names where the value was written.

use crate::{Nanos, Rate, RateUnit};

/// Splits `text` into its leading number and the unit after it.
fn split_number(text: &str) -> Result<(f64, &str), String> {
    let t = text.trim();
    let b = t.as_bytes();
    let mut end = 0;
    while end < b.len()
        && (b[end].is_ascii_digit() || b[end] == b'.' || b[end] == b'_' || (end == 0 && b[end] == b'-'))
    {
        end += 1;
    }
    let (num, unit) = t.split_at(end);
    let value: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("`{text}` does not start with a number"))?;
    if !value.is_finite() {
        return Err(format!("`{text}` is not a finite number"));
    }
    if value < 0.0 {
        return Err(format!("`{text}` is negative"));
    }
    Ok((value, unit.trim()))
}

/// The largest duration a value may state: 10^7 s (about 116 days), far
/// beyond any run, and small enough that sums of a few never overflow
/// nanoseconds in a `u64` (584 years).
pub const MAX_DURATION_NS: u64 = 10_000_000 * 1_000_000_000;

/// The largest size a value may state: 1 PiB (2^50 bytes). What a command
/// may allocate is a separate, smaller limit (see `docs/limits.md`).
pub const MAX_SIZE_BYTES: u64 = 1 << 50;

/// The largest rate a value may state: 10^15 per second (operations or
/// bytes). Whether a simulator can run that many events is its own limit.
pub const MAX_RATE_PER_SEC: f64 = 1e15;

/// `value` x `scale` as an integer, refused above `max` (named by `what`).
fn scaled(text: &str, value: f64, scale: f64, max: u64, what: &str) -> Result<u64, String> {
    let v = (value * scale).round();
    if v > max as f64 {
        return Err(format!(
            "`{text}` is too large: a {what} is at most {max} in its base unit"
        ));
    }
    Ok(v as u64)
}

/// The refusal of a number written without its unit.
fn no_unit(text: &str, units: &str) -> String {
    format!(
        "`{text}` has no unit: write it with one of {units} (e.g. \"{}{}\")",
        text.trim(),
        units.split(", ").next().unwrap_or("")
    )
}

fn decimal_prefix(p: &str) -> Option<f64> {
    Some(match p {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => return None,
    })
}

/// Parses a duration: `ns`, `us` (or `µs`), `ms`, `s`; at most
/// [`MAX_DURATION_NS`].
pub fn parse_duration(text: &str) -> Result<Nanos, String> {
    let (v, unit) = split_number(text)?;
    let scale = match unit {
        "" => return Err(no_unit(text, "ns, us, ms, s")),
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => {
            return Err(format!(
                "`{text}`: unknown time unit `{unit}` (use ns, us, ms or s)"
            ))
        }
    };
    scaled(text, v, scale, MAX_DURATION_NS, "duration")
}

/// `ns` written with the largest unit that keeps it at least 1, as
/// [`parse_duration`] reads it back (to three significant decimals).
pub fn format_duration(ns: Nanos) -> String {
    let (scale, unit) = match ns {
        n if n >= 1_000_000_000 => (1e9, "s"),
        n if n >= 1_000_000 => (1e6, "ms"),
        n if n >= 1_000 => (1e3, "us"),
        _ => (1.0, "ns"),
    };
    let v = ns as f64 / scale;
    let text = format!("{v:.3}");
    format!("{}{unit}", text.trim_end_matches('0').trim_end_matches('.'))
}

/// Parses a size: `B`, `KB`/`MB`/`GB`/`TB` (powers of 1000),
/// `KiB`/`MiB`/`GiB`/`TiB` (powers of 1024); at most [`MAX_SIZE_BYTES`].
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (v, unit) = split_number(text)?;
    let scale = match unit {
        "" => return Err(no_unit(text, "B, KiB, MiB, GiB, TiB, KB, MB, GB, TB")),
        "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TB" => 1e12,
        "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "`{text}`: unknown size unit `{unit}` (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)"
            ))
        }
    };
    scaled(text, v, scale, MAX_SIZE_BYTES, "size")
}

/// Parses a rate with its unit: operations (`500k/s`, `1M/s`, `10/s`,
/// `2Mops/s`) or data (`10Gbit/s`, `10Gbps`, `2GB/s`, `1GiB/s`, `800MB/s`).
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    let (v, unit) = split_number(text)?;
    if unit.is_empty() {
        return Err(no_unit(text, "/s, k/s, M/s, Mops/s, Gbit/s, Gbps, GB/s"));
    }
    let bad = || {
        format!("`{text}`: unknown rate unit `{unit}` (use e.g. 500k/s or 1Mops/s for operations, 10Gbit/s, 10Gbps or 2GB/s for data)")
    };
    let per_sec_unit = unit
        .strip_suffix("/s")
        .map(|u| (u, false))
        .or_else(|| unit.strip_suffix("bps").map(|u| (u, true)));
    let Some((body, is_bps)) = per_sec_unit else {
        return Err(bad());
    };
    let (value, rate_unit) = if is_bps {
        let p = decimal_prefix(body).ok_or_else(bad)?;
        (v * p / 8.0, RateUnit::BytesPerSec)
    } else if let Some(p) = body.strip_suffix("bit").and_then(decimal_prefix) {
        (v * p / 8.0, RateUnit::BytesPerSec)
    } else if let Some(prefix) = body.strip_suffix("iB") {
        let p = match prefix {
            "K" => 1024.0,
            "M" => 1024.0 * 1024.0,
            "G" => 1024.0 * 1024.0 * 1024.0,
            _ => return Err(bad()),
        };
        (v * p, RateUnit::BytesPerSec)
    } else if let Some(p) = body.strip_suffix('B').and_then(decimal_prefix) {
        (v * p, RateUnit::BytesPerSec)
    } else if let Some(p) = body.strip_suffix("ops").and_then(decimal_prefix) {
        (v * p, RateUnit::OpsPerSec)
    } else if let Some(p) = decimal_prefix(body) {
        (v * p, RateUnit::OpsPerSec)
    } else {
        return Err(bad());
    };
    if value > MAX_RATE_PER_SEC {
        return Err(format!(
            "`{text}` is too large: a rate is at most {MAX_RATE_PER_SEC:e} per second"
        ));
    }
    Rate::new(value, rate_unit).map_err(|_| format!("`{text}`: a rate must be greater than zero"))
}

/// Parses a frequency: `Hz`, `kHz`, `MHz`, `GHz`.
pub fn parse_frequency(text: &str) -> Result<f64, String> {
    let (v, unit) = split_number(text)?;
    if unit.is_empty() {
        return Err(no_unit(text, "Hz, kHz, MHz, GHz"));
    }
    let hz = unit
        .strip_suffix("Hz")
        .and_then(decimal_prefix)
        .ok_or_else(|| format!("`{text}`: unknown frequency unit `{unit}` (use Hz, kHz, MHz or GHz)"))?;
    if v == 0.0 {
        return Err(format!("`{text}`: a frequency must be greater than zero"));
    }
    if v * hz > 1e12 {
        return Err(format!("`{text}` is too large: a frequency is at most 1THz"));
    }
    Ok(v * hz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_sizes_rates_and_frequencies() {
        assert_eq!(parse_duration("50ms"), Ok(50_000_000));
        assert_eq!(parse_duration("1.5us"), Ok(1500));
        assert!(parse_duration("250").unwrap_err().contains("no unit"));
        assert!(parse_duration("99999999999s").unwrap_err().contains("too large"));
        assert!(parse_size("99999999999999999999")
            .unwrap_err()
            .contains("no unit"));
        assert!(parse_size("99999999999999999999B")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_size("2048PiB").is_err());
        assert!(parse_rate("1000").unwrap_err().contains("no unit"));
        assert!(parse_rate("2000T/s").unwrap_err().contains("too large"));
        assert!(parse_frequency("2").unwrap_err().contains("no unit"));
        for ns in [0, 999, 1_500, 20_000_000, 1_000_000_000_000] {
            assert_eq!(parse_duration(&format_duration(ns)), Ok(ns));
        }
        assert!(parse_duration("5xs").unwrap_err().contains("unknown time unit"));
        assert!(parse_duration("-1ms").unwrap_err().contains("negative"));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("64B"), Ok(64));
        assert_eq!(parse_size("1MB"), Ok(1_000_000));
        assert!(parse_size("3 apples").is_err());
        let r = parse_rate("500k/s").unwrap();
        assert_eq!((r.per_sec(), r.unit()), (500_000.0, RateUnit::OpsPerSec));
        let r = parse_rate("512Gbit/s").unwrap();
        assert_eq!((r.per_sec(), r.unit()), (64e9, RateUnit::BytesPerSec));
        assert_eq!(parse_rate("8Gbps").unwrap().per_sec(), 1e9);
        assert_eq!(parse_rate("2GB/s").unwrap().per_sec(), 2e9);
        assert_eq!(parse_rate("1GiB/s").unwrap().per_sec(), 1073741824.0);
        assert_eq!(parse_rate("3Mops/s").unwrap().per_sec(), 3e6);
        assert!(parse_rate("0/s").unwrap_err().contains("greater than zero"));
        assert!(parse_rate("-5k/s").unwrap_err().contains("negative"));
        assert!(parse_rate("5 furlongs")
            .unwrap_err()
            .contains("unknown rate unit"));
        assert_eq!(parse_frequency("1GHz"), Ok(1e9));
        assert!(parse_frequency("0GHz").is_err());
    }
}
