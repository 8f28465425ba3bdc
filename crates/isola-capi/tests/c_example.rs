//! The C side, compiled by the system's C compiler against the library
//! this build just made: `examples/c/isola_crc.c` run against a real
//! daemon, and a generated program that checks `include/isola.h` is the
//! library's ABI (every function declared is exported and every export
//! declared, the structures' sizes and offsets, every constant's value).
//!
//! Without a C compiler on the PATH the tests say so and pass, unless
//! `ISOLA_REQUIRE_CC=1` (as CI sets), when they fail.

mod common;

use common::adapters::{library_dir, root};

use isola::*;
use std::collections::BTreeSet;
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether `cc` works here; if not, why the test is skipped (or a panic,
/// where a compiler is required).
fn have_cc() -> bool {
    let works = Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !works {
        if std::env::var("ISOLA_REQUIRE_CC").as_deref() == Ok("1") {
            panic!("no working `cc` on the PATH, and ISOLA_REQUIRE_CC=1");
        }
        eprintln!("skipped: no working `cc` on the PATH (set ISOLA_REQUIRE_CC=1 to make this a failure)");
    }
    works
}

/// Compiles `source` with the header and the library into `out`, as strict
/// as CI (`-Wall -Wextra -Werror -std=c11`).
fn compile(source: &Path, out: &Path) {
    let lib = library_dir();
    let output = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root().join("include"))
        .arg(source)
        .arg("-L")
        .arg(&lib)
        .arg("-lisola")
        // RPATH, not RUNPATH: this build's library, whatever LD_LIBRARY_PATH says.
        .arg(format!("-Wl,--disable-new-dtags,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cc {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A fresh folder for this test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("isola-capi-cc-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_c_example_checks_its_crcs_against_a_real_daemon() {
    if !have_cc() {
        return;
    }
    let (_d, socket) = common::daemon("c-example");
    let exe = scratch("example").join("isola_crc");
    compile(&root().join("examples/c/isola_crc.c"), &exe);
    let run = |tenant: &str| Command::new(&exe).arg(&socket).arg(tenant).output().unwrap();

    let out = run("a");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    for line in [
        "crc32c(123456789) = 0xE3069283 (expected 0xE3069283",
        "crc32c(The quick brown fox jumps over the lazy dog) = 0x22620404",
        "a task with an unregistered handle: ISOLA_ERR_BAD_HANDLE",
        "submitted 7 tasks in one burst",
        "all 7 results match",
    ] {
        assert!(stdout.contains(line), "`{line}` missing from:\n{stdout}");
    }
    assert_eq!(stdout.matches(") ok\n").count(), 7, "{stdout}");

    // A tenant this user is not granted: a typed error, a message, exit 1.
    let out = run("b");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("ISOLA_ERR_REFUSED") && stderr.contains("may not act as tenant `b`"),
        "{stderr}"
    );
    // No daemon there: exit 1, not a crash.
    let out = Command::new(&exe)
        .arg("/nonexistent/isolad.sock")
        .arg("a")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("ISOLA_ERR_CONNECT"), "{stderr}");
}

/// Every `isola_*` function the header declares.
fn header_functions(header: &str) -> BTreeSet<String> {
    header
        .lines()
        .filter(|l| !l.starts_with([' ', '*', '/']) && !l.starts_with("typedef"))
        .filter_map(|l| {
            let open = l.find('(')?;
            let name = l[..open].rsplit([' ', '*']).next()?;
            name.starts_with("isola_").then(|| name.to_string())
        })
        .collect()
}

/// Every function the library exports (`extern "C" fn` in its sources).
fn exported_functions() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let mut names = BTreeSet::new();
    let mut lines = lib.lines().peekable();
    while let Some(l) = lines.next() {
        if l.trim() == "#[no_mangle]" {
            let decl = lines.next().unwrap();
            let name = decl.split("fn ").nth(1).unwrap().split('(').next().unwrap();
            names.insert(name.to_string());
        }
    }
    names
}

