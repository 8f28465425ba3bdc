//! Issue 14's reproducers for the simulator: a scenario that would make
//! the simulator loop forever, run for days or overflow its clock is
//! refused or stopped with an error that names the limit, in bounded time.

use isola_model::Scenario;
use isola_sim::{simulate, SimError};

/// A one-engine scenario with `run` lines, the engine's `service` and the
/// tenant's workload lines.
fn scenario(run: &str, engine: &str, workload: &str) -> Scenario {
    let text = format!(
        "[run]\n{run}\n\n[[engine]]\nname = \"e\"\n{engine}\n\n[[tenant]]\nname = \"t\"\n[tenant.workload]\nengine = \"e\"\nsize = \"4KiB\"\n{workload}\n"
    );
    Scenario::parse(&text, "limits.toml").unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The limit a run stopped at.
fn limit_hit(s: &Scenario) -> &'static str {
    match simulate(s, &[], None, |_, _, _| {}) {
        Err(SimError::Limit { limit, message }) => {
            assert!(!message.is_empty());
            limit
        }
        other => panic!("expected a limit, got {other:?}"),
    }
}

const ACC: &str =
    "kind = \"accelerator\"\nservice = { dist = \"affine\", base = \"1us\", per_byte_ns = 0.1 }";

#[test]
fn a_closed_loop_with_zero_service_time_stops() {
    for service in [
        r#"{ dist = "constant", time = "0ns" }"#,
        r#"{ dist = "affine", base = "0ns", per_byte_ns = 0 }"#,
    ] {
        let s = scenario(
            "duration = \"20ms\"",
            &format!("kind = \"accelerator\"\nservice = {service}"),
            "arrival = { closed = 1 }",
        );
        assert_eq!(limit_hit(&s), "events at one instant");
    }
}

#[test]
fn impossible_arrival_rates_are_refused_before_running() {
    let s = scenario("duration = \"20ms\"", ACC, "arrival = { constant = \"1000T/s\" }");
    assert_eq!(limit_hit(&s), "max_events");
    // The same run under a budget it fits is fine.
    let s = scenario("duration = \"1ms\"", ACC, "arrival = { poisson = \"100k/s\" }");
    assert!(simulate(&s, &[], None, |_, _, _| {}).is_ok());
}

#[test]
fn the_event_budget_stops_a_run_that_exceeds_it() {
    let s = scenario(
        "duration = \"20ms\"\nmax_events = 1000",
        ACC,
        "arrival = { closed = 4 }",
    );
    assert_eq!(limit_hit(&s), "max_events");
}

#[test]
fn a_transfer_that_would_take_ages_stops_instead_of_overflowing() {
    let dma = "kind = \"dma\"\nbandwidth = \"0.000001bps\"";
    // With a duration and without one: never "done in 0 ns".
    let s = scenario("duration = \"5ms\"", dma, "arrival = { closed = 4 }");
    assert_eq!(limit_hit(&s), "task cost");
    let s = scenario("", dma, "arrival = { closed = 4 }\ncount = 10");
    assert_eq!(limit_hit(&s), "task cost");
}

#[test]
fn a_run_without_duration_is_bounded_by_its_windows() {
    let s = scenario(
        "window = \"1ns\"\nmax_windows = 1000",
        ACC,
        "arrival = { closed = 1 }\ncount = 100000",
    );
    assert_eq!(limit_hit(&s), "max_windows");
}

#[test]
fn sparse_on_off_arrivals_and_long_runs_stay_cheap() {
    // 1 ns on in every second: the first arrival is days away.
    let s = scenario(
        "duration = \"20ms\"",
        ACC,
        "arrival = { onoff = { rate = \"1k/s\", on = \"1ns\", off = \"1s\" } }",
    );
    assert!(simulate(&s, &[], None, |_, _, _| {}).is_ok());
    // 1000 s at 10 tasks/s: wider windows, not ten million of them.
    let s = scenario("duration = \"1000s\"", ACC, "arrival = { poisson = \"10/s\" }");
    let report = simulate(&s, &[], None, |_, _, _| {}).unwrap();
    assert!(
        report.policies[0].series.len() <= 10_000,
        "{}",
        report.policies[0].series.len()
    );
}
