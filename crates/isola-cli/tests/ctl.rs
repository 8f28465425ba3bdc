//! `isola ctl` against a real daemon's admin socket: the table and the
//! JSON list the tenants, a live change shows in the next list, a refused
//! change exits non-zero naming the key, a tenant is added and removed,
//! and a missing daemon is a clear error.

use isola_daemon::{Daemon, DaemonConfig};
use std::process::{Command, Output};

fn daemon(name: &str) -> Daemon {
    let dir = std::env::temp_dir().join(format!("isola-ctl-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let uid = rustix::process::getuid().as_raw();
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\n\n[[engine]]\nname = \"acc\"\n\n\
         [[tenant]]\nname = \"a\"\nmemory_quota = \"1MiB\"\nusers = [{uid}]\n"
    );
    let path = dir.join("isolad.toml");
    std::fs::write(&path, text).unwrap();
    Daemon::start(DaemonConfig::load(&path).unwrap()).unwrap()
}

fn ctl(d: &Daemon, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_isola"))
        .arg("ctl")
        .arg("--admin")
        .arg(d.admin_socket())
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

#[test]
fn ctl_lists_changes_adds_and_removes_tenants() {
    let d = daemon("all");
    let out = ctl(&d, &["list"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.lines().next().unwrap().contains("weight"), "{table}");
    assert!(table.lines().nth(1).unwrap().contains(" a "), "{table}");

    let out = ctl(&d, &["set", "a", "weight=2.5", "limit=100MB/s"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = ctl(&d, &["list", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["slo"]["weight"], 2.5);
    assert!(listed[0]["slo"]["limit"].is_string());

    let out = ctl(&d, &["set", "a", "weight=0"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("weight"), "{}", text(&out.stderr));

    let uid = rustix::process::getuid().as_raw().to_string();
    let users = format!("users=[{uid}]");
    let out = ctl(
        &d,
        &[
            "add",
            "b",
            "memory_quota=1MiB",
            &users,
            "class=latency-sensitive",
            "latency=2ms",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = ctl(&d, &["list", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[1]["name"], "b");
    assert_eq!(listed[1]["slo"]["class"], "latency-sensitive");

    let out = ctl(&d, &["remove", "b"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = ctl(&d, &["list", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);

    let out = ctl(&d, &["set", "a", "weight"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("KEY=VALUE"), "{}", text(&out.stderr));
}

#[test]
fn ctl_without_a_daemon_says_where_it_looked() {
    let out = Command::new(env!("CARGO_BIN_EXE_isola"))
        .args(["ctl", "--admin", "/nonexistent/isolad.sock.admin", "list"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("/nonexistent/isolad.sock.admin") && err.contains("isolad running"),
        "{err}"
    );
}
