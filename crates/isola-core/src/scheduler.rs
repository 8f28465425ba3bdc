//! The scheduler: per-tenant virtual channels on each engine, one policy
//! instance per engine, rate shapers for reservations and limits, and
//! accounting. It is driven, never drives:
//!
//! * [`Scheduler::submit`] queues a task (or rejects it with a typed reason
//!   and hands it back: nothing is dropped silently);
//! * [`Scheduler::next`] is called when an engine has a free slot and returns
//!   the next dispatch, or `None`;
//! * [`Scheduler::complete`] reports a dispatch finished, with its measured
//!   service time;
//! * [`Scheduler::next_wakeup`] says when `next` may have something new even
//!   though nothing was submitted or completed (a shaper releasing a tenant,
//!   a policy's period).
//!
//! Order of service on a free slot: first the ready tenant whose reservation
//! is most overdue (mClock's constraint phase), then the policy's pick among
//! ready tenants, and, if the policy says `AtLimit::Allow`, the limited tenant
//! that would be released soonest. A tenant is *ready* when its channel is
//! non-empty and its limit shaper lets its head go now; otherwise it is
//! *throttled* until the shaper's release time.

use crate::channel::VirtualChannel;
use crate::engine::{EngineId, EngineSpec};
use crate::policy::registry::PolicySetup;
use crate::policy::{build_policy, AtLimit, HeadInfo, Policy, PolicyContext, PolicyError, TenantShare};
use crate::ready_heap::{HeapKey, IndexedHeap};
use crate::shaper::RateShaper;
use crate::task::{Subtask, Task, TaskId};
use crate::tenant::{Slo, Tenant, TenantId};
use crate::units::{Bytes, Nanos};
use slab::Slab;
use std::collections::BTreeMap;

/// Identifies one dispatch until it is completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DispatchId {
    slot: u32,
    generation: u32,
}

/// Why a task was served when it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchReason {
    /// Its tenant's reservation was due.
    Reservation,
    /// The policy picked it.
    Policy,
    /// Every tenant with work was at its limit and the policy allows breaking it.
    LimitBreak,
}

/// A task handed to an engine slot.
#[derive(Debug, Clone)]
pub struct Dispatch {
    /// Pass back to [`Scheduler::complete`].
    pub id: DispatchId,
    /// The engine whose slot serves it.
    pub engine: EngineId,
    /// The task, with `predicted_cost` filled in (for the whole task).
    pub task: Task,
    /// The byte range this dispatch serves when the engine fragments the
    /// task; `None` for a whole task.
    pub fragment: Option<Subtask>,
    /// Predicted service time of this dispatch (the fragment's, if any).
    pub predicted: Nanos,
    /// Why it was chosen.
    pub reason: DispatchReason,
}

/// What the scheduler knows of a finished dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completed {
    /// The task.
    pub task: TaskId,
    /// Its tenant.
    pub tenant: TenantId,
    /// The engine that served it.
    pub engine: EngineId,
    /// Its size.
    pub bytes: Bytes,
    /// When it was submitted.
    pub arrival: Nanos,
    /// When it was dispatched.
    pub dispatched: Nanos,
    /// When it completed.
    pub completed: Nanos,
    /// Predicted service time of this dispatch (the fragment's, if any).
    pub predicted: Nanos,
    /// Predicted service time of the whole task.
    pub task_predicted: Nanos,
    /// Measured service time of this dispatch.
    pub measured: Nanos,
    /// Whether `measured` exceeded the tenant's per-task service budget.
    pub over_budget: bool,
    /// The byte range this dispatch served, when the task was fragmented.
    pub fragment: Option<Subtask>,
    /// Whether this completion finished the task (always, unless it is a
    /// fragment with others still outstanding). A driver reports the task to
    /// its tenant exactly once, on the completion where this is true.
    pub task_done: bool,
}

