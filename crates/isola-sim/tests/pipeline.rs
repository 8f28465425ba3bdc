//! A job through a pipeline of engines: each stage is served in turn, the
//! job is reported once, when its last stage completes, and its SLA is
//! judged against the whole pipeline's predicted service time.

use isola_model::Scenario;
use isola_sim::simulate;

#[test]
fn a_pipeline_job_is_reported_once_and_judged_as_a_whole() {
    let text = r#"
        [run]
        policies = ["fcfs"]

        [[engine]]
        name = "acc"
        kind = "accelerator"
        service = { dist = "constant", time = "100ns" }
        egress_ratio = 0.5

        [[engine]]
        name = "pu"
        kind = "pu"
        service = { dist = "affine", base = "60ns", per_byte_ns = 0.078125 }

        [[tenant]]
        name = "a"
        latency_multiple = 1.5
        [tenant.workload]
        pipeline = ["acc", "pu"]
        size = "1KiB"
        arrival = { closed = 1 }
        count = 100
    "#;
    let s = Scenario::parse(text, "pipeline.toml").unwrap();
    let r = simulate(&s, &[], None, |_, _, _| {}).unwrap();
    let t = &r.policies[0].tenants[0];
    assert_eq!((t.completed, t.incomplete, t.rejected), (100, 0, 0));
    // 100 ns on the accelerator, then 512 B (the accelerator's output) on
    // the PUs: 60 + 0.078125 x 512 = 100 ns. One job at a time.
    assert_eq!(t.latency_ns.max, 200);
    assert_eq!(t.flow_completion_ns, 100 * 200);
    assert_eq!(t.engine_shares["acc"], 1.0);
    assert_eq!(t.engine_shares["pu"], 1.0);
    // Throughput counts the job's input bytes once.
    assert_eq!(t.throughput_bps, 1024.0 / 200e-9);
    // The bound is 1.5 x the job's predicted service over both stages,
    // 100 + 140 ns (the prediction sizes every stage by the job's input):
    // 360 ns, which the 200 ns jobs meet. Judged against its last stage's
    // prediction alone (1.5 x 100 ns), every job would miss it.
    assert_eq!(t.sla_violation_rate, 0.0);
}
