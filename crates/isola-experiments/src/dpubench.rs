//! DPUBench's end-to-end evaluation programs (section 5, Fig. 13 to 16),
//! live over isolad's packet path: the server is an isolad started in
//! this process (the daemon library) with one tenant per program, each
//! with a UDP address and a flow running the program's kernel
//! (`flow-table`, `app-recognition`: isola-ops), and the client is
//! `isola load udp`, run as a process of its own per measurement point,
//! sending raw IPv4/UDP packets (`--frame ipv4`) at a constant
//! inter-packet gap (pktgen's `delay`) and reporting what came back.
//!
//! - Flow table (Fig. 14): throughput and packet loss against packet size
//!   and inter-packet gap. Throughput is the replies per second (every
//!   packet's reply is its flow's counters), loss the packets never
//!   answered.
//! - Application recognition (Fig. 15, 16): latency percentiles (send to
//!   reply, on the client) and the server's CPU use against packet size
//!   and gap, for a mix of payloads that match each rule and none
//!   (`hash`, `compress`, `echo` and the default), and for each action
//!   alone. CPU use is this process's `utime + stime` (`/proc/self/stat`)
//!   over the client's run, as a percentage of one core: the daemon's
//!   threads, plus this process's own waiting, which is negligible; the
//!   client's CPU is its own process's and is not counted.
//!
//! Sizes and gaps are the caller's ([`E2eConfig`]); DPUBench's 25 GbE
//! rates are far above what a 2-core VM's loopback carries, so the
//! defaults are scaled (see the CLI and docs/dpubench.md).

