//! What the daemon counts for Prometheus (issue 15): per tenant and
//! engine, the tasks submitted, completed, rejected and failed (by
//! reason), their input and output bytes, their latency from arrival to
//! completion, latency-objective violations, the tasks in the daemon,
//! the engines' busy time; per engine, Jain's fairness index over the last
//! [`FAIRNESS_WINDOW`]; per tenant, its connections; and the daemon's
//! version and configuration file. docs/daemon.md ("Metrics") lists every
//! metric; [`crate::http`] serves them.
//!
//! The metrics themselves are `prometheus-client`'s (the official Rust
//! client), registered in one [`Registry`] that the exposition encodes.
//! Tenants and engines are fixed by the configuration, so every
//! (tenant, engine) series is made at start: a scrape shows them at zero
//! before any task, and the hot path never looks a label set up in a
//! family's map (a lock every task would take). It indexes a table of
//! handles instead, each an atomic counter or gauge (the latency histogram
//! is a short mutex of its tenant and engine alone). Counters belong to
//! the tenant, not to a connection: they stay when a connection ends.

use isola_core::metrics::{jain_of_active, SlidingService};
use isola_core::LatencyObjective;
use isola_runtime::Completion;
use isola_wire::control::FALLBACK_REASONS;
use isola_wire::entry::{detail, CompletionEntry, CompletionStatus};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, RwLock};
use std::time::Duration;

/// Upper bounds of the latency histogram's buckets, seconds: 1 us to 10 s,
/// three a decade (1, 2.5, 5). The daemon's own round trip is about 10 us;
/// a task waiting behind others takes milliseconds to seconds.
pub const LATENCY_BUCKETS: [f64; 22] = [
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1,
    0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The window of the fairness index: the service of the last 10 s.
pub const FAIRNESS_WINDOW: Duration = Duration::from_secs(10);

/// How often the fairness index is recomputed (and the window slides).
pub const FAIRNESS_TICK: Duration = Duration::from_secs(1);

/// The `reason` of `isola_tasks_rejected_total`: refused before running.
pub const REJECT_REASONS: [&str; 5] = ["bad_entry", "channel_full", "over_quota", "no_engine", "other"];

/// The `reason` of `isola_tasks_failed_total`: taken, but no output.
pub const FAIL_REASONS: [&str; 6] = [
    "operator",
    "output_too_large",
    "panicked",
    "over_budget",
    "cancelled",
    "abandoned",
];

/// The index in [`FAIL_REASONS`] of the first reason that is a task given
/// up (`cancelled`, `abandoned`) rather than an operator's failure.
const FIRST_GIVEN_UP: usize = 4;
const _: () = assert!(matches!(FAIL_REASONS[FIRST_GIVEN_UP].as_bytes(), b"cancelled"));

/// The `engine` label of tasks no engine could take (an unknown operator
/// handle, an operator no engine serves).
pub const NO_ENGINE: &str = "none";

/// How a task's answer counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Done, with its output.
    Completed,
    /// Refused, by [`REJECT_REASONS`] index.
    Rejected(usize),
    /// Failed, by [`FAIL_REASONS`] index.
    Failed(usize),
}

/// Maps the typed outcome the tenant is answered with to what it counts
/// as: the one place reasons are named.
fn classify(outcome: CompletionStatus) -> Class {
    match outcome {
        CompletionStatus::Ok => Class::Completed,
        CompletionStatus::BadEntry(_) => Class::Rejected(0),
        CompletionStatus::Rejected(detail::CHANNEL_FULL) => Class::Rejected(1),
        CompletionStatus::Rejected(detail::OVER_QUOTA) => Class::Rejected(2),
        CompletionStatus::Rejected(detail::NO_ENGINE) => Class::Rejected(3),
        CompletionStatus::Rejected(_) => Class::Rejected(4),
        CompletionStatus::OperatorFailed(detail::OUTPUT_TOO_LARGE) => Class::Failed(1),
        CompletionStatus::OperatorFailed(detail::PANICKED) => Class::Failed(2),
        CompletionStatus::OperatorFailed(detail::OVER_BUDGET) => Class::Failed(3),
        CompletionStatus::OperatorFailed(_) | CompletionStatus::Unknown(..) => Class::Failed(0),
        CompletionStatus::Cancelled => Class::Failed(4),
        CompletionStatus::Abandoned => Class::Failed(5),
    }
}

