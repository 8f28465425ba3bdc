//! A packet kernel written in C (`examples/kernels/checksum.c`), built
//! from source with Debian's clang for wasm32 as a tenant would, loaded
//! and run: its replies are RFC 1071's Internet checksum, checked against
//! the RFC's worked example and against the WebAssembly-text kernel doing
//! the same (`checksum.wat`) on random packets. Skipped where no clang
//! with wasm-ld is installed, unless `ISOLA_REQUIRE_CLANG=1` (as CI sets).

mod common;

use common::{limits, load};
use isola_kernels::WasmKernel;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The C kernel compiled to WebAssembly (once per test run), or `None`
/// (skipped) without a toolchain.
fn build() -> Option<Vec<u8>> {
    static BUILT: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    BUILT.get_or_init(compile).clone()
}

fn compile() -> Option<Vec<u8>> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kernels/checksum.c");
    let out: PathBuf = std::env::temp_dir().join(format!("isola-checksum-{}.wasm", std::process::id()));
    let built = Command::new("clang")
        .args(["--target=wasm32", "-O2", "-nostdlib", "-Wall", "-Werror"])
        .args(["-Wl,--no-entry", "-Wl,--export-dynamic", "-o"])
        .arg(&out)
        .arg(&source)
        .output();
    match built {
        Ok(o) if o.status.success() => Some(std::fs::read(&out).unwrap()),
        other => {
            let why = match other {
                Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                Err(e) => e.to_string(),
            };
            if std::env::var("ISOLA_REQUIRE_CLANG").as_deref() == Ok("1") {
                panic!("clang could not build {}: {why}", source.display());
            }
            eprintln!("skipped: clang for wasm32 (with wasm-ld) is not usable here: {why}");
            None
        }
    }
}

#[test]
fn the_c_kernel_computes_rfc_1071s_example() {
    let Some(module) = build() else { return };
    let mut kernel = WasmKernel::load(&module, limits()).unwrap();
    // RFC 1071, section 3: these bytes sum to 0xddf2; the checksum is its
    // complement.
    let out = kernel
        .run(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7])
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some(&[0x22, 0x0d][..]));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The C kernel and the WebAssembly-text one agree on any packet.
    #[test]
    fn the_c_and_text_kernels_agree(packet in prop::collection::vec(any::<u8>(), 0..3000)) {
        let Some(module) = build() else { return Ok(()) };
        let mut c = WasmKernel::load(&module, limits()).unwrap();
        let mut text = load("checksum", limits());
        prop_assert_eq!(c.run(&packet).unwrap().reply, text.run(&packet).unwrap().reply);
    }
}
