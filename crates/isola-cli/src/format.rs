//! Formatting for people: tables and spreads (durations and sizes are
//! `isola_report::text`'s; this machine in a line is
//! `isola_runtime::host::machine`).

/// Renders rows as a left-aligned first column and right-aligned others
/// (names, then numbers).
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    table_with(header, rows, 1)
}

/// Renders rows with the first `left` columns left-aligned, the rest right-aligned.
pub fn table_with(header: &[&str], rows: &[Vec<String>], left: usize) -> String {
    table_aligned(header, rows, |i| i >= left)
}

/// Renders rows with the columns `right` says right-aligned (numbers), the
/// others left-aligned.
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

/// A spread over repeated runs as `median [min-max]`, each value shown by
/// `f`; the median alone when every run agrees (or only one ran).
pub fn spread(s: &isola_model::results::Spread, f: impl Fn(f64) -> String) -> String {
    let (med, lo, hi) = (f(s.median), f(s.min), f(s.max));
    if lo == hi {
        med
    } else {
        format!("{med} [{lo}-{hi}]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align() {
        let t = table(
            &["name", "n"],
            &[vec!["a".into(), "10".into()], vec!["bbb".into(), "2".into()]],
        );
        assert_eq!(t, "name   n\na     10\nbbb    2\n");
    }

    #[test]
    fn a_spread_shows_its_range_only_when_runs_differ() {
        let s = |median, min, max| isola_model::results::Spread { median, min, max };
        let pct = |v: f64| format!("{:.2}%", v * 100.0);
        assert_eq!(spread(&s(0.02, 0.01, 0.03), pct), "2.00% [1.00%-3.00%]");
        assert_eq!(spread(&s(0.5, 0.5, 0.5), pct), "50.00%");
    }
}
