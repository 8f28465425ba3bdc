//! Charts as drawn: positions, ticks, escaping and the counts a browser
//! should find, read back from the SVG.

use super::frame::{BOTTOM, HEIGHT, LEFT, PLOT_H, PLOT_W, RIGHT, TOP, WIDTH};
use super::*;

/// A throughput-over-sizes chart, as `isola bench` draws one per operator.
fn chart(series: Vec<Series>) -> Chart {
    Chart::lines(
        "t <&>",
        Axis::new("size").log2().format(Format::Bytes).ticks_at_data(),
        Axis::new("MB/s"),
        series,
    )
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

/// Ticks at the data's sizes (a sweep), not at every power of two between.
#[test]
fn ticks_at_data_follow_the_sweep() {
    let svg = chart(vec![Series::new(
        "1 thread",
        vec![(64.0, 1.0), (4096.0, 2.0), (1048576.0, 3.0)],
    )])
    .render();
    for t in [">64<", ">4Ki<", ">1Mi<"] {
        assert!(svg.contains(t), "tick {t}");
    }
    assert!(!svg.contains(">128<") && !svg.contains(">256Ki<"), "{svg}");
    let auto = Chart::lines(
        "t",
        Axis::new("size").log2().format(Format::Bytes),
        Axis::new("MB/s"),
        vec![Series::new("s", vec![(64.0, 1.0), (1048576.0, 3.0)])],
    )
    .render();
    assert!(auto.contains(">256<") && auto.contains(">1Mi<"), "{auto}");
}

/// `line` moved down by `dy` pixels.
fn shifted(line: &[(f64, f64)], dy: f64) -> Vec<(f64, f64)> {
    line.iter().map(|&(x, y)| (x, y + dy)).collect()
}

/// Lines that coincide to within the tolerance (identical, or a hair
/// apart) are one group; a line further off, or one that shares only part
/// of the way, stays apart; empty series are never grouped.
#[test]
fn coinciding_lines_are_grouped_within_the_tolerance() {
    use super::coincide::{layout, TOLERANCE};
    let a = vec![(80.0, 300.0), (200.0, 300.0), (400.0, 100.0)];
    let lines = vec![
        a.clone(),
        a.clone(),
        shifted(&a, TOLERANCE - 0.1),
        shifted(&a, TOLERANCE + 0.1),
        // The same start, then apart.
        vec![(80.0, 300.0), (200.0, 300.0), (400.0, 250.0)],
        vec![],
        vec![],
        // One point on the line: a dot, not a copy of it.
        vec![(200.0, 300.0)],
    ];
    let l = layout(&lines);
    assert_eq!(
        l.groups,
        [vec![0, 1, 2], vec![3], vec![4], vec![5], vec![6], vec![7]]
    );
    assert_eq!(l.order, [0, 1, 2, 3, 4, 5], "nothing hidden: the order kept");
    assert!(l.buried.is_empty());
}

/// A line lying along part of another (a shorter run) is drawn over it,
/// wherever it comes in the series; a line that others cover piece by
/// piece is reported as buried.
#[test]
fn lines_along_part_of_another_are_drawn_over_it() {
    use super::coincide::layout;
    let long = vec![(80.0, 200.0), (480.0, 200.0)];
    let start = vec![(80.0, 200.0), (280.0, 200.0)];
    let end = vec![(280.0, 200.0), (480.0, 200.0)];
    let l = layout(&[start.clone(), long.clone()]);
    assert_eq!(l.groups, [vec![0], vec![1]], "not merged: the long one goes on");
    assert_eq!(l.order, [1, 0], "the short one on top");
    assert!(l.buried.is_empty());
    let l = layout(&[long, start, end]);
    assert_eq!(l.groups.len(), 3);
    assert_eq!(l.buried, [0], "the long one lies under the two halves");
}

/// Jain's index as a reproduction draws it: most policies at 1.0 (one a
/// hair below). They are drawn as one line whose legend entry names them
/// all, a note under the chart says so, the reference line lies under the
/// lines, and each drawn line has its own dash pattern.
#[test]
fn coinciding_series_are_drawn_once_and_named_together() {
    let flat = |v: f64| (0..=10).map(|t| (t as f64, v)).collect::<Vec<_>>();
    let svg = Chart::lines(
        "jain",
        Axis::new("t"),
        Axis::new("J").range(0.0, 1.0),
        vec![
            Series::new("fcfs", flat(0.76)),
            Series::new("rr", flat(1.0)),
            Series::new("drr", flat(0.9995)),
            Series::new("wfq", flat(1.0)),
        ],
    )
    .reference_y(1.0, "perfectly fair")
    .render();
    let lines = polylines(&svg);
    assert_eq!(lines.len(), 2, "{svg}");
    assert!(svg.contains(r#"data-series="rr = drr = wfq" data-count="3""#));
    assert!(svg.contains(r#"<g class="legend" data-series="rr = drr = wfq">"#));
    assert_eq!(svg.matches(r#"class="legend""#).count(), 2);
    assert!(svg.contains(r#"data-expect-series="4""#), "all four drawn");
    let note = svg.split(r#"class="note""#).nth(1).expect("a note");
    assert!(
        note.contains("coincide") && note.contains("rr = drr = wfq."),
        "{note}"
    );
    assert!(attr(note, "y") > HEIGHT - 10.0, "under the x axis' label");
    let height = attr(&svg, "height");
    assert!(
        height > HEIGHT && attr(note, "y") < height,
        "the chart grows to hold it"
    );
    assert!(svg.find(r#"class="reference""#) < svg.find(r#"class="series""#));
    let dashes: std::collections::HashSet<&str> = svg
        .split(r#"class="series""#)
        .skip(1)
        .map(|rest| {
            rest.split("stroke-dasharray=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(dashes.len(), 2, "each drawn line its own dashes");
}
