//! Self-contained SVG charts (no scripts, no fonts to fetch), for plots
//! written next to results and inlined in reports.
//!
//! One renderer draws every kind: a [`Chart`] holds two [`Axis`] (linear,
//! base-2 or base-10 logarithmic; fixed or fitted range), the [`Marks`]
//! (lines or grouped bars) and optional [`Reference`] lines. Line charts
//! over time or over sizes, latency CDFs ([`Chart::cdf`]) and bar charts
//! are the same code with different parameters: `axis` fits axes to the
//! data, `frame` draws what every chart has (title, grid, ticks, labels,
//! legend, reference lines), `lines` and `bars` draw the marks; `coincide`
//! finds lines that would hide one another (drawn once, named together).
//!
//! Written by hand: the plotting crates (plotters and friends) pull in font
//! rasterisers and image back ends to draw what is a few dozen lines of SVG.

mod axis;
mod bars;
mod coincide;
mod frame;
mod lines;
mod select;
#[cfg(test)]
mod tests;

pub use axis::{Axis, Format, Scale, Ticks};
pub use select::{keep, Omitted, MAX_CATEGORIES, MAX_LINES};
use serde::Serialize;

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
    /// Reference lines, drawn under lines (so that a line along one shows)
    /// and over bars, their labels over both; the fitted ranges include
    /// them.
    pub references: Vec<Reference>,
    /// The series (lines) or categories (bars) to draw first when there
    /// are too many to draw all ([`Chart::prefer`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preferred: Vec<String>,
}

impl Chart {
    /// A line chart (for example shares or Jain's index over time, or
    /// throughput over input sizes).
    pub fn lines(title: impl Into<String>, x: Axis, y: Axis, series: Vec<Series>) -> Self {
        Chart {
            title: title.into(),
            x,
            y,
            marks: Marks::Lines { series },
            references: Vec::new(),
            preferred: Vec::new(),
        }
    }

    /// A CDF: `x` is the measured quantity (often [`Axis::log10`]), y the
    /// fraction from 0 to 1: each series' points are (x, fraction of samples ≤ x)
    /// in increasing order (as a latency histogram's CDF gives them).
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
            preferred: Vec::new(),
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

    /// The chart as an SVG element (a standalone document, or inline
    /// HTML), with at most [`MAX_LINES`] series or [`MAX_CATEGORIES`]
    /// categories drawn ([`Chart::shown`]; [`Chart::omitted`] lists the
    /// rest).
    pub fn render(&self) -> String {
        frame::render(&self.shown())
    }
}
