//! One engine's scheduling state: per-tenant channels, shapers, the
//! policy instance, the decision to split, and the ready/throttled/blocked
//! bookkeeping.

use super::batch::gathers_until;
use super::entry::{split_key, Entries, PieceInService, Queued};
use super::plan::{Plan, TaskCost};
use super::{ChannelStats, DispatchReason};
use crate::cost_fit::LearnedCosts;
use crate::engine::{EngineSpec, SplitWhen};
use crate::flow_queues::FlowQueues;
use crate::policy::{AtLimit, TenantShare};

use crate::ready_heap::{HeapKey, IndexedHeap};
use crate::shaper::RateShaper;
use crate::task::Task;
use crate::tenant::Slo;
use crate::units::{Bytes, Nanos};
use slab::Slab;

/// Where a tenant's channel on an engine stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ChannelState {
    Empty,
    Ready,
    Throttled,
    /// Its head may go, and waits for a batch to fill ([`crate::BatchRule::wait`]).
    Gathering,
    /// Every one of its flow queues that holds work has a head that
    /// continues an ordered task whose previous subtask is still in
    /// service: nothing of it may go until one completes.
    Blocked,
}

/// One tenant's state on one engine: its channel, where it stands, its
/// shapers, budget and counters (issue 34: one record, where each was a
/// vector of its own indexed per call). What a policy reads per tenant
/// (`in_flight`, `queued`) and `queued_cost` stay vectors beside it: the
/// policy's context and [`super::Scheduler::queued_cost`] hand them out
/// as slices.
pub(super) struct TenantOnEngine {
    /// Its flow queues (one, unless it declares flows), of `entries` keys.
    pub(super) channel: FlowQueues<u32>,
    /// Where its channel stands.
    pub(super) state: ChannelState,
    /// Whether it is latency-sensitive (for [`SplitWhen::ForLatency`]).
    pub(super) latency_sensitive: bool,
    /// What its over-budget tasks get here.
    pub(super) budget_action: crate::tenant::BudgetAction,
    /// Its limit's shaper, if it has one.
    pub(super) limit: Option<RateShaper>,
    /// Its reservation's shaper, if it has one.
    pub(super) reservation: Option<RateShaper>,
    /// Its per-task service budget here.
    pub(super) budget: Option<Nanos>,
    /// When its channel last went from empty to non-empty: its
    /// reservation tags start there (mClock's `R = max(R_prev + 1/r,
    /// arrival)`). Being held by its limit, or an ordered subtask waiting
    /// for the one before it, is not idling and does not move it.
    pub(super) backlogged_since: Nanos,
    /// When it last submitted here or had a dispatch complete (for
    /// [`SplitWhen::Contended`]).
    pub(super) last_active: Option<Nanos>,
    /// Its counters here.
    pub(super) stats: ChannelStats,
}

impl TenantOnEngine {
    /// Its key in the engine's heap of reservations due, for a head of
    /// sequence number `seq`, when it has a reservation.
    #[inline]
    pub(super) fn reservation_key(&self, seq: u64) -> Option<HeapKey> {
        self.reservation
            .as_ref()
            .map(|r| HeapKey::new(r.ready_at() as f64, seq))
    }

    /// A tenant with `slo` on an engine of `kind`, nothing queued.
    fn new(slo: &Slo, kind: crate::engine::EngineKind) -> Self {
        TenantOnEngine {
            channel: FlowQueues::new(slo.queue_cap, &slo.flows),
            state: ChannelState::Empty,
            latency_sensitive: latency_sensitive(slo),
            budget_action: slo
                .budget_action
                .unwrap_or(crate::tenant::BudgetAction::default_for(kind)),
            limit: slo.limit.map(RateShaper::new),
            reservation: slo.reservation.map(RateShaper::new),
            budget: slo.service_budget,
            backlogged_since: 0,
            last_active: None,
            stats: ChannelStats::default(),
        }
    }
}

