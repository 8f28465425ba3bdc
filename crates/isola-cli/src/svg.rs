//! Self-contained SVG charts (no scripts, no fonts to fetch), for plots
//! written next to results and inlined in reports.
//!
//! One renderer draws every kind: [`Chart`] holds two [`Axis`] (linear,
//! base-2 or base-10 logarithmic; fixed or fitted range), the marks (lines
//! or grouped bars) and optional reference lines. Line charts over time,
//! latency CDFs ([`Chart::cdf`]) and bar charts are the
//! same code with different parameters. [`LineChart`] is the older,
//! simpler front end used for `isola bench` plots.
//!
//! Written by hand: the plotting crates (plotters and friends) pull in font
//! rasterisers and image back ends to draw what is a few dozen lines of SVG.

use serde::Serialize;
use std::fmt::Write;

/// One line of a chart.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Points `(x, y)`, drawn in order.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A series from its points.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
        }
    }
}

/// One group of bars: a value per category.
#[derive(Debug, Clone, Serialize)]
pub struct BarSeries {
    /// Legend label.
    pub name: String,
    /// One value per category, in the chart's category order; NaN (JSON
    /// `null`) or a missing tail leaves the bar out.
    pub values: Vec<f64>,
}

impl BarSeries {
    /// A bar series from its values.
    pub fn new(name: impl Into<String>, values: Vec<f64>) -> Self {
        BarSeries {
            name: name.into(),
            values,
        }
    }
}

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
}

impl Format {
    /// `v` written this way.
    pub fn apply(self, v: f64) -> String {
        match self {
            Format::Si => si(v),
            Format::Percent => format!("{}%", si(v * 100.0)),
            Format::Seconds => seconds(v),
        }
    }
}

/// One axis of a [`Chart`].
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
}

/// What a chart draws.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Marks {
    /// Lines through points (x numeric).
    Lines {
        /// The lines.
        series: Vec<Series>,
    },
    /// Grouped bars: one group per category along x, one bar per series in
    /// each group (the x axis' scale is ignored).
    Bars {
        /// Category names along x.
        categories: Vec<String>,
        /// The bar series.
        series: Vec<BarSeries>,
    },
}

/// A dashed reference line (a target, an SLA, the fair share).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reference {
    /// Across the plot at height `y`.
    Horizontal {
        /// Where.
        y: f64,
        /// What it marks.
        label: String,
    },
    /// Up the plot at `x` (line charts).
    Vertical {
        /// Where.
        x: f64,
        /// What it marks.
        label: String,
    },
}

/// A chart: axes, marks and reference lines. See the module documentation.
#[derive(Debug, Clone, Serialize)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// What is drawn.
    pub marks: Marks,
    /// Reference lines, drawn over the marks; the fitted ranges include them.
    pub references: Vec<Reference>,
}

impl Chart {
    /// A line chart (for example shares or Jain's index over time).
    pub fn lines(title: impl Into<String>, x: Axis, y: Axis, series: Vec<Series>) -> Self {
        Chart {
            title: title.into(),
            x,
            y,
            marks: Marks::Lines { series },
            references: Vec::new(),
        }
    }

    /// A CDF: `x` is the measured quantity (often [`Axis::log10`]), y the
    /// fraction from 0 to 1: each series' points are (x, fraction of samples ≤ x)
    /// in increasing order (as `LatencyHistogram::cdf` gives them).
    pub fn cdf(title: impl Into<String>, x: Axis, series: Vec<Series>) -> Self {
        Chart::lines(title, x, Axis::new("fraction ≤ x").range(0.0, 1.0), series)
    }

    /// A grouped bar chart: one group per category, one bar per series.
    pub fn bars(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y: Axis,
        categories: Vec<String>,
        series: Vec<BarSeries>,
    ) -> Self {
        Chart {
            title: title.into(),
            x: Axis::new(x_label),
            y,
            marks: Marks::Bars { categories, series },
            references: Vec::new(),
        }
    }

