//! Running a scenario with ingress matching live, over real packets
//! through `isolad` (issue 16, "The papers' packet experiments, live").
//!
//! A scenario whose tenants have `match = {...}` (OSMOSIS' matching engine
//! and flow queues) runs as a daemon started in-process
//! (`isola_daemon::Daemon`) from a configuration generated per policy: the
//! scenario's engines (kind, `slots` scaled to this machine's cores, the
//! policy under test), its tenants with their SLOs and one flow each, whose
//! kernel is the workload's real operator. Each tenant's packets come from
//! its own sender thread on its own UDP socket, to its own ingress port,
//! matched by its source port; arrivals follow the scenario's process and
//! sizes (isola-sim's `ArrivalProcess` and `SizeSampler`, as
//! [`crate::live`]), and the replies are read. Every packet's task is
//! recorded from the daemon's completions into the run recorder, so the
//! report is the simulator's schema; packets lost before ingress (socket
//! buffers), dropped at a full flow queue or aborted by their kernel count
//! as rejected (aborted ones as aborted), those in flight at the end as
//! incomplete.
//!
//! Scale. This machine has few cores, so the run is dilated in time: each
//! tenant's real kernel is timed first on its own packets, and the run's
//! clock is the scenario's stretched by the ratio of measured to modelled
//! per-packet cost (`D`), with rates divided by `D` times `slots / workers`
//! (so each engine is as loaded, relative to its capacity, as in the
//! scenario) and by more where the packet rate would pass
//! [`MAX_PACKETS_PER_S`] at the arrivals' peak rate. A static partition,
//! which needs a worker per tenant, gets one (threads on the same cores,
//! offered the same rates). The run's notes (its `warnings`) state the
//! scale. The run ends when every packet taken at ingress has ended in the
//! daemon's counters (replied, dropped, aborted or consumed) and no more
//! arrive at ingress, or 3 s (`DRAIN`) after the last was sent.
//!
//! Model-only operators. A scenario may name `op = "kernel"`, a cost model
//! with no code. Live, it runs as MTDA's `firewall` (an ordered rule scan,
//! first match wins) over a chain of rules none of the tenant's packets
//! matches, iptables' worst case, whose cost grows linearly with the
//! rules; each tenant's rule count is calibrated so its measured cost per packet is [`KERNEL_TARGET_NS`]
//! times its service model's over the cheapest tenant's: the tenants'
//! costs stand in the ratio the scenario gives them (OSMOSIS' Congestor
//! costing twice the Victim), which is what the policies are judged on.
//!
//! Padding. Where the real operators are too cheap for the packet path to
//! load the engines as the scenario does, every tenant runs that stand-in,
//! calibrated to its model cost (see the `scale` module's doc).

use anyhow::{bail, Context};
use isola_core::{EngineKind, Nanos, TenantId};
use isola_daemon::Daemon;
use isola_model::results::{Outcome, RunEnd, TaskRecord};
use isola_model::scenario::{ArrivalSpec, PolicyRun, TenantSpec};
use isola_model::{PolicyResult, RunRecorder, Scenario};
use isola_runtime::record::{record_completion, record_unfinished};
use isola_sim::workload::ArrivalProcess;
use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

mod config;
mod io;
mod kernels;
mod scale;

use kernels::{kernels, model_cost, real_op, Kernel};
use scale::{padding, scale, Scale};

/// The model-only operator name scenarios use for "a kernel of this cost".
pub const MODEL_KERNEL: &str = "kernel";

/// The real operator that stands in for [`MODEL_KERNEL`].
pub const KERNEL_STAND_IN: &str = "firewall";

/// The measured per-packet cost the cheapest `kernel` tenant is calibrated
/// to, ns: well above the packet path's own per-packet cost here, so the
/// processing units are what the tenants contend for.
pub const KERNEL_TARGET_NS: f64 = 100_000.0;

/// The most packets per second all senders offer together.
pub const MAX_PACKETS_PER_S: f64 = 20_000.0;

/// The longest live run (after dilation); a longer one is cut, and says so.
pub const MAX_LIVE_NS: Nanos = 10_000_000_000;

/// How long completions are awaited after the last packet was sent.
const DRAIN: Duration = Duration::from_secs(3);

/// Polls (10 ms apart) with no packet taken at ingress after which the
/// packets not taken count as lost before ingress.
const SETTLED: u32 = 5;

/// The largest UDP payload a tenant may send (the IPv4 maximum, less
/// headroom for the operator's framing).
const MAX_PACKET: u64 = 60_000;