pub(super) struct EngineState {
    pub(super) spec: EngineSpec,
    /// Called statically for the built-in `fcfs` and `sfq` (issue 34).
    pub(super) policy: super::static_policy::StaticPolicy,
    /// How the policy was built: a live SLO change builds it anew.
    pub(super) recipe: super::live::PolicyRecipe,
    pub(super) shares: Vec<TenantShare>,
    /// Each tenant's state here, one record per tenant (issue 34: read
    /// with one bounds check a call, where some twenty parallel vectors
    /// each had their own).
    pub(super) tenants: Vec<TenantOnEngine>,
    /// Every task queued here, and every one whose last dispatch is in
    /// service (issue 34: kept in place, the channels hold their keys).
    pub(super) entries: Entries,
    /// A split task's subtasks in service but its last (its entry stays
    /// queued meanwhile).
    pub(super) pieces: Slab<PieceInService>,
    /// Throttled tenants by release time.
    pub(super) throttled: IndexedHeap,
    /// Tenants whose head waits for a batch to fill, by when it stops
    /// waiting.
    pub(super) gathering: IndexedHeap,
    /// Ready tenants with a reservation, by the time it is next due.
    pub(super) reservation_due: IndexedHeap,
    /// Per batch in service (a slab key): its dispatches not yet
    /// completed. The batch holds its slot until the last one is.
    pub(super) batches: Slab<u32>,
    pub(super) in_flight: Vec<u32>,
    /// Dispatches waiting per tenant (tasks, or subtasks not yet sent).
    pub(super) queued: Vec<u64>,
    /// Predicted cost of the dispatches waiting, per tenant.
    pub(super) queued_cost: Vec<Nanos>,
    pub(super) busy: u32,
    /// Subtasks still in service or queued, per split task in service.
    pub(super) subtasks_left: Slab<u32>,
    /// The operators' costs as measured here, when the engine learns them.
    pub(super) learned: Option<LearnedCosts>,
    /// Whether the engine takes the plain path ([`EngineState::is_plain`]):
    /// decided when it is built and again whenever a tenant's SLO changes.
    pub(super) plain: bool,
    /// Held to the general path whatever it is given (the differential
    /// test's reference, `plain_tests.rs`).
    #[cfg(test)]
    pub(super) force_general: bool,
}

/// An engine's predictions: what it learned, else its configured model.
pub(super) struct EngineCost<'a> {
    model: &'a dyn crate::CostModel,
    learned: Option<&'a LearnedCosts>,
}

impl TaskCost for EngineCost<'_> {
    fn learned(&self, task: &Task, bytes: Bytes) -> Option<Nanos> {
        self.learned?.predict(&task.op, bytes)
    }

    fn configured(&self, task: &Task, bytes: Bytes) -> Option<Nanos> {
        self.model.predict(&task.op.name, bytes)
    }
}

/// Whether a tenant with `slo` counts as latency-sensitive when an engine
/// splits only for such tenants ([`SplitWhen::ForLatency`]).
pub(super) fn latency_sensitive(slo: &Slo) -> bool {
    slo.class == crate::TenantClass::LatencySensitive || slo.latency.is_some()
}

/// The two reasons a tenant with a head that may go waits ([`EngineState::release_waiting`]).
#[derive(Clone, Copy)]
enum Held {
    /// Its limit.
    Limit,
    /// Its batch filling.
    Batch,
}