/// Why a task was not queued. The task itself is handed back with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RejectReason {
    /// The tenant id is not in the scheduler.
    #[error("unknown tenant {0:?}")]
    UnknownTenant(TenantId),
    /// The engine id is not in the scheduler.
    #[error("unknown engine {0:?}")]
    UnknownEngine(EngineId),
    /// The tenant's channel on that engine holds `cap` tasks already.
    #[error("channel of tenant {tenant:?} on engine {engine:?} is full ({cap} tasks)")]
    ChannelFull {
        /// Tenant.
        tenant: TenantId,
        /// Engine.
        engine: EngineId,
        /// The channel's capacity.
        cap: usize,
    },
    /// The task has no predicted cost and the engine's model does not know its operator.
    #[error("engine {engine:?} has no cost model for operator `{op}`")]
    NoCostModel {
        /// Engine.
        engine: EngineId,
        /// Operator name.
        op: String,
    },
    /// The scheduler was closed.
    #[error("the scheduler is shut down")]
    Closed,
}

/// A rejected task, handed back to its submitter with the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("task {:?} rejected: {reason}", task.id)]
pub struct Rejection {
    /// Why.
    pub reason: RejectReason,
    /// The task, unchanged.
    pub task: Box<Task>,
}

/// Errors from [`Scheduler::complete`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchedulerError {
    /// The dispatch id is unknown or was already completed.
    #[error("dispatch {0:?} is not in service (unknown or completed twice)")]
    UnknownDispatch(DispatchId),
}

/// Why a scheduler could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// Two tenants share a name.
    #[error("tenant `{0}` is defined twice")]
    DuplicateTenant(String),
    /// Two engines share a name.
    #[error("engine `{0}` is defined twice")]
    DuplicateEngine(String),
    /// An SLO is inconsistent.
    #[error("tenant `{tenant}`: {field}: {reason}")]
    InvalidSlo {
        /// Tenant name.
        tenant: String,
        /// Offending SLO field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// An engine has no slots.
    #[error("engine `{0}` must have at least one slot")]
    NoSlots(String),
    /// No engine or no tenant.
    #[error("a scheduler needs at least one engine and one tenant")]
    Empty,
    /// The policy could not be built for an engine.
    #[error("engine `{engine}`: {source}")]
    Policy {
        /// Engine name.
        engine: String,
        /// The policy's error.
        source: PolicyError,
    },
}

/// Counters of one tenant on one engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChannelStats {
    /// Tasks accepted into the channel.
    pub submitted: u64,
    /// Tasks refused because the channel was full.
    pub rejected: u64,
    /// Dispatches (tasks, or fragments of tasks).
    pub dispatched: u64,
    /// Tasks dispatched in the reservation phase.
    pub reserved_dispatches: u64,
    /// Dispatches completed.
    pub completed: u64,
    /// Tasks completed (all of their fragments).
    pub tasks_completed: u64,
    /// Bytes of completed dispatches.
    pub bytes_completed: u64,
    /// Measured service time of completed tasks (slot x ns).
    pub busy_ns: u64,
    /// Completed tasks whose service exceeded the tenant's budget.
    pub over_budget: u64,
}

/// Builds a [`Scheduler`].
#[derive(Debug, Default)]
pub struct SchedulerBuilder {
    tenants: Vec<Tenant>,
    engines: Vec<EngineSpec>,
    policy: String,
    params: BTreeMap<String, String>,
}

impl SchedulerBuilder {
    /// A builder with policy `fcfs` and no tenants or engines.
    pub fn new() -> Self {
        SchedulerBuilder {
            policy: "fcfs".into(),
            ..Default::default()
        }
    }

    /// Adds a tenant; ids are given in insertion order from 0.
    pub fn tenant(&mut self, name: impl Into<String>, slo: Slo) -> TenantId {
        let id = TenantId(self.tenants.len() as u32);
        self.tenants.push(Tenant {
            id,
            name: name.into(),
            slo,
        });
        id
    }

    /// Adds an engine; ids are given in insertion order from 0.
    pub fn engine(&mut self, spec: EngineSpec) -> EngineId {
        self.engines.push(spec);
        EngineId(self.engines.len() as u32 - 1)
    }

    /// Uses policy `name` (see [`crate::policy::POLICIES`]) with `params`.
    pub fn policy(&mut self, name: impl Into<String>, params: BTreeMap<String, String>) -> &mut Self {
        self.policy = name.into();
        self.params = params;
        self
    }

