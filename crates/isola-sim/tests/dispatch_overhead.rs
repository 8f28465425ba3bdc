//! An engine's `dispatch_overhead`: each dispatch holds its lane that long
//! before its service starts (a live runtime's dispatch path, a doorbell),
//! charged to no tenant. Checked against closed forms: the M/D/1 whose
//! service is the task's plus the overhead, and DRR's equal service shares
//! when two tenants' tasks cost differently but pay the same overhead.

use isola_model::{PolicyResult, Scenario};
use isola_sim::simulate;

fn run(engine: &str, tenants: &str, policy: &str) -> PolicyResult {
    let text = format!(
        r#"
[run]
seed = 11
duration = "200ms"
policies = ["{policy}"]

[[engine]]
name = "pu"
kind = "pu"
slots = 1
{engine}

{tenants}
"#
    );
    let scenario = Scenario::parse(&text, "dispatch_overhead.toml").expect("valid scenario");
    let mut result = simulate(&scenario, &[], None, |_, _, _| {}).expect("runs");
    result.policies.remove(0)
}

/// One Poisson tenant of 600 ns tasks at 500k/s: with a 400 ns dispatch
/// path the lane is an M/D/1 with 1 us of service (rho 0.5, mean latency
/// W + D = rho D / (2 (1 - rho)) + D = 1.5 us); without, rho 0.3 and
/// 728.6 ns. The tenant's measured service stays 600 ns a task: 0.3 of
/// the run's time either way.
#[test]
fn the_lane_is_held_by_the_path_and_the_tenant_charged_its_service() {
    let tenant = r#"
[[tenant]]
name = "a"
queue_cap = 100000
[tenant.workload]
engine = "pu"
size = "64B"
arrival = { poisson = "500k/s" }
service = { dist = "constant", time = "600ns" }
"#;
    let md1 = |rho: f64, d: f64| rho * d / (2.0 * (1.0 - rho)) + d;
    for (overhead, expected) in [
        ("", md1(0.3, 600.0)),
        (r#"dispatch_overhead = "400ns""#, md1(0.5, 1000.0)),
    ] {
        let p = run(overhead, tenant, "fcfs");
        let a = &p.tenants[0];
        let mean = a.latency_ns.mean;
        assert!(
            (mean / expected - 1.0).abs() < 0.03,
            "`{overhead}`: mean latency {mean:.1} ns, M/D/1 {expected:.1} ns"
        );
        assert!(
            (a.throughput_ops / 500e3 - 1.0).abs() < 0.02,
            "{}",
            a.throughput_ops
        );
        assert_eq!(a.rejected, 0);
    }
}

/// Two backlogged tenants under DRR, a's tasks 1 us, b's 3 us, each
/// dispatch 2 us of path. DRR charges what each task was measured to use,
/// which is its service alone, so both get equal service time: a runs
/// three tasks for each of b's, one cycle being 3 x (1 + 2) + (3 + 2) =
/// 14 us: a 214.3k/s, b 71.4k/s. Were the path charged as service, b
/// would run 3 for a's 5 and take 0.64 of the service.
#[test]
fn drr_shares_service_not_the_path() {
    let tenant = |name: &str, cost: &str| {
        format!(
            r#"
[[tenant]]
name = "{name}"
queue_cap = 64
[tenant.workload]
engine = "pu"
size = "64B"
arrival = {{ poisson = "1M/s" }}
service = {{ dist = "constant", time = "{cost}" }}
"#
        )
    };
    let tenants = tenant("a", "1us") + &tenant("b", "3us");
    let p = run(r#"dispatch_overhead = "2us""#, &tenants, "drr");
    let (a, b) = (&p.tenants[0], &p.tenants[1]);
    assert!(
        (a.engine_time_share - 0.5).abs() < 0.02,
        "a's share {}",
        a.engine_time_share
    );
    assert!(
        (b.engine_time_share - 0.5).abs() < 0.02,
        "b's share {}",
        b.engine_time_share
    );
    let cycle = 14e-6;
    assert!(
        (a.throughput_ops * cycle / 3.0 - 1.0).abs() < 0.03,
        "a {}/s",
        a.throughput_ops
    );
    assert!(
        (b.throughput_ops * cycle - 1.0).abs() < 0.03,
        "b {}/s",
        b.throughput_ops
    );
}

/// The key is a compute engine's: on a DMA engine it is reported at its
/// line, and a bad duration names the key.
#[test]
fn the_key_is_checked_at_its_line() {
    let dma = r#"
[run]
policies = ["fcfs"]

[[engine]]
name = "link"
kind = "dma"
bandwidth = "8GB/s"
dispatch_overhead = "1us"

[[tenant]]
name = "a"
[tenant.workload]
engine = "link"
size = "4KiB"
arrival = { poisson = "1k/s" }
"#;
    let e = Scenario::parse(dma, "dma.toml").expect_err("a DMA engine has no dispatch_overhead");
    let text = e.to_string();
    assert!(
        text.contains("dma.toml:9:") && text.contains("dispatch_overhead"),
        "{text}"
    );
    assert!(text.contains("only applies to"), "{text}");
    let bad = dma
        .replace("kind = \"dma\"\nbandwidth = \"8GB/s\"", "kind = \"pu\"")
        .replace("1us", "-3us");
    let e = Scenario::parse(&bad, "pu.toml").expect_err("a negative duration");
    assert!(e.to_string().contains("dispatch_overhead"), "{e}");
}
