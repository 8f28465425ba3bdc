//! The report's HTML, and the page as a real browser draws it (headless
//! Chromium, when there is one: see [`charts_are_drawn_in_chromium`]).

use super::*;
use crate::chart::{Axis, BarSeries, Chart, Format, Marks, Series};
use crate::model::{Figure, Generated, SummaryRow};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Deterministic noise in `0..1` (xorshift).
fn noise(state: &mut u64) -> f64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

/// A latency CDF named `name` from `samples`: every `every`th sample in
/// order, with the fraction of samples at or below it.
fn cdf_series(name: &str, mut samples: Vec<f64>, every: usize) -> Series {
    samples.sort_by(f64::total_cmp);
    let n = samples.len() as f64;
    let points = samples
        .iter()
        .enumerate()
        .skip(every - 1)
        .step_by(every)
        .map(|(i, &x)| (x, (i + 1) as f64 / n))
        .collect();
    Series::new(name, points)
}

/// The sample's policies.
const POLICIES: [&str; 4] = ["fcfs", "drr", "wfq", "osmosis"];

/// The heavy tenant's share of the PUs under the `p`th policy at `t`:
/// FCFS lets it take 80%; the others converge on half.
fn share(p: usize, t: f64) -> f64 {
    let target = if p == 0 { 0.8 } else { 0.5 };
    target + (0.8 - target) * (-t * (2.0 + p as f64 * 3.0)).exp()
}

/// The sample's times: every 20 ms for 1 s.
fn times() -> Vec<f64> {
    (0..=50).map(|i| i as f64 * 0.02).collect()
}

/// A report like `isola repro`'s: shares over time as small multiples,
/// Jain's index, latency CDFs on a log axis, grouped and single bars.
pub(super) fn sample() -> Report {
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let cdfs = latency_cdfs(&mut rng);
    let (jain_steady, cdfs_light) = coinciding(&mut rng);
    Report {
        title: "Isola repro: <sample> & checks".into(),
        generated: Generated {
            date: "2025-01-31 14:05 UTC".into(),
            machine: "test-host: Example CPU, 16 cores, linux".into(),
            command: "isola repro --all --out \"results\"".into(),
        },
        summary: summary(),
        sections: vec![
            osmosis_section(jain_steady),
            astraea_section(cdfs, cdfs_light),
            crowded(),
        ],
    }
}

/// The sample's summary: a goal met, one missed, one informational.
fn summary() -> Vec<SummaryRow> {
    vec![
        SummaryRow {
            section: "osmosis-fig9".into(),
            goal: "Fair PU shares under contention".into(),
            result: "Jain's index 0.99 after 0.4 s".into(),
            met: Some(true),
        },
        SummaryRow {
            section: "astraea-fig2".into(),
            goal: "p99 latency < 200 µs for the LS tenant".into(),
            result: "p99 = 310 µs under fcfs, 140 µs under osmosis".into(),
            met: Some(false),
        },
        SummaryRow {
            section: "throughput".into(),
            goal: "Informational".into(),
            result: "within 5% across policies".into(),
            met: None,
        },
    ]
}

/// Each policy's PU shares over time, one panel per policy.
fn share_panels() -> Vec<Chart> {
    let times = times();
    POLICIES
        .iter()
        .enumerate()
        .map(|(p, name)| {
            Chart::lines(
                format!("{name}: PU share"),
                Axis::new("time").format(Format::Seconds),
                Axis::new("share of PU time")
                    .range(0.0, 1.0)
                    .format(Format::Percent),
                vec![
                    Series::new("heavy", times.iter().map(|&t| (t, share(p, t))).collect()),
                    Series::new("light", times.iter().map(|&t| (t, 1.0 - share(p, t))).collect()),
                ],
            )
            .reference_y(0.5, "fair share")
        })
        .collect()
}

/// Jain's index of the two tenants' shares over time, per policy.
fn jain_chart() -> Chart {
    let times = times();
    Chart::lines(
        "Jain's fairness index",
        Axis::new("time").format(Format::Seconds),
        Axis::new("Jain's index").range(0.0, 1.0),
        POLICIES
            .iter()
            .enumerate()
            .map(|(p, name)| {
                let s = |t: f64| share(p, t);
                Series::new(
                    *name,
                    times
                        .iter()
                        .map(|&t| {
                            let (a, b) = (s(t), 1.0 - s(t));
                            (t, (a + b).powi(2) / (2.0 * (a * a + b * b)))
                        })
                        .collect(),
                )
            })
            .collect(),
    )
    .reference_y(1.0, "perfectly fair")
}

