//! isolad with an engine that batches (`batch = { tasks, bytes, wait }`):
//! a tenant process's small tasks, submitted together, each end in their
//! own completion with their own result; the keys are checked at their
//! line.

mod config_file;

use isola_client::{Client, CompletionStatus};
use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::Submission;
use std::collections::BTreeMap;
use std::path::Path;

#[test]
fn batched_tasks_each_complete_with_their_own_result() {
    let uid = rustix::process::getuid().as_raw();
    let text = format!(
        r#"[daemon]
socket = "isolad.sock"

[[engine]]
name = "acc"
workers = 1
policy = "sfq"
cost = {{ base = "1us", per_byte_ns = 0.5 }}
batch = {{ tasks = 8, bytes = "4KiB", wait = "50us" }}

[[tenant]]
name = "a"
memory_quota = "1MiB"
users = [{uid}]
sq_entries = 64
cq_entries = 64
"#
    );
    let config = config_file::parse("batching", &text);
    assert_eq!(
        config.engines[0].batch,
        isola_core::BatchRule::new(8, 4096, 50_000)
    );
    let d = Daemon::start(config).unwrap();
    let mut c = Client::connect(d.socket(), "a").unwrap();
    let h = c.register("crc32c", &BTreeMap::new()).unwrap();
    // 40 inputs: "123456789" and 39 one-byte changes of it.
    let inputs: Vec<Vec<u8>> = (0..40u8)
        .map(|i| {
            let mut s = b"123456789".to_vec();
            if i > 0 {
                s[usize::from(i) % 9] ^= i;
            }
            s
        })
        .collect();
    for (i, input) in inputs.iter().enumerate() {
        c.write(16 * i as u64, input).unwrap();
    }
    for i in 0..inputs.len() {
        c.submit(&Submission {
            handle: h,
            flags: 0,
            input_offset: 16 * i as u64,
            input_len: 9,
            output_offset: 4096 + 4 * i as u64,
            output_cap: 4,
            tag: i as u64,
        })
        .unwrap();
    }
    let mut seen = vec![false; inputs.len()];
    for _ in 0..inputs.len() {
        let done = c.wait().unwrap();
        assert_eq!((done.outcome, done.output_len), (CompletionStatus::Ok, 4));
        let i = done.tag as usize;
        assert!(!std::mem::replace(&mut seen[i], true), "task {i} completed twice");
    }
    // Each task's result is its own input's CRC-32C, by the reference below.
    assert_eq!(crc32c(b"123456789"), 0xE306_9283, "the catalogue's check value");
    for (i, input) in inputs.iter().enumerate() {
        let got = c.read(4096 + 4 * i as u64, 4).unwrap();
        assert_eq!(got, crc32c(input).to_be_bytes(), "task {i}");
    }
}

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) bit by bit, as
/// RFC 3720's appendix B.4 defines it: slow, and no one's optimised code.
fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn batch_keys_are_checked_at_their_line() {
    let base = "[daemon]\nsocket = \"s\"\n[[engine]]\nname = \"e\"\n[[tenant]]\nname = \"t\"\nmemory_quota = \"1MiB\"\nusers = [0]\n";
    for (batch, key) in [
        ("batch = { tasks = 1 }", "batch.tasks"),
        ("batch = { tasks = 5000 }", "batch.tasks"),
        ("batch = { tasks = 4, bytes = \"0B\" }", "batch.bytes"),
    ] {
        let text = base.replace("name = \"e\"", &format!("name = \"e\"\n{batch}"));
        let e = DaemonConfig::parse(&text, Path::new("d.toml")).unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (5, Some(key)), "{batch}: {e}");
    }
}
