//! A real daemon on a real Unix socket, tenants attaching from this
//! process through the client crate (the credentials checked are this
//! process's): a task's result is the operator's, a stranger is refused, a
//! malformed entry fails alone, a tenant that leaves frees its place.

mod config_file;

use isola_client::{Client, ClientError, CompletionStatus};
use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::Submission;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The tests that count this process's descriptors and mappings run
/// alone (`write`); the others (`read`) open sockets and pipes too.
static ALONE: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A daemon whose tenant `a` is granted to this process's user, and `b` to
/// another user only.
fn daemon(name: &str) -> (Daemon, PathBuf) {
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
    let config = config_file::parse(name, &text);
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
    let _beside = ALONE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (_d, socket) = daemon("result");
    let mut c = Client::connect(&socket, "a").unwrap();
    let s = crc(&mut c, 7);
    c.submit(&s).unwrap();
    let done = c.wait().unwrap();
    assert_eq!(
        (done.tag, done.outcome, done.output_len),
        (7, CompletionStatus::Ok, 4)
    );
    // CRC-32C of "123456789": the check value of the published catalogue.
    assert_eq!(c.read(4096, 4).unwrap(), 0xE306_9283u32.to_be_bytes());
    assert!(done.completion_ns >= done.arrival_ns && done.service_ns > 0);
}

#[test]
fn strangers_and_unknown_tenants_are_refused() {
    let _beside = ALONE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
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
    let _beside = ALONE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
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
    assert!(matches!(seen[&2], CompletionStatus::BadEntry(_)), "{seen:?}");
    assert!(matches!(seen[&3], CompletionStatus::BadEntry(_)), "{seen:?}");
    assert!(matches!(seen[&4], CompletionStatus::BadEntry(_)), "{seen:?}");
    assert_eq!(seen[&5], CompletionStatus::Ok);
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
    let _beside = ALONE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
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
    assert_eq!(c.wait().unwrap().outcome, CompletionStatus::Ok);
}

#[test]
fn configuration_mistakes_name_their_line_and_key() {
    let _beside = ALONE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
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
    // The SLO keys are a scenario's, checked the same way.
    let e = bad(&base.replace(
        "users = [0]",
        "users = [0]\nlatency = \"2ms\"\nlatency_multiple = 2.0",
    ));
    assert_eq!((e.line, e.key.as_deref()), (10, Some("latency_multiple")), "{e}");
    let e = bad(&base.replace("users = [0]", "users = [0]\n[tenant.on.nowhere]\nweight = 2.0"));
    assert_eq!(e.key.as_deref(), Some("on"), "{e}");
    // The engine's keys.
    let e = bad(&base.replace("name = \"e\"", "name = \"e\"\nsplit_when = \"sometimes\""));
    assert_eq!((e.line, e.key.as_deref()), (5, Some("split_when")), "{e}");
    let e = bad(&base.replace(
        "name = \"e\"",
        "name = \"e\"\npolicy = \"drr\"\nparams = { quantum = \"lots\" }",
    ));
    assert_eq!(e.key.as_deref(), Some("params"), "{e}");
    let e = bad(&base.replace("name = \"e\"", "name = \"e\"\nprofile = \"/nonexistent/p.json\""));
    assert_eq!((e.line, e.key.as_deref()), (5, Some("profile")), "{e}");
    // A static partition in slots mode needs a worker per tenant seat;
    // by default it time-slices an engine with fewer.
    let static_engine = |extra: &str| {
        base.replace("[daemon]\n", "[daemon]\nspare_tenants = 4\n")
            .replace(
                "name = \"e\"",
                &format!("name = \"e\"\npolicy = \"static\"{extra}"),
            )
    };
    let e = bad(&static_engine("\nparams = { mode = \"slots\" }"));
    assert_eq!(e.key.as_deref(), Some("spare_tenants"), "{e}");
    assert!(DaemonConfig::parse(&static_engine(""), Path::new("d.toml")).is_ok());
    // No workers: the dispatcher runs the engine, one task as the core
    // picks it, so it has no queue to size.
    let e = bad(&base.replace("name = \"e\"", "name = \"e\"\nworkers = 0\nqueue_depth = 8"));
    assert_eq!((e.line, e.key.as_deref()), (6, Some("queue_depth")), "{e}");
    let e = bad(&base.replace("name = \"e\"", "name = \"e\"\nworkers = 300"));
    assert_eq!((e.line, e.key.as_deref()), (5, Some("workers")), "{e}");
    let on_dispatcher = DaemonConfig::parse(
        &base.replace("name = \"e\"", "name = \"e\"\nworkers = 0"),
        Path::new("d.toml"),
    )
    .unwrap();
    assert_eq!(on_dispatcher.engines[0].workers, 0);
    assert!(DaemonConfig::parse(base, Path::new("d.toml")).is_ok());
}