    /// Checks everything and builds one policy instance per engine.
    pub fn build(self) -> Result<Scheduler, BuildError> {
        if self.tenants.is_empty() || self.engines.is_empty() {
            return Err(BuildError::Empty);
        }
        for (i, t) in self.tenants.iter().enumerate() {
            if self.tenants[..i].iter().any(|o| o.name == t.name) {
                return Err(BuildError::DuplicateTenant(t.name.clone()));
            }
            t.slo
                .validate()
                .map_err(|(field, reason)| BuildError::InvalidSlo {
                    tenant: t.name.clone(),
                    field,
                    reason,
                })?;
        }
        let shares: Vec<TenantShare> = self
            .tenants
            .iter()
            .map(|t| TenantShare {
                weight: t.slo.weight,
                class: t.slo.class,
                latency: t.slo.latency,
            })
            .collect();
        let mut engines = Vec::with_capacity(self.engines.len());
        for (i, spec) in self.engines.into_iter().enumerate() {
            if engines[..i]
                .iter()
                .any(|e: &EngineState| e.spec.name == spec.name)
            {
                return Err(BuildError::DuplicateEngine(spec.name));
            }
            if spec.slots == 0 {
                return Err(BuildError::NoSlots(spec.name));
            }
            let setup = PolicySetup {
                tenants: &shares,
                slots: spec.slots,
            };
            let policy =
                build_policy(&self.policy, &self.params, &setup).map_err(|source| BuildError::Policy {
                    engine: spec.name.clone(),
                    source,
                })?;
            engines.push(EngineState::new(spec, policy, &self.tenants, shares.clone()));
        }
        Ok(Scheduler {
            tenants: self.tenants,
            engines,
            in_service: Slab::new(),
            next_seq: 0,
            next_generation: 0,
            closed: false,
        })
    }
}

/// Where a tenant's channel on an engine stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChannelState {
    Empty,
    Ready,
    Throttled,
}

/// A queued task. When its engine fragments, `sent` bytes of it have
/// already been dispatched and `head` describes the next fragment.
#[derive(Debug, Clone)]
struct Queued {
    task: Task,
    head: HeadInfo,
    sent: Bytes,
    /// Index of the next fragment, and how many there are (1: not fragmented).
    index: u32,
    count: u32,
    /// How the task was planned: fragment size and costs.
    plan: Plan,
    /// Key of the task's outstanding-fragment counter, once one is dispatched.
    group: Option<usize>,
}

/// How a task is cut into dispatches, with their predicted costs, fixed
/// when it is planned so that taking a fragment asks no cost model.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Plan {
    /// Fragment size (`None`: the task goes whole).
    frag: Option<Bytes>,
    /// Predicted cost of a whole fragment (of the task, when unfragmented).
    frag_cost: Nanos,
    /// Predicted cost of the last fragment (it may be shorter).
    last_cost: Nanos,
}

#[derive(Debug, Clone, Copy)]
struct InService {
    generation: u32,
    engine: EngineId,
    tenant: TenantId,
    task: TaskId,
    head: HeadInfo,
    dispatched: Nanos,
    fragment: Option<Subtask>,
    group: Option<usize>,
    task_predicted: Nanos,
}

struct EngineState {
    spec: EngineSpec,
    policy: Box<dyn Policy>,
    shares: Vec<TenantShare>,
    channels: Vec<VirtualChannel<Queued>>,
    state: Vec<ChannelState>,
    limit: Vec<Option<RateShaper>>,
    reservation: Vec<Option<RateShaper>>,
    /// Throttled tenants by release time.
    throttled: IndexedHeap,
    /// Ready tenants with a reservation, by the time it is next due.
    reservation_due: IndexedHeap,
    in_flight: Vec<u32>,
    /// Dispatches waiting per tenant (tasks, or fragments not yet sent).
    queued: Vec<u64>,
    /// Predicted cost of the dispatches waiting, per tenant.
    queued_cost: Vec<Nanos>,
    busy: u32,
    stats: Vec<ChannelStats>,
    /// When each tenant last became ready (its reservation tags start there).
    ready_since: Vec<Nanos>,
    /// Fragments still in service or queued, per fragmented task in service.
    fragments_left: Slab<u32>,
}

