//! What an embedder adds to a run (`RunHooks`): its own policies, which a
//! run may name, and a stop flag that ends the run with `SimError::Stopped`.

use isola_core::policy::fcfs;
use isola_core::PolicyInfo;
use isola_model::scenario::PolicyRun;
use isola_model::Scenario;
use isola_sim::{run_policy, run_policy_with, RunHooks, SimError};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

fn scenario() -> Scenario {
    let text = r#"
        [run]
        seed = 3
        policies = ["fcfs"]

        [[engine]]
        name = "acc"
        kind = "accelerator"
        slots = 2
        service = { dist = "exponential", mean = "1us" }

        [[tenant]]
        name = "a"
        [tenant.workload]
        engine = "acc"
        arrival = { poisson = "700k/s" }
        count = 300000

        [[tenant]]
        name = "b"
        weight = 3
        [tenant.workload]
        engine = "acc"
        arrival = { poisson = "900k/s" }
        count = 300000
    "#;
    Scenario::parse(text, "hooks.toml").expect("valid scenario")
}

fn run_of(name: &str) -> PolicyRun {
    PolicyRun {
        name: name.into(),
        label: name.into(),
        params: BTreeMap::new(),
        split: None,
        on: Vec::new(),
    }
}

/// FCFS under another name: a policy the scenario checker does not know.
const RENAMED: PolicyInfo = PolicyInfo {
    name: "first-come",
    aliases: &[],
    ..fcfs::INFO
};

#[test]
fn a_registered_policy_runs_as_the_built_in_one_it_copies() {
    let s = scenario();
    let builtin = run_policy(&s, &run_of("fcfs"), 3, None, None).expect("runs");
    let hooks = RunHooks {
        policies: &[RENAMED],
        stop: None,
    };
    let registered = run_policy_with(&s, &run_of("first-come"), 3, None, None, hooks).expect("runs");
    assert_eq!(registered.policy, "first-come");
    assert_eq!(registered.tenants, builtin.tenants);
    assert_eq!(registered.series, builtin.series);
    // Without the hook, the name is unknown: a typed error, no panic.
    let unknown = run_policy(&s, &run_of("first-come"), 3, None, None);
    assert!(matches!(unknown, Err(SimError::Build(_))), "{unknown:?}");
}

#[test]
fn the_stop_flag_ends_a_run_at_the_next_progress_report() {
    let s = scenario();
    let stop = AtomicBool::new(false);
    let mut reports = 0;
    let mut progress = |_: f64| {
        reports += 1;
        stop.store(true, Ordering::Relaxed);
    };
    let hooks = RunHooks {
        policies: &[],
        stop: Some(&stop),
    };
    let result = run_policy_with(&s, &run_of("fcfs"), 3, None, Some(&mut progress), hooks);
    assert_eq!(result, Err(SimError::Stopped));
    assert_eq!(reports, 1, "stopped at the first report after the flag rose");
    // Raised before the run, it stops the run too; lowered, the run completes.
    let raised = AtomicBool::new(true);
    let hooks = RunHooks {
        policies: &[],
        stop: Some(&raised),
    };
    assert_eq!(
        run_policy_with(&s, &run_of("fcfs"), 3, None, None, hooks),
        Err(SimError::Stopped)
    );
    raised.store(false, Ordering::Relaxed);
    let hooks = RunHooks {
        policies: &[],
        stop: Some(&raised),
    };
    let done = run_policy_with(&s, &run_of("fcfs"), 3, None, None, hooks).expect("runs");
    assert_eq!(done.tenants[0].completed + done.tenants[1].completed, 600_000);
}