/// Labels of a tenant's series on one engine.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TaskLabels {
    tenant: String,
    engine: String,
}

/// Labels of a counter by reason.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    tenant: String,
    engine: String,
    reason: String,
}

/// Labels of a per-tenant series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantLabels {
    tenant: String,
}

/// Labels of a per-tenant counter by reason.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonOfTenant {
    tenant: String,
    reason: String,
}

/// Labels of a tenant's packet counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PacketLabels {
    tenant: String,
    outcome: String,
}

/// What became of a packet of a tenant's flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PacketOutcome {
    /// It matched one of the tenant's flows.
    Received,
    /// Its kernel's output went back to its sender.
    Replied,
    /// The tenant's queue was full (or over its quota): dropped.
    Dropped,
    /// Its kernel failed on it.
    Aborted,
    /// Its kernel ran and no reply was asked for (a flow with `reply =
    /// false`, or a WebAssembly kernel that sent none): it ended there.
    Consumed,
    /// It carried ECN bits and was taken into a congested flow queue
    /// marked Congestion Experienced (counted besides its outcome, as
    /// `Received` is).
    Marked,
}

/// The `outcome` label of each [`PacketOutcome`], in its order.
const PACKET_OUTCOMES: [&str; 6] = ["received", "replied", "dropped", "aborted", "consumed", "marked"];

/// Labels of a per-engine series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EngineLabels {
    engine: String,
}

/// Labels of `isola_daemon_info`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InfoLabels {
    version: String,
    config: String,
}

/// A latency histogram with [`LATENCY_BUCKETS`].
fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// A float counter (seconds).
type Seconds = Counter<f64, AtomicU64>;

/// The families, as registered.
struct Families {
    submitted: Family<TaskLabels, Counter>,
    completed: Family<TaskLabels, Counter>,
    rejected: Family<ReasonLabels, Counter>,
    failed: Family<ReasonLabels, Counter>,
    input_bytes: Family<TaskLabels, Counter>,
    output_bytes: Family<TaskLabels, Counter>,
    latency: Family<TaskLabels, Histogram, fn() -> Histogram>,
    violations: Family<TaskLabels, Counter>,
    depth: Family<TaskLabels, Gauge>,
    busy: Family<TaskLabels, Seconds>,
    predicted: Family<TaskLabels, Seconds>,
    fairness: Family<EngineLabels, Gauge<f64, AtomicU64>>,
    connections: Family<TenantLabels, Gauge>,
    packets: Family<PacketLabels, Counter>,
    unmatched: Counter,
    fallbacks: Family<ReasonOfTenant, Counter>,
}

impl Families {
    fn new() -> Families {
        Families {
            submitted: Family::default(),
            completed: Family::default(),
            rejected: Family::default(),
            failed: Family::default(),
            input_bytes: Family::default(),
            output_bytes: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            violations: Family::default(),
            depth: Family::default(),
            busy: Family::default(),
            predicted: Family::default(),
            fairness: Family::default(),
            connections: Family::default(),
            packets: Family::default(),
            unmatched: Counter::default(),
            fallbacks: Family::default(),
        }
    }