/// What `take_head` took off a channel: a whole task or one fragment of it.
struct Taken {
    task: Task,
    head: HeadInfo,
    fragment: Option<Subtask>,
    group: Option<usize>,
}

/// Builds the policy context from an engine's fields (disjoint borrows, so
/// the policy itself can be borrowed mutably beside it).
macro_rules! cx {
    ($e:expr) => {
        PolicyContext {
            tenants: &$e.shares,
            slots: $e.spec.slots,
            in_flight: &$e.in_flight,
            queued: &$e.queued,
        }
    };
}

impl EngineState {
    fn new(spec: EngineSpec, policy: Box<dyn Policy>, tenants: &[Tenant], shares: Vec<TenantShare>) -> Self {
        let n = tenants.len();
        EngineState {
            channels: tenants
                .iter()
                .map(|t| VirtualChannel::new(t.slo.queue_cap))
                .collect(),
            state: vec![ChannelState::Empty; n],
            limit: tenants.iter().map(|t| t.slo.limit.map(RateShaper::new)).collect(),
            reservation: tenants
                .iter()
                .map(|t| t.slo.reservation.map(RateShaper::new))
                .collect(),
            throttled: IndexedHeap::new(n),
            reservation_due: IndexedHeap::new(n),
            in_flight: vec![0; n],
            queued: vec![0; n],
            queued_cost: vec![0; n],
            busy: 0,
            stats: vec![ChannelStats::default(); n],
            fragments_left: Slab::new(),
            ready_since: vec![0; n],
            spec,
            policy,
            shares,
        }
    }

    /// Tenant `t`'s channel is non-empty and not ready: make it ready if its
    /// limit lets its head go at `now`, else throttle it until it does.
    fn admit_head(&mut self, now: Nanos, t: usize) {
        let Some((head, continues)) = self.channels[t].head().map(|q| (q.head, q.index > 0)) else {
            self.state[t] = ChannelState::Empty;
            return;
        };
        match &self.limit[t] {
            // The rest of a task already started is not held to an ops limit.
            Some(l) if !l.admits_piece(now, continues) => {
                self.state[t] = ChannelState::Throttled;
                self.throttled.set(t, HeapKey::new(l.ready_at() as f64, head.seq));
            }
            _ => {
                self.state[t] = ChannelState::Ready;
                self.ready_since[t] = now;
                self.policy.on_ready(now, t, &head, &cx!(self));
                self.key_reservation(t, head.seq);
            }
        }
    }

    fn key_reservation(&mut self, t: usize, seq: u64) {
        if let Some(r) = &self.reservation[t] {
            self.reservation_due
                .set(t, HeapKey::new(r.ready_at() as f64, seq));
        }
    }

    fn release_throttled(&mut self, now: Nanos) {
        while let Some((t, key)) = self.throttled.peek() {
            if key.tag() > now as f64 {
                break;
            }
            self.throttled.remove(t);
            self.admit_head(now, t);
        }
    }

    /// Chooses the tenant a free slot serves at `now`, and why.
    fn choose(&mut self, now: Nanos) -> Option<(usize, DispatchReason)> {
        self.release_throttled(now);
        if self.policy.next_tick().is_some_and(|t| t <= now) {
            self.policy.on_tick(now, &cx!(self));
        }
        if let Some((t, due)) = self.reservation_due.peek() {
            if due.tag() <= now as f64 && self.policy.admits(t, &cx!(self)) {
                return Some((t, DispatchReason::Reservation));
            }
        }
        if let Some(t) = self.policy.pick(now, &cx!(self)) {
            debug_assert_eq!(
                self.state[t],
                ChannelState::Ready,
                "policy picked a tenant that is not ready"
            );
            if self.state[t] == ChannelState::Ready {
                return Some((t, DispatchReason::Policy));
            }
        }
        if self.policy.at_limit() == AtLimit::Allow {
            if let Some((t, _)) = self.throttled.pop() {
                // Serve it as if it were ready: the policy sees it arrive and leave.
                self.state[t] = ChannelState::Ready;
                self.ready_since[t] = now;
                let head = self.channels[t].head().map(|q| q.head)?;
                self.policy.on_ready(now, t, &head, &cx!(self));
                return Some((t, DispatchReason::LimitBreak));
            }
        }
        None
    }