use crate::Progress;
use anyhow::{anyhow, bail, Context};
use isola_core::EngineKind;
use isola_daemon::config::DaemonEngine;
use isola_daemon::{Daemon, DaemonConfig};
use serde::Serialize;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Which of the two programs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Programs {
    /// The flow-table program only.
    FlowTable,
    /// The application-recognition program only.
    AppRecognition,
    /// Both.
    Both,
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct E2eConfig {
    /// The `isola` program whose `load udp` is the client.
    pub program: PathBuf,
    /// Which programs.
    pub programs: Programs,
    /// Packet sizes (IPv4 packets, bytes, at least 64) of the flow-table sweep.
    pub sizes: Vec<u64>,
    /// Inter-packet gaps of the flow-table sweep.
    pub gaps: Vec<Duration>,
    /// Packet sizes of the application-recognition sweep.
    pub app_sizes: Vec<u64>,
    /// Inter-packet gaps of the application-recognition sweep; each action
    /// alone runs at the first.
    pub app_gaps: Vec<Duration>,
    /// How long each point measures (after `warmup`).
    pub duration: Duration,
    /// Sending before each point's measurement.
    pub warmup: Duration,
    /// The client's flows (sockets, each a 5-tuple).
    pub flows: u32,
    /// The flow table's `capacity`.
    pub table_capacity: u64,
    /// The flow table's `shards`.
    pub table_shards: u64,
    /// The daemon's processing-unit workers.
    pub workers: usize,
    /// How long the daemon's runtime threads poll for work before
    /// sleeping (`[daemon] spin`): polling shows as CPU use at any rate.
    pub spin: Duration,
}

/// One measurement point, as the client and the daemon saw it.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The program (`flow-table` or `app-recognition`).
    pub program: &'static str,
    /// The payload mix: `mix` (every rule in turn), an action alone, or
    /// `random` (the flow table's random payloads).
    pub payloads: String,
    /// IPv4 packet size, bytes.
    pub size: u64,
    /// Inter-packet gap, ns.
    pub gap_ns: u64,
    /// Packets per second offered (1 / gap).
    pub offered_pps: f64,
    /// Packets sent in the measurement.
    pub sent: u64,
    /// Replies received.
    pub received: u64,
    /// Packets not answered in time.
    pub lost: u64,
    /// Lost, % of sent.
    pub loss_pct: f64,
    /// Replies per second.
    pub throughput_pps: f64,
    /// Packets answered per second, in bits of the packets sent (as
    /// DPUBench's Mbps: the server's goodput).
    pub throughput_mbps: f64,
    /// Reply latency percentiles, ns.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// The server's CPU use over the client's run, % of one core.
    pub server_cpu_pct: f64,
    /// The server's CPU time per packet received by it, us.
    pub server_cpu_us_per_packet: f64,
    /// Packets the daemon's kernel refused (malformed; should be 0).
    pub aborted: u64,
    /// Packets the daemon dropped for a full flow queue.
    pub dropped: u64,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct E2eReport {
    /// Cores this machine has.
    pub cores: usize,
    /// What the daemon ran: its engines and its tenants' flows.
    pub daemon: String,
    /// The application-recognition rules (action, pattern).
    pub rules: Vec<(String, String)>,
    /// The system's 1-minute load average before and after the run
    /// (`/proc/loadavg`): other programs' share of the cores.
    pub loadavg: (f64, f64),
    /// Every point, in the order run.
    pub points: Vec<Point>,
}

/// The payload heads of the application-recognition mix: one per default
/// rule, then one that none matches (`isola load udp --payloads` lines).
pub const MIX: &[(&str, &str)] = &[
    ("hash", "GET /index.html HTTP/1.1\\r\\nHost: dpubench\\r\\n"),
    ("compress", "{\"tenant\": \"dpubench\", \"values\": [1, 2, 3]}"),
    ("echo", "\\x16\\x03\\x01\\x02\\x00\\x01"),
    ("default", "no rule matches this payload"),
];

/// Smallest packet: the 28 header bytes and room for the mix's heads.
pub const MIN_SIZE: u64 = 64;

/// Largest packet: an Ethernet MTU.
pub const MAX_SIZE: u64 = 1500;

/// Runs the configured sweeps, reporting progress to `progress`.
pub fn run(config: &E2eConfig, progress: &mut dyn Progress) -> anyhow::Result<E2eReport> {
    check(config)?;
    let dir = std::env::temp_dir().join(format!("isola-dpubench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = run_in(config, &dir, progress);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn check(c: &E2eConfig) -> anyhow::Result<()> {
    if !c.program.is_file() {
        bail!("the client program {} does not exist", c.program.display());
    }
    for &s in c.sizes.iter().chain(&c.app_sizes) {
        if !(MIN_SIZE..=MAX_SIZE).contains(&s) {
            bail!("packet size {s} B is not from {MIN_SIZE} to {MAX_SIZE} B");
        }
    }
    if c.gaps
        .iter()
        .chain(&c.app_gaps)
        .any(|g| g.is_zero() || *g > Duration::from_secs(1))
    {
        bail!("an inter-packet gap is more than 0 and at most 1s");
    }
    if c.flows == 0 || c.workers == 0 || c.duration.is_zero() {
        bail!("flows, workers and duration must be more than 0");
    }
    Ok(())
}

/// A UDP port free on 127.0.0.1 now.
fn free_port() -> anyhow::Result<u16> {
    Ok(UdpSocket::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The daemon's configuration, filled in by code: a processing-unit
/// engine under WLBVT and one tenant per program, each with its own UDP
/// port and flow, checked as a file's tenants are. Its socket is in `dir`.
fn daemon_config(c: &E2eConfig, ports: (u16, u16), dir: &Path) -> anyhow::Result<DaemonConfig> {
    let mut config = DaemonConfig::new(dir.join("isolad.sock"));
    config.spare_tenants = 0;
    config.spin = c.spin;
    config.udp = vec![
        SocketAddr::from(([127, 0, 0, 1], ports.0)),
        SocketAddr::from(([127, 0, 0, 1], ports.1)),
    ];
    let mut engine = DaemonEngine::new("pu", EngineKind::ProcessingUnits);
    engine.workers = c.workers;
    engine.policy = "wlbvt".into();
    config.engines.push(engine);
    let table_params = toml::Table::from_iter([
        (
            "capacity".to_string(),
            toml::Value::from(c.table_capacity.to_string()),
        ),
        (
            "shards".to_string(),
            toml::Value::from(c.table_shards.to_string()),
        ),
    ]);
    for (name, port, params) in [
        ("flow-table", ports.0, table_params),
        ("app-recognition", ports.1, toml::Table::new()),
    ] {
        let rule = toml::Table::from_iter([
            ("dst_port".to_string(), toml::Value::from(i64::from(port))),
            ("proto".to_string(), toml::Value::from(17i64)),
        ]);
        let flow = toml::Table::from_iter([
            ("match".to_string(), toml::Value::from(rule)),
            ("kernel".to_string(), toml::Value::from(name)),
            ("params".to_string(), toml::Value::from(params)),
        ]);
        let changes = [
            ("memory_quota", Some(toml::Value::from("256MiB"))),
            ("queue_cap", Some(toml::Value::from(4096i64))),
            ("users", Some(toml::Value::Array(vec!["self".into()]))),
            ("flow", Some(toml::Value::Array(vec![flow.into()]))),
        ];
        let tenant = config
            .check_changes(
                isola_model::tenant::RawTenant::named(name),
                &changes,
                "isola bench e2e",
            )
            .map_err(|e| anyhow!("the daemon's configuration: {e}"))?;
        config.tenants.push(tenant);
    }
    Ok(config)
}

/// What the daemon ran, for the report's reader: its engines and its
/// tenants' flows.
fn describe(config: &DaemonConfig) -> String {
    let engines: Vec<String> = config
        .engines
        .iter()
        .map(|e| {
            format!(
                "engine `{}` ({}, {} worker(s), {})",
                e.name, e.kind, e.workers, e.policy
            )
        })
        .collect();
    let tenants: Vec<String> = config
        .tenants
        .iter()
        .map(|t| {
            let flows: Vec<String> = t
                .tenant
                .flows
                .iter()
                .map(|f| format!("{} {:?}", f.kernel, f.params))
                .collect();
            format!(
                "tenant `{}` (queue_cap {}): {}",
                t.name(),
                t.slo().queue_cap,
                flows.join(", ")
            )
        })
        .collect();
    format!(
        "isolad (spin {} us) with {}; {}",
        config.spin.as_micros(),
        engines.join(", "),
        tenants.join("; ")
    )
}

/// A point to measure.
struct Job {
    program: &'static str,
    tenant: usize,
    payloads: &'static str,
    size: u64,
    gap: Duration,
}

fn jobs(c: &E2eConfig) -> Vec<Job> {
    let mut jobs = Vec::new();
    if c.programs != Programs::AppRecognition {
        for &size in &c.sizes {
            for &gap in &c.gaps {
                jobs.push(Job {
                    program: "flow-table",
                    tenant: 0,
                    payloads: "random",
                    size,
                    gap,
                });
            }
        }
    }
    if c.programs != Programs::FlowTable {
        for &size in &c.app_sizes {
            for &gap in &c.app_gaps {
                jobs.push(Job {
                    program: "app-recognition",
                    tenant: 1,
                    payloads: "mix",
                    size,
                    gap,
                });
            }
            if let Some(&gap) = c.app_gaps.first() {
                for &(action, _) in MIX {
                    jobs.push(Job {
                        program: "app-recognition",
                        tenant: 1,
                        payloads: action,
                        size,
                        gap,
                    });
                }
            }
        }
    }
    jobs
}

fn run_in(c: &E2eConfig, dir: &Path, progress: &mut dyn Progress) -> anyhow::Result<E2eReport> {
    // The mix, and each of its lines alone.
    let mix: Vec<&str> = MIX.iter().map(|&(_, line)| line).collect();
    std::fs::write(dir.join("mix.txt"), mix.join("\n") + "\n")?;
    for &(action, line) in MIX {
        std::fs::write(dir.join(format!("{action}.txt")), format!("{line}\n"))?;
    }
    let load_before = loadavg();
    let ports = (free_port()?, free_port()?);
    let config = daemon_config(c, ports, dir)?;
    let setup = describe(&config);
    let daemon = Daemon::start(config).map_err(|e| anyhow!("starting the daemon: {e}"))?;
    let addrs = daemon.udp_addrs();
    let jobs = jobs(c);
    let mut points = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.iter().enumerate() {
        progress.update(
            i as f64 / jobs.len() as f64,
            &format!(
                "{} {} {} B, gap {} us",
                job.program,
                job.payloads,
                job.size,
                job.gap.as_nanos() as f64 / 1e3
            ),
        );
        let to = *addrs
            .get(job.tenant)
            .ok_or_else(|| anyhow!("the daemon bound {} UDP addresses, not 2", addrs.len()))?;
        points.push(measure(c, dir, &daemon, to, job)?);
    }
    progress.update(1.0, "done");
    daemon.stop();
    Ok(E2eReport {
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        daemon: setup,
        loadavg: (load_before, loadavg()),
        rules: isola_ops::apps::app_recognition::DEFAULT_RULES
            .iter()
            .map(|(a, p)| (format!("{a:?}").to_lowercase(), p.to_string()))
            .collect(),
        points,
    })
}

/// Runs the client for `job` against `to` and measures the server.
fn measure(c: &E2eConfig, dir: &Path, daemon: &Daemon, to: SocketAddr, job: &Job) -> anyhow::Result<Point> {
    let per_s = 1e9 / job.gap.as_nanos() as f64;
    let mut cmd = Command::new(&c.program);
    cmd.args([
        "load",
        "udp",
        "--json",
        "--frame",
        "ipv4",
        "--arrivals",
        "constant",
    ])
    .arg("--to")
    .arg(to.to_string())
    .arg("--flows")
    .arg(c.flows.to_string())
    .arg("--size")
    .arg(format!("{}B", job.size))
    .arg("--rate")
    .arg(format!("{per_s:.3}/s"))
    .arg("--duration")
    .arg(format!("{}ms", c.duration.as_millis()))
    .arg("--warmup")
    .arg(format!("{}ms", c.warmup.as_millis()))
    .arg("--timeout")
    .arg("500ms")
    .stdin(Stdio::null())
    .stderr(Stdio::piped())
    .stdout(Stdio::piped());
    if job.payloads != "random" {
        cmd.arg("--payloads")
            .arg(dir.join(format!("{}.txt", job.payloads)));
    }
    let before = daemon
        .packet_counts()
        .tenants
        .get(job.tenant)
        .copied()
        .unwrap_or_default();
    let cpu_before = process_cpu_ns();
    let start = Instant::now();
    let out = cmd
        .output()
        .with_context(|| format!("running {}", c.program.display()))?;
    let wall = start.elapsed();
    let cpu = process_cpu_ns().zip(cpu_before).map(|(a, b)| a.saturating_sub(b));
    if !out.status.success() {
        bail!(
            "the client failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).context("the client's JSON report")?;
    // The daemon counts a reply once it is sent, just after the client
    // may have read it: let the counters settle.
    std::thread::sleep(Duration::from_millis(20));
    let after = daemon
        .packet_counts()
        .tenants
        .get(job.tenant)
        .copied()
        .unwrap_or_default();
    let t = &r["total"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    let received_by_daemon = after.0.saturating_sub(before.0);
    let cpu_ns = cpu.unwrap_or(0) as f64;
    let sent = n(&t["sent"]);
    let received = n(&t["received"]);
    let measured_s = f(&r["measured_s"]);
    Ok(Point {
        program: job.program,
        payloads: job.payloads.to_string(),
        size: job.size,
        gap_ns: job.gap.as_nanos() as u64,
        offered_pps: per_s,
        sent,
        received,
        lost: n(&t["lost"]),
        loss_pct: f(&t["loss_pct"]),
        throughput_pps: f(&t["throughput"]["received_pps"]),
        throughput_mbps: if measured_s > 0.0 {
            (received * job.size * 8) as f64 / measured_s / 1e6
        } else {
            0.0
        },
        p50_ns: n(&t["latency"]["p50_ns"]),
        p90_ns: n(&t["latency"]["p90_ns"]),
        p99_ns: n(&t["latency"]["p99_ns"]),
        p999_ns: n(&t["latency"]["p999_ns"]),
        server_cpu_pct: 100.0 * cpu_ns / wall.as_nanos().max(1) as f64,
        server_cpu_us_per_packet: if received_by_daemon > 0 {
            cpu_ns / 1e3 / received_by_daemon as f64
        } else {
            0.0
        },
        aborted: after.3.saturating_sub(before.3),
        dropped: after.2.saturating_sub(before.2),
    })
}

/// The 1-minute load average (NaN where unreadable).
fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// This process's CPU time (utime + stime), ns.
fn process_cpu_ns() -> Option<u64> {
    crate::astraea::live::process_cpu_ns().map(|(own, _children)| own)
}

/// Nanoseconds as microseconds with one decimal.
fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

/// A latency, or `-` where packets were lost: replies are matched to the
/// oldest packet in flight of their flow, so after a drop a reply is
/// charged to an older packet and the latency reads long.
fn latency(p: &Point, ns: u64) -> String {
    if p.lost == 0 {
        us(ns)
    } else {
        "-".into()
    }
}

/// The report as tables for people: the flow-table sweep, then
/// application recognition, then a warning if the kernels refused packets.
pub fn table(r: &E2eReport) -> String {
    let mut out = format!(
        "DPUBench end-to-end programs over isolad's packet path on this machine ({} cores, load average \
         {:.1} before, {:.1} after; loopback UDP, scaled rates: see docs/dpubench.md)\n\n",
        r.cores, r.loadavg.0, r.loadavg.1
    );
    let rows = |program: &str| -> Vec<&Point> { r.points.iter().filter(|p| p.program == program).collect() };
    let ft = rows("flow-table");
    if !ft.is_empty() {
        out.push_str("flow-table (Fig. 14): throughput and loss against packet size and inter-packet gap\n");
        let body: Vec<Vec<String>> = ft
            .iter()
            .map(|p| {
                vec![
                    format!("{}", p.size),
                    us(p.gap_ns),
                    format!("{:.0}", p.offered_pps),
                    format!("{:.0}", p.throughput_pps),
                    format!("{:.1}", p.throughput_mbps),
                    format!("{:.2}", p.loss_pct),
                    format!("{}", p.dropped),
                    format!("{:.0}", p.server_cpu_pct),
                    format!("{:.1}", p.server_cpu_us_per_packet),
                ]
            })
            .collect();
        out.push_str(&isola_report::text::table(
            &[
                "size B",
                "gap us",
                "offered pps",
                "replies pps",
                "Mbps",
                "loss %",
                "queue drops",
                "server CPU %",
                "CPU us/pkt",
            ],
            &body,
        ));
        out.push('\n');
    }
    let ar = rows("app-recognition");
    if !ar.is_empty() {
        out.push_str(
            "app-recognition (Fig. 15, 16): latency and server CPU use; payloads: mix of every rule, or one \
             action (latency `-`: packets were lost, see docs/dpubench.md)\n",
        );
        let body: Vec<Vec<String>> = ar
            .iter()
            .map(|p| {
                vec![
                    p.payloads.clone(),
                    format!("{}", p.size),
                    us(p.gap_ns),
                    format!("{:.0}", p.throughput_pps),
                    format!("{:.2}", p.loss_pct),
                    latency(p, p.p50_ns),
                    latency(p, p.p90_ns),
                    latency(p, p.p99_ns),
                    latency(p, p.p999_ns),
                    format!("{:.1}", p.server_cpu_pct),
                    format!("{:.1}", p.server_cpu_us_per_packet),
                ]
            })
            .collect();
        out.push_str(&isola_report::text::table(
            &[
                "payloads",
                "size B",
                "gap us",
                "replies pps",
                "loss %",
                "p50 us",
                "p90 us",
                "p99 us",
                "p99.9 us",
                "server CPU %",
                "CPU us/pkt",
            ],
            &body,
        ));
    }
    let bad: u64 = r.points.iter().map(|p| p.aborted).sum();
    if bad > 0 {
        out.push_str(&format!(
            "\nwarning: the daemon's kernels refused {bad} packets (aborted)\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> E2eConfig {
        E2eConfig {
            program: std::env::current_exe().unwrap(),
            programs: Programs::Both,
            sizes: vec![64, 1500],
            gaps: vec![Duration::from_micros(100), Duration::from_micros(20)],
            app_sizes: vec![512],
            app_gaps: vec![Duration::from_millis(1), Duration::from_micros(200)],
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            flows: 4,
            table_capacity: 1024,
            table_shards: 4,
            workers: 1,
            spin: Duration::from_micros(50),
        }
    }

    #[test]
    fn the_daemon_configuration_has_a_flow_per_program() {
        let c = config();
        let config = daemon_config(&c, (4000, 4001), &std::env::temp_dir()).unwrap();
        assert_eq!(config.udp.len(), 2);
        let kernels: Vec<&str> = config
            .tenants
            .iter()
            .flat_map(|t| &t.tenant.flows)
            .map(|f| f.kernel.as_str())
            .collect();
        assert_eq!(kernels, ["flow-table", "app-recognition"]);
        assert_eq!(config.tenants[0].tenant.flows[0].params["capacity"], "1024");
        assert_eq!(config.spin, Duration::from_micros(50));
        assert!(describe(&config).contains("flow-table"));
    }

    #[test]
    fn every_size_and_gap_is_a_point_and_each_action_runs_alone() {
        let c = config();
        let all = jobs(&c);
        // 2 sizes x 2 gaps, then per app size: 2 gaps of the mix and the
        // mix's 4 lines alone.
        assert_eq!(all.len(), 4 + 2 + MIX.len());
        let only = |programs| jobs(&E2eConfig { programs, ..config() }).len();
        assert_eq!(only(Programs::FlowTable), 4);
        assert_eq!(only(Programs::AppRecognition), 2 + MIX.len());
    }

    #[test]
    fn bad_configurations_are_refused_before_anything_runs() {
        assert!(check(&config()).is_ok());
        let bad = |c: E2eConfig, says: &str| {
            let e = check(&c).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        };
        bad(
            E2eConfig {
                sizes: vec![32],
                ..config()
            },
            "32 B",
        );
        bad(
            E2eConfig {
                gaps: vec![Duration::ZERO],
                ..config()
            },
            "gap",
        );
        bad(
            E2eConfig {
                program: PathBuf::from("/nonexistent/isola"),
                ..config()
            },
            "does not exist",
        );
    }
}
