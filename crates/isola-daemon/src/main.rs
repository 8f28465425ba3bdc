//! `isolad`: reads its configuration and serves tenants until stopped.

use clap::Parser;
use std::path::PathBuf;

/// Isola's daemon: tenants in their own processes attach over a Unix
/// socket and shared-memory rings, authenticated by their kernel
/// credentials, scheduled by the isolation core (docs/daemon.md).
#[derive(Debug, Parser)]
#[command(name = "isolad", version, about, long_about = None)]
struct Args {
    /// The configuration file (TOML; see docs/daemon.md).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let config = match isola_daemon::DaemonConfig::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match isola_daemon::Daemon::start(config) {
        Ok(daemon) => {
            eprintln!("isolad: serving tenants on {}", daemon.socket().display());
            // Until killed; a drain on SIGTERM comes with the control plane.
            loop {
                std::thread::park();
            }
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