    /// Registers every family in `r`, with its help text.
    fn register(&self, r: &mut Registry) {
        let help = [
            "Tasks the daemon took from a tenant's submission ring (accepted or refused)",
            "Tasks completed with their output",
            "Tasks refused before running, by reason",
            "Tasks taken that ended without an output, by reason",
            "Input bytes of the tasks handed to the runtime",
            "Output bytes of the tasks completed",
            "Latency of the tasks completed, from their arrival in the daemon to their completion",
            "Tasks completed over their tenant's latency objective (none counted without one)",
            "Tasks in the daemon: handed to the runtime and not yet answered (queued or running)",
            "Measured service time of the tenant's tasks on the engine",
            "Jain's fairness index of the last 10 s of the engine's service among its active tenants, by weight",
            "Connections the tenant holds",
            "Datagrams of the tenant's flows on the packet path, by outcome",
            "Datagrams on the packet path that no flow matched (dropped)",
            "Calls of the tenant's adapters (OpenSSL provider, zlib interposer) that ran in its own process instead, by reason, as the adapters report them",
        ];
        r.register("tasks_submitted", help[0], self.submitted.clone());
        r.register("tasks_completed", help[1], self.completed.clone());
        r.register("tasks_rejected", help[2], self.rejected.clone());
        r.register("tasks_failed", help[3], self.failed.clone());
        r.register("task_input_bytes", help[4], self.input_bytes.clone());
        r.register("task_output_bytes", help[5], self.output_bytes.clone());
        r.register("task_latency_seconds", help[6], self.latency.clone());
        r.register("sla_violations", help[7], self.violations.clone());
        r.register("queue_depth", help[8], self.depth.clone());
        r.register("engine_busy_seconds", help[9], self.busy.clone());
        r.register("engine_fairness_jain", help[10], self.fairness.clone());
        r.register("tenant_connections", help[11], self.connections.clone());
        r.register("packets", help[12], self.packets.clone());
        r.register("packets_unmatched", help[13], self.unmatched.clone());
        r.register("tenant_fallbacks", help[14], self.fallbacks.clone());
        r.register(
            "engine_predicted_seconds",
            "Service time the tenant's completed tasks on the engine were predicted to take when dispatched (engine_busy_seconds over this: how far they ran over their predictions)",
            self.predicted.clone(),
        );
    }
}

/// One tenant's handles on one engine (or on none: then only what a task
/// without an engine can count is registered, the rest is detached).
struct Series {
    submitted: Counter,
    completed: Counter,
    rejected: [Counter; REJECT_REASONS.len()],
    failed: [Counter; FAIL_REASONS.len()],
    input_bytes: Counter,
    output_bytes: Counter,
    latency: Histogram,
    violations: Counter,
    depth: Gauge,
    busy: Seconds,
    predicted: Seconds,
}

impl Series {
    fn new(f: &Families, tenant: &str, engine: Option<&str>) -> Series {
        let te = TaskLabels {
            tenant: tenant.to_string(),
            engine: engine.unwrap_or(NO_ENGINE).to_string(),
        };
        let reason = |family: &Family<ReasonLabels, Counter>, reason: &str| {
            // Without an engine a task can only be a bad entry, or have
            // no engine.
            if engine.is_some() || reason == "bad_entry" || reason == "no_engine" {
                family.get_or_create_owned(&ReasonLabels {
                    tenant: te.tenant.clone(),
                    engine: te.engine.clone(),
                    reason: reason.to_string(),
                })
            } else {
                Counter::default()
            }
        };
        let rejected = REJECT_REASONS.map(|r| reason(&f.rejected, r));
        let failed = FAIL_REASONS.map(|r| reason(&f.failed, r));
        if engine.is_none() {
            return Series {
                submitted: f.submitted.get_or_create_owned(&te),
                rejected,
                failed,
                completed: Counter::default(),
                input_bytes: Counter::default(),
                output_bytes: Counter::default(),
                latency: latency_histogram(),
                violations: Counter::default(),
                depth: Gauge::default(),
                busy: Seconds::default(),
                predicted: Seconds::default(),
            };
        }
        Series {
            submitted: f.submitted.get_or_create_owned(&te),
            completed: f.completed.get_or_create_owned(&te),
            rejected,
            failed,
            input_bytes: f.input_bytes.get_or_create_owned(&te),
            output_bytes: f.output_bytes.get_or_create_owned(&te),
            latency: f.latency.get_or_create_owned(&te),
            violations: f.violations.get_or_create_owned(&te),
            depth: f.depth.get_or_create_owned(&te),
            busy: f.busy.get_or_create_owned(&te),
            predicted: f.predicted.get_or_create_owned(&te),
        }
    }

