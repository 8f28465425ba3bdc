//! Hostile modules and packets: refusals at load, bad ranges handed to the
//! host, and property tests that random modules and packets never panic.

mod common;

use common::{example, limits, load, module, EXAMPLE_KERNELS};
use isola_kernels::{KernelError, KernelLimits, WasmKernel};
use proptest::prelude::*;

/// A kernel module with `extra` spliced in, otherwise a valid minimal one.
fn minimal(extra: &str) -> String {
    format!(
        r#"(module
             {extra}
             (memory (export "memory") 1)
             (func (export "packet_buffer") (param i32) (result i32) (i32.const 0))
             (func (export "process") (param i32 i32) (result i32) (i32.const 0)))"#
    )
}

fn bad_module(bytes: &[u8]) -> String {
    match WasmKernel::load(bytes, limits()) {
        Err(KernelError::BadModule(why)) => why,
        other => panic!("expected BadModule, got {other:?}"),
    }
}

#[test]
fn the_minimal_module_loads() {
    let mut kernel = WasmKernel::load(&module(&minimal("")), limits()).unwrap();
    assert_eq!(kernel.run(b"x").unwrap().reply, None);
}

#[test]
fn modules_outside_the_host_api_are_refused() {
    bad_module(b"");
    bad_module(b"\0asm\x01\0\0\0garbage");
    bad_module(b"not webassembly at all");
    let why = bad_module(&module(&minimal(r#"(import "env" "abort" (func (param i32)))"#)));
    assert!(why.contains("`env`.`abort`"), "{why}");
    let why = bad_module(&module(&minimal(r#"(import "isola" "exit" (func (param i32)))"#)));
    assert!(why.contains("outside the host API"), "{why}");
    let why = bad_module(&module(&minimal(
        r#"(import "isola" "reply" (func (param i64 i32)))"#,
    )));
    assert!(why.contains("wrong type"), "{why}");
    let why = bad_module(&module(&minimal(r#"(import "isola" "reply" (global i32))"#)));
    assert!(why.contains("wrong type"), "{why}");
    // A start function would run outside any packet's budget.
    bad_module(&module(&minimal(r#"(func $s) (start $s)"#)));
    // Missing or mistyped exports.
    let why = bad_module(&module(
        r#"(module (memory (export "memory") 1)
             (func (export "packet_buffer") (param i32) (result i32) (i32.const 0)))"#,
    ));
    assert!(why.contains("process"), "{why}");
    let why = bad_module(&module(
        r#"(module (memory (export "memory") 1)
             (func (export "packet_buffer") (param i32) (result i32) (i32.const 0))
             (func (export "process") (param i32) (result i32) (i32.const 0)))"#,
    ));
    assert!(why.contains("process"), "{why}");
    let why = bad_module(&module(
        r#"(module (memory 1)
             (func (export "packet_buffer") (param i32) (result i32) (i32.const 0))
             (func (export "process") (param i32 i32) (result i32) (i32.const 0)))"#,
    ));
    assert!(why.contains("memory"), "{why}");
    // 64-bit memory is off.
    bad_module(&module(
        r#"(module (memory (export "memory") i64 1)
             (func (export "packet_buffer") (param i32) (result i32) (i32.const 0))
             (func (export "process") (param i32 i32) (result i32) (i32.const 0)))"#,
    ));
    // A table larger than the host allows cannot be instantiated.
    let why = bad_module(&module(&minimal("(table 100000 funcref)")));
    assert!(why.contains("instantiation"), "{why}");
}

#[test]
fn a_declared_memory_above_the_cap_is_refused() {
    let text = minimal("").replace(
        r#"(memory (export "memory") 1)"#,
        r#"(memory (export "memory") 17)"#,
    );
    assert_eq!(
        WasmKernel::load(&module(&text), limits()).unwrap_err(),
        KernelError::MemoryCap { cap: 1 << 20 }
    );
    // Exactly the cap is fine, and so is a larger declared maximum.
    let text = minimal("").replace(
        r#"(memory (export "memory") 1)"#,
        r#"(memory (export "memory") 16 1000)"#,
    );
    WasmKernel::load(&module(&text), limits()).unwrap();
}

/// A raw_calls packet: op, ptr, len, host offset.
fn raw(op: u8, ptr: i32, len: i32, offset: i64) -> Vec<u8> {
    let mut p = vec![op, 0, 0, 0];
    p.extend_from_slice(&ptr.to_le_bytes());
    p.extend_from_slice(&len.to_le_bytes());
    p.extend_from_slice(&offset.to_le_bytes());
    p
}

#[test]
fn bad_ranges_passed_to_the_host_are_errors() {
    let mut kernel = load("raw_calls", limits());
    let page = 65536;
    // In range: served.
    let out = kernel.run(&raw(1, 4, 8, 0)).unwrap();
    assert_eq!(out.reply.as_deref(), Some(&raw(1, 4, 8, 0)[4..12]));
    let out = kernel.run(&raw(2, 0, 4, 4096)).unwrap();
    assert_eq!(out.dma, vec![(4096, vec![2, 0, 0, 0])]);
    assert_eq!(kernel.run(&raw(1, page, 0, 0)).unwrap().reply, Some(vec![]));
    let cases = [
        (1, page, 1, 0, "reply"),
        (1, page - 4, 5, 0, "reply"),
        (1, 0, -1, 0, "reply"),
        (1, -1, 2, 0, "reply"),
        (1, i32::MAX, i32::MAX, 0, "reply"),
        (2, page, 1, 0, "dma_write"),
        (2, 16, -16, 0, "dma_write"),
        (2, -8, 16, 0, "dma_write"),
    ];
    for (op, ptr, len, offset, call) in cases {
        assert_eq!(
            kernel.run(&raw(op, ptr, len, offset)),
            Err(KernelError::BadPointer {
                call,
                ptr: ptr as u32,
                len: len as u32
            }),
            "{call}({ptr}, {len})"
        );
        // The next packet is served.
        assert!(kernel.run(&raw(1, 0, 4, 0)).is_ok());
    }
    assert_eq!(
        kernel.run(&raw(2, 0, 4, -1)),
        Err(KernelError::BadDmaOffset { offset: -1 })
    );
    assert_eq!(kernel.restarts(), cases.len() as u64 + 1);
}

#[test]
fn a_bad_packet_buffer_is_an_error() {
    for answer in ["-1", "65535", "65536", "2147483647"] {
        let text = minimal("").replace(
            "(param i32) (result i32) (i32.const 0)",
            &format!("(param i32) (result i32) (i32.const {answer})"),
        );
        let mut kernel = WasmKernel::load(&module(&text), limits()).unwrap();
        assert!(
            matches!(
                kernel.run(b"xy"),
                Err(KernelError::BadPointer {
                    call: "packet_buffer",
                    len: 2,
                    ..
                })
            ),
            "packet_buffer answered {answer}"
        );
    }
}

#[test]
fn deep_recursion_is_a_trap_not_a_crash() {
    let text = minimal(
        r#"(func $down (param i32) (result i32)
             (call $down (i32.add (local.get 0) (i32.const 1))))
           (func (export "process2") (param i32 i32) (result i32) (call $down (i32.const 0)))"#,
    )
    .replace(
        r#"(func (export "process") (param i32 i32) (result i32) (i32.const 0))"#,
        "",
    )
    .replace("process2", "process");
    let mut kernel = WasmKernel::load(
        &module(&text),
        KernelLimits {
            fuel_per_packet: u64::MAX,
            ..limits()
        },
    )
    .unwrap();
    assert!(matches!(kernel.run(b"x"), Err(KernelError::Trap(_))));
    assert!(matches!(kernel.run(b"x"), Err(KernelError::Trap(_))));
}

#[test]
fn a_huge_fuel_budget_is_still_a_budget() {
    let mut kernel = load(
        "spin",
        KernelLimits {
            fuel_per_packet: 5_000_000,
            ..limits()
        },
    );
    assert_eq!(
        kernel.run(&[0xff]),
        Err(KernelError::OutOfFuel { limit: 5_000_000 })
    );
}

proptest! {
    #[test]
    fn random_bytes_never_panic_load(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = WasmKernel::load(&bytes, limits());
        let mut prefixed = b"\0asm\x01\0\0\0".to_vec();
        prefixed.extend_from_slice(&bytes);
        let _ = WasmKernel::load(&prefixed, limits());
    }

    #[test]
    fn damaged_kernels_never_panic_load_or_run(
        which in 0..EXAMPLE_KERNELS.len(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        packet in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut bytes = example(EXAMPLE_KERNELS[which]);
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if let Ok(mut kernel) = WasmKernel::load(&bytes, limits()) {
            let _ = kernel.run(&packet);
            let _ = kernel.run(&packet);
        }
    }

    #[test]
    fn random_packets_never_panic_run(
        packets in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..2048), 1..8),
    ) {
        for name in EXAMPLE_KERNELS {
            let mut kernel = load(name, limits());
            for packet in &packets {
                let result = kernel.run(packet);
                if name == "echo" {
                    let reply = result.map(|out| out.reply);
                    prop_assert_eq!(reply, Ok(Some(packet.clone())));
                }
            }
        }
    }

    #[test]
    fn random_host_calls_never_panic(
        op in 0u8..4, ptr in any::<i32>(), len in any::<i32>(), offset in any::<i64>(),
    ) {
        let mut kernel = load("raw_calls", limits());
        match kernel.run(&raw(op, ptr, len, offset)) {
            Ok(out) => prop_assert!(out.reply.map_or(0, |r| r.len()) <= limits().max_output),
            Err(e) => prop_assert!(matches!(
                e,
                KernelError::BadPointer { .. }
                    | KernelError::BadDmaOffset { .. }
                    | KernelError::OutputTooLarge { .. }
                    | KernelError::KernelReported { .. }
            ), "{e:?}"),
        }
        // The kernel still serves.
        prop_assert!(kernel.run(&raw(1, 0, 4, 0)).is_ok());
    }
}

/// Every one-byte change of the echo kernel loads or is refused, never
/// panics: wasmi 2.0.0's translator asserts on some bodies its validator
/// passes (found by `damaged_kernels_never_panic_load_or_run`, one byte
/// set to 67), which `WasmKernel::load` must turn into a refusal.
#[test]
fn every_one_byte_change_of_a_kernel_loads_or_is_refused() {
    let echo = example("echo");
    let mut refused_by_engine_panic = 0;
    for at in 0..echo.len() {
        for value in 0..=u8::MAX {
            let mut bytes = echo.clone();
            bytes[at] = value;
            match WasmKernel::load(&bytes, limits()) {
                Ok(mut kernel) => {
                    let _ = kernel.run(b"packet");
                }
                Err(KernelError::BadModule(why)) if why.contains("engine failed") => {
                    refused_by_engine_panic += 1
                }
                Err(_) => {}
            }
        }
    }
    // The known case is among them (if a later wasmi fixes it, this
    // count drops to zero and the test still holds).
    eprintln!("{refused_by_engine_panic} changes refused after an engine panic");
}
