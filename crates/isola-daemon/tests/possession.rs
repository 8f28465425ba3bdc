//! Attach by possession, live: a tenant with `attach_socket` gets a socket
//! of its own, made by isolad (mode 0666), on which a process attaches as
//! that tenant alone whatever its uid (here: a tenant granted to no uid
//! at all), and runs tasks; asking for another tenant there is refused; the
//! socket follows the tenant (added, moved, removed) through the admin
//! socket; a directory that does not exist refuses the add, leaving
//! nothing behind.

use isola_client::{Client, ClientError};
use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::admin::{AdminReply, AdminRequest, KeyChange};
use isola_wire::control;
use rustix::fd::AsFd;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("isolad-possession-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("claim-1")).unwrap();
    d
}

fn ask(d: &Daemon, request: &AdminRequest) -> AdminReply {
    let admin = control::connect(d.admin_socket()).unwrap();
    control::send(admin.as_fd(), request, None).unwrap();
    control::recv::<AdminReply>(admin.as_fd()).unwrap().0
}

/// Attaches at `socket` as `tenant` and runs one CRC-32C task.
fn crc_on(socket: &Path, tenant: &str) -> Result<u32, ClientError> {
    let mut c = Client::connect(socket, tenant)?;
    let op = c.register("crc32c", &BTreeMap::new())?;
    c.write(0, b"123456789")?;
    c.submit(&isola_wire::Submission {
        handle: op,
        flags: 0,
        input_offset: 0,
        input_len: 9,
        output_offset: 4096,
        output_cap: 4,
        tag: 1,
    })?;
    let done = c.wait()?;
    assert_eq!(done.outcome, isola_client::CompletionStatus::Ok);
    let out = c.read(4096, 4)?;
    Ok(u32::from_be_bytes(out.try_into().unwrap()))
}

#[test]
fn a_tenant_attaches_by_possession_of_its_socket() {
    let d0 = dir("live");
    let own = d0.join("claim-1/isolad.sock");
    let text = format!(
        r#"[daemon]
socket = "isolad.sock"
spare_tenants = 4

[[engine]]
name = "acc"

[[tenant]]
name = "claim"
memory_quota = "64KiB"
attach_socket = "{}"
"#,
        own.display()
    );
    let path = d0.join("isolad.toml");
    std::fs::write(&path, text).unwrap();
    let d = Daemon::start(DaemonConfig::load(&path).unwrap()).unwrap();

    // The socket is there, world-connectable; the tenant is granted to no
    // uid, so the main socket refuses it while its own admits it.
    let mode = std::fs::metadata(&own).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o666);
    assert_eq!(
        crc_on(&own, "claim").unwrap(),
        0xE3069283,
        "RFC 3720's check value"
    );
    let refused = crc_on(d.socket(), "claim").unwrap_err().to_string();
    assert!(refused.contains("may not act as tenant `claim`"), "{refused}");

    // Its socket admits it alone.
    let uid = rustix::process::getuid().as_raw();
    let add = |name: &str, keys: Vec<KeyChange>| {
        ask(
            &d,
            &AdminRequest::Add {
                tenant: name.into(),
                keys,
            },
        )
    };
    let key = |k: &str, v: serde_json::Value| KeyChange {
        key: k.into(),
        value: Some(v),
    };
    assert!(matches!(
        add(
            "other",
            vec![
                key("memory_quota", "64KiB".into()),
                key("users", serde_json::json!([uid]))
            ]
        ),
        AdminReply::Done { .. }
    ));
    let refused = crc_on(&own, "other").unwrap_err().to_string();
    assert!(refused.contains("admits `claim` alone"), "{refused}");

    // Added live with a socket of its own; a missing directory refuses the
    // add whole.
    let second = d0.join("claim-1/second.sock");
    let reply = add(
        "second",
        vec![
            key("memory_quota", "64KiB".into()),
            key("attach_socket", second.display().to_string().into()),
        ],
    );
    assert!(matches!(reply, AdminReply::Done { .. }), "{reply:?}");
    assert_eq!(crc_on(&second, "second").unwrap(), 0xE3069283);
    let nowhere = d0.join("no-such-dir/isolad.sock");
    let reply = add(
        "third",
        vec![
            key("memory_quota", "64KiB".into()),
            key("attach_socket", nowhere.display().to_string().into()),
        ],
    );
    match reply {
        AdminReply::Failed { reason } => assert!(
            reason.contains("does not exist") && reason.contains("not added"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    let AdminReply::Tenants { tenants, .. } = ask(&d, &AdminRequest::List { from: 0 }) else {
        panic!()
    };
    assert!(!tenants.iter().any(|t| t.name == "third"), "nothing half-made");

    // Removed: its socket goes at once.
    assert!(matches!(
        ask(
            &d,
            &AdminRequest::Remove {
                tenant: "second".into()
            }
        ),
        AdminReply::Done { .. }
    ));
    assert!(!second.exists(), "the socket was unlinked");
    assert!(Client::connect(&second, "second").is_err());
    d.stop();
    assert!(!own.exists(), "stopping unlinks every tenant's socket");
    let _ = std::fs::remove_dir_all(&d0);
}

#[test]
fn attach_socket_must_be_an_absolute_path() {
    let d0 = dir("relative");
    let path = d0.join("isolad.toml");
    std::fs::write(
        &path,
        "[daemon]\nsocket = \"isolad.sock\"\n[[engine]]\nname = \"acc\"\n[[tenant]]\nname = \"t\"\nmemory_quota = \"64KiB\"\nattach_socket = \"claim/isolad.sock\"\n",
    )
    .unwrap();
    let err = DaemonConfig::load(&path).unwrap_err().to_string();
    assert!(err.contains("attach_socket") && err.contains("absolute"), "{err}");
    let _ = std::fs::remove_dir_all(&d0);
}
