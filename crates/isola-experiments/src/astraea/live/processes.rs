//! The experiment with each tenant in a process of its own (`isola demo
//! --processes`): every run starts an `isolad` (the daemon library, in
//! this process) configured as the in-process run's runtime would be (one
//! EC engine, the policy, the split, the profiled cost model, the thread
//! settings; the same two tenants and SLOs), and runs each closed loop as
//! an `isola load` process attached to it over the Unix socket and the
//! shared-memory rings. The run is measured by the daemon's runtime's own
//! completions (`Daemon::record_completions`), so every figure is computed
//! exactly as in process; each tenant process reports its own latency
//! too, and the difference (client's median minus the daemon's) is the
//! cross-process path's cost per task.

use super::measure::HostBefore;
use super::{realtime_usable, LiveConfig, Work, LS_ID, SLA_MULTIPLE};
use crate::astraea::{BS, LS};
use anyhow::{bail, Context};
use isola_core::EngineKind;
use isola_daemon::config::DaemonEngine;
use isola_daemon::{Daemon, DaemonConfig};
use isola_runtime::workload::{ClosedLoop, LoopRun};
use isola_runtime::{Completion, Mode, RealtimeOutcome};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where the runs' files go and what runs the tenants.
pub(super) struct Processes {
    /// `isola` (its `load` subcommand is the tenant process).
    program: PathBuf,
    /// The daemon's socket and the tenants' reports.
    dir: PathBuf,
}

/// What the tenant processes saw that the daemon did not: each tenant's
/// client's median latency minus the daemon's median latency for the same
/// tasks, ns (the cross-process path's cost per task).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Transit {
    /// The latency-sensitive tenant's, if it ran.
    pub(super) ls_ns: Option<i64>,
    /// The bandwidth-sensitive tenant's, if it ran.
    pub(super) bs_ns: Option<i64>,
}

impl Processes {
    /// Prepares runs with tenants run by `program load`.
    pub(super) fn new(program: &Path) -> anyhow::Result<Processes> {
        if !program.is_file() {
            bail!("the tenant program {} does not exist", program.display());
        }
        let dir = std::env::temp_dir().join(format!("isola-demo-processes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Processes {
            program: program.to_path_buf(),
            dir,
        })
    }

    /// The daemon's configuration for a run in `mode`, filled in by code
    /// as the in-process run's runtime is configured; its two tenants are
    /// checked as a file's would be.
    fn daemon_config(&self, mode: &Mode, work: &Work, config: &LiveConfig) -> anyhow::Result<DaemonConfig> {
        let realtime = realtime_usable(config);
        let mut daemon = DaemonConfig::new(self.dir.join("isolad.sock"));
        daemon.spare_tenants = 0;
        // As the in-process runtime: a real-time thread sleeps at once.
        daemon.spin = match (config.poll, realtime) {
            (Some(p), _) => p,
            (None, true) => std::time::Duration::ZERO,
            (None, false) => isola_runtime::DEFAULT_SPIN,
        };
        daemon.pin_threads = config.pin_threads;
        daemon.realtime = realtime;
        daemon.max_input = work.bs_payload.len() as u64;
        let mut engine = DaemonEngine::new("ec", EngineKind::Accelerator);
        engine.ops = vec!["ec-encode".into()];
        engine.queue_depth = config.queue_depth;
        engine.profile = Some(work.profile.clone());
        match mode {
            Mode::Native => engine.policy = "fcfs".into(),
            Mode::Isolated { policy, params } => {
                engine.policy = policy.clone();
                engine.params = params.clone();
            }
            Mode::ByEngine => {}
        }
        if *mode != Mode::Native {
            engine.split = Some(config.split_bytes);
            engine.split_when = config.split_when;
        }
        daemon.engines.push(engine);
        let quota = (work.bs_payload.len() as u64 * 4).max(64 << 20);
        let tenants: [(&str, &[(&str, toml::Value)]); 2] = [
            (
                LS,
                &[
                    ("weight", super::LS_WEIGHT.into()),
                    ("class", "latency-sensitive".into()),
                    ("latency_multiple", SLA_MULTIPLE.into()),
                ],
            ),
            (BS, &[("class", "bandwidth-sensitive".into())]),
        ];
        for (name, keys) in tenants {
            let own = [
                ("memory_quota", toml::Value::from(format!("{quota}B"))),
                ("users", toml::Value::Array(vec!["self".into()])),
            ];
            let changes: Vec<_> = keys
                .iter()
                .cloned()
                .chain(own)
                .map(|(k, v)| (k, Some(v)))
                .collect();
            let tenant = daemon
                .check_changes(
                    isola_model::tenant::RawTenant::named(name),
                    &changes,
                    "the demo's daemon",
                )
                .map_err(|e| anyhow::anyhow!("the run's daemon configuration: {e}"))?;
            daemon.tenants.push(tenant);
        }
        daemon
            .check()
            .map_err(|e| anyhow::anyhow!("the run's daemon configuration: {e}"))?;
        Ok(daemon)
    }