/// Whether `scenario` uses ingress matching (and so runs live here).
pub fn uses_packets(scenario: &Scenario) -> bool {
    scenario.tenants.iter().any(|t| t.flow_match.is_some())
}

/// Checks that `scenario` (with ingress matching) can run over packets.
pub fn check(scenario: &Scenario) -> anyhow::Result<()> {
    let mut engine_ops: BTreeMap<String, usize> = BTreeMap::new();
    for t in &scenario.tenants {
        let w = t.workload();
        if t.workloads.len() > 1 {
            bail!(
                "tenant `{}` has {} workloads: a live packet run sends each tenant's packets as one isolad flow;                  run it in the simulator, or give isolad the tenant's [[tenant.flow]]s (docs/daemon.md)",
                t.name,
                t.workloads.len()
            );
        }
        if t.flow_match.is_none() {
            bail!(
                "tenant `{}` has no `match`: a scenario with ingress matching runs live over packets only \
                 when every tenant's packets are matched",
                t.name
            );
        }
        if w.stages.len() != 1 && !io::is_io(scenario, t) {
            bail!(
                "tenant `{}`: over packets a pipeline runs only as OSMOSIS' IO kernels (a compute engine, \
                 then a DMA engine); give it one `engine`, or those two",
                t.name
            );
        }
        let engine = &scenario.engines[w.stages[0]];
        if !matches!(engine.kind, EngineKind::Accelerator | EngineKind::ProcessingUnits) {
            bail!(
                "tenant `{}`: its packets go to `{}`, a {} engine; over packets a flow's kernel runs on \
                 processing units or an accelerator",
                t.name,
                engine.name,
                engine.kind
            );
        }
        match &w.arrival {
            ArrivalSpec::Closed(_) => bail!(
                "tenant `{}`: a closed loop has no packet model live; give it an open arrival process",
                t.name
            ),
            ArrivalSpec::Trace(_) => bail!(
                "tenant `{}`: a trace cannot run over packets live; give it an arrival process",
                t.name
            ),
            _ => {}
        }
        if w.size.max_bytes() > MAX_PACKET {
            bail!(
                "tenant `{}`: its packets reach {} bytes, above the {MAX_PACKET} bytes one UDP datagram carries here",
                t.name,
                w.size.max_bytes()
            );
        }
        let op = real_op(scenario, t)?;
        if let Some(&other) = engine_ops.get(op) {
            if other != w.stages[0] {
                bail!(
                    "operator `{op}` runs on two engines (`{}` and `{}`): over packets each operator has one engine",
                    scenario.engines[other].name,
                    scenario.engines[w.stages[0]].name
                );
            }
        }
        engine_ops.insert(op.to_string(), w.stages[0]);
        if kernels::stands_in(scenario, t) && model_cost(scenario, t, 1024).is_none() {
            bail!(
                "tenant `{}`: op `{}` runs live as `{KERNEL_STAND_IN}` calibrated to its service \
                 model; give it a `service`",
                t.name,
                w.op
            );
        }
    }
    io::check(scenario)
}

/// What one tenant's sender did.
#[derive(Default)]
struct Sent {
    /// Packets it tried to send.
    packets: u64,
    /// Replies it read.
    replies: u64,
    /// When it sent its last packet, on the daemon's runtime clock.
    last_ns: Nanos,
    /// The mean bytes of its packets.
    mean_bytes: u64,
    /// How far behind its arrivals it fell at worst, ns.
    worst_lag_ns: Nanos,
}

/// Sends tenant `index`'s packets from `socket` to `to` until its
/// arrivals, its count or `deadline` end.
#[allow(clippy::too_many_arguments)]
fn send(
    socket: &UdpSocket,
    to: SocketAddr,
    t: &TenantSpec,
    index: usize,
    seed: u64,
    kernel: &Kernel,
    (started, deadline, stretch, count): (Instant, Instant, f64, Option<u64>),
    clock: &dyn Fn() -> Nanos,
) -> Sent {
    let mut arrivals = ArrivalProcess::new(&t.workload().arrival, t.workload().start, seed, index);
    let mut out = Sent::default();
    let mut bytes = 0u64;
    let mut reply = vec![0u8; 65_536];
    let limit = count.unwrap_or(u64::MAX);
    while out.packets < limit {
        let Some(next) = arrivals.next_arrival() else {
            break;
        };
        let at = started + Duration::from_nanos((next.at as f64 * stretch) as u64);
        if at >= deadline {
            break;
        }
        let now = Instant::now();
        out.worst_lag_ns = out
            .worst_lag_ns
            .max(now.saturating_duration_since(at).as_nanos() as Nanos);
        std::thread::sleep(at.saturating_duration_since(now));
        let packets = kernel.wire.as_ref().unwrap_or(&kernel.payloads);
        let payload = &packets[out.packets as usize % packets.len()];
        // A full socket buffer loses the packet, as a wire would: it is
        // counted sent, and never received.
        let _ = socket.send_to(payload, to);
        out.packets += 1;
        bytes += payload.len() as u64;
        out.last_ns = clock();
        while socket.recv_from(&mut reply).is_ok() {
            out.replies += 1;
        }
    }
    out.mean_bytes = bytes / out.packets.max(1);
    out
}

