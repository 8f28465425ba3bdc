//! The simulator against closed-form queueing results, before any paper
//! result is trusted: M/M/1 at rho 0.5, 0.8 and 0.9, M/D/1 at 0.8 and M/M/4 at
//! 0.8, each mean sojourn within 2% of theory, and Little's law on every run.
//!
//! Run lengths: successive sojourn times are correlated, more so near
//! saturation, so the standard error of the mean falls slowly. Measured at
//! rho = 0.9 over seeds 1-8: 2M customers spread about 0.8% (one seed of 6M
//! was off by 2.4%); over seeds 1-6, 16M customers spread about 0.5%, so the
//! 2% bound is about 4 standard errors: a failure means the simulator is
//! wrong, not unlucky. Lighter loads decorrelate faster and need fewer.

use isola_model::{PolicyResult, Scenario};
use isola_sim::simulate;

/// Simulates `servers` FIFO servers fed by Poisson arrivals at `lambda`
/// tasks/s with `service` (a TOML service table), for `count` customers.
fn queue(lambda: f64, service: &str, servers: u32, count: u64) -> PolicyResult {
    let text = format!(
        r#"
        [run]
        seed = 11
        policies = ["fcfs"]
        window = "10ms"

        [[engine]]
        name = "server"
        kind = "accelerator"
        slots = {servers}
        queue_depth = {servers}
        service = {service}

        [[tenant]]
        name = "customers"
        queue_cap = 1048576
        [tenant.workload]
        engine = "server"
        arrival = {{ poisson = "{lambda}/s" }}
        count = {count}
        "#
    );
    let scenario = Scenario::parse(&text, "queueing.toml").expect("valid scenario");
    let mut report = simulate(&scenario, &[], None, |_, _, _| {}).expect("runs");
    let r = report.policies.remove(0);
    assert_eq!(r.tenants[0].completed, count, "every customer is served");
    little(&r);
    r
}

/// Little's law: time-average number in system = throughput x mean sojourn.
fn little(r: &PolicyResult) {
    let t = &r.tenants[0];
    let lambda_w = t.throughput_ops * t.latency_ns.mean / 1e9;
    let rel = (r.mean_in_system / lambda_w - 1.0).abs();
    assert!(
        rel < 0.005,
        "Little: L = {} but lambda x W = {lambda_w}",
        r.mean_in_system
    );
}

fn within(got: f64, want: f64, tol: f64, what: &str) {
    let rel = got / want - 1.0;
    assert!(
        rel.abs() <= tol,
        "{what}: mean sojourn {got:.1} ns, theory {want:.1} ns ({:+.2}%)",
        rel * 100.0
    );
}

const EXP_1US: &str = r#"{ dist = "exponential", mean = "1us" }"#;

#[test]
fn mm1_at_rho_half() {
    // W = 1 / (mu - lambda) = 1 / (1M - 0.5M) s = 2 us.
    let r = queue(500_000.0, EXP_1US, 1, 2_000_000);
    within(r.tenants[0].latency_ns.mean, 2_000.0, 0.02, "M/M/1 rho=0.5");
}

#[test]
fn mm1_at_rho_0_8() {
    let r = queue(800_000.0, EXP_1US, 1, 6_000_000);
    within(r.tenants[0].latency_ns.mean, 5_000.0, 0.02, "M/M/1 rho=0.8");
}

#[test]
fn mm1_at_rho_0_9() {
    let r = queue(900_000.0, EXP_1US, 1, 16_000_000);
    within(r.tenants[0].latency_ns.mean, 10_000.0, 0.02, "M/M/1 rho=0.9");
}

#[test]
fn md1_at_rho_0_8() {
    // Pollaczek-Khinchine with deterministic service: W = 1/mu + rho / (2 mu (1 - rho)) = 1 + 2 us.
    let r = queue(800_000.0, r#"{ dist = "constant", time = "1us" }"#, 1, 4_000_000);
    within(r.tenants[0].latency_ns.mean, 3_000.0, 0.02, "M/D/1 rho=0.8");
}

/// Erlang C: probability that an arrival waits in M/M/c with offered load `a`.
fn erlang_c(c: u32, a: f64) -> f64 {
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..c {
        term *= a / k as f64;
        sum += term;
    }
    let last = term * a / c as f64 * c as f64 / (c as f64 - a);
    last / (sum + last)
}

#[test]
fn mm4_at_rho_0_8() {
    // lambda = 3.2M/s, mu = 1M/s per server: W = 1/mu + C(4, 3.2) / (4 mu - lambda).
    let c = erlang_c(4, 3.2);
    assert!((c - 0.5964).abs() < 1e-3, "Erlang C sanity: {c}");
    let want = 1_000.0 + c / (4e6 - 3.2e6) * 1e9;
    let r = queue(3_200_000.0, EXP_1US, 4, 8_000_000);
    within(r.tenants[0].latency_ns.mean, want, 0.02, "M/M/4 rho=0.8");
}