/// The latency-sensitive tenant's latency CDF per policy, on a log axis.
fn latency_cdfs(rng: &mut u64) -> Chart {
    Chart::cdf(
        "Latency-sensitive tenant",
        Axis::new("latency").log10().format(Format::Seconds),
        POLICIES
            .iter()
            .enumerate()
            .map(|(p, name)| {
                let base = 20e-6 * (1.0 + p as f64);
                let samples: Vec<f64> = (0..5000)
                    .map(|_| base * (1.0 + 50.0 * noise(rng).powi(6)))
                    .collect();
                cdf_series(name, samples, 25)
            })
            .collect(),
    )
    .reference_x(200e-6, "SLA 200 µs")
}

/// OSMOSIS' section: a table of shares, the share panels and Jain's index
/// (with `jain_steady` beside it).
fn osmosis_section(jain_steady: Chart) -> Section {
    Section {
        name: "osmosis-fig9".into(),
        title: "OSMOSIS: PU shares under contention".into(),
        description: "Two tenants share the PU cluster; the heavy one sends 4× the work.".into(),
        paper_claims: vec!["WLBVT converges to a 50/50 share within 1 s (Fig. 9)".into()],
        findings: vec!["osmosis reaches 50/50 within 0.4 s; fcfs stays at 80/20".into()],
        best_policy: Some("osmosis".into()),
        tables: vec![Table {
            caption: "Shares after 1 s".into(),
            header: vec!["policy".into(), "heavy".into(), "light".into(), "Jain".into()],
            rows: POLICIES
                .iter()
                .enumerate()
                .map(|(p, name)| {
                    let s = share(p, 1.0);
                    vec![
                        name.to_string(),
                        format!("{:.1}%", s * 100.0),
                        format!("{:.1}%", (1.0 - s) * 100.0),
                        format!("{:.3}", 1.0 / (2.0 * (s * s + (1.0 - s) * (1.0 - s)))),
                    ]
                })
                .collect(),
            highlight_row: Some(3),
        }],
        figures: vec![
            Figure {
                title: "Per-tenant PU share over time, one panel per policy".into(),
                caption: "Shares sampled every 20 ms.".into(),
                paper: Some("OSMOSIS Fig. 9: under WLBVT both tenants get half the PUs.".into()),
                charts: share_panels(),
            },
            Figure {
                title: "Jain's fairness index over time".into(),
                caption: "1 is perfectly fair, 0.5 one tenant takes all.".into(),
                paper: Some("OSMOSIS Fig. 12: Jain's index stays above 0.95.".into()),
                charts: vec![jain_chart(), jain_steady],
            },
        ],
    }
}

/// ASTRAEA's section: the latency CDFs (`cdfs` and `cdfs_light`), SLA
/// violations and throughput as bars.
fn astraea_section(cdfs: Chart, cdfs_light: Chart) -> Section {
    let violations = Chart::bars(
        "SLA violations",
        "policy",
        Axis::new("requests over SLA").format(Format::Percent),
        POLICIES.iter().map(|p| p.to_string()).collect(),
        vec![
            BarSeries::new("latency-sensitive", vec![0.42, 0.12, 0.03, 0.0]),
            BarSeries::new("bandwidth-sensitive", vec![0.01, 0.05, 0.04, 0.02]),
        ],
    );
    let throughput = Chart::bars(
        "Throughput",
        "policy",
        Axis::new("Gbit/s"),
        POLICIES.iter().map(|p| p.to_string()).collect(),
        vec![BarSeries::new("total", vec![92.0, 88.5, 87.0, 90.1])],
    )
    .reference_y(100.0, "line rate");
    Section {
        name: "astraea-fig2".into(),
        title: "ASTRAEA: latency of the latency-sensitive tenant".into(),
        description: "A latency-sensitive tenant shares the EC engine with a bandwidth hog.".into(),
        paper_claims: vec!["p99 under 200 µs with isolation".into()],
        findings: vec!["p99 140 µs under osmosis".into()],
        best_policy: Some("osmosis".into()),
        tables: vec![],
        figures: vec![
            Figure {
                title: "Latency CDF".into(),
                caption: "5000 requests per policy.".into(),
                paper: Some("ASTRAEA Fig. 2: FCFS has a long tail.".into()),
                charts: vec![cdfs, cdfs_light],
            },
            Figure {
                title: "SLA violations and throughput".into(),
                caption: "Violations per tenant; total throughput.".into(),
                paper: None,
                charts: vec![violations, throughput],
            },
        ],
    }
}