impl EngineState {
    pub(super) fn new(
        spec: EngineSpec,
        policy: super::static_policy::StaticPolicy,
        recipe: super::live::PolicyRecipe,
        slos: &[Slo],
        shares: Vec<TenantShare>,
    ) -> Self {
        let n = slos.len();
        let mut e = EngineState {
            tenants: slos.iter().map(|s| TenantOnEngine::new(s, spec.kind)).collect(),
            entries: Entries::new(),
            pieces: Slab::new(),
            throttled: IndexedHeap::new(n),
            gathering: IndexedHeap::new(n),
            batches: Slab::new(),
            reservation_due: IndexedHeap::new(n),
            in_flight: vec![0; n],
            queued: vec![0; n],
            queued_cost: vec![0; n],
            busy: 0,
            subtasks_left: Slab::new(),
            learned: spec.learn.map(LearnedCosts::new),
            plain: false,
            #[cfg(test)]
            force_general: false,
            spec,
            policy,
            recipe,
            shares,
        };
        e.plain = e.is_plain();
        e
    }

    /// Whether nothing here needs the general path's steps (issue 34):
    /// no split or batch rule, and no tenant with a limit, a reservation
    /// or a flow queue beyond its first. Then no tenant is ever
    /// throttled, gathering, due a reservation or blocked, and every task
    /// is one whole dispatch, so the plain path skips releasing waiting
    /// tenants, the reservations' heap, the limits' checks and charges,
    /// the choice among flow queues at dispatch and the reading of a
    /// split task's subtask, group and batch at completion: each of which
    /// would find nothing to do. Every decision is the general path's (a
    /// proptest drives both with the same operations).
    pub(super) fn is_plain(&self) -> bool {
        #[cfg(test)]
        if self.force_general {
            return false;
        }
        self.spec.split.is_none()
            && self.spec.batch.is_none()
            && self
                .tenants
                .iter()
                .all(|tn| tn.limit.is_none() && tn.reservation.is_none() && tn.channel.flow_count() == 1)
    }

    /// Tenant `t`'s bookkeeping here agrees with itself: its state with
    /// its channel and the heaps, its counts with its channel, its
    /// dispatches in service with its counters. O(1); every scheduler call
    /// that changes a tenant's channel checks it afterwards in debug builds
    /// (the invariants TigerBeetle-style: stated, and loud in tests).
    #[inline]
    pub(super) fn debug_check(&self, t: usize) {
        if !cfg!(debug_assertions) {
            return;
        }
        let len = self.tenants[t].channel.len() as u64;
        debug_assert_eq!(
            self.tenants[t].state == ChannelState::Empty,
            len == 0,
            "tenant {t}: a channel is empty exactly when its state says so ({:?})",
            self.tenants[t].state
        );
        debug_assert!(
            self.queued[t] >= len && (self.queued[t] == 0) == (len == 0),
            "tenant {t}: every queued task has a dispatch to go ({} dispatches, {len} tasks)",
            self.queued[t]
        );
        debug_assert_eq!(
            self.tenants[t].state == ChannelState::Throttled,
            self.throttled.contains(t),
            "tenant {t}: throttled exactly while it waits for its release"
        );
        debug_assert_eq!(
            self.tenants[t].state == ChannelState::Gathering,
            self.gathering.contains(t),
            "tenant {t}: gathering exactly while it waits for its batch"
        );
        debug_assert!(
            !self.reservation_due.contains(t) || self.tenants[t].state == ChannelState::Ready,
            "tenant {t}: only a ready tenant's reservation comes due"
        );
        debug_assert!(
            self.busy <= self.spec.slots,
            "more dispatches in service than slots"
        );
        let tn = &self.tenants[t];
        debug_assert!(
            !self.plain
                || (tn.limit.is_none()
                    && tn.reservation.is_none()
                    && tn.channel.flow_count() == 1
                    && !matches!(
                        tn.state,
                        ChannelState::Throttled | ChannelState::Gathering | ChannelState::Blocked
                    )),
            "tenant {t}: an engine on the plain path has nothing the plain path skips ({:?})",
            tn.state
        );
        let st = &self.tenants[t].stats;
        // A batch holds one slot for all of its dispatches.
        let in_service = st.dispatched.checked_sub(st.completed);
        debug_assert!(
            in_service
                .is_some_and(|n| n >= u64::from(self.in_flight[t]) && (n == 0) == (self.in_flight[t] == 0)),
            "tenant {t}: every dispatch completes once, and holds a slot (alone or in its batch) until then"
        );
        debug_assert!(
            st.tasks_completed <= st.submitted,
            "tenant {t}: more tasks completed than accepted"
        );
    }

