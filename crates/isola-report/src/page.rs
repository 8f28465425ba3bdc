//! The report as one self-contained HTML page: header, contents, summary
//! table, then each [`Section`] with its claims beside its findings, its
//! tables (one row may be highlighted, say the best policy) and its
//! [`Figure`](crate::Figure)s of charts (small multiples), each with the
//! paper's figure text beside our caption; and the same data as
//! `report.json`.
//!
//! The page carries a short script that is not needed to display it: on load
//! it measures each chart as the browser drew it (the box, each line's
//! length, each bar's height, all inside the plot, each line visible
//! somewhere rather than under others) and writes the result
//! into attributes (`data-check="ok"` on each chart, a summary on
//! `#render-check`), which the tests read from a headless Chromium's dump.

#[cfg(test)]
mod tests;

use crate::model::{Report, Section, Table};
use crate::text::escape;
use anyhow::Context;
use std::collections::HashSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Writes `report.html` and `report.json` into `dir` (created if need
/// be); returns the HTML file's path.
pub fn write_report(dir: &Path, report: &Report) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let json = dir.join("report.json");
    let text = serde_json::to_string_pretty(report).context("serialising the report")?;
    std::fs::write(&json, text + "\n").with_context(|| format!("writing {}", json.display()))?;
    let html = dir.join("report.html");
    std::fs::write(&html, render_html(report)).with_context(|| format!("writing {}", html.display()))?;
    Ok(html)
}

/// The report as one self-contained HTML page.
pub fn render_html(report: &Report) -> String {
    let mut ids = HashSet::new();
    let anchors: Vec<String> = report
        .sections
        .iter()
        .map(|e| unique_id(&mut ids, &format!("exp-{}", slug(&e.name))))
        .collect();
    let anchor_of = |name: &str| {
        report
            .sections
            .iter()
            .position(|e| e.name == name || e.title == name)
            .map(|i| anchors[i].as_str())
    };
    // Figures are numbered through the report.
    let mut figure_numbers = Vec::new();
    let mut n = 0;
    for e in &report.sections {
        figure_numbers.push((n + 1..=n + e.figures.len()).collect::<Vec<_>>());
        n += e.figures.len();
    }

    let mut h = String::new();
    let title = escape(&report.title);
    let _ = writeln!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>"
    );
    let _ = writeln!(h, "<header>\n<h1>{title}</h1>");
    let g = &report.generated;
    let _ = writeln!(h, "<dl class=\"generated\">");
    for (k, v) in [("Date", &g.date), ("Machine", &g.machine)] {
        if !v.is_empty() {
            let _ = writeln!(h, "<dt>{k}</dt><dd>{}</dd>", escape(v));
        }
    }
    if !g.command.is_empty() {
        let _ = writeln!(h, "<dt>Command</dt><dd><code>{}</code></dd>", escape(&g.command));
    }
    let _ = writeln!(
        h,
        "<dt>Data</dt><dd><a href=\"report.json\">report.json</a> (everything on this page)</dd>\n</dl>\n</header>"
    );

    // Table of contents.
    let _ = writeln!(
        h,
        "<nav class=\"toc\">\n<h2>Contents</h2>\n<ol>\n<li><a href=\"#summary\">Summary</a></li>"
    );
    for ((e, anchor), numbers) in report.sections.iter().zip(&anchors).zip(&figure_numbers) {
        let _ = write!(h, "<li><a href=\"#{anchor}\">{}</a>", escape(heading(e)));
        if !e.figures.is_empty() {
            h.push_str("\n<ol>");
            for (f, n) in e.figures.iter().zip(numbers) {
                let _ = write!(
                    h,
                    "<li><a href=\"#{anchor}-fig{n}\">Figure {n}. {}</a></li>",
                    escape(&f.title)
                );
            }
            h.push_str("</ol>\n");
        }
        h.push_str("</li>\n");
    }
    h.push_str("</ol>\n</nav>\n<main>\n");

    // Summary.
    h.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
    if report.summary.is_empty() {
        h.push_str("<p class=\"empty\">No experiments.</p>\n");
    } else {
        h.push_str(
            "<table class=\"summary\">\n<thead><tr><th>Experiment</th><th>Goal</th><th>Result</th><th>Met</th></tr></thead>\n<tbody>\n",
        );
        for row in &report.summary {
            let name = match anchor_of(&row.section) {
                Some(a) => format!("<a href=\"#{a}\">{}</a>", escape(&row.section)),
                None => escape(&row.section),
            };
            let met = match row.met {
                Some(true) => "<td class=\"met yes\">✓ met</td>",
                Some(false) => "<td class=\"met no\">✗ not met</td>",
                None => "<td class=\"met na\">–</td>",
            };
            let _ = writeln!(
                h,
                "<tr><td>{name}</td><td>{}</td><td>{}</td>{met}</tr>",
                escape(&row.goal),
                escape(&row.result)
            );
        }
        h.push_str("</tbody>\n</table>\n");
    }
    h.push_str("</section>\n");

    let mut shown = Shown::new();
    for ((e, anchor), numbers) in report.sections.iter().zip(&anchors).zip(&figure_numbers) {
        section_html(&mut h, e, anchor, numbers, &mut shown);
    }
    let _ = writeln!(
        h,
        "</main>\n<output id=\"render-check\" hidden></output>\n<script>\n{CHECK_SCRIPT}</script>\n</body>\n</html>"
    );
    h
}

