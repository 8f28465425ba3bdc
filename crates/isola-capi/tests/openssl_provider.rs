//! The isola OpenSSL provider (`adapters/openssl`) with programs no one
//! here wrote: Debian's `openssl` CLI, Python's `hashlib` and the
//! `cryptography` package, and a small program that only calls EVP. Every
//! test runs a real isolad and checks through its metrics that the work
//! went there (a test that silently fell back to software fails), and
//! that every answer is the default provider's.
//!
//! OpenSSL chooses between two providers offering an algorithm by the
//! providers' names ("default" before "isola") unless a property query
//! prefers one: the CLI runs get `-propquery ?provider=isola`, the
//! configuration files `default_properties = ?provider=isola`.

mod common;

use common::adapters::{
    adapters, clean, engine, openssl_as, openssl_conf, run_bounded, stats_lines, tenant, Adapters, Isolad,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The longest any one program may run: past it, it hung.
const LIMIT: Duration = Duration::from_secs(120);

/// The digests, by `openssl dgst` flag and Python `hashlib` name.
const DIGESTS: [(&str, &str); 4] = [
    ("-sha256", "sha256"),
    ("-sha1", "sha1"),
    ("-sha3-256", "sha3_256"),
    ("-md5", "md5"),
];

/// The message sizes: empty, one byte, `openssl dgst`'s 8 KiB reads and
/// either side, 1 MiB.
const SIZES: [usize; 6] = [0, 1, 8191, 8192, 8193, 1 << 20];

/// A daemon with one tenant `t` of `quota`.
fn daemon(name: &str, quota: &str) -> Isolad {
    Isolad::start(
        name,
        &(engine("fcfs") + &tenant("t", &format!("memory_quota = \"{quota}\""))),
    )
}

/// A file of `len` deterministic bytes in the daemon's folder.
fn message(dir: &Path, len: usize) -> PathBuf {
    let path = dir.join(format!("message-{len}"));
    let bytes: Vec<u8> = (0..len)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&path, bytes).unwrap();
    path
}

/// `openssl ARGS` with the provider loaded by flags, as tenant `t` of
/// the daemon on `socket`, offloading from `min_bytes`.
fn openssl_isola(a: &Adapters, socket: &Path, min_bytes: i64, args: &[&str]) -> Command {
    openssl_as(a, socket, "t", min_bytes, args)
}

/// Runs `cmd` within [`LIMIT`]; its output, which must be a success.
fn ok(cmd: &mut Command) -> Output {
    let out = run_bounded(cmd, b"", LIMIT);
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `openssl dgst FLAG FILE` without the provider: the expected line.
fn dgst_default(flag: &str, file: &Path) -> String {
    String::from_utf8(ok(clean("openssl").args(["dgst", flag]).arg(file)).stdout).unwrap()
}

#[test]
fn dgst_cli_is_offloaded_and_equal_to_default() {
    let Some(a) = adapters() else { return };
    let d = daemon("ossl-dgst", "64MiB");
    for len in SIZES {
        let file = message(&d.dir, len);
        for (flag, _) in DIGESTS {
            let before = d.completed("t");
            let out = ok(openssl_isola(&a, &d.socket, 0, &["dgst", flag]).arg(&file));
            assert_eq!(
                String::from_utf8(out.stdout).unwrap(),
                dgst_default(flag, &file),
                "{flag} of {len} bytes"
            );
            assert!(
                d.completed("t") > before,
                "{flag} of {len} bytes did not run on isolad"
            );
        }
    }
    // The default thresholds: one byte stays local, 1 MiB is offloaded.
    for (len, offloaded) in [(1, false), (1 << 20, true)] {
        let file = message(&d.dir, len);
        let before = d.completed("t");
        let out = ok(openssl_isola(&a, &d.socket, -1, &["dgst", "-sha256"]).arg(&file));
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            dgst_default("-sha256", &file)
        );
        assert_eq!(d.completed("t") > before, offloaded, "{len} bytes");
    }
}