    /// Counts an answer by its outcome.
    fn count(&self, outcome: CompletionStatus) {
        match classify(outcome) {
            Class::Completed => self.completed.inc(),
            Class::Rejected(r) => self.rejected[r].inc(),
            Class::Failed(r) => self.failed[r].inc(),
        };
    }
}

/// What the fairness index needs of a tenant.
struct TenantInfo {
    weight: f64,
    latency: Option<LatencyObjective>,
}

/// An engine as the runtime routes to it.
struct Route {
    name: String,
    ops: Vec<String>,
}

/// A tenant seat's handles, while a tenant holds it.
struct SlotMetrics {
    info: TenantInfo,
    /// One per engine, then "no engine".
    series: Vec<Series>,
    connections: Gauge,
    /// By [`PacketOutcome`].
    packets: [Counter; PACKET_OUTCOMES.len()],
    /// By [`FALLBACK_REASONS`].
    fallbacks: [Counter; FALLBACK_REASONS.len()],
}

/// Every metric of a daemon, and the registry that exposes them.
pub struct Metrics {
    registry: Registry,
    families: Families,
    routes: Vec<Route>,
    /// Per tenant seat (its id in the core); `None` while vacant. A
    /// tenant removed leaves its series in the families (its counters
    /// stay in the exposition); one added gets its own.
    seats: Vec<RwLock<Option<SlotMetrics>>>,
    fairness: Vec<Gauge<f64, AtomicU64>>,
    /// Busy seconds of every (tenant seat, real engine), one total a
    /// tick, for the fairness window.
    window: Mutex<SlidingService>,
    /// What the engines learned of their operators' costs.
    costs: CostGauges,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("seats", &self.seats.len())
            .field("engines", &self.routes.len())
            .finish_non_exhaustive()
    }
}

impl Metrics {
    /// Every series of the tenants and engines of `config`, at zero, with
    /// room for its spare tenant seats.
    pub fn new(config: &crate::DaemonConfig) -> Metrics {
        let mut registry = Registry::with_prefix("isola");
        let families = Families::new();
        families.register(&mut registry);
        let costs = CostGauges::default();
        costs.register(&mut registry);
        registry.register(
            "daemon",
            "The daemon's version and configuration file",
            Info::new(InfoLabels {
                version: env!("CARGO_PKG_VERSION").to_string(),
                config: config.path.display().to_string(),
            }),
        );
        let m = Metrics {
            routes: config
                .engines
                .iter()
                .map(|e| Route {
                    name: e.name.clone(),
                    ops: e.ops.clone(),
                })
                .collect(),
            seats: (0..config.tenants.len() + config.spare_tenants)
                .map(|_| RwLock::new(None))
                .collect(),
            fairness: config
                .engines
                .iter()
                .map(|e| {
                    let g = families.fairness.get_or_create_owned(&EngineLabels {
                        engine: e.name.clone(),
                    });
                    g.set(1.0);
                    g
                })
                .collect(),
            window: Mutex::new(SlidingService::new(
                (FAIRNESS_WINDOW.as_millis() / FAIRNESS_TICK.as_millis()).max(1) as usize,
            )),
            costs,
            families,
            registry,
        };
        for (t, tenant) in config.tenants.iter().enumerate() {
            m.set_tenant(t, Some(tenant));
        }
        m
    }

