//! A workload's `migrate` (host migration): checked against the engines and
//! the workload's stages, every mistake reported at its line and key.

use isola_model::{Scenario, ScenarioError};

/// A DPU's cores, the host's and the PCIe link between them; one tenant
/// on the DPU. Line 27 is the tenant's `migrate`.
const BASE: &str = r#"[run]
seed = 7
duration = "1ms"
policies = ["fcfs"]

[[engine]]
name = "arm"
kind = "pu"
slots = 8
[[engine]]
name = "host"
kind = "pu"
slots = 2
[[engine]]
name = "pcie"
kind = "dma"
slots = 4
bandwidth = "63Gbit/s"

[[tenant]]
name = "a"
[tenant.workload]
engine = "arm"
size = "64B"
arrival = { poisson = "500k/s" }
service = { dist = "constant", time = "1us" }
migrate = { to = "host", via = "pcie", up = "100us", down = "10us", every = "1ms" }
"#;

/// BASE with line `line` (1-based) replaced by `with`.
fn with_line(line: usize, with: &str) -> String {
    let mut lines: Vec<&str> = BASE.lines().collect();
    lines[line - 1] = with;
    lines.join("\n")
}

fn refused(text: &str, line: usize, key: &str, message: &str) {
    let err: ScenarioError = Scenario::parse(text, "bad.toml").expect_err(text);
    assert_eq!(err.line, line, "{err}");
    assert_eq!(err.key.as_deref(), Some(key), "{err}");
    assert!(err.message.contains(message), "{err}");
}

#[test]
fn a_moved_request_crosses_pcie_to_the_host() {
    let s = Scenario::parse(BASE, "ok.toml").unwrap();
    let w = s.tenants[0].workload();
    let m = w.migrate.expect("migrate read");
    assert_eq!((m.from, m.to, m.via, m.stage), (0, 1, Some(2), 0));
    assert_eq!((m.up, m.down, m.every), (100_000, 10_000, 1_000_000));
    assert_eq!(m.moved_stages(&w.stages), vec![2, 1]);
    // The stage that moves is replaced in place: a pipeline keeps its rest.
    let second = isola_model::scenario::MigrateSpec { stage: 1, ..m };
    assert_eq!(second.moved_stages(&[2, 0, 2]), vec![2, 2, 1, 2]);
}

#[test]
fn migrate_mistakes_are_reported_at_their_line() {
    let line = |m: &str| with_line(27, &format!("migrate = {{ {m} }}"));
    refused(
        &line(r#"to = "gpu", up = "1us", down = "0us", every = "1ms""#),
        27,
        "to",
        "no engine named `gpu`",
    );
    refused(
        &line(r#"to = "pcie", up = "1us", down = "0us", every = "1ms""#),
        27,
        "to",
        "not a compute engine",
    );
    refused(
        &line(r#"to = "arm", up = "1us", down = "0us", every = "1ms""#),
        27,
        "to",
        "moves from",
    );
    refused(
        &line(r#"to = "host", via = "arm", up = "1us", down = "0us", every = "1ms""#),
        27,
        "via",
        "not a dma engine",
    );
    refused(
        &line(r#"to = "host", up = "1us", down = "1us", every = "1ms""#),
        27,
        "down",
        "must be below `up`",
    );
    refused(
        &line(r#"to = "host", up = "1us", down = "0us", every = "0s""#),
        27,
        "every",
        "must be positive",
    );
    refused(
        &line(r#"to = "host", up = "1us", down = "0us", evry = "1ms""#),
        27,
        "evry",
        "unknown field `evry`",
    );
    // A workload whose only stage is the PCIe link has nothing to move.
    let dma_only = with_line(23, r#"engine = "pcie""#)
        .replace("service = { dist = \"constant\", time = \"1us\" }\n", "");
    refused(&dma_only, 26, "migrate", "no compute stage");
    // Without a duration the rule would be checked forever.
    let unbounded = with_line(3, "").replace("size = \"64B\"", "size = \"64B\"\ncount = 10");
    refused(&unbounded, 28, "migrate", "give [run] a `duration`");
}