    /// The same chart with a horizontal reference line.
    pub fn reference_y(mut self, y: f64, label: impl Into<String>) -> Self {
        self.references.push(Reference::Horizontal {
            y,
            label: label.into(),
        });
        self
    }

    /// The same chart with a vertical reference line.
    pub fn reference_x(mut self, x: f64, label: impl Into<String>) -> Self {
        self.references.push(Reference::Vertical {
            x,
            label: label.into(),
        });
        self
    }

    /// The chart as an SVG element (a standalone document, or inline HTML).
    pub fn render(&self) -> String {
        let format = self.x.format;
        render(self, &|v| format.apply(v), XTicks::Auto)
    }
}

/// A line chart with a linear y axis from zero and a linear or base-2
/// logarithmic x axis, ticked at the data's x values.
#[derive(Debug, Clone)]
pub struct LineChart {
    /// Title above the plot.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// Whether the x axis is logarithmic (base 2; for sizes).
    pub x_log2: bool,
    /// How x values are written on the axis.
    pub x_format: fn(f64) -> String,
    /// The lines.
    pub series: Vec<Series>,
}

impl LineChart {
    /// The chart as a standalone SVG document.
    pub fn render(&self) -> String {
        let mut x = Axis::new(self.x_label.clone());
        if self.x_log2 {
            x = x.log2();
        }
        let chart = Chart::lines(
            self.title.clone(),
            x,
            Axis::new(self.y_label.clone()),
            self.series.clone(),
        );
        render(&chart, &self.x_format, XTicks::AtData)
    }
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const PLOT_W: f64 = WIDTH - LEFT - RIGHT;
const PLOT_H: f64 = HEIGHT - TOP - BOTTOM;
/// Series with at most this many points get a dot at each.
const MAX_DOTTED: usize = 40;
/// Legend labels longer than this are cut (the full name is the tooltip).
const LEGEND_CHARS: usize = 20;
/// Colour-blind-safe palette (Okabe and Ito).
const COLOURS: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
];