#[test]
fn openssl_conf_with_default_properties_offloads() {
    let Some(a) = adapters() else { return };
    let d = daemon("ossl-conf", "64MiB");
    // The file's tenant is wrong: the environment overrides it.
    let conf = openssl_conf(
        &d.dir,
        &a,
        &format!(
            "socket = {}\ntenant = nobody\nmin_bytes = 0\nfallback = error",
            d.socket.display()
        ),
    );
    for len in [0, 8193, 1 << 20] {
        let file = message(&d.dir, len);
        for (flag, _) in DIGESTS {
            let before = d.completed("t");
            let out = ok(clean("openssl")
                .args(["dgst", flag])
                .arg(&file)
                .env("OPENSSL_CONF", &conf)
                .env("ISOLA_TENANT", "t"));
            assert_eq!(String::from_utf8(out.stdout).unwrap(), dgst_default(flag, &file));
            assert!(d.completed("t") > before, "{flag} of {len} bytes");
        }
    }
}

#[test]
fn openssl_speed_runs_with_the_provider() {
    let Some(a) = adapters() else { return };
    let d = daemon("ossl-speed", "64MiB");
    for alg in ["aes-256-gcm", "sha256"] {
        let before = d.completed("t");
        let out = ok(&mut openssl_isola(
            &a,
            &d.socket,
            0,
            &["speed", "-elapsed", "-seconds", "1", "-evp", alg],
        ));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("16384 bytes"), "{alg}: {text}");
        assert!(d.completed("t") > before, "{alg}: nothing ran on isolad");
    }
    // The per-message (TLS-like) sequence offloads every message.
    let before = d.completed("t");
    ok(&mut openssl_isola(
        &a,
        &d.socket,
        0,
        &[
            "speed",
            "-elapsed",
            "-seconds",
            "1",
            "-bytes",
            "16384",
            "-aead",
            "-evp",
            "aes-128-gcm",
        ],
    ));
    assert!(d.completed("t") > before + 10.0);
}

#[test]
fn gcm_through_evp_equals_default() {
    let Some(a) = adapters() else { return };
    let d = daemon("ossl-gcm-evp", "64MiB");
    let program = d.dir.join("evp_gcm");
    let source = common::adapters::root().join("adapters/openssl/tests/evp_gcm.c");
    ok(clean("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-o"])
        .arg(&program)
        .arg(&source)
        .arg("-lcrypto"));
    for (min_bytes, seed) in [(0, "1"), (-1, "2")] {
        let before = d.completed("t");
        let out = ok(clean(program.to_str().unwrap())
            .arg(&a.provider_dir)
            .arg(seed)
            .env("ISOLA_SOCKET", &d.socket)
            .env("ISOLA_TENANT", "t")
            .env("ISOLA_MIN_BYTES", min_bytes.to_string()));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(" 0 failures"), "{text}");
        // The provider's own counters agree (OSSL_PROVIDER_get_params).
        let counter = |name: &str| -> u64 {
            let line = text.lines().find(|l| l.starts_with(name)).unwrap();
            line[name.len()..].trim().parse().unwrap()
        };
        assert!(counter("isola-offloaded ") > 0, "{text}");
        assert_eq!(counter("isola-fallbacks "), 0, "{text}");
        assert!(text.contains("isola-stats {"), "{text}");
        // Every shape of every message offloads its first update when it is
        // large enough: many with min_bytes 0, the large ones otherwise.
        let want = if min_bytes == 0 { 300.0 } else { 20.0 };
        assert!(
            d.completed("t") >= before + want,
            "min_bytes {min_bytes}: {} tasks",
            d.completed("t") - before
        );
    }
}

/// Whether `python3` can import `module`; a missing one skips the test
/// (a failure when ISOLA_REQUIRE_ADAPTERS=1).
fn python_has(module: &str) -> bool {
    let found = clean("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("ISOLA_REQUIRE_ADAPTERS").as_deref() != Ok("1"),
            "python3 with {module} is missing, and ISOLA_REQUIRE_ADAPTERS=1"
        );
        eprintln!("skipped: no python3 with {module}");
    }
    found
}

