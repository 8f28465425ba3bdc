//! Lines that hide one another, found in pixel space (after the axes map
//! them): lines that coincide everywhere to within [`TOLERANCE`] are one
//! group, drawn once and named together; the groups are then stacked so
//! that each shows somewhere (a line lying along part of another is drawn
//! over it, not under). What no order can show is reported as buried.

use std::collections::HashMap;

/// Two lines this close (in pixels, centre to centre) look like one: a
/// line 2 px wide drawn over another this close covers it.
pub(super) const TOLERANCE: f64 = 1.5;
/// Side of the cells of the index that finds segments near a point.
const CELL: f64 = 16.0;
/// Most points sampled along one line (longer lines are sampled sparser).
const MAX_SAMPLES: f64 = 5000.0;

type Point = (f64, f64);

/// How a chart's lines are drawn: grouped, and stacked.
#[derive(Debug, PartialEq)]
pub(super) struct Layout {
    /// Groups of lines that coincide, as indices into the lines (in
    /// order), groups in order of their first line. The first line of a
    /// group is the one drawn.
    pub groups: Vec<Vec<usize>>,
    /// The groups (indices into `groups`) in drawing order, bottom first.
    pub order: Vec<usize>,
    /// Groups that lie wholly under others in any order (indices into
    /// `groups`).
    pub buried: Vec<usize>,
}

/// Groups and stacks `lines` (each a polyline in pixels; one point is a
/// dot, none is nothing). Lines coincide when each lies within
/// [`TOLERANCE`] of the other everywhere along it; a line that lies along
/// only part of another (a shorter run, a shared start) stays apart and is
/// drawn above the one it would vanish under. Lines that do not hide one
/// another keep their order.
pub(super) fn layout(lines: &[Vec<Point>]) -> Layout {
    let index: Vec<Index> = lines.iter().map(|l| Index::new(l)).collect();
    let samples: Vec<Vec<Point>> = lines.iter().map(|l| samples(l)).collect();
    let covers = |a: usize, b: usize| samples[b].iter().all(|&p| index[a].near(p));

    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in 0..lines.len() {
        let joins = (!lines[i].is_empty())
            .then(|| {
                groups
                    .iter()
                    .position(|g| !lines[g[0]].is_empty() && g.iter().all(|&m| covers(m, i) && covers(i, m)))
            })
            .flatten();
        match joins {
            Some(g) => groups[g].push(i),
            None => groups.push(vec![i]),
        }
    }

    // For each sample along each group's line, the other groups whose
    // lines pass within the tolerance of it (would hide it if drawn over).
    let drawn: Vec<usize> = groups.iter().map(|g| g[0]).collect();
    let under: Vec<Vec<Vec<usize>>> = drawn
        .iter()
        .enumerate()
        .map(|(g, &line)| {
            samples[line]
                .iter()
                .map(|&p| {
                    (0..drawn.len())
                        .filter(|&h| h != g && index[drawn[h]].near(p))
                        .collect()
                })
                .collect()
        })
        .collect();
    // Bottom up: the next is the first group with a sample that none of the
    // groups still to be drawn (all of them above it) would cover.
    let mut left: Vec<usize> = (0..groups.len()).collect();
    let mut order = Vec::with_capacity(groups.len());
    let mut buried = Vec::new();
    while !left.is_empty() {
        let shows = |g: usize| {
            under[g].is_empty() || under[g].iter().any(|over| over.iter().all(|h| !left.contains(h)))
        };
        let next = left.iter().position(|&g| shows(g)).unwrap_or_else(|| {
            buried.push(left[0]);
            0
        });
        order.push(left.remove(next));
    }
    Layout {
        groups,
        order,
        buried,
    }
}

/// Points along `line` about a pixel apart (its vertices among them).
fn samples(line: &[Point]) -> Vec<Point> {
    let length: f64 = line.windows(2).map(|w| dist(w[0], w[1])).sum();
    let step = (length / MAX_SAMPLES).max(0.75);
    let mut out = Vec::new();
    for w in line.windows(2) {
        let n = (dist(w[0], w[1]) / step).ceil().max(1.0) as usize;
        out.extend((0..n).map(|k| {
            let t = k as f64 / n as f64;
            (w[0].0 + (w[1].0 - w[0].0) * t, w[0].1 + (w[1].1 - w[0].1) * t)
        }));
    }
    out.extend(line.last());
    out
}

fn dist(a: Point, b: Point) -> f64 {
    (a.0 - b.0).hypot(a.1 - b.1)
}

/// Distance from `p` to the segment from `a` to `b`.
fn to_segment(p: Point, a: Point, b: Point) -> f64 {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len2 = dx * dx + dy * dy;
    let t = if len2 > 0.0 {
        (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    dist(p, (a.0 + t * dx, a.1 + t * dy))
}

/// A line's segments by the grid cells they pass within the tolerance
/// of, to find those near a point without trying them all.
struct Index<'a> {
    line: &'a [Point],
    cells: HashMap<(i64, i64), Vec<usize>>,
}

impl<'a> Index<'a> {
    fn new(line: &'a [Point]) -> Self {
        let mut cells: HashMap<(i64, i64), Vec<usize>> = HashMap::new();
        let segments = match line.len() {
            1 => 1,
            n => n.saturating_sub(1),
        };
        for k in 0..segments {
            let (a, b) = Self::segment(line, k);
            let (x0, x1) = (a.0.min(b.0) - TOLERANCE, a.0.max(b.0) + TOLERANCE);
            let (y0, y1) = (a.1.min(b.1) - TOLERANCE, a.1.max(b.1) + TOLERANCE);
            for cx in cell(x0)..=cell(x1) {
                for cy in cell(y0)..=cell(y1) {
                    cells.entry((cx, cy)).or_default().push(k);
                }
            }
        }
        Index { line, cells }
    }

    /// The `k`th segment (a lone point is a segment of no length).
    fn segment(line: &[Point], k: usize) -> (Point, Point) {
        (line[k], line[(k + 1).min(line.len() - 1)])
    }

    /// Whether the line passes within the tolerance of `p`.
    fn near(&self, p: Point) -> bool {
        self.cells.get(&(cell(p.0), cell(p.1))).is_some_and(|ks| {
            ks.iter().any(|&k| {
                let (a, b) = Self::segment(self.line, k);
                to_segment(p, a, b) <= TOLERANCE
            })
        })
    }
}

/// The grid cell holding coordinate `v`.
fn cell(v: f64) -> i64 {
    (v / CELL).floor() as i64
}
