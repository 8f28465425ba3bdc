//! Axes: how values map to positions ([`Scale`]), how numbers are written
//! ([`Format`]), where ticks go ([`Ticks`]), and an axis fitted to its data
//! ([`Mapped`]).

use crate::text::{bytes_binary, seconds, si};
use serde::Serialize;

/// How an axis maps values to positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Linear.
    Linear,
    /// Logarithmic, ticks at powers of two (sizes).
    Log2,
    /// Logarithmic, ticks at powers of ten (latencies); the range is
    /// widened to whole decades unless given.
    Log10,
}

/// How numbers are written on an axis (and on bars).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// Plain with SI suffixes: `0.25`, `1.5k`, `20M`.
    Si,
    /// A fraction as a percentage: `0.25` is `25%`.
    Percent,
    /// Seconds in a readable unit: `1.5 ms`, `20 µs`, `2 s`.
    Seconds,
    /// Bytes with a binary unit: `64`, `4Ki`, `1Mi`.
    Bytes,
}

impl Format {
    /// `v` written this way.
    pub fn apply(self, v: f64) -> String {
        match self {
            Format::Si => si(v),
            Format::Percent => format!("{}%", si(v * 100.0)),
            Format::Seconds => seconds(v),
            Format::Bytes => bytes_binary(v),
        }
    }
}

/// Where a line chart's x ticks go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ticks {
    /// Round values (linear), powers (logarithmic).
    #[default]
    Auto,
    /// At the data's distinct x values (sweeps over chosen sizes), at most
    /// about a dozen of them.
    AtData,
}

impl Ticks {
    fn is_auto(&self) -> bool {
        *self == Ticks::Auto
    }
}

/// One axis of a [`Chart`](super::Chart).
#[derive(Debug, Clone, Serialize)]
pub struct Axis {
    /// The label written along the axis.
    pub label: String,
    /// Linear or logarithmic.
    pub scale: Scale,
    /// How tick values are written.
    pub format: Format,
    /// Lower end; fitted to the data when `None`.
    pub min: Option<f64>,
    /// Upper end; fitted to the data when `None`.
    pub max: Option<f64>,
    /// Where the ticks go (a line chart's x axis; the y axis' are always
    /// [`Ticks::Auto`]).
    #[serde(skip_serializing_if = "Ticks::is_auto")]
    pub ticks: Ticks,
}

impl Axis {
    /// A linear axis fitted to the data, numbers in [`Format::Si`].
    pub fn new(label: impl Into<String>) -> Self {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            format: Format::Si,
            min: None,
            max: None,
            ticks: Ticks::Auto,
        }
    }

    /// The same axis, base-10 logarithmic.
    pub fn log10(mut self) -> Self {
        self.scale = Scale::Log10;
        self
    }

    /// The same axis, base-2 logarithmic.
    pub fn log2(mut self) -> Self {
        self.scale = Scale::Log2;
        self
    }

    /// The same axis with a fixed range.
    pub fn range(mut self, min: f64, max: f64) -> Self {
        self.min = Some(min);
        self.max = Some(max);
        self
    }

    /// The same axis with numbers written as `format`.
    pub fn format(mut self, format: Format) -> Self {
        self.format = format;
        self
    }

    /// The same axis with ticks at the data's x values ([`Ticks::AtData`]).
    pub fn ticks_at_data(mut self) -> Self {
        self.ticks = Ticks::AtData;
        self
    }
}

