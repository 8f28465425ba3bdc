//! `isola kernel` as a user runs it: the example kernels of
//! `examples/kernels/` on packets, checked against what each is written
//! to do (docs/kernels.md).

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The repository's root: `isola kernel` runs from there, as the docs do.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `isola kernel ARGS` from the repository's root with `stdin`.
fn kernel(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_isola"))
        .arg("kernel")
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("isola runs");
    // A command that fails before it reads stdin (a missing file, a bad
    // limit) closes it: a broken pipe here is its answer, not an error.
    match child.stdin.take().unwrap().write_all(stdin) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => panic!("writing stdin: {e}"),
        _ => {}
    }
    child.wait_with_output().unwrap()
}

/// The `--json` lines of `out`, one object a packet.
fn rows(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object a line"))
        .collect()
}

/// Hex text of `bytes`, as `--json` writes it.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A scratch folder of this test's own.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("isola-kernel-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn echo_replies_with_each_packet_from_files_and_writes_the_replies() {
    let dir = scratch("echo");
    let (a, b) = (dir.join("a.bin"), dir.join("b.bin"));
    std::fs::write(&a, b"hello").unwrap();
    let binary: Vec<u8> = (0..=255).collect();
    std::fs::write(&b, &binary).unwrap();
    let replies = dir.join("replies.bin");
    let out = kernel(
        &[
            "examples/kernels/echo.wat",
            "--packet",
            a.to_str().unwrap(),
            "--packet",
            b.to_str().unwrap(),
            "--reply-out",
            replies.to_str().unwrap(),
            "--json",
        ],
        b"",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = rows(&out);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["reply"]["hex"], hex(b"hello"));
    assert_eq!(rows[1]["reply"]["hex"], hex(&binary));
    assert_eq!(rows[1]["reply"]["len"], 256);
    assert_eq!(rows[0]["from"], a.display().to_string());
    for r in &rows {
        assert_eq!(r["ok"], true);
        assert!(r["fuel_used"].as_u64().unwrap() > 0);
        assert_eq!(r["dma"], Value::Array(vec![]));
        assert_eq!(r["stopped"], Value::Null);
    }
    let mut both = b"hello".to_vec();
    both.extend_from_slice(&binary);
    assert_eq!(std::fs::read(&replies).unwrap(), both);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn stdin_is_one_packet_and_the_table_shows_its_reply() {
    let out = kernel(&["examples/kernels/echo.wat"], b"hello");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("packet  from"), "{text}");
    assert!(text.contains("stdin") && text.contains("5 B \"hello\""), "{text}");
}

