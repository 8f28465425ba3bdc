//! One engine's scheduling state: per-tenant channels, shapers, the
//! policy instance, the decision to split, and the ready/throttled/blocked
//! bookkeeping.

use super::plan::{Plan, TaskCost};
use super::{ChannelStats, DispatchReason};
use crate::cost_fit::LearnedCosts;
use crate::engine::{EngineSpec, SplitWhen};
use crate::flow_queues::FlowQueues;
use crate::policy::{AtLimit, HeadInfo, Policy, TenantShare};

use crate::ready_heap::{HeapKey, IndexedHeap};
use crate::shaper::RateShaper;
use crate::task::{Subtask, Task};
use crate::tenant::Slo;
use crate::units::{Bytes, Nanos};
use slab::Slab;
use std::num::NonZeroU64;

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

/// A queued task. When its engine splits it, the first `index` subtasks
/// (`sent` bytes of the task) have been dispatched and `next` describes the
/// next one.
///
/// Kept small (192 bytes, was 232): the channels hold these by value and
/// every decision reads the next head, usually from a cache line not
/// touched since its submission (issue 17). What the policy sees of the
/// head ([`Queued::head`]) is rebuilt from `next` and the task.
#[derive(Debug, Clone)]
pub(super) struct Queued {
    pub(super) task: Task,
    pub(super) next: NextPiece,
    pub(super) sent: Bytes,
    /// Index of the next dispatch (of `plan.count()`).
    pub(super) index: u32,
    /// How the task is cut into dispatches, and the subtask size it was
    /// planned with (`None`: whole).
    pub(super) plan: Plan,
    pub(super) split: Option<NonZeroU64>,
    /// Key of the task's outstanding-subtask counter, once one is
    /// dispatched (a slab key; kept in 32 bits to keep the entry small).
    pub(super) group: Option<u32>,
}

/// The parts of a queued task's next dispatch that are not the task's own
/// (see [`HeadInfo`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct NextPiece {
    pub(super) seq: u64,
    pub(super) bytes: Bytes,
    pub(super) cost: Nanos,
    pub(super) remaining_cost: Nanos,
}

impl From<HeadInfo> for NextPiece {
    #[inline]
    fn from(h: HeadInfo) -> Self {
        NextPiece {
            seq: h.seq,
            bytes: h.bytes,
            cost: h.cost,
            remaining_cost: h.remaining_cost,
        }
    }
}

impl Queued {
    /// What a policy sees of the next dispatch of this task.
    #[inline]
    pub(super) fn head(&self) -> HeadInfo {
        HeadInfo {
            seq: self.next.seq,
            arrival: self.task.arrival,
            bytes: self.next.bytes,
            cost: self.next.cost,
            remaining_cost: self.next.remaining_cost,
            task_cost: self.task.predicted_cost.unwrap_or(0),
            deadline: self.task.deadline,
        }
    }
}

/// A subtask size as the queue keeps it (a split size is at least 1).
#[inline]
pub(super) fn split_key(split: Option<Bytes>) -> Option<NonZeroU64> {
    split.and_then(NonZeroU64::new)
}

