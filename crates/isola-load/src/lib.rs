//! # isola-load
//!
//! Load generators and benchmarks, as a library. [`rings`] acts as one
//! tenant process of a running `isolad`: it attaches with `isola_client`,
//! lays out its inputs in the tenant's arena, submits tasks open loop (at a
//! rate) or closed loop (a number in flight), and tallies their outcomes
//! and latencies on its own clock and the daemon's. [`udp`] is the packet
//! generator: datagrams from several flows to isolad's packet path (or to
//! an echo server of its own), each reply matched to its packet. The
//! benchmarks measure how fast things run here: [`ops`] operators on their
//! own threads, [`sim`] the simulator. Each returns what it measured as
//! data: tallies, and reports that serialise as the `isola` command's JSON;
//! [`render`] (and [`ops::Sweep::table`], [`sim::table`]) turn them into the
//! text a person reads, which the caller prints.
//!
//! What it must not do: schedule (the daemon does; a generator submits and
//! measures), print, read arguments or standard input, or handle signals (a
//! run stops when its caller sets the stop flag it was given; progress goes
//! to the caller's [`Progress`]). Settings are checked here, and a setting
//! refused is named by the flag that gives it (`--rate: ...`), so that
//! every command that starts a generator refuses it alike.

#![warn(missing_docs)]

pub mod ops;
mod percentiles;
mod progress;
pub mod render;
pub mod rings;
pub mod sim;
pub mod udp;

pub use percentiles::Percentiles;
pub use progress::{NoProgress, Progress};

use anyhow::{anyhow, bail};
use isola_core::quantity::parse_duration;
use serde::Serialize;
use std::time::Duration;

/// When a run's measurement ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// After this many measured tasks (or packets).
    Count(u64),
    /// After this long.
    Duration(Duration),
}

/// Why submitting (or sending) stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stopped {
    /// `--count` tasks were submitted.
    Count,
    /// `--duration` passed.
    Duration,
    /// The caller's stop flag (Ctrl-C or SIGTERM).
    Interrupted,
    /// The daemon said it drains.
    Draining,
    /// The connection failed (the run's error says how).
    Error,
}

/// The most tasks a run may count: far beyond what one process submits.
const MAX_COUNT: u64 = 10_000_000_000;

/// The longest measurement or warm-up.
const MAX_RUN: Duration = Duration::from_secs(24 * 3600);

/// A load generator's `--count` or `--duration`, and its `--warmup`,
/// checked: what both `isola load` and `isola load udp` take.
pub fn run_length(
    count: Option<u64>,
    duration: Option<&str>,
    warmup: &str,
) -> anyhow::Result<(Length, Duration)> {
    let length = match (count, duration) {
        (Some(n), None) => {
            if n == 0 || n > MAX_COUNT {
                bail!("--count: {n} is not from 1 to {MAX_COUNT}");
            }
            Length::Count(n)
        }
        (None, Some(d)) => {
            let d = duration_flag("--duration", d)?;
            if d.is_zero() {
                bail!("--duration: must be more than 0s");
            }
            Length::Duration(d)
        }
        _ => bail!("give one of --count and --duration"),
    };
    Ok((length, duration_flag("--warmup", warmup)?))
}

/// A duration flag (`flag` names it in an error): with its unit, at most
/// a day.
pub fn duration_flag(flag: &str, text: &str) -> anyhow::Result<Duration> {
    let ns = parse_duration(text).map_err(|e| anyhow!("{flag}: {e}"))?;
    let d = Duration::from_nanos(ns);
    if d > MAX_RUN {
        bail!("{flag}: {text} is longer than a day");
    }
    Ok(d)
}

/// The next number of the SplitMix64 sequence at `state` (the inputs'
/// bytes and the Poisson arrivals: deterministic for a seed).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Deterministic pseudo-random bytes from `seed`.
fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&splitmix64(&mut state).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The gap before the next arrival at `rate` a second, in s: exponentially
/// distributed with mean `1 / rate` (drawn from `rng`'s sequence).
fn poisson_gap(rate: f64, rng: &mut u64) -> f64 {
    // A uniform in [0, 1) from the top 53 bits.
    let u = (splitmix64(rng) >> 11) as f64 / (1u64 << 53) as f64;
    -(1.0 - u).ln() / rate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_bytes_are_deterministic_and_seeded() {
        assert_eq!(random_bytes(100, 7), random_bytes(100, 7));
        assert_ne!(random_bytes(100, 7), random_bytes(100, 8));
        assert_eq!(random_bytes(13, 1).len(), 13);
        assert_eq!(random_bytes(13, 1)[..], random_bytes(64, 1)[..13]);
    }

    #[test]
    fn lengths_are_a_count_or_a_duration_and_name_their_flag() {
        assert_eq!(
            run_length(Some(5), None, "1s").unwrap(),
            (Length::Count(5), Duration::from_secs(1))
        );
        assert_eq!(
            run_length(None, Some("2ms"), "0s").unwrap().0,
            Length::Duration(Duration::from_millis(2))
        );
        for (count, duration, warmup, says) in [
            (Some(0), None, "0s", "--count"),
            (None, Some("0s"), "0s", "--duration: must be more than 0s"),
            (None, Some("2"), "0s", "--duration"),
            (Some(1), None, "90000s", "--warmup: 90000s is longer than a day"),
            (None, None, "0s", "give one of"),
        ] {
            let e = run_length(count, duration, warmup).unwrap_err().to_string();
            assert!(e.starts_with(says), "{e}");
        }
    }
}