    /// Runs `loops` with a daemon in `mode`, each loop a tenant process,
    /// and measures the run by the daemon's runtime's completions; also
    /// returns the scheduling class each of the daemon's runtime threads got.
    pub(super) fn run(
        &self,
        mode: &Mode,
        work: &Work,
        config: &LiveConfig,
        loops: &[ClosedLoop],
    ) -> anyhow::Result<(super::Ran, Vec<RealtimeOutcome>)> {
        let daemon = Daemon::start(self.daemon_config(mode, work, config)?)
            .map_err(|e| anyhow::anyhow!("starting the run's daemon: {e}"))?;
        daemon.record_completions(true);
        let rt = daemon.runtime();
        let before = HostBefore::read(rt);
        let runtime_before = runtime_cpu_ns(rt);
        let cpu_before = process_cpu_ns();
        let ran = self.run_loops(&daemon, loops);
        // The tenant processes, and the daemon's threads besides the
        // runtime's (its connections'), are this run's own work, not
        // other programs': they count as the tenants'.
        let tenants_cpu_ns = match (cpu_before, process_cpu_ns()) {
            (Some(a), Some(b)) => {
                let runtime = runtime_cpu_ns(rt).saturating_sub(runtime_before);
                (b.0 - a.0).saturating_sub(runtime) + (b.1 - a.1)
            }
            _ => 0,
        };
        let ran = ran.map(|(loops, transit)| {
            let done: Vec<&Completion> = loops.iter().flat_map(|l| &l.completions).collect();
            let realtime = rt
                .threads()
                .iter()
                .skip(1)
                .all(|t| matches!(t.realtime, RealtimeOutcome::Granted { .. }));
            let tenants = isola_runtime::host::ThreadTimes {
                cpu_ns: tenants_cpu_ns,
                ..Default::default()
            };
            let host = before.since(rt, realtime, &[Some(tenants)], &done);
            let ran = super::Ran {
                loops,
                host,
                transit: Some(transit),
            };
            (ran, rt.threads().into_iter().map(|t| t.realtime).collect())
        });
        daemon.drain(std::time::Duration::from_secs(10));
        ran
    }