    /// Tenant `t`'s channel is non-empty and not ready: make it ready if its
    /// limit lets its head go at `now`, else throttle it until it does.
    #[inline]
    pub(super) fn admit_head(&mut self, now: Nanos, t: usize) {
        let tn = &mut self.tenants[t];
        if !tn.channel.select() {
            // Empty, or every queue's head waits for its ordered subtask.
            tn.state = if tn.channel.is_empty() {
                ChannelState::Empty
            } else {
                ChannelState::Blocked
            };
            return;
        }
        let Some(&key) = tn.channel.head() else {
            unreachable!("a selected flow queue has a head");
        };
        let q = &self.entries[key as usize].queued;
        let head = q.head();
        if !self.plain {
            // The rest of a task already started is not held to an ops limit.
            if let Some(l) = tn.limit.as_ref().filter(|l| !l.admits_piece(now, q.index > 0)) {
                tn.state = ChannelState::Throttled;
                self.throttled.set(t, HeapKey::new(l.ready_at() as f64, head.seq));
                return;
            }
            if let Some(until) = gathers_until(self.spec.batch, now, q, tn.channel.len()) {
                tn.state = ChannelState::Gathering;
                self.gathering.set(t, HeapKey::new(until as f64, head.seq));
                return;
            }
            if let Some(k) = tn.reservation_key(head.seq) {
                self.reservation_due.set(t, k);
            }
        }
        tn.state = ChannelState::Ready;
        self.policy.on_ready(now, t, &head, cx!(self));
    }

    /// Chooses ready tenant `t`'s flow queue for the dispatch at `now`
    /// (`reason`): the queue that goes first now, unless its head is one
    /// the tenant's limit would not let go (it was admitted on the head of
    /// the queue chosen before, which then goes).
    #[inline]
    pub(super) fn select_at_dispatch(&mut self, now: Nanos, t: usize, reason: DispatchReason) {
        let before = self.tenants[t].channel.current();
        let selected = self.tenants[t].channel.select();
        debug_assert!(selected, "a ready tenant has a flow queue whose head may go");
        if self.tenants[t].channel.current() == before || reason == DispatchReason::LimitBreak {
            return;
        }
        let continues = self.head_of(t).is_some_and(|q| q.index > 0);
        if self.tenants[t]
            .limit
            .as_ref()
            .is_some_and(|l| !l.admits_piece(now, continues))
        {
            self.tenants[t].channel.reselect(before);
        }
    }

    /// Admits every tenant whose limit or batch wait ends by `now`.
    #[inline]
    pub(super) fn release_waiting(&mut self, now: Nanos) {
        for heap in [Held::Limit, Held::Batch] {
            loop {
                let waiting = match heap {
                    Held::Limit => &mut self.throttled,
                    Held::Batch => &mut self.gathering,
                };
                match waiting.peek() {
                    Some((t, key)) if key.tag() <= now as f64 => {
                        waiting.remove(t);
                        self.admit_head(now, t);
                    }
                    _ => break,
                }
            }
        }
    }

