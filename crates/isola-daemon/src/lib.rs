//! # isola-daemon
//!
//! `isolad`: the live runtime as a service. Tenants in their own processes
//! connect to a Unix socket; the daemon reads each peer's kernel
//! credentials (`SO_PEERCRED`) and admits it only as a tenant its
//! configuration grants to that uid or gid, up to the tenant's connection
//! limit; each connection gets its own sealed shared-memory region
//! (`isola_wire`) with rings and an arena of the tenant's memory quota;
//! every submission is copied out, checked, and scheduled by the isolation
//! core in the live runtime, and answered by exactly one completion.
//!
//! What it must not do: schedule (the core does), run operators (the
//! runtime does), or trust anything a tenant writes. Its logic is in this
//! library, so that tests drive a real daemon in-process; `isolad` (the
//! binary) only reads flags and the configuration.
//!
//! It counts what it serves (`metrics`), and serves the counts to
//! Prometheus over HTTP where the configuration says (`http`). Its admin
//! protocol's client side, behind `isola ctl`, is [`ctl`].

#![warn(missing_docs)]

mod aborts;
mod admin;
pub mod config;
mod connection;
pub mod ctl;
mod egress;
mod host_write;
mod http;
mod ingest;
mod ingress;
pub mod io_flow;
pub mod kernel;
mod metrics;
mod possession;
mod ring;
mod socket_wake;
mod tenants;
mod udp_batch;

pub use aborts::{error_reply, ERROR_REPLY_PREFIX};
pub use config::DaemonConfig;
pub use ingress::PacketCounts;
use isola_core::{AffineCost, Slo};
use isola_runtime::{EngineConfig, Mode, Runtime, RuntimeBuilder};
use rustix::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The runtime could not be built from the configuration.
    #[error("building the runtime: {0}")]
    Runtime(Box<isola_runtime::BuildError>),
    /// The socket could not be opened.
    #[error("socket {path}: {source}")]
    Socket {
        /// Its path.
        path: String,
        /// What failed.
        source: isola_wire::control::ControlError,
    },
    /// A UDP address of the packet path could not be bound.
    #[error("udp {addrs}: {source}")]
    Udp {
        /// The addresses configured.
        addrs: String,
        /// What failed.
        source: std::io::Error,
    },
    /// A tenant's own socket (`attach_socket`) could not be made.
    #[error("{0}")]
    Attach(String),
    /// The metrics address could not be listened on.
    #[error("metrics address {addr}: {source}")]
    Metrics {
        /// The address.
        addr: std::net::SocketAddr,
        /// What failed.
        source: std::io::Error,
    },
    /// A thread of the daemon's own could not be started.
    #[error("starting the thread {name}: {source}")]
    Thread {
        /// Its name.
        name: &'static str,
        /// What failed.
        source: std::io::Error,
    },
}

/// What every connection of a daemon shares.
pub(crate) struct Shared {
    pub(crate) config: DaemonConfig,
    pub(crate) runtime: Runtime,
    /// Keep every task's runtime completion (`Daemon::record_completions`).
    pub(crate) record: AtomicBool,
    /// The completions kept.
    pub(crate) recorded: Mutex<Vec<isola_runtime::Completion>>,
    /// Connections that have not said who they are yet.
    pub(crate) attaching: std::sync::atomic::AtomicUsize,
    /// The packet path's matcher and counters.
    pub(crate) packets: ingress::PacketPath,
    /// Which tenant holds each seat of the core, and its connections.
    pub(crate) tenants: Mutex<tenants::TenantTable>,
    /// The daemon drains: connections take no more submissions.
    pub(crate) draining: AtomicBool,
    /// The connections being served, to drain them.
    live: Mutex<Vec<std::sync::Weak<connection::Conn>>>,
    /// Their threads, to wait for them.
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// What is counted for Prometheus.
    pub(crate) metrics: Arc<metrics::Metrics>,
    /// Where large inputs are copied in and submitted (`ingest`).
    pub(crate) ingest: ingest::Ingest,
    /// Each tenant's host window: where its packet kernels' DMA writes land.
    pub(crate) host_windows: Arc<host_write::HostWindows>,
    /// The log of aborted packets, rate-limited per tenant.
    pub(crate) aborts: aborts::AbortLog,
    /// The tenants' own sockets (`attach_socket`).
    pub(crate) attach_sockets: possession::AttachSockets,
}

