//! Bar marks: grouped bars, one group per category, one bar per series,
//! growing from zero (linear scales) or from the bottom (logarithmic),
//! each labelled with its value when there is room.

use super::axis::{Format, Mapped, Scale};
use super::frame::{colour, legend, py, Legend, Swatch, LEFT, PLOT_H, PLOT_W, TOP};
use super::BarSeries;
use crate::text::escape;
use std::fmt::Write;

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

/// How many bars a browser should draw with a height.
pub(super) fn drawn(y: &Mapped, categories: usize, series: &[BarSeries]) -> usize {
    bar_rects(y, categories, series)
        .iter()
        .filter(|r| has_height(&r.2))
        .count()
}

/// A box of text on the chart: `(left, top, right, bottom)`.
pub(super) type TextBox = (f64, f64, f64, f64);

/// Whether two boxes overlap.
fn overlap(a: &TextBox, b: &TextBox) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// Draws the bars (values written as `format`, on the bars when they all
/// fit, except where one would cover a label in `avoid`) and a legend
/// entry per series.
pub(super) fn draw(
    svg: &mut String,
    y: &Mapped,
    format: Format,
    categories: &[String],
    series: &[BarSeries],
    avoid: &[TextBox],
) {
    let rects = bar_rects(y, categories.len(), series);
    // Values go on the bars only when every one fits its bar's width (10 px
    // text, about 6 px a character), so that no two labels overlap.
    let labelled = rects.len() <= 40
        && rects
            .iter()
            .all(|&(j, i, r)| r.2 >= format.apply(series[j].values[i]).chars().count() as f64 * 6.0 + 2.0);
    for &(j, i, (bx, by, bw, bh)) in &rects {
        let colour = colour(j);
        let v = series[j].values[i];
        let text = format.apply(v);
        if has_height(&(bx, by, bw, bh)) {
            let _ = writeln!(
                svg,
                r#"<rect class="bar" data-series="{}" x="{bx:.1}" y="{by:.1}" width="{bw:.1}" height="{bh:.1}" fill="{colour}"><title>{}, {}: {}</title></rect>"#,
                escape(&series[j].name),
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
            let (cx, ty) = (bx + bw / 2.0, ty.max(TOP + 9.0));
            let half = text.chars().count() as f64 * 3.0;
            if avoid
                .iter()
                .any(|a| overlap(a, &(cx - half, ty - 9.0, cx + half, ty + 1.0)))
            {
                continue;
            }
            let _ = writeln!(
                svg,
                r#"<text x="{cx:.1}" y="{ty:.1}" text-anchor="middle" font-size="10">{}</text>"#,
                escape(&text)
            );
        }
    }
    let mut at = Legend::new();
    for (j, s) in series.iter().enumerate() {
        legend(svg, &mut at, j, &s.name, Swatch::Bar);
    }
}
