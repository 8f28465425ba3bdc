//! ASTRAEA's experiment live on this machine (`isola demo`, and `isola
//! repro astraea --live`): a latency-sensitive tenant (128 erasure-coding
//! tasks of 8 KiB blocks) and a bandwidth-sensitive one (256 tasks of 64 KiB
//! blocks), both with 128 data and 32 parity blocks per task and closed
//! loop, share one EC engine of the live runtime; the same work runs
//! natively (FCFS, unsplit) and under each isolation policy.
//!
//! It runs in rounds, every policy once a round (in an order that turns
//! from round to round), and reports each figure's median and range over
//! the rounds, the best policy, and a verdict against ASTRAEA's SLA rule.
//! A shared run is judged against references that cannot drift from it:
//! the LS tenant alone right before and right after it, and the BS
//! tenant's own uncontended tasks at its end. Each run also records where
//! the LS tenant's latency went and what the host took from Isola's
//! threads, and the results warn when the host or the reference moved.
//!
//! Every run's figures are the run recorder's
//! (`isola_model::results::RunRecorder`, fed each completion through
//! `isola_runtime::record`), SLAs judged by `SlaRule::SoloMultiple`.

mod measure;
mod processes;
mod summary;
mod text;

pub use measure::{HostInterference, LsBreakdown, RoundResult, SoloReference, TailLatency, TenantSummary};
pub(crate) use processes::process_cpu_ns;
pub use summary::{pct, PolicyComparison, RoundSpread, Spread, Verdict, BANDWIDTH_TARGET, VIOLATION_TARGET};

use super::{BS, LS};
use crate::Progress;
use anyhow::{bail, Context};
use isola_core::{LatencyObjective, Nanos, Slo, TenantClass, TenantId};
use isola_runtime::profile::{profile_operator, Profile};
use isola_runtime::workload::{run_closed_loops, ClosedLoop, LoopRun};
use isola_runtime::{Completion, EngineConfig, Mode, Realtime, RealtimeOutcome, RuntimeBuilder, SplitWhen};
use measure::HostBefore;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How to run the experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveConfig {
    /// Scale of the task counts, in (0, 1] (1 = the paper's 128 and 256).
    pub scale: f64,
    /// Subtask size under the isolation policies, bytes.
    pub split_bytes: u64,
    /// When the isolation policies split a task.
    pub split_when: SplitWhen,
    /// Pin the dispatcher and the EC worker to cores of their own.
    pub pin_threads: bool,
    /// Run the dispatcher and the EC worker in a real-time class, where
    /// the system permits and there are at least two CPUs (one is left to
    /// the tenants' threads); they then sleep at once when idle instead of
    /// polling.
    pub realtime: bool,
    /// How long the runtime's threads poll before sleeping (`None`: the
    /// runtime's default, 50 us, in the normal class; 0 in a real-time
    /// class, where a poll would hold the core from the tenants).
    pub poll: Option<Duration>,
    /// Engine queue depth under the isolation policies: pieces waiting at
    /// the engine beyond the one in service (a hardware queue; 0 = the
    /// dispatcher hands over one piece at a time).
    pub queue_depth: usize,
    /// Isolation policies to compare with native, by registry name.
    pub policies: Vec<String>,
    /// Rounds: every policy runs once a round (at least 1).
    pub rounds: usize,
    /// Run each tenant as a process of its own attached to an `isolad`
    /// started for each run: the path of the `isola` program whose `load`
    /// subcommand is the tenant (`None`: tenants are threads of this
    /// process, on the runtime directly).
    pub processes: Option<std::path::PathBuf>,
}

impl Default for LiveConfig {
    /// The paper's task counts, 128 KiB subtasks split only for the latency
    /// tenant's sake (`SplitWhen::ForLatency`), pinned threads in a
    /// real-time class where permitted, a queue of one, FCFS, DRR, SFQ, WLBVT and mClock, three
    /// rounds.
    fn default() -> Self {
        LiveConfig {
            scale: 1.0,
            split_bytes: 128 << 10,
            split_when: SplitWhen::ForLatency {
                window: isola_runtime::DEFAULT_CONTENTION_WINDOW_NS,
            },
            pin_threads: true,
            realtime: true,
            poll: None,
            queue_depth: 1,
            policies: ["fcfs", "drr", "sfq", "wlbvt", "mclock"]
                .map(String::from)
                .to_vec(),
            rounds: 3,
            processes: None,
        }
    }
}