/// Charts whose lines coincide, as a reproduction draws them: Jain's index
/// at 1.0 for most of eight policies (one a hair below, one converging,
/// one unfair), and four latency CDFs a few hundred nanoseconds apart
/// rising at the same place beside one with a long tail.
fn coinciding(rng: &mut u64) -> (Chart, Chart) {
    let names = [
        "fcfs", "rr", "drr", "wfq", "osmosis", "astraea", "wlbvt", "native",
    ];
    let times = times();
    let jain = Chart::lines(
        "Jain's index, steady load",
        Axis::new("time").format(Format::Seconds),
        Axis::new("Jain's index").range(0.0, 1.0),
        names
            .iter()
            .map(|&name| {
                let j = |t: f64| match name {
                    "fcfs" => 0.76,
                    "rr" => 0.9995,
                    "wlbvt" => 1.0 - 0.4 * (-t * 6.0).exp(),
                    _ => 1.0,
                };
                Series::new(name, times.iter().map(|&t| (t, j(t))).collect())
            })
            .collect(),
    )
    .reference_y(1.0, "perfectly fair");
    let cdfs = Chart::cdf(
        "LS latency, light load",
        Axis::new("latency").log10().format(Format::Seconds),
        names[..5]
            .iter()
            .enumerate()
            .map(|(p, &name)| {
                let tail = if p == 0 { 50.0 } else { 0.01 };
                let samples: Vec<f64> = (0..2000)
                    .map(|_| 20e-6 * (1.0 + tail * noise(rng).powi(6)))
                    .collect();
                cdf_series(name, samples, 20)
            })
            .collect(),
    );
    (jain, cdfs)
}

/// A section with charts too crowded to read drawn whole: 14 latency
/// curves with long names, 14 policies with long names under grouped bars,
/// and a note repeated under two figures (as a reproduction's sweep
/// produces them).
fn crowded() -> Section {
    let names: Vec<String> = (0..14)
        .map(|i| match i {
            0 => "native".to_string(),
            1 => "astraea@w16".to_string(),
            _ => format!("policy-number-{i}/bytes+frag4096@w{i}"),
        })
        .collect();
    let curves = Chart::cdf(
        "Fourteen policies' latency",
        Axis::new("latency").log10().format(Format::Seconds),
        names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let points = (1..=20)
                    .map(|k| (1e-6 * (1.0 + i as f64) * k as f64, k as f64 / 20.0))
                    .collect();
                Series::new(n.clone(), points)
            })
            .collect(),
    )
    .prefer(["native", "astraea"]);
    let bars = Chart::bars(
        "SLA violations per policy",
        "policy",
        Axis::new("tasks over their SLA").format(Format::Percent),
        names.clone(),
        vec![
            BarSeries::new("latency-sensitive", (0..14).map(|i| 0.05 * i as f64).collect()),
            BarSeries::new("bandwidth-sensitive", (0..14).map(|i| 0.02 * i as f64).collect()),
        ],
    );
    let repeated = "The same note under every figure of a sweep.";
    Section {
        name: "crowded".into(),
        title: "Many policies".into(),
        description: String::new(),
        paper_claims: vec![],
        findings: vec![],
        best_policy: None,
        tables: vec![],
        figures: vec![
            Figure {
                title: "Latency".into(),
                caption: repeated.into(),
                paper: None,
                charts: vec![curves],
            },
            Figure {
                title: "Violations".into(),
                caption: repeated.into(),
                paper: None,
                charts: vec![bars],
            },
        ],
    }
}

/// What a browser should find drawn in `chart`, worked out from the data
/// alone: `(kind, lines with two or more points, bars with a nonzero value)`.
fn expected(chart: &Chart) -> (&'static str, usize, usize) {
    match &chart.shown().marks {
        Marks::Lines { series } => {
            let drawn = series
                .iter()
                .filter(|s| {
                    s.points
                        .iter()
                        .filter(|p| p.0.is_finite() && p.1.is_finite())
                        .count()
                        >= 2
                })
                .count();
            ("lines", drawn, 0)
        }
        Marks::Bars { categories, series } => {
            let bars = series
                .iter()
                .flat_map(|s| s.values.iter().take(categories.len()))
                .filter(|v| v.is_finite() && **v != 0.0)
                .count();
            ("bars", 0, bars)
        }
    }
}

