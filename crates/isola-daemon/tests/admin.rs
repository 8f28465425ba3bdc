//! The control plane, live, on a real daemon and its real admin socket:
//! the socket is owner-only; a weight change moves two tenants' shares
//! while they run, and they hear of it on their event rings; a tenant
//! added live attaches at once, one removed is drained and gone; SIGHUP's
//! reload applies the file's tenant changes or refuses the whole file;
//! and a tenant that dies with work queued has that work cancelled while
//! another tenant's is served.

mod backlog;

use backlog::{backlog, task, INPUT};
use isola_client::{Client, CompletionStatus};
use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::admin::{AdminReply, AdminRequest, TenantStatus};
use isola_wire::{control, EventKind, Submission};
use rustix::fd::{AsFd, OwnedFd};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn config_text(uid: u32, extra: &str) -> String {
    format!(
        r#"[daemon]
socket = "isolad.sock"
spare_tenants = 2

[[engine]]
name = "acc"
workers = 1
policy = "sfq"
cost = {{ base = "1us", per_byte_ns = 0.5 }}

[[tenant]]
name = "a"
memory_quota = "64MiB"
users = [{uid}]

[[tenant]]
name = "b"
memory_quota = "64MiB"
users = [{uid}]
{extra}"#
    )
}

fn daemon(name: &str, extra: &str) -> (Daemon, PathBuf) {
    let dir = std::env::temp_dir().join(format!("isolad-admin-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("isolad.toml");
    let text = config_text(rustix::process::getuid().as_raw(), extra);
    std::fs::write(&path, &text).unwrap();
    let d = Daemon::start(DaemonConfig::load(&path).unwrap()).unwrap();
    (d, path)
}

fn ask(admin: &OwnedFd, request: &AdminRequest) -> AdminReply {
    control::send(admin.as_fd(), request, None).unwrap();
    control::recv::<AdminReply>(admin.as_fd()).unwrap().0
}

fn list(admin: &OwnedFd) -> Vec<TenantStatus> {
    let mut all = Vec::new();
    let mut from = 0;
    loop {
        match ask(admin, &AdminRequest::List { from }) {
            AdminReply::Tenants { tenants, next } => {
                all.extend(tenants);
                match next {
                    Some(n) => from = n,
                    None => return all,
                }
            }
            other => panic!("expected tenants, got {other:?}"),
        }
    }
}

fn done(reply: AdminReply) -> String {
    match reply {
        AdminReply::Done { message } => message,
        other => panic!("expected done, got {other:?}"),
    }
}

fn failed(reply: AdminReply) -> String {
    match reply {
        AdminReply::Failed { reason } => reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn the_admin_socket_is_owner_only() {
    let (d, _) = daemon("mode", "");
    let mode = rustix::fs::stat(d.admin_socket()).unwrap().st_mode & 0o777;
    assert_eq!(mode, 0o600, "the admin socket is the owner's alone");
    let admin = control::connect(d.admin_socket()).unwrap();
    let names: Vec<String> = list(&admin).into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["a", "b"], "spare seats are not listed");
}

#[test]
fn a_weight_change_moves_the_shares_while_tenants_run() {
    let (d, _) = daemon("weight", "");
    let admin = control::connect(d.admin_socket()).unwrap();
    let set = |tenant: &str, changes: &str| {
        done(ask(
            &admin,
            &AdminRequest::Set {
                tenant: tenant.into(),
                changes: self::changes(changes),
            },
        ))
    };
    // Held at a trickle while both queue 240 equal tasks, so that both are
    // wholly in the core when they run: then the core's order of dispatch,
    // which the test reads, is the policy's alone, however busy the
    // machine is.
    set("a", "limit = \"1MB/s\"");
    set("b", "limit = \"1MB/s\"");
    let start = Arc::new(std::sync::Barrier::new(2));
    let counts = [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))];
    let loops: Vec<_> = ["a", "b"]
        .iter()
        .zip(&counts)
        .map(|(n, c)| {
            backlog(
                d.socket().to_path_buf(),
                n,
                "sha256",
                240,
                Arc::clone(&start),
                Arc::clone(c),
            )
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    let until = |done: &dyn Fn() -> bool| {
        while !done() {
            assert!(Instant::now() < deadline, "the tenants' tasks did not run");
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    until(&|| list(&admin).iter().all(|t| t.figures.submitted == 240));
    set("a", "limit = \"\"");
    set("b", "limit = \"\"");
    let released_ns = d.runtime().now_ns();
    let done_now = counts.each_ref().map(|c| c.load(Ordering::Acquire));
    // 30 each dispatched after the release: a completion counted here may
    // be of a task dispatched just before it (one in service per worker),
    // so a few more completions are waited for.
    until(&|| {
        counts
            .iter()
            .zip(done_now)
            .all(|(c, n)| c.load(Ordering::Acquire) >= n + 34)
    });
    // The change lands between these two readings of the daemon's clock.
    let before_ns = d.runtime().now_ns();
    set("a", "weight = 3.0");
    let after_ns = d.runtime().now_ns();
    let mut ran: Vec<(Client, Vec<u64>)> = loops.into_iter().map(|l| l.join().unwrap()).collect();
    // Every dispatch in order, by tenant: what the core decided.
    let mut order: Vec<(u64, usize)> = ran
        .iter()
        .enumerate()
        .flat_map(|(t, (_, d))| d.iter().map(move |&ns| (ns, t)))
        .collect();
    order.sort_unstable();
    let share_of_a = |window: &[(u64, usize)]| {
        let a = window.iter().filter(|x| x.1 == 0).count();
        a as f64 / (window.len() - a).max(1) as f64
    };
    let released = order.partition_point(|x| x.0 <= released_ns);
    let before = order.partition_point(|x| x.0 < before_ns);
    let after = order.partition_point(|x| x.0 <= after_ns);
    assert!(
        before >= released + 60,
        "{} dispatched between the release and the change",
        before - released
    );
    // Before: 1:1 over the last 40 (both released); after (past the
    // dispatch that may have been under way): 3:1 over the next 160.
    let even = share_of_a(&order[before - 40..before]);
    let uneven = share_of_a(&order[after + 1..after + 161]);
    assert!(
        (0.8..1.25).contains(&even),
        "equal weights share 1:1, got {even:.2}"
    );
    assert!(
        (2.6..3.45).contains(&uneven),
        "weights 3:1 share 3:1, got {uneven:.2}"
    );
    let listed = list(&admin);
    assert_eq!(listed[0].slo.weight, 3.0);
    // Each connected tenant heard of each change to it after it attached:
    // a of its limit's end and of its weight, b of its limit's end.
    let changes = |c: &mut Client| {
        std::iter::from_fn(|| c.event().unwrap())
            .filter(|e| e.kind == EventKind::SloChanged)
            .count()
    };
    assert_eq!(changes(&mut ran[0].0), 2);
    assert_eq!(changes(&mut ran[1].0), 1);
}

#[test]
fn a_refused_change_names_its_key_and_changes_nothing() {
    let (d, _) = daemon("refused", "");
    let admin = control::connect(d.admin_socket()).unwrap();
    let reason = failed(ask(
        &admin,
        &AdminRequest::Set {
            tenant: "a".into(),
            changes: changes("weight = -2.0"),
        },
    ));
    assert!(reason.contains("weight"), "{reason}");
    // A mistyped key is named, at no line and column: the text checked is
    // the changed table, not what the operator typed.
    let reason = failed(ask(
        &admin,
        &AdminRequest::Set {
            tenant: "a".into(),
            changes: changes("wieght = 2.0"),
        },
    ));
    assert!(
        reason.starts_with("isola ctl set a: key `wieght`: unknown field"),
        "{reason}"
    );
    let reason = failed(ask(
        &admin,
        &AdminRequest::Set {
            tenant: "a".into(),
            changes: changes("limit = \"10\""),
        },
    ));
    assert!(reason.contains("limit"), "{reason}");
    let reason = failed(ask(
        &admin,
        &AdminRequest::Set {
            tenant: "nobody".into(),
            changes: changes("weight = 2.0"),
        },
    ));
    assert!(reason.contains("no tenant `nobody`"), "{reason}");
    assert_eq!(list(&admin)[0].slo.weight, 1.0);
    // A key returns to its default with "".
    done(ask(
        &admin,
        &AdminRequest::Set {
            tenant: "a".into(),
            changes: changes("limit = \"10MB/s\""),
        },
    ));
    assert_eq!(list(&admin)[0].slo.limit.as_deref(), Some("10000000 B/s"));
    done(ask(
        &admin,
        &AdminRequest::Set {
            tenant: "a".into(),
            changes: changes("limit = \"\""),
        },
    ));
    assert_eq!(list(&admin)[0].slo.limit, None);
}

#[test]
fn a_tenant_added_live_attaches_and_one_removed_is_drained_and_gone() {
    let (d, _) = daemon("add", "");
    let admin = control::connect(d.admin_socket()).unwrap();
    let uid = rustix::process::getuid().as_raw();
    let table = format!("name = \"c\"\nmemory_quota = \"1MiB\"\nusers = [{uid}]\nweight = 2.0\n");
    done(ask(
        &admin,
        &AdminRequest::AddTable {
            table: table.clone(),
            origin: "isola ctl add".into(),
        },
    ));
    assert!(failed(ask(
        &admin,
        &AdminRequest::AddTable {
            table,
            origin: "isola ctl add".into()
        }
    ))
    .contains("exists already"));
    let mut c = Client::connect(d.socket(), "c").unwrap();
    let h = c.register("crc32c", &BTreeMap::new()).unwrap();
    c.write(0, b"123456789").unwrap();
    let s = Submission {
        handle: h,
        flags: 0,
        input_offset: 0,
        input_len: 9,
        output_offset: 64,
        output_cap: 4,
        tag: 1,
    };
    c.submit(&s).unwrap();
    assert_eq!(c.wait().unwrap().outcome, CompletionStatus::Ok);
    let listed = list(&admin);
    let row = listed.iter().find(|t| t.name == "c").unwrap();
    assert_eq!(
        (row.slo.weight, row.connections, row.figures.succeeded),
        (2.0, 1, 1)
    );
    // Removal drains it: it hears so, and its next wait ends in an error.
    let message = done(ask(&admin, &AdminRequest::Remove { tenant: "c".into() }));
    assert!(message.contains("draining"), "{message}");
    assert!(c.wait().is_err());
    assert!(std::iter::from_fn(|| c.event().unwrap()).any(|e| e.kind == EventKind::Draining));
    drop(c);
    let start = Instant::now();
    while list(&admin).iter().any(|t| t.name == "c") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the removed tenant's seat is freed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(Client::connect(d.socket(), "c").is_err());
    // Two spare seats: a third tenant added live does not fit... after two.
    for name in ["d", "e"] {
        let table = format!("name = \"{name}\"\nmemory_quota = \"1MiB\"\nusers = [{uid}]\n");
        done(ask(
            &admin,
            &AdminRequest::AddTable {
                table,
                origin: "isola ctl add".into(),
            },
        ));
    }
    let table = format!("name = \"f\"\nmemory_quota = \"1MiB\"\nusers = [{uid}]\n");
    assert!(failed(ask(
        &admin,
        &AdminRequest::AddTable {
            table,
            origin: "isola ctl add".into()
        }
    ))
    .contains("no spare tenant seat"));
    // The new tenant in c's old seat starts from zero.
    let listed = list(&admin);
    assert!(listed.iter().all(|t| t.figures.submitted == 0), "{listed:?}");
}

#[test]
fn a_reload_applies_the_files_tenants_or_refuses_it_whole() {
    let (d, path) = daemon("reload", "");
    let admin = control::connect(d.admin_socket()).unwrap();
    let uid = rustix::process::getuid().as_raw();
    // b's weight changes, c is new.
    let text = config_text(
        uid,
        &format!("\n[[tenant]]\nname = \"c\"\nmemory_quota = \"1MiB\"\nusers = [{uid}]\n"),
    )
    .replace(
        "name = \"b\"\nmemory_quota",
        "name = \"b\"\nweight = 4.0\nmemory_quota",
    );
    std::fs::write(&path, text).unwrap();
    done(ask(&admin, &AdminRequest::Reload));
    let listed = list(&admin);
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(listed[1].slo.weight, 4.0);
    // A changed engine is refused whole, naming the key; nothing changes.
    let text = config_text(uid, "").replace("workers = 1", "workers = 2");
    std::fs::write(&path, text).unwrap();
    let reason = d.reload().unwrap_err();
    assert!(reason.contains("`engine` changed"), "{reason}");
    assert_eq!(list(&admin).len(), 3);
    // A mistake in the file is reported with its line and key.
    std::fs::write(
        &path,
        config_text(uid, "").replace("weight", "wieght")
            + "\n[[tenant]]\nname = \"x\"\nmemory_quota = \"1MiB\"\nusers = [1]\nqueue_cap = 0\n",
    )
    .unwrap();
    let reason = d.reload().unwrap_err();
    assert!(reason.contains("queue_cap"), "{reason}");
    // Tenants gone from the file are removed.
    std::fs::write(
        &path,
        config_text(uid, "").replace("name = \"b\"", "name = \"bb\""),
    )
    .unwrap();
    done(ask(&admin, &AdminRequest::Reload));
    let names: Vec<String> = list(&admin).into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["a", "bb"]);
}

#[test]
fn a_dead_tenants_queued_work_is_cancelled_and_the_other_is_served() {
    let (d, _) = daemon("dead", "");
    let admin = control::connect(d.admin_socket()).unwrap();
    // Tenant a is held to 1 MB/s (four of its 256 KiB tasks a second),
    // queues 200 and dies without waiting: most are still queued.
    done(ask(
        &admin,
        &AdminRequest::Set {
            tenant: "a".into(),
            changes: changes("limit = \"1MB/s\""),
        },
    ));
    {
        let mut c = Client::connect(d.socket(), "a").unwrap();
        let h = c.register("sha256", &BTreeMap::new()).unwrap();
        c.write(0, &vec![1u8; INPUT as usize]).unwrap();
        let batch: Vec<Submission> = (0..200).map(|i| task(h, i)).collect();
        c.submit_all(&batch).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut b = Client::connect(d.socket(), "b").unwrap();
    let h = b.register("sha256", &BTreeMap::new()).unwrap();
    b.write(0, &vec![2u8; INPUT as usize]).unwrap();
    let batch: Vec<Submission> = (0..20).map(|i| task(h, i)).collect();
    b.submit_all(&batch).unwrap();
    for _ in 0..20 {
        assert_eq!(b.wait().unwrap().outcome, CompletionStatus::Ok);
    }
    let start = Instant::now();
    loop {
        let a = list(&admin).into_iter().find(|t| t.name == "a").unwrap();
        let f = a.figures;
        // Every task ended once, and the connection is gone.
        if f.succeeded + f.cancelled == f.submitted && f.submitted > 0 && a.connections == 0 {
            assert!(f.cancelled > 0, "a dead tenant's queued work is cancelled: {f:?}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "a's tasks all end: {f:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `isola ctl costs` and `list` (issue 29): after a tenant's sha256 tasks,
/// the engine reports what it learned of sha256 (samples, a cost per byte
/// that predicts the tasks it measured, the recent error), and the
/// tenant's figures carry the predicted and the measured service of the
/// same tasks, also per engine.
#[test]
fn ctl_shows_what_the_engine_learned_and_predicted_against_measured() {
    let (d, _) = daemon("costs", "");
    let admin = control::connect(d.admin_socket()).unwrap();
    let start = Arc::new(std::sync::Barrier::new(1));
    let count = Arc::new(AtomicU64::new(0));
    let (_client, _) = backlog(
        d.socket().to_path_buf(),
        "a",
        "sha256",
        40,
        start,
        Arc::clone(&count),
    )
    .join()
    .unwrap();
    // The dispatcher publishes what was learned at most every 50 ms.
    let deadline = Instant::now() + Duration::from_secs(10);
    let engines = loop {
        let AdminReply::Costs { engines } = ask(&admin, &AdminRequest::Costs) else {
            panic!("expected costs");
        };
        if engines[0].ops.iter().any(|o| o.op == "sha256" && o.samples >= 30) {
            break engines;
        }
        assert!(
            Instant::now() < deadline,
            "nothing learned of sha256: {engines:?}"
        );
        // A completion publishes: one more task after the interval.
        std::thread::sleep(Duration::from_millis(60));
        let one = Arc::new(std::sync::Barrier::new(1));
        let _ = backlog(
            d.socket().to_path_buf(),
            "b",
            "sha256",
            1,
            one,
            Arc::new(AtomicU64::new(0)),
        )
        .join();
    };
    assert_eq!(engines.len(), 1);
    assert!(engines[0].learning, "accelerators learn by default");
    let sha = engines[0].ops.iter().find(|o| o.op == "sha256").unwrap();
    assert!(sha.in_use && sha.per_byte_ns > 0.0, "{sha:?}");
    let a = list(&admin).into_iter().find(|t| t.name == "a").unwrap();
    assert!(
        a.figures.predicted_ns > 0 && a.figures.busy_ns > 0,
        "{:?}",
        a.figures
    );
    // The fit predicts what the tasks took on average (within 2x), whatever
    // the configured guess (1 us + 0.5 ns a byte) said.
    let fitted = sha.base_ns + sha.per_byte_ns * INPUT as f64;
    let mean = a.figures.busy_ns as f64 / 40.0;
    assert!(
        (0.5..2.0).contains(&(fitted / mean)),
        "fit {fitted} ns, measured mean {mean} ns: {sha:?}"
    );
    let acc = a.engines.iter().find(|e| e.engine == "acc").unwrap();
    assert_eq!(acc.measured_ns, a.figures.busy_ns, "one engine: the same service");
    assert_eq!(acc.predicted_ns, a.figures.predicted_ns);
}

/// `text`'s keys (TOML) as the typed changes `isola ctl set` sends; `""`
/// returns a key to its default.
fn changes(text: &str) -> Vec<isola_wire::admin::KeyChange> {
    let table: toml::Table = toml::from_str(text).unwrap();
    table
        .into_iter()
        .map(|(key, v)| isola_wire::admin::KeyChange {
            key,
            value: (v.as_str() != Some("")).then(|| serde_json::to_value(v).unwrap()),
        })
        .collect()
}
