//! Submit-to-completion of a 64-byte `crc32c` task through the daemon
//! (client, socket wake-ups, shared-memory rings, the runtime behind), and
//! the same task submitted to an in-process runtime of the same
//! configuration, in one sitting. Issue 15's goal: p50 within 1 us of
//! in-process.
//!
//! Run: `cargo bench -p isola-daemon --bench roundtrip`

use criterion::{criterion_group, criterion_main, Criterion};
use isola_client::Client;
use isola_core::{AffineCost, Slo, TenantId};
use isola_daemon::{Daemon, DaemonConfig};
use isola_runtime::{EngineConfig, Mode, RuntimeBuilder};
use isola_wire::Submission;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// p50 and p99 of `n` timed calls of `f`, in ns.
fn percentiles(n: usize, mut f: impl FnMut()) -> (u128, u128) {
    let mut t: Vec<u128> = (0..n)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_nanos()
        })
        .collect();
    t.sort_unstable();
    (t[n / 2], t[n * 99 / 100])
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("roundtrip");
    g.sample_size(30)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));

    let mut b = RuntimeBuilder::new();
    b.engine(EngineConfig::new(
        "acc",
        &[],
        1,
        Arc::new(AffineCost::new(1_000.0, 0.5).unwrap()),
    ));
    b.tenant("a", Slo::default());
    b.mode(Mode::Isolated {
        policy: "sfq".into(),
        params: BTreeMap::new(),
    });
    let rt = b.start().unwrap();
    let handle = rt.tenant(TenantId(0));
    let payload = Arc::new(vec![7u8; 64]);
    let params = BTreeMap::new();
    let mut in_process = || {
        let c = handle
            .submit("crc32c", &params, Arc::clone(&payload))
            .unwrap()
            .wait();
        assert!(c.result.is_ok());
    };
    g.bench_function("crc32c-64B/in-process", |b| b.iter(&mut in_process));

    let dir = std::env::temp_dir().join(format!("isolad-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let uid = rustix::process::getuid().as_raw();
    let config = format!(
        "[daemon]\nsocket = \"b.sock\"\n[[engine]]\nname = \"acc\"\npolicy = \"sfq\"\n\
         cost = {{ base = \"1us\", per_byte_ns = 0.5 }}\n[[tenant]]\nname = \"a\"\nmemory_quota = \"64KiB\"\nusers = [{uid}]\n"
    );
    let daemon = Daemon::start(DaemonConfig::parse(&config, &dir.join("d.toml")).unwrap()).unwrap();
    let mut client = Client::connect(daemon.socket(), "a").unwrap();
    let crc = client.register("crc32c", &BTreeMap::new()).unwrap();
    client.write(0, &[7u8; 64]).unwrap();
    let s = Submission {
        handle: crc,
        flags: 0,
        input_offset: 0,
        input_len: 64,
        output_offset: 4096,
        output_cap: 4,
        tag: 0,
    };
    let mut through_daemon = || {
        client.submit(&s).unwrap();
        assert_eq!(client.wait().unwrap().outcome, isola_wire::Outcome::Ok);
    };
    g.bench_function("crc32c-64B/through-daemon", |b| b.iter(&mut through_daemon));
    g.finish();

    // Criterion reports means of batches; the goal is on single round
    // trips' percentiles, measured here back to back.
    let (p50_in, p99_in) = percentiles(20_000, &mut in_process);
    let (p50_d, p99_d) = percentiles(20_000, &mut through_daemon);
    println!("crc32c 64 B round trip, 20,000 each: in-process p50 {p50_in} ns p99 {p99_in} ns; through the daemon p50 {p50_d} ns p99 {p99_d} ns");
    drop(client);
    daemon.stop();
}

criterion_group!(benches, bench);
criterion_main!(benches);
