//! The adapters' common layer (`adapters/common/isola_adapter.c`), driven
//! by its probe program as an adapter drives it, against a real isolad in
//! a child process: the work goes to isolad (its metrics count it), its
//! outputs are right (checked by `sha256sum` and `gzip`), and every way
//! the daemon can fail — absent, refusing, out of arena, hung, killed with
//! SIGKILL and restarted — ends each call in a counted fallback within its
//! time limit, never a wrong answer or a hang.

mod common;

use common::adapters::{adapters, engine, run_bounded, tenant, uid, Adapters, Isolad};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The probe running `args` against `d` as `tenant`, with `env` set.
fn probe(a: &Adapters, d: &Isolad, who: &str, env: &[(&str, &str)], args: &[&str], input: &[u8]) -> Output {
    let mut cmd = Command::new(&a.probe);
    cmd.args(args)
        .env("ISOLA_SOCKET", &d.socket)
        .env("ISOLA_TENANT", who);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_bounded(&mut cmd, input, Duration::from_secs(60))
}

/// The probe's per-run lines ("done N", "fallback REASON", ...).
fn runs(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.starts_with('{'))
        .map(str::to_string)
        .collect()
}

fn sha256sum(data: &[u8]) -> String {
    let out = run_bounded(&mut Command::new("sha256sum"), data, Duration::from_secs(30));
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 256) as u8).collect()
}

#[test]
fn calls_run_on_isolad_and_give_the_right_answer() {
    let Some(a) = adapters() else { return };
    let d = Isolad::start(
        "common-run",
        &(engine("fcfs") + &tenant("t", "memory_quota = \"16MiB\"")),
    );
    for n in [0, 1, 8191, 1 << 20] {
        let input = data(n);
        let before = d.completed("t");
        let out = probe(&a, &d, "t", &[], &["sha256"], &input);
        assert!(out.status.success(), "{n} bytes: {:?}", runs(&out));
        assert_eq!(hex(&out.stdout), sha256sum(&input), "sha256 of {n} bytes");
        assert_eq!(d.completed("t"), before + 1.0, "the task went through isolad");
    }
    // A gzip stream that the stock gzip accepts and inflates to the input.
    let input = data(300_000);
    let out = probe(
        &a,
        &d,
        "t",
        &[],
        &["zlib-compress", "format=gzip", "level=6"],
        &input,
    );
    assert!(out.status.success(), "{:?}", runs(&out));
    let unpacked = run_bounded(
        Command::new("gzip").arg("-dc"),
        &out.stdout,
        Duration::from_secs(30),
    );
    assert!(unpacked.status.success());
    assert_eq!(unpacked.stdout, input);
    // An output over the room given: the operator's refusal, with the room it needs.
    let out = probe(
        &a,
        &d,
        "t",
        &[],
        &["--room", "10", "zlib-compress", "format=gzip"],
        &input,
    );
    let line = &runs(&out)[0];
    assert!(line.starts_with("op-failed 2 "), "{line}");
}

#[test]
fn an_absent_or_refusing_daemon_is_a_counted_fallback() {
    let Some(a) = adapters() else { return };
    let d = Isolad::start(
        "common-absent",
        &(engine("fcfs")
            + &format!(
                "[[tenant]]\nname = \"other\"\nmemory_quota = \"1MiB\"\nusers = [{}]\n",
                uid().wrapping_add(1)
            )),
    );
    let stats = d.dir.join("stats.jsonl");
    let stats_env = stats.to_str().unwrap();
    let out = probe(
        &a,
        &d,
        "other",
        &[("ISOLA_STATS", stats_env)],
        &["--repeat", "2", "sha256"],
        b"abc",
    );
    assert_eq!(runs(&out), ["fallback refused", "fallback refused"]);
    let mut absent = Command::new(&a.probe);
    absent
        .args(["sha256"])
        .env("ISOLA_SOCKET", d.dir.join("nobody.sock"))
        .env("ISOLA_TENANT", "t")
        .env("ISOLA_STATS", stats_env);
    let out = run_bounded(&mut absent, b"abc", Duration::from_secs(10));
    assert_eq!(runs(&out), ["fallback absent"]);
    let out = probe(&a, &d, "", &[("ISOLA_STATS", stats_env)], &["sha256"], b"abc");
    assert_eq!(runs(&out), ["fallback unconfigured"]);
    // Each process wrote its counters as one JSON line.
    let lines = common::adapters::stats_lines(&stats);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["fallbacks"]["refused"], 2);
    assert_eq!(lines[1]["fallbacks"]["absent"], 1);
    assert_eq!(lines[2]["fallbacks"]["unconfigured"], 1);
    assert_eq!(lines[0]["offloaded"], 0);
    // A bad setting names its variable.
    let out = probe(&a, &d, "t", &[("ISOLA_FALLBACK", "maybe")], &["sha256"], b"abc");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("ISOLA_FALLBACK") && text.contains("software or error"),
        "{text}"
    );
}