    /// The fragment size for a task of tenant `t` of `bytes` bytes planned
    /// at `now`, if it is fragmented: the engine's, as the policy adapts it
    /// ([`Policy::split_bytes`]), enlarged if needed so the count fits in a
    /// `u32`.
    fn fragment_size(&self, now: Nanos, t: usize, bytes: Bytes) -> Option<Bytes> {
        self.spec
            .fragment
            .map(|f| self.policy.split_bytes(now, t, f).max(1))
            .filter(|&f| bytes > f)
            .map(|f| f.max(bytes.div_ceil(u32::MAX as u64)))
    }

    /// How many dispatches a task of `bytes` bytes planned with `frag` takes.
    fn fragment_count(bytes: Bytes, frag: Option<Bytes>) -> u32 {
        frag.map_or(1, |f| bytes.div_ceil(f) as u32)
    }

    /// How `task` is dispatched when planned with fragment size `frag`
    /// (`None`: whole): fragment costs come from the engine's model (or, if
    /// it does not know the operator, the task's cost pro rata).
    fn plan(&self, task: &Task, frag: Option<Bytes>) -> Plan {
        let total = task.predicted_cost.unwrap_or(0);
        let Some(f) = frag else {
            return Plan {
                frag,
                frag_cost: total,
                last_cost: total,
            };
        };
        let cost_of = |bytes: Bytes| {
            self.spec
                .cost
                .predict(&task.op.name, bytes)
                .unwrap_or_else(|| (total as u128 * bytes as u128 / task.bytes.max(1) as u128) as Nanos)
        };
        let last = task.bytes - (Self::fragment_count(task.bytes, frag) as u64 - 1) * f;
        Plan {
            frag,
            frag_cost: cost_of(f),
            last_cost: cost_of(last),
        }
    }

    /// What the next dispatch of `task`, planned as `plan`, looks like once
    /// `sent` bytes of it went: the whole task when it is not fragmented,
    /// else the next fragment.
    fn head_for(task: &Task, seq: u64, sent: Bytes, plan: &Plan) -> HeadInfo {
        let (bytes, cost, remaining_cost) = match plan.frag {
            Some(f) => {
                let left = task.bytes - sent;
                // This fragment and the task's later ones: whole fragments
                // of `f` bytes, then the last.
                let whole_before_last = (left - 1) / f;
                let remaining = whole_before_last * plan.frag_cost + plan.last_cost;
                if left > f {
                    (f, plan.frag_cost, remaining)
                } else {
                    (left, plan.last_cost, remaining)
                }
            }
            None => (task.bytes, plan.frag_cost, plan.frag_cost),
        };
        HeadInfo {
            seq,
            arrival: task.arrival,
            bytes,
            cost,
            remaining_cost,
            task_cost: task.whole_cost.unwrap_or(task.predicted_cost.unwrap_or(0)),
            deadline: task.deadline,
            job_piece: task.whole_cost.is_some(),
        }
    }

    /// Tenant `t`'s channel has a new head that nothing of was dispatched:
    /// plan its fragments again with the split size the policy wants now
    /// (it was planned when submitted, possibly long before).
    fn replan_head(&mut self, now: Nanos, t: usize) {
        let Some(q) = self.channels[t].head() else {
            return;
        };
        if q.index != 0 || q.group.is_some() {
            return;
        }
        let frag = self.fragment_size(now, t, q.task.bytes);
        if frag == q.plan.frag {
            return;
        }
        let plan = self.plan(&q.task, frag);
        let head = Self::head_for(&q.task, q.head.seq, 0, &plan);
        let count = Self::fragment_count(q.task.bytes, frag);
        let (old_count, old_cost) = (q.count, q.head.remaining_cost);
        let Some(q) = self.channels[t].head_mut() else {
            return;
        };
        q.plan = plan;
        q.count = count;
        q.head = head;
        self.queued[t] = self.queued[t] - old_count as u64 + count as u64;
        self.queued_cost[t] = self.queued_cost[t] - old_cost + head.remaining_cost;
    }