pub(super) struct EngineState {
    pub(super) spec: EngineSpec,
    /// Called statically for the built-in `fcfs` and `sfq` (issue 34).
    pub(super) policy: super::static_policy::StaticPolicy,
    /// How the policy was built: a live SLO change builds it anew.
    pub(super) recipe: super::live::PolicyRecipe,
    pub(super) shares: Vec<TenantShare>,
    /// Each tenant's flow queues (one, unless it declares flows).
    pub(super) channels: Vec<FlowQueues<Queued>>,
    pub(super) state: Vec<ChannelState>,
    pub(super) limit: Vec<Option<RateShaper>>,
    pub(super) reservation: Vec<Option<RateShaper>>,
    /// Each tenant's per-task service budget here.
    pub(super) budgets: Vec<Option<Nanos>>,
    /// What each tenant's over-budget tasks get here.
    pub(super) budget_actions: Vec<crate::tenant::BudgetAction>,
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
    pub(super) stats: Vec<ChannelStats>,
    /// When each tenant's channel last went from empty to non-empty: its
    /// reservation tags start there (mClock's `R = max(R_prev + 1/r,
    /// arrival)`). Being held by its limit, or an ordered subtask waiting
    /// for the one before it, is not idling and does not move it.
    pub(super) backlogged_since: Vec<Nanos>,
    /// Subtasks still in service or queued, per split task in service.
    pub(super) subtasks_left: Slab<u32>,
    /// When each tenant last submitted here or had a dispatch complete
    /// (for [`SplitWhen::Contended`]).
    pub(super) last_active: Vec<Option<Nanos>>,
    /// Which tenants are latency-sensitive (for [`SplitWhen::ForLatency`]).
    pub(super) latency_sensitive: Vec<bool>,
    /// The operators' costs as measured here, when the engine learns them.
    pub(super) learned: Option<LearnedCosts>,
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

/// What `take_head` took off a channel: a whole task or one subtask of it.
pub(super) struct Taken {
    pub(super) task: super::DispatchedTask,
    pub(super) head: HeadInfo,
    pub(super) subtask: Option<Subtask>,
    pub(super) group: Option<usize>,
    /// The task's operator, where the engine learns costs.
    pub(super) op: Option<crate::task::OpRef>,
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
        EngineState {
            channels: slos
                .iter()
                .map(|s| FlowQueues::new(s.queue_cap, &s.flows))
                .collect(),
            state: vec![ChannelState::Empty; n],
            limit: slos.iter().map(|s| s.limit.map(RateShaper::new)).collect(),
            reservation: slos.iter().map(|s| s.reservation.map(RateShaper::new)).collect(),
            budgets: slos.iter().map(|s| s.service_budget).collect(),
            budget_actions: slos
                .iter()
                .map(|s| {
                    s.budget_action
                        .unwrap_or(crate::tenant::BudgetAction::default_for(spec.kind))
                })
                .collect(),
            throttled: IndexedHeap::new(n),
            gathering: IndexedHeap::new(n),
            batches: Slab::new(),
            reservation_due: IndexedHeap::new(n),
            in_flight: vec![0; n],
            queued: vec![0; n],
            queued_cost: vec![0; n],
            busy: 0,
            stats: vec![ChannelStats::default(); n],
            subtasks_left: Slab::new(),
            backlogged_since: vec![0; n],
            last_active: vec![None; n],
            latency_sensitive: slos.iter().map(latency_sensitive).collect(),
            learned: spec.learn.map(LearnedCosts::new),
            spec,
            policy,
            recipe,
            shares,
        }
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
        let len = self.channels[t].len() as u64;
        debug_assert_eq!(
            self.state[t] == ChannelState::Empty,
            len == 0,
            "tenant {t}: a channel is empty exactly when its state says so ({:?})",
            self.state[t]
        );
        debug_assert!(
            self.queued[t] >= len && (self.queued[t] == 0) == (len == 0),
            "tenant {t}: every queued task has a dispatch to go ({} dispatches, {len} tasks)",
            self.queued[t]
        );
        debug_assert_eq!(
            self.state[t] == ChannelState::Throttled,
            self.throttled.contains(t),
            "tenant {t}: throttled exactly while it waits for its release"
        );
        debug_assert_eq!(
            self.state[t] == ChannelState::Gathering,
            self.gathering.contains(t),
            "tenant {t}: gathering exactly while it waits for its batch"
        );
        debug_assert!(
            !self.reservation_due.contains(t) || self.state[t] == ChannelState::Ready,
            "tenant {t}: only a ready tenant's reservation comes due"
        );
        debug_assert!(
            self.busy <= self.spec.slots,
            "more dispatches in service than slots"
        );
        let st = &self.stats[t];
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
        if !self.channels[t].select() {
            // Empty, or every queue's head waits for its ordered subtask.
            self.state[t] = if self.channels[t].is_empty() {
                ChannelState::Empty
            } else {
                ChannelState::Blocked
            };
            return;
        }
        let Some((head, continues)) = self.channels[t].head().map(|q| (q.head(), q.index > 0)) else {
            unreachable!("a selected flow queue has a head");
        };
        match &self.limit[t] {
            // The rest of a task already started is not held to an ops limit.
            Some(l) if !l.admits_piece(now, continues) => {
                self.state[t] = ChannelState::Throttled;
                self.throttled.set(t, HeapKey::new(l.ready_at() as f64, head.seq));
            }
            _ => match self.gathers_until(now, t) {
                Some(until) => {
                    self.state[t] = ChannelState::Gathering;
                    self.gathering.set(t, HeapKey::new(until as f64, head.seq));
                }
                None => {
                    self.state[t] = ChannelState::Ready;
                    self.policy.on_ready(now, t, &head, &cx!(self));
                    self.key_reservation(t, head.seq);
                }
            },
        }
    }

