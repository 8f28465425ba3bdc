//! Each unmodified process a tenant: two `openssl speed` runs, each
//! configured (by the environment alone) as a tenant of its own, back-
//! logged on one isolad engine, share it by their tenants' weights, as
//! libisola clients do. Under `sfq` the tenant of weight 3 gets about
//! three times the other's service (isolad's busy-time counters say); the
//! same runs under the engine's native FIFO share it about evenly.

mod common;

use common::adapters::{adapters, openssl_as, run_bounded, uid, Isolad};
use std::time::Duration;

/// The engine `acc` under `policy`, tenants `light` (weight 1) and
/// `heavy` (weight 3).
fn config(policy: &str) -> String {
    let uid = uid();
    format!(
        "[[engine]]\nname = \"acc\"\npolicy = \"{policy}\"\n\n\
         [[tenant]]\nname = \"light\"\nmemory_quota = \"4MiB\"\nusers = [{uid}]\nweight = 1\n\n\
         [[tenant]]\nname = \"heavy\"\nmemory_quota = \"4MiB\"\nusers = [{uid}]\nweight = 3\n"
    )
}

/// The heavy tenant's busy time over the light one's, both running
/// `openssl speed -evp sha3-256` on 1 MiB blocks (the engine, not the
/// copies in and out, is the bottleneck), two processes each, at once.
fn busy_ratio(policy: &str) -> f64 {
    let a = adapters().expect("checked by the caller");
    let d = Isolad::start(&format!("tenants-{policy}"), &config(policy));
    let speed = |tenant: &str| {
        let mut cmd = openssl_as(
            &a,
            &d.socket,
            tenant,
            0,
            &[
                "speed", "-elapsed", "-evp", "sha3-256", "-bytes", "1048576", "-seconds", "3",
            ],
        );
        run_bounded(&mut cmd, b"", Duration::from_secs(120))
    };
    // Two processes a tenant (not `-multi`, whose children forget
    // `-bytes`), so that each has a task queued while one runs.
    std::thread::scope(|s| {
        let runs: Vec<_> = ["light", "heavy", "light", "heavy"]
            .into_iter()
            .map(|who| (who, s.spawn(move || speed(who))))
            .collect();
        for (who, run) in runs {
            let out = run.join().unwrap();
            assert!(
                out.status.success(),
                "{who}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
    let busy = |t: &str| d.counter("isola_engine_busy_seconds_total", t, &["engine=\"acc\""]);
    let fallbacks = |t: &str| d.counter("isola_tenant_fallbacks_total", t, &[]);
    assert!(
        d.completed("light") > 10.0 && d.completed("heavy") > 10.0,
        "both ran on isolad: {} and {} tasks",
        d.completed("light"),
        d.completed("heavy")
    );
    assert_eq!(fallbacks("light") + fallbacks("heavy"), 0.0, "nothing fell back");
    eprintln!(
        "{policy}: tasks light {} heavy {}, busy light {:.3}s heavy {:.3}s",
        d.completed("light"),
        d.completed("heavy"),
        busy("light"),
        busy("heavy")
    );
    busy("heavy") / busy("light")
}

#[test]
fn two_unmodified_processes_share_an_engine_by_their_weights() {
    if adapters().is_none() {
        return;
    }
    let weighted = busy_ratio("sfq");
    let fifo = busy_ratio("fcfs");
    assert!(
        (2.0..=4.5).contains(&weighted),
        "under sfq the weight-3 tenant got {weighted:.2}x the weight-1 tenant's service"
    );
    assert!(
        (0.5..=1.6).contains(&fifo),
        "under fcfs the two got {fifo:.2}x: weights should not count"
    );
}
