//! The live harness (`isola run`): scenarios run on the live runtime and
//! reported in the simulator's schema.

use isola_experiments::live::run_live;
use isola_model::{Scenario, SimReport, TenantResult};
use std::path::PathBuf;

/// A fresh folder for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("isola-live-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `scenario` (TOML) live with `files` written beside it.
fn run(name: &str, scenario: &str, files: &[(&str, &str)]) -> SimReport {
    let dir = scratch(name);
    for (file, text) in files {
        std::fs::write(dir.join(file), text).unwrap();
    }
    let file = dir.join("scenario.toml");
    std::fs::write(&file, scenario).unwrap();
    let loaded = Scenario::load(&file);
    let report = loaded.map(|s| run_live(&s, &[], None, &mut |_, _, _| {}));
    std::fs::remove_dir_all(&dir).ok();
    report.unwrap().unwrap()
}

/// One accelerator under FCFS, and the start of tenant `t`.
const ONE_ACCELERATOR: &str = r#"[run]
policies = ["fcfs"]

[[engine]]
name = "acc"
kind = "accelerator"
service = { dist = "affine", base = "1us", per_byte_ns = 1.0 }

[[tenant]]
name = "t"
"#;

/// Runs one tenant `t` with `tenant` (its SLO lines and workload table) on
/// one accelerator, `files` written beside the scenario, and returns that
/// tenant's result.
fn run_one_tenant(name: &str, tenant: &str, files: &[(&str, &str)]) -> TenantResult {
    let scenario = format!("{ONE_ACCELERATOR}{tenant}");
    let mut report = run(name, &scenario, files);
    report.policies.remove(0).tenants.remove(0)
}

/// A traced task whose operator differs from the workload's is built and
/// submitted with its own operator's parameters (an AES key, not the
/// workload's SHA ones), and every task completes.
#[test]
fn traced_operators_get_their_own_parameters() {
    let trace = "time_ns,tenant,op,bytes\n0,t,sha256,4096\n1000,t,aes-gcm-encrypt,4096\n2000,t,sha256,1024\n";
    let t = run_one_tenant(
        "trace",
        "[tenant.workload]\nengine = \"acc\"\nop = \"sha256\"\nsize = \"4KiB\"\narrival = { trace = \"trace.csv\" }\n",
        &[("trace.csv", trace)],
    );
    assert_eq!((t.completed, t.aborted), (3, 0), "{t:?}");
}

/// Live, a task over its tenant's service budget runs to its end but
/// counts as aborted, as the simulator's watchdog would abort it: not also
/// as completed.
#[test]
fn over_budget_tasks_count_once() {
    let t = run_one_tenant(
        "budget",
        "budget = \"1ns\"\n[tenant.workload]\nengine = \"acc\"\nop = \"sha256\"\nsize = \"64KiB\"\n\
         arrival = { closed = 1 }\ncount = 5\n",
        &[],
    );
    assert_eq!((t.completed, t.aborted), (0, 5), "{t:?}");
}

/// Each tenant's tasks go to its own engine, and a run with a duration is
/// that long by the wall clock, with what is unfinished counted as incomplete; its figures
/// are the run recorder's.
#[test]
fn tenants_go_to_their_engines_for_the_duration() {
    let report = run(
        "engines",
        r#"[run]
duration = "300ms"
policies = ["fcfs"]

[[engine]]
name = "e0"
kind = "accelerator"
service = { dist = "affine", base = "1us", per_byte_ns = 1.0 }

[[engine]]
name = "e1"
kind = "accelerator"
service = { dist = "affine", base = "1us", per_byte_ns = 1.0 }

[[tenant]]
name = "a"
[tenant.workload]
engine = "e0"
op = "sha256"
size = "256KiB"
arrival = { closed = 1 }

[[tenant]]
name = "b"
[tenant.workload]
engine = "e1"
op = "sha256"
size = "256KiB"
arrival = { closed = 1 }
"#,
        &[],
    );
    let p = &report.policies[0];
    // The wall time the run took: its duration, and the moment its last
    // tenant thread noticed the end.
    assert!(
        (300_000_000..400_000_000).contains(&p.duration_ns),
        "{}",
        p.duration_ns
    );
    // The run recorder's figures, as simulated: per-window series and the
    // time in the system; no index under demand (no backlogs live).
    assert!(!p.series.is_empty() && p.mean_in_system > 0.0, "{p:?}");
    assert!(p.series.iter().all(|w| w.jain_of_demand.is_none()));
    assert_eq!(p.mean_jain_of_demand(), None);
    for (i, engine) in ["e0", "e1"].iter().enumerate() {
        let t = &p.tenants[i];
        assert_eq!(t.engine_shares.get(*engine), Some(&1.0), "{t:?}");
        assert!(t.completed > 0);
        assert!(t.incomplete <= 1, "closed loop of one: at most one cut off");
    }
}