/// The demo's results.
#[derive(Debug, Serialize)]
pub struct LiveResults {
    /// What ran.
    pub experiment: &'static str,
    /// What ran.
    pub setup: Setup,
    /// Per policy (`native` included).
    pub policies: BTreeMap<String, PolicyComparison>,
    /// The policies in the order they are shown: native first, then as
    /// configured.
    pub order: Vec<String>,
    /// The isolation policy with the fewest LS violations (median), ties
    /// going to the most BS bandwidth while sharing.
    pub best_policy: Option<String>,
    /// Whether isolation held.
    pub verdict: Verdict,
    /// What may have disturbed the runs.
    pub warnings: Vec<String>,
    /// The runtime's threads' scheduling class, as the system granted it.
    pub realtime: Vec<RealtimeOutcome>,
}

impl LiveResults {
    /// The policies in the order shown, with their comparisons.
    pub fn in_order(&self) -> impl Iterator<Item = (&String, &PolicyComparison)> {
        self.order.iter().filter_map(|n| Some((n, self.policies.get(n)?)))
    }

    /// The LS tenant's solo service time, measured around each shared
    /// run, over every round of every policy (none if nothing ran).
    pub fn ls_solo_spread(&self) -> Option<Spread> {
        Spread::of(
            self.policies
                .values()
                .flat_map(|p| &p.rounds)
                .map(|x| x.solo.ls_service_ns as f64),
        )
    }

    /// Each tenant of each round under each policy as CSV (`results.csv`),
    /// a header line first.
    pub fn csv(&self) -> String {
        let mut csv = String::from(
            "policy,round,tenant,tasks,sla_violation_rate,p50_ns,p99_ns,throughput_bps,bandwidth_vs_solo,\
             bandwidth_while_sharing,overhead_ratio\n",
        );
        for (name, p) in self.in_order() {
            for round in &p.rounds {
                for (t, x) in &round.tenants {
                    csv.push_str(&format!(
                        "{name},{},{t},{},{:.6},{},{},{:.0},{:.4},{:.4},{:.4}\n",
                        round.round,
                        x.tasks,
                        x.sla_violation_rate,
                        x.latency_ns.p50,
                        x.latency_ns.p99,
                        x.throughput_bps,
                        round.bandwidth_vs_solo,
                        round.bandwidth_while_sharing,
                        round.overhead_ratio
                    ));
                }
            }
        }
        csv
    }
}

/// The experiment's fixed setup (ASTRAEA's artifact).
const DATA_BLOCKS: usize = 128;
const PARITY_BLOCKS: usize = 32;
const LS_BLOCK: usize = 8 << 10;
const BS_BLOCK: usize = 64 << 10;
const LS_TASKS: usize = 128;
const BS_TASKS: usize = 256;
const LS_WEIGHT: f64 = 16.0;
/// A task's SLA: completion within this multiple of its service time
/// (ASTRAEA's "2x hardware time"): the policies' objective for the latency
/// tenant (of the task's predicted service), and the rule both tenants are
/// judged by (of the tenant's solo service).
const SLA_MULTIPLE: f64 = 2.0;
/// Tasks in each run of the bandwidth tenant alone (natively and under
/// a policy, back to back, once a round: the overhead of isolation).
const OVERHEAD_TASKS: usize = 32;
/// The fewest BS tasks, uncontended at a shared run's end, that make its
/// own SLA reference (else its solo run's is used).
const MIN_TAIL_TASKS: usize = 8;

/// The latency-sensitive tenant's id in every run.
const LS_ID: TenantId = TenantId(0);
/// The bandwidth-sensitive tenant's id in every run.
const BS_ID: TenantId = TenantId(1);
/// The metrics window of the runs' recorders: fine enough that the share
/// of the engine during another tenant's flow is exact but for the
/// windows at its ends.
const WINDOW_NS: Nanos = 100_000;

/// The experiment's setup, as run.
#[derive(Debug, Serialize)]
pub struct Setup {
    /// The erasure code.
    pub code: String,
    /// Tasks of the latency-sensitive tenant.
    pub ls_tasks: usize,
    /// Bytes of each of its tasks.
    pub ls_task_bytes: usize,
    /// Tasks of the bandwidth-sensitive tenant.
    pub bs_tasks: usize,
    /// Bytes of each of its tasks.
    pub bs_task_bytes: usize,
    /// Subtask size under the isolation policies.
    pub split_bytes: u64,
    /// The latency-sensitive tenant's SLA.
    pub ls_sla: String,
    /// The bandwidth-sensitive tenant's SLA.
    pub bs_sla: String,
    /// Rounds run.
    pub rounds: usize,
    /// Whether the tenants ran as processes of their own, attached to a
    /// daemon.
    pub processes: bool,
}