    /// Seat `seat` is now held by `tenant` (its series made, or found
    /// again if a tenant of that name held one before), or vacant.
    pub(crate) fn set_tenant(&self, seat: usize, tenant: Option<&crate::config::DaemonTenant>) {
        let Some(cell) = self.seats.get(seat) else {
            return;
        };
        let made = tenant.map(|t| {
            let f = &self.families;
            let mut series: Vec<Series> = self
                .routes
                .iter()
                .map(|e| Series::new(f, t.name(), Some(&e.name)))
                .collect();
            series.push(Series::new(f, t.name(), None));
            SlotMetrics {
                info: TenantInfo {
                    weight: t.slo().weight,
                    latency: t.slo().latency,
                },
                series,
                connections: f.connections.get_or_create_owned(&TenantLabels {
                    tenant: t.name().to_string(),
                }),
                packets: PACKET_OUTCOMES.map(|outcome| {
                    f.packets.get_or_create_owned(&PacketLabels {
                        tenant: t.name().to_string(),
                        outcome: outcome.to_string(),
                    })
                }),
                fallbacks: FALLBACK_REASONS.map(|reason| {
                    f.fallbacks.get_or_create_owned(&ReasonOfTenant {
                        tenant: t.name().to_string(),
                        reason: reason.to_string(),
                    })
                }),
            }
        });
        if let Ok(mut cell) = cell.write() {
            *cell = made;
        }
    }

    /// Runs `f` on `tenant`'s series on `engine` (`None`: no engine) and
    /// its SLO's figures, if a tenant holds that seat.
    fn with_series(&self, tenant: usize, engine: Option<usize>, f: impl FnOnce(&Series, &TenantInfo)) {
        let engines = self.routes.len();
        let e = engine.unwrap_or(engines).min(engines);
        if let Some(Ok(cell)) = self.seats.get(tenant).map(RwLock::read) {
            if let Some(m) = cell.as_ref() {
                f(&m.series[e], &m.info);
            }
        }
    }

    /// The engine that runs operator `op`, as the runtime routes a task
    /// (the first engine whose `ops` lists it, or that lists none).
    pub(crate) fn engine_of(&self, op: &str) -> Option<usize> {
        self.routes
            .iter()
            .position(|r| r.ops.is_empty() || r.ops.iter().any(|o| o == op))
    }

    /// Counts a submission of `tenant` answered at once with `outcome`
    /// (a bad entry, or one the runtime refused at submit).
    pub(crate) fn refused(&self, tenant: usize, engine: Option<usize>, outcome: CompletionStatus) {
        self.with_series(tenant, engine, |s, _| {
            s.submitted.inc();
            s.count(outcome);
        });
    }

    /// Counts a submission of `tenant` handed to the runtime with
    /// `input_bytes` of input: it is in the daemon until answered.
    pub(crate) fn accepted(&self, tenant: usize, engine: Option<usize>, input_bytes: u64) {
        self.with_series(tenant, engine, |s, _| {
            s.submitted.inc();
            s.input_bytes.inc_by(input_bytes);
            s.depth.inc();
        });
    }

    /// Counts the answer `answer` to task `done` (one that
    /// [`Metrics::accepted`] counted): its outcome, its output, its
    /// latency and whether it missed its tenant's objective, its service.
    pub(crate) fn answered(&self, done: &Completion, answer: &CompletionEntry) {
        self.with_series(done.tenant.index(), Some(done.engine.index()), |s, info| {
            s.depth.dec();
            s.busy.inc_by(done.service_ns as f64 * 1e-9);
            s.predicted.inc_by(done.predicted_ns as f64 * 1e-9);
            s.count(answer.outcome);
            if answer.outcome == CompletionStatus::Ok {
                s.output_bytes.inc_by(answer.output_len);
                let latency = answer.completion_ns.saturating_sub(answer.arrival_ns);
                s.latency.observe(latency as f64 * 1e-9);
                if info
                    .latency
                    .is_some_and(|o| o.violated(latency, answer.predicted_ns))
                {
                    s.violations.inc();
                }
            }
        });
    }

    /// Counts `service_ns` of engine time that a task `tenant`'s packets
    /// caused took on `engine` (a kernel, a reply, a kernel's DMA write):
    /// busy time, as [`Metrics::answered`] counts a socket task's.
    pub(crate) fn served(&self, tenant: usize, engine: usize, service_ns: u64, predicted_ns: u64) {
        self.with_series(tenant, Some(engine), |s, _| {
            s.busy.inc_by(service_ns as f64 * 1e-9);
            s.predicted.inc_by(predicted_ns as f64 * 1e-9);
        });
    }

