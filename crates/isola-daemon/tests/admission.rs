//! Admission control, live: a reservation is a promise, so isolad refuses
//! a tenant whose reservation, with the others on an engine, exceeds the
//! engine's capacity (its cost model's), with the numbers in the message,
//! at load, on `isola ctl add` and `set`, and on a reload; and it says
//! each engine's capacity and what is reserved of it (`isola ctl
//! engines`, what the Kubernetes driver publishes).

use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::admin::{AdminReply, AdminRequest, KeyChange};
use isola_wire::control;
use rustix::fd::AsFd;
use std::path::PathBuf;

/// One engine of 1M tasks/s and 1 GB/s (base 1 us, 1 ns a byte, one
/// worker); tenant `a` reserves 40% of it, then `tenants`.
fn config_text(tenants: &str) -> String {
    let uid = rustix::process::getuid().as_raw();
    format!(
        r#"[daemon]
socket = "isolad.sock"
spare_tenants = 2

[[engine]]
name = "acc"
workers = 1
cost = {{ base = "1us", per_byte_ns = 1.0 }}

[[tenant]]
name = "a"
memory_quota = "1MiB"
users = [{uid}]
reservation = "400k/s"
{tenants}"#
    )
}

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("isolad-admission-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("isolad.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn ask(d: &Daemon, request: &AdminRequest) -> AdminReply {
    let admin = control::connect(d.admin_socket()).unwrap();
    control::send(admin.as_fd(), request, None).unwrap();
    control::recv::<AdminReply>(admin.as_fd()).unwrap().0
}

fn refusal(reply: AdminReply) -> String {
    match reply {
        AdminReply::Failed { reason } => reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn key(key: &str, value: serde_json::Value) -> KeyChange {
    KeyChange {
        key: key.into(),
        value: Some(value),
    }
}

#[test]
fn an_overcommitted_file_is_refused_at_load_with_the_numbers() {
    let uid = rustix::process::getuid().as_raw();
    let path = write(
        "load",
        &config_text(&format!(
            "\n[[tenant]]\nname = \"b\"\nmemory_quota = \"1MiB\"\nusers = [{uid}]\nreservation = \"700MB/s\"\n"
        )),
    );
    let err = DaemonConfig::load(&path).unwrap_err().to_string();
    for part in [
        "reservation",
        "engine `acc`",
        "tenant `b`",
        "1000000 tasks/s",
        "1000000000 B/s",
        "40.0%",
        "70.0%",
        "110.0%",
    ] {
        assert!(err.contains(part), "`{part}` missing from: {err}");
    }
}

#[test]
fn add_set_and_reload_refuse_what_does_not_fit_and_nothing_changes() {
    let path = write("live", &config_text(""));
    let d = Daemon::start(DaemonConfig::load(&path).unwrap()).unwrap();
    let uid = rustix::process::getuid().as_raw();
    let base = |quota: &str| {
        vec![
            key("memory_quota", quota.into()),
            key("users", serde_json::json!([uid])),
        ]
    };

    // 60% more fits exactly; a tenant over what is left does not.
    let mut keys = base("1MiB");
    keys.push(key("reservation", "600MB/s".into()));
    assert!(matches!(
        ask(
            &d,
            &AdminRequest::Add {
                tenant: "b".into(),
                keys
            }
        ),
        AdminReply::Done { .. }
    ));
    let mut keys = base("1MiB");
    keys.push(key("reservation", "1k/s".into()));
    let why = refusal(ask(
        &d,
        &AdminRequest::Add {
            tenant: "c".into(),
            keys,
        },
    ));
    assert!(why.contains("tenant `c`") && why.contains("100.0%"), "{why}");

    // Raising a's reservation past what b leaves is refused; lowering it is not.
    let why = refusal(ask(
        &d,
        &AdminRequest::Set {
            tenant: "a".into(),
            changes: vec![key("reservation", "500k/s".into())],
        },
    ));
    assert!(why.contains("tenant `a`") && why.contains("110.0%"), "{why}");
    assert!(matches!(
        ask(
            &d,
            &AdminRequest::Set {
                tenant: "a".into(),
                changes: vec![key("reservation", "100k/s".into())]
            }
        ),
        AdminReply::Done { .. }
    ));

    // The capacity and what is reserved, as the driver reads them.
    let AdminReply::Engines { engines } = ask(&d, &AdminRequest::Engines) else {
        panic!("no engines")
    };
    assert_eq!(engines.len(), 1);
    assert_eq!(engines[0].capacity.tasks_per_s, Some(1e6));
    assert_eq!(engines[0].capacity.bytes_per_s, Some(1e9));
    assert_eq!(engines[0].reserved.tasks_per_s, Some(1e5));
    assert_eq!(engines[0].reserved.bytes_per_s, Some(6e8));

    // A file that overcommits is refused whole on reload.
    std::fs::write(
        &path,
        config_text(&format!(
            "\n[[tenant]]\nname = \"b\"\nmemory_quota = \"1MiB\"\nusers = [{uid}]\nreservation = \"900MB/s\"\n"
        )),
    )
    .unwrap();
    let why = refusal(ask(&d, &AdminRequest::Reload));
    assert!(why.contains("tenant `b`"), "{why}");
}
