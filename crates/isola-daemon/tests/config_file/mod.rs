//! A test's isolad configuration, read as if from a file of its own: each
//! test's daemon gets a folder under the system's temporary one, so its
//! sockets (named relative to the file) never meet another test's.

use isola_daemon::DaemonConfig;

/// `text` checked as the configuration of the isolad called `name` in
/// this test process, at `<tmp>/isolad-<name>-<pid>/isolad.toml` (the
/// folder is made; nothing is written in it but what isolad makes).
pub fn parse(name: &str, text: &str) -> DaemonConfig {
    let dir = std::env::temp_dir().join(format!("isolad-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    DaemonConfig::parse(text, &dir.join("isolad.toml")).unwrap()
}
