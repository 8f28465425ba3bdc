//! Line marks: one polyline per series (line charts over time or size,
//! CDFs), with a dot at each point of short series.

use super::axis::Mapped;
use super::frame::{colour, legend, px, py, Legend, Swatch};
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

/// How many of `series` a browser should draw as lines with length.
pub(super) fn drawn(x: &Mapped, y: &Mapped, series: &[Series]) -> usize {
    series
        .iter()
        .filter(|s| has_length(&line_points(x, y, s)))
        .count()
}

/// Draws each series (a polyline when it has two points or more, dots
/// when it is short) and its legend entry.
pub(super) fn draw(svg: &mut String, x: &Mapped, y: &Mapped, series: &[Series]) {
    let mut at = Legend::new();
    for (i, s) in series.iter().enumerate() {
        let colour = colour(i);
        let pts = line_points(x, y, s);
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
        legend(svg, &mut at, i, &s.name, Swatch::Line);
    }
}