    /// Starts a tenant process per loop, waits for them all, and returns
    /// the loops' completions as the daemon's runtime gave them.
    fn run_loops(&self, daemon: &Daemon, loops: &[ClosedLoop]) -> anyhow::Result<(Vec<LoopRun>, Transit)> {
        let mut children = Vec::new();
        for (i, l) in loops.iter().enumerate() {
            let name = if l.tenant == LS_ID { LS } else { BS };
            let report = self.dir.join(format!("{name}-{i}.json"));
            let _ = std::fs::remove_file(&report);
            let mut cmd = Command::new(&self.program);
            cmd.arg("load")
                .arg("--socket")
                .arg(daemon.socket())
                .args(["--tenant", name, "--op", &l.op])
                .args(["--sizes", &format!("{}B", l.payload.len())])
                .args(["--concurrency", &l.window.to_string()])
                .args(["--count", &l.tasks.to_string()])
                .arg("--json")
                .arg(&report)
                .arg("--start-on-stdin")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            for (k, v) in &l.params {
                cmd.arg("--param").arg(format!("{k}={v}"));
            }
            let child = cmd
                .spawn()
                .with_context(|| format!("starting {}", self.program.display()))?;
            children.push((l.tenant, report, child));
        }
        // Every tenant attached and laid out before any starts: as the
        // in-process loops, they begin together. (Their standard outputs
        // stay open until they end: each prints its table there.)
        let mut outputs = Vec::new();
        for i in 0..children.len() {
            let mut out = children[i].2.stdout.take().map(std::io::BufReader::new);
            let mut line = String::new();
            if let Some(out) = out.as_mut() {
                let _ = std::io::BufRead::read_line(out, &mut line);
            }
            if line.trim() != "ready" {
                for (_, _, c) in &mut children {
                    let _ = c.kill();
                }
                let (tenant, _, child) = children.swap_remove(i);
                let out = child.wait_with_output()?;
                bail!(
                    "the {} tenant's process did not start: {}",
                    if tenant == LS_ID { LS } else { BS },
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            outputs.push(out);
        }
        for (_, _, child) in &mut children {
            if let Some(mut go) = child.stdin.take() {
                std::io::Write::write_all(&mut go, b"go\n")?;
            }
        }
        let mut transit = Transit::default();
        for ((tenant, report, child), stdout) in children.into_iter().zip(outputs) {
            let name = if tenant == LS_ID { LS } else { BS };
            if let Some(mut stdout) = stdout {
                // Its table, read so that it never blocks on a full pipe.
                let _ = std::io::Read::read_to_end(&mut stdout, &mut Vec::new());
            }
            let out = child.wait_with_output()?;
            if !out.status.success() {
                bail!(
                    "the {name} tenant's process failed ({}): {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            let diff = transit_of(&report)?;
            if tenant == LS_ID {
                transit.ls_ns = Some(diff);
            } else {
                transit.bs_ns = Some(diff);
            }
        }
        let mut done = daemon.take_completions();
        done.sort_by_key(|c| c.finished_ns);
        let runs = loops
            .iter()
            .map(|l| LoopRun {
                completions: done.iter().filter(|c| c.tenant == l.tenant).cloned().collect(),
                thread: None,
            })
            .collect::<Vec<_>>();
        for (l, r) in loops.iter().zip(&runs) {
            if r.completions.len() != l.tasks {
                bail!(
                    "the daemon answered {} of the {} tenant's {} tasks",
                    r.completions.len(),
                    if l.tenant == LS_ID { LS } else { BS },
                    l.tasks
                );
            }
        }
        Ok((runs, transit))
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A tenant process's report: its client's median latency minus the
/// daemon's, ns.
fn transit_of(report: &Path) -> anyhow::Result<i64> {
    let text = std::fs::read_to_string(report).with_context(|| format!("reading {}", report.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)?;
    let p50 = |side: &str| {
        json["latency"][side]["p50_ns"]
            .as_u64()
            .with_context(|| format!("{}: no latency.{side}.p50_ns", report.display()))
    };
    Ok(p50("client")? as i64 - p50("daemon")? as i64)
}

/// CPU time of the runtime's threads so far, ns.
fn runtime_cpu_ns(rt: &isola_runtime::Runtime) -> u64 {
    rt.threads()
        .iter()
        .filter_map(|t| t.times())
        .map(|t| t.cpu_ns)
        .sum()
}

/// CPU time of this process and of its children waited for, ns
/// (`/proc/self/stat`: utime + stime, cutime + cstime, in the kernel's
/// USER_HZ ticks of 10 ms).
pub(crate) fn process_cpu_ns() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which may hold spaces: state is 3.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<u64> = rest
        .split_ascii_whitespace()
        .skip(11)
        .take(4)
        .map_while(|v| v.parse().ok())
        .collect();
    const NS_PER_TICK: u64 = 10_000_000;
    match f[..] {
        [utime, stime, cutime, cstime] => {
            Some(((utime + stime) * NS_PER_TICK, (cutime + cstime) * NS_PER_TICK))
        }
        _ => None,
    }
}