/// Open descriptors of this process.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Memory regions mapped in this process.
fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .count()
}

#[test]
fn a_thousand_attach_submit_leave_cycles_leak_nothing() {
    let _alone = ALONE.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (_d, socket) = daemon("cycles");
    // Warm up (threads, caches), then count.
    for _ in 0..5 {
        let mut c = connect_when_free(&socket);
        let s = crc(&mut c, 1);
        c.submit(&s).unwrap();
        c.wait().unwrap();
    }
    let (fds, maps) = (open_fds(), mappings());
    for i in 0..1000 {
        let mut c = connect_when_free(&socket);
        let s = crc(&mut c, i);
        c.submit(&s).unwrap();
        // Half wait for their answer, half leave with the task in flight.
        if i % 2 == 0 {
            assert_eq!(c.wait().unwrap().outcome, CompletionStatus::Ok);
        }
    }
    // Every closed connection's region and socket are released once its
    // tasks are done.
    let settled = (0..500).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        open_fds() <= fds + 2 && mappings() <= maps + 4
    });
    assert!(
        settled,
        "fds {} -> {}, mappings {} -> {}",
        fds,
        open_fds(),
        maps,
        mappings()
    );
}

#[test]
fn a_stopped_daemon_gives_its_clients_an_error_not_a_hang() {
    let _beside = ALONE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (d, socket) = daemon("stopped");
    let mut c = Client::connect(&socket, "a").unwrap();
    let s = crc(&mut c, 1);
    c.submit(&s).unwrap();
    assert_eq!(c.wait().unwrap().outcome, CompletionStatus::Ok);
    d.stop();
    // New connections are refused by the system: the socket is gone.
    assert!(Client::connect(&socket, "a").is_err());
}

#[test]
fn a_submission_over_quota_is_answered_and_told_on_the_event_ring() {
    let _beside = ALONE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (d, socket) = daemon("events");
    let mut c = Client::connect(&socket, "a").unwrap();
    let h = c.register("crc32c", &BTreeMap::new()).unwrap();
    let s = |tag, len| Submission {
        handle: h,
        flags: 0,
        input_offset: 0,
        input_len: len,
        output_offset: 60 << 10,
        output_cap: 4,
        tag,
    };
    // The operator lowers a's memory quota to 16 KiB while it runs: its
    // arena stays 64 KiB, and a task of 40 KiB no longer fits the bytes
    // it may have queued or running, whatever else is in flight.
    let admin = isola_wire::control::connect(d.admin_socket()).unwrap();
    let set = isola_wire::admin::AdminRequest::Set {
        tenant: "a".into(),
        changes: vec![isola_wire::admin::KeyChange {
            key: "memory_quota".into(),
            value: Some(serde_json::json!("16KiB")),
        }],
    };
    isola_wire::control::send(rustix::fd::AsFd::as_fd(&admin), &set, None).unwrap();
    let (reply, _) =
        isola_wire::control::recv::<isola_wire::admin::AdminReply>(rustix::fd::AsFd::as_fd(&admin)).unwrap();
    assert!(
        matches!(reply, isola_wire::admin::AdminReply::Done { .. }),
        "{reply:?}"
    );
    c.submit_all(&[s(1, 40 << 10), s(2, 8 << 10), s(3, 40 << 10)])
        .unwrap();
    let mut outcomes: Vec<(u64, CompletionStatus)> = (0..3)
        .map(|_| c.wait().unwrap())
        .map(|d| (d.tag, d.outcome))
        .collect();
    outcomes.sort_by_key(|o| o.0);
    // Rejected(2): over quota; the small task fits.
    assert_eq!(
        outcomes,
        [
            (1, CompletionStatus::Rejected(2)),
            (2, CompletionStatus::Ok),
            (3, CompletionStatus::Rejected(2))
        ]
    );
    let mut told = Vec::new();
    while let Some(e) = c.event().unwrap() {
        if e.kind == isola_wire::EventKind::QuotaExceeded {
            told.push(e.value);
        }
    }
    told.sort_unstable();
    assert_eq!(
        told,
        [1, 3],
        "each refusal is told on the event ring with its tag"
    );
}

