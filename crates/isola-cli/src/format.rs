//! Formatting for people: durations, tables, this machine in a line.

/// A duration in ns as `850ns`, `12.3us`, `4.56ms` or `1.23s`.
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
/// (names, then numbers).
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    table_with(header, rows, 1)
}

/// Renders rows with the first `left` columns left-aligned, the rest right-aligned.
pub fn table_with(header: &[&str], rows: &[Vec<String>], left: usize) -> String {
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
            if i < left {
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

/// This machine in a line: host name, CPU model, cores.
pub fn machine() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let host = if host.is_empty() {
        "unknown host".into()
    } else {
        host
    };
    format!("{host}: {cpu}, {cores} cores, {}", std::env::consts::OS)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
