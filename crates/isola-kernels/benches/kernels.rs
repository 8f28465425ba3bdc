//! Per-packet cost of a tenant kernel: the echo kernel at 64 B and 1500 B,
//! with fuel metering (the watchdog) and without, the stateful counter, and
//! the checksum kernel, whose cost grows with the packet.
//! Figures in docs/perf.md ("WebAssembly kernels").

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use isola_kernels::{KernelLimits, WasmKernel};

fn example(name: &str) -> Vec<u8> {
    let path = format!("{}/../../examples/kernels/{name}.wat", env!("CARGO_MANIFEST_DIR"));
    wat::parse_file(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn bench(c: &mut Criterion) {
    let limits = KernelLimits::default();
    let mut group = c.benchmark_group("kernel_run");
    for (name, metered) in [
        ("echo", true),
        ("echo", false),
        ("counter", true),
        ("checksum", true),
        ("checksum", false),
    ] {
        let module = example(name);
        let mut kernel = if metered {
            WasmKernel::load(&module, limits)
        } else {
            WasmKernel::load_unmetered(&module, limits)
        }
        .unwrap();
        let label = format!("{name}/{}", if metered { "fuel" } else { "no_fuel" });
        for size in [64usize, 1500] {
            let packet = vec![0x5a; size];
            group.throughput(Throughput::Bytes(size as u64));
            group.bench_with_input(BenchmarkId::new(&label, size), &packet, |b, p| {
                b.iter(|| kernel.run(p).unwrap())
            });
        }
    }
    group.finish();

    let echo = example("echo");
    c.bench_function("kernel_load/echo", |b| {
        b.iter(|| WasmKernel::load(&echo, limits).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
