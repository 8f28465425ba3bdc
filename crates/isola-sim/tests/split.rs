//! An engine's split rule, as the scenario gives it, is the core's: with
//! `split_when = "always"` a lone tenant's large tasks are split (and pay
//! the per-dispatch cost of every subtask); with `"contended"` a tenant
//! alone runs them whole (ASTRAEA: isolation costs a lone application
//! nothing), and they are split again once another tenant is active.

use isola_model::Scenario;
use isola_sim::run_policy;

fn scenario(split_when: &str, second_tenant: bool) -> Scenario {
    let mut text = format!(
        r#"[run]
seed = 3
policies = [{{ name = "sfq", split = "64KiB" }}]

[[engine]]
name = "acc"
kind = "accelerator"
slots = 1
split_when = "{split_when}"
service = {{ dist = "affine", base = "10us", per_byte_ns = 0.1 }}

[[tenant]]
name = "large"
[tenant.workload]
engine = "acc"
size = "1MiB"
arrival = {{ closed = 1 }}
count = 50
"#
    );
    if second_tenant {
        text.push_str(
            r#"
[[tenant]]
name = "small"
[tenant.workload]
engine = "acc"
size = "4KiB"
arrival = { closed = 1 }
count = 2000
"#,
        );
    }
    Scenario::parse(&text, "split.toml").unwrap()
}

/// Mean latency of the `large` tenant's tasks, in ns.
fn large_mean(split_when: &str, second_tenant: bool) -> f64 {
    let s = scenario(split_when, second_tenant);
    let r = run_policy(&s, &s.run.policies[0], s.run.seed, None, None).unwrap();
    r.tenants[0].latency_ns.mean
}

#[test]
fn a_lone_tenant_is_split_only_when_the_rule_says_always() {
    // 1 MiB = 16 subtasks of 64 KiB: 15 extra dispatches of 10 us each.
    let whole = 10_000.0 + 0.1 * (1 << 20) as f64;
    let always = large_mean("always", false);
    let contended = large_mean("contended", false);
    // (Latencies are read off an HDR histogram: 0.1% precision.)
    let near = |a: f64, b: f64| (a - b).abs() / b < 0.002;
    assert!(
        near(contended, whole),
        "contended, alone: {contended} ns, whole {whole} ns"
    );
    assert!(near(always, whole + 150_000.0), "always, alone: {always} ns");
    // With a second tenant active, contended splits as always does: the
    // small tenant's tasks interleave with the large one's subtasks.
    let shared_contended = large_mean("contended", true);
    let shared_always = large_mean("always", true);
    assert!(
        (shared_contended - shared_always).abs() / shared_always < 0.05,
        "contended {shared_contended} ns vs always {shared_always} ns while shared"
    );
}