    /// Chooses the tenant a free slot serves at `now`, and why.
    #[inline]
    pub(super) fn choose(&mut self, now: Nanos) -> Option<(usize, DispatchReason)> {
        if !self.plain {
            self.release_waiting(now);
        }
        if self.policy.next_tick().is_some_and(|t| t <= now) {
            self.policy.on_tick(now, cx!(self));
        }
        if self.plain {
            // No reservation comes due, no tenant is throttled.
            debug_assert!(self.reservation_due.is_empty() && self.throttled.is_empty());
            let t = self.policy.pick(now, cx!(self))?;
            debug_assert_eq!(
                self.tenants[t].state,
                ChannelState::Ready,
                "policy picked a tenant that is not ready"
            );
            // As below: a pick that is not ready (a policy's error) is
            // not served.
            return (self.tenants[t].state == ChannelState::Ready).then_some((t, DispatchReason::Policy));
        }
        if let Some((t, due)) = self.reservation_due.peek() {
            if due.tag() <= now as f64 && self.policy.admits(t, cx!(self)) {
                debug_assert_eq!(
                    self.tenants[t].state,
                    ChannelState::Ready,
                    "a reservation came due for a tenant that is not ready"
                );
                return Some((t, DispatchReason::Reservation));
            }
        }
        if let Some(t) = self.policy.pick(now, cx!(self)) {
            // A policy's pick is a ready head: a tenant of this engine,
            // ready, with a non-empty channel.
            debug_assert!(
                t < self.tenants.len(),
                "policy picked tenant {t}, which does not exist"
            );
            debug_assert_eq!(
                self.tenants[t].state,
                ChannelState::Ready,
                "policy picked a tenant that is not ready"
            );
            debug_assert!(
                !self.tenants[t].channel.is_empty(),
                "policy picked an empty channel"
            );
            if self.tenants[t].state == ChannelState::Ready {
                return Some((t, DispatchReason::Policy));
            }
        }
        if self.policy.at_limit() == AtLimit::Allow {
            if let Some((t, _)) = self.throttled.pop() {
                // Serve it as if it were ready: the policy sees it arrive and leave.
                self.tenants[t].state = ChannelState::Ready;
                let head = self.head_of(t).map(Queued::head)?;
                self.policy.on_ready(now, t, &head, cx!(self));
                return Some((t, DispatchReason::LimitBreak));
            }
        }
        None
    }

    /// Whether a tenant other than `t` (and latency-sensitive, if
    /// `latency_only`) is active here at `now`: work queued or in service,
    /// or a submission within `window` ns.
    fn contended(&self, now: Nanos, t: usize, window: Nanos, latency_only: bool) -> bool {
        (0..self.tenants.len()).any(|u| {
            u != t
                && (!latency_only || self.tenants[u].latency_sensitive)
                && (self.queued[u] > 0
                    || self.in_flight[u] > 0
                    || self.tenants[u]
                        .last_active
                        .is_some_and(|at| now.saturating_sub(at) <= window))
        })
    }

    /// The subtask size for a task of tenant `t` of `bytes` bytes planned at
    /// `now`, if it is split: the engine's split rule decides whether, and
    /// its size as the policy adapts it ([`Policy::split_bytes`]).
    pub(super) fn split_size(&self, now: Nanos, t: usize, task: &Task) -> Option<Bytes> {
        let rule = self.spec.split?;
        let bytes = task.bytes;
        let contended = match rule.when {
            SplitWhen::Always => true,
            SplitWhen::Contended { window } => self.contended(now, t, window, false),
            SplitWhen::ForLatency { window } => self.contended(now, t, window, true),
        };
        if !contended {
            return None;
        }
        let mut size = self.policy.split_bytes(now, t, rule.bytes).max(1);
        if let Some(time) = rule.time {
            let within = self.bytes_within(task, time);
            size = size.min(within.max(crate::engine::MIN_TIMED_SUBTASK_BYTES));
        }
        Some(size).filter(|&f| bytes > f)
    }

