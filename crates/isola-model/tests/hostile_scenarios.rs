//! Issue 14's reproducers for the scenario format: every value a user
//! supplies goes through one checked conversion, and each refusal names the
//! file, the line and the key of the value at fault.

use isola_model::{Scenario, ScenarioError};

/// A valid scenario; each case replaces one line of it.
const BASE: &str = r#"[run]
seed = 7
duration = "1ms"
policies = ["fcfs", { name = "drr", split = "4KiB" }]

[[engine]]
name = "acc"
kind = "accelerator"
slots = 1
service = { dist = "affine", base = "1us", per_byte_ns = 0.1 }

[[tenant]]
name = "a"
weight = 1
[tenant.workload]
engine = "acc"
size = "64B"
arrival = { closed = 1 }
"#;

/// BASE with line `line` (1-based) replaced by `with`.
fn with_line(line: usize, with: &str) -> Result<Scenario, ScenarioError> {
    let mut lines: Vec<&str> = BASE.lines().collect();
    lines[line - 1] = with;
    Scenario::parse(&lines.join("\n"), "bad.toml")
}

/// Asserts that replacing `line` with `with` is refused at that line and
/// `key`, with a message containing `says`.
fn refused(line: usize, with: &str, key: &str, says: &str) {
    let err = with_line(line, with).expect_err(with);
    assert_eq!((err.file.as_str(), err.line), ("bad.toml", line), "{with}: {err}");
    assert_eq!(err.key.as_deref(), Some(key), "{with}: {err}");
    assert!(err.message.contains(says), "{with}: {err}");
}

#[test]
fn the_base_scenario_is_valid() {
    assert!(Scenario::parse(BASE, "ok.toml").is_ok());
}

#[test]
fn numbers_without_units_are_refused() {
    refused(3, r#"duration = "20""#, "duration", "has no unit");
    refused(3, "duration = 20", "duration", "has no unit");
    refused(17, "size = 4096", "size", "has no unit");
    refused(
        10,
        r#"service = { dist = "constant", time = 5 }"#,
        "service",
        "has no unit",
    );
}

#[test]
fn values_out_of_range_are_refused_not_clamped() {
    refused(3, r#"duration = "99999999999s""#, "duration", "too large");
    refused(17, r#"size = "99999999999999999999B""#, "size", "too large");
    refused(
        17,
        r#"size = { dist = "uniform", min = "64B", max = "18446744073709551615" }"#,
        "max",
        "no unit",
    );
    refused(18, r#"arrival = { poisson = "2000T/s" }"#, "poisson", "too large");
}

#[test]
fn zero_where_it_makes_no_sense_is_refused_at_its_line() {
    refused(3, r#"duration = "0ms""#, "duration", "greater than zero");
    refused(2, r#"window = "0ns""#, "window", "greater than zero");
    refused(14, "latency_multiple = 0", "latency_multiple", "> 0");
    refused(14, r#"budget = "0ns""#, "budget", "greater than zero");
    refused(
        4,
        r#"policies = [{ name = "drr", fragment = "0B" }]"#,
        "policies",
        "at least 1B",
    );
}

#[test]
fn weights_that_sum_to_infinity_are_refused() {
    refused(
        17,
        r#"size = { dist = "empirical", points = [["64B", 1e308], ["1KiB", 1e308]] }"#,
        "size",
        "sum is finite",
    );
}

#[test]
fn names_are_bounded() {
    let long = format!(r#"name = "{}""#, "x".repeat(70_000));
    refused(13, &long, "name", "at most 64");
    refused(13, r#"name = """#, "name", "empty");
    refused(7, r#"name = "a\u0007b""#, "name", "control");
}

#[test]
fn windows_are_bounded_and_long_runs_get_wider_ones() {
    refused(2, r#"window = "1ns""#, "window", "max_windows");
    let long = with_line(3, r#"duration = "1000s""#).unwrap();
    assert!(
        long.run.duration.unwrap() / long.run.window <= 10_000,
        "{}",
        long.run.window
    );
    let short = Scenario::parse(BASE, "ok.toml").unwrap();
    assert_eq!(short.run.window, 100_000);
    refused(2, "max_events = 0", "max_events", "at least 1");
}

#[test]
fn keys_that_do_not_apply_are_refused() {
    refused(17, r#"direction = "read""#, "direction", "dma engine");
    refused(9, "egress_ratio = 1e300", "egress_ratio", "between 0 and 1000");
}

#[test]
fn a_duplicate_engine_is_reported_at_its_name() {
    let text = BASE.replace(
        "[[tenant]]",
        "[[engine]]\nname = \"acc\"\nkind = \"accelerator\"\n\n[[tenant]]",
    );
    let err = Scenario::parse(&text, "bad.toml").unwrap_err();
    assert_eq!((err.line, err.key.as_deref()), (13, Some("name")), "{err}");
    assert!(err.message.contains("defined twice"), "{err}");
}

#[test]
fn a_misspelt_table_is_named() {
    let text = BASE
        .replace("[[tenant]]", "[[tenants]]")
        .replace("[tenant.workload]", "[tenants.workload]");
    let err = Scenario::parse(&text, "bad.toml").unwrap_err();
    assert!(err.message.contains("tenants"), "{err}");
    // Only the header misspelt: its workload table then has no tenant.
    let text = BASE.replace("[[tenant]]", "[[tenants]]");
    let err = Scenario::parse(&text, "bad.toml").unwrap_err();
    assert_eq!((err.line, err.key.as_deref()), (12, Some("tenants")), "{err}");
    assert!(err.message.contains("unknown table `tenants`"), "{err}");
}

#[test]
fn files_that_never_end_are_not_read() {
    for path in ["/dev/zero", "/tmp"] {
        let err = Scenario::load(path).unwrap_err();
        assert!(err.message.contains("not a regular file"), "{err}");
        assert_eq!(err.to_string(), format!("{path}: {}", err.message));
    }
}

#[test]
fn a_trace_without_rows_for_the_tenant_is_refused() {
    let dir = std::env::temp_dir().join(format!("isola-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.csv"), "time_ns,tenant,op,bytes\n0,b,crc32c,64\n").unwrap();
    let text = BASE.replace("arrival = { closed = 1 }", r#"arrival = { trace = "t.csv" }"#);
    let err = Scenario::parse(&text, dir.join("s.toml")).unwrap_err();
    assert_eq!((err.line, err.key.as_deref()), (18, Some("trace")), "{err}");
    assert!(err.message.contains("no rows for tenant `a`"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
