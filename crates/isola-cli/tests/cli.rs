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
        "fcfs", "rr", "wrr", "drr", "sfq", "bvt", "wlbvt", "mclock", "static",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
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
