//! Ingress matching in a run: packets go to the tenant whose rule matches
//! their 5-tuple; unmatched packets are dropped at ingress and counted.

use isola_model::Scenario;
use isola_sim::simulate;

#[test]
fn packets_follow_matching_rules() {
    let text = r#"
        [run]
        policies = ["fcfs"]

        [[engine]]
        name = "pu"
        kind = "pu"
        slots = 4
        service = { dist = "constant", time = "100ns" }

        [[tenant]]
        name = "kvs"
        match = { dst_port = 11211, proto = 17 }
        [tenant.workload]
        engine = "pu"
        arrival = { poisson = "1M/s" }
        count = 1000
        flow = { dst_port = 11211, proto = 17 }

        [[tenant]]
        name = "mirror"
        match = { src_ip = "10.0.9.9" }
        [tenant.workload]
        engine = "pu"
        arrival = { poisson = "1M/s" }
        count = 0

        [[tenant]]
        name = "scanner"
        [tenant.workload]
        engine = "pu"
        arrival = { poisson = "1M/s" }
        count = 300
        flow = { src_ip = "10.0.9.9" }

        [[tenant]]
        name = "stray"
        [tenant.workload]
        engine = "pu"
        arrival = { poisson = "1M/s" }
        count = 200
        flow = { dst_port = 9, proto = 6 }
    "#;
    let s = Scenario::parse(text, "ingress.toml").unwrap();
    let r = simulate(&s, &[], None, |_, _, _| {}).unwrap().policies.remove(0);
    let t = |n: &str| r.tenants.iter().find(|t| t.name == n).unwrap();
    assert_eq!(t("kvs").completed, 1000);
    // The scanner's packets match the mirror's rule and run as the mirror's.
    assert_eq!(t("mirror").completed, 300);
    assert_eq!(t("scanner").completed, 0);
    // Nobody's rule matches the stray flow: dropped at ingress, counted.
    assert_eq!(t("stray").unmatched, 200);
    assert_eq!(t("stray").completed, 0);
}
