//! The running runtime: its threads, the state they share, live control
//! and shutdown. Tenants submit through `crate::handle`.

use crate::builder::{BuildError, EngineConfig, RuntimeBuilder};
use crate::dispatcher::{Dispatcher, Msg};
use crate::handle::TenantHandle;
use crate::job::{Completion, Reply, SubmitError};
use crate::stats::TenantStats;
use isola_core::{Nanos, Slo, TenantId};
use isola_ops::Operator;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Built operators by name and parameters: building can be costly (a route
/// trie, a key schedule), so each configuration is built once.
/// Looked up by name, then parameters, so a hit allocates nothing.
/// Each entry keeps the operator's name and parameters as the core knows
/// an operator ([`isola_core::OpSpec`]), for engines that learn costs per
/// operator.
type OperatorCache = RwLock<HashMap<String, Vec<CachedOperator>>>;

/// A built operator, its parameters and the core's name for it.
struct CachedOperator {
    params: BTreeMap<String, String>,
    op: Arc<dyn Operator>,
    spec: isola_core::OpRef,
}

/// State the handles, the dispatcher and the workers share.
pub(crate) struct Shared {
    pub epoch: Instant,
    pub engines: Vec<EngineConfig>,
    /// Each engine's cost model, guarded (wrapped once, not per task).
    pub guarded_costs: Vec<Arc<crate::guard::GuardedCost>>,
    pub tenants: Vec<(String, Slo)>,
    /// Each tenant's host region, if it has one (for DMA stages).
    pub regions: Vec<Option<Arc<dyn crate::HostRegion>>>,
    pub(crate) tx: crossbeam_channel::Sender<Msg>,
    /// Live changes, which the dispatcher takes before anything on `tx`.
    pub(crate) controls: crossbeam_channel::Sender<crate::dispatcher::Control>,
    operators: OperatorCache,
    pub(crate) records: Mutex<Vec<TenantStats>>,
    /// Set at shutdown. Submissions hold its read lock from the check to
    /// their message, and shutdown takes the write lock to set it, so every
    /// accepted task's message reaches the dispatcher before `Shutdown`.
    pub(crate) closed: RwLock<bool>,
    pub(crate) next_id: AtomicU64,
    /// Set at shutdown: workers answer what is still queued `Cancelled`.
    pub cancelled: Arc<AtomicBool>,
    /// How long threads poll their channel before sleeping.
    pub spin: std::time::Duration,
    /// The dispatcher's real-time class, if one was asked for.
    pub(crate) dispatcher_realtime: Option<crate::Realtime>,
    /// Every call on the core, when the builder asked for it.
    pub core_log: Option<crate::CoreLog>,
    /// Per engine: its workers' busy time per tenant.
    pub busy: Vec<crate::attribution::EngineBusy>,
    /// The runtime's threads, as they registered.
    pub threads: Mutex<Vec<crate::threads::RuntimeThread>>,
    /// Per engine: what it learned of its operators' costs, as the
    /// dispatcher last published it (empty for an engine that does not learn).
    pub learned_costs: LearnedCosts,
}

impl Shared {
    /// How long the calling thread (the dispatcher, a worker) polls before
    /// sleeping: the runtime's spin, but never on a real-time thread under
    /// the duty-cycle regime (`RuntimeBuilder::realtime_duty_cycle`, on by
    /// default). A real-time thread that polls holds its core against
    /// every normal thread, the tenants' clients waiting for their answers
    /// among them, and one that polls through a steady stream of arrivals
    /// never waits, so it and a busy worker on the same core add up past
    /// the kernel's real-time throttling (docs/perf.md, "Issue 34: a
    /// victim's tail beside a busy neighbour"). A real-time thread is
    /// woken ahead of normal ones anyway. (Tenants' threads waiting for a
    /// ticket keep the spin.)
    pub(crate) fn thread_spin(&self) -> std::time::Duration {
        if crate::threads::never_polls() {
            std::time::Duration::ZERO
        } else {
            self.spin
        }
    }
}

/// What the engines learned of their operators' costs, as the dispatcher
/// last published it: a handle any thread may keep and read (isolad's
/// metrics read it on their own clock).
#[derive(Debug, Clone, Default)]
pub struct LearnedCosts(Arc<Mutex<Vec<Vec<isola_core::OpCostReport>>>>);

impl LearnedCosts {
    /// Per engine (in the builder's order): its operators' fits (empty for
    /// an engine that does not learn, or before its first completion).
    pub fn read(&self) -> Vec<Vec<isola_core::OpCostReport>> {
        self.0.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Replaces what was published.
    pub(crate) fn publish(&self, costs: Vec<Vec<isola_core::OpCostReport>>) {
        if let Ok(mut c) = self.0.lock() {
            *c = costs;
        }
    }
}

impl Shared {
    /// Counts a completion and delivers it.
    pub(crate) fn complete(&self, c: Completion, reply: &Reply) {
        let t = c.tenant.index();
        if let Ok(mut records) = self.records.lock() {
            if let Some(r) = records.get_mut(t) {
                r.record(&c);
            }
        }
        reply.send(c);
    }

    pub(crate) fn operator(
        &self,
        name: &str,
        params: &BTreeMap<String, String>,
    ) -> Result<Arc<dyn Operator>, SubmitError> {
        let cached = self.operators.read().ok().and_then(|m| {
            m.get(name)?
                .iter()
                .find(|c| &c.params == params)
                .map(|c| Arc::clone(&c.op))
        });
        if let Some(op) = cached {
            return Ok(op);
        }
        let op: Arc<dyn Operator> = Arc::from(isola_ops::build_operator(name, params)?);
        let spec = isola_core::OpSpec {
            name: name.to_string(),
            params: params.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        }
        .intern();
        if let Ok(mut m) = self.operators.write() {
            m.entry(name.to_string()).or_default().push(CachedOperator {
                params: params.clone(),
                op: Arc::clone(&op),
                spec,
            });
        }
        Ok(op)
    }

    /// The core's name for `op`: its name and parameters when it was built
    /// here from them (so an engine learns each configuration's cost
    /// apart: deflate at level 1 and at level 9), its name alone for an
    /// operator its caller built.
    pub(crate) fn op_spec(&self, op: &Arc<dyn Operator>) -> isola_core::OpRef {
        self.operators
            .read()
            .ok()
            .and_then(|m| {
                m.get(op.name())?
                    .iter()
                    .find(|c| Arc::ptr_eq(&c.op, op))
                    .map(|c| c.spec)
            })
            .unwrap_or_else(|| isola_core::OpSpec::named(op.name()))
    }
}

/// A running runtime. Dropping it shuts it down (queued tasks are
/// cancelled, running ones finish).
pub struct Runtime {
    shared: Arc<Shared>,
    dispatcher: Option<JoinHandle<()>>,
    /// The thread that delivers split tasks (`dispatcher/delivery.rs`).
    delivery: Option<JoinHandle<()>>,
    workers: Vec<JoinHandle<()>>,
    /// The request that idle cores stay quick to wake (`idle_latency.rs`),
    /// held while the runtime runs, and what became of it.
    idle_latency: crate::idle_latency::IdleLatencyRequest,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("engines", &self.shared.engines)
            .field("workers", &self.workers.len())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    pub(crate) fn start(b: RuntimeBuilder) -> Result<Runtime, BuildError> {
        let scheduler = b.scheduler()?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let (controls, controls_rx) = crossbeam_channel::unbounded();
        let busy = b
            .engines
            .iter()
            .map(|e| crate::attribution::EngineBusy::new(b.tenants.len(), e.workers))
            .collect();
        let mut regions = vec![None; b.tenants.len()];
        for (t, r) in &b.regions {
            if let Some(slot) = regions.get_mut(t.index()) {
                *slot = Some(Arc::clone(r));
            }
        }
        // The workers' class: `threads.rs` says why they share one priority.
        let dispatcher_realtime = b.realtime;
        let (worker_regime, steady_regime) = (
            b.regime(crate::threads::Regime::Budgeted),
            b.regime(crate::threads::Regime::Steady),
        );
        let shared = Arc::new(Shared {
            regions,
            epoch: Instant::now(),
            records: Mutex::new(b.tenants.iter().map(|(name, _)| TenantStats::new(name)).collect()),
            guarded_costs: b
                .engines
                .iter()
                .map(|e| crate::guard::GuardedCost::wrap(Arc::clone(&e.cost)))
                .collect(),
            engines: b.engines,
            tenants: b.tenants,
            tx: tx.clone(),
            controls,
            operators: RwLock::new(HashMap::new()),
            closed: RwLock::new(false),
            next_id: AtomicU64::new(0),
            cancelled: Arc::new(AtomicBool::new(false)),
            spin: b.spin,
            dispatcher_realtime,
            core_log: b.record_core_calls.then(crate::CoreLog::default),
            busy,
            threads: Mutex::new(Vec::new()),
            learned_costs: LearnedCosts::default(),
        });
        let owner = runtime_id(&shared);
        let cores = if b.pin {
            core_affinity::get_core_ids().unwrap_or_default()
        } else {
            Vec::new()
        };
        // The dispatcher on the first core, workers on the others in turn.
        let worker_core = |i: usize| match cores.len() {
            0 => None,
            1 => cores.first().copied(),
            n => cores.get(1 + i % (n - 1)).copied(),
        };
        let mut pinned = 0;
        let mut workers = Vec::new();
        let mut queues = Vec::new();
        let mut threads = Vec::new();
        let spawn_error = |e: std::io::Error| BuildError::Thread(e.to_string());
        for (engine, e) in shared.engines.iter().enumerate() {
            // The core dispatches at most `workers + queue_depth` at a time,
            // so the queue never holds more.
            let (qtx, qrx) = crossbeam_channel::unbounded();
            queues.push(qtx);
            // An engine run on the dispatcher has no thread (its queue
            // stays unused).
            let threads_of_its_own = if e.on_dispatcher { 0 } else { e.workers };
            for index in 0..threads_of_its_own {
                let (q, done) = (qrx.clone(), tx.clone());
                let place = crate::worker::WorkerPlace {
                    engine,
                    index,
                    shared: Arc::clone(&shared),
                    dispatcher: false,
                };
                let core = worker_core(pinned);
                pinned += 1;
                let (handle, me) = crate::threads::spawn(
                    format!("isola-{}-{index}", e.name),
                    core,
                    b.realtime,
                    worker_regime,
                    owner,
                    move || crate::worker::run_worker(q, done, place),
                )
                .map_err(spawn_error)?;
                workers.push(handle);
                threads.push(me);
            }
        }
        let (delivery_tx, delivery_rx) = crossbeam_channel::unbounded();
        let delivery = {
            let shared = Arc::clone(&shared);
            let (handle, me) = crate::threads::spawn(
                "isola-delivery".into(),
                None,
                b.realtime,
                steady_regime,
                owner,
                move || crate::dispatcher::run_delivery(shared, delivery_rx),
            )
            .map_err(spawn_error)?;
            threads.push(me);
            handle
        };
        let dispatcher = Dispatcher::new(
            Arc::clone(&shared),
            (rx, controls_rx),
            scheduler,
            queues,
            Some(delivery_tx),
        );
        let (dispatcher, me) = crate::threads::spawn(
            "isola-dispatcher".into(),
            cores.first().copied(),
            dispatcher_realtime,
            steady_regime,
            owner,
            move || dispatcher.run(),
        )
        .map_err(spawn_error)?;
        threads.insert(0, me);
        // Threads granted the class under the regime sleep at once and are
        // woken for each piece of work: idle cores should be quick to leave
        // their idle state. (Threads refused the class poll as normal ones.)
        let sleep_at_once = steady_regime == crate::threads::Regime::Steady
            && threads
                .iter()
                .any(|t| matches!(t.realtime, crate::RealtimeOutcome::Granted { .. }));
        let idle_latency = if sleep_at_once {
            crate::idle_latency::IdleLatencyRequest::hold()
        } else {
            Default::default()
        };
        if let Ok(mut t) = shared.threads.lock() {
            *t = threads;
        }
        Ok(Runtime {
            shared,
            dispatcher: Some(dispatcher),
            delivery: Some(delivery),
            workers,
            idle_latency,
        })
    }

    /// The handle tenant `tenant` submits through.
    pub fn tenant(&self, tenant: TenantId) -> TenantHandle {
        TenantHandle::new(tenant, Arc::clone(&self.shared))
    }

    /// Every tenant's counters so far (for figures, feed the completions
    /// to a run recorder: [`crate::record`]).
    pub fn stats(&self) -> Vec<TenantStats> {
        self.shared.records.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// The log of calls made on the isolation core, if the builder asked
    /// for one ([`RuntimeBuilder::record_core_calls`]).
    pub fn core_log(&self) -> Option<crate::CoreLog> {
        self.shared.core_log.clone()
    }

    /// The runtime's threads (the dispatcher first, then each engine's
    /// workers, then the thread that delivers split tasks): where they run, their scheduling class, and through
    /// [`crate::RuntimeThread::times`] what the host has done to them.
    pub fn threads(&self) -> Vec<crate::RuntimeThread> {
        self.shared.threads.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Whether the runtime holds the request that idle cores stay quick to
    /// wake (a real-time runtime under the regime asks: `idle_latency.rs`).
    pub fn idle_latency(&self) -> crate::IdleLatency {
        self.idle_latency.outcome()
    }

    /// The real-time class the dispatcher asked for (the workers', the
    /// builder's), if the builder asked for one: what a driver's thread on
    /// the dispatcher's path (one that wakes it) should run in. (All of
    /// them at one priority: `threads.rs` says why.)
    pub fn dispatcher_realtime(&self) -> Option<crate::Realtime> {
        self.shared.dispatcher_realtime
    }

    /// Per engine (in the builder's order): what it learned of its
    /// operators' costs from the service its workers measured, as of at
    /// most 50 ms ago (empty for an engine that does not learn, or before
    /// its first completion).
    pub fn learned_costs(&self) -> Vec<Vec<isola_core::OpCostReport>> {
        let mut costs = self.shared.learned_costs.read();
        costs.resize(self.shared.engines.len(), Vec::new());
        costs
    }

    /// A handle on the learned costs that outlives a borrow of the runtime.
    pub fn learned_costs_handle(&self) -> LearnedCosts {
        self.shared.learned_costs.clone()
    }

    /// Nanoseconds since the runtime started (the clock of completions).
    pub fn now_ns(&self) -> Nanos {
        self.shared.epoch.elapsed().as_nanos() as Nanos
    }

    /// Stops: new submissions are refused, tasks still queued complete with
    /// `Cancelled`, running ones finish within [`DEFAULT_SHUTDOWN_GRACE`]
    /// (see [`Runtime::shutdown_within`]); returns the final counters.
    /// Called on one of the runtime's own threads (a task's reply), it
    /// cannot wait for them: it asks for the shutdown and returns the
    /// counters as they stand.
    pub fn shutdown(self) -> Vec<TenantStats> {
        self.shutdown_within(DEFAULT_SHUTDOWN_GRACE)
    }

    /// [`Runtime::shutdown`] with a grace period of `grace`: a task still
    /// running when it ends completes with `TaskError::Abandoned`, and its
    /// worker thread is left to finish alone (a thread cannot be stopped
    /// from outside); so shutdown returns within about `grace` whatever an
    /// operator does.
    pub fn shutdown_within(mut self, grace: Duration) -> Vec<TenantStats> {
        self.stop(grace);
        self.stats()
    }

    /// Replaces tenant `tenant`'s SLO and its per-engine overrides, from
    /// the core's next decision on (see [`isola_core::Scheduler::set_slo`]:
    /// checked as a whole; a refused change changes nothing). Returns once
    /// the core has it.
    pub fn set_slo(
        &self,
        tenant: TenantId,
        slo: Slo,
        overrides: Vec<(isola_core::EngineSelector, isola_core::SloOverride)>,
    ) -> Result<(), crate::ControlError> {
        let (ack, answer) = crossbeam_channel::bounded(1);
        let c = crate::dispatcher::Control::SetSlo {
            tenant,
            slo,
            overrides,
            ack,
        };
        self.control(c, answer, true)
    }

    /// Cancels the tasks of `tenant` still queued, every one or only
    /// those whose ids (as `submit` gave them) are in `only`: each ends with
    /// `TaskError::Cancelled`; work in service finishes and is answered as
    /// usual. Returns how many were cancelled.
    pub fn cancel_queued(
        &self,
        tenant: TenantId,
        only: Option<std::collections::HashSet<u64>>,
    ) -> Result<usize, crate::ControlError> {
        let (ack, answer) = crossbeam_channel::bounded(1);
        let c = crate::dispatcher::Control::Withdraw { tenant, only, ack };
        // In order behind the tenant's submissions: it must see them all.
        self.control(c, answer, false)
    }

    /// Has the dispatcher poll `poller` beside its channel, on its own
    /// thread, until the poller says it is done (see [`crate::Poller`]).
    pub fn add_poller(&self, poller: Box<dyn crate::Poller>) -> Result<(), crate::ControlError> {
        if self.shared.closed.read().map_or(true, |closed| *closed) {
            return Err(crate::ControlError::ShutDown);
        }
        self.shared
            .tx
            .send(Msg::AddPoller(poller))
            .map_err(|_| crate::ControlError::ShutDown)
    }

    /// Wakes the dispatcher if it sleeps: a poller's producer found it
    /// asleep (its ring's flag set) after publishing.
    pub fn wake_dispatcher(&self) {
        let _ = self.shared.tx.send(Msg::Wake);
    }

    /// Sends change `c` to the dispatcher, `first` on the control path
    /// (ahead of the data path's messages, `dispatcher/control.rs`), else
    /// in order on the data path, and waits for its answer.
    fn control<T>(
        &self,
        c: crate::dispatcher::Control,
        answer: crossbeam_channel::Receiver<Result<T, crate::ControlError>>,
        first: bool,
    ) -> Result<T, crate::ControlError> {
        if self.shared.closed.read().map_or(true, |closed| *closed) {
            return Err(crate::ControlError::ShutDown);
        }
        let sent = if first {
            // Then wakes the dispatcher, in case it waits on the data path.
            self.shared.controls.send(c).is_ok() && self.shared.tx.send(Msg::Wake).is_ok()
        } else {
            self.shared.tx.send(Msg::Control(c)).is_ok()
        };
        if !sent {
            return Err(crate::ControlError::ShutDown);
        }
        answer.recv().unwrap_or(Err(crate::ControlError::ShutDown))
    }

    /// This runtime's identity among its threads ([`crate::threads::RuntimeId`]).
    fn id(&self) -> crate::threads::RuntimeId {
        runtime_id(&self.shared)
    }

    fn stop(&mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        if let Ok(mut closed) = self.shared.closed.write() {
            *closed = true;
        }
        let (ack_tx, ack_rx) = crossbeam_channel::bounded(1);
        let asked = self.shared.tx.send(Msg::Shutdown(ack_tx, grace)).is_ok();
        if crate::threads::on_thread_of(self.id()) {
            // Stopped on one of its own threads (the last reference to it
            // went with a task's reply, say): waiting would wait for this
            // very thread. It shuts down as asked, and its threads end on
            // their own (so `shutdown` called there returns the counters
            // as they stand, not final ones).
            self.dispatcher = None;
            self.delivery = None;
            self.workers.clear();
            return;
        }
        if asked {
            let _ = ack_rx.recv();
        }
        if let Some(d) = self.dispatcher.take() {
            let _ = d.join();
        }
        // The dispatcher is gone, and its end of the delivery channel with
        // it: what was handed over is delivered, then the thread ends.
        if let Some(d) = self.delivery.take() {
            let _ = d.join();
        }
        // Idle workers stop as soon as the dispatcher closed their queues;
        // one still running an abandoned task is left behind.
        for w in self.workers.drain(..) {
            while !w.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            if w.is_finished() {
                let _ = w.join();
            }
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if self.dispatcher.is_some() {
            self.stop(DEFAULT_SHUTDOWN_GRACE);
        }
    }
}

/// A runtime's identity among threads: the address of its shared state,
/// which its threads hold while they run.
fn runtime_id(shared: &Arc<Shared>) -> crate::threads::RuntimeId {
    Arc::as_ptr(shared) as usize
}

/// How long [`Runtime::shutdown`] lets running tasks finish: 10 s.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