/// A round step for about `ticks` ticks over a span of `max`: 1, 2 or 5
/// times a power of ten.
pub(super) fn nice_step(max: f64, ticks: f64) -> f64 {
    let raw = (max / ticks).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// An axis fitted to its data: values to fractions of the plot.
pub(super) struct Mapped {
    pub(super) scale: Scale,
    /// Ends in transformed space (log for logarithmic scales).
    lo: f64,
    hi: f64,
    /// Tick step in transformed space (linear only).
    step: f64,
}

impl Mapped {
    /// `v` in the scale's space (its logarithm on a log scale); `None`
    /// where the scale cannot place it.
    pub(super) fn transform(scale: Scale, v: f64) -> Option<f64> {
        let t = match scale {
            Scale::Linear => v,
            Scale::Log2 if v > 0.0 => v.log2(),
            Scale::Log10 if v > 0.0 => v.log10(),
            _ => return None,
        };
        t.is_finite().then_some(t)
    }

    fn inverse(&self, t: f64) -> f64 {
        match self.scale {
            Scale::Linear => t,
            Scale::Log2 => t.exp2(),
            Scale::Log10 => 10f64.powf(t),
        }
    }

    /// Fits `axis` to `values`. A value axis (`value`) starts at zero when
    /// linear and ends on a round step.
    pub(super) fn fit(axis: &Axis, values: impl Iterator<Item = f64>, value: bool) -> Mapped {
        let scale = axis.scale;
        let (mut lo, mut hi) = values
            .filter_map(|v| Mapped::transform(scale, v))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), t| {
                (lo.min(t), hi.max(t))
            });
        if value && scale == Scale::Linear && lo.is_finite() {
            lo = lo.min(0.0);
            hi = hi.max(0.0);
        }
        let given_lo = axis.min.and_then(|v| Mapped::transform(scale, v));
        let given_hi = axis.max.and_then(|v| Mapped::transform(scale, v));
        if !lo.is_finite() {
            // No data: 0 to 1, or 1 to 10 (or 2) on a log scale.
            (lo, hi) = (0.0, 1.0);
        }
        lo = given_lo.unwrap_or(lo);
        hi = given_hi.unwrap_or(hi);
        if hi <= lo {
            let d = if scale == Scale::Linear && lo != 0.0 {
                lo.abs() * 0.1
            } else {
                1.0
            };
            if given_lo.is_some() && given_hi.is_none() {
                hi = lo + d;
            } else if given_hi.is_some() && given_lo.is_none() {
                lo = hi - d;
            } else if value && lo == 0.0 && scale == Scale::Linear {
                hi = 1.0;
            } else {
                (lo, hi) = (lo - d, hi + d);
            }
        }
        let mut step = 1.0;
        match scale {
            Scale::Linear => {
                step = nice_step(hi - lo, if value { 5.0 } else { 8.0 });
                if value {
                    if given_lo.is_none() {
                        lo = (lo / step).floor() * step;
                    }
                    if given_hi.is_none() {
                        hi = (hi / step).ceil() * step;
                    }
                }
            }
            Scale::Log10 => {
                if given_lo.is_none() {
                    lo = lo.floor();
                }
                if given_hi.is_none() {
                    hi = hi.ceil();
                }
            }
            Scale::Log2 => {}
        }
        Mapped { scale, lo, hi, step }
    }

    /// Where `v` lies, from 0 (low end) to 1 (high end), clamped; `None`
    /// where the scale cannot place it (non-positive on a log scale).
    pub(super) fn frac(&self, v: f64) -> Option<f64> {
        Mapped::transform(self.scale, v).map(|t| ((t - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0))
    }

    /// Tick values (untransformed).
    pub(super) fn ticks(&self) -> Vec<f64> {
        let eps = (self.hi - self.lo) * 1e-9;
        let mut ticks = Vec::new();
        match self.scale {
            Scale::Linear => {
                let first = (self.lo / self.step - 1e-9).ceil() as i64;
                let last = (self.hi / self.step + 1e-9).floor() as i64;
                for k in first..=last {
                    let v = k as f64 * self.step;
                    // Round off the float error of k * step (0.30000000000000004).
                    let v = if v.abs() < self.step * 1e-9 { 0.0 } else { v };
                    ticks.push(v);
                }
            }
            Scale::Log10 => {
                let span = self.hi - self.lo;
                for k in self.lo.floor() as i64..=self.hi.ceil() as i64 {
                    let mults: &[f64] = if span <= 2.0 { &[1.0, 2.0, 5.0] } else { &[1.0] };
                    for m in mults {
                        let t = k as f64 + m.log10();
                        if t >= self.lo - eps && t <= self.hi + eps {
                            ticks.push(self.inverse(t));
                        }
                    }
                }
            }
            Scale::Log2 => {
                let first = (self.lo - 1e-9).ceil() as i64;
                let last = (self.hi + 1e-9).floor() as i64;
                let n = (last - first + 1).max(0) as usize;
                let every = n.div_ceil(12).max(1);
                for k in (first..=last).step_by(every) {
                    ticks.push(self.inverse(k as f64));
                }
            }
        }
        ticks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round_and_formats_apply() {
        assert_eq!(nice_step(950.0, 5.0), 200.0);
        assert_eq!(nice_step(1.0, 5.0), 0.2);
        assert_eq!(Format::Percent.apply(0.25), "25%");
        assert_eq!(Format::Bytes.apply(4096.0), "4Ki");
        assert_eq!(Format::Seconds.apply(0.002), "2 ms");
    }

    #[test]
    fn log_axes_tick_at_powers() {
        let axis = Axis::new("size").log2();
        let m = Mapped::fit(&axis, [64.0, 1024.0].into_iter(), false);
        assert_eq!(m.ticks(), vec![64.0, 128.0, 256.0, 512.0, 1024.0]);
        let axis = Axis::new("latency").log10();
        let m = Mapped::fit(&axis, [15.0, 4000.0].into_iter(), false);
        assert_eq!(m.ticks(), vec![10.0, 100.0, 1000.0, 10_000.0]);
        assert_eq!(m.frac(10.0), Some(0.0));
        assert_eq!(m.frac(-1.0), None);
    }

    /// The tick placement is written to JSON only when it is not the default.
    #[test]
    fn default_ticks_are_not_serialised() {
        let auto = serde_json::to_value(Axis::new("x")).unwrap();
        assert!(auto.get("ticks").is_none(), "{auto}");
        let at_data = serde_json::to_value(Axis::new("x").ticks_at_data()).unwrap();
        assert_eq!(at_data["ticks"], "at_data");
    }
}
