//! Text as the report writes it: numbers as people read them (SI suffixes,
//! binary byte sizes, durations), plain-text tables for a terminal, and
//! escaping for HTML and SVG.

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

/// A duration in nanoseconds as a table cell: `850ns`, `12.3us`, `4.56ms`
/// or `1.23s`.
pub fn duration(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.1}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

/// Renders rows as a left-aligned first column and right-aligned others
/// (names, then numbers), one line each under the header.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    table_with(header, rows, 1)
}

/// Renders rows with the first `left` columns left-aligned, the rest right-aligned.
pub fn table_with(header: &[&str], rows: &[Vec<String>], left: usize) -> String {
    table_aligned(header, rows, |i| i >= left)
}

/// Renders rows with the columns `right` says right-aligned (numbers), the
/// others left-aligned; columns two spaces apart, lines without trailing
/// spaces.
pub fn table_aligned(header: &[&str], rows: &[Vec<String>], right: impl Fn(usize) -> bool) -> String {
    let cols = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(cols) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let sep = if i == 0 { "" } else { "  " };
            if !right(i) {
                s.push_str(&format!("{sep}{c:<w$}", w = width[i]));
            } else {
                s.push_str(&format!("{sep}{c:>w$}", w = width[i]));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(header.to_vec());
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_readable() {
        assert_eq!(si(1500.0), "1.5k");
        assert_eq!(si(20_000_000.0), "20M");
        assert_eq!(si(0.5), "0.5");
        assert_eq!(si(0.0005), "0.0005");
        assert_eq!(si(0.30000000000000004), "0.3");
        assert_eq!(si(-0.0), "0");
        assert_eq!(si(100.0), "100");
        assert_eq!(si(f64::NAN), "n/a");
        assert_eq!(bytes_binary(65536.0), "64Ki");
        assert_eq!(bytes_binary(3.0 * 1024.0 * 1024.0), "3Mi");
        assert_eq!(bytes_binary(100.0), "100");
        assert_eq!(seconds(0.0015), "1.5 ms");
        assert_eq!(seconds(20e-6), "20 µs");
        assert_eq!(seconds(2.0), "2 s");
        assert_eq!(seconds(3e-7), "300 ns");
    }

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(duration(850.0), "850ns");
        assert_eq!(duration(12_345.0), "12.3us");
        assert_eq!(duration(4_560_000.0), "4.56ms");
        assert_eq!(duration(1.234e9), "1.23s");
    }

    #[test]
    fn tables_align() {
        let t = table(
            &["name", "n"],
            &[vec!["a".into(), "10".into()], vec!["bbb".into(), "2".into()]],
        );
        assert_eq!(t, "name   n\na     10\nbbb    2\n");
    }

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            escape("a <b> & \"c\" 'd'"),
            "a &lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;"
        );
    }
}