#[test]
fn a_binary_module_runs_like_its_text() {
    let dir = scratch("binary");
    let wasm = dir.join("echo.wasm");
    std::fs::write(
        &wasm,
        wat::parse_file(root().join("examples/kernels/echo.wat")).unwrap(),
    )
    .unwrap();
    let out = kernel(&[wasm.to_str().unwrap(), "--json"], b"bytes");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = kernel(&["examples/kernels/echo.wat", "--json"], b"bytes");
    assert_eq!(rows(&out)[0]["reply"], rows(&text)[0]["reply"]);
    assert_eq!(rows(&out)[0]["fuel_used"], rows(&text)[0]["fuel_used"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn counter_keeps_its_state_across_packets_and_dma_writes_every_16th() {
    // 16 packets, one a line: the first byte of packet i is i % 2.
    let lines: String = (0..16).map(|i| format!("{:02x} aa\n", i % 2)).collect();
    let out = kernel(
        &["examples/kernels/counter.wat", "--hex", "--json"],
        lines.as_bytes(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = rows(&out);
    assert_eq!(rows.len(), 16);
    for (i, r) in rows.iter().enumerate() {
        let n = i as u64 + 1;
        let mut want = n.to_le_bytes().to_vec(); // packets seen
        want.extend_from_slice(&(2 * n).to_le_bytes()); // bytes seen
        want.extend_from_slice(&((i as u32) / 2 + 1).to_le_bytes()); // same first byte
        assert_eq!(r["reply"]["hex"], hex(&want), "packet {n}");
        assert_eq!(r["from"], format!("stdin:{n}"));
        let dma = r["dma"].as_array().unwrap();
        if n == 16 {
            assert_eq!(dma.len(), 1);
            assert_eq!(
                (dma[0]["offset"].as_u64(), dma[0]["len"].as_u64()),
                (Some(0), Some(1024))
            );
        } else {
            assert!(dma.is_empty(), "packet {n}: {dma:?}");
        }
    }
}

#[test]
fn checksum_answers_rfc_1071s_example() {
    // RFC 1071, section 3: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2, whose
    // one's complement is 0x220d.
    let out = kernel(
        &["examples/kernels/checksum.wat", "--hex", "--json"],
        b"00 01 f2 03 f4 f5 f6 f7\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(rows(&out)[0]["reply"]["hex"], "220d");
}

#[test]
fn a_packet_looping_forever_is_stopped_by_fuel_and_the_exit_says_so() {
    let out = kernel(
        &["examples/kernels/spin.wat", "--hex", "--fuel", "20000", "--json"],
        b"6869\nff\n6f6b\n",
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let rows = rows(&out);
    assert_eq!(rows[0]["reply"]["hex"], hex(b"hi"));
    let stopped = &rows[1]["stopped"];
    assert_eq!(rows[1]["ok"], false);
    assert_eq!(stopped["code"], 1);
    assert_eq!(stopped["name"], "OutOfFuel");
    assert!(
        stopped["reason"].as_str().unwrap().contains("limit 20000"),
        "{stopped}"
    );
    assert_eq!(stopped["restarted"], true);
    // The next packet is served by a fresh instance.
    assert_eq!(rows[2]["reply"]["hex"], hex(b"ok"));
    // The table says why, in words and by code.
    let out = kernel(&["examples/kernels/spin.wat", "--fuel", "20000"], &[0xff]);
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("stopped: OutOfFuel (1)"), "{text}");
    assert!(
        text.contains(
            "packet 1 stopped (OutOfFuel, code 1): kernel ran out of fuel (limit 20000 per packet)"
        ),
        "{text}"
    );
}

#[test]
fn a_trap_and_the_memory_cap_are_named_with_their_codes() {
    let out = kernel(&["examples/kernels/out_of_bounds.wat", "--json"], &[0x01]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(rows(&out)[0]["stopped"]["name"], "Trap");
    assert_eq!(rows(&out)[0]["stopped"]["code"], 2);
    // grow.wat grows by the packet's first byte in pages: 4 pages past a
    // 128 KiB cap.
    let out = kernel(
        &["examples/kernels/grow.wat", "--kernel-memory", "128KiB", "--json"],
        &[4],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(rows(&out)[0]["stopped"]["code"], 3);
}

#[test]
fn a_wat_syntax_error_names_the_file_line_and_column() {
    let dir = scratch("typo");
    let typo = dir.join("typo.wat");
    std::fs::write(
        &typo,
        "(module\n  (memory 1)\n  (func (result i32) (i32.cnst 0)))\n",
    )
    .unwrap();
    let out = kernel(&[typo.to_str().unwrap()], b"x");
    assert_eq!(out.status.code(), Some(1));
    let e = stderr(&out);
    assert!(e.contains(&format!("{}:3:23", typo.display())), "{e}");
    assert!(!e.contains("<anon>"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_files_and_bad_limits_are_named() {
    let out = kernel(&["examples/kernels/nowhere.wat"], b"x");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("examples/kernels/nowhere.wat: cannot read"),
        "{}",
        stderr(&out)
    );
    let out = kernel(&["examples/kernels/echo.wat", "--packet", "no/such.bin"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--packet no/such.bin: cannot read"),
        "{}",
        stderr(&out)
    );
    for (args, says) in [
        (&["--fuel", "0"][..], "--fuel: must be at least 1"),
        (
            &["--kernel-memory", "1KiB"],
            "--kernel-memory: must be from 64KiB",
        ),
        (
            &["--kernel-memory", "2MiB", "--memory-quota", "1MiB"],
            "memory_quota (1048576 bytes)",
        ),
        (&["--kernel-memory", "lots"], "--kernel-memory: "),
    ] {
        let mut all = vec!["examples/kernels/echo.wat"];
        all.extend_from_slice(args);
        let out = kernel(&all, b"x");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    let out = kernel(&["examples/kernels/echo.wat", "--hex"], b"12\n3x\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("stdin:2:2: `x` is not a hex digit"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn help_explains_the_exit_status() {
    let out = Command::new(env!("CARGO_BIN_EXE_isola"))
        .args(["kernel", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for says in [
        "--fuel",
        "--kernel-memory",
        "--packet",
        "--hex",
        "--json",
        "Exit status",
        "3 when",
    ] {
        assert!(text.contains(says), "{says}: {text}");
    }
}