/// A section's heading: its title, else its name.
fn heading(e: &Section) -> &str {
    if e.title.is_empty() {
        &e.name
    } else {
        &e.title
    }
}

/// Figure notes already on the page, with the figure that showed them: a
/// note repeated under a later figure points back instead.
type Shown = std::collections::HashMap<String, usize>;

/// A figure note (`class` "ours" or "paper", headed `heading`), or a
/// pointer to the figure that already showed it.
fn note_html(h: &mut String, shown: &mut Shown, n: usize, class: &str, heading: &str, text: &str) {
    let body = match shown.get(text) {
        Some(&first) if first != n => format!("As under figure {first}."),
        _ => {
            shown.insert(text.to_string(), n);
            escape(text)
        }
    };
    let _ = writeln!(h, "<div class=\"{class}\"><h4>{heading}</h4><p>{body}</p></div>");
}

/// The items a chart leaves out, in a table under it.
fn omitted_html(h: &mut String, chart: &crate::Chart) {
    let omitted = chart.omitted();
    if omitted.is_empty() {
        return;
    }
    let _ = writeln!(
        h,
        "<details class=\"omitted\"><summary>{} more not drawn</summary><table>",
        omitted.len()
    );
    for o in &omitted {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td></tr>",
            escape(&o.name),
            escape(&o.summary)
        );
    }
    h.push_str("</table></details>\n");
}

