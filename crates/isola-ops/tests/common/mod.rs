//! Helpers shared by the integration tests: deterministic test data, hex,
//! running the stock tools that serve as references, scratch files, and a
//! rough rate measurement. Each test file includes it with `mod common;`.

// Every test file is its own crate and uses only some of these helpers; the
// rest would otherwise be reported as dead code in each of them.
#![allow(dead_code)]

use isola_ops::{build_operator, OpError, Operator};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// `n` bytes of deterministic test data from `seed` (xorshift64*; seed 0
/// counts as 1). Some tests' expected values were computed from exactly
/// these bytes (e.g. `ciphers.rs`' OpenSSL XTS outputs): do not change it.
pub fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.max(1);
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// `bytes` as lowercase hex, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|x| format!("{x:02x}")).collect()
}

/// The bytes that hex `text` spells, ignoring whitespace (so long vectors
/// can be split over lines). Panics on anything but an even number of hex
/// digits.
pub fn unhex(text: &str) -> Vec<u8> {
    let digits: String = text.split_whitespace().collect();
    assert!(digits.len() % 2 == 0, "odd number of hex digits: {text:?}");
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap())
        .collect()
}

/// Runs the stock tool `cmd` with `args` and `stdin` as its standard input;
/// its exit status, stdout and stderr, whether or not it succeeded. Panics
/// if the tool cannot be started (it must be installed: `.ci/run` installs
/// the ones the tests use).
pub fn run_tool(cmd: &str, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd} must be installed (.ci/run installs it): {e}"));
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    // Write from another thread: the tool may fill its stdout before it has
    // read all of its stdin.
    let writer = std::thread::spawn(move || pipe.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    out
}

/// [`run_tool`] for a run that must succeed: its stdout. Panics with the
/// tool's stderr if it fails.
pub fn tool_stdout(cmd: &str, args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let out = run_tool(cmd, args, stdin);
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A scratch file of its own in the temporary directory, removed when
/// dropped. Its name comes from the process id and a counter, so tests
/// running in parallel (in this process or another) never share one.
pub struct TempFile(PathBuf);

impl TempFile {
    /// A new file holding `contents`.
    pub fn new(contents: &[u8]) -> TempFile {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "isola-ops-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, contents).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        TempFile(path)
    }

    /// The file's path.
    pub fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Calls of `f` per second, over about half a second after a warm-up.
pub fn calls_per_second(mut f: impl FnMut()) -> f64 {
    f();
    let start = std::time::Instant::now();
    let mut calls = 0u32;
    while start.elapsed().as_secs_f64() < 0.5 {
        f();
        calls += 1;
    }
    f64::from(calls) / start.elapsed().as_secs_f64()
}

/// Operator parameters from `(name, value)` pairs.
pub fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The operator `name` built with `pairs`; panics, naming it, if it does
/// not build.
pub fn op(name: &str, pairs: &[(&str, &str)]) -> Box<dyn Operator> {
    build_operator(name, &params(pairs)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The text of the parameter error building `name` with `pairs` gives;
/// panics if it builds or fails otherwise.
pub fn param_error(name: &str, pairs: &[(&str, &str)]) -> String {
    match build_operator(name, &params(pairs)) {
        Err(OpError::Param(e)) => e.to_string(),
        Err(e) => panic!("{name} {pairs:?}: not a parameter error: {e}"),
        Ok(_) => panic!("{name} {pairs:?} must not build"),
    }
}