/// Runs the experiment under `config`, reporting to `progress`, and
/// returns its results.
pub fn run(config: &LiveConfig, progress: &mut dyn Progress) -> anyhow::Result<LiveResults> {
    if !(config.scale > 0.0 && config.scale <= 1.0) {
        bail!("scale {} is not in (0, 1]", config.scale);
    }
    if config.rounds == 0 {
        bail!("rounds: at least one round is needed");
    }
    for p in &config.policies {
        isola_core::policy::find_policy(p).with_context(|| format!("policy `{p}`"))?;
    }
    let work = Work::new(config)?;
    let policies: Vec<&str> = config.policies.iter().map(String::as_str).collect();
    let mut order = vec!["native"];
    order.extend(policies.iter().filter(|&&p| p != "native"));
    // Per round: the LS tenant alone once more than there are policies;
    // per policy the BS tenant alone natively and (for a policy) under it,
    // and the shared run.
    let per_round = 1 + order.len() * 3 + (order.len() - 1);
    let mut runner = Runner {
        work: &work,
        config,
        progress,
        step: 0,
        steps: (per_round * config.rounds + 1) as f64,
        realtime: Vec::new(),
        processes: match &config.processes {
            Some(program) => Some(processes::Processes::new(program)?),
            None => None,
        },
    };
    let mut rounds: BTreeMap<&str, Vec<RoundResult>> = BTreeMap::new();
    for round in 1..=config.rounds {
        // Native first, the policies in an order that turns each round, so
        // that no policy always runs at the same point of a drift.
        let mut turned: Vec<&str> = order[1..].to_vec();
        if !turned.is_empty() {
            let k = (round - 1) % turned.len();
            turned.rotate_left(k);
        }
        let mut ls_before = runner.ls_alone(round, "start")?;
        for name in std::iter::once("native").chain(turned) {
            let result = runner.policy_round(round, name, &ls_before)?;
            ls_before = result.1;
            rounds.entry(name).or_default().push(result.0);
        }
    }
    let mut compared: Vec<(String, PolicyComparison)> = Vec::new();
    for name in &order {
        if let Some(p) = rounds.remove(name).and_then(PolicyComparison::over) {
            compared.push((name.to_string(), p));
        }
    }
    let scored: Vec<super::AstraeaScore> = compared
        .iter()
        .filter(|(n, _)| n != "native")
        .map(|(n, p)| super::AstraeaScore {
            label: n,
            ls_violations: p.ls_violations(),
            ls_worst: p.spread.ls_sla_violation_rate.max,
            bs_while_sharing: p.bandwidth_while_sharing,
            bs_over_run: p.bandwidth_vs_solo,
            ls_p99: p.tenants.get(LS).map_or(0, |t| t.latency_ns.p99),
        })
        .collect();
    let best_policy = super::astraea_best(&scored).map(|s| s.label.to_string());
    let find = |n: &str| compared.iter().find(|(m, _)| m == n).map(|(_, p)| p);
    let verdict = summary::verdict(
        best_policy.as_deref().and_then(|b| Some((b, find(b)?))),
        find("native"),
    );
    let mut warnings = summary::warnings(&compared);
    if config.realtime && !realtime_usable(config) {
        warnings.push(
            "a real-time class was not used: with one CPU, the EC worker in it would starve the tenants' threads"
                .into(),
        );
    }
    let realtime = runner.realtime.clone();
    if let Some(RealtimeOutcome::Refused { reason }) = realtime
        .iter()
        .find(|r| matches!(r, RealtimeOutcome::Refused { .. }))
    {
        warnings.push(format!(
            "a real-time class was asked for Isola's threads and refused ({reason}): they ran in the normal class"
        ));
    }
    Ok(LiveResults {
        experiment:
            "ASTRAEA (SIGCOMM'25 poster): LS 8 KiB x 128 + BS 64 KiB x 256 erasure-coding tasks on one engine",
        setup: Setup {
            code: format!("Reed-Solomon {DATA_BLOCKS} data + {PARITY_BLOCKS} parity blocks"),
            ls_tasks: work.ls_tasks,
            ls_task_bytes: work.ls_payload.len(),
            bs_tasks: work.bs_tasks,
            bs_task_bytes: work.bs_payload.len(),
            split_bytes: config.split_bytes,
            ls_sla: "completion within 2x the task's solo service time".into(),
            bs_sla: "at least 50% of solo bandwidth per task (completion within 2x its solo service time)"
                .into(),
            rounds: config.rounds,
            processes: config.processes.is_some(),
        },
        order: compared.iter().map(|(n, _)| n.clone()).collect(),
        policies: compared.into_iter().collect(),
        best_policy,
        verdict,
        warnings,
        realtime,
    })
}