    /// Reads the engines' cost fits from `source` for the gauges (once).
    pub(crate) fn watch_costs(&self, source: isola_runtime::LearnedCosts) {
        self.costs.watch(source);
    }

    /// `tenant`'s predicted and measured service per engine, ns (engines
    /// it has not used left out).
    pub(crate) fn engine_service(&self, tenant: usize) -> Vec<isola_wire::admin::EngineService> {
        let Some(Ok(cell)) = self.seats.get(tenant).map(RwLock::read) else {
            return Vec::new();
        };
        let Some(m) = cell.as_ref() else {
            return Vec::new();
        };
        self.routes
            .iter()
            .zip(&m.series)
            .filter(|(_, s)| s.busy.get() > 0.0 || s.predicted.get() > 0.0)
            .map(|(r, s)| isola_wire::admin::EngineService {
                engine: r.name.clone(),
                predicted_ns: (s.predicted.get() * 1e9).round() as u64,
                measured_ns: (s.busy.get() * 1e9).round() as u64,
            })
            .collect()
    }

    /// Seat `tenant`'s counters as `isola ctl list` shows them: the same
    /// series Prometheus scrapes, summed over engines (ring tasks by how
    /// they ended, their input bytes, the engine time of its tasks and
    /// packets) and its packets by outcome; `over_budget` is the
    /// runtime's and is left at 0 here. A vacant seat has none.
    pub(crate) fn figures(&self, tenant: usize) -> isola_wire::admin::TenantFigures {
        let mut f = isola_wire::admin::TenantFigures::default();
        let Some(Ok(cell)) = self.seats.get(tenant).map(RwLock::read) else {
            return f;
        };
        let Some(m) = cell.as_ref() else {
            return f;
        };
        let sum = |counters: &[Counter]| counters.iter().map(Counter::get).sum::<u64>();
        for s in &m.series {
            // FAIL_REASONS: an operator's failure first, then the tasks
            // given up with their connection (`ctl`'s `cancelled`).
            let (failed, given_up) = s.failed.split_at(FIRST_GIVEN_UP);
            f.submitted += s.submitted.get();
            f.succeeded += s.completed.get();
            f.rejected += sum(&s.rejected);
            f.failed += sum(failed);
            f.cancelled += sum(given_up);
            f.bytes += s.input_bytes.get();
            f.busy_ns += (s.busy.get() * 1e9).round() as u64;
            f.predicted_ns += (s.predicted.get() * 1e9).round() as u64;
        }
        let packets = |o: PacketOutcome| m.packets[o as usize].get();
        f.packets_received = packets(PacketOutcome::Received);
        f.packets_replied = packets(PacketOutcome::Replied);
        f.packets_dropped = packets(PacketOutcome::Dropped);
        f.packets_aborted = packets(PacketOutcome::Aborted);
        f.packets_consumed = packets(PacketOutcome::Consumed);
        f
    }

    /// Counts `n` packets of `tenant`'s flows by `outcome`.
    pub(crate) fn packets(&self, tenant: usize, outcome: PacketOutcome, n: u64) {
        if let Some(Ok(cell)) = self.seats.get(tenant).map(RwLock::read) {
            if let Some(m) = cell.as_ref() {
                m.packets[outcome as usize].inc_by(n);
            }
        }
    }

    /// Counts `count` calls of `tenant`'s adapters that ran in its own
    /// process instead, for reason `reason` (an index into
    /// [`FALLBACK_REASONS`]; any other is the last, `failed`).
    pub(crate) fn fallbacks(&self, tenant: usize, reason: u32, count: u64) {
        let at = (reason as usize).min(FALLBACK_REASONS.len() - 1);
        if let Some(Ok(cell)) = self.seats.get(tenant).map(RwLock::read) {
            if let Some(m) = cell.as_ref() {
                m.fallbacks[at].inc_by(count);
            }
        }
    }

