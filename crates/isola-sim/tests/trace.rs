//! Trace replay: a tenant's tasks arrive at the trace's times with the
//! trace's sizes.

use isola_model::Scenario;
use isola_sim::simulate;

#[test]
fn replays_times_and_sizes_of_its_rows() {
    let dir = std::env::temp_dir().join(format!("isola-trace-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 1000 B at t=0 and 3000 B at t=10us for `a`; a row for someone else.
    std::fs::write(
        dir.join("t.csv"),
        "time_ns,tenant,op,bytes\n0,a,copy,1000\n10000,a,copy,3000\n5,b,copy,64\n",
    )
    .unwrap();
    let text = r#"
        [run]
        policies = ["fcfs"]
        [[engine]]
        name = "dma"
        kind = "egress"
        bandwidth = "8Gbit/s"       # 1 byte per ns
        packet_overhead = "0B"
        [[tenant]]
        name = "a"
        [tenant.workload]
        engine = "dma"
        arrival = { trace = "t.csv" }
    "#;
    let s = Scenario::parse(text, dir.join("s.toml")).unwrap();
    let r = simulate(&s, &[], None, |_, _, _| {}).unwrap().policies.remove(0);
    let a = &r.tenants[0];
    assert_eq!(a.completed, 2);
    // Each task is served alone: latency = its size in ns.
    assert_eq!(a.latency_ns.max, 3000, "{:?}", a.latency_ns);
    assert_eq!(a.latency_ns.mean, 2000.0);
    // Last completion at 10us + 3us.
    assert_eq!(r.duration_ns, 13_000);
    std::fs::remove_dir_all(dir).ok();
}
