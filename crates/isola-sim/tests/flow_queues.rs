//! A tenant's workloads as its flow queues in the simulator: written as
//! one table or an array of one, a workload runs the same; several share
//! their tenant's turn by their weights (closed form); a latency workload
//! with a higher priority keeps its latency beside its own tenant's bulk
//! workload, which waits.

use isola_model::{PolicyResult, Scenario};
use isola_sim::simulate;

fn run(text: &str) -> Vec<PolicyResult> {
    let scenario = Scenario::parse(text, "flows.toml").expect("valid scenario");
    simulate(&scenario, &[], None, |_, _, _| {})
        .expect("runs")
        .policies
}

const ENGINE: &str = r#"
[run]
seed = 3
duration = "200ms"
policies = ["drr", "sfq", "wlbvt", "bvt", "mclock"]

[[engine]]
name = "acc"
kind = "accelerator"
slots = 1
queue_depth = 1
service = { dist = "constant", time = "100us" }
"#;

/// `[tenant.workload]` and `[[tenant.workload]]` with one entry are the
/// same tenant: every figure of the run is equal.
#[test]
fn one_workload_runs_the_same_written_either_way() {
    let tenant = |header: &str| {
        format!(
            "{ENGINE}\n[[tenant]]\nname = \"a\"\n{header}\nengine = \"acc\"\nsize = \"4KiB\"\n\
             arrival = {{ poisson = \"6k/s\" }}\n[[tenant]]\nname = \"b\"\n{header}\nengine = \"acc\"\n\
             arrival = {{ closed = 2 }}\n"
        )
    };
    let table = run(&tenant("[tenant.workload]"));
    let array = run(&tenant("[[tenant.workload]]"));
    assert_eq!(table, array);
}

/// Tenant `a`'s two bulk workloads of weights 1 and 3 against tenant `b`'s
/// one, all backlogged with equal tasks: 1/8, 3/8 and 1/2 of the engine.
#[test]
fn a_tenants_workloads_share_its_turn_by_their_weights() {
    let text = format!(
        "{ENGINE}\n[[tenant]]\nname = \"a\"\n\
         [[tenant.workload]]\nengine = \"acc\"\narrival = {{ closed = 4 }}\nweight = 1\n\
         [[tenant.workload]]\nengine = \"acc\"\narrival = {{ closed = 4 }}\nweight = 3\n\
         [[tenant]]\nname = \"b\"\n[tenant.workload]\nengine = \"acc\"\narrival = {{ closed = 4 }}\n"
    );
    for r in run(&text) {
        let a = &r.tenants[0];
        let total = a.throughput_ops + r.tenants[1].throughput_ops;
        let got = [
            a.flows[0].throughput_ops / total,
            a.flows[1].throughput_ops / total,
            r.tenants[1].throughput_ops / total,
        ];
        for (g, want) in got.iter().zip([0.125, 0.375, 0.5]) {
            assert!((g - want).abs() < 0.01, "{}: {got:?}", r.policy);
        }
    }
}

/// Tenant `a` sends a 1 us task every 2 ms (priority 1) beside its own
/// bulk workload (8 tasks of 100 us kept queued), and tenant `b` keeps 8
/// bulk tasks queued: a latency task waits at most for the task in service
/// and one of `b`'s (2 x 100 us); `a`'s own bulk tasks wait behind their
/// queue.
#[test]
fn a_latency_workload_keeps_its_latency_beside_its_own_bulk_workload() {
    let text = format!(
        "{ENGINE}\n[[tenant]]\nname = \"a\"\n\
         [[tenant.workload]]\nengine = \"acc\"\narrival = {{ closed = 8 }}\n\
         [[tenant.workload]]\nengine = \"acc\"\narrival = {{ constant = \"500/s\" }}\npriority = 1\n\
         service = {{ dist = \"constant\", time = \"1us\" }}\n\
         [[tenant]]\nname = \"b\"\n[tenant.workload]\nengine = \"acc\"\narrival = {{ closed = 8 }}\n"
    );
    for r in run(&text) {
        let a = &r.tenants[0];
        let (bulk, latency) = (&a.flows[0], &a.flows[1]);
        assert!(
            latency.completed >= 90,
            "{}: {} latency tasks",
            r.policy,
            latency.completed
        );
        assert!(
            latency.latency_ns.max <= 201_000,
            "{}: a latency task took {} ns",
            r.policy,
            latency.latency_ns.max
        );
        assert!(
            bulk.latency_ns.p50 >= 8 * 100_000,
            "{}: the bulk workload's tasks waited only {} ns",
            r.policy,
            bulk.latency_ns.p50
        );
    }
}