/// The experiment's work: the operator's parameters, both tenants'
/// payloads and task counts, and the cost model profiled on this machine.
struct Work {
    params: BTreeMap<String, String>,
    ls_payload: Arc<Vec<u8>>,
    bs_payload: Arc<Vec<u8>>,
    ls_tasks: usize,
    bs_tasks: usize,
    overhead_tasks: usize,
    cost: Arc<dyn isola_core::CostModel>,
    /// What `cost` was made from (a tenant-process run's daemon reads it).
    profile: Profile,
}

impl Work {
    fn new(config: &LiveConfig) -> anyhow::Result<Work> {
        let params: BTreeMap<String, String> = [
            ("k".to_string(), DATA_BLOCKS.to_string()),
            ("m".to_string(), PARITY_BLOCKS.to_string()),
        ]
        .into();
        let ls_payload = Arc::new(isola_ops::text_payload(DATA_BLOCKS * LS_BLOCK, 1));
        let bs_payload = Arc::new(isola_ops::text_payload(DATA_BLOCKS * BS_BLOCK, 2));
        // The split size is profiled like a task: it cannot be larger than
        // the largest task (nothing would be split), nor allocated whole.
        if config.split_bytes > bs_payload.len() as u64 {
            anyhow::bail!(
                "--split: {} bytes is larger than the experiment's largest task ({} bytes), so nothing would be \
                 split",
                config.split_bytes,
                bs_payload.len()
            );
        }
        let sizes = [
            config.split_bytes,
            ls_payload.len() as u64,
            bs_payload.len() as u64,
        ];
        let profile = Profile {
            machine: "this machine".into(),
            operators: vec![profile_operator(
                "ec-encode",
                &params,
                &sizes,
                Duration::from_millis(600),
            )?],
        };
        let scaled = |n: usize, min: usize| ((n as f64 * config.scale).round() as usize).max(min);
        Ok(Work {
            params,
            ls_payload,
            bs_payload,
            ls_tasks: scaled(LS_TASKS, 4),
            bs_tasks: scaled(BS_TASKS, 4),
            overhead_tasks: scaled(OVERHEAD_TASKS, 2),
            cost: Arc::new(profile.cost_model()),
            profile,
        })
    }

    fn closed_loop(&self, tenant: TenantId, tasks: usize) -> ClosedLoop {
        let payload = if tenant == LS_ID {
            &self.ls_payload
        } else {
            &self.bs_payload
        };
        ClosedLoop {
            tenant,
            op: "ec-encode".into(),
            params: self.params.clone(),
            payload: Arc::clone(payload),
            tasks,
            window: 1,
        }
    }
}

/// Runs the experiment's runs in turn, reporting progress.
struct Runner<'a> {
    work: &'a Work,
    config: &'a LiveConfig,
    progress: &'a mut dyn Progress,
    step: usize,
    steps: f64,
    /// The scheduling class each thread got (from the first runtime).
    realtime: Vec<RealtimeOutcome>,
    /// Tenants in processes of their own, if so configured.
    processes: Option<processes::Processes>,
}

/// One run's loops and what the host did to it.
struct Ran {
    loops: Vec<LoopRun>,
    host: HostInterference,
    /// With tenants in processes of their own: what the path between them
    /// and the daemon cost per task.
    transit: Option<processes::Transit>,
}

impl Ran {
    fn completions(&self) -> Vec<&Completion> {
        self.loops.iter().flat_map(|l| &l.completions).collect()
    }
}

