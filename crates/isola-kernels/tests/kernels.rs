//! The example kernels through `WasmKernel`: replies, state, DMA requests,
//! and the watchdog, trap and memory-cap paths, each followed by a packet
//! that is still served.

mod common;

use common::{limits, load};
use isola_kernels::{KernelError, KernelLimits, KernelOutput, WasmKernel};

#[test]
fn kernels_can_live_on_another_thread() {
    fn assert_send<T: Send + 'static>() {}
    assert_send::<WasmKernel>();
    assert_send::<KernelError>();
    assert_send::<KernelOutput>();
    let mut kernel = load("echo", limits());
    let reply = std::thread::spawn(move || kernel.run(b"moved").unwrap().reply)
        .join()
        .unwrap();
    assert_eq!(reply.as_deref(), Some(&b"moved"[..]));
}

#[test]
fn echo_round_trip() {
    let mut kernel = load(
        "echo",
        KernelLimits {
            max_output: 1 << 20,
            ..limits()
        },
    );
    for packet in [&b""[..], b"x", &[0xab; 64], &[7; 1500], &[1; 65536]] {
        let out = kernel.run(packet).unwrap();
        assert_eq!(out.reply.as_deref(), Some(packet));
        assert!(out.dma.is_empty());
        assert!(out.fuel_used > 0);
    }
    // A packet above a page makes the kernel grow its memory to fit it.
    let big: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
    let out = kernel.run(&big).unwrap();
    assert_eq!(out.reply.as_deref(), Some(&big[..]));
    assert_eq!(kernel.restarts(), 0);
    // Under the default output limit (64 KiB) the same reply is refused.
    let mut kernel = load("echo", limits());
    assert_eq!(
        kernel.run(&big),
        Err(KernelError::OutputTooLarge { limit: 64 << 10 })
    );
}

#[test]
fn fuel_used_is_counted_per_packet_and_equal_for_equal_work() {
    let mut kernel = load("echo", limits());
    let a = kernel.run(b"abc").unwrap().fuel_used;
    let b = kernel.run(b"abc").unwrap().fuel_used;
    assert_eq!(a, b, "each packet gets fresh fuel and is charged alike");
    let unmetered = WasmKernel::load_unmetered(&common::example("echo"), limits())
        .unwrap()
        .run(b"abc")
        .unwrap();
    assert_eq!(unmetered.reply.as_deref(), Some(&b"abc"[..]));
    assert_eq!(unmetered.fuel_used, 0);
}

/// RFC 1071's Internet checksum, the reference the checksum kernel is held to.
fn internet_checksum(bytes: &[u8]) -> [u8; 2] {
    let mut sum: u64 = bytes
        .chunks(2)
        .map(|w| u64::from(w[0]) << 8 | u64::from(*w.get(1).unwrap_or(&0)))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    (!(sum as u16)).to_be_bytes()
}

#[test]
fn checksum_matches_rfc_1071() {
    let mut kernel = load(
        "checksum",
        KernelLimits {
            fuel_per_packet: 1_000_000,
            ..limits()
        },
    );
    // RFC 1071's own example: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
    let example = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
    assert_eq!(kernel.run(&example).unwrap().reply, Some(vec![0x22, 0x0d]));
    let mut seed = 0x9e37_79b9_u32;
    for len in [0, 1, 2, 3, 63, 64, 1499, 1500, 9000, 65535] {
        let packet: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                seed as u8
            })
            .collect();
        let out = kernel.run(&packet).unwrap();
        assert_eq!(out.reply, Some(internet_checksum(&packet).to_vec()), "{len} B");
    }
    // Its cost grows with the packet: about a dozen fuel per 16-bit word.
    let small = kernel.run(&[0; 64]).unwrap().fuel_used;
    let large = kernel.run(&[0; 1500]).unwrap().fuel_used;
    assert!(large > small * 10, "{small} vs {large}");
}

/// The counter kernel's reply: (packets, bytes, this first byte's bin).
fn counts(out: &KernelOutput) -> (u64, u64, u32) {
    let r = out.reply.as_deref().expect("counter replies");
    assert_eq!(r.len(), 20);
    (
        u64::from_le_bytes(r[0..8].try_into().unwrap()),
        u64::from_le_bytes(r[8..16].try_into().unwrap()),
        u32::from_le_bytes(r[16..20].try_into().unwrap()),
    )
}

