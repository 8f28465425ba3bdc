//! Malformed scenarios are refused before anything runs, with the file, line
//! and key of the mistake, never a panic.

use isola_model::{Scenario, ScenarioError};

/// A valid scenario; each case replaces one line of it.
const BASE: &str = r#"[run]
seed = 7
duration = "1ms"
policies = ["fcfs", "wlbvt"]

[[engine]]
name = "acc"
kind = "accelerator"
slots = 1
service = { dist = "exponential", mean = "1us" }

[[tenant]]
name = "a"
weight = 1
[tenant.workload]
engine = "acc"
size = "64B"
arrival = { poisson = "500k/s" }
"#;

/// Replaces line `line` (1-based) of BASE with `with` and parses the result.
fn with_line(line: usize, with: &str) -> ScenarioError {
    let mut lines: Vec<&str> = BASE.lines().collect();
    lines[line - 1] = with;
    let text = lines.join("\n");
    Scenario::parse(&text, "bad.toml").expect_err(&format!("accepted: {with}"))
}

fn check(err: &ScenarioError, line: usize, key: &str, message: &str) {
    assert_eq!(err.file, "bad.toml");
    assert_eq!(err.line, line, "{err}");
    assert_eq!(err.key.as_deref(), Some(key), "{err}");
    assert!(err.message.contains(message), "{err}");
    // The display form is what a person sees.
    assert!(err.to_string().starts_with(&format!("bad.toml:{line}:")), "{err}");
}

#[test]
fn the_base_scenario_is_valid() {
    assert!(Scenario::parse(BASE, "ok.toml").is_ok());
}

#[test]
fn unknown_key() {
    check(&with_line(9, "slts = 1"), 9, "slts", "unknown field `slts`");
}