fn all_charts(report: &Report) -> Vec<&Chart> {
    report
        .sections
        .iter()
        .flat_map(|e| e.figures.iter().flat_map(|f| f.charts.iter()))
        .collect()
}

/// The attributes of each opening tag `<name ...>` in `html` that has
/// `key="value"`, parsed with quoting respected.
fn tags_with(html: &str, name: &str, key: &str, value: &str) -> Vec<BTreeMap<String, String>> {
    let open = format!("<{name}");
    let mut found = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(&open) {
        let mut chars = rest[at + open.len()..].char_indices().peekable();
        let base = at + open.len();
        let mut attrs = BTreeMap::new();
        let mut end = rest.len();
        loop {
            while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
            let Some(&(i, c)) = chars.peek() else { break };
            if c == '>' || c == '/' {
                end = base + i;
                break;
            }
            let mut attr = String::new();
            while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace() && *c != '=' && *c != '>') {
                attr.push(c);
            }
            let mut val = String::new();
            if chars.next_if(|(_, c)| *c == '=').is_some() {
                let quote = chars.next_if(|(_, c)| *c == '"' || *c == '\'').map(|(_, c)| c);
                for (_, c) in chars.by_ref() {
                    if Some(c) == quote || (quote.is_none() && (c.is_whitespace() || c == '>')) {
                        break;
                    }
                    val.push(c);
                }
            }
            attrs.insert(attr, val);
        }
        if attrs
            .get(key)
            .is_some_and(|v| v.split_whitespace().any(|w| w == value))
        {
            found.push(attrs);
        }
        rest = &rest[end.max(at + 1)..];
    }
    found
}

#[test]
fn page_is_self_contained_and_escaped() {
    let mut report = sample();
    report.sections[0].description = "<script>alert('x')</script> & <img src=x>".into();
    report.sections[0].tables[0].rows[0][0] = "<b>fcfs</b>".into();
    report.sections[1].paper_claims.push("\"quoted\" <claim>".into());
    let html = render_html(&report);
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    // Only our own check script; nothing fetched.
    assert_eq!(html.matches("<script").count(), 1);
    assert!(!render_html(&sample()).contains(" src="));
    for bad in ["<img", "<b>fcfs", "<claim>", "<link", "@import", "url(", "https:"] {
        assert!(!html.contains(bad), "{bad} in the page");
    }
    let http: Vec<&str> = html
        .match_indices("http:")
        .map(|(i, _)| &html[i..i + 30])
        .collect();
    assert!(
        http.iter().all(|h| h.starts_with("http://www.w3.org/2000/svg")),
        "only SVG's namespace: {http:?}"
    );
    assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;img src=x&gt;"));
    assert!(html.contains("<title>Isola repro: &lt;sample&gt; &amp; checks</title>"));
    assert!(html.contains("&quot;quoted&quot; &lt;claim&gt;"));
    assert!(html.contains("--out &quot;results&quot;"));
}

#[test]
fn contents_link_to_sections_and_figures() {
    let report = sample();
    let html = render_html(&report);
    let links: Vec<&str> = html
        .split("href=\"#")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    // Summary, three sections, six figures in the contents; two summary
    // rows link to their sections.
    assert_eq!(links.len(), 1 + 3 + 6 + 2, "{links:?}");
    for l in &links {
        assert_eq!(
            html.matches(&format!("id=\"{l}\"")).count(),
            1,
            "#{l} names one element"
        );
    }
    assert!(links.contains(&"exp-osmosis-fig9") && links.contains(&"exp-astraea-fig2-fig4"));
    assert!(html.contains("Figure 3. Latency CDF"));
    // Summary: met, not met, not applicable.
    assert!(html.contains("met yes") && html.contains("met no") && html.contains("met na"));
    // The highlighted row is the best policy's; numbers align right.
    let hl = html.split("<tr class=\"highlight\">").nth(1).unwrap();
    assert!(hl.starts_with("<td>osmosis</td><td class=\"num\">"), "{hl}");
    assert!(html.contains("Best policy: <strong>osmosis</strong>"));
    // The paper's figure text beside ours.
    assert!(html.contains("<div class=\"paper\"><h4>The paper</h4><p>OSMOSIS Fig. 9"));
    // Every chart inline, with what a browser should draw.
    let charts = tags_with(&html, "svg", "class", "chart");
    let want = all_charts(&report);
    assert_eq!(charts.len(), want.len());
    for (got, chart) in charts.iter().zip(want) {
        let (kind, series, bars) = expected(chart);
        assert_eq!(got["data-kind"], kind);
        assert_eq!(got["data-expect-series"], series.to_string(), "{}", chart.title);
        assert_eq!(got["data-expect-bars"], bars.to_string(), "{}", chart.title);
    }
}

