//! A tenant's per-engine SLO reaches the simulated devices: a kernel cycle
//! limit set only on the processing units (`[tenant.on.pu] budget`) is the
//! PU watchdog there (OSMOSIS), and weights set per engine kind share that
//! kind's engines by them.

use isola_model::Scenario;
use isola_sim::run_policy;

fn scenario(tenant_extra: &str) -> Scenario {
    let text = format!(
        r#"[run]
seed = 2
policies = ["wlbvt"]

[[engine]]
name = "cores"
kind = "pu"
slots = 2
service = {{ dist = "constant", time = "2us" }}

[[tenant]]
name = "a"
{tenant_extra}
[tenant.workload]
engine = "cores"
size = "64B"
arrival = {{ closed = 4 }}
count = 400

[[tenant]]
name = "b"
[tenant.workload]
engine = "cores"
size = "64B"
arrival = {{ closed = 4 }}
count = 400
"#
    );
    Scenario::parse(&text, "per-engine.toml").unwrap()
}

#[test]
fn a_budget_set_on_the_pus_is_their_watchdog() {
    let run = |extra: &str| {
        let s = scenario(extra);
        let r = run_policy(&s, &s.run.policies[0], s.run.seed, None, None).unwrap();
        (r.tenants[0].aborted, r.tenants[0].completed, r.tenants[1].aborted)
    };
    assert_eq!(run(""), (0, 400, 0));
    assert_eq!(run("[tenant.on.pu]\nbudget = \"1us\""), (400, 0, 0));
    assert_eq!(run("[tenant.on.cores]\nbudget = \"3us\""), (0, 400, 0));
}

#[test]
fn weights_set_per_kind_share_that_kinds_engines() {
    // 400 tasks of 2 us each per tenant on 2 units. At weights 3:1, a gets
    // 3/4 of the units (1.5) while both are backlogged: its last task ends
    // at 400 x 2 us / 1.5 = 533 us; b then runs alone until all 800 tasks'
    // 1.6 ms of work is done on 2 units, at 800 us. At equal weights both
    // end at 800 us.
    let fct = |extra: &str| {
        let s = scenario(extra);
        let r = run_policy(&s, &s.run.policies[0], s.run.seed, None, None).unwrap();
        (
            r.tenants[0].flow_completion_ns as f64,
            r.tenants[1].flow_completion_ns as f64,
        )
    };
    let near = |got: f64, want: f64| (got - want).abs() / want < 0.01;
    let (a, b) = fct("[tenant.on.pu]\nweight = 3");
    assert!(
        near(a, 533_333.0) && near(b, 800_000.0),
        "weight 3 on the PUs: {a} ns, {b} ns"
    );
    let (a, b) = fct("");
    assert!(
        near(a, 800_000.0) && near(b, 800_000.0),
        "equal weights: {a} ns, {b} ns"
    );
}
