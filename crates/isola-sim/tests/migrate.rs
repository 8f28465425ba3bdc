//! Host migration end to end (a workload's `migrate`): a tenant that
//! overloads the DPU's one core moves to the host's and the two cores
//! together serve what one could not; one that does not overload it never
//! moves; a moved request also crosses the PCIe link.

use isola_model::{PolicyResult, Scenario};
use isola_sim::simulate;

/// One tenant at `rate` tasks/s (evenly spaced), 1 us each on one DPU core,
/// for 10 ms; with `migrate`, it may move to one host core over a PCIe link.
fn run(rate: &str, migrate: bool) -> PolicyResult {
    let migrate = if migrate {
        r#"migrate = { to = "host", via = "pcie", up = "20us", down = "2us", every = "100us" }"#
    } else {
        ""
    };
    let text = format!(
        r#"
        [run]
        seed = 3
        duration = "10ms"
        policies = ["fcfs"]

        [[engine]]
        name = "arm"
        kind = "pu"
        slots = 1
        [[engine]]
        name = "host"
        kind = "pu"
        slots = 1
        [[engine]]
        name = "pcie"
        kind = "dma"
        slots = 4
        bandwidth = "64Gbit/s"

        [[tenant]]
        name = "a"
        queue_cap = 100000
        [tenant.workload]
        engine = "arm"
        size = "64B"
        arrival = {{ constant = "{rate}" }}
        service = {{ dist = "constant", time = "1us" }}
        {migrate}
        "#
    );
    let s = Scenario::parse(&text, "migrate.toml").unwrap();
    simulate(&s, &[], None, |_, _, _| {}).unwrap().policies.remove(0)
}

/// 1.5 M/s on a 1 us core: alone it completes at most one task a
/// microsecond, 10,000 in 10 ms; moved to the host (another 1 us core, a
/// 64 B crossing of 8 ns before it) the tenant's new requests are served
/// there while its DPU queue drains, so more than 10,000 complete.
#[test]
fn an_overloading_tenant_moves_and_gets_more_served() {
    let (alone, moved) = (run("1500k/s", false), run("1500k/s", true));
    assert!(
        alone.tenants[0].completed <= 10_001,
        "{}",
        alone.tenants[0].completed
    );
    assert!(alone.migrations.is_empty(), "no workload migrates");
    assert!(moved.migrations[0] >= 1, "{:?}", moved.migrations);
    assert!(
        moved.tenants[0].completed > 10_500,
        "{} completed with the host",
        moved.tenants[0].completed
    );
}

/// 0.5 M/s evenly spaced never queues behind itself on a 1 us core: the
/// queued cost per slot never passes `up`, nothing moves, and the run is
/// the one without `migrate`, figure for figure.
#[test]
fn a_tenant_under_capacity_never_moves() {
    let (alone, with) = (run("500k/s", false), run("500k/s", true));
    assert_eq!(with.migrations, vec![0]);
    assert_eq!(alone.tenants, with.tenants);
}