/// What has no live model is refused, saying what and why (DMA and egress
/// engines and pipelines run live: `tests/live_transfer.rs`; ingress
/// matching over packets: `tests/live_packets.rs`).
#[test]
fn what_has_no_live_model_is_refused() {
    let path = format!("{}/../../scenarios/mm1.toml", env!("CARGO_MANIFEST_DIR"));
    let scenario = Scenario::load(std::path::Path::new(&path)).unwrap();
    let err = isola_experiments::live::check_live(&scenario)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no real implementation"), "mm1.toml: {err}");
    // RSS steering exists only in the simulator: refused, not ignored.
    let rss = Scenario::parse(
        r#"[[engine]]
name = "cores"
kind = "pu"
slots = 2
steering = "rss"
service = { dist = "exponential", mean = "1us" }
[[tenant]]
name = "t"
[tenant.workload]
engine = "cores"
op = "crc32c"
arrival = { poisson = "1k/s" }
count = 10
"#,
        "rss.toml",
    )
    .unwrap();
    let err = isola_experiments::live::check_live(&rss).unwrap_err().to_string();
    assert!(err.contains("steering"), "rss.toml: {err}");
}

/// A workload's host migration (`migrate`) is modelled by the simulator
/// only: a live run refuses it rather than run it on fixed engines.
#[test]
fn live_refuses_host_migration() {
    let text = r#"
[run]
duration = "10ms"
[[engine]]
name = "arm"
kind = "pu"
slots = 2
service = { dist = "exponential", mean = "1us" }
[[engine]]
name = "host"
kind = "pu"
slots = 1
service = { dist = "exponential", mean = "1us" }
[[tenant]]
name = "t"
[tenant.workload]
engine = "arm"
op = "crc32c"
arrival = { poisson = "1k/s" }
migrate = { to = "host", up = "1ms", down = "100us", every = "1ms" }
"#;
    let s = isola_model::Scenario::parse(text, "migrate.toml").unwrap();
    let err = isola_experiments::live::check_live(&s).unwrap_err().to_string();
    assert!(err.contains("migrate") && err.contains("isola sim"), "{err}");
}

