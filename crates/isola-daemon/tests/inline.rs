//! isolad's engines with workers run a tenant process's small tasks on
//! the dispatcher while the workers have nothing (`inline_below`, default
//! 2 us): the daemon's own record of each completion says where it ran,
//! and `inline_below = "0s"` sends every task to the worker. The key is
//! checked at its line.

mod config_file;

use isola_client::{Client, CompletionStatus};
use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::Submission;
use std::collections::BTreeMap;
use std::path::Path;

/// A daemon called `name` whose one engine has a worker, with `extra` in
/// its `[[engine]]` table; a tenant process's 50 CRCs of 64 B, one at a
/// time: where each ran (on the dispatcher or not), in order. Every task
/// is predicted by the configured model, 1.03 us (a learning engine's
/// first fits take in its first, cold runs' tens of microseconds, and
/// send a few dozen tasks to the worker until newer samples outweigh
/// them).
fn where_tasks_ran(name: &str, extra: &str) -> Vec<bool> {
    let uid = rustix::process::getuid().as_raw();
    let text = format!(
        r#"[daemon]
socket = "isolad.sock"

[[engine]]
name = "acc"
workers = 1
policy = "sfq"
cost = {{ base = "1us", per_byte_ns = 0.5 }}
learn = false
{extra}

[[tenant]]
name = "a"
memory_quota = "64KiB"
users = [{uid}]
"#
    );
    let d = Daemon::start(config_file::parse(name, &text)).unwrap();
    d.record_completions(true);
    let mut c = Client::connect(d.socket(), "a").unwrap();
    let h = c.register("crc32c", &BTreeMap::new()).unwrap();
    c.write(0, &[9u8; 64]).unwrap();
    for i in 0..50u64 {
        c.submit(&Submission {
            handle: h,
            flags: 0,
            input_offset: 0,
            input_len: 64,
            output_offset: 4096,
            output_cap: 4,
            tag: i,
        })
        .unwrap();
        let done = c.wait().unwrap();
        assert_eq!((done.tag, done.outcome), (i, CompletionStatus::Ok));
    }
    // The daemon keeps its record of a completion just after delivering
    // it: wait for the last one.
    let mut ran = d.take_completions();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while ran.len() < 50 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(1));
        ran.extend(d.take_completions());
    }
    ran.sort_by_key(|c| c.submitted_ns);
    assert_eq!(ran.len(), 50, "one completion a task");
    ran.iter().map(|c| c.on_dispatcher).collect()
}

#[test]
fn small_tasks_run_on_the_dispatcher_unless_the_limit_is_zero() {
    let default = where_tasks_ran("inline-default", "");
    assert!(default.iter().all(|&here| here), "{default:?}");
    let off = where_tasks_ran("inline-off", r#"inline_below = "0s""#);
    assert!(off.iter().all(|&here| !here), "{off:?}");
}

#[test]
fn the_key_is_checked_at_its_line() {
    let text = r#"[daemon]
socket = "isolad.sock"

[[engine]]
name = "acc"
inline_below = "2ms"

[[tenant]]
name = "a"
memory_quota = "64KiB"
users = [0]
"#;
    let e = DaemonConfig::parse(text, Path::new("/tmp/inline.toml")).unwrap_err();
    let message = e.to_string();
    assert!(
        message.contains("inline.toml:6") && message.contains("inline_below") && message.contains("1ms"),
        "{message}"
    );
    for (engine, refused) in [
        ("workers = 0\n", "workers = 0"),
        ("kind = \"dma\"\n", "accelerator and pu"),
    ] {
        let e = DaemonConfig::parse(
            &text.replace(
                "inline_below = \"2ms\"",
                &format!("{engine}inline_below = \"1us\""),
            ),
            Path::new("/tmp/inline.toml"),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains(refused) && e.key.as_deref() == Some("inline_below"),
            "{e}"
        );
    }
    let ok = DaemonConfig::parse(&text.replace("2ms", "500ns"), Path::new("/tmp/inline.toml")).unwrap();
    assert_eq!(ok.engines[0].inline_below, 500);
    let default = DaemonConfig::parse(
        &text.replace("inline_below = \"2ms\"\n", ""),
        Path::new("/tmp/inline.toml"),
    );
    assert_eq!(
        default.unwrap().engines[0].inline_below,
        isola_runtime::DEFAULT_INLINE_BELOW
    );
}