#[test]
fn state_is_kept_across_packets() {
    let mut kernel = load("counter", limits());
    assert_eq!(counts(&kernel.run(b"abc").unwrap()), (1, 3, 1));
    assert_eq!(counts(&kernel.run(b"ab").unwrap()), (2, 5, 2));
    assert_eq!(counts(&kernel.run(b"zz").unwrap()), (3, 7, 1));
    assert_eq!(counts(&kernel.run(b"").unwrap()), (4, 7, 0));
    let mut dma = Vec::new();
    for i in 5..=16u64 {
        let out = kernel.run(b"a").unwrap();
        assert_eq!(counts(&out).0, i);
        dma = out.dma;
    }
    // The 16th packet asks for its histogram to be written to the host.
    assert_eq!(dma.len(), 1);
    let (offset, histogram) = &dma[0];
    assert_eq!(*offset, 0);
    assert_eq!(histogram.len(), 1024);
    let bin = |b: u8| {
        let i = usize::from(b) * 4;
        u32::from_le_bytes(histogram[i..i + 4].try_into().unwrap())
    };
    assert_eq!((bin(b'a'), bin(b'z'), bin(b'q')), (14, 1, 0));
}

#[test]
fn an_infinite_loop_is_stopped_by_fuel_and_the_next_packet_is_served() {
    let mut kernel = load("spin", limits());
    assert_eq!(kernel.run(b"ok").unwrap().reply.as_deref(), Some(&b"ok"[..]));
    assert_eq!(
        kernel.run(&[0xff, 1, 2]),
        Err(KernelError::OutOfFuel { limit: 100_000 })
    );
    assert_eq!(kernel.restarts(), 1);
    let out = kernel.run(b"next").unwrap();
    assert_eq!(out.reply.as_deref(), Some(&b"next"[..]));
    assert!(out.fuel_used < 100_000);
}

#[test]
fn the_watchdog_scales_with_the_limit() {
    // The same loop under ten times the fuel still stops, reporting its limit.
    let mut kernel = load(
        "spin",
        KernelLimits {
            fuel_per_packet: 1_000_000,
            ..limits()
        },
    );
    assert_eq!(
        kernel.run(&[0xff]),
        Err(KernelError::OutOfFuel { limit: 1_000_000 })
    );
}

#[test]
fn an_out_of_bounds_access_is_a_trap() {
    let mut kernel = load("out_of_bounds", limits());
    match kernel.run(&[0x01]) {
        Err(KernelError::Trap(why)) => assert!(why.contains("out of bounds"), "{why}"),
        other => panic!("expected a trap, got {other:?}"),
    }
    assert_eq!(kernel.run(b"fine").unwrap().reply.as_deref(), Some(&b"fine"[..]));
    assert_eq!(kernel.restarts(), 1);
}

#[test]
fn a_failed_packet_restarts_the_kernel_from_its_module() {
    // Cap: 2 pages. The counter keeps packets at 2048, so a packet of
    // 130 000 bytes (under the cap) makes it grow to 3 pages: MemoryCap.
    let cap = 2 * 65536;
    let mut kernel = load(
        "counter",
        KernelLimits {
            memory_bytes: cap,
            ..limits()
        },
    );
    for _ in 0..3 {
        kernel.run(b"a").unwrap();
    }
    assert_eq!(counts(&kernel.run(b"a").unwrap()), (4, 4, 4));
    assert_eq!(
        kernel.run(&vec![b'a'; 130_000]),
        Err(KernelError::MemoryCap { cap })
    );
    assert_eq!(kernel.restarts(), 1);
    // Its state starts again from the module's.
    assert_eq!(counts(&kernel.run(b"a").unwrap()), (1, 1, 1));
}

#[test]
fn a_kernel_reported_error_keeps_the_instance() {
    let mut kernel = load("raw_calls", limits());
    assert_eq!(kernel.run(&[9]), Err(KernelError::KernelReported { code: 9 }));
    assert_eq!(kernel.restarts(), 0);
    assert_eq!(
        kernel.run(&[0]).unwrap(),
        KernelOutput {
            fuel_used: kernel.run(&[0]).unwrap().fuel_used,
            ..KernelOutput::default()
        }
    );
}