impl Shared {
    /// The runtime's clock, ns (completions' times are on it).
    /// Keeps a connection's thread, for a drain to wait for.
    pub(crate) fn keep_thread(&self, t: JoinHandle<()>) {
        if let Ok(mut threads) = self.threads.lock() {
            threads.retain(|t| !t.is_finished());
            threads.push(t);
        }
    }

    pub(crate) fn now_ns(&self) -> u64 {
        self.runtime.now_ns()
    }

    /// Keeps `conn` for a drain.
    pub(crate) fn track(&self, conn: &Arc<connection::Conn>) {
        if let Ok(mut live) = self.live.lock() {
            live.retain(|c| c.strong_count() > 0);
            live.push(Arc::downgrade(conn));
        }
    }

    /// Keeps completion `c` (without its output) if completions are being
    /// recorded (`Daemon::record_completions`).
    pub(crate) fn keep(&self, c: &isola_runtime::Completion) {
        if self.record.load(Ordering::Acquire) {
            if let Ok(mut r) = self.recorded.lock() {
                r.push(c.summary());
            }
        }
    }

    /// Takes a completed task the daemon submitted on a tenant's behalf
    /// (the packet path's kernels, replies and kernels' DMA writes): kept
    /// as [`Shared::keep`] keeps it, and its service counted as the
    /// tenant's busy time on its engine (a socket task's is counted when
    /// its answer is, `Metrics::answered`).
    pub(crate) fn settle_packet_task(&self, c: &isola_runtime::Completion) {
        self.keep(c);
        self.metrics
            .served(c.tenant.index(), c.engine.index(), c.service_ns, c.predicted_ns);
    }

    /// The daemon's first engine of `kind`, if any: its DMA engine (which
    /// carries kernels' DMA writes) or its egress engine (which sends the
    /// packet path's replies).
    pub(crate) fn engine_of(&self, kind: isola_core::EngineKind) -> Option<isola_core::EngineId> {
        let e = self.config.engines.iter().position(|e| e.kind == kind)?;
        Some(isola_core::EngineId(e as u32))
    }

