//! Operator throughput, one-shot and split into 64 KiB and 640 KiB subtasks
//! (run one after another on one core: the cost of splitting itself; for a
//! 10-shard EC code, 640 KiB is 64 KiB of every shard).
//!
//! Run: `cargo bench -p isola-ops --bench ops`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use isola_ops::{build_operator, run_split};
use std::collections::BTreeMap;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("ops");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    // (operator, parameters, input bytes)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], usize);
    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    let cases: [Case; 6] = [
        (
            "aes-gcm-encrypt",
            &[("key", KEY), ("iv", "cafebabefacedbaddecaf888")],
            10 << 20,
        ),
        (
            "aes-gcm-encrypt",
            &[
                ("key", KEY),
                ("iv", "cafebabefacedbaddecaf888"),
                ("split", "independent"),
            ],
            10 << 20,
        ),
        ("lz4", &[], 10 << 20),
        ("ec-encode", &[("k", "10"), ("m", "4")], 10 << 20),
        ("crc32c", &[], 10 << 20),
        ("sha256", &[], 10 << 20),
    ];
    for (name, params, len) in cases {
        let p: BTreeMap<String, String> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let op = build_operator(name, &p).expect("valid");
        // A non-default split mode is part of the benchmark's name.
        let name = match p.get("split") {
            Some(mode) => format!("{name}[{mode}]"),
            None => name.to_string(),
        };
        let input: Vec<u8> = (0..len).map(|i| ((i * 2654435761usize) >> 13) as u8).collect();
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(BenchmarkId::new(&name, "one-shot"), |b| {
            b.iter(|| op.run(&input).unwrap())
        });
        g.bench_function(BenchmarkId::new(&name, "split-64KiB"), |b| {
            b.iter(|| run_split(op.as_ref(), &input, 64 * 1024).unwrap())
        });
        // For EC, 64 KiB of every one of the 10 shards per subtask.
        g.bench_function(BenchmarkId::new(&name, "split-640KiB"), |b| {
            b.iter(|| run_split(op.as_ref(), &input, 640 * 1024).unwrap())
        });
    }
    // CRC-32C has no stock tool to compare with: its reference is crc-fast
    // called directly on the same bytes (what the operator adds on top).
    for len in [16 << 10, 10 << 20] {
        let input: Vec<u8> = (0..len).map(|i| ((i * 2654435761usize) >> 13) as u8).collect();
        let op = build_operator("crc32c", &BTreeMap::new()).expect("valid");
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(BenchmarkId::new("crc32c-operator", len), |b| {
            b.iter(|| op.run(&input).unwrap())
        });
        g.bench_function(BenchmarkId::new("crc32c-crc-fast-direct", len), |b| {
            b.iter(|| crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &input))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
