//! The policy written in this crate, registered with Isola's builder from
//! outside Isola: it runs by its name and alias, does what its rule says
//! (checked dispatch by dispatch), and cannot take a name already taken.

use isola_core::policy::PolicyError;
use isola_core::{
    AffineCost, BuildError, EngineId, EngineKind, EngineSpec, OpSpec, PolicyInfo, SchedulerBuilder, Slo,
    Task, TaskId, TenantId,
};
use isola_example_embed::STRICT_PRIORITY;
use std::collections::BTreeMap;
use std::sync::Arc;

fn builder(policy: &str) -> SchedulerBuilder {
    let mut b = SchedulerBuilder::new();
    b.register_policy(STRICT_PRIORITY);
    b.engine(EngineSpec::new(
        "e",
        EngineKind::Accelerator,
        1,
        Arc::new(AffineCost::constant(1_000)),
    ));
    b.tenant("low", Slo::default());
    b.tenant(
        "high",
        Slo {
            weight: 8.0,
            ..Slo::default()
        },
    );
    b.policy(policy, BTreeMap::new());
    b
}

fn task(id: u64, tenant: u32) -> Task {
    Task {
        id: TaskId(id),
        tenant: TenantId(tenant),
        engine: EngineId(0),
        op: OpSpec::named("generic"),
        bytes: 100,
        arrival: 0,
        deadline: None,
        predicted_cost: None,
        planner: None,
        flow: 0,
    }
}

/// With both tenants backlogged (the low one first), every dispatch goes to
/// the high-priority tenant until its channel is empty, then to the low
/// one: the rule, for every dispatch.
#[test]
fn the_higher_priority_drains_first_under_its_name_and_alias() {
    for name in ["strict-priority", "prio"] {
        let mut s = builder(name).build().unwrap();
        for i in 0..4 {
            s.submit(0, task(i, 0)).unwrap();
        }
        for i in 4..8 {
            s.submit(0, task(i, 1)).unwrap();
        }
        let mut order = Vec::new();
        let mut now = 0;
        while let Some(d) = s.next(now, EngineId(0)) {
            order.push(d.task.tenant.0);
            now += 1_000;
            s.complete(now, d.id, 1_000).unwrap();
        }
        assert_eq!(order, [1, 1, 1, 1, 0, 0, 0, 0], "{name}");
    }
}

/// A registered policy cannot take a built-in's name, nor another
/// registered policy's alias.
#[test]
fn a_taken_name_is_a_typed_error() {
    let clash = PolicyInfo {
        name: "wfq",
        aliases: &[],
        ..STRICT_PRIORITY
    };
    let mut b = builder("fcfs");
    b.register_policy(clash);
    match b.build() {
        Err(BuildError::Registry(PolicyError::NameTaken { name, by })) => {
            assert_eq!((name.as_str(), by.as_str()), ("wfq", "sfq"));
        }
        other => panic!("{other:?}"),
    }
    let twice = PolicyInfo {
        name: "another",
        aliases: &["prio"],
        ..STRICT_PRIORITY
    };
    let mut b = builder("fcfs");
    b.register_policy(twice);
    assert!(matches!(
        b.build(),
        Err(BuildError::Registry(PolicyError::NameTaken { .. }))
    ));
    // Unregistered, the name is unknown, with the known ones listed.
    let mut b = SchedulerBuilder::new();
    b.engine(EngineSpec::new(
        "e",
        EngineKind::Accelerator,
        1,
        Arc::new(AffineCost::constant(1)),
    ));
    b.tenant("t", Slo::default());
    b.policy("strict-priority", BTreeMap::new());
    let err = b.build().unwrap_err().to_string();
    assert!(err.contains("unknown policy `strict-priority`"), "{err}");
}

/// The example program embeds the runtime under the policy: every task of
/// both tenants completes, and the interactive tenant (priority 8) waits
/// less than the batch one.
#[test]
fn the_program_runs_both_tenants_under_the_policy() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_isola-example-embed"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mean = |tenant: &str| -> f64 {
        let line = text.lines().find(|l| l.starts_with(tenant)).expect(tenant);
        assert!(line.contains("16 tasks, 0 failed"), "{line}");
        let after = line.split("mean latency ").nth(1).unwrap();
        after.split(' ').next().unwrap().parse().unwrap()
    };
    assert!(mean("interactive:") < mean("batch:"), "{text}");
}
