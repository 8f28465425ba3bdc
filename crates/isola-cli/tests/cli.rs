//! The `isola` binary as a user runs it.

use std::process::Command;

fn isola(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_isola"))
        .args(args)
        .output()
        .expect("isola runs")
}

#[test]
fn policies_json_lists_every_policy_with_its_params() {
    let out = isola(&["policies", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let list = v.as_array().expect("an array");
    let names: Vec<&str> = list.iter().map(|p| p["name"].as_str().unwrap()).collect();
    for want in [
        "fcfs", "rr", "wrr", "drr", "sfq", "bvt", "wlbvt", "mclock", "static", "ipipe", "mtda", "astraea",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let fairnic = list.iter().find(|p| p["name"] == "static").unwrap();
    assert!(fairnic["aliases"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a == "fairnic"));
    for p in list {
        assert!(!p["description"].as_str().unwrap().is_empty());
        assert!(p["params"].is_array());
    }
    let mclock = list.iter().find(|p| p["name"] == "mclock").unwrap();
    let params: Vec<&str> = mclock["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(params.contains(&"at_limit"));
}

#[test]
fn policies_table_is_readable() {
    let out = isola(&["policies"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("wlbvt") && text.contains("OSMOSIS (Listing 1)"));
    assert!(text.contains("quantum = auto"));
}

#[test]
fn unknown_command_fails_with_usage() {
    let out = isola(&["frobnicate"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage"));
}

fn scenario(name: &str) -> String {
    format!("{}/../../scenarios/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn sim_json_has_the_documented_schema() {
    let out = isola(&[
        "sim",
        &scenario("osmosis-pu-contention.toml"),
        "--policy",
        "wlbvt",
        "--seed",
        "3",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let policies = v["policies"].as_array().unwrap();
    assert_eq!(policies.len(), 1);
    let p = &policies[0];
    assert_eq!(p["policy"], "wlbvt");
    assert!(p["jain"].as_f64().unwrap() > 0.9);
    for t in p["tenants"].as_array().unwrap() {
        for key in [
            "completed",
            "throughput_ops",
            "throughput_bps",
            "sla_violation_rate",
            "engine_time_share",
        ] {
            assert!(t[key].is_number(), "{key} missing");
        }
        for key in ["mean", "p50", "p99", "p999"] {
            assert!(t["latency_ns"][key].is_number(), "latency {key} missing");
        }
    }
}

#[test]
fn sim_tables_and_out_dir() {
    let dir = std::env::temp_dir().join(format!("isola-cli-out-{}", std::process::id()));
    let out = isola(&[
        "sim",
        &scenario("osmosis-pu-contention.toml"),
        "--policy",
        "rr",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("policy rr") && text.contains("congestor") && text.contains("p99.9"),
        "{text}"
    );
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["policies"][0]["policy"], "rr");
    let csv = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    assert!(csv.starts_with(
        "policy,window_start_ns,tenant,throughput_bps,engine_share,p99_ns,jain,jain_of_demand\n"
    ));
    assert!(csv.lines().count() > 10);
    // The same self-contained HTML report as `isola repro` writes.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("<svg") && html.contains("Latency of victim"),
        "charts"
    );
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "self-contained"
    );
    assert!(html.contains("<td>rr</td>"), "names the policy");
    std::fs::remove_dir_all(dir).ok();
}

/// The task rate column shows large tasks' few hundred a second, not
/// `0.0000` millions.
#[test]
fn the_task_rate_of_large_tasks_shows() {
    let out = isola(&["sim", &scenario("astraea-ec.toml"), "--policy", "native"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let header = text.lines().find(|l| l.starts_with("tenant ")).expect("a table");
    let column = header
        .split_whitespace()
        .position(|h| h == "tasks/s")
        .expect("a tasks/s column");
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("latency-sensitive") || l.starts_with("bandwidth-sensitive"))
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    for row in rows {
        let rate: f64 = row.split_whitespace().nth(column).unwrap().parse().unwrap();
        assert!(rate > 1.0, "{row}");
    }
}

#[test]
fn sim_reports_scenario_errors_with_location() {
    let dir = std::env::temp_dir().join(format!("isola-cli-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[run]\nseed = 1\n\n[[engine]]\nname = \"x\"\nkind = \"fpga\"\n",
    )
    .unwrap();
    let out = isola(&["sim", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml:6:") && err.contains("key `kind`") && err.contains("unknown engine kind"),
        "{err}"
    );
    let out = isola(&[
        "sim",
        &scenario("osmosis-pu-contention.toml"),
        "--policy",
        "lottery",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("runs no policy `lottery`"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn op_runs_an_operator_whole_and_split() {
    let dir = std::env::temp_dir().join(format!("isola-cli-op-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.bin");
    std::fs::write(&input, b"123456789").unwrap();
    for split in [None, Some("4B")] {
        let out = dir.join("crc");
        let mut args = vec![
            "op",
            "crc32c",
            "--in",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        if let Some(s) = split {
            args.extend(["--split", s]);
        }
        let run = isola(&args);
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        assert_eq!(std::fs::read(&out).unwrap(), 0xE306_9283u32.to_be_bytes());
    }
    let bad = isola(&[
        "op",
        "sha256",
        "--param",
        "key=00",
        "--in",
        input.to_str().unwrap(),
        "--out",
        "/dev/null",
    ]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("has no parameter `key`"));
    let list = String::from_utf8(isola(&["op", "--list"]).stdout).unwrap();
    assert!(list.contains("inet-checksum") && list.contains("sha3-256"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bench_ops_sweeps_sizes_and_threads_and_writes_plots() {
    let dir = std::env::temp_dir().join(format!("isola-bench-{}", std::process::id()));
    let out = isola(&[
        "bench",
        "ops",
        "--ops",
        "crc32,unlz4",
        "--sizes",
        "64B,4KiB",
        "--threads",
        "1,2",
        "--seconds",
        "0.02",
        "--json",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2 * 2 * 2);
    for p in points {
        for field in ["ops_per_s", "mb_per_s", "latency_ns", "seconds"] {
            assert!(p[field].as_f64().unwrap() > 0.0, "{field} in {p}");
        }
        assert!(p["operations"].as_u64().unwrap() > 0);
        let size = p["size_bytes"].as_f64().unwrap();
        let mb = p["ops_per_s"].as_f64().unwrap() * size / 1e6;
        assert!((p["mb_per_s"].as_f64().unwrap() - mb).abs() <= 1e-6 * mb.max(1.0));
    }
    // The decompressor reads compressed input but is credited the payload size.
    let unlz4 = points
        .iter()
        .find(|p| p["op"] == "unlz4" && p["size_bytes"] == 4096)
        .unwrap();
    assert!(unlz4["input_bytes"].as_u64().unwrap() < 4096);
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 8);
    for op in ["crc32", "unlz4"] {
        let svg = std::fs::read_to_string(dir.join(format!("{op}.svg"))).unwrap();
        // One line per thread count; lines that coincide are drawn once,
        // standing for each of them (`data-count`).
        let lines: usize = svg
            .split("<polyline")
            .skip(1)
            .map(|l| {
                let count = l.split("data-count=\"").nth(1).and_then(|c| c.split('"').next());
                count.unwrap().parse::<usize>().unwrap()
            })
            .sum();
        assert_eq!(lines, 2, "one line per thread count");
    }

    let table = isola(&[
        "bench",
        "ops",
        "--ops",
        "sha256",
        "--sizes",
        "1KiB",
        "--seconds",
        "0.01",
    ]);
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.starts_with("operator") && text.contains("sha256") && text.contains("MB/s"),
        "{text}"
    );
}

#[test]
fn bench_ops_rejects_bad_arguments() {
    for (args, says) in [
        (&["--ops", "frobnicate"][..], "known operators"),
        (&["--sizes", "0B"][..], "at least one byte"),
        (&["--sizes", "12parsecs"][..], "unknown size unit"),
        (&["--sizes", "4096"][..], "has no unit"),
        (&["--sizes", "8GiB"][..], "--max-payload"),
        (&["--sizes", "99999999999999999999B"][..], "too large"),
        (&["--threads", "0"][..], "--threads"),
        (&["--seconds", "0"][..], "--seconds"),
    ] {
        let mut all = vec!["bench", "ops"];
        all.extend_from_slice(args);
        let out = isola(&all);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `isola bench sim`: a point per policy and tenant count, events counted
/// and timed (a static partition with more tenants than its 32 PUs runs
/// time-sliced), bad flags named.
#[test]
fn bench_sim_measures_each_policy_and_tenant_count() {
    let out = isola(&[
        "bench",
        "sim",
        "--policies",
        "fcfs,static",
        "--tenants",
        "8,64",
        "--seconds",
        "0.01",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let points: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = points.as_array().unwrap();
    assert_eq!(points.len(), 4);
    for p in points {
        let (policy, tenants) = (p["policy"].as_str().unwrap(), p["tenants"].as_u64().unwrap());
        assert!(p["cannot_run"].is_null(), "{policy} at {tenants} tenants: {p}");
        // 42 M packets/s offered for 2 ms, about 28 M/s served.
        let events = p["events_per_run"].as_u64().unwrap();
        assert!((100_000..200_000).contains(&events), "{p}");
        assert!(
            p["runs"].as_u64().unwrap() >= 1 && p["events_per_s"].as_f64().unwrap() > 0.0,
            "{p}"
        );
    }
    for (args, says) in [
        (&["--tenants", "0"][..], "--tenants"),
        (&["--policies", "nope"][..], "--policies"),
        (&["--seconds", "0"][..], "--seconds"),
    ] {
        let mut all = vec!["bench", "sim"];
        all.extend_from_slice(args);
        let out = isola(&all);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `isola demo --json`: the documented schema, on a scaled-down run.
#[test]
fn demo_json_has_the_documented_schema() {
    let dir = std::env::temp_dir().join(format!("isola-demo-{}", std::process::id()));
    let out = isola(&[
        "demo",
        "--json",
        "--scale",
        "0.03",
        "--policies",
        "sfq,drr",
        "--rounds",
        "2",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    // Rows in a fixed order, native first; the best policy, the verdict.
    assert_eq!(v["order"], serde_json::json!(["native", "sfq", "drr"]));
    let best = v["best_policy"].as_str().expect("a best policy");
    assert!(["sfq", "drr"].contains(&best), "{best}");
    let verdict = &v["verdict"];
    assert_eq!(verdict["policy"].as_str(), Some(best));
    let held = verdict["held"].as_bool().unwrap();
    let line = verdict["line"].as_str().unwrap();
    assert!(
        line.starts_with(if held {
            "isolation HELD"
        } else {
            "isolation DID NOT HOLD"
        }),
        "{line}"
    );
    assert!(v["warnings"].is_array());
    for p in v["policies"].as_object().unwrap().values() {
        // Every round, and the spread of each figure over them.
        assert_eq!(p["rounds"].as_array().unwrap().len(), 2);
        let s = &p["spread"]["ls_sla_violation_rate"];
        let (lo, med, hi) = (
            s["min"].as_f64().unwrap(),
            s["median"].as_f64().unwrap(),
            s["max"].as_f64().unwrap(),
        );
        assert!(lo <= med && med <= hi);
        let b = &p["ls_breakdown"];
        assert!(b["tasks"].as_u64().unwrap() > 0);
        for round in p["rounds"].as_array().unwrap() {
            assert!(round["host"]["wall_ns"].as_u64().unwrap() > 0);
            assert!(round["solo"]["ls_service_before_ns"].as_u64().unwrap() > 0);
        }
    }
    let policies = v["policies"].as_object().unwrap();
    let names: Vec<&str> = policies.keys().map(String::as_str).collect();
    assert_eq!(names, ["drr", "native", "sfq"]);
    for (name, p) in policies {
        let ratio = p["overhead_ratio"].as_f64().unwrap();
        assert!(ratio > 0.0, "{name}");
        for tenant in ["latency-sensitive", "bandwidth-sensitive"] {
            let t = &p["tenants"][tenant];
            let rate = t["sla_violation_rate"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&rate), "{name} {tenant}");
            let (p50, p99) = (
                t["latency_ns"]["p50"].as_u64().unwrap(),
                t["latency_ns"]["p99"].as_u64().unwrap(),
            );
            assert!(0 < p50 && p50 <= p99, "{name} {tenant}");
            assert!(t["throughput_bps"].as_f64().unwrap() > 0.0);
        }
    }
    assert_eq!(policies["native"]["overhead_ratio"].as_f64().unwrap(), 1.0);
    assert!(dir.join("results.json").exists() && dir.join("results.csv").exists());
    // The table ends with the verdict line (and any warnings).
    let table = isola(&[
        "demo",
        "--scale",
        "0.03",
        "--policies",
        "sfq",
        "--rounds",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(table.status.success());
    let text = String::from_utf8_lossy(&table.stdout);
    let verdict = text
        .lines()
        .find(|l| l.starts_with("verdict: isolation "))
        .expect("a verdict line");
    assert!(verdict.contains("under sfq"), "{verdict}");
    assert!(text.lines().any(|l| l.starts_with("native ")), "{text}");
    let bad = isola(&["demo", "--policies", "nonesuch"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("nonesuch"));
}

#[test]
fn profile_measures_fits_and_saves() {
    let file = std::env::temp_dir().join(format!("isola-profile-cli-{}.json", std::process::id()));
    let out = isola(&[
        "profile",
        "--ops",
        "crc32c,ec-encode",
        "--param",
        "k=8",
        "--sizes",
        "64B,4KiB",
        "--seconds",
        "0.05",
        "--json",
        "--out",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v, saved);
    let ops = v["operators"].as_array().unwrap();
    assert_eq!(ops.len(), 2);
    assert_eq!(
        ops[1]["params"]["k"], "8",
        "--param applies to operators that take it"
    );
    assert!(ops[0]["params"].as_object().unwrap().is_empty());
    for op in ops {
        let points = op["points"].as_array().unwrap();
        assert_eq!(points.len(), 2);
        assert!(points.iter().all(|p| p["median_ns"].as_f64().unwrap() > 0.0));
    }
    let bad = isola(&["profile", "--ops", "nope", "--out", file.to_str().unwrap()]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("known operators"));
}

/// `isola run`: the simulator's scenario format and JSON schema, live.
#[test]
fn run_executes_a_scenario_live_with_the_sim_schema() {
    let dir = std::env::temp_dir().join(format!("isola-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("live.toml");
    std::fs::write(
        &file,
        r#"[run]
seed = 3
policies = ["fcfs", { name = "sfq", split = "16KiB" }]

[[engine]]
name = "acc"
kind = "accelerator"
slots = 1
service = { dist = "affine", base = "1us", per_byte_ns = 0.5 }

[[tenant]]
name = "small"
latency_multiple = 10.0
[tenant.workload]
engine = "acc"
op = "crc32c"
size = "4KiB"
arrival = { poisson = "2k/s" }
count = 40

[[tenant]]
name = "big"
[tenant.workload]
engine = "acc"
op = "sha256"
size = { dist = "uniform", min = "32KiB", max = "64KiB" }
arrival = { closed = 2 }
count = 30
"#,
    )
    .unwrap();
    let live = isola(&["run", file.to_str().unwrap(), "--json"]);
    assert!(live.status.success(), "{}", String::from_utf8_lossy(&live.stderr));
    let live: serde_json::Value = serde_json::from_slice(&live.stdout).unwrap();
    let sim = isola(&["sim", file.to_str().unwrap(), "--json"]);
    let sim: serde_json::Value = serde_json::from_slice(&sim.stdout).unwrap();
    // Same schema: the same keys at every level of the first policy's result.
    let keys = |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&live), keys(&sim));
    assert_eq!(keys(&live["policies"][0]), keys(&sim["policies"][0]));
    assert_eq!(
        keys(&live["policies"][0]["tenants"][0]),
        keys(&sim["policies"][0]["tenants"][0])
    );
    for p in live["policies"].as_array().unwrap() {
        let t = p["tenants"].as_array().unwrap();
        assert_eq!(t[0]["completed"], 40, "{p}");
        assert_eq!(t[1]["completed"], 30, "{p}");
        assert!(t[1]["latency_ns"]["p50"].as_u64().unwrap() > 0);
    }
    let table = isola(&["run", file.to_str().unwrap(), "--policy", "sfq"]);
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.contains("policy sfq") && text.contains("live") && !text.contains("policy fcfs"),
        "{text}"
    );
    // Each tenant's operator was timed here first, and the table says what
    // was measured against what the model predicts (issue 28).
    let note = live["policies"][0]["warnings"][0].as_str().unwrap();
    assert!(
        note.starts_with("costs measured on this machine")
            && note.contains("`small` crc32c")
            && note.contains("`big` sha256"),
        "{note}"
    );
    assert!(text.contains("warning: costs measured on this machine"), "{text}");
    let kept = isola(&[
        "run",
        file.to_str().unwrap(),
        "--policy",
        "sfq",
        "--no-calibrate",
        "--json",
    ]);
    let kept: serde_json::Value = serde_json::from_slice(&kept.stdout).unwrap();
    let note = kept["policies"][0]["warnings"][0].as_str().unwrap();
    assert!(note.contains("not measured on this machine"), "{note}");
}

/// A reader that goes away early (`isola sim ... --json | head -c 10`)
/// ends the command quietly and successfully, as with any Unix tool.
#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    for args in [
        &["sim", "scenarios/osmosis-pu-contention.toml", "--json"][..],
        &["policies"][..],
        &["op", "--list"][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_isola"))
            .args(args)
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 10];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // The pipe's read end is closed here, before the command is done.
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
        assert!(
            !stderr.contains("rror") && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
}

/// What the commands write by default and the README's examples write is
/// ignored by git, so trying Isola in its own checkout leaves it clean.
#[test]
fn default_outputs_are_ignored_by_git() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let paths = [
        "isola-demo-results/results.json",
        "repro/report.html",
        "bench/ops.json",
        "results/results.json",
        "try/data.bin",
    ];
    let Ok(out) = Command::new("git")
        .args(["check-ignore", "--no-index"])
        .args(paths)
        .current_dir(root)
        .output()
    else {
        return; // no git here: nothing to check against
    };
    if !Command::new("git")
        .args(["rev-parse", "--is-inside-work-tree"])
        .current_dir(root)
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return; // not a checkout (a packaged source tree)
    }
    let ignored = String::from_utf8_lossy(&out.stdout);
    for p in paths {
        assert!(ignored.lines().any(|l| l == p), "{p} is not ignored: {ignored}");
    }
}

/// `--seeds N` runs the scenario with N seeds and reports each figure's
/// median and range; one seed is today's run.
#[test]
fn seeds_report_the_spread_over_seeds() {
    let file = scenario("mm1.toml");
    let out = isola(&["sim", &file, "--seeds", "3", "--seed", "5", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["seeds"], serde_json::json!([5, 6, 7]));
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
    let p99 = &v["policies"][0]["tenants"][0]["p99_ns"];
    let (lo, med, hi) = (
        p99["min"].as_f64().unwrap(),
        p99["median"].as_f64().unwrap(),
        p99["max"].as_f64().unwrap(),
    );
    assert!(lo <= med && med <= hi && lo < hi, "three seeds differ: {p99}");
    let each: Vec<f64> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["policies"][0]["tenants"][0]["latency_ns"]["p99"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert!(each.contains(&lo) && each.contains(&hi) && each.contains(&med));
    let one = isola(&["sim", &file, "--seeds", "1", "--seed", "5", "--json"]);
    let plain = isola(&["sim", &file, "--seed", "5", "--json"]);
    assert_eq!(one.stdout, plain.stdout, "one seed is the plain run");
    let table = isola(&["sim", &file, "--seeds", "2"]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("median [range] over seeds"));
}

/// Issue 14's reproducers for the commands: what would allocate, write or
/// run without bound is refused before the work, naming the flag; a live
/// run ends by the wall clock and says when its load generator fell behind.
#[test]
fn hostile_flags_and_scenarios_are_refused_before_the_work() {
    let dir = std::env::temp_dir().join(format!("isola-cli-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = |name: &str, duration: &str, size: &str, arrival: &str| {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                "[run]\n{duration}\n[[engine]]\nname = \"acc\"\nkind = \"accelerator\"\n\
                 service = {{ dist = \"affine\", base = \"1us\", per_byte_ns = 0.1 }}\n\
                 [[tenant]]\nname = \"a\"\n[tenant.workload]\nengine = \"acc\"\nop = \"crc32c\"\n\
                 size = {size}\n{arrival}\n"
            ),
        )
        .unwrap();
        path.to_str().unwrap().to_string()
    };
    let huge = scenario(
        "huge.toml",
        "duration = \"10ms\"",
        "{ dist = \"uniform\", min = \"64B\", max = \"1000000GB\" }",
        "arrival = { closed = 1 }",
    );
    let nowhere = dir.join("missing").join("deeper");
    let profile = dir.join("p.json");
    let profile = profile.to_str().unwrap();
    let unwritable = "/proc/isola-cannot-write-here";
    for (args, says) in [
        (vec!["run", huge.as_str()], "--max-payload"),
        (
            vec!["profile", "--ops", "crc32c", "--sizes", "64GiB", "--out", profile],
            "--max-payload",
        ),
        (
            vec![
                "profile",
                "--ops",
                "crc32c",
                "--sizes",
                "99999999999999999999",
                "--out",
                profile,
            ],
            "no unit",
        ),
        (
            vec![
                "profile",
                "--ops",
                "crc32c",
                "--sizes",
                "64B",
                "--out",
                nowhere.to_str().unwrap(),
            ],
            "--out",
        ),
        (
            vec!["demo", "--split", "99GiB", "--out", dir.to_str().unwrap()],
            "--split",
        ),
        (
            vec!["demo", "--split", "0B", "--out", dir.to_str().unwrap()],
            "--split",
        ),
        (vec!["sim", huge.as_str(), "--out", unwritable], "--out"),
        (vec!["sim", "/dev/zero"], "not a regular file"),
    ] {
        let out = isola(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{args:?}: {err}");
        // One error line, said once.
        assert_eq!(err.matches("error:").count(), 1, "{args:?}: {err}");
    }
    // 100M tasks/s for 1 ms: the generator cannot keep up; the run still
    // ends by the wall clock, says so, and its rates are over its real time.
    let flood = scenario(
        "flood.toml",
        "duration = \"1ms\"",
        "\"4KiB\"",
        "arrival = { poisson = \"100M/s\" }",
    );
    let out = isola(&["run", &flood, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &report["policies"][0];
    assert!(p["duration_ns"].as_u64().unwrap() < 5_000_000_000, "{p}");
    let warnings = p["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("fell behind")),
        "{p}"
    );
    // A closed loop that would start after the run's end never starts.
    let late = scenario(
        "late.toml",
        "duration = \"1ms\"",
        "\"4KiB\"",
        "arrival = { closed = 1 }\nstart = \"10s\"",
    );
    let out = isola(&["run", &late, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &report["policies"][0];
    // Had it waited for its start, the run would have lasted 10 s.
    assert!(p["duration_ns"].as_u64().unwrap() < 10_000_000_000, "{p}");
    assert_eq!(p["tenants"][0]["completed"], 0, "{p}");
    std::fs::remove_dir_all(&dir).ok();
}