/// Reads the replies waiting on `sockets` into `sent`'s counts.
fn read_replies(sockets: &[UdpSocket], sent: &mut [Sent]) {
    let mut reply = vec![0u8; 65_536];
    for (socket, s) in sockets.iter().zip(sent) {
        while socket.recv_from(&mut reply).is_ok() {
            s.replies += 1;
        }
    }
}

/// The tenants' kernels, calibrated (padded where the real operators are
/// too cheap to load the engines), and the run's scale.
fn calibrate(scenario: &Scenario, seed: u64, dir: &std::path::Path) -> anyhow::Result<(Vec<Kernel>, Scale)> {
    let mut kernels = kernels(scenario, seed, dir, None)?;
    if let Some(pad) = padding(scenario, &kernels) {
        // What each tenant's real operator cost (a `kernel` tenant's
        // stand-in is only recalibrated).
        let real: Vec<_> = kernels
            .iter()
            .map(|k| k.rules.is_none().then(|| (k.op.clone(), k.measured_ns)))
            .collect();
        kernels = self::kernels::kernels(scenario, seed, dir, Some(pad))?;
        for (k, real) in kernels.iter_mut().zip(real) {
            k.replaced = real;
        }
    }
    let scale = scale(scenario, &kernels);
    Ok((kernels, scale))
}

/// The daemon a packet run of `scenario` under `run` starts (its senders'
/// ports left open), configured as [`run_policy`] configures it, and the
/// time scale its SLOs were scaled by: for tests and audits that read back
/// what each tenant's SLO became.
pub fn daemon_for(
    scenario: &Scenario,
    run: &PolicyRun,
    seed: u64,
) -> anyhow::Result<(isola_daemon::DaemonConfig, isola_core::TimeScale)> {
    check(scenario)?;
    let dir = RunDir::new()?;
    let (kernels, scale) = calibrate(scenario, seed, &dir.0)?;
    let ports = vec![0; scenario.tenants.len()];
    let config = config::daemon_config(scenario, run, &kernels, &scale, &ports, &dir.0)?;
    Ok((config, config::time_scale(&scale)))
}