/// `isola sim` and `isola run` of one scenario go through the same
/// scheduling code: the calls the live run made on its core (submissions
/// and completions at their recorded times), replayed into the core the
/// simulator builds for the same scenario, give the very same dispatches:
/// which task, whole or which subtask, at every call. The scenario splits
/// while contended (ASTRAEA's rule, a setting of the engine), with ordered
/// subtasks (a hash chain) beside independent ones.
#[test]
fn the_simulators_core_makes_the_live_runs_decisions() {
    use isola_core::{PlannerRef, Subtask, SubtaskPlanner, Task};
    use std::sync::Arc;

    let text = r#"[run]
seed = 5
policies = [{ name = "sfq", split = "8KiB" }, { name = "drr", split = "8KiB" }]

[[engine]]
name = "acc"
kind = "accelerator"
slots = 1
queue_depth = 2
split_when = "contended"
contention_window = "2ms"
service = { dist = "affine", base = "2us", per_byte_ns = 0.5 }

[[tenant]]
name = "hashes"
weight = 4
[tenant.workload]
engine = "acc"
op = "sha256"
size = "48KiB"
arrival = { closed = 1 }
count = 30

[[tenant]]
name = "checksums"
[tenant.workload]
engine = "acc"
op = "crc32c"
size = "3KiB"
arrival = { closed = 2 }
count = 1000
"#;
    /// The operators' plans: equal ranges, ordered for the hash.
    struct Ranges(bool);
    impl SubtaskPlanner for Ranges {
        fn plan(&self, task: &Task, split: u64) -> Option<Vec<Subtask>> {
            Some(Subtask::ranges(task.id, task.bytes, split, self.0))
        }
    }
    let planners = [
        PlannerRef(Arc::new(Ranges(false))),
        PlannerRef(Arc::new(Ranges(true))),
    ];
    let scenario = Scenario::parse(text, "same-core.toml").unwrap();
    for run in &scenario.run.policies {
        // Every run must replay to the same dispatches. Whether a run also
        // splits depends on the host: the tenants' threads start one after
        // the other, and on a loaded machine the checksums may be done
        // before the hashes begin, so the hashes run alone, whole. Such a
        // run checks the replay but not splitting; up to three runs are
        // made until one overlaps.
        let mut seen = Vec::new();
        for attempt in 0..3 {
            let (result, calls) =
                isola_experiments::live::run_policy_live_logged(&scenario, run, 5 + attempt).unwrap();
            assert_eq!(result.tenants[0].completed + result.tenants[1].completed, 1030);
            let mut core = isola_sim::scheduler_for(&scenario, run).unwrap();
            let planner = |op: &str| Some(planners[(op == "sha256") as usize].clone());
            let done = isola_runtime::core_log::replay(&calls, &mut core, planner)
                .unwrap_or_else(|e| panic!("{}: {e}", run.label));
            seen.push((done.subtasks, done.whole));
            // Contended: hashes split; the checksums, smaller than a
            // subtask, whole.
            if done.subtasks > 0 && done.whole > 0 {
                break;
            }
        }
        assert!(
            seen.iter().any(|&(split, whole)| split > 0 && whole > 0),
            "{}: no run both split and ran whole tasks (subtasks, whole): {seen:?}",
            run.label
        );
    }
}

/// `solo = true` is honoured live as simulated: each tenant runs alone
/// first, and every policy's slowdowns are against those runs. Two closed
/// loops sharing one FCFS server each wait for the other's
/// task: a slowdown near 2 (closed form, equal service times). Each keeps
/// two tasks outstanding, so the server never idles for a tenant thread's
/// turn-around, alone (latency 2S) or shared (4S).
#[test]
fn solo_runs_give_slowdowns_live() {
    let tenant = |name: &str| {
        format!(
            "[[tenant]]\nname = \"{name}\"\n[tenant.workload]\nengine = \"acc\"\nop = \"sha256\"\n\
             size = \"4MiB\"\narrival = {{ closed = 2 }}\ncount = 30\n"
        )
    };
    let scenario = format!(
        "[run]\npolicies = [\"fcfs\"]\nsolo = true\n\n[[engine]]\nname = \"acc\"\nkind = \"accelerator\"\n\
         service = {{ dist = \"affine\", base = \"1us\", per_byte_ns = 1.0 }}\n\n{}\n{}",
        tenant("a"),
        tenant("b")
    );
    let report = run("solo", &scenario, &[]);
    for t in &report.policies[0].tenants {
        let s = t.slowdown.expect("a slowdown against the solo run");
        // Near 2; wide bounds, since this machine's speed can change by
        // half between the solo and the shared runs (docs/perf.md).
        assert!((0.7..=6.0).contains(&s), "{}: slowdown {s}", t.name);
    }
    assert!(
        report.policies[0].fair2.is_some(),
        "Fair2 comes with the solo runs"
    );
}