#[test]
fn a_task_over_the_arena_falls_back_and_isolad_counts_it() {
    let Some(a) = adapters() else { return };
    let d = Isolad::start(
        "common-quota",
        &(engine("fcfs") + &tenant("t", "memory_quota = \"64KiB\"")),
    );
    let out = probe(&a, &d, "t", &[], &["--repeat", "2", "sha256"], &data(200_000));
    assert_eq!(runs(&out), ["fallback no_arena", "fallback no_arena"]);
    let reported = d.counter("isola_tenant_fallbacks_total", "t", &["reason=\"no_arena\""]);
    assert_eq!(reported, 2.0, "the fallbacks were told to isolad");
    // A small one still runs there.
    let out = probe(&a, &d, "t", &[], &["sha256"], b"abc");
    assert!(out.status.success(), "{:?}", runs(&out));
}

#[test]
fn a_hung_daemon_times_out_and_its_late_completion_is_collected() {
    let Some(a) = adapters() else { return };
    let d = Isolad::start(
        "common-hung",
        &(engine("fcfs") + &tenant("t", "memory_quota = \"16MiB\"")),
    );
    let input = data(100_000);
    let mut cmd = Command::new(&a.probe);
    cmd.args(["--repeat", "10", "--gap", "100", "sha256"])
        .env("ISOLA_SOCKET", &d.socket)
        .env("ISOLA_TENANT", "t")
        .env("ISOLA_TIMEOUT_MS", "300");
    // Attached before the daemon hangs: the first runs wait out their limit.
    std::thread::scope(|s| {
        let started = Instant::now();
        let run = s.spawn(|| run_bounded(&mut cmd, &input, Duration::from_secs(30)));
        std::thread::sleep(Duration::from_millis(150));
        d.freeze(true);
        std::thread::sleep(Duration::from_millis(700));
        d.freeze(false);
        let out = run.join().unwrap();
        let lines = runs(&out);
        assert!(lines.iter().any(|l| l == "fallback timeout"), "{lines:?}");
        assert_eq!(lines.last().unwrap(), "done 32", "{lines:?}");
        assert_eq!(hex(&out.stdout), sha256sum(&input));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    });
}

#[test]
fn a_daemon_killed_mid_run_then_restarted() {
    let Some(a) = adapters() else { return };
    let mut d = Isolad::start(
        "common-kill",
        &(engine("fcfs") + &tenant("t", "memory_quota = \"16MiB\"")),
    );
    let input = data(1 << 20);
    let mut cmd = Command::new(&a.probe);
    cmd.args(["--repeat", "150", "--gap", "10", "sha256"])
        .env("ISOLA_SOCKET", &d.socket)
        .env("ISOLA_TENANT", "t")
        .env("ISOLA_RETRY_MS", "20");
    let out = std::thread::scope(|s| {
        let run = s.spawn(|| run_bounded(&mut cmd, &input, Duration::from_secs(120)));
        std::thread::sleep(Duration::from_millis(400));
        d.kill9();
        std::thread::sleep(Duration::from_millis(300));
        d.restart();
        run.join().unwrap()
    });
    let lines = runs(&out);
    let done = lines.iter().filter(|l| *l == "done 32").count();
    let lost = lines
        .iter()
        .filter(|l| *l == "fallback disconnected" || *l == "fallback absent")
        .count();
    assert_eq!(
        done + lost,
        150,
        "every run ended one way or the other: {lines:?}"
    );
    assert!(lost > 0, "the kill was noticed");
    assert_eq!(
        lines.last().unwrap(),
        "done 32",
        "offload resumed after the restart"
    );
    assert!(d.completed("t") > 0.0, "the restarted daemon served it");
    assert_eq!(hex(&out.stdout), sha256sum(&input));
}