/// Runs `scenario` (checked with [`check`]) over packets under `run`;
/// with `alone`, only that tenant sends.
pub fn run_policy(
    scenario: &Scenario,
    run: &PolicyRun,
    seed: u64,
    alone: Option<usize>,
) -> anyhow::Result<PolicyResult> {
    check(scenario)?;
    let dir = RunDir::new()?;
    let (kernels, scale) = calibrate(scenario, seed, &dir.0)?;
    let sockets = scenario
        .tenants
        .iter()
        .map(|_| {
            let s = UdpSocket::bind("127.0.0.1:0")?;
            s.set_nonblocking(true)?;
            Ok(s)
        })
        .collect::<std::io::Result<Vec<_>>>()
        .context("binding the tenants' UDP sockets")?;
    let ports = sockets
        .iter()
        .map(|s| s.local_addr().map(|a| a.port()))
        .collect::<std::io::Result<Vec<_>>>()?;
    let config = config::daemon_config(scenario, run, &kernels, &scale, &ports, &dir.0)?;
    let daemon = Daemon::start(config).context("starting isolad in-process")?;
    daemon.record_completions(true);
    // IO tenants hold their host windows as clients for the whole run.
    let clients = io::attach(scenario, &dir.0.join("isolad.sock"))?;
    let to = daemon.udp_addrs();
    if to.len() != scenario.tenants.len() {
        bail!(
            "isolad listens on {} UDP addresses for {} tenants",
            to.len(),
            scenario.tenants.len()
        );
    }
    let live_ns = scenario.run.duration.map_or(MAX_LIVE_NS, |d| {
        ((d as f64 * scale.dilation) as Nanos).min(MAX_LIVE_NS)
    });
    let started = Instant::now();
    let deadline = started + Duration::from_nanos(live_ns);
    let clock = || daemon.runtime().now_ns();
    let mut sent: Vec<Sent> = std::thread::scope(|scope| {
        let threads: Vec<_> = scenario
            .tenants
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let (socket, to, kernel, count) = (&sockets[i], to[i], &kernels[i], scale.counts[i]);
                let clock = &clock;
                scope.spawn(move || {
                    if alone.is_some_and(|a| a != i) {
                        return Sent::default();
                    }
                    // Sent when due, whatever else runs (`live_realtime`).
                    crate::live_realtime::enter_for_sender();
                    let timing = (started, deadline, scale.stretch, count);
                    send(socket, to, t, i, seed, kernel, timing, clock)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().unwrap_or_default())
            .collect()
    });
    // Every packet the daemon took ends once in its counters (replied,
    // dropped at a full queue, aborted or consumed), those that ran with a
    // completion: wait for them, and for the packets still in the ingress
    // sockets' buffers to be taken (all that were sent, or no more for
    // `SETTLED` polls: the rest were lost before ingress).
    let offered: u64 = sent.iter().map(|s| s.packets).sum();
    let mut completions = Vec::new();
    let waited = Instant::now();
    let (mut last_received, mut still) = (u64::MAX, 0);
    loop {
        completions.extend(daemon.take_completions());
        read_replies(&sockets, &mut sent);
        let counts = daemon.packet_counts();
        let received: u64 = counts.tenants.iter().map(|c| c.0).sum();
        let ended: u64 =
            counts.tenants.iter().map(|c| c.1 + c.2 + c.3).sum::<u64>() + counts.consumed.iter().sum::<u64>();
        still = if received == last_received { still + 1 } else { 0 };
        last_received = received;
        let ingress_done = received >= offered || still >= SETTLED;
        if (ingress_done && ended >= received) || waited.elapsed() > DRAIN {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // The last completions and replies, as the last packets ended.
    std::thread::sleep(Duration::from_millis(20));
    completions.extend(daemon.take_completions());
    read_replies(&sockets, &mut sent);
    let elapsed = started.elapsed().as_nanos() as Nanos;
    let ended_ns = daemon.runtime().now_ns();
    let counts = daemon.packet_counts();
    drop(clients);
    daemon.stop();
    let calibrated: Vec<Option<f64>> = kernels.iter().map(|k| Some(k.measured_ns)).collect();
    let spent = crate::live_breakdown::notes(scenario, &calibrated, &completions);
    let mut result = record(
        scenario,
        run,
        &scale,
        alone,
        (&sent, &counts, completions),
        (elapsed, ended_ns),
    );
    result
        .warnings
        .extend(notes(scenario, run, &kernels, &scale, &sent, &counts, elapsed));
    result.warnings.extend(spent);
    Ok(result)
}

/// The run's result from the daemon's completions, the senders' counts
/// and the daemon's packet counters.
fn record(
    scenario: &Scenario,
    run: &PolicyRun,
    scale: &Scale,
    alone: Option<usize>,
    (sent, counts, mut completions): (
        &[Sent],
        &isola_daemon::PacketCounts,
        Vec<isola_runtime::Completion>,
    ),
    (elapsed, ended_ns): (Nanos, Nanos),
) -> PolicyResult {
    // Windows as long, in the scenario's time, as the scenario's.
    let mut scaled = scenario.clone();
    scaled.run.window = ((scenario.run.window as f64 * scale.dilation) as Nanos).max(1);
    // Judged by the SLOs the daemon enforced (scaled as the run was).
    for t in &mut scaled.tenants {
        (t.slo, t.overrides) = t.scaled_slo(config::time_scale(scale));
    }
    let mut recorder = RunRecorder::for_scenario(&scaled, |i| alone.is_none_or(|a| a == i));
    completions.sort_by_key(|c| c.finished_ns);
    let mut per_tenant = vec![0u64; scenario.tenants.len()];
    for c in &completions {
        if let Some(n) = per_tenant.get_mut(c.tenant.0 as usize) {
            *n += 1;
        }
        record_completion(&mut recorder, c);
    }
    for (i, s) in sent.iter().enumerate() {
        let (received, dropped) = counts.tenants.get(i).map_or((0, 0), |c| (c.0, c.2));
        // Received without a completion: dropped at the tenant's full flow
        // queue (the daemon's `dropped` also counts replies the socket
        // refused, whose tasks did complete: at most that many), else still
        // in flight.
        let missing = received.saturating_sub(per_tenant[i]);
        let refused = missing.min(dropped);
        // Lost before ingress (the sockets' buffers) or dropped at a full
        // queue: refused, as a full queue refuses.
        for _ in 0..s.packets.saturating_sub(received) + refused {
            recorder.task(TaskRecord {
                tenant: TenantId(i as u32),
                flow: 0,
                bytes: s.mean_bytes,
                arrival: s.last_ns,
                end: s.last_ns,
                predicted: 0,
                outcome: Outcome::Rejected,
            });
        }
        for _ in 0..missing - refused {
            record_unfinished(
                &mut recorder,
                TenantId(i as u32),
                s.mean_bytes,
                s.last_ns,
                ended_ns,
            );
        }
    }
    recorder.finish(RunEnd {
        label: run.label.clone(),
        policy_name: run.name.clone(),
        duration: Some(elapsed),
        events: completions.len() as u64,
    })
}

/// What the run's reader must know: how it was scaled, what ran for the
/// model-only operators, and what the packet path counted.
fn notes(
    scenario: &Scenario,
    run: &PolicyRun,
    kernels: &[Kernel],
    scale: &Scale,
    sent: &[Sent],
    counts: &isola_daemon::PacketCounts,
    elapsed: Nanos,
) -> Vec<String> {
    let mut notes = Vec::new();
    let engines: Vec<String> = scenario
        .engines
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (scaled, ran) = (scale.workers[i], config::engine_workers(scenario, run, scale, i));
            let partition = if ran > scaled {
                format!(" (a static partition: {ran} threads, one per tenant, offered the rates of {scaled})")
            } else {
                String::new()
            };
            format!("`{}` {scaled} worker(s) for {} slots{partition}", e.name, e.slots)
        })
        .collect();
    notes.push(format!(
        "live over real UDP packets through isolad ({}): time dilated x{:.0} (measured over modelled kernel \
         cost), arrival rates divided by {:.0}; the run took {} of wall time (its last packets drained)",
        engines.join(", "),
        scale.dilation,
        scale.stretch,
        isola_model::quantity::format_duration(elapsed)
    ));
    notes.extend(io::note(scenario, scale.stretch));
    if kernels.iter().any(|k| k.replaced.is_some()) {
        notes.push(format!(
            "the real operators cost too little here to load the engines as the scenario does at up to \
             {MAX_PACKETS_PER_S:.0} packets/s, so every tenant's packets ran `{KERNEL_STAND_IN}` over a chain of \
             rules no packet matches, calibrated to {:.1} times its modelled cost: the tenants' costs stand in \
             the scenario's ratios and the engines are as loaded, relative to their capacity, as in the scenario",
            scale.dilation
        ));
    }
    for ((t, k), (s, c)) in scenario
        .tenants
        .iter()
        .zip(kernels)
        .zip(sent.iter().zip(counts.tenants.iter()))
    {
        let stand_in = if let Some((op, ns)) = &k.replaced {
            format!(
                "`{op}` (measured {} per packet) ran as `{KERNEL_STAND_IN}` with a chain of {} rules no packet \
                 matches, ",
                isola_model::quantity::format_duration(*ns as Nanos),
                k.rules.unwrap_or(0)
            )
        } else if kernels::stands_in(scenario, t) {
            format!(
                "`{}` ran as `{KERNEL_STAND_IN}` with a chain of {} rules no packet matches, ",
                t.workload().op,
                k.rules.unwrap_or(0)
            )
        } else {
            String::new()
        };
        // A stand-in's cost over its model: the tenants' shares of the
        // scale, equal where the calibration settled.
        let model = k.model_ns.map_or(String::new(), |m| {
            let times = if k.rules.is_some() {
                format!(", x{:.1}", k.measured_ns / m)
            } else {
                String::new()
            };
            format!(
                " (model {}{times})",
                isola_model::quantity::format_duration(m as Nanos)
            )
        });
        notes.push(format!(
            "tenant `{}`: {stand_in}measured {} per packet{model}; sent {} (datagrams of {} B on average: the \
             scenario's tasks of up to {} B, framed as `{}` takes its input), received {}, replied {} (read {}), \
             dropped {}, aborted {}; its sender fell behind by up to {}",
            t.name,
            isola_model::quantity::format_duration(k.measured_ns as Nanos),
            s.packets,
            s.mean_bytes,
            t.workload().size.max_bytes(),
            k.op,
            c.0,
            c.1,
            s.replies,
            c.2,
            c.3,
            isola_model::quantity::format_duration(s.worst_lag_ns)
        ));
    }
    if counts.unmatched > 0 {
        notes.push(format!("{} packets matched no flow", counts.unmatched));
    }
    notes
}

/// A folder for one run's daemon sockets, removed afterwards.
struct RunDir(std::path::PathBuf);

impl RunDir {
    fn new() -> anyhow::Result<RunDir> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "isola-live-packets-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(RunDir(dir))
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
