//! Batching in the simulator: a batch is served as one piece of work the
//! size of its tasks together, so an engine whose service has a fixed part
//! per dispatch carries up to `tasks` times the small tasks (closed form:
//! N / (base + N x per_byte x size) a second against 1 / (base + per_byte
//! x size)); with a `wait`, a lone task waits at most that long for its
//! batch to fill; and every task still completes on its own.

use isola_model::{Scenario, TenantResult};
use isola_sim::simulate;

/// 1 us per dispatch plus 1 ns a byte: a 64 B task takes 1,064 ns alone.
const BASE_NS: f64 = 1_000.0;
const PER_BYTE_NS: f64 = 1.0;
const SIZE: f64 = 64.0;

fn run(batch: &str, rate: &str) -> TenantResult {
    run_with(batch, rate, "")
}

/// `run`, with `tenant` added to the tenant's table.
fn run_with(batch: &str, rate: &str, tenant: &str) -> TenantResult {
    let text = format!(
        r#"
[run]
seed = 7
duration = "100ms"
policies = ["fcfs"]

[[engine]]
name = "acc"
slots = 1
service = {{ dist = "affine", base = "1us", per_byte_ns = 1.0 }}
{batch}

[[tenant]]
name = "a"
queue_cap = 4096
{tenant}
[tenant.workload]
engine = "acc"
size = "64B"
arrival = {{ poisson = "{rate}" }}
"#
    );
    let scenario = Scenario::parse(&text, "batching.toml").expect("valid scenario");
    let mut result = simulate(&scenario, &[], None, |_, _, _| {}).expect("runs");
    result.policies.remove(0).tenants.remove(0)
}

#[test]
fn batches_carry_what_one_task_a_dispatch_cannot() {
    let alone = 1e9 / (BASE_NS + PER_BYTE_NS * SIZE);
    // 2 M tasks/s offered: twice what the engine serves one at a time.
    let one_by_one = run("", "2M/s");
    assert!(
        (one_by_one.throughput_ops / alone - 1.0).abs() < 0.03,
        "one task a dispatch: {:.0}/s, closed form {alone:.0}/s",
        one_by_one.throughput_ops
    );
    assert!(one_by_one.rejected > 0, "the queue overflows");
    let batched = run("batch = { tasks = 16 }", "2M/s");
    let capacity = 16.0 * 1e9 / (BASE_NS + PER_BYTE_NS * SIZE * 16.0);
    assert!(capacity > 2e6, "16-task batches carry {capacity:.0}/s");
    assert_eq!(batched.rejected, 0, "batches keep up");
    assert!(
        (batched.throughput_ops / 2e6 - 1.0).abs() < 0.03,
        "batched: {:.0}/s of 2M/s offered",
        batched.throughput_ops
    );
    // Each task completes on its own: the mean latency stays within a
    // few batches' service.
    assert!(batched.latency_ns.p99 < 20_000, "{:?}", batched.latency_ns);
}

#[test]
fn a_lone_task_waits_at_most_wait_for_its_batch() {
    // 100k tasks/s: about 2 arrive in a 20 us wait, never 16.
    let no_wait = run("batch = { tasks = 16 }", "100k/s");
    let wait = run(r#"batch = { tasks = 16, wait = "20us" }"#, "100k/s");
    assert!(no_wait.latency_ns.p50 < 3_000, "{:?}", no_wait.latency_ns);
    // A batch's first task waits the whole 20 us; the others less.
    assert!(wait.latency_ns.p50 > 5_000, "{:?}", wait.latency_ns);
    let most = 20_000 + (BASE_NS + PER_BYTE_NS * SIZE * 16.0) as u64;
    assert!(wait.latency_ns.max <= most + 2_000, "{:?}", wait.latency_ns);
    assert_eq!(
        wait.completed + wait.incomplete,
        no_wait.completed + no_wait.incomplete
    );
}

/// A tenant's per-task budget holds each task of a batch, not the batch:
/// 64 B tasks (1,064 ns each) under a 1.5 us budget that stops them are
/// never stopped, alone or batched 16 together (2,024 ns of device work a
/// batch, over the budget; 126 ns a task); a task whose share is over the
/// budget still is.
#[test]
fn a_budget_judges_each_task_of_a_batch() {
    let budget = "budget = \"1500ns\"\nbudget_action = \"stop\"";
    for batch in ["", "batch = { tasks = 16 }"] {
        let r = run_with(batch, "2M/s", budget);
        assert_eq!(r.aborted, 0, "{batch}: {r:?}");
        assert!(r.completed > 0);
    }
    // Under 100 ns even a full batch's share (2,024 ns / 16 = 126 ns) is
    // over: every task is stopped.
    let over = run_with(
        "batch = { tasks = 16 }",
        "2M/s",
        "budget = \"100ns\"\nbudget_action = \"stop\"",
    );
    assert!(over.aborted > 0 && over.completed == 0, "{over:?}");
}

#[test]
fn a_batch_key_out_of_range_is_refused_at_its_line() {
    for (batch, key) in [
        ("batch = { tasks = 1 }", "batch.tasks"),
        ("batch = { tasks = 4, bytes = \"0B\" }", "batch.bytes"),
        ("batch = { tasks = 4, size = 3 }", "size"),
    ] {
        let text = format!(
            "[run]\nduration = \"1ms\"\n[[engine]]\nname = \"acc\"\nservice = {{ dist = \"constant\", time = \"1us\" }}\n{batch}\n\
             [[tenant]]\nname = \"a\"\n[tenant.workload]\nengine = \"acc\"\narrival = {{ closed = 1 }}\n"
        );
        let err = Scenario::parse(&text, "bad.toml").expect_err(batch).to_string();
        assert!(err.contains(key) && err.contains("bad.toml:6"), "{batch}: {err}");
    }
}