#[test]
fn ids_are_unique_and_empty_reports_render() {
    let mut ids = HashSet::new();
    assert_eq!(unique_id(&mut ids, "a"), "a");
    assert_eq!(unique_id(&mut ids, "a"), "a-2");
    assert_eq!(unique_id(&mut ids, "a"), "a-3");
    assert_eq!(slug("OSMOSIS Fig. 9 <x>"), "osmosis-fig-9-x");
    assert_eq!(slug("<>"), "x");
    let html = render_html(&Report::default());
    assert!(html.contains("No experiments.") && html.ends_with("</html>\n"));
    // Two sections with one name get distinct anchors; an empty figure renders.
    let e = Section {
        name: "same".into(),
        figures: vec![Figure::default()],
        ..Default::default()
    };
    let html = render_html(&Report {
        sections: vec![e.clone(), e],
        ..Default::default()
    });
    assert!(html.contains("id=\"exp-same\"") && html.contains("id=\"exp-same-2\""));
    assert!(html.contains("id=\"exp-same-2-fig2\""));
}

#[test]
fn numeric_cells_align_right() {
    for n in ["12.5 ms", "-3%", "×1.8", "0.99", ".5", "≤ 200 µs", "1e6"] {
        assert!(looks_numeric(n), "{n}");
    }
    for t in ["fcfs", "", "-", "n/a", "p99"] {
        assert!(!looks_numeric(t), "{t}");
    }
}

#[test]
fn writes_html_and_json() {
    let dir = scratch_dir("write");
    let report = sample();
    let html = write_report(&dir.join("nested"), &report).unwrap();
    assert_eq!(html, dir.join("nested/report.html"));
    assert_eq!(std::fs::read_to_string(&html).unwrap(), render_html(&report));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("nested/report.json")).unwrap()).unwrap();
    assert_eq!(json["experiments"].as_array().unwrap().len(), 3);
    let chart = &json["experiments"][1]["figures"][1]["charts"][0];
    assert_eq!(chart["marks"]["type"], "bars");
    assert_eq!(chart["marks"]["series"][0]["values"][0], 0.42);
    assert_eq!(
        json["experiments"][1]["figures"][0]["charts"][0]["x"]["scale"],
        "log10"
    );
    assert_eq!(json["summary"][2]["met"], serde_json::Value::Null);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fresh folder under the system's temporary one.
fn scratch_dir(what: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!("isola-report-{what}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The browser: `$CHROMIUM`, else `chromium`, `chromium-browser` or
/// `google-chrome` on `PATH`.
fn find_chromium() -> Option<PathBuf> {
    if let Some(c) = std::env::var_os("CHROMIUM").filter(|c| !c.is_empty()) {
        return Some(PathBuf::from(c));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find_map(|name| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|p| is_executable(p))
        })
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// Runs `browser` headless on `page` and returns the DOM after the load
/// handlers ran.
fn dump_dom(browser: &Path, page: &Path, profile: &Path) -> String {
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--window-size=1280,2000",
            // Let the page's load handler run before the dump.
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", browser.display()));
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).map(|_| s)
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} did not finish within 120 s", browser.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let dom = out.join().unwrap().unwrap();
    let log = err.join().unwrap();
    assert!(
        status.success(),
        "{} failed ({status}):\n{log}",
        browser.display()
    );
    assert!(dom.contains("</html>"), "no DOM dumped; browser said:\n{log}");
    dom
}