    /// The connections of tenant seat `t` being served now, oldest first.
    pub(crate) fn connections_of(&self, t: usize) -> Vec<Arc<connection::Conn>> {
        self.live
            .lock()
            .map(|live| {
                live.iter()
                    .filter_map(std::sync::Weak::upgrade)
                    .filter(|c| c.tenant == t)
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A running daemon: its socket accepts tenants until [`Daemon::stop`].
pub struct Daemon {
    shared: Arc<Shared>,
    stopping: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    admin: Option<JoinHandle<()>>,
    /// The tenant and admin sockets' listeners: shut down to wake their
    /// threads out of `accept` when the daemon stops (whatever became of
    /// the socket files).
    listeners: [Arc<OwnedFd>; 2],
    /// The packet path's listening sockets.
    ingress: Option<ingress::Ingress>,
    /// The metrics endpoint, if the configuration asks for one.
    metrics: Option<http::MetricsServer>,
}

/// The isolation core a daemon of `config` runs on, as [`Daemon::start`]
/// builds it (no thread started, no socket opened but an egress engine's):
/// for tests and audits that read back what each tenant's SLO became.
pub fn core_for(config: &DaemonConfig) -> Result<isola_core::Scheduler, DaemonError> {
    let table = tenants::TenantTable::new(config);
    let (b, _) = runtime_builder(config, &table)?;
    b.scheduler().map_err(|e| DaemonError::Runtime(Box::new(e)))
}

/// The runtime `config` describes, with `table`'s tenants (spare seats
/// with a default SLO) and their host windows.
fn runtime_builder(
    config: &DaemonConfig,
    table: &tenants::TenantTable,
) -> Result<(RuntimeBuilder, Arc<host_write::HostWindows>), DaemonError> {
    let mut b = RuntimeBuilder::new();
    b.caller_operator(kernel::WASM_OPERATOR);
    for e in &config.engines {
        b.engine(runtime_engine(e)?);
    }
    // Tenants' windows are reached over the DMA engine's link.
    let link = config
        .engines
        .iter()
        .find(|e| e.kind == isola_core::EngineKind::Dma)
        .and_then(|e| e.bandwidth);
    let host_windows = Arc::new(host_write::HostWindows::new(table.seats.len(), link));
    for (t, seat) in table.seats.iter().enumerate() {
        // Spare seats wait, with a default SLO, for tenants added live.
        let (name, slo) = match &seat.config {
            Some(c) => (c.name().to_string(), c.slo().clone()),
            None => (format!("(spare seat {t})"), Slo::default()),
        };
        let id = b.tenant(name, slo);
        // Its packet kernels' DMA writes land in its host window.
        let window = host_write::TenantWindow {
            windows: Arc::clone(&host_windows),
            tenant: t,
        };
        b.host_region(id, Arc::new(window));
        for (on, change) in seat.config.iter().flat_map(|c| c.overrides()) {
            b.tenant_on(id, on.clone(), *change);
        }
    }
    b.spin(config.spin).pin_threads(config.pin_threads);
    if config.realtime {
        b.realtime(Some(isola_runtime::Realtime::default()));
        b.realtime_duty_cycle(config.realtime_duty_cycle);
    }
    // Every engine's policy is its own (its kind's default unless its
    // `policy` says, decided at the check).
    b.mode(Mode::ByEngine);
    for e in &config.engines {
        b.engine_policy(
            isola_core::EngineSelector::Named(e.name.clone()),
            e.policy.clone(),
            e.params.clone(),
        );
    }
    Ok((b, host_windows))
}

/// The runtime's engine for configured engine `e`.
fn runtime_engine(e: &config::DaemonEngine) -> Result<EngineConfig, DaemonError> {
    let ops: Vec<&str> = e.ops.iter().map(String::as_str).collect();
    let cost: Arc<dyn isola_core::CostModel> = match &e.profile {
        Some(p) => Arc::new(p.cost_model()),
        None => {
            Arc::new(AffineCost::new(e.base_ns, e.per_byte_ns).unwrap_or_else(|_| AffineCost::constant(1)))
        }
    };
    let mut engine = EngineConfig::new(e.name.clone(), &ops, e.workers, cost)
        .with_kind(e.kind)
        .with_queue_depth(e.queue_depth)
        .with_inline_below(e.inline_below)
        .with_split_when(e.split_when)
        .with_split_time(e.split_time)
        .with_batch(e.batch)
        .with_learning(e.learn.then(isola_core::CostLearning::default));
    if let Some(split) = e.split {
        engine = engine.with_split(split);
    }
    if e.workers == 0 {
        engine = engine.on_dispatcher();
    }
    match e.kind {
        isola_core::EngineKind::Dma => engine = engine.with_dma(),
        isola_core::EngineKind::Egress => {
            // Replies only: each goes back along its packet's route.
            let port =
                isola_runtime::EgressPort::replies(isola_runtime::DEFAULT_MTU_PAYLOAD).map_err(|source| {
                    DaemonError::Udp {
                        addrs: format!("egress engine `{}`", e.name),
                        source,
                    }
                })?;
            engine = engine.with_egress(Arc::new(port));
        }
        isola_core::EngineKind::Accelerator | isola_core::EngineKind::ProcessingUnits => {}
    }
    Ok(engine)
}

impl Daemon {
    /// Builds the runtime the configuration describes, opens the socket
    /// and starts accepting tenants.
    pub fn start(config: DaemonConfig) -> Result<Daemon, DaemonError> {
        let table = tenants::TenantTable::new(&config);
        let (b, host_windows) = runtime_builder(&config, &table)?;
        let runtime = b.start().map_err(|e| DaemonError::Runtime(Box::new(e)))?;
        let refused = runtime.threads().into_iter().find_map(|t| match t.realtime {
            isola_runtime::RealtimeOutcome::Refused { reason } => Some(reason),
            _ => None,
        });
        if let Some(reason) = refused {
            eprintln!(
                "isolad: realtime = true, but the system refused a real-time class ({reason}): \
                 the runtime's threads run in the normal class"
            );
        }
        if let isola_runtime::IdleLatency::Refused { reason } = runtime.idle_latency() {
            eprintln!(
                "isolad: realtime = true, but the system refused to keep idle cores quick to wake \
                 ({reason}): each request's wake-ups take longer"
            );
        }
        let metrics = Arc::new(metrics::Metrics::new(&config));
        metrics.watch_costs(runtime.learned_costs_handle());
        let metrics_server = match config.metrics {
            Some(addr) => Some(
                http::MetricsServer::start(addr, Arc::clone(&metrics))
                    .map_err(|source| DaemonError::Metrics { addr, source })?,
            ),
            None => None,
        };
        let listener = isola_wire::control::listen(&config.socket).map_err(|source| DaemonError::Socket {
            path: config.socket.display().to_string(),
            source,
        })?;
        let admin =
            isola_wire::control::listen(&config.admin_socket).map_err(|source| DaemonError::Socket {
                path: config.admin_socket.display().to_string(),
                source,
            })?;
        admin::owner_only(&config.admin_socket).map_err(|source| DaemonError::Socket {
            path: config.admin_socket.display().to_string(),
            source,
        })?;
        let shared = Arc::new(Shared {
            attaching: std::sync::atomic::AtomicUsize::new(0),
            packets: ingress::PacketPath::new(&table),
            tenants: Mutex::new(table),
            record: AtomicBool::new(false),
            recorded: Mutex::new(Vec::new()),
            draining: AtomicBool::new(false),
            live: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
            metrics,
            ingest: ingest::Ingest::start().map_err(|source| DaemonError::Thread {
                name: "isolad-ingest",
                source,
            })?,
            config,
            runtime,
            host_windows,
            aborts: aborts::AbortLog::default(),
            attach_sockets: possession::AttachSockets::default(),
        });
        if let Some((_, why)) = possession::AttachSockets::sync(&shared).into_iter().next() {
            shared.attach_sockets.close_all();
            return Err(DaemonError::Attach(why));
        }
        let stopping = Arc::new(AtomicBool::new(false));
        let listeners = [Arc::new(listener), Arc::new(admin)];
        let acceptor = {
            let (shared, stopping, listener) = (
                Arc::clone(&shared),
                Arc::clone(&stopping),
                Arc::clone(&listeners[0]),
            );
            std::thread::spawn(move || accept(&shared, &listener, &stopping))
        };
        let admin = {
            let (shared, stopping, listener) = (
                Arc::clone(&shared),
                Arc::clone(&stopping),
                Arc::clone(&listeners[1]),
            );
            std::thread::spawn(move || admin::serve(&shared, &listener, &stopping))
        };
        let udp = shared.config.udp.clone();
        let ingress = match ingress::Ingress::start(&udp, &shared, &stopping) {
            Ok(i) => i,
            Err(source) => {
                stopping.store(true, Ordering::Release);
                wake_accepting(&listeners);
                let _ = acceptor.join();
                let _ = admin.join();
                return Err(DaemonError::Udp {
                    addrs: udp.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
                    source,
                });
            }
        };
        Ok(Daemon {
            shared,
            stopping,
            acceptor: Some(acceptor),
            admin: Some(admin),
            listeners,
            metrics: metrics_server,
            ingress: Some(ingress),
        })
    }

    /// The socket tenants connect to.
    pub fn socket(&self) -> &std::path::Path {
        &self.shared.config.socket
    }

    /// Where metrics are served (`/metrics` over HTTP), if anywhere; the
    /// port bound when the configuration asked for port 0.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.metrics.as_ref().map(http::MetricsServer::addr)
    }

    /// The live runtime that serves the tenants (for its clock, its
    /// threads and its counters).
    pub fn runtime(&self) -> &Runtime {
        &self.shared.runtime
    }

    /// Starts (or stops) keeping every task's completion as the runtime
    /// gave it, with its timings and latency breakdown (outputs dropped):
    /// what an experiment measures tenants in other processes by.
    pub fn record_completions(&self, on: bool) {
        self.shared.record.store(on, Ordering::Release);
    }

    /// The completions kept since the last call.
    pub fn take_completions(&self) -> Vec<isola_runtime::Completion> {
        self.shared
            .recorded
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default()
    }

    /// The UDP addresses the packet path listens on, as bound.
    pub fn udp_addrs(&self) -> Vec<std::net::SocketAddr> {
        self.ingress
            .as_ref()
            .map(|i| i.addrs().to_vec())
            .unwrap_or_default()
    }

    /// The packet path's counters: unmatched datagrams, and per tenant
    /// seat those received, replied to, dropped and aborted.
    pub fn packet_counts(&self) -> PacketCounts {
        self.shared.packets.counts()
    }

    /// The admin socket `isola ctl` connects to.
    pub fn admin_socket(&self) -> &std::path::Path {
        &self.shared.config.admin_socket
    }

    /// Reads the configuration file again and applies its tenants' changes
    /// (what SIGHUP does); a refusal changes nothing and says why.
    pub fn reload(&self) -> Result<String, String> {
        let message = self.shared.reload()?;
        match possession::AttachSockets::sync(&self.shared).into_iter().next() {
            None => Ok(message),
            Some((_, why)) => Err(format!("{why} (the reload was applied; its socket was not)")),
        }
    }

    /// Stops accepting tenants and removes the socket. Connections already
    /// attached are served until they close.
    pub fn stop(mut self) {
        self.stop_accepting();
    }

    /// Drains, as on SIGTERM: stops accepting, tells every tenant
    /// (`EventKind::Draining`), takes no more submissions, answers every
    /// task taken, closes every connection (a tenant's next call gets an
    /// error), and waits up to `grace` for all that. Returns whether every
    /// connection was done within it.
    pub fn drain(mut self, grace: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + grace;
        self.stop_accepting();
        self.shared.draining.store(true, Ordering::Release);
        let live: Vec<_> = self.shared.live.lock().map(|l| l.clone()).unwrap_or_default();
        for conn in live.iter().filter_map(std::sync::Weak::upgrade) {
            conn.drain(self.shared.now_ns());
        }
        let threads: Vec<_> = self
            .shared
            .threads
            .lock()
            .map(|mut t| t.drain(..).collect())
            .unwrap_or_default();
        let mut all_done = true;
        for t in threads {
            while !t.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            all_done &= t.is_finished();
        }
        all_done
    }

    fn stop_accepting(&mut self) {
        self.stopping.store(true, Ordering::Release);
        wake_accepting(&self.listeners);
        self.shared.attach_sockets.close_all();
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        let _ = std::fs::remove_file(&self.shared.config.socket);
        if let Some(a) = self.admin.take() {
            let _ = a.join();
        }
        let _ = std::fs::remove_file(&self.shared.config.admin_socket);
        if let Some(i) = self.ingress.take() {
            i.join();
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.acceptor.is_some() {
            self.stop_accepting();
        }
    }
}

/// Accepts tenant connections until `stopping`, each served on its own
/// thread (kept, for a drain to wait for).
fn accept(shared: &Arc<Shared>, listener: &OwnedFd, stopping: &AtomicBool) {
    accept_each(listener, stopping, "accept", |socket| {
        let served = Arc::clone(shared);
        let t = std::thread::spawn(move || connection::serve(served, socket, None));
        shared.keep_thread(t);
    });
}

/// Wakes the threads accepting on `listeners` (after `stopping` was set):
/// a listening socket shut down answers `accept` at once, with an error.
/// Connecting to the socket's path would not do: the file may be gone.
fn wake_accepting(listeners: &[Arc<OwnedFd>]) {
    for l in listeners {
        let _ = rustix::net::shutdown(&**l, rustix::net::Shutdown::Both);
    }
}

/// Accepts connections on `listener` until `stopping` (checked after each
/// accept: a connection to itself wakes it), handing each to `serve`; a
/// failed accept is logged as `what` and retried.
pub(crate) fn accept_each(
    listener: &OwnedFd,
    stopping: &AtomicBool,
    what: &str,
    mut serve: impl FnMut(OwnedFd),
) {
    loop {
        let accepted = rustix::net::accept_with(listener.as_fd(), rustix::net::SocketFlags::CLOEXEC);
        if stopping.load(Ordering::Acquire) {
            return;
        }
        match accepted {
            Ok(socket) => serve(socket),
            Err(e) => {
                eprintln!("isolad: {what}: {e}");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}
