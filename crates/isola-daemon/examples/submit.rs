//! A tenant in its own process: attaches to an `isolad` socket, submits a
//! known number of `crc32c` tasks one after another, checks each answer,
//! and leaves. scripts/prometheus_check.sh uses it to give the daemon
//! counts a Prometheus server must then see.
//!
//! Run: `cargo run -p isola-daemon --example submit -- SOCKET TENANT COUNT`

use isola_client::{Client, CompletionStatus};
use isola_wire::Submission;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [socket, tenant, count] = args.as_slice() else {
        eprintln!("usage: submit SOCKET TENANT COUNT");
        return ExitCode::FAILURE;
    };
    let Ok(count) = count.parse::<u64>() else {
        eprintln!("submit: COUNT must be a whole number, not `{count}`");
        return ExitCode::FAILURE;
    };
    match run(&PathBuf::from(socket), tenant, count) {
        Ok(()) => {
            println!("submit: {count} tasks of tenant `{tenant}` completed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("submit: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(socket: &std::path::Path, tenant: &str, count: u64) -> Result<(), String> {
    let mut c =
        Client::connect(socket, tenant).map_err(|e| format!("connecting to {}: {e}", socket.display()))?;
    let crc = c
        .register("crc32c", &BTreeMap::new())
        .map_err(|e| format!("registering crc32c: {e}"))?;
    c.write(0, b"123456789").map_err(|e| e.to_string())?;
    for tag in 0..count {
        let s = Submission {
            handle: crc,
            flags: 0,
            input_offset: 0,
            input_len: 9,
            output_offset: 64,
            output_cap: 4,
            tag,
        };
        c.submit(&s).map_err(|e| format!("submitting task {tag}: {e}"))?;
        let done = c.wait().map_err(|e| format!("waiting for task {tag}: {e}"))?;
        if done.outcome != CompletionStatus::Ok {
            return Err(format!("task {tag}: {:?}", done.outcome));
        }
    }
    Ok(())
}
