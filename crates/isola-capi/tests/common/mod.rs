//! A real daemon in this process for the tests: tenant `a` is granted to
//! this process's user, `b` to another user only.

#![allow(dead_code)]

pub mod adapters;

use isola_daemon::{Daemon, DaemonConfig};
use std::path::PathBuf;

/// A daemon on a socket in a fresh folder named after `name`; its socket.
pub fn daemon(name: &str) -> (Daemon, PathBuf) {
    let dir = std::env::temp_dir().join(format!("isola-capi-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = DaemonConfig::parse(&config_text(), &dir.join("isolad.toml")).unwrap();
    let d = Daemon::start(config).unwrap();
    let socket = d.socket().to_path_buf();
    (d, socket)
}

/// The configuration: socket `isolad.sock` beside the file, one engine, a
/// 64 KiB arena for `a` with rings of 8 entries.
pub fn config_text() -> String {
    let uid = rustix::process::getuid().as_raw();
    format!(
        r#"[daemon]
socket = "isolad.sock"

[[engine]]
name = "acc"
workers = 1
policy = "sfq"
cost = {{ base = "1us", per_byte_ns = 0.5 }}

[[tenant]]
name = "a"
memory_quota = "64KiB"
users = [{uid}]
max_connections = 4
sq_entries = 8
cq_entries = 8

[[tenant]]
name = "b"
memory_quota = "64KiB"
users = [{}]
"#,
        uid.wrapping_add(1)
    )
}
