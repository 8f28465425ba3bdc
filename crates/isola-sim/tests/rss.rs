//! RSS steering (`steering = "rss"`) against closed-form queueing results:
//! flows hashed to distinct cores are independent M/M/1 queues, flows
//! hashed to one core share it as one M/M/1 queue of their summed rate, and
//! a core's full ring drops packets as M/M/1/K blocks them.

use isola_model::{PolicyResult, Scenario};
use isola_sim::rss::rss_hash;
use isola_sim::simulate;
use isola_sim::workload::packet_tuple;
use std::net::Ipv4Addr;

/// Source address of tenant `t`'s one flow, number `k` of the addresses tried.
fn src(t: usize, k: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, k, t as u8, 1)
}

/// The core (of `cores`) tenant `t`'s one flow hashes to with source `ip`:
/// the tuple the simulator gives packet 0 of a workload with `flows = 1`.
fn core_of(t: usize, ip: Ipv4Addr, cores: u64) -> u64 {
    let flow = isola_model::scenario::FlowMatch {
        src_ip: Some(ip),
        ..Default::default()
    };
    rss_hash(&packet_tuple(Some(&flow), t, 0)) % cores
}

/// Two tenants, one flow each with the given source addresses, Poisson at
/// `lambda` each, exponential 1 us service, on `cores` RSS cores with rings
/// of `ring`, for `count` packets each.
fn run(ips: [Ipv4Addr; 2], lambda: f64, cores: u32, ring: u32, count: u64) -> PolicyResult {
    let mut text = format!(
        "[run]\nseed = 5\npolicies = [\"fcfs\"]\n\n[[engine]]\nname = \"cores\"\nkind = \"pu\"\nslots = {cores}\n\
         steering = \"rss\"\nring = {ring}\nservice = {{ dist = \"exponential\", mean = \"1us\" }}\n"
    );
    for (t, ip) in ips.iter().enumerate() {
        text += &format!(
            "\n[[tenant]]\nname = \"t{t}\"\nqueue_cap = 1048576\n[tenant.workload]\nengine = \"cores\"\n\
             arrival = {{ poisson = \"{lambda}/s\" }}\ncount = {count}\nflows = 1\nflow = {{ src_ip = \"{ip}\" }}\n"
        );
    }
    let scenario = Scenario::parse(&text, "rss.toml").expect("valid scenario");
    simulate(&scenario, &[], None, |_, _, _| {})
        .expect("runs")
        .policies
        .remove(0)
}

fn within(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got / want - 1.0).abs() <= tol,
        "{what}: {got:.4}, theory {want:.4} ({:+.2}%)",
        (got / want - 1.0) * 100.0
    );
}

/// Two flows on two distinct cores of two, each at rho 0.5: two M/M/1
/// queues, W = 1 / (mu - lambda) = 2 us each (within 3%: 500k customers at
/// rho 0.5 decorrelate fast; see tests/queueing.rs), nothing dropped.
#[test]
fn flows_on_distinct_cores_are_independent_mm1_queues() {
    let a = src(0, 0);
    let b = (0..=255)
        .map(|k| src(1, k))
        .find(|&ip| core_of(1, ip, 2) != core_of(0, a, 2))
        .expect("some address hashes to the other core");
    let r = run([a, b], 500_000.0, 2, 1 << 20, 500_000);
    for t in &r.tenants {
        assert_eq!(t.completed, 500_000);
        within(
            t.latency_ns.mean,
            2_000.0,
            0.03,
            "M/M/1 rho 0.5, mean sojourn (ns)",
        );
    }
}

/// Two flows hashed to the same core of two share it although the other
/// core idles: one M/M/1 queue at 2 x 0.3 = rho 0.6, W = 1 / (1 - 0.6) us =
/// 2.5 us for both, where two cores shared (M/M/2) would give 1.56 us.
#[test]
fn flows_on_one_core_share_it() {
    let a = src(0, 0);
    let b = (0..=255)
        .map(|k| src(1, k))
        .find(|&ip| core_of(1, ip, 2) == core_of(0, a, 2))
        .expect("some address hashes to the same core");
    let r = run([a, b], 300_000.0, 2, 1 << 20, 500_000);
    for t in &r.tenants {
        within(
            t.latency_ns.mean,
            2_500.0,
            0.03,
            "shared core, rho 0.6, mean sojourn (ns)",
        );
    }
}

/// A ring of 3 descriptors and the core: M/M/1/K with K = 4 at rho 0.8
/// (one flow, the other idle) blocks P_K = (1 - rho) rho^K / (1 - rho^(K+1))
/// = 0.1219 of arrivals (within 5%, about 4 standard errors at 200k).
#[test]
fn a_full_ring_drops_as_mm1k_blocks() {
    let a = src(0, 0);
    let r = run([a, a], 400_000.0, 1, 3, 100_000);
    // Both flows on the one core: rho = 0.8 in all.
    let (done, rejected): (u64, u64) = r
        .tenants
        .iter()
        .fold((0, 0), |(d, j), t| (d + t.completed, j + t.rejected));
    assert_eq!(done + rejected, 200_000);
    let rho: f64 = 0.8;
    let k = 4;
    let want = (1.0 - rho) * rho.powi(k) / (1.0 - rho.powi(k + 1));
    within(rejected as f64 / 200_000.0, want, 0.05, "blocking probability");
}