    /// Counts a datagram no flow matched.
    pub(crate) fn unmatched(&self) {
        self.families.unmatched.inc();
    }

    /// Sets how many connections `tenant` holds.
    pub(crate) fn set_connections(&self, tenant: usize, held: u32) {
        if let Some(Ok(cell)) = self.seats.get(tenant).map(RwLock::read) {
            if let Some(m) = cell.as_ref() {
                m.connections.set(i64::from(held));
            }
        }
    }

    /// Takes this tick's snapshot of every tenant's service and sets each
    /// engine's fairness index over the window: Jain's index of the
    /// service each active tenant got in the last [`FAIRNESS_WINDOW`] (or
    /// since the daemon started, if that is shorter), divided by its
    /// weight. A tenant is active on an engine if it was served there in
    /// the window or has tasks there now; with none, the index is 1.
    pub(crate) fn tick_fairness(&self) {
        let names: Vec<String> = self.routes.iter().map(|r| r.name.clone()).collect();
        self.costs.update(&names);
        let engines = self.routes.len();
        // Per seat: its weight (`None`: vacant), and per engine its busy
        // seconds and whether it has tasks waiting.
        let mut weights_of = Vec::with_capacity(self.seats.len());
        let mut now = Vec::with_capacity(self.seats.len() * engines);
        let mut waiting = Vec::with_capacity(self.seats.len() * engines);
        for cell in &self.seats {
            let cell = cell.read().ok();
            let m = cell.as_ref().and_then(|c| c.as_ref());
            weights_of.push(m.map(|m| m.info.weight));
            for e in 0..engines {
                now.push(m.map_or(0.0, |m| m.series[e].busy.get()));
                waiting.push(m.is_some_and(|m| m.series[e].depth.get() > 0));
            }
        }
        let Ok(mut window) = self.window.lock() else {
            return;
        };
        let served = window.tick(now);
        for (e, gauge) in self.fairness.iter().enumerate() {
            let mut active = Vec::new();
            for (t, weight) in weights_of.iter().enumerate() {
                let Some(weight) = weight else {
                    continue;
                };
                let i = t * engines + e;
                if served[i] > 0.0 || waiting[i] {
                    active.push((served[i], *weight));
                }
            }
            // Nobody active is fair; a window the index cannot be taken of
            // (a weight not positive) leaves it as it was.
            if let Ok(j) = jain_of_active(&active) {
                gauge.set(j);
            }
        }
    }

    /// The exposition of every metric: the OpenMetrics text format if
    /// `openmetrics`, else Prometheus' text format 0.0.4.
    pub(crate) fn encode(&self, openmetrics: bool) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        if openmetrics {
            text
        } else {
            to_prometheus_text(&text)
        }
    }
}

/// Prometheus' text format 0.0.4 of the OpenMetrics text `open` that
/// `prometheus-client` writes (it writes only OpenMetrics). The two differ,
/// for what this daemon exposes, only in the descriptors: a counter's
/// family is named with its `_total` suffix, an info metric is a gauge
/// named with `_info`, and there are no `# UNIT` or `# EOF` lines. Samples,
/// label escaping and `+Inf` are the same. Scrapers that ask for
/// OpenMetrics (Prometheus does) get it unchanged; plain clients and
/// `promtool check metrics` get this.
fn to_prometheus_text(open: &str) -> String {
    let mut out = String::with_capacity(open.len());
    // prometheus-client writes HELP before TYPE: a HELP waits for its TYPE.
    let mut help: Option<&str> = None;
    for line in open.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            help = Some(rest);
            continue;
        }
        if let Some((name, kind)) = line.strip_prefix("# TYPE ").and_then(|r| r.rsplit_once(' ')) {
            let (name, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                other => (name.to_string(), other),
            };
            if let Some((_, text)) = help.take().and_then(|h| h.split_once(' ')) {
                out.push_str(&format!("# HELP {name} {text}\n"));
            }
            out.push_str(&format!("# TYPE {name} {kind}\n"));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;

mod costs;
pub(crate) use costs::CostGauges;