#[test]
fn too_much_output_stops_the_packet() {
    // The counter replies 16 bytes, then 4 more: past a limit of 19.
    let mut kernel = load(
        "counter",
        KernelLimits {
            max_output: 19,
            ..limits()
        },
    );
    assert_eq!(kernel.run(b"a"), Err(KernelError::OutputTooLarge { limit: 19 }));
    assert_eq!(kernel.restarts(), 1);
}

/// The grow kernel's reply: (memory.grow's answer, pages after).
fn grown(out: &KernelOutput) -> (i32, i32) {
    let r = out.reply.as_deref().expect("grow replies");
    (
        i32::from_le_bytes(r[0..4].try_into().unwrap()),
        i32::from_le_bytes(r[4..8].try_into().unwrap()),
    )
}

#[test]
fn growing_past_the_cap_is_memory_cap_and_within_it_works() {
    // Cap: 4 pages. The module starts with 1.
    let cap = 4 * 65536;
    let mut kernel = load(
        "grow",
        KernelLimits {
            memory_bytes: cap,
            ..limits()
        },
    );
    assert_eq!(grown(&kernel.run(&[2]).unwrap()), (1, 3));
    assert_eq!(kernel.run(&[2]), Err(KernelError::MemoryCap { cap }));
    // Restarted from the module: one page again, and up to the cap works.
    assert_eq!(grown(&kernel.run(&[3]).unwrap()), (1, 4));
    assert_eq!(kernel.run(&[1]), Err(KernelError::MemoryCap { cap }));
    assert_eq!(grown(&kernel.run(&[0]).unwrap()), (1, 1));
}

#[test]
fn growing_past_the_modules_own_maximum_fails_the_webassembly_way() {
    // Below the cap, the module's declared maximum answers -1, as the
    // WebAssembly spec says, and the kernel goes on.
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/kernels/grow.wat"
    ))
    .unwrap()
    .replace(
        "(memory (export \"memory\") 1)",
        "(memory (export \"memory\") 1 2)",
    );
    let mut kernel = WasmKernel::load(&common::module(&text), limits()).unwrap();
    assert_eq!(grown(&kernel.run(&[5]).unwrap()), (-1, 1));
    assert_eq!(grown(&kernel.run(&[1]).unwrap()), (1, 2));
    assert_eq!(kernel.restarts(), 0);
}

#[test]
fn a_packet_above_the_cap_is_refused_before_the_kernel_runs() {
    let mut kernel = load(
        "echo",
        KernelLimits {
            memory_bytes: 65536,
            ..limits()
        },
    );
    assert_eq!(
        kernel.run(&vec![0; 65537]),
        Err(KernelError::PacketTooLarge {
            len: 65537,
            cap: 65536
        })
    );
    assert_eq!(kernel.restarts(), 0);
    assert!(kernel.run(&[0; 65536]).is_ok());
}

mod output_bytes {
    use isola_kernels::KernelOutput;
    use proptest::prelude::*;

    proptest! {
        /// An output survives `to_bytes`/`from_bytes`, and every proper
        /// prefix of its bytes is refused.
        #[test]
        fn outputs_round_trip_and_prefixes_are_refused(
            reply in prop::option::of(prop::collection::vec(any::<u8>(), 0..64)),
            dma in prop::collection::vec((any::<u64>(), prop::collection::vec(any::<u8>(), 0..32)), 0..4),
        ) {
            let out = KernelOutput { reply, dma, fuel_used: 0 };
            let bytes = out.to_bytes();
            prop_assert_eq!(KernelOutput::from_bytes(&bytes), Some(out));
            for cut in 0..bytes.len() {
                prop_assert_eq!(KernelOutput::from_bytes(&bytes[..cut]), None);
            }
            let mut longer = bytes.clone();
            longer.push(0);
            prop_assert_eq!(KernelOutput::from_bytes(&longer), None);
        }

        /// Any bytes at all are read or refused, never a panic.
        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..96)) {
            let _ = KernelOutput::from_bytes(&bytes);
        }
    }
}