    /// The engine's predictor: learned costs first, then its model.
    #[inline]
    pub(super) fn cost(&self) -> EngineCost<'_> {
        EngineCost {
            model: self.spec.cost.as_ref(),
            learned: self.learned.as_ref(),
        }
    }

    /// The most bytes of `task`'s operator predicted to take at most `ns`
    /// here; `Bytes::MAX` when no cost per byte is known. The learned
    /// fit inverts in closed form; a configured model is searched by
    /// bisection (costs grow with size).
    fn bytes_within(&self, task: &Task, ns: Nanos) -> Bytes {
        if let Some(b) = self.learned.as_ref().and_then(|l| l.bytes_within(&task.op, ns)) {
            return b;
        }
        let model = self.spec.cost.as_ref();
        let fits = |b: Bytes| model.predict(&task.op.name, b).is_some_and(|c| c <= ns);
        let (mut lo, mut hi) = (0, task.bytes);
        if fits(hi) {
            return Bytes::MAX;
        }
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Plans `task` of tenant `t` at `now` (see [`Plan::new`]); also
    /// returns the subtask size it was planned with.
    #[inline]
    pub(super) fn plan(&self, now: Nanos, t: usize, task: &Task) -> (Plan, Option<Bytes>) {
        if self.spec.split.is_none() {
            // No split rule: whole, as `Plan::new` plans a task without a
            // split size (issue 34: without the call).
            return (Plan::whole(task), None);
        }
        let split = self.split_size(now, t, task);
        (Plan::new(task, split, &self.cost()), split)
    }

    /// Plans tenant `t`'s head again, if nothing of it was dispatched, with
    /// the split the engine wants now: it was planned when submitted,
    /// possibly long before, when the engine may have been uncontended or
    /// the policy wanted another size. Called when a task becomes its
    /// channel's head and again right before it is dispatched.
    #[inline(always)]
    pub(super) fn replan_head(&mut self, now: Nanos, t: usize) {
        // Never split here: every task was planned whole and stays so
        // (checked inline: the call alone was 2% of the core's cycle).
        if self.spec.split.is_some() {
            self.replan_split_head(now, t);
        }
    }

    /// [`EngineState::replan_head`] on an engine with a split rule.
    #[inline(never)]
    fn replan_split_head(&mut self, now: Nanos, t: usize) {
        let Some(q) = self.head_of(t) else {
            return;
        };
        if q.index != 0 || q.group.is_some() {
            return;
        }
        let split = self.split_size(now, t, &q.task);
        if split_key(split) == q.split {
            return;
        }
        let plan = Plan::new(&q.task, split, &self.cost());
        let head = plan.head(&q.task, q.next.seq, 0, 0);
        let (old_count, old_cost, count) = (q.plan.count(), q.next.remaining_cost, plan.count());
        let Some(q) = self.head_of_mut(t) else {
            unreachable!("the head was just read");
        };
        q.plan = plan;
        q.split = split_key(split);
        q.next = head.into();
        debug_assert!(
            self.queued[t] >= old_count as u64 && self.queued_cost[t] >= old_cost,
            "tenant {t}: the head's dispatches and cost are counted as queued"
        );
        self.queued[t] = self.queued[t] - old_count as u64 + count as u64;
        self.queued_cost[t] = self.queued_cost[t] - old_cost + head.remaining_cost;
    }

    /// An ordered subtask of tenant `t` from its flow queue `flow`
    /// completed: its task's next subtask may go now.
    pub(super) fn unblock(&mut self, now: Nanos, t: usize, flow: usize) {
        self.tenants[t].channel.unblock(flow);
        if self.tenants[t].state == ChannelState::Blocked {
            self.tenants[t].state = ChannelState::Empty;
            self.admit_head(now, t);
        }
    }

    /// When this engine may next have work without an event: a throttled
    /// tenant released or a policy period. `None` while every slot is busy:
    /// the next completion makes it dispatch anyway, and a release time
    /// already past would otherwise wake a driver at the same instant again
    /// and again.
    pub(super) fn next_wakeup(&self) -> Option<Nanos> {
        if self.busy >= self.spec.slots {
            return None;
        }
        [
            self.throttled
                .peek()
                .map(|(_, k)| k.tag().max(0.0).ceil() as Nanos),
            self.gathering
                .peek()
                .map(|(_, k)| k.tag().max(0.0).ceil() as Nanos),
            self.policy.next_tick(),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}