/// Every `ISOLA_*` constant the header names (enumerators and macros).
fn header_constants(header: &str) -> BTreeSet<String> {
    header
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let name = l.strip_prefix("#define ").unwrap_or(l);
            let name = name.split([' ', ',']).next()?;
            let is_value = l.starts_with("#define ") && l.split(' ').count() >= 3 || l.contains(" = ");
            (name.starts_with("ISOLA_") && is_value).then(|| name.to_string())
        })
        .collect()
}

/// Every constant of the library, by its name in the header.
fn library_constants() -> Vec<(String, i64)> {
    let mut constants: Vec<(String, i64)> = isola_status::ALL
        .iter()
        .map(|s| (s.name().trim_end_matches('\0').to_string(), *s as i64))
        .collect();
    for (name, value) in [
        ("ISOLA_OUTCOME_OK", ISOLA_OUTCOME_OK),
        ("ISOLA_OUTCOME_REJECTED", ISOLA_OUTCOME_REJECTED),
        ("ISOLA_OUTCOME_OPERATOR_FAILED", ISOLA_OUTCOME_OPERATOR_FAILED),
        ("ISOLA_OUTCOME_BAD_ENTRY", ISOLA_OUTCOME_BAD_ENTRY),
        ("ISOLA_OUTCOME_CANCELLED", ISOLA_OUTCOME_CANCELLED),
        ("ISOLA_OUTCOME_ABANDONED", ISOLA_OUTCOME_ABANDONED),
        ("ISOLA_REJECTED_CHANNEL_FULL", ISOLA_REJECTED_CHANNEL_FULL),
        ("ISOLA_REJECTED_OVER_QUOTA", ISOLA_REJECTED_OVER_QUOTA),
        ("ISOLA_REJECTED_NO_ENGINE", ISOLA_REJECTED_NO_ENGINE),
        ("ISOLA_REJECTED_OTHER", ISOLA_REJECTED_OTHER),
        ("ISOLA_FAILED_OPERATOR", ISOLA_FAILED_OPERATOR),
        ("ISOLA_FAILED_OUTPUT_TOO_LARGE", ISOLA_FAILED_OUTPUT_TOO_LARGE),
        ("ISOLA_FAILED_PANICKED", ISOLA_FAILED_PANICKED),
        ("ISOLA_FAILED_OVER_BUDGET", ISOLA_FAILED_OVER_BUDGET),
        ("ISOLA_BAD_ENTRY_UNKNOWN_HANDLE", ISOLA_BAD_ENTRY_UNKNOWN_HANDLE),
        ("ISOLA_BAD_ENTRY_UNKNOWN_FLAGS", ISOLA_BAD_ENTRY_UNKNOWN_FLAGS),
        ("ISOLA_BAD_ENTRY_INPUT_OUTSIDE", ISOLA_BAD_ENTRY_INPUT_OUTSIDE),
        ("ISOLA_BAD_ENTRY_OUTPUT_OUTSIDE", ISOLA_BAD_ENTRY_OUTPUT_OUTSIDE),
        ("ISOLA_BAD_ENTRY_OVERLAP", ISOLA_BAD_ENTRY_OVERLAP),
        ("ISOLA_BAD_ENTRY_TOO_LARGE", ISOLA_BAD_ENTRY_TOO_LARGE),
        ("ISOLA_EVENT_OVER_BUDGET", ISOLA_EVENT_OVER_BUDGET),
        ("ISOLA_EVENT_QUOTA_EXCEEDED", ISOLA_EVENT_QUOTA_EXCEEDED),
        ("ISOLA_EVENT_CHANNEL_FULL", ISOLA_EVENT_CHANNEL_FULL),
        ("ISOLA_EVENT_SLO_CHANGED", ISOLA_EVENT_SLO_CHANGED),
        ("ISOLA_EVENT_DRAINING", ISOLA_EVENT_DRAINING),
        ("ISOLA_EVENT_KERNEL_ABORTED", ISOLA_EVENT_KERNEL_ABORTED),
        ("ISOLA_EVENT_HOST_WRITTEN", ISOLA_EVENT_HOST_WRITTEN),
        ("ISOLA_FALLBACK_UNCONFIGURED", ISOLA_FALLBACK_UNCONFIGURED),
        ("ISOLA_FALLBACK_ABSENT", ISOLA_FALLBACK_ABSENT),
        ("ISOLA_FALLBACK_REFUSED", ISOLA_FALLBACK_REFUSED),
        ("ISOLA_FALLBACK_OVER_QUOTA", ISOLA_FALLBACK_OVER_QUOTA),
        ("ISOLA_FALLBACK_CHANNEL_FULL", ISOLA_FALLBACK_CHANNEL_FULL),
        ("ISOLA_FALLBACK_RING_FULL", ISOLA_FALLBACK_RING_FULL),
        ("ISOLA_FALLBACK_NO_ARENA", ISOLA_FALLBACK_NO_ARENA),
        ("ISOLA_FALLBACK_DISCONNECTED", ISOLA_FALLBACK_DISCONNECTED),
        ("ISOLA_FALLBACK_TIMEOUT", ISOLA_FALLBACK_TIMEOUT),
        ("ISOLA_FALLBACK_FAILED", ISOLA_FALLBACK_FAILED),
        ("ISOLA_FALLBACK_REASONS", ISOLA_FALLBACK_REASONS),
    ] {
        constants.push((name.to_string(), i64::from(value)));
    }
    constants.push(("ISOLA_ALIGN".to_string(), ISOLA_ALIGN as i64));
    constants
}

