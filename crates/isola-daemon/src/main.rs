//! `isolad`: reads its configuration and serves tenants until SIGTERM or
//! SIGINT, then drains (every task taken is answered, every tenant told).
//! SIGHUP reads the configuration again and applies its tenants' changes.

use clap::Parser;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The daemon's allocator. Its packet path allocates a packet's buffers on
/// the listening thread and frees them on the dispatcher's and the
/// workers'; glibc's malloc then takes another thread's arena lock for
/// most frees (`__lll_lock_wait_private` in `perf` profiles of the packet
/// path). mimalloc frees across threads without a lock (docs/perf.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long a drain (SIGTERM, SIGINT) waits for running tasks.
const DRAIN_GRACE: Duration = Duration::from_secs(10);

/// Isola's daemon: tenants in their own processes attach over a Unix
/// socket and shared-memory rings, authenticated by their kernel
/// credentials, scheduled by the isolation core (docs/daemon.md).
#[derive(Debug, Parser)]
#[command(name = "isolad", version, about, long_about = None)]
struct Args {
    /// The configuration file (TOML; see docs/daemon.md).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Serve Prometheus metrics at http://ADDR/metrics (an IP address and
    /// a port, such as 127.0.0.1:9464); overrides `[daemon] metrics`.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let mut config = match isola_daemon::DaemonConfig::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if args.metrics.is_some() {
        config.metrics = args.metrics;
    }
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        if let Err(e) = signal_hook::flag::register(signal, Arc::clone(&stop)) {
            eprintln!("error: cannot handle signal {signal}: {e}");
            return std::process::ExitCode::FAILURE;
        }
    }
    let reload = Arc::new(AtomicBool::new(false));
    if let Err(e) = signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&reload)) {
        eprintln!("error: cannot handle SIGHUP: {e}");
        return std::process::ExitCode::FAILURE;
    }
    match isola_daemon::Daemon::start(config) {
        Ok(daemon) => {
            eprintln!(
                "isolad: serving tenants on {} (admin: {})",
                daemon.socket().display(),
                daemon.admin_socket().display()
            );
            if let Some(addr) = daemon.metrics_addr() {
                eprintln!("isolad: metrics on http://{addr}/metrics");
            }
            let udp: Vec<String> = daemon.udp_addrs().iter().map(ToString::to_string).collect();
            if !udp.is_empty() {
                eprintln!("isolad: packets on udp {}", udp.join(", "));
            }
            while !stop.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(50));
                if reload.swap(false, Ordering::AcqRel) {
                    match daemon.reload() {
                        Ok(done) => eprintln!("isolad: reloaded {}: {done}", args.config.display()),
                        Err(e) => eprintln!("isolad: reload refused, nothing changed: {e}"),
                    }
                }
            }
            eprintln!("isolad: draining");
            let clean = daemon.drain(DRAIN_GRACE);
            if !clean {
                eprintln!("isolad: some connections were still busy after {DRAIN_GRACE:?}");
            }
            eprintln!("isolad: drained, exiting");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