/// Runs a Python program, with OPENSSL_CONF when `conf` is given: its stdout.
fn python(program: &str, conf: Option<&Path>) -> String {
    let mut cmd = clean("python3");
    cmd.args(["-c", program]);
    if let Some(conf) = conf {
        cmd.env("OPENSSL_CONF", conf);
    }
    String::from_utf8(ok(&mut cmd).stdout).unwrap()
}

/// Python: AES-GCM with `cryptography`'s AESGCM over the GCM spec's test
/// case 16 and seeded random inputs, and a wrong tag.
const PY_AESGCM: &str = r#"
import random
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
k3 = bytes.fromhex("feffe9928665731c6d6a8f9467308308")
p = bytes.fromhex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
ct = AESGCM(k3 + k3).encrypt(bytes.fromhex("cafebabefacedbaddecaf888"), p, bytes.fromhex("feedfacedeadbeeffeedfacedeadbeefabaddad2"))
assert ct.hex() == "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f66276fc6ece0f4e1768cddf8853bb2d551b", ct.hex()
r = random.Random(31)
for n in [0, 1, 16, 1000, 8193, 65536, 1 << 20]:
    for bits in (128, 256):
        key = r.randbytes(bits // 8); nonce = r.randbytes(12); aad = r.randbytes(n % 50); data = r.randbytes(n)
        g = AESGCM(key)
        ct = g.encrypt(nonce, data, aad)
        assert g.decrypt(nonce, ct, aad) == data
        bad = ct[:-1] + bytes([ct[-1] ^ 1])
        try:
            g.decrypt(nonce, bad, aad)
            print("accepted a wrong tag", n, bits)
        except InvalidTag:
            pass
        print(n, bits, ct.hex()[:64], ct[-16:].hex())
"#;

#[test]
fn gcm_through_python_cryptography_equals_default() {
    let Some(a) = adapters() else { return };
    if !python_has("cryptography.hazmat.primitives.ciphers.aead") {
        return;
    }
    let d = daemon("ossl-gcm-py", "64MiB");
    let conf = openssl_conf(
        &d.dir,
        &a,
        &format!("socket = {}\ntenant = t\nmin_bytes = 0", d.socket.display()),
    );
    let before = d.completed("t");
    let isola = python(PY_AESGCM, Some(&conf));
    let offloaded = d.completed("t") - before;
    assert_eq!(isola, python(PY_AESGCM, None));
    assert!(!isola.contains("accepted"), "{isola}");
    assert!(offloaded >= 20.0, "{offloaded} tasks on isolad");
}

/// Python: hashlib's four digests of each size, whole and in pieces (the
/// hexdigest of a copy midway, then of the whole).
const PY_HASHLIB: &str = r#"
import hashlib
for n in [0, 1, 8191, 8192, 8193, 1 << 20]:
    data = bytes((i * 2654435761 >> 13) & 255 for i in range(n))
    for name in ("sha256", "sha1", "sha3_256", "md5"):
        whole = hashlib.new(name, data).hexdigest()
        h = getattr(hashlib, name)()
        for i in range(0, n, 1000):
            h.update(data[i:i + 1000])
            if i == 3000:
                print(name, n, "midway", h.copy().hexdigest())
        print(name, n, whole, h.hexdigest())
"#;

#[test]
fn python_hashlib_equals_default() {
    let Some(a) = adapters() else { return };
    if !python_has("hashlib") {
        return;
    }
    let d = daemon("ossl-hashlib", "64MiB");
    let conf = openssl_conf(
        &d.dir,
        &a,
        &format!("socket = {}\ntenant = t\nmin_bytes = 0", d.socket.display()),
    );
    let before = d.completed("t");
    let isola = python(PY_HASHLIB, Some(&conf));
    let offloaded = d.completed("t") - before;
    assert_eq!(isola, python(PY_HASHLIB, None));
    // 6 sizes x 4 digests x 2 (whole, pieces), and the copies midway.
    assert!(offloaded >= 48.0, "{offloaded} tasks on isolad");
}

#[test]
fn absent_daemon_falls_back_or_fails_as_configured() {
    let Some(a) = adapters() else { return };
    let dir = std::env::temp_dir().join(format!("isola-ossl-absent-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = message(&dir, 1 << 20);
    let socket = dir.join("nobody-here.sock");
    let stats = dir.join("stats.jsonl");
    for (flag, _) in DIGESTS {
        let out = ok(openssl_isola(&a, &socket, 0, &["dgst", flag])
            .arg(&file)
            .env("ISOLA_STATS", &stats));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), dgst_default(flag, &file));
    }
    let lines = stats_lines(&stats);
    assert!(!lines.is_empty(), "no ISOLA_STATS line");
    for line in &lines {
        assert_eq!(line["offloaded"], 0, "{line}");
        assert!(line["fallbacks"]["absent"].as_u64().unwrap() >= 1, "{line}");
    }
    // fallback = error: openssl's own failure, quickly.
    let started = Instant::now();
    let out = run_bounded(
        openssl_isola(&a, &socket, 0, &["dgst", "-sha256"])
            .arg(&file)
            .env("ISOLA_FALLBACK", "error"),
        b"",
        LIMIT,
    );
    assert!(!out.status.success(), "fallback = error, yet dgst succeeded");
    assert!(out.stdout.is_empty() || !String::from_utf8_lossy(&out.stdout).contains("= "));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("isolad"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn killed_daemon_never_gives_a_wrong_digest_and_offload_resumes() {
    let Some(a) = adapters() else { return };
    let mut d = daemon("ossl-kill", "64MiB");
    let file = message(&d.dir, 1 << 20);
    let want = dgst_default("-sha256", &file);
    let dgst = |socket: &Path| {
        let mut cmd = openssl_isola(&a, socket, 0, &["dgst", "-sha256"]);
        cmd.arg(&file).env("ISOLA_TIMEOUT_MS", "1000");
        cmd
    };
    // A long `openssl speed` and a loop of dgst while the daemon is killed.
    let mut speed = openssl_isola(
        &a,
        &d.socket,
        0,
        &[
            "speed", "-elapsed", "-seconds", "2", "-bytes", "65536", "-evp", "sha256",
        ],
    );
    speed.env("ISOLA_TIMEOUT_MS", "1000");
    let socket = d.socket.clone();
    let speed = std::thread::spawn(move || run_bounded(&mut speed, b"", LIMIT));
    let loop_socket = socket.clone();
    let dgst_loop = {
        let want = want.clone();
        let mut runs: Vec<Command> = (0..12).map(|_| dgst(&loop_socket)).collect();
        std::thread::spawn(move || {
            for cmd in &mut runs {
                let out = run_bounded(cmd, b"", LIMIT);
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                assert_eq!(String::from_utf8(out.stdout).unwrap(), want);
            }
        })
    };
    std::thread::sleep(Duration::from_millis(700));
    d.kill9();
    let out = speed.join().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    dgst_loop.join().unwrap();
    // Restarted: offload resumes.
    d.restart();
    let before = d.completed("t");
    let out = ok(&mut dgst(&socket));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), want);
    assert!(d.completed("t") > before, "offload did not resume");
}

#[test]
fn tenant_over_its_quota_falls_back_to_software() {
    let Some(a) = adapters() else { return };
    let d = daemon("ossl-quota", "64KiB");
    let stats = d.dir.join("stats.jsonl");
    // 1 MiB cannot fit a 64 KiB arena: software, the right answer, counted.
    let file = message(&d.dir, 1 << 20);
    for (flag, _) in DIGESTS {
        let out = ok(openssl_isola(&a, &d.socket, 0, &["dgst", flag])
            .arg(&file)
            .env("ISOLA_STATS", &stats));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), dgst_default(flag, &file));
    }
    for line in stats_lines(&stats) {
        let fallbacks: u64 = line["fallbacks"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(line["offloaded"], 0, "{line}");
        assert!(fallbacks >= 1, "{line}");
    }
    // A message that fits still goes to isolad.
    let small = message(&d.dir, 8193);
    let before = d.completed("t");
    let out = ok(openssl_isola(&a, &d.socket, 0, &["dgst", "-sha256"]).arg(&small));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        dgst_default("-sha256", &small)
    );
    assert!(d.completed("t") > before);
}