#[test]
fn the_header_is_the_librarys_abi() {
    let header = std::fs::read_to_string(root().join("include/isola.h")).unwrap();
    let declared = header_functions(&header);
    assert_eq!(
        declared,
        exported_functions(),
        "the header's functions are the library's exports"
    );

    // The library's side of every constant and layout.
    let constants = library_constants();
    let named: BTreeSet<String> = constants.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(
        header_constants(&header),
        named,
        "the header's constants are the library's"
    );

    macro_rules! layout {
        ($t:ident: $($f:ident),*) => {
            (stringify!($t), size_of::<$t>(), vec![$((stringify!($f), offset_of!($t, $f))),*])
        };
    }
    let structs = [
        layout!(isola_info: tenant_index, reserved, arena_bytes, max_input),
        layout!(isola_buf: offset, len),
        layout!(isola_param: key, value),
        layout!(isola_task: op, flags, input_offset, input_len, output_offset, output_cap, tag),
        layout!(isola_completion: tag, outcome, detail, output_len, arrival_ns, dispatch_ns,
            completion_ns, predicted_ns, service_ns),
        layout!(isola_event: kind, reserved, value, detail, at_ns),
    ];
    let mut expected = String::new();
    for (name, value) in &constants {
        expected += &format!("{name} {value}\n");
    }
    for (t, size, fields) in &structs {
        expected += &format!("{t} {size}\n");
        for (f, offset) in fields {
            expected += &format!("{t}.{f} {offset}\n");
        }
    }
    expected += &format!("isola_status {}\n", size_of::<isola_status>());
    expected += &format!("functions {}\n", declared.len());

    if !have_cc() {
        return;
    }
    // The C side of the same lines; taking every function's address makes
    // the link fail if one is not exported.
    let mut c =
        String::from("#include \"isola.h\"\n#include <stddef.h>\n#include <stdio.h>\n\nint main(void) {\n");
    for (name, _) in &constants {
        c += &format!("    printf(\"{name} %lld\\n\", (long long){name});\n");
    }
    for (t, _, fields) in &structs {
        c += &format!("    printf(\"{t} %zu\\n\", sizeof({t}));\n");
        for (f, _) in fields {
            c += &format!("    printf(\"{t}.{f} %zu\\n\", offsetof({t}, {f}));\n");
        }
    }
    c += "    printf(\"isola_status %zu\\n\", sizeof(isola_status));\n";
    c += "    void (*functions[])(void) = {\n";
    for f in &declared {
        c += &format!("        (void (*)(void)){f},\n");
    }
    c += "    };\n    printf(\"functions %zu\\n\", sizeof functions / sizeof functions[0]);\n";
    c += "    return 0;\n}\n";
    let dir = scratch("abi");
    std::fs::write(dir.join("abi.c"), c).unwrap();
    compile(&dir.join("abi.c"), &dir.join("abi"));
    let out = Command::new(dir.join("abi")).output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}