/// Escapes text for SVG and HTML (element content and quoted attributes).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A round step for about `ticks` ticks over a span of `max`: 1, 2 or 5
/// times a power of ten.
fn nice_step(max: f64, ticks: f64) -> f64 {
    let raw = (max / ticks).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// A number as people read it on an axis: `1.5k`, `20M`, `0.25`, `0.002`.
pub fn si(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    let (scaled, suffix) = match a {
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    // Two significant digits below one, two decimals above.
    let decimals = if a > 0.0 && a < 1.0 {
        ((-a.log10().floor()) as usize + 1).min(12)
    } else {
        2
    };
    let text = format!("{scaled:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    let text = if text == "-0" { "0" } else { text };
    format!("{text}{suffix}")
}

/// A byte count with a binary unit: `64`, `4Ki`, `1Mi`.
pub fn bytes_binary(v: f64) -> String {
    match v {
        v if v >= 1024.0 * 1024.0 => format!("{}Mi", si(v / (1024.0 * 1024.0))),
        v if v >= 1024.0 => format!("{}Ki", si(v / 1024.0)),
        v => si(v),
    }
}

/// Seconds in a readable unit: `2 s`, `1.5 ms`, `20 µs`, `300 ns`.
pub fn seconds(v: f64) -> String {
    match v.abs() {
        0.0 => "0".into(),
        a if a >= 1.0 => format!("{} s", si(v)),
        a if a >= 1e-3 => format!("{} ms", si(v * 1e3)),
        a if a >= 1e-6 => format!("{} µs", si(v * 1e6)),
        _ => format!("{} ns", si(v * 1e9)),
    }
}

/// Where x ticks go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum XTicks {
    /// Round values (linear), powers (logarithmic).
    Auto,
    /// At the data's distinct x values (sweeps over chosen sizes).
    AtData,
}

/// An axis fitted to its data: values to fractions of the plot.
struct Mapped {
    scale: Scale,
    /// Ends in transformed space (log for logarithmic scales).
    lo: f64,
    hi: f64,
    /// Tick step in transformed space (linear only).
    step: f64,
}

impl Mapped {
    fn transform(scale: Scale, v: f64) -> Option<f64> {
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
    fn fit(axis: &Axis, values: impl Iterator<Item = f64>, value: bool) -> Mapped {
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
    fn frac(&self, v: f64) -> Option<f64> {
        Mapped::transform(self.scale, v).map(|t| ((t - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0))
    }

    /// Tick values (untransformed).
    fn ticks(&self) -> Vec<f64> {
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

fn px(x: &Mapped, v: f64) -> Option<f64> {
    x.frac(v).map(|f| LEFT + f * PLOT_W)
}

fn py(y: &Mapped, v: f64) -> Option<f64> {
    y.frac(v).map(|f| TOP + PLOT_H - f * PLOT_H)
}

/// `text` cut to `max` characters, with an ellipsis.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// A series' points on the plot, those the scales can place.
fn line_points(x: &Mapped, y: &Mapped, s: &Series) -> Vec<(f64, f64)> {
    s.points
        .iter()
        .filter_map(|&(vx, vy)| Some((px(x, vx)?, py(y, vy)?)))
        .collect()
}

/// Whether a line through `points` has length: two distinct positions
/// (as written, to a tenth of a unit).
fn has_length(points: &[(f64, f64)]) -> bool {
    let key = |p: &(f64, f64)| format!("{:.1},{:.1}", p.0, p.1);
    points
        .first()
        .is_some_and(|first| points.iter().any(|p| key(p) != key(first)))
}

/// A bar as drawn: `(x, y, width, height)`.
type BarRect = (f64, f64, f64, f64);

/// Whether a bar is tall enough to draw (a tenth of a unit, as written).
fn has_height(r: &BarRect) -> bool {
    r.3 >= 0.05
}

/// Bars to draw: `(series, category, rect)` for every value the scale can
/// place (zero-height ones included: they get a label, not a rectangle).
fn bar_rects(y: &Mapped, categories: usize, series: &[BarSeries]) -> Vec<(usize, usize, BarRect)> {
    let groups = categories.max(1) as f64;
    let group_w = PLOT_W / groups;
    let bar_w = group_w * 0.8 / series.len().max(1) as f64;
    let gap = if bar_w > 4.0 { 1.0 } else { 0.0 };
    // Bars grow from zero on a linear scale, from the bottom on a log one.
    let base = match y.scale {
        Scale::Linear => py(y, 0.0).unwrap_or(TOP + PLOT_H),
        _ => TOP + PLOT_H,
    };
    let mut rects = Vec::new();
    for (j, s) in series.iter().enumerate() {
        for (i, &v) in s.values.iter().enumerate().take(categories) {
            let Some(top) = py(y, v) else { continue };
            let (y0, h) = (top.min(base), (top - base).abs());
            let x0 = LEFT + i as f64 * group_w + group_w * 0.1 + j as f64 * bar_w;
            rects.push((j, i, (x0 + gap / 2.0, y0, bar_w - gap, h)));
        }
    }
    rects
}

/// The one renderer behind [`Chart::render`] and [`LineChart::render`].
fn render(chart: &Chart, x_format: &dyn Fn(f64) -> String, x_ticks: XTicks) -> String {
    let (h_refs, v_refs): (Vec<f64>, Vec<f64>) =
        chart
            .references
            .iter()
            .fold((Vec::new(), Vec::new()), |(mut h, mut v), r| {
                match r {
                    Reference::Horizontal { y, .. } => h.push(*y),
                    Reference::Vertical { x, .. } => v.push(*x),
                }
                (h, v)
            });
    let (x, y) = match &chart.marks {
        Marks::Lines { series } => {
            let points = || series.iter().flat_map(|s| s.points.iter());
            let x = Mapped::fit(
                &chart.x,
                points().map(|p| p.0).chain(v_refs.iter().copied()),
                false,
            );
            let y = Mapped::fit(
                &chart.y,
                points().map(|p| p.1).chain(h_refs.iter().copied()),
                true,
            );
            (x, y)
        }
        Marks::Bars { series, .. } => {
            let values = series.iter().flat_map(|s| s.values.iter().copied());
            let y = Mapped::fit(&chart.y, values.chain(h_refs.iter().copied()), true);
            let x = Mapped::fit(&Axis::new(""), [0.0, 1.0].into_iter(), false);
            (x, y)
        }
    };

    // What a browser should find drawn (the report's check reads these).
    let (kind, expect_series, expect_bars) = match &chart.marks {
        Marks::Lines { series } => (
            "lines",
            series
                .iter()
                .filter(|s| has_length(&line_points(&x, &y, s)))
                .count(),
            0,
        ),
        Marks::Bars { categories, series } => (
            "bars",
            0,
            bar_rects(&y, categories.len(), series)
                .iter()
                .filter(|r| has_height(&r.2))
                .count(),
        ),
    };

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-kind="{kind}" data-expect-series="{expect_series}" data-expect-bars="{expect_bars}" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12" role="img" aria-label="{}">"#,
        escape(&chart.title)
    );
    let _ = writeln!(svg, r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        LEFT + PLOT_W / 2.0,
        escape(&chart.title)
    );
    // Horizontal grid lines and y ticks.
    for v in y.ticks() {
        let Some(ty) = py(&y, v) else { continue };
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" x2="{:.1}" y1="{ty:.1}" y2="{ty:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + PLOT_W,
            LEFT - 6.0,
            ty + 4.0,
            escape(&chart.y.format.apply(v))
        );
    }
    // X ticks, or category names under the bar groups.
    let tick = |svg: &mut String, at: f64, label: &str| {
        let _ = writeln!(
            svg,
            r##"<line x1="{at:.1}" x2="{at:.1}" y1="{:.1}" y2="{:.1}" stroke="#888"/><text x="{at:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + PLOT_H,
            TOP + PLOT_H + 5.0,
            TOP + PLOT_H + 18.0,
            escape(label)
        );
    };
    match &chart.marks {
        Marks::Lines { series } => {
            let values = match x_ticks {
                XTicks::Auto => x.ticks(),
                XTicks::AtData => {
                    let mut v: Vec<f64> = series
                        .iter()
                        .flat_map(|s| s.points.iter().map(|p| p.0))
                        .filter(|&v| Mapped::transform(x.scale, v).is_some())
                        .collect();
                    v.sort_by(f64::total_cmp);
                    v.dedup();
                    let every = v.len().div_ceil(12).max(1);
                    v.into_iter().step_by(every).collect()
                }
            };
            for v in values {
                if let Some(at) = px(&x, v) {
                    tick(&mut svg, at, &x_format(v));
                }
            }
        }
        Marks::Bars { categories, .. } => {
            let group_w = PLOT_W / categories.len().max(1) as f64;
            let chars = ((group_w / 7.0) as usize).max(3);
            for (i, c) in categories.iter().enumerate() {
                tick(&mut svg, LEFT + (i as f64 + 0.5) * group_w, &cut(c, chars));
            }
        }
    }
    let _ = writeln!(
        svg,
        r##"<rect class="plot-area" x="{LEFT}" y="{TOP}" width="{PLOT_W}" height="{PLOT_H}" fill="none" stroke="#444"/>"##
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + PLOT_W / 2.0,
        HEIGHT - 10.0,
        escape(&chart.x.label)
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + PLOT_H / 2.0,
        escape(&chart.y.label)
    );

    // The marks, and a legend entry for each series.
    let legend = |svg: &mut String, i: usize, name: &str, swatch: &str| {
        let ly = TOP + 10.0 + i as f64 * 18.0;
        let lx = LEFT + PLOT_W + 12.0;
        let colour = COLOURS[i % COLOURS.len()];
        let mark = match swatch {
            "bar" => format!(
                r#"<rect x="{lx}" y="{:.1}" width="18" height="10" fill="{colour}"/>"#,
                ly - 5.0
            ),
            _ => format!(
                r#"<line x1="{lx}" x2="{:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"/>"#,
                lx + 18.0
            ),
        };
        let _ = writeln!(
            svg,
            r#"<g class="legend">{mark}<text x="{:.1}" y="{:.1}"><title>{}</title>{}</text></g>"#,
            lx + 24.0,
            ly + 4.0,
            escape(name),
            escape(&cut(name, LEGEND_CHARS))
        );
    };
    match &chart.marks {
        Marks::Lines { series } => {
            for (i, s) in series.iter().enumerate() {
                let colour = COLOURS[i % COLOURS.len()];
                let pts = line_points(&x, &y, s);
                if pts.len() >= 2 {
                    let path: Vec<String> = pts.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
                    let _ = writeln!(
                        svg,
                        r#"<polyline class="series" data-series="{}" fill="none" stroke="{colour}" stroke-width="2" stroke-linejoin="round" points="{}"/>"#,
                        escape(&s.name),
                        path.join(" ")
                    );
                }
                if pts.len() <= MAX_DOTTED {
                    for (cx, cy) in &pts {
                        let _ = writeln!(
                            svg,
                            r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="3" fill="{colour}"/>"#
                        );
                    }
                }
                legend(&mut svg, i, &s.name, "line");
            }
        }
        Marks::Bars { categories, series } => {
            let rects = bar_rects(&y, categories.len(), series);
            let labelled = rects.len() <= 40 && rects.iter().all(|r| r.2 .2 >= 14.0);
            for &(j, i, (bx, by, bw, bh)) in &rects {
                let colour = COLOURS[j % COLOURS.len()];
                let v = series[j].values[i];
                let text = chart.y.format.apply(v);
                if has_height(&(bx, by, bw, bh)) {
                    let _ = writeln!(
                        svg,
                        r#"<rect class="bar" x="{bx:.1}" y="{by:.1}" width="{bw:.1}" height="{bh:.1}" fill="{colour}"><title>{}, {}: {}</title></rect>"#,
                        escape(&series[j].name),
                        escape(&categories[i]),
                        escape(&text)
                    );
                }
                if labelled {
                    let ty = if v >= 0.0 || y.scale != Scale::Linear {
                        by - 3.0
                    } else {
                        by + bh + 11.0
                    };
                    let _ = writeln!(
                        svg,
                        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="10">{}</text>"#,
                        bx + bw / 2.0,
                        ty.max(TOP + 9.0),
                        escape(&text)
                    );
                }
            }
            for (j, s) in series.iter().enumerate() {
                legend(&mut svg, j, &s.name, "bar");
            }
        }
    }

    // Reference lines over the marks.
    for r in &chart.references {
        match r {
            Reference::Horizontal { y: v, label } => {
                let Some(ry) = py(&y, *v) else { continue };
                let _ = writeln!(
                    svg,
                    r##"<line class="reference" x1="{LEFT}" x2="{:.1}" y1="{ry:.1}" y2="{ry:.1}" stroke="#333" stroke-width="1.5" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11" fill="#333" stroke="white" stroke-width="3" paint-order="stroke">{}</text>"##,
                    LEFT + PLOT_W,
                    LEFT + PLOT_W - 4.0,
                    (ry - 4.0).max(TOP + 11.0),
                    escape(label)
                );
            }
            Reference::Vertical { x: v, label } => {
                if matches!(chart.marks, Marks::Bars { .. }) {
                    continue;
                }
                let Some(rx) = px(&x, *v) else { continue };
                let _ = writeln!(
                    svg,
                    r##"<line class="reference" x1="{rx:.1}" x2="{rx:.1}" y1="{TOP}" y2="{:.1}" stroke="#333" stroke-width="1.5" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}" font-size="11" fill="#333" stroke="white" stroke-width="3" paint-order="stroke">{}</text>"##,
                    TOP + PLOT_H,
                    rx + 4.0,
                    TOP + 14.0,
                    escape(label)
                );
            }
        }
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(series: Vec<Series>) -> LineChart {
        LineChart {
            title: "t <&>".into(),
            x_label: "size".into(),
            y_label: "MB/s".into(),
            x_log2: true,
            x_format: bytes_binary,
            series,
        }
    }

    /// The `points` of every polyline in `svg`.
    fn polylines(svg: &str) -> Vec<Vec<(f64, f64)>> {
        svg.split("<polyline")
            .skip(1)
            .map(|p| {
                let pts = p.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
                pts.split(' ')
                    .map(|p| {
                        let (x, y) = p.split_once(',').unwrap();
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect()
            })
            .collect()
    }

    /// The numeric attribute `name` of an element's text.
    fn attr(element: &str, name: &str) -> f64 {
        let key = format!(" {name}=\"");
        element
            .split(&key)
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    }

    fn bars(svg: &str) -> Vec<(f64, f64, f64, f64)> {
        svg.split("<rect class=\"bar\"")
            .skip(1)
            .map(|r| (attr(r, "x"), attr(r, "y"), attr(r, "width"), attr(r, "height")))
            .collect()
    }

    fn inside(x: f64, y: f64) -> bool {
        (LEFT..=WIDTH - RIGHT).contains(&x) && (TOP..=HEIGHT - BOTTOM).contains(&y)
    }

    fn no_bad_numbers(svg: &str) {
        assert!(
            !svg.contains("NaN") && !svg.contains("inf") && !svg.contains("=\"-0.0\""),
            "{svg}"
        );
    }

    /// Every point lies inside the plot box, larger values higher up, and
    /// text is escaped.
    #[test]
    fn points_land_inside_the_plot_in_order() {
        let svg = chart(vec![
            Series {
                name: "1 thread".into(),
                points: vec![(64.0, 10.0), (1024.0, 200.0), (1048576.0, 950.0)],
            },
            Series {
                name: "2 threads".into(),
                points: vec![(64.0, 20.0), (1024.0, 400.0), (1048576.0, 1900.0)],
            },
        ])
        .render();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("t &lt;&amp;&gt;"));
        let lines = polylines(&svg);
        assert_eq!(lines.len(), 2);
        let pts = &lines[0];
        assert_eq!(pts.len(), 3);
        for &(x, y) in pts {
            assert!(inside(x, y), "{x},{y}");
        }
        assert!(pts[0].0 < pts[1].0 && pts[1].0 < pts[2].0);
        assert!(
            pts[0].1 > pts[1].1 && pts[1].1 > pts[2].1,
            "higher values are drawn higher"
        );
        assert!(svg.contains(">1Ki<") && svg.contains(">1Mi<"));
        assert!(svg.contains(r#"data-expect-series="2""#));
    }

    #[test]
    fn degenerate_charts_still_render() {
        let nothing = chart(vec![]).render();
        no_bad_numbers(&nothing);
        assert!(!nothing.contains("<polyline") && nothing.contains(r#"data-expect-series="0""#));
        let one = chart(vec![Series {
            name: "x".into(),
            points: vec![(4096.0, 0.0)],
        }])
        .render();
        no_bad_numbers(&one);
        // One point: a dot, no line (a line would have no length).
        assert!(!one.contains("<polyline") && one.contains("<circle"));
        let empty_series = Chart::lines(
            "empty",
            Axis::new("t"),
            Axis::new("v"),
            vec![
                Series::new("none", vec![]),
                Series::new("nan", vec![(f64::NAN, 1.0)]),
            ],
        )
        .render();
        no_bad_numbers(&empty_series);
        assert!(empty_series.contains(r#"data-expect-series="0""#));
        let flat = Chart::lines(
            "flat",
            Axis::new("t"),
            Axis::new("v"),
            vec![Series::new("c", vec![(1.0, 5.0), (1.0, 5.0)])],
        )
        .render();
        no_bad_numbers(&flat);
        let log_of_nothing = Chart::cdf(
            "c",
            Axis::new("ms").log10(),
            vec![Series::new("a", vec![(-1.0, 0.0), (-1.0, 0.5), (0.0, 1.0)])],
        )
        .render();
        no_bad_numbers(&log_of_nothing);
        let no_bars = Chart::bars("b", "p", Axis::new("%"), vec![], vec![]).render();
        no_bad_numbers(&no_bars);
        let zero_bars = Chart::bars(
            "b",
            "p",
            Axis::new("%"),
            vec!["a".into(), "b".into()],
            vec![BarSeries::new("s", vec![0.0, f64::NAN])],
        )
        .render();
        no_bad_numbers(&zero_bars);
        assert!(bars(&zero_bars).is_empty());
    }

    #[test]
    fn axis_numbers_are_readable() {
        assert_eq!(si(1500.0), "1.5k");
        assert_eq!(si(20_000_000.0), "20M");
        assert_eq!(si(0.5), "0.5");
        assert_eq!(si(0.0005), "0.0005");
        assert_eq!(si(0.30000000000000004), "0.3");
        assert_eq!(si(-0.0), "0");
        assert_eq!(si(100.0), "100");
        assert_eq!(bytes_binary(65536.0), "64Ki");
        assert_eq!(nice_step(950.0, 5.0), 200.0);
        assert_eq!(seconds(0.0015), "1.5 ms");
        assert_eq!(seconds(20e-6), "20 µs");
        assert_eq!(Format::Percent.apply(0.25), "25%");
    }

    #[test]
    fn text_is_escaped_everywhere() {
        let svg = Chart::bars(
            "a <b> & \"c\"",
            "x's <",
            Axis::new("y & z"),
            vec!["<cat>".into()],
            vec![BarSeries::new("'s' & <s>", vec![1.0])],
        )
        .reference_y(0.5, "<ref>")
        .render();
        for raw in ["<b>", "<cat>", "<s>", "<ref>", "& ", "\"c\"", "x's"] {
            assert!(!svg.contains(raw), "{raw} unescaped in {svg}");
        }
        assert!(svg.contains("&lt;cat&gt;") && svg.contains("&#39;s&#39; &amp; &lt;s&gt;"));
    }

    /// Bars grow from the zero line with heights proportional to their
    /// values, side by side within a group, groups left to right.
    #[test]
    fn bar_heights_are_proportional() {
        let svg = Chart::bars(
            "SLA violations",
            "policy",
            Axis::new("violations").format(Format::Percent),
            vec!["fcfs".into(), "drr".into(), "wfq".into()],
            vec![
                BarSeries::new("tenant A", vec![0.4, 0.1, 0.05]),
                BarSeries::new("tenant B", vec![0.2, 0.3, 0.0]),
            ],
        )
        .render();
        let rects = bars(&svg);
        // The zero bar is not drawn, only labelled.
        assert_eq!(rects.len(), 5);
        assert!(svg.contains(">0%<"));
        assert!(svg.contains(r#"data-expect-bars="5""#));
        let base = rects[0].1 + rects[0].3;
        let per_unit = rects[0].3 / 0.4;
        let values = [0.4, 0.1, 0.05, 0.2, 0.3];
        for (r, v) in rects.iter().zip(values) {
            assert!((r.1 + r.3 - base).abs() < 0.15, "all bars stand on zero: {r:?}");
            assert!((r.3 - v * per_unit).abs() < 0.2, "height of {v}: {r:?}");
            assert!(inside(r.0, r.1) && inside(r.0 + r.2, r.1 + r.3), "{r:?}");
        }
        // Tenant B's bar right of tenant A's in the same group; groups in order.
        assert!(rects[3].0 > rects[0].0 && rects[3].0 < rects[1].0);
        assert!(rects[0].0 < rects[1].0 && rects[1].0 < rects[2].0);
        assert!(svg.contains(">40%<"), "values on the bars");
        assert!(svg.contains(">fcfs<") && svg.contains(">wfq<"));
    }

    #[test]
    fn negative_bars_hang_below_zero() {
        let svg = Chart::bars(
            "delta",
            "p",
            Axis::new("Δ"),
            vec!["a".into(), "b".into()],
            vec![BarSeries::new("s", vec![2.0, -1.0])],
        )
        .render();
        let r = bars(&svg);
        assert_eq!(r.len(), 2);
        assert!((r[0].1 + r[0].3 - r[1].1).abs() < 0.15, "both meet at zero");
        assert!((r[0].3 - 2.0 * r[1].3).abs() < 0.2);
    }

    /// A CDF on a log-x axis: decades as ticks, y from 0 to 1, monotone
    /// and inside the plot.
    #[test]
    fn cdf_on_log_axis() {
        // Uniform from 10.5 to 5010, in 100 steps.
        let points = (0..=100)
            .map(|k| (10.5 + k as f64 * 49.995, k as f64 / 100.0))
            .collect();
        let s = Series::new("p", points);
        let svg = Chart::cdf(
            "latency",
            Axis::new("latency").log10().format(Format::Si),
            vec![s],
        )
        .reference_x(100.0, "SLA")
        .render();
        for t in [">10<", ">100<", ">1k<", ">10k<"] {
            assert!(svg.contains(t), "tick {t}");
        }
        assert!(svg.contains(">0<") && svg.contains(">1<") && svg.contains(">0.2<"));
        let line = &polylines(&svg)[0];
        assert!(line.iter().all(|&(x, y)| inside(x, y)));
        assert!(line.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 >= w[1].1));
        // 10.5 is in the first decade (10..100, a third of the width), the
        // last point at 5010 in the third.
        let third = PLOT_W / 3.0;
        assert!(line[0].0 < LEFT + 0.1 * third);
        assert!(line.last().unwrap().0 > LEFT + 2.0 * third);
        assert!(!svg.contains("<circle"), "no dots on long series");
        assert!(svg.contains(r#"class="reference""#));
    }

    /// A horizontal reference line lies at its value, and the fitted
    /// range stretches to show it.
    #[test]
    fn reference_line_at_its_value() {
        let svg = Chart::lines(
            "shares",
            Axis::new("time").format(Format::Seconds),
            Axis::new("share"),
            vec![Series::new("a", vec![(0.0, 0.1), (1.0, 0.2)])],
        )
        .reference_y(0.5, "fair share")
        .render();
        let line = svg.split(r#"class="reference""#).nth(1).unwrap();
        let ry = attr(line, "y1");
        // The y axis ends on a round step at or above 0.5.
        assert!((TOP..TOP + PLOT_H).contains(&ry), "{ry}");
        assert!(svg.contains("fair share"));
        assert!(
            svg.contains(">200 ms<") && svg.contains(">1 s<"),
            "seconds on x: {svg}"
        );
    }

    #[test]
    fn fixed_ranges_clamp_into_the_plot() {
        let svg = Chart::lines(
            "jain",
            Axis::new("t").range(0.0, 10.0),
            Axis::new("J").range(0.0, 1.0),
            vec![Series::new("j", vec![(-5.0, 2.0), (5.0, 0.5), (20.0, -1.0)])],
        )
        .render();
        let line = &polylines(&svg)[0];
        assert!(line.iter().all(|&(x, y)| inside(x, y)), "{line:?}");
        assert!((line[1].1 - (TOP + PLOT_H / 2.0)).abs() < 0.1);
    }
}