fn section_html(h: &mut String, e: &Section, anchor: &str, figure_numbers: &[usize], shown: &mut Shown) {
    let _ = writeln!(
        h,
        "<section class=\"experiment\" id=\"{anchor}\">\n<h2>{}</h2>",
        escape(heading(e))
    );
    if !e.name.is_empty() && e.name != heading(e) {
        let _ = writeln!(h, "<p class=\"name\"><code>{}</code></p>", escape(&e.name));
    }
    if !e.description.is_empty() {
        let _ = writeln!(h, "<p>{}</p>", escape(&e.description));
    }
    if !e.paper_claims.is_empty() || !e.findings.is_empty() || e.best_policy.is_some() {
        h.push_str("<div class=\"claims\">\n<div class=\"paper\">\n<h3>The paper</h3>\n");
        list(h, &e.paper_claims);
        h.push_str("</div>\n<div class=\"ours\">\n<h3>This run</h3>\n");
        list(h, &e.findings);
        if let Some(best) = &e.best_policy {
            let _ = writeln!(
                h,
                "<p class=\"best\">Best policy: <strong>{}</strong></p>",
                escape(best)
            );
        }
        h.push_str("</div>\n</div>\n");
    }
    for t in &e.tables {
        table_html(h, t);
    }
    for (f, n) in e.figures.iter().zip(figure_numbers) {
        let _ = writeln!(h, "<figure id=\"{anchor}-fig{n}\">");
        let _ = writeln!(h, "<h3>Figure {n}. {}</h3>", escape(&f.title));
        let _ = writeln!(h, "<div class=\"panels panels-{}\">", f.charts.len().min(3));
        for c in &f.charts {
            h.push_str("<div class=\"panel\">");
            h.push_str(&c.render());
            omitted_html(h, c);
            h.push_str("</div>\n");
        }
        h.push_str("</div>\n");
        if !f.caption.is_empty() || f.paper.is_some() {
            h.push_str("<figcaption>\n");
            if !f.caption.is_empty() {
                note_html(h, shown, *n, "ours", "This run", &f.caption);
            }
            if let Some(paper) = &f.paper {
                note_html(h, shown, *n, "paper", "The paper", paper);
            }
            h.push_str("</figcaption>\n");
        }
        h.push_str("</figure>\n");
    }
    h.push_str("</section>\n");
}

fn list(h: &mut String, items: &[String]) {
    if items.is_empty() {
        h.push_str("<p class=\"empty\">–</p>\n");
        return;
    }
    h.push_str("<ul>\n");
    for item in items {
        let _ = writeln!(h, "<li>{}</li>", escape(item));
    }
    h.push_str("</ul>\n");
}

