//! Scenarios with DMA and egress engines and pipelines, live (`isola run`):
//! every task through every stage once, the egress sink receiving every
//! byte sent, and OSMOSIS' DMA head-of-line blocking in the paper's
//! direction on this machine's real copies.

use isola_experiments::live::run_live;
use isola_model::{PolicyResult, Scenario, SimReport};

fn tenant<'a>(p: &'a PolicyResult, name: &str) -> &'a isola_model::TenantResult {
    p.tenants.iter().find(|t| t.name == name).unwrap()
}

/// A processing unit's `write-out` kernel, a DMA write to host memory and
/// an egress send, for a fixed count of tasks: each completes once,
/// under WRR whole and in 256-byte fragments, and the run's sink gets
/// every byte (the run warns otherwise).
#[test]
fn a_three_stage_pipeline_runs_every_task_once() {
    let text = r#"
[run]
policies = ["wrr", { name = "wrr", label = "wrr-frag256", split = "256B" }]

[[engine]]
name = "pu"
kind = "pu"
slots = 2
clock = "1GHz"

[[engine]]
name = "axi"
kind = "dma"
slots = 1
bandwidth = "512Gbit/s"
max_payload = "4KiB"

[[engine]]
name = "nic"
kind = "egress"
slots = 1
bandwidth = "100Gbit/s"

[[tenant]]
name = "a"
[tenant.workload]
pipeline = ["pu", "axi", "nic"]
op = "write-out"
size = "3000B"
arrival = { closed = 4 }
count = 200
service = { dist = "cycles", base = 100, per_byte = 0 }

[[tenant]]
name = "b"
[tenant.workload]
pipeline = ["axi", "nic"]
op = "generic"
size = "700B"
arrival = { poisson = "2k/s" }
count = 100
direction = "write"
"#;
    let scenario = Scenario::parse(text, "pipeline.toml").unwrap();
    let report: SimReport = run_live(&scenario, &[], None, &mut |_, _, _| {}).unwrap();
    assert_eq!(report.policies.len(), 2);
    for p in &report.policies {
        for (name, count) in [("a", 200), ("b", 100)] {
            let t = tenant(p, name);
            assert_eq!(
                (t.completed, t.rejected, t.aborted, t.incomplete),
                (count, 0, 0, 0),
                "{}: {t:?}",
                p.policy
            );
        }
        assert!(
            p.warnings.iter().all(|w| !w.contains("sink")),
            "{}: {:?}",
            p.policy,
            p.warnings
        );
    }
}

/// OSMOSIS Figure 10, live: the victim's 64-byte writes queue behind the
/// congestor's 4 KiB ones on the one DMA engine; under FCFS it waits for
/// every congestor write queued before it, under WRR with 512-byte
/// fragments for at most one fragment. With fragmentation it must keep up
/// with its arrivals at a lower mean latency than under FCFS (measured
/// figures: docs/perf.md).
#[test]
fn the_dma_victim_is_faster_with_fragmentation_than_fcfs() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/osmosis-dma-hol.toml"
    );
    let mut scenario = Scenario::load(path).unwrap();
    // Without the solo runs: the comparison is between the two policies.
    scenario.run.solo = false;
    let only = ["fcfs".to_string(), "wrr-frag512".to_string()];
    let report = run_live(&scenario, &only, None, &mut |_, _, _| {}).unwrap();
    let victim = |label: &str| {
        let p = report.policies.iter().find(|p| p.policy == label).unwrap();
        assert!(
            p.warnings.iter().any(|w| w.contains("slowed down")),
            "the run says it was slowed: {:?}",
            p.warnings
        );
        tenant(p, "victim").clone()
    };
    let (fcfs, frag) = (victim("fcfs"), victim("wrr-frag512"));
    eprintln!(
        "victim mean / p99 latency: fcfs {} / {} ns, wrr-frag512 {} / {} ns; completed {} / {}",
        fcfs.latency_ns.mean,
        fcfs.latency_ns.p99,
        frag.latency_ns.mean,
        frag.latency_ns.p99,
        fcfs.completed,
        frag.completed
    );
    // Fragmented, the victim keeps up with its arrivals (about 5,000 over
    // the slowed run; the few in flight at the end are cut off either way).
    assert!(frag.completed > 4500, "{frag:?}");
    assert!(
        frag.latency_ns.mean < fcfs.latency_ns.mean,
        "victim mean latency: wrr-frag512 {} ns, fcfs {} ns",
        frag.latency_ns.mean,
        fcfs.latency_ns.mean
    );
}