impl Runner<'_> {
    /// Runs `loops` on a fresh runtime in `mode`.
    fn run(&mut self, mode: &Mode, label: &str, loops: &[ClosedLoop]) -> anyhow::Result<Ran> {
        self.step += 1;
        self.progress.update(self.step as f64 / self.steps, label);
        if let Some(p) = &self.processes {
            let (ran, realtime) = p.run(mode, self.work, self.config, loops)?;
            if self.realtime.is_empty() {
                self.realtime = realtime;
            }
            return Ok(ran);
        }
        let rt = runtime(mode, &self.work.cost, self.config)?;
        if self.realtime.is_empty() {
            self.realtime = rt.threads().into_iter().map(|t| t.realtime).collect();
        }
        let before = HostBefore::read(&rt);
        let loops = run_closed_loops(&rt, loops)?;
        let tenants: Vec<_> = loops.iter().map(|l| l.thread).collect();
        let done: Vec<&Completion> = loops.iter().flat_map(|l| &l.completions).collect();
        let realtime = rt
            .threads()
            .iter()
            .skip(1)
            .all(|t| matches!(t.realtime, RealtimeOutcome::Granted { .. }));
        let host = before.since(&rt, realtime, &tenants, &done);
        rt.shutdown();
        Ok(Ran {
            loops,
            host,
            transit: None,
        })
    }

    /// The LS tenant alone, natively: the median service time of its tasks.
    fn ls_alone(&mut self, round: usize, when: &str) -> anyhow::Result<Nanos> {
        let label = format!("round {round}: latency tenant alone ({when})");
        let ran = self.run(
            &Mode::Native,
            &label,
            &[self.work.closed_loop(LS_ID, self.work.ls_tasks)],
        )?;
        let done = ran.completions();
        measure::recorded(&done, None)?;
        Ok(measure::median_service(&done))
    }

    /// One policy's round: its overhead against native (the BS tenant
    /// alone, natively and under it, back to back), the shared run, and the
    /// LS tenant alone after it; returns the round's result and that last
    /// LS reference (the next run's reference before).
    fn policy_round(
        &mut self,
        round: usize,
        name: &str,
        ls_before: &Nanos,
    ) -> anyhow::Result<(RoundResult, Nanos)> {
        let mode = mode_of(name, self.work, self.config)?;
        let short = self.work.closed_loop(BS_ID, self.work.overhead_tasks);
        let alone = self.run(
            &Mode::Native,
            &format!("round {round}, {name}: bandwidth tenant alone"),
            std::slice::from_ref(&short),
        )?;
        let alone_done = alone.completions();
        let native = measure::recorded(&alone_done, None)?;
        let overhead_ratio = if mode == Mode::Native {
            1.0
        } else {
            let ours = self.run(
                &mode,
                &format!("round {round}, {name}: bandwidth tenant alone under {name}"),
                std::slice::from_ref(&short),
            )?;
            let ours = measure::recorded(&ours.completions(), None)?;
            ours.flow_throughput_bps(BS_ID) / native.flow_throughput_bps(BS_ID).max(f64::MIN_POSITIVE)
        };
        let both = self.run(
            &mode,
            &format!("round {round}, {name}: both tenants"),
            &[
                self.work.closed_loop(LS_ID, self.work.ls_tasks),
                self.work.closed_loop(BS_ID, self.work.bs_tasks),
            ],
        )?;
        let ls_after = self.ls_alone(round, &format!("after {name}"))?;
        let done = both.completions();
        let bs_service_alone_ns = measure::median_service(&alone_done);
        let solo = SoloReference {
            ls_service_ns: (ls_before + ls_after) / 2,
            ls_service_before_ns: *ls_before,
            ls_service_after_ns: ls_after,
            ls_drift: ls_after as f64 / (*ls_before).max(1) as f64 - 1.0,
            ls_service_in_run_ns: 0,
            bs_service_ns: uncontended_tail(&done).unwrap_or(bs_service_alone_ns),
            bs_service_alone_ns,
            bs_throughput_bps: native.flow_throughput_bps(BS_ID),
            bs_engine_share: native.engine_share_during_flow(BS_ID, BS_ID),
        };
        let mut result = measure::compare(round, &done, solo, overhead_ratio, both.host)?;
        result.cross_process_ns = both.transit.and_then(|t| t.ls_ns);
        Ok((result, ls_after))
    }
}