fn table_html(h: &mut String, t: &Table) {
    h.push_str("<div class=\"table-wrap\">\n<table>\n");
    if !t.caption.is_empty() {
        let _ = writeln!(h, "<caption>{}</caption>", escape(&t.caption));
    }
    if !t.header.is_empty() {
        h.push_str("<thead><tr>");
        for c in &t.header {
            let _ = write!(h, "<th>{}</th>", escape(c));
        }
        h.push_str("</tr></thead>\n");
    }
    h.push_str("<tbody>\n");
    for (i, row) in t.rows.iter().enumerate() {
        if t.highlight_row == Some(i) {
            h.push_str("<tr class=\"highlight\">");
        } else {
            h.push_str("<tr>");
        }
        for c in row {
            if looks_numeric(c) {
                let _ = write!(h, "<td class=\"num\">{}</td>", escape(c));
            } else {
                let _ = write!(h, "<td>{}</td>", escape(c));
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table>\n</div>\n");
}

/// Whether a cell reads as a number (`12.5 ms`, `-3%`, `×1.8`): aligned right.
fn looks_numeric(cell: &str) -> bool {
    let t = cell.trim_start_matches(['-', '+', '−', '×', '≈', '<', '>', '≤', '≥', '~', ' ']);
    t.starts_with(|c: char| c.is_ascii_digit())
        || (t.starts_with('.') && t[1..].starts_with(|c: char| c.is_ascii_digit()))
}

/// `text` as an HTML id: lower-case letters, digits and dashes.
fn slug(text: &str) -> String {
    let mut s = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            s.push(c);
        } else if !s.ends_with('-') {
            s.push('-');
        }
    }
    let s = s.trim_matches('-');
    if s.is_empty() {
        "x".into()
    } else {
        s.into()
    }
}

/// `base`, or `base-2`, `base-3`... the first not yet in `ids`.
fn unique_id(ids: &mut HashSet<String>, base: &str) -> String {
    let mut id = base.to_string();
    let mut n = 2;
    while !ids.insert(id.clone()) {
        id = format!("{base}-{n}");
        n += 1;
    }
    id
}

/// The page's stylesheet.
const STYLE: &str = r#"body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1a1a1a; background: #fff; line-height: 1.45; margin: 0 auto; max-width: 1320px; padding: 1rem 2rem 4rem; }
h1 { font-size: 1.8rem; margin: 0.5rem 0; }
h2 { font-size: 1.4rem; border-bottom: 2px solid #0072B2; padding-bottom: 0.2rem; margin-top: 2.5rem; }
h3 { font-size: 1.1rem; margin: 1rem 0 0.4rem; }
h4 { font-size: 0.85rem; text-transform: uppercase; letter-spacing: 0.05em; color: #555; margin: 0 0 0.3rem; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.9em; background: #f3f3f3; padding: 0 0.25em; border-radius: 3px; }
a { color: #0060a0; }
dl.generated { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem; color: #444; margin: 0.5rem 0 1rem; }
dl.generated dt { font-weight: 600; }
dl.generated dd { margin: 0; overflow-wrap: anywhere; }
nav.toc { background: #f6f8fa; border: 1px solid #dde3ea; border-radius: 6px; padding: 0.5rem 1.5rem 0.8rem; }
nav.toc h2 { border: none; margin: 0.4rem 0; font-size: 1.1rem; }
nav.toc ol { margin: 0.2rem 0; padding-left: 1.4rem; }
nav.toc ol ol { font-size: 0.92em; }
table { border-collapse: collapse; margin: 0.6rem 0 1.2rem; font-size: 0.95rem; }
.table-wrap { overflow-x: auto; }
caption { caption-side: top; text-align: left; font-weight: 600; padding: 0.3rem 0; }
th, td { border: 1px solid #d0d7de; padding: 0.3rem 0.7rem; vertical-align: top; }
th { background: #eef2f6; text-align: left; }
tbody tr:nth-child(even) { background: #fafbfc; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.highlight, tr.highlight:nth-child(even) { background: #fff3c4; font-weight: 600; }
td.met { white-space: nowrap; font-weight: 600; }
td.met.yes { color: #11703b; background: #e6f4ea; }
td.met.no { color: #a3191e; background: #fdecea; }
td.met.na { color: #777; }
p.name { margin: -0.3rem 0 0.5rem; color: #555; }
p.empty { color: #888; }
.claims { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; margin: 1rem 0; }
.claims > div, figcaption > div { border-radius: 6px; padding: 0.5rem 1rem; }
.claims ul { margin: 0.3rem 0; padding-left: 1.2rem; }
.paper { background: #f4f0fa; border-left: 4px solid #CC79A7; }
.ours { background: #eef6fb; border-left: 4px solid #0072B2; }
p.best { margin: 0.4rem 0; }
figure { margin: 1.5rem 0; padding: 0.5rem 0 1rem; border-top: 1px solid #e5e5e5; }
.panels { display: grid; gap: 0.8rem; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); }
.panels-1 { grid-template-columns: minmax(0, 760px); }
.panel svg { display: block; width: 100%; height: auto; border: 1px solid #eee; }
figcaption { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; margin-top: 0.6rem; font-size: 0.95rem; }
figcaption p { margin: 0.2rem 0; }
@media (max-width: 800px) { .claims, figcaption { grid-template-columns: 1fr; } }
@media print { nav.toc { display: none; } figure, table { break-inside: avoid; } }
"#;

/// Not needed to display the page: measures each chart as drawn and writes
/// the result into attributes, for the tests (and anyone curious).
const CHECK_SCRIPT: &str = r#"window.addEventListener('load', function () {
  var charts = document.querySelectorAll('svg.chart');
  var ok = 0;
  // (x, y) in `el`'s user units as a point in the window (for
  // elementFromPoint), scrolled into view first if need be.
  var screenPoint = function (el, x, y) {
    var at = function () {
      var m = el.getScreenCTM();
      return { x: m.a * x + m.c * y + m.e, y: m.b * x + m.d * y + m.f };
    };
    var s = at();
    if (s.x < 0 || s.y < 0 || s.x >= window.innerWidth || s.y >= window.innerHeight) {
      window.scrollBy(s.x - window.innerWidth / 2, s.y - window.innerHeight / 2);
      s = at();
    }
    return s;
  };
  charts.forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    var area = svg.querySelector('.plot-area').getBBox();
    var inside = function (b) {
      return b.x >= area.x - 1 && b.y >= area.y - 1 &&
        b.x + b.width <= area.x + area.width + 1 && b.y + b.height <= area.y + area.height + 1;
    };
    var series = 0, bars = 0, outside = 0;
    svg.querySelectorAll('.series').forEach(function (p) {
      // A line drawn once for series that coincide stands for them all.
      if (p.getTotalLength() > 0) series += Number(p.getAttribute('data-count') || 1);
      if (!inside(p.getBBox())) outside++;
    });
    svg.querySelectorAll('.bar').forEach(function (r) {
      var b = r.getBBox();
      if (b.width > 0 && b.height > 0) bars++;
      if (!inside(b)) outside++;
    });
    // No two labels overlap (boxes as drawn on the screen, rotation
    // included; a pixel of slack for antialiasing).
    var boxes = [];
    svg.querySelectorAll('text').forEach(function (t) {
      var b = t.getBoundingClientRect();
      if (b.width > 0 && b.height > 0) boxes.push(b);
    });
    var overlaps = 0;
    for (var i = 0; i < boxes.length; i++) {
      for (var j = i + 1; j < boxes.length; j++) {
        var a = boxes[i], b = boxes[j];
        var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 1) overlaps++;
      }
    }
    // Every drawn series has a legend entry of its name.
    var legends = {};
    svg.querySelectorAll('.legend').forEach(function (g) {
      legends[g.getAttribute('data-series')] = true;
    });
    var unlabelled = 0;
    svg.querySelectorAll('.series, .bar').forEach(function (m) {
      if (!legends[m.getAttribute('data-series')]) unlabelled++;
    });
    // Every drawn series shows: sampled along its line (every 2 px or
    // so), at least one sample has it (or its dots) as the topmost thing
    // painted. A line under others is listed.
    var hidden = [];
    svg.querySelectorAll('.series').forEach(function (p) {
      var name = p.getAttribute('data-series'), len = p.getTotalLength();
      var n = Math.min(400, Math.max(20, Math.ceil(len / 2))), seen = 0;
      for (var k = 0; k <= n; k++) {
        var at = p.getPointAtLength(len * k / n);
        var s = screenPoint(p, at.x, at.y);
        var top = s && document.elementFromPoint(s.x, s.y);
        var owner = top && top.closest('[data-series]');
        if (owner && owner.getAttribute('data-series') === name) seen++;
      }
      p.setAttribute('data-visible-samples', seen);
      if (seen === 0) hidden.push(name);
    });
    var good = box.width > 0 && box.height > 0 && outside === 0 &&
      overlaps === 0 && unlabelled === 0 && hidden.length === 0 &&
      series === Number(svg.getAttribute('data-expect-series')) &&
      bars === Number(svg.getAttribute('data-expect-bars'));
    svg.setAttribute('data-hidden-series', hidden.join(' | '));
    svg.setAttribute('data-overlaps', overlaps);
    svg.setAttribute('data-unlabelled', unlabelled);
    if (good) ok++;
    svg.setAttribute('data-box', Math.round(box.width) + 'x' + Math.round(box.height));
    svg.setAttribute('data-drawn-series', series);
    svg.setAttribute('data-drawn-bars', bars);
    svg.setAttribute('data-outside', outside);
    svg.setAttribute('data-check', good ? 'ok' : 'fail');
  });
  window.scrollTo(0, 0);
  var out = document.getElementById('render-check');
  out.setAttribute('data-charts', charts.length);
  out.setAttribute('data-ok', ok);
  out.setAttribute('data-status', 'done');
});
"#;
