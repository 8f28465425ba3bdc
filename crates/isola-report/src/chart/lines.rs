//! Line marks: one polyline per series (line charts over time or size,
//! CDFs), with a dot at each point of short series. Series whose lines
//! coincide at the chart's scale are drawn once, under one legend entry
//! naming them all, and a note under the chart says so (`coincide` finds
//! them); each drawn line has its own colour and dash pattern.

use super::axis::Mapped;
use super::coincide::{layout, Layout};
use super::frame::{colour, dash, legend, px, py, Legend, Swatch};
use super::Series;
use crate::text::escape;
use std::fmt::Write;

/// Series with at most this many points get a dot at each.
const MAX_DOTTED: usize = 40;

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

/// How a chart's series are drawn: their points on the plot, grouped
/// where they coincide and stacked so that each shows.
pub(super) struct Plan<'a> {
    series: &'a [Series],
    points: Vec<Vec<(f64, f64)>>,
    layout: Layout,
}

impl<'a> Plan<'a> {
    /// The plan for `series` on the axes `x` and `y`.
    pub(super) fn new(x: &Mapped, y: &Mapped, series: &'a [Series]) -> Self {
        let points: Vec<_> = series.iter().map(|s| line_points(x, y, s)).collect();
        let layout = layout(&points);
        Plan {
            series,
            points,
            layout,
        }
    }

    /// A group's name: its series' names, joined by " = ".
    fn name(&self, group: usize) -> String {
        let names: Vec<&str> = self.layout.groups[group]
            .iter()
            .map(|&i| self.series[i].name.as_str())
            .collect();
        names.join(" = ")
    }

    /// How many series a browser should find drawn as lines with length
    /// (a group's series all count, drawn as its one line).
    pub(super) fn drawn(&self) -> usize {
        self.layout
            .groups
            .iter()
            .filter(|g| has_length(&self.points[g[0]]))
            .map(Vec::len)
            .sum()
    }

    /// What a reader should be told under the chart: which series are
    /// drawn as one line, which lie under others.
    pub(super) fn note(&self) -> Vec<String> {
        let mut note = Vec::new();
        let together: Vec<String> = (0..self.layout.groups.len())
            .filter(|&g| self.layout.groups[g].len() > 1)
            .map(|g| self.name(g))
            .collect();
        if !together.is_empty() {
            note.push(format!(
                "Drawn as one line, as they coincide at this scale: {}.",
                together.join("; ")
            ));
        }
        if !self.layout.buried.is_empty() {
            let buried: Vec<String> = self.layout.buried.iter().map(|&g| self.name(g)).collect();
            note.push(format!("Under other lines throughout: {}.", buried.join(", ")));
        }
        note
    }

    /// Draws each group's line (a polyline when it has two points or
    /// more, dots when it is short), bottom first, and a legend entry for
    /// each group in the series' order. A group takes the colour and dash
    /// of its first series.
    pub(super) fn draw(&self, svg: &mut String) {
        for &g in &self.layout.order {
            let members = &self.layout.groups[g];
            let i = members[0];
            let (colour, name) = (colour(i), escape(&self.name(g)));
            let pts = &self.points[i];
            if pts.len() >= 2 {
                let path: Vec<String> = pts.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
                let _ = writeln!(
                    svg,
                    r#"<polyline class="series" data-series="{name}" data-count="{}" fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{}" stroke-linejoin="round" points="{}"/>"#,
                    members.len(),
                    dash(i),
                    path.join(" ")
                );
            }
            if pts.len() <= MAX_DOTTED && !pts.is_empty() {
                let _ = write!(svg, r#"<g class="dots" data-series="{name}" fill="{colour}">"#);
                for (cx, cy) in pts {
                    let _ = write!(svg, r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="3"/>"#);
                }
                svg.push_str("</g>\n");
            }
        }
        let mut at = Legend::new();
        for g in 0..self.layout.groups.len() {
            let i = self.layout.groups[g][0];
            legend(svg, &mut at, i, &self.name(g), Swatch::Line);
        }
    }
}
