//! A real daemon on a real Unix socket, tenants attaching from this
//! process through the client crate (the credentials checked are this
//! process's): a task's result is the operator's, a stranger is refused, a
//! malformed entry fails alone, a tenant that leaves frees its place.

use isola_client::{Client, ClientError, Outcome};
use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::Submission;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A daemon whose tenant `a` is granted to this process's user, and `b` to
/// another user only.
fn daemon(name: &str) -> (Daemon, PathBuf) {
    let dir = std::env::temp_dir().join(format!("isolad-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let uid = rustix::process::getuid().as_raw();
    let text = format!(
        r#"[daemon]
socket = "isolad.sock"

[[engine]]
name = "acc"
workers = 1
policy = "sfq"
cost = {{ base = "1us", per_byte_ns = 0.5 }}

[[tenant]]
name = "a"
memory_quota = "64KiB"
users = [{uid}]
max_connections = 2
sq_entries = 8
cq_entries = 8

[[tenant]]
name = "b"
memory_quota = "64KiB"
users = [{}]
"#,
        uid.wrapping_add(1)
    );
    let config = DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap();
    let d = Daemon::start(config).unwrap();
    let socket = d.socket().to_path_buf();
    (d, socket)
}

fn crc(client: &mut Client, tag: u64) -> Submission {
    let h = client.register("crc32c", &BTreeMap::new()).unwrap();
    client.write(0, b"123456789").unwrap();
    Submission {
        handle: h,
        flags: 0,
        input_offset: 0,
        input_len: 9,
        output_offset: 4096,
        output_cap: 4,
        tag,
    }
}

#[test]
fn a_tenant_process_gets_its_operators_result() {
    let (_d, socket) = daemon("result");
    let mut c = Client::connect(&socket, "a").unwrap();
    let s = crc(&mut c, 7);
    c.submit(&s).unwrap();
    let done = c.wait().unwrap();
    assert_eq!((done.tag, done.outcome, done.output_len), (7, Outcome::Ok, 4));
    // CRC-32C of "123456789": the check value of the published catalogue.
    assert_eq!(c.read(4096, 4).unwrap(), 0xE306_9283u32.to_be_bytes());
    assert!(done.completion_ns >= done.arrival_ns && done.service_ns > 0);
}

#[test]
fn strangers_and_unknown_tenants_are_refused() {
    let (_d, socket) = daemon("refused");
    match Client::connect(&socket, "b") {
        Err(ClientError::Refused(reason)) => {
            assert!(reason.contains("may not act as tenant `b`"), "{reason}")
        }
        other => panic!("expected a refusal, got {:?}", other.err()),
    }
    match Client::connect(&socket, "nobody") {
        Err(ClientError::Refused(reason)) => assert!(reason.contains("no tenant"), "{reason}"),
        other => panic!("expected a refusal, got {:?}", other.err()),
    }
    // Two connections allowed, not three.
    let _one = Client::connect(&socket, "a").unwrap();
    let _two = Client::connect(&socket, "a").unwrap();
    match Client::connect(&socket, "a") {
        Err(ClientError::Refused(reason)) => assert!(reason.contains("max_connections"), "{reason}"),
        other => panic!("expected a refusal, got {:?}", other.err()),
    }
}

#[test]
fn a_malformed_entry_fails_alone() {
    let (_d, socket) = daemon("malformed");
    let mut c = Client::connect(&socket, "a").unwrap();
    let good = crc(&mut c, 1);
    let outside = Submission {
        input_offset: u64::MAX - 3,
        tag: 2,
        ..good
    };
    let overlapping = Submission {
        output_offset: 4,
        tag: 3,
        ..good
    };
    let unknown = Submission {
        handle: 99,
        tag: 4,
        ..good
    };
    for s in [outside, overlapping, unknown, Submission { tag: 5, ..good }] {
        c.submit(&s).unwrap();
    }
    let mut seen = BTreeMap::new();
    for _ in 0..4 {
        let done = c.wait().unwrap();
        seen.insert(done.tag, done.outcome);
    }
    assert!(matches!(seen[&2], Outcome::BadEntry(_)), "{seen:?}");
    assert!(matches!(seen[&3], Outcome::BadEntry(_)), "{seen:?}");
    assert!(matches!(seen[&4], Outcome::BadEntry(_)), "{seen:?}");
    assert_eq!(seen[&5], Outcome::Ok);
}

/// Connects as `a`, waiting (a bounded while) for a place: a connection
/// that closed keeps its place until the tasks it submitted are done.
fn connect_when_free(socket: &Path) -> Client {
    for _ in 0..500 {
        match Client::connect(socket, "a") {
            Err(ClientError::Refused(r)) if r.contains("max_connections") => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            other => return other.unwrap(),
        }
    }
    panic!("the closed connections never freed their places");
}

#[test]
fn a_tenant_that_leaves_frees_its_place() {
    let (_d, socket) = daemon("leave");
    for _ in 0..20 {
        let mut c = connect_when_free(&socket);
        let s = crc(&mut c, 1);
        // Submitted, then gone without waiting.
        c.submit(&s).unwrap();
        drop(c);
    }
    // Its connections were counted down: a new one is admitted and served.
    let mut c = connect_when_free(&socket);
    let s = crc(&mut c, 9);
    c.submit(&s).unwrap();
    assert_eq!(c.wait().unwrap().outcome, Outcome::Ok);
}

#[test]
fn configuration_mistakes_name_their_line_and_key() {
    let bad = |text: &str| DaemonConfig::parse(text, Path::new("d.toml")).unwrap_err();
    let base = "[daemon]\nsocket = \"s\"\n[[engine]]\nname = \"e\"\n[[tenant]]\nname = \"t\"\nmemory_quota = \"1MiB\"\nusers = [0]\n";
    let e = bad(&base.replace("memory_quota = \"1MiB\"", "memory_quota = \"1\""));
    assert_eq!((e.line, e.key.as_deref()), (7, Some("memory_quota")), "{e}");
    let e = bad(&base.replace("users = [0]", "users = []"));
    assert_eq!(e.key.as_deref(), Some("users"), "{e}");
    let e = bad(&base.replace("name = \"e\"", "name = \"e\"\npolicy = \"lottery\""));
    assert_eq!((e.line, e.key.as_deref()), (5, Some("policy")), "{e}");
    let e = bad(&base.replace("users = [0]", "users = [0]\nsq_entries = 12"));
    assert_eq!((e.line, e.key.as_deref()), (9, Some("sq_entries")), "{e}");
    assert!(DaemonConfig::parse(base, Path::new("d.toml")).is_ok());
}