/// A misspelt key in an inline table is named, not only the key it hides.
#[test]
fn a_misspelt_service_key_is_named() {
    check(
        &with_line(10, r#"service = { dsit = "exponential", mean = "5us" }"#),
        10,
        "service",
        "unknown field `dsit`",
    );
}

#[test]
fn wrong_unit() {
    check(
        &with_line(10, r#"service = { dist = "exponential", mean = "5xs" }"#),
        10,
        "mean",
        "unknown time unit",
    );
}

#[test]
fn negative_rate() {
    check(
        &with_line(18, r#"arrival = { poisson = "-5k/s" }"#),
        18,
        "poisson",
        "negative",
    );
}

#[test]
fn data_rate_where_a_task_rate_is_needed() {
    check(
        &with_line(18, r#"arrival = { poisson = "10Gbit/s" }"#),
        18,
        "arrival",
        "tasks per second",
    );
}

#[test]
fn unknown_engine() {
    let e = with_line(16, r#"engine = "gpu""#);
    assert_eq!((e.line, e.key.as_deref()), (16, Some("engine")), "{e}");
    assert!(
        e.message.contains("no engine named `gpu`") && e.message.contains("acc"),
        "{e}"
    );
}

#[test]
fn unknown_policy() {
    check(
        &with_line(4, r#"policies = ["fcfs", "lottery"]"#),
        4,
        "policies",
        "unknown policy `lottery`",
    );
}

#[test]
fn bad_policy_parameter_value() {
    let e = with_line(4, r#"policies = [{ name = "drr", params = { quantum = "-3" } }]"#);
    check(&e, 4, "policies", "quantum");
}

#[test]
fn unknown_policy_parameter() {
    check(
        &with_line(4, r#"policies = [{ name = "mclock", params = { limit = "x" } }]"#),
        4,
        "policies",
        "no parameter `limit`",
    );
}

#[test]
fn key_of_another_engine_kind() {
    check(
        &with_line(9, r#"max_payload = "256B""#),
        9,
        "max_payload",
        "only applies to dma engines",
    );
}

#[test]
fn zero_slots() {
    check(&with_line(9, "slots = 0"), 9, "slots", "at least 1");
}

#[test]
fn negative_weight() {
    check(&with_line(14, "weight = -2"), 14, "weight", "must be between");
}

#[test]
fn unbounded_run() {
    check(&with_line(3, ""), 18, "count", "never ends");
}

#[test]
fn syntax_error() {
    let e = with_line(6, "[[engine]");
    assert_eq!(e.line, 6, "{e}");
}

#[test]
fn wrong_type() {
    check(&with_line(9, r#"slots = "many""#), 9, "slots", "invalid type");
}

#[test]
fn reservation_above_limit() {
    let e = with_line(
        14,
        r#"reservation = "2M/s"
limit = "1M/s""#,
    );
    assert_eq!(e.key.as_deref(), Some("reservation"), "{e}");
    assert!(e.message.contains("exceeds limit"), "{e}");
}

#[test]
fn missing_trace_and_bad_trace_rows() {
    let e = with_line(18, r#"arrival = { trace = "does-not-exist.csv" }"#);
    check(&e, 18, "trace", "cannot read");
    let dir = std::env::temp_dir().join(format!("isola-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("t.csv"),
        "time_ns,tenant,op,bytes\n0,a,x,64\n5,a,x,lots\n",
    )
    .unwrap();
    let text = BASE.replace(
        r#"arrival = { poisson = "500k/s" }"#,
        r#"arrival = { trace = "t.csv" }"#,
    );
    let e = Scenario::parse(&text, dir.join("s.toml")).unwrap_err();
    assert!(
        e.file.ends_with("t.csv") && e.line == 3 && e.key.as_deref() == Some("bytes"),
        "{e}"
    );
    std::fs::write(
        dir.join("t.csv"),
        "time_ns,tenant,op,bytes\n0,a,x,64\n5,b,x,64\n9,a,y,128\n",
    )
    .unwrap();
    let s = Scenario::parse(&text, dir.join("s.toml")).unwrap();
    match &s.tenants[0].workload().arrival {
        isola_model::scenario::ArrivalSpec::Trace(rows) => assert_eq!(rows.len(), 2, "only tenant a's rows"),
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A slot partition with fewer slots than tenants is refused; `static`
/// by default time-slices the engine instead.
#[test]
fn static_partition_with_too_few_slots() {
    let two = |policies: &str| {
        BASE.replace("policies = [\"fcfs\", \"wlbvt\"]", policies)
            + "\n[[tenant]]\nname = \"b\"\n[tenant.workload]\nengine = \"acc\"\narrival = { poisson = \"1k/s\" }\n"
    };
    let text = two("policies = [{ name = \"static\", params = { mode = \"slots\" } }]");
    let e = Scenario::parse(&text, "bad.toml").unwrap_err();
    check(&e, 4, "policies", "every tenant needs a slot");
    Scenario::parse(&two("policies = [\"static\"]"), "sliced.toml").unwrap();
}

/// `service = { profile = "FILE", op = "NAME" }` takes the measured points
/// of a profile (from `isola profile`) next to the scenario file; a missing
/// file, a missing operator or an extra field is an error at the service.
#[test]
fn profile_services() {
    let dir = std::env::temp_dir().join(format!("isola-model-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("p.json"),
        r#"{"machine": "test", "operators": [{"op": "ec-encode", "params": {}, "points": [
            {"bytes": 1024, "median_ns": 2000.0, "samples": 3},
            {"bytes": 1048576, "median_ns": 900000.0, "samples": 3}],
            "base_ns": 1000.0, "per_byte_ns": 0.85, "affine_error": 0.01}]}"#,
    )
    .unwrap();
    let scenario = dir.join("s.toml");
    let with = |service: &str| BASE.replace(r#"service = { dist = "exponential", mean = "1us" }"#, service);
    let ok = Scenario::parse(
        &with(r#"service = { profile = "p.json", op = "ec-encode" }"#),
        &scenario,
    )
    .unwrap();
    match &ok.engines[0].device {
        isola_model::scenario::DeviceSpec::Compute {
            service: Some(isola_model::scenario::ServiceSpec::Table(points)),
            ..
        } => assert_eq!(points, &vec![(1024, 2000.0), (1_048_576, 900_000.0)]),
        other => panic!("{other:?}"),
    }
    for (service, says) in [
        (
            r#"service = { profile = "missing.json", op = "ec-encode" }"#,
            "cannot read profile",
        ),
        (
            r#"service = { profile = "p.json", op = "lz4" }"#,
            "no profile of operator `lz4`",
        ),
        (r#"service = { profile = "p.json" }"#, "needs `op`"),
        (
            r#"service = { profile = "p.json", op = "ec-encode", scale = 2 }"#,
            "unknown field `scale`",
        ),
    ] {
        let err = Scenario::parse(&with(service), &scenario).unwrap_err();
        assert_eq!((err.line, err.key.as_deref()), (10, Some("service")), "{err}");
        assert!(err.message.contains(says), "{err}");
    }
}

#[test]
fn split_when_is_always_contended_or_for_latency_and_the_window_needs_one_of_the_last() {
    check(
        &with_line(10, r#"split_when = "sometimes""#),
        10,
        "split_when",
        "use \"always\", \"contended\" or \"for_latency\"",
    );
    check(
        &with_line(10, r#"contention_window = "1ms""#),
        10,
        "contention_window",
        "only applies with split_when = \"contended\"",
    );
    let text = BASE.replace(
        "slots = 1\n",
        "slots = 1\nsplit_when = \"contended\"\ncontention_window = \"2ms\"\n",
    );
    let s = Scenario::parse(&text, "ok.toml").unwrap();
    assert_eq!(
        s.engines[0].split_when,
        isola_core::SplitWhen::Contended { window: 2_000_000 }
    );
    let s = Scenario::parse(&text.replace("\"contended\"", "\"for_latency\""), "ok.toml").unwrap();
    assert_eq!(
        s.engines[0].split_when,
        isola_core::SplitWhen::ForLatency { window: 2_000_000 }
    );
}

#[test]
fn per_engine_settings_name_engines_or_kinds_and_are_checked() {
    // A tenant's `on` table naming nothing.
    let text = BASE.replace("weight = 1\n", "weight = 1\n[tenant.on.gpu]\nweight = 2\n");
    let err = Scenario::parse(&text, "bad.toml").unwrap_err();
    assert_eq!(err.key.as_deref(), Some("on"), "{err}");
    assert!(err.message.contains("`gpu` is neither an engine"), "{err}");
    // An override that makes the SLO invalid on the engine it reaches.
    let text = BASE.replace(
        "weight = 1\n",
        "weight = 1\nlimit = \"10/s\"\n[tenant.on.accelerator]\nreservation = \"20/s\"\n",
    );
    let err = Scenario::parse(&text, "bad.toml").unwrap_err();
    assert_eq!(err.key.as_deref(), Some("reservation"), "{err}");
    assert!(err.message.contains("on engine `acc`"), "{err}");
    // A policy run's `on` with an unknown policy.
    let text = BASE.replace(
        r#"policies = ["fcfs", "wlbvt"]"#,
        r#"policies = ["fcfs", { name = "wlbvt", on = { acc = "nonesuch" } }]"#,
    );
    let err = Scenario::parse(&text, "bad.toml").unwrap_err();
    assert_eq!((err.line, err.key.as_deref()), (4, Some("on")), "{err}");
    // Valid: by name and by kind, with parameters; a memory quota.
    let text = BASE
        .replace(
            r#"policies = ["fcfs", "wlbvt"]"#,
            r#"policies = [{ name = "wlbvt", on = { accelerator = { name = "drr", params = { quantum = 2000 } } } }]"#,
        )
        .replace("weight = 1\n", "weight = 1\nmemory_quota = \"1MiB\"\n[tenant.on.acc]\nweight = 3\nbudget = \"2us\"\n");
    let s = Scenario::parse(&text, "ok.toml").unwrap();
    assert_eq!(s.tenants[0].slo.memory_quota, Some(1 << 20));
    assert_eq!(
        s.tenants[0].overrides[0].0,
        isola_core::EngineSelector::Named("acc".into())
    );
    assert_eq!(s.tenants[0].overrides[0].1.weight, Some(3.0));
    assert_eq!(s.run.policies[0].on[0].name, "drr");
}

/// `--policy` selection: a label selects its run exactly, a policy name or
/// alias the policy's runs when no run has it as its label.
#[test]
fn runs_are_selected_by_exact_label_then_by_policy_or_alias() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/osmosis-dma-hol.toml"))
        .unwrap()
        .replace(
            r#"policies = ["fcfs", "wrr", { name = "wrr", label = "wrr-frag512", split = "512B" }]"#,
            r#"policies = ["fcfs", "sfq", { name = "sfq", label = "sfq-frag4k", split = "4KiB" }, { name = "wrr", label = "w", split = "512B" }]"#,
        );
    let s = Scenario::parse(&text, "select.toml").unwrap();
    let labels = |wanted: &[&str]| -> Result<Vec<String>, String> {
        let wanted: Vec<String> = wanted.iter().map(|w| w.to_string()).collect();
        Ok(s.run
            .select(&wanted)?
            .into_iter()
            .map(|r| r.label.clone())
            .collect())
    };
    assert_eq!(labels(&["sfq"]).unwrap(), ["sfq"], "exactly the run labelled sfq");
    assert_eq!(
        labels(&["wfq"]).unwrap(),
        ["sfq"],
        "an alias stands for its policy"
    );
    assert_eq!(labels(&["sfq-frag4k"]).unwrap(), ["sfq-frag4k"]);
    assert_eq!(
        labels(&["wrr"]).unwrap(),
        ["w"],
        "no run labelled wrr: the policy's runs"
    );
    assert_eq!(labels(&[]).unwrap().len(), 4);
    let err = labels(&["drr"]).unwrap_err();
    assert!(
        err.contains("no policy `drr`") && err.contains("sfq-frag4k"),
        "{err}"
    );
}

/// RSS steering: only on processing units, only the two known forms, a
/// ring only with it, and at least one descriptor and one flow.
#[test]
fn bad_steering_and_flows() {
    check(
        &with_line(9, r#"steering = "rss""#),
        9,
        "steering",
        "only applies to pu engines",
    );
    let pu = |line: &str| {
        let text = BASE
            .replace("kind = \"accelerator\"", "kind = \"pu\"")
            .replace("slots = 1", line);
        Scenario::parse(&text, "bad.toml").expect_err(line)
    };
    check(
        &pu(r#"steering = "hash""#),
        9,
        "steering",
        "unknown steering `hash`",
    );
    check(&pu("ring = 8"), 9, "ring", "only applies with steering = \"rss\"");
    check(
        &pu("steering = \"rss\"\nring = 0"),
        10,
        "ring",
        "must be at least 1",
    );
    check(
        &with_line(17, "size = \"64B\"\nflows = 0"),
        18,
        "flows",
        "must be at least 1",
    );
    check(
        &with_line(17, "size = \"64B\"\nflow_life = \"1s\""),
        18,
        "flow_life",
        "needs `flows`",
    );
    check(
        &with_line(17, "size = \"64B\"\nflows = 4\nflow_life = \"0s\""),
        19,
        "flow_life",
        "must be positive",
    );
}

/// A workload's flow-queue keys are checked where they are written.
#[test]
fn a_workloads_queue_keys_are_checked_at_their_line() {
    check(&with_line(17, "priority = 300"), 17, "priority", "from 0 to 255");
    check(&with_line(17, "weight = 0"), 17, "weight", "between");
    check(
        &with_line(17, "queue_cap = 2048"),
        17,
        "queue_cap",
        "the tenant's queue_cap (1024)",
    );
}

/// Several workloads of one tenant are its flow queues, in file order.
#[test]
fn several_workloads_are_the_tenants_flow_queues() {
    let text = BASE.replace("[tenant.workload]", "[[tenant.workload]]")
        + "[[tenant.workload]]\nengine = \"acc\"\narrival = { closed = 1 }\npriority = 2\nweight = 3\nqueue_cap = 8\n";
    let s = Scenario::parse(&text, "ok.toml").expect("valid");
    let t = &s.tenants[0];
    assert_eq!(t.workloads.len(), 2);
    let flows = &t.slo.flows;
    assert_eq!(flows.len(), 2);
    assert_eq!(
        (flows[0].weight, flows[0].priority, flows[0].queue_cap),
        (1.0, 0, None)
    );
    assert_eq!(
        (flows[1].weight, flows[1].priority, flows[1].queue_cap),
        (3.0, 2, Some(8))
    );
}