#[test]
fn a_drain_answers_what_was_taken_tells_the_tenant_and_closes() {
    let _beside = ALONE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (d, socket) = daemon("drain");
    let mut c = Client::connect(&socket, "a").unwrap();
    let s = crc(&mut c, 0);
    c.submit_all(&[s, Submission { tag: 1, ..s }, Submission { tag: 2, ..s }])
        .unwrap();
    // Taken (and likely done) before the drain begins.
    let first = c.wait().unwrap();
    assert_eq!(first.outcome, CompletionStatus::Ok);
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(d.drain(std::time::Duration::from_secs(10)), "the drain timed out");
    for _ in 0..2 {
        assert_eq!(c.wait().unwrap().outcome, CompletionStatus::Ok);
    }
    let mut draining = false;
    while let Some(e) = c.event().unwrap() {
        draining |= e.kind == isola_wire::EventKind::Draining;
    }
    assert!(draining, "the tenant was not told");
    // The connection is closed: the next wait is an error, not a hang.
    assert!(matches!(c.wait(), Err(ClientError::Control(_))));
}

#[test]
fn isolad_drains_on_sigterm_and_its_tenants_hear_the_end() {
    let _beside = ALONE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = std::env::temp_dir().join(format!("isolad-sigterm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let uid = rustix::process::getuid().as_raw();
    let config = dir.join("isolad.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nsocket = \"isolad.sock\"\n[[engine]]\nname = \"acc\"\n\
             [[tenant]]\nname = \"a\"\nmemory_quota = \"64KiB\"\nusers = [{uid}]\n"
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_isolad"))
        .arg("--config")
        .arg(&config)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let socket = dir.join("isolad.sock");
    let mut c = (0..500)
        .find_map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            Client::connect(&socket, "a").ok()
        })
        .expect("isolad did not start");
    let s = crc(&mut c, 3);
    c.submit(&s).unwrap();
    assert_eq!(c.wait().unwrap().outcome, CompletionStatus::Ok);
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    assert!(matches!(c.wait(), Err(ClientError::Control(_))));
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!socket.exists(), "the socket was left behind");
}

#[test]
fn a_tenant_cannot_have_the_daemon_read_its_files() {
    let _beside = ALONE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (_d, socket) = daemon("files");
    let mut c = Client::connect(&socket, "a").unwrap();
    for (op, key) in [
        ("ipv4-router", "routes"),
        ("firewall", "rules"),
        ("io-read", "memory"),
    ] {
        let params: BTreeMap<String, String> = [(key.to_string(), "/etc/passwd".to_string())].into();
        match c.register(op, &params) {
            Err(ClientError::Failed(reason)) => assert!(reason.contains(key), "{reason}"),
            other => panic!("{op} with {key}: {other:?}"),
        }
    }
    // Without the file, the operator's generated table serves.
    assert!(c.register("ipv4-router", &BTreeMap::new()).is_ok());
}

/// A daemon whose socket files were deleted under it still stops (its
/// accepting threads are woken by shutting their listeners down, not by
/// connecting to a path that may be gone).
#[test]
fn a_daemon_whose_socket_files_are_gone_still_stops() {
    let dir = std::env::temp_dir().join(format!("isolad-gone-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = "[daemon]\nsocket = \"isolad.sock\"\n[[engine]]\nname = \"acc\"\n\
                [[tenant]]\nname = \"a\"\nmemory_quota = \"1MiB\"\nusers = [\"self\"]\n";
    let d = Daemon::start(DaemonConfig::parse(text, &dir.join("isolad.toml")).unwrap()).unwrap();
    std::fs::remove_file(d.socket()).unwrap();
    std::fs::remove_file(d.admin_socket()).unwrap();
    let (done, stopped) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        d.stop();
        let _ = done.send(());
    });
    assert!(
        stopped.recv_timeout(std::time::Duration::from_secs(10)).is_ok(),
        "the daemon never stopped"
    );
}