/// The sample report drawn by headless Chromium: the page's own check
/// (measuring each chart's box, each line's length, each bar's height, all
/// inside the plot, each line visible somewhere) ran and found every chart
/// drawn, with as many lines and bars as the data has. Without a browser it passes with a notice,
/// unless `ISOLA_REQUIRE_CHROMIUM=1` (CI sets it). With
/// `ISOLA_REPORT_SAMPLE_DIR` set, the sample is written there and kept.
#[test]
fn charts_are_drawn_in_chromium() {
    let Some(browser) = find_chromium() else {
        if std::env::var("ISOLA_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1") {
            panic!("ISOLA_REQUIRE_CHROMIUM=1 but no Chromium: set $CHROMIUM or put chromium on PATH");
        }
        eprintln!(
            "skipped: no Chromium ($CHROMIUM, chromium, chromium-browser, google-chrome); \
             the report's charts were not checked in a browser"
        );
        return;
    };
    let report = sample();
    let keep = std::env::var_os("ISOLA_REPORT_SAMPLE_DIR").map(PathBuf::from);
    let scratch = scratch_dir("chromium");
    let dir = keep.clone().unwrap_or_else(|| scratch.join("out"));
    let page = write_report(&dir, &report).unwrap();
    let page = page.canonicalize().unwrap();
    let dom = dump_dom(&browser, &page, &scratch.join("profile"));

    let want = all_charts(&report);
    let summary = tags_with(&dom, "output", "id", "render-check");
    assert_eq!(summary.len(), 1);
    assert_eq!(
        summary[0].get("data-status").map(String::as_str),
        Some("done"),
        "the page's load handler did not run: {:?}",
        summary[0]
    );
    assert_eq!(summary[0]["data-charts"], want.len().to_string());
    let charts = tags_with(&dom, "svg", "class", "chart");
    assert_eq!(charts.len(), want.len());
    for (got, chart) in charts.iter().zip(&want) {
        let (kind, series, bars) = expected(chart);
        let context = format!("{}: {got:?}", chart.title);
        assert_eq!(got["data-kind"], kind, "{context}");
        assert_eq!(got["data-drawn-series"], series.to_string(), "{context}");
        assert_eq!(got["data-drawn-bars"], bars.to_string(), "{context}");
        assert_eq!(got["data-outside"], "0", "{context}");
        assert_eq!(got["data-overlaps"], "0", "labels overlap: {context}");
        assert_eq!(
            got["data-unlabelled"], "0",
            "series without a legend entry: {context}"
        );
        assert_eq!(
            got["data-hidden-series"], "",
            "series drawn under others, nowhere visible: {context}"
        );
        let (w, h) = got["data-box"].split_once('x').unwrap();
        assert!(
            w.parse::<u32>().unwrap() > 100 && h.parse::<u32>().unwrap() > 60,
            "{context}"
        );
        assert_eq!(got["data-check"], "ok", "{context}");
    }
    assert_eq!(summary[0]["data-ok"], want.len().to_string());
    // The sample has lines and bars in it, or the check proves little.
    let kinds: Vec<_> = want.iter().map(|c| expected(c)).collect();
    assert!(kinds.iter().any(|k| k.1 >= 2) && kinds.iter().any(|k| k.2 >= 5));
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// A crowded chart draws the preferred series and fills up to the cap,
/// lists the rest under it with their values, gives every drawn series a
/// legend entry of its full name, and a note repeated under a later figure
/// points back to the first.
#[test]
fn crowded_charts_draw_a_few_and_list_the_rest() {
    let section = crowded();
    let html = render_html(&Report {
        sections: vec![section.clone()],
        ..sample()
    });
    let curves = &section.figures[0].charts[0];
    let svg = curves.render();
    let drawn = svg.matches("class=\"series\"").count();
    assert_eq!(drawn, crate::chart::MAX_LINES);
    assert!(svg.contains("data-series=\"native\"") && svg.contains("data-series=\"astraea@w16\""));
    assert_eq!(
        svg.matches("class=\"legend\"").count(),
        drawn,
        "one legend entry per drawn series"
    );
    assert!(!svg.contains('…'), "no name is cut");
    let colours: std::collections::HashSet<&str> = svg
        .split("class=\"series\"")
        .skip(1)
        .map(|rest| rest.split("stroke=\"").nth(1).unwrap().split('"').next().unwrap())
        .collect();
    assert_eq!(colours.len(), drawn, "each drawn series its own colour");
    assert!(html.contains("6 more not drawn"), "14 curves, 8 drawn");
    assert!(html.contains("2 more not drawn"), "14 categories, 12 drawn");
    assert!(
        html.contains("policy-number-13/bytes+frag4096@w13"),
        "the rest listed in full"
    );
    assert_eq!(
        html.matches("The same note under every figure of a sweep.")
            .count(),
        1
    );
    assert!(html.contains("As under figure 1."));
    // Long category names stand up rather than being cut.
    let bars = section.figures[1].charts[0].render();
    assert!(bars.contains("rotate(-90)"));
}