    /// Takes the head of ready tenant `t` (a whole task or its next fragment)
    /// and updates shapers, state and policy.
    fn take_head(&mut self, now: Nanos, t: usize, reason: DispatchReason) -> Option<Taken> {
        let q = self.channels[t].head()?;
        let head = q.head;
        let first = q.index == 0;
        let last = q.index + 1 >= q.count;
        let taken = if last {
            let q = self.channels[t].pop()?;
            self.replan_head(now, t);
            let fragment = (q.count > 1).then_some(Subtask {
                task: q.task.id,
                index: q.index,
                count: q.count,
                offset: q.sent,
                bytes: head.bytes,
                ordered: false,
            });
            Taken {
                task: q.task,
                head,
                fragment,
                group: q.group,
            }
        } else {
            let (task, sent, index, count, group, plan) =
                (q.task.clone(), q.sent, q.index, q.count, q.group, q.plan);
            let group = group.unwrap_or_else(|| self.fragments_left.insert(count));
            let next = Self::head_for(&task, head.seq, sent + head.bytes, &plan);
            let q = self.channels[t].head_mut()?;
            q.sent += head.bytes;
            q.index += 1;
            q.group = Some(group);
            q.head = next;
            Taken {
                fragment: Some(Subtask {
                    task: task.id,
                    index,
                    count,
                    offset: sent,
                    bytes: head.bytes,
                    ordered: false,
                }),
                task,
                head,
                group: Some(group),
            }
        };
        // A limit break uses capacity nobody else wanted; it is not held
        // against the tenant by pushing its limit further into the future.
        if reason != DispatchReason::LimitBreak {
            if let Some(l) = &mut self.limit[t] {
                l.charge_piece(now, head.bytes, first);
            }
        }
        if reason == DispatchReason::Reservation {
            if let Some(r) = &mut self.reservation[t] {
                r.charge_piece(self.ready_since[t], head.bytes, first);
            }
            self.stats[t].reserved_dispatches += 1;
        }
        self.in_flight[t] += 1;
        self.queued[t] -= 1;
        self.queued_cost[t] -= head.cost;
        self.busy += 1;
        self.stats[t].dispatched += 1;
        // The new head, and whether it continues a task already started.
        let (next, continues) = self.channels[t]
            .head()
            .map_or((None, false), |q| (Some(q.head), q.index > 0));
        let stays_ready = match (&next, &self.limit[t]) {
            (None, _) => false,
            (Some(_), Some(l)) => l.admits_piece(now, continues),
            (Some(_), None) => true,
        };
        if stays_ready {
            self.policy.on_dispatch(now, t, &head, next.as_ref(), &cx!(self));
            if let Some(n) = next {
                self.key_reservation(t, n.seq);
            }
        } else {
            self.policy.on_dispatch(now, t, &head, None, &cx!(self));
            self.reservation_due.remove(t);
            self.state[t] = ChannelState::Empty;
            if next.is_some() {
                self.admit_head(now, t);
            }
        }
        Some(taken)
    }

