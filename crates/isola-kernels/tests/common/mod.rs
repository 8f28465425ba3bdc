//! Helpers shared by the kernel tests: the example kernels, compiled from
//! their WebAssembly text in `examples/kernels/`.

#![allow(dead_code)]

use isola_kernels::{KernelLimits, WasmKernel};

/// The example kernels' directory.
const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/kernels");

/// Every example kernel, by file stem.
pub const EXAMPLE_KERNELS: [&str; 6] = ["echo", "counter", "spin", "out_of_bounds", "grow", "raw_calls"];

/// The binary of example kernel `name` (`examples/kernels/NAME.wat`).
pub fn example(name: &str) -> Vec<u8> {
    let path = format!("{EXAMPLES}/{name}.wat");
    wat::parse_file(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The binary of a module given as WebAssembly text.
pub fn module(text: &str) -> Vec<u8> {
    wat::parse_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Example kernel `name`, loaded with `limits`.
pub fn load(name: &str, limits: KernelLimits) -> WasmKernel {
    WasmKernel::load(&example(name), limits).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Small limits the tests run under: 100 000 fuel, 1 MiB, 64 KiB out.
pub fn limits() -> KernelLimits {
    KernelLimits {
        fuel_per_packet: 100_000,
        memory_bytes: 1 << 20,
        max_output: 64 << 10,
    }
}