/// The median service time of the BS tenant's tasks that started once the
/// LS tenant's last task had completed and the engine's contention window
/// had passed (whole, uncontended: its own solo reference, in the same
/// run); `None` if fewer than [`MIN_TAIL_TASKS`] did.
fn uncontended_tail(done: &[&Completion]) -> Option<Nanos> {
    let ls_end = done
        .iter()
        .filter(|c| c.tenant == LS_ID)
        .map(|c| c.finished_ns)
        .max()?;
    let from = ls_end.saturating_add(isola_runtime::DEFAULT_CONTENTION_WINDOW_NS);
    let tail: Vec<&Completion> = done
        .iter()
        .copied()
        .filter(|c| c.tenant == BS_ID && c.started_ns.is_some_and(|s| s >= from))
        .collect();
    (tail.len() >= MIN_TAIL_TASKS).then(|| measure::median_service(&tail))
}

/// Whether the dispatcher and the worker go in a real-time class: if
/// asked, and if the machine has a CPU left for everything else.
fn realtime_usable(config: &LiveConfig) -> bool {
    config.realtime && std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
}

/// The runtime mode of policy `name` (`native`: the runtime's native mode).
fn mode_of(name: &str, work: &Work, config: &LiveConfig) -> anyhow::Result<Mode> {
    if name == "native" {
        return Ok(Mode::Native);
    }
    let mut params = BTreeMap::new();
    if isola_core::policy::find_policy(name)?.name == "drr" {
        // A split subtask's predicted cost: DRR's quantum (its `auto`
        // would take the largest task seen, an unsplit 8 MiB one).
        let subtask_ns = work
            .cost
            .predict("ec-encode", config.split_bytes)
            .unwrap_or(1)
            .max(1);
        params.insert("quantum".to_string(), subtask_ns.to_string());
    }
    Ok(Mode::Isolated {
        policy: name.to_string(),
        params,
    })
}

/// A runtime with one EC engine (one worker: one accelerator) and the two
/// tenants; isolation policies split and keep the engine queue empty.
fn runtime(
    mode: &Mode,
    cost: &Arc<dyn isola_core::CostModel>,
    config: &LiveConfig,
) -> anyhow::Result<isola_runtime::Runtime> {
    let mut b = RuntimeBuilder::new();
    let mut engine =
        EngineConfig::new("ec", &["ec-encode"], 1, Arc::clone(cost)).with_queue_depth(config.queue_depth);
    if *mode != Mode::Native {
        engine = engine
            .with_split(config.split_bytes)
            .with_split_when(config.split_when);
    }
    b.engine(engine);
    b.tenant(
        LS,
        Slo {
            weight: LS_WEIGHT,
            class: TenantClass::LatencySensitive,
            latency: Some(LatencyObjective::ServiceMultiple(SLA_MULTIPLE)),
            ..Slo::default()
        },
    );
    b.tenant(
        BS,
        Slo {
            class: TenantClass::BandwidthSensitive,
            ..Slo::default()
        },
    );
    b.mode(mode.clone());
    // The EC worker gets a core of its own, the dispatcher another: on this
    // two-core machine that took the latency tenant's violations under
    // sfq from 24-88% (threads moved around) to 4-5% over repeated runs.
    b.pin_threads(config.pin_threads);
    if realtime_usable(config) {
        // A real-time thread that polls holds its core for the whole poll:
        // by default it sleeps at once instead, so the tenants' threads get
        // the core.
        b.realtime(Some(Realtime::default())).spin(Duration::ZERO);
    }
    if let Some(poll) = config.poll {
        b.spin(poll);
    }
    Ok(b.start()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoProgress;

    /// A configuration that cannot run is an error before anything runs.
    #[test]
    fn bad_configurations_are_errors() {
        for scale in [0.0, 1.5, f64::NAN] {
            let config = LiveConfig {
                scale,
                ..LiveConfig::default()
            };
            let err = run(&config, &mut NoProgress).unwrap_err().to_string();
            assert!(err.contains("scale"), "{err}");
        }
        let config = LiveConfig {
            policies: vec!["nonesuch".into()],
            ..LiveConfig::default()
        };
        let err = format!("{:#}", run(&config, &mut NoProgress).unwrap_err());
        assert!(err.contains("nonesuch"), "{err}");
    }

    #[test]
    fn zero_rounds_is_an_error() {
        let config = LiveConfig {
            rounds: 0,
            ..LiveConfig::default()
        };
        let err = run(&config, &mut NoProgress).unwrap_err().to_string();
        assert!(err.contains("rounds"), "{err}");
    }
}