    /// Chooses ready tenant `t`'s flow queue for the dispatch at `now`
    /// (`reason`): the queue that goes first now, unless its head is one
    /// the tenant's limit would not let go (it was admitted on the head of
    /// the queue chosen before, which then goes).
    #[inline]
    pub(super) fn select_at_dispatch(&mut self, now: Nanos, t: usize, reason: DispatchReason) {
        let before = self.channels[t].current();
        let selected = self.channels[t].select();
        debug_assert!(selected, "a ready tenant has a flow queue whose head may go");
        if self.channels[t].current() == before || reason == DispatchReason::LimitBreak {
            return;
        }
        let continues = self.channels[t].head().is_some_and(|q| q.index > 0);
        if self.limit[t]
            .as_ref()
            .is_some_and(|l| !l.admits_piece(now, continues))
        {
            self.channels[t].reselect(before);
        }
    }

    #[inline]
    pub(super) fn key_reservation(&mut self, t: usize, seq: u64) {
        if let Some(r) = &self.reservation[t] {
            self.reservation_due
                .set(t, HeapKey::new(r.ready_at() as f64, seq));
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
        self.release_waiting(now);
        if self.policy.next_tick().is_some_and(|t| t <= now) {
            self.policy.on_tick(now, &cx!(self));
        }
        if let Some((t, due)) = self.reservation_due.peek() {
            if due.tag() <= now as f64 && self.policy.admits(t, &cx!(self)) {
                debug_assert_eq!(
                    self.state[t],
                    ChannelState::Ready,
                    "a reservation came due for a tenant that is not ready"
                );
                return Some((t, DispatchReason::Reservation));
            }
        }
        if let Some(t) = self.policy.pick(now, &cx!(self)) {
            // A policy's pick is a ready head: a tenant of this engine,
            // ready, with a non-empty channel.
            debug_assert!(
                t < self.state.len(),
                "policy picked tenant {t}, which does not exist"
            );
            debug_assert_eq!(
                self.state[t],
                ChannelState::Ready,
                "policy picked a tenant that is not ready"
            );
            debug_assert!(!self.channels[t].is_empty(), "policy picked an empty channel");
            if self.state[t] == ChannelState::Ready {
                return Some((t, DispatchReason::Policy));
            }
        }
        if self.policy.at_limit() == AtLimit::Allow {
            if let Some((t, _)) = self.throttled.pop() {
                // Serve it as if it were ready: the policy sees it arrive and leave.
                self.state[t] = ChannelState::Ready;
                let head = self.channels[t].head().map(Queued::head)?;
                self.policy.on_ready(now, t, &head, &cx!(self));
                return Some((t, DispatchReason::LimitBreak));
            }
        }
        None
    }

    /// Whether a tenant other than `t` (and latency-sensitive, if
    /// `latency_only`) is active here at `now`: work queued or in service,
    /// or a submission within `window` ns.
    fn contended(&self, now: Nanos, t: usize, window: Nanos, latency_only: bool) -> bool {
        (0..self.state.len()).any(|u| {
            u != t
                && (!latency_only || self.latency_sensitive[u])
                && (self.queued[u] > 0
                    || self.in_flight[u] > 0
                    || self.last_active[u].is_some_and(|at| now.saturating_sub(at) <= window))
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
    #[inline]
    pub(super) fn replan_head(&mut self, now: Nanos, t: usize) {
        if self.spec.split.is_none() {
            // Never split here: every task was planned whole and stays so.
            return;
        }
        let Some(q) = self.channels[t].head() else {
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
        let Some(q) = self.channels[t].head_mut() else {
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

    /// Takes the head of ready tenant `t` (a whole task or its next
    /// subtask) and updates shapers, state and policy. `holds_slot`: the
    /// dispatch takes a slot of its own (else it joins the batch of the
    /// one taken before it).
    #[inline]
    pub(super) fn take_head(
        &mut self,
        now: Nanos,
        t: usize,
        reason: DispatchReason,
        holds_slot: bool,
    ) -> Taken {
        debug_assert_eq!(
            self.state[t],
            ChannelState::Ready,
            "only a ready tenant's head is taken"
        );
        let q = self.channels[t]
            .head_mut()
            .expect("a ready tenant's channel has a head");
        let head = q.head();
        let first = q.index == 0;
        let count = q.plan.count();
        let subtask = q.plan.piece(&q.task, q.index, q.sent).subtask;
        // An ordered task's next subtask waits for this one to complete.
        let blocks = q.plan.ordered() && q.index + 1 < count;
        // Kept only where costs are learned: the completion feeds the fit.
        let op = self.learned.is_some().then_some(q.task.op);
        let taken = if q.index + 1 >= count {
            debug_assert_eq!(q.sent + head.bytes, q.task.bytes, "subtasks tile their task");
            let group = q.group.map(|g| g as usize);
            let task = super::DispatchedTask::of(&q.task);
            // The entry is dropped where it lies, not moved out (issue 17).
            self.channels[t].charge(head.cost);
            self.channels[t].discard_head();
            Taken {
                task,
                head,
                subtask,
                group,
                op,
            }
        } else {
            let group = *q.group.get_or_insert_with(|| {
                let key = self.subtasks_left.insert(count);
                assert!(key < u32::MAX as usize, "split tasks in service fit 32-bit keys");
                key as u32
            }) as usize;
            q.sent += head.bytes;
            q.index += 1;
            q.next = q.plan.head(&q.task, head.seq, q.index, q.sent).into();
            let task = super::DispatchedTask::of(&q.task);
            self.channels[t].charge(head.cost);
            if blocks {
                self.channels[t].block_current();
            }
            Taken {
                task,
                head,
                subtask,
                group: Some(group),
                op,
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
                r.charge_piece(self.backlogged_since[t], head.bytes, first);
            }
            self.stats[t].reserved_dispatches += 1;
        }
        debug_assert!(
            self.queued[t] > 0 && self.queued_cost[t] >= head.cost,
            "tenant {t}: a dispatch taken was counted as queued"
        );
        if holds_slot {
            debug_assert!(
                self.busy < self.spec.slots,
                "a dispatch taken without a free slot"
            );
            self.in_flight[t] += 1;
            self.busy += 1;
        }
        self.queued[t] -= 1;
        self.queued_cost[t] -= head.cost;
        self.stats[t].dispatched += 1;
        // The new head (from whichever flow queue goes next), and whether
        // it continues a task already started.
        let any = self.channels[t].select();
        if any {
            self.replan_head(now, t);
        }
        let (next, continues) = match self.channels[t].head() {
            Some(q) if any => (Some(q.head()), q.index > 0),
            _ => (None, false),
        };
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
            self.admit_head(now, t);
        }
        taken
    }

    /// An ordered subtask of tenant `t` from its flow queue `flow`
    /// completed: its task's next subtask may go now.
    pub(super) fn unblock(&mut self, now: Nanos, t: usize, flow: usize) {
        self.channels[t].unblock(flow);
        if self.state[t] == ChannelState::Blocked {
            self.state[t] = ChannelState::Empty;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::AffineCost;
    use crate::engine::EngineId;
    use crate::task::{OpSpec, TaskId};
    use crate::tenant::TenantId;

    /// What a policy sees of a queued task's head, rebuilt from the queue
    /// entry, is what the plan says of that dispatch, at every step of a
    /// split task and for a whole one.
    #[test]
    fn the_rebuilt_head_is_the_plans() {
        let task = Task {
            id: TaskId(3),
            tenant: TenantId(1),
            engine: EngineId(0),
            op: OpSpec::named("generic"),
            bytes: 10_000,
            arrival: 1_234,
            deadline: Some(99_000),
            predicted_cost: Some(20_000),
            planner: None,
            flow: 0,
        };
        let model = AffineCost::new(100.0, 2.0).unwrap();
        for split in [None, Some(3_000)] {
            let plan = Plan::new(&task, split, &model);
            let mut q = Queued {
                task: task.clone(),
                next: plan.head(&task, 42, 0, 0).into(),
                sent: 0,
                index: 0,
                plan: plan.clone(),
                split: split_key(split),
                group: None,
            };
            for index in 0..plan.count() {
                let want = plan.head(&task, 42, index, q.sent);
                assert_eq!(q.head(), want, "dispatch {index} of split {split:?}");
                q.sent += want.bytes;
                q.index += 1;
                if q.index < plan.count() {
                    q.next = plan.head(&task, 42, q.index, q.sent).into();
                }
            }
            assert_eq!(q.sent, task.bytes);
        }
    }

    /// The queue entry stays small: every decision reads one, and the
    /// channels hold them by value (232 bytes before issue 17's pass).
    #[test]
    fn a_queue_entry_stays_small() {
        let size = std::mem::size_of::<Queued>();
        println!("Queued: {size} bytes");
        assert!(size <= 192, "{size}");
    }
}
