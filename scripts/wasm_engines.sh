#!/usr/bin/env bash
# The measurements behind isola-kernels' engine choice (docs/perf.md,
# "WebAssembly kernels: engine choice (issue 16)"):
#   1. clean build times of wasmi alone and of wasmtime alone (check, dev),
#      each in a fresh target folder, one after the other;
#   2. the per-packet time of the example kernels (echo, checksum) under
#      wasmtime (Cranelift JIT, fuel on) and under isola-kernels (wasmi, fuel
#      on and off), the same module and the same ABI, in one release binary.
# wasmtime never enters the workspace: everything is built in a scratch
# folder (WORK, default a fresh one under the system's temp folder), which
# is removed at the end. Needs crates.io. Takes about 10 minutes here.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${WORK:-$(mktemp -d)}"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
wasmtime_req="${WASMTIME_VERSION:-=48.0.8}"
wasmi_features='default-features = false, features = ["std", "validate", "stable", "auto-dispatch"]'
wasmtime_features='default-features = false, features = ["cranelift", "runtime", "std"]'

crate() { # crate NAME DEPENDENCY-LINES
  mkdir -p "$work/$1/src"
  printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2021"\npublish = false\n\n[workspace]\n\n[dependencies]\n%s\n\n[profile.release]\ndebug = false\n' \
    "$1" "$2" > "$work/$1/Cargo.toml"
}

seconds() { # seconds COMMAND...: runs it, prints its wall time
  local start end
  start=$(date +%s.%N)
  "$@" < /dev/null > "$work/last.log" 2>&1 || { cat "$work/last.log"; exit 1; }
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

echo "== clean builds, one at a time (load before: $(cut -d' ' -f1-3 /proc/loadavg))"
crate wasmi-alone "wasmi = { version = \"=2.0.0\", $wasmi_features }"
echo 'pub fn engine() -> wasmi::Engine { wasmi::Engine::default() }' > "$work/wasmi-alone/src/lib.rs"
crate wasmtime-alone "wasmtime = { version = \"$wasmtime_req\", $wasmtime_features }"
echo 'pub fn engine() -> wasmtime::Engine { wasmtime::Engine::default() }' > "$work/wasmtime-alone/src/lib.rs"
for name in wasmi-alone wasmtime-alone; do
  (cd "$work/$name" && cargo fetch --quiet)
  for what in check build; do
    rm -rf "$work/$name/target"
    t=$(cd "$work/$name" && seconds cargo "$what")
    echo "$name: cargo $what: $t s (load $(cut -d' ' -f1-3 /proc/loadavg))"
  done
  rm -rf "$work/$name/target"
done

echo "== per-packet time (release)"
crate engines "wasmtime = { version = \"$wasmtime_req\", $wasmtime_features }
isola-kernels = { path = \"$root/crates/isola-kernels\" }
wat = \"1\""
cat > "$work/engines/src/main.rs" <<'EOF'
//! Per-packet time of example kernels under wasmtime (Cranelift, fuel on)
//! and under isola-kernels (wasmi, fuel on and off): same module, same ABI.
use std::time::Instant;
use wasmtime::{Caller, Config, Engine, Linker, Memory, Module, Store, TypedFunc};

struct State {
    reply: Vec<u8>,
    memory: Option<Memory>,
}

/// Median over 21 batches of 20,000 calls, after one batch of warm-up.
fn per_packet_ns(mut f: impl FnMut()) -> f64 {
    for _ in 0..20_000 {
        f();
    }
    let mut batches: Vec<f64> = (0..21)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..20_000 {
                f();
            }
            t.elapsed().as_nanos() as f64 / 20_000.0
        })
        .collect();
    batches.sort_by(|a, b| a.partial_cmp(b).unwrap());
    batches[10]
}

fn main() -> wasmtime::Result<()> {
    let dir = std::env::args().nth(1).expect("examples/kernels folder");
    for name in ["echo", "checksum"] {
        let wasm = wat::parse_file(format!("{dir}/{name}.wat")).unwrap();
        let mut config = Config::new();
        config.consume_fuel(true);
        let engine = Engine::new(&config)?;
        let t = Instant::now();
        let module = Module::new(&engine, &wasm)?;
        println!("{name}: wasmtime compile {:?}", t.elapsed());
        let t = Instant::now();
        let limits = isola_kernels::KernelLimits::default();
        let _ = isola_kernels::WasmKernel::load(&wasm, limits).unwrap();
        println!("{name}: wasmi load (validate, compile, instantiate) {:?}", t.elapsed());
        let mut linker = Linker::new(&engine);
        linker.func_wrap(
            "isola",
            "reply",
            |mut caller: Caller<'_, State>, ptr: i32, len: i32| -> wasmtime::Result<()> {
                let memory = caller.data().memory.unwrap();
                let (bytes, state) = memory.data_and_store_mut(&mut caller);
                let (ptr, len) = (ptr as u32 as usize, len as u32 as usize);
                let Some(src) = bytes.get(ptr..ptr.saturating_add(len)) else {
                    wasmtime::bail!("bad range")
                };
                state.reply.extend_from_slice(src);
                Ok(())
            },
        )?;
        let mut store = Store::new(&engine, State { reply: Vec::new(), memory: None });
        let instance = linker.instantiate(&mut store, &module)?;
        let memory = instance.get_memory(&mut store, "memory").unwrap();
        store.data_mut().memory = Some(memory);
        let packet_buffer: TypedFunc<i32, i32> = instance.get_typed_func(&mut store, "packet_buffer")?;
        let process: TypedFunc<(i32, i32), i32> = instance.get_typed_func(&mut store, "process")?;
        for size in [64usize, 1500] {
            let packet = vec![0x5au8; size];
            // The same steps as WasmKernel::run: fresh fuel, packet_buffer,
            // a checked copy, process, the fuel read back, the reply handed out.
            let ns = per_packet_ns(|| {
                store.set_fuel(1_000_000).unwrap();
                let ptr = packet_buffer.call(&mut store, size as i32).unwrap();
                let p = ptr as u32 as usize;
                memory.data_mut(&mut store)[p..p + size].copy_from_slice(&packet);
                assert_eq!(process.call(&mut store, (ptr, size as i32)).unwrap(), 0);
                std::hint::black_box(store.get_fuel().unwrap());
                std::hint::black_box(std::mem::take(&mut store.data_mut().reply));
            });
            println!("{name} {size} B: wasmtime (fuel) {ns:.0} ns/packet");
            let mut kernel = isola_kernels::WasmKernel::load(&wasm, limits).unwrap();
            let fuel = kernel.run(&packet).unwrap().fuel_used;
            let ns = per_packet_ns(|| {
                std::hint::black_box(kernel.run(&packet).unwrap());
            });
            println!("{name} {size} B: wasmi (fuel) {ns:.0} ns/packet ({fuel} fuel)");
            let mut kernel = isola_kernels::WasmKernel::load_unmetered(&wasm, limits).unwrap();
            let ns = per_packet_ns(|| {
                std::hint::black_box(kernel.run(&packet).unwrap());
            });
            println!("{name} {size} B: wasmi (no fuel) {ns:.0} ns/packet");
        }
    }
    Ok(())
}
EOF
t=$(cd "$work/engines" && seconds cargo build --release)
echo "engines (wasmtime, isola-kernels, wat): clean cargo build --release: $t s"
for run in 1 2; do
  echo "-- run $run (load $(cut -d' ' -f1-3 /proc/loadavg))"
  "$work/engines/target/release/engines" "$root/examples/kernels"
done
