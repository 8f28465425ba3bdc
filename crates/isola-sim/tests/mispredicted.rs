//! Issue 29 in the simulator: a tenant whose 16 MiB deflate tasks are
//! predicted at 8.4 ms (isolad's default model, 1 us + 0.5 ns a byte) but
//! take 63 times that (0.53 s, level 9 on this project's machine), beside
//! a tenant sending 64 B CRC tasks at 200/s, on one accelerator slot. The
//! device times are drawn apart from the prediction
//! (`measured_over_predicted`); the engine learns each operator's cost and
//! splits for its latency-sensitive neighbour in pieces of at most 100 us
//! of predicted service. Under every weight-sharing policy the small
//! tenant's latency stays within one piece of its latency alone (its
//! median) and within one of the other tenant's tasks (its 99th
//! percentile), and the big tenant is charged what it used.

use isola_model::{PolicyResult, Scenario};
use isola_sim::simulate;

const POLICIES: &[&str] = &["sfq", "drr", "wrr", "bvt", "wlbvt", "mclock", "astraea"];

/// The scenario, with the big tenant or without it; `learn` and
/// `split_time` on the engine as given.
fn scenario(policy: &str, with_big: bool, learn: bool) -> String {
    let mut text = format!(
        r#"
        [run]
        duration = "20s"
        seed = 29
        policies = [{{ name = "{policy}", split = "1MiB" }}]

        [[engine]]
        name = "acc"
        kind = "accelerator"
        slots = 1
        service = {{ dist = "affine", base = "1us", per_byte_ns = 0.5 }}
        split_when = "for_latency"
        split_time = "100us"
        learn = {learn}

        [[tenant]]
        name = "small"
        class = "latency-sensitive"
        latency = "1ms"
        [tenant.workload]
        engine = "acc"
        op = "crc32c"
        size = "64B"
        arrival = {{ poisson = "200/s" }}
        "#
    );
    if with_big {
        text.push_str(
            r#"
            [[tenant]]
            name = "big"
            [tenant.workload]
            engine = "acc"
            op = "deflate"
            params = { level = 9 }
            size = "16MiB"
            arrival = { closed = 2 }
            start = "1s"
            measured_over_predicted = 63.0
            "#,
        );
    }
    text
}

fn run(policy: &str, with_big: bool, learn: bool) -> PolicyResult {
    let s = Scenario::parse(&scenario(policy, with_big, learn), "mispredicted.toml").unwrap();
    simulate(&s, &[], None, |_, _, _| {}).unwrap().policies.remove(0)
}

#[test]
fn a_mispredicted_neighbour_costs_the_small_tenant_at_most_one_piece() {
    let big_task_ns = (1_000.0 + 0.5 * (16u64 << 20) as f64) * 63.0;
    // One piece: at most 100 us of the learned cost, but never under
    // `MIN_TIMED_SUBTASK_BYTES` (2 KiB), which at 63 us + 31.5 ns a byte
    // takes 128 us.
    let piece_ns =
        ((1_000.0 + 0.5 * isola_core::MIN_TIMED_SUBTASK_BYTES as f64) * 63.0).max(100_000.0) as u64;
    let mut failed = Vec::new();
    for &policy in POLICIES {
        let alone = run(policy, false, true).tenants[0].latency_ns;
        let shared = run(policy, true, true);
        let (small, big) = (&shared.tenants[0], &shared.tenants[1]);
        eprintln!(
            "{policy}: small p50 alone {} ns, shared {} ns, p99 {} ns",
            alone.p50, small.latency_ns.p50, small.latency_ns.p99
        );
        if small.latency_ns.p50 > alone.p50 + piece_ns {
            failed.push(format!(
                "{policy}: small p50 {} ns alone, {} ns beside the big tenant (one piece: {piece_ns} ns)",
                alone.p50, small.latency_ns.p50
            ));
        }
        if small.latency_ns.p99 as f64 > big_task_ns {
            failed.push(format!(
                "{policy}: small p99 {} ns, over one big task ({big_task_ns} ns)",
                small.latency_ns.p99
            ));
        }
        if big.completed <= 10 {
            failed.push(format!("{policy}: the big tenant ran {} tasks", big.completed));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Without learning, the engine's one model predicts the big tenant's
/// pieces 63 times too cheap: pieces of "100 us" take 6.3 ms and the small
/// tenant waits for them (what isolad did before issue 29).
#[test]
fn without_learning_the_pieces_are_63_times_too_long() {
    let shared = run("sfq", true, false);
    let alone = run("sfq", false, false).tenants[0].latency_ns;
    let small = &shared.tenants[0].latency_ns;
    assert!(
        small.p50 > alone.p50 + 1_000_000,
        "small p50 {} ns beside mispredicted pieces (alone {} ns)",
        small.p50,
        alone.p50
    );
}
