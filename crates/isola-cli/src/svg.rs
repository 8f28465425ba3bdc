//! Self-contained SVG line charts (no scripts, no fonts to fetch), for plots
//! written next to results and inlined in reports.
//!
//! Written by hand: the plotting crates (plotters and friends) pull in font
//! rasterisers and image back ends to draw what is a few dozen lines of SVG.

use std::fmt::Write;

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Points `(x, y)`, drawn in order.
    pub points: Vec<(f64, f64)>,
}

/// A line chart with a linear y axis from zero and a linear or base-2
/// logarithmic x axis.
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

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
/// Colour-blind-safe palette (Okabe and Ito).
const COLOURS: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
];

/// Escapes text for SVG.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round step for about `ticks` ticks over `0..max`: 1, 2 or 5 times a
/// power of ten.
fn nice_step(max: f64, ticks: f64) -> f64 {
    let raw = (max / ticks).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// A number as people read it on an axis: `1.5k`, `20M`.
pub fn si(v: f64) -> String {
    let (scaled, suffix) = match v.abs() {
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let text = format!("{scaled:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
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

impl LineChart {
    /// The chart as a standalone SVG document.
    pub fn render(&self) -> String {
        let points = || self.series.iter().flat_map(|s| s.points.iter());
        let fx = |x: f64| {
            if self.x_log2 {
                x.max(f64::MIN_POSITIVE).log2()
            } else {
                x
            }
        };
        let xs: Vec<f64> = points().map(|p| fx(p.0)).filter(|x| x.is_finite()).collect();
        let (x_min, x_max) = xs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
        let (x_min, x_max) = if x_min.is_finite() && x_max > x_min {
            (x_min, x_max)
        } else if x_min.is_finite() {
            (x_min - 1.0, x_min + 1.0)
        } else {
            (0.0, 1.0)
        };
        let y_top = points()
            .map(|p| p.1)
            .filter(|y| y.is_finite())
            .fold(0.0, f64::max);
        let y_step = nice_step(if y_top > 0.0 { y_top } else { 1.0 }, 5.0);
        let y_max = (y_top / y_step).ceil().max(1.0) * y_step;
        let plot_w = WIDTH - LEFT - RIGHT;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let px = |x: f64| LEFT + (fx(x) - x_min) / (x_max - x_min) * plot_w;
        let py = |y: f64| TOP + plot_h - (y / y_max).clamp(0.0, 1.0) * plot_h;

        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(svg, r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
            LEFT + plot_w / 2.0,
            escape(&self.title)
        );
        // Horizontal grid lines and y ticks.
        let mut y = 0.0;
        while y <= y_max * (1.0 + 1e-9) {
            let _ = writeln!(
                svg,
                r##"<line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                LEFT + plot_w,
                py(y),
                py(y),
                LEFT - 6.0,
                py(y) + 4.0,
                si(y)
            );
            y += y_step;
        }
        // X ticks at the data's distinct x values (at most about 12).
        let mut x_ticks: Vec<f64> = points().map(|p| p.0).collect();
        x_ticks.sort_by(f64::total_cmp);
        x_ticks.dedup();
        let every = x_ticks.len().div_ceil(12).max(1);
        for x in x_ticks.iter().step_by(every) {
            let _ = writeln!(
                svg,
                r##"<line x1="{0:.1}" x2="{0:.1}" y1="{1:.1}" y2="{2:.1}" stroke="#888"/><text x="{0:.1}" y="{3:.1}" text-anchor="middle">{4}</text>"##,
                px(*x),
                TOP + plot_h,
                TOP + plot_h + 5.0,
                TOP + plot_h + 18.0,
                escape(&(self.x_format)(*x))
            );
        }
        let _ = writeln!(
            svg,
            r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>"##
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            LEFT + plot_w / 2.0,
            HEIGHT - 10.0,
            escape(&self.x_label)
        );
        let _ = writeln!(
            svg,
            r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            TOP + plot_h / 2.0,
            escape(&self.y_label)
        );
        for (i, s) in self.series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let path: Vec<String> = s
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            let _ = writeln!(
                svg,
                r#"<polyline class="series" fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
                path.join(" ")
            );
            for p in &path {
                let (cx, cy) = p.split_once(',').unwrap_or(("0", "0"));
                let _ = writeln!(svg, r#"<circle cx="{cx}" cy="{cy}" r="3" fill="{colour}"/>"#);
            }
            let ly = TOP + 10.0 + i as f64 * 18.0;
            let lx = LEFT + plot_w + 12.0;
            let _ = writeln!(
                svg,
                r#"<line x1="{lx}" x2="{:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
                lx + 18.0,
                lx + 24.0,
                ly + 4.0,
                escape(&s.name)
            );
        }
        svg.push_str("</svg>\n");
        svg
    }
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
        assert_eq!(svg.matches("<polyline").count(), 2);
        let first = svg.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
        let pts: Vec<(f64, f64)> = first
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        assert_eq!(pts.len(), 3);
        for &(x, y) in &pts {
            assert!(
                (LEFT..=WIDTH - RIGHT).contains(&x) && (TOP..=HEIGHT - BOTTOM).contains(&y),
                "{x},{y}"
            );
        }
        assert!(pts[0].0 < pts[1].0 && pts[1].0 < pts[2].0);
        assert!(
            pts[0].1 > pts[1].1 && pts[1].1 > pts[2].1,
            "higher values are drawn higher"
        );
        assert!(svg.contains(">1Ki<") && svg.contains(">1Mi<"));
    }

    #[test]
    fn degenerate_charts_still_render() {
        assert!(chart(vec![]).render().contains("</svg>"));
        let one = chart(vec![Series {
            name: "x".into(),
            points: vec![(4096.0, 0.0)],
        }])
        .render();
        assert!(!one.contains("NaN") && !one.contains("inf"), "{one}");
    }

    #[test]
    fn axis_numbers_are_readable() {
        assert_eq!(si(1500.0), "1.5k");
        assert_eq!(si(20_000_000.0), "20M");
        assert_eq!(si(0.5), "0.5");
        assert_eq!(bytes_binary(65536.0), "64Ki");
        assert_eq!(nice_step(950.0, 5.0), 200.0);
    }
}