    /// When this engine may next have work without an event: a throttled
    /// tenant released or a policy period. `None` while every slot is busy:
    /// the next completion makes it dispatch anyway, and a release time
    /// already past would otherwise wake a driver at the same instant again
    /// and again.
    fn next_wakeup(&self) -> Option<Nanos> {
        if self.busy >= self.spec.slots {
            return None;
        }
        let release = self
            .throttled
            .peek()
            .map(|(_, k)| k.tag().max(0.0).ceil() as Nanos);
        match (release, self.policy.next_tick()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Channels + policy + shapers + accounting for a set of engines and tenants.
/// See the module documentation for how a driver uses it.
pub struct Scheduler {
    tenants: Vec<Tenant>,
    engines: Vec<EngineState>,
    in_service: Slab<InService>,
    next_seq: u64,
    next_generation: u32,
    closed: bool,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("tenants", &self.tenants.len())
            .field("engines", &self.engines.len())
            .field("in_service", &self.in_service.len())
            .finish()
    }
}

impl Scheduler {
    /// The tenants, by id.
    pub fn tenants(&self) -> &[Tenant] {
        &self.tenants
    }

    /// The engine `id`'s configuration.
    pub fn engine(&self, id: EngineId) -> Option<&EngineSpec> {
        self.engines.get(id.index()).map(|e| &e.spec)
    }

    /// Number of engines.
    pub fn engine_count(&self) -> usize {
        self.engines.len()
    }

    /// Queues `task`. On rejection the task comes back with the reason, and
    /// the rejection is counted when it is the channel's.
    pub fn submit(&mut self, now: Nanos, mut task: Task) -> Result<(), Rejection> {
        let reject = |reason, task| {
            Err(Rejection {
                reason,
                task: Box::new(task),
            })
        };
        if self.closed {
            return reject(RejectReason::Closed, task);
        }
        let t = task.tenant.index();
        if t >= self.tenants.len() {
            return reject(RejectReason::UnknownTenant(task.tenant), task);
        }
        let Some(e) = self.engines.get_mut(task.engine.index()) else {
            return reject(RejectReason::UnknownEngine(task.engine), task);
        };
        let cost = match task
            .predicted_cost
            .or_else(|| e.spec.cost.predict(&task.op.name, task.bytes))
        {
            Some(c) => c,
            None => {
                let op = task.op.name.clone();
                return reject(
                    RejectReason::NoCostModel {
                        engine: task.engine,
                        op,
                    },
                    task,
                );
            }
        };
        task.predicted_cost = Some(cost);
        let frag = e.fragment_size(now, t, task.bytes);
        let plan = e.plan(&task, frag);
        let head = EngineState::head_for(&task, self.next_seq, 0, &plan);
        let count = EngineState::fragment_count(task.bytes, frag);
        let queued = Queued {
            task,
            head,
            sent: 0,
            index: 0,
            count,
            plan,
            group: None,
        };
        if let Err(q) = e.channels[t].push(queued) {
            e.stats[t].rejected += 1;
            let reason = RejectReason::ChannelFull {
                tenant: q.task.tenant,
                engine: q.task.engine,
                cap: e.channels[t].cap(),
            };
            return reject(reason, q.task);
        }
        self.next_seq += 1;
        e.queued[t] += count as u64;
        e.queued_cost[t] += head.remaining_cost;
        e.stats[t].submitted += 1;
        if e.state[t] == ChannelState::Empty {
            e.admit_head(now, t);
        }
        Ok(())
    }

    /// The next task for a free slot of `engine` at `now`, or `None` when the
    /// engine is full, nothing is ready, or the policy holds back.
    pub fn next(&mut self, now: Nanos, engine: EngineId) -> Option<Dispatch> {
        if self.closed {
            return None;
        }
        let e = self.engines.get_mut(engine.index())?;
        if e.busy >= e.spec.slots {
            return None;
        }
        let (t, reason) = e.choose(now)?;
        let taken = e.take_head(now, t, reason)?;
        let generation = self.next_generation;
        self.next_generation = self.next_generation.wrapping_add(1);
        let slot = self.in_service.insert(InService {
            generation,
            engine,
            tenant: taken.task.tenant,
            task: taken.task.id,
            head: taken.head,
            dispatched: now,
            fragment: taken.fragment,
            group: taken.group,
            task_predicted: taken.task.predicted_cost.unwrap_or(taken.head.cost),
        }) as u32;
        Some(Dispatch {
            id: DispatchId { slot, generation },
            engine,
            task: taken.task,
            fragment: taken.fragment,
            predicted: taken.head.cost,
            reason,
        })
    }

    /// Records that dispatch `id` finished at `now` after `measured` ns of service.
    pub fn complete(
        &mut self,
        now: Nanos,
        id: DispatchId,
        measured: Nanos,
    ) -> Result<Completed, SchedulerError> {
        let slot = id.slot as usize;
        match self.in_service.get(slot) {
            Some(s) if s.generation == id.generation => {}
            _ => return Err(SchedulerError::UnknownDispatch(id)),
        }
        let s = self.in_service.remove(slot);
        let t = s.tenant.index();
        let e = &mut self.engines[s.engine.index()];
        e.busy -= 1;
        e.in_flight[t] -= 1;
        e.policy.on_complete(now, t, &s.head, measured, &cx!(e));
        let over_budget = self.tenants[t].slo.service_budget.is_some_and(|b| measured > b);
        let task_done = match s.group {
            None => true,
            // A group missing after `close` means the rest was handed back.
            Some(g) => match e.fragments_left.get_mut(g) {
                Some(left) => {
                    *left -= 1;
                    let done = *left == 0;
                    if done {
                        e.fragments_left.remove(g);
                    }
                    done
                }
                None => false,
            },
        };
        let st = &mut e.stats[t];
        st.completed += 1;
        st.tasks_completed += task_done as u64;
        st.bytes_completed += s.head.bytes;
        st.busy_ns = st.busy_ns.saturating_add(measured);
        st.over_budget += over_budget as u64;
        Ok(Completed {
            task: s.task,
            tenant: s.tenant,
            engine: s.engine,
            bytes: s.head.bytes,
            arrival: s.head.arrival,
            dispatched: s.dispatched,
            completed: now,
            predicted: s.head.cost,
            task_predicted: s.task_predicted,
            measured,
            over_budget,
            fragment: s.fragment,
            task_done,
        })
    }

    /// The earliest time `next` may return work although nothing was
    /// submitted or completed in between, over every engine with a free
    /// slot: what a driver should wait for. (A full engine dispatches at its
    /// next completion anyway.)
    pub fn next_wakeup(&self) -> Option<Nanos> {
        self.engines.iter().filter_map(EngineState::next_wakeup).min()
    }

    /// [`Scheduler::next_wakeup`] for one engine.
    pub fn next_wakeup_of(&self, engine: EngineId) -> Option<Nanos> {
        self.engines.get(engine.index())?.next_wakeup()
    }

    /// Counters of `tenant` on `engine`.
    pub fn stats(&self, engine: EngineId, tenant: TenantId) -> Option<&ChannelStats> {
        self.engines.get(engine.index())?.stats.get(tenant.index())
    }

    /// Predicted cost of the dispatches waiting on `engine`, per tenant
    /// (work queued, not yet dispatched; empty for an unknown engine).
    pub fn queued_cost(&self, engine: EngineId) -> &[Nanos] {
        self.engines.get(engine.index()).map_or(&[], |e| &e.queued_cost)
    }

    /// Tasks queued for `tenant` on `engine`.
    pub fn queued(&self, engine: EngineId, tenant: TenantId) -> usize {
        self.engines
            .get(engine.index())
            .and_then(|e| e.channels.get(tenant.index()))
            .map_or(0, VirtualChannel::len)
    }

    /// The fragment size `engine`'s policy wants now for `tenant`'s tasks
    /// when the configured split size is `default` ([`Policy::split_bytes`]):
    /// ASTRAEA enlarges it while no latency-sensitive work is expected. A
    /// driver that splits tasks itself (the live runtime) asks this; engines
    /// that fragment ask it on their own. `default` for an unknown engine or
    /// tenant.
    pub fn split_bytes(&self, now: Nanos, engine: EngineId, tenant: TenantId, default: Bytes) -> Bytes {
        match self.engines.get(engine.index()) {
            Some(e) if tenant.index() < self.tenants.len() => {
                e.policy.split_bytes(now, tenant.index(), default).max(1)
            }
            _ => default,
        }
    }

    /// Dispatches in service on `engine`.
    pub fn busy(&self, engine: EngineId) -> u32 {
        self.engines.get(engine.index()).map_or(0, |e| e.busy)
    }

    /// Dispatches in service on every engine.
    pub fn in_service(&self) -> usize {
        self.in_service.len()
    }

    /// Stops accepting and dispatching work and returns every queued task,
    /// oldest first per channel, so the driver can complete each one (as
    /// cancelled). Dispatches in service can still be completed.
    pub fn close(&mut self) -> Vec<Task> {
        self.closed = true;
        let mut out = Vec::new();
        for e in &mut self.engines {
            for (t, c) in e.channels.iter_mut().enumerate() {
                for q in c.drain() {
                    // A partly dispatched task is handed back whole; its
                    // fragments in service will not report it done.
                    if let Some(g) = q.group {
                        e.fragments_left.try_remove(g);
                    }
                    out.push(q.task);
                }
                e.state[t] = ChannelState::Empty;
                e.queued[t] = 0;
                e.queued_cost[t] = 0;
            }
            e.throttled = IndexedHeap::new(e.state.len());
            e.reservation_due = IndexedHeap::new(e.state.len());
        }
        out
    }
}
