//! One engine's scheduling state: per-tenant channels, shapers, the
//! policy instance, fragment planning and the ready/throttled bookkeeping.

use super::{ChannelStats, DispatchReason};
use crate::channel::VirtualChannel;
use crate::engine::EngineSpec;
use crate::policy::{AtLimit, HeadInfo, Policy, TenantShare};

use crate::ready_heap::{HeapKey, IndexedHeap};
use crate::shaper::RateShaper;
use crate::task::{Subtask, Task};
use crate::tenant::Tenant;
use crate::units::{Bytes, Nanos};
use slab::Slab;

/// Where a tenant's channel on an engine stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ChannelState {
    Empty,
    Ready,
    Throttled,
}

/// A queued task. When its engine fragments, `sent` bytes of it have
/// already been dispatched and `head` describes the next fragment.
#[derive(Debug, Clone)]
pub(super) struct Queued {
    pub(super) task: Task,
    pub(super) head: HeadInfo,
    pub(super) sent: Bytes,
    /// Index of the next fragment, and how many there are (1: not fragmented).
    pub(super) index: u32,
    pub(super) count: u32,
    /// How the task was planned: fragment size and costs.
    pub(super) plan: Plan,
    /// Key of the task's outstanding-fragment counter, once one is dispatched.
    pub(super) group: Option<usize>,
}

/// How a task is cut into dispatches, with their predicted costs, fixed
/// when it is planned so that taking a fragment asks no cost model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Plan {
    /// Fragment size (`None`: the task goes whole).
    pub(super) frag: Option<Bytes>,
    /// Predicted cost of a whole fragment (of the task, when unfragmented).
    pub(super) frag_cost: Nanos,
    /// Predicted cost of the last fragment (it may be shorter).
    pub(super) last_cost: Nanos,
}

pub(super) struct EngineState {
    pub(super) spec: EngineSpec,
    pub(super) policy: Box<dyn Policy>,
    pub(super) shares: Vec<TenantShare>,
    pub(super) channels: Vec<VirtualChannel<Queued>>,
    pub(super) state: Vec<ChannelState>,
    pub(super) limit: Vec<Option<RateShaper>>,
    pub(super) reservation: Vec<Option<RateShaper>>,
    /// Throttled tenants by release time.
    pub(super) throttled: IndexedHeap,
    /// Ready tenants with a reservation, by the time it is next due.
    pub(super) reservation_due: IndexedHeap,
    pub(super) in_flight: Vec<u32>,
    /// Dispatches waiting per tenant (tasks, or fragments not yet sent).
    pub(super) queued: Vec<u64>,
    /// Predicted cost of the dispatches waiting, per tenant.
    pub(super) queued_cost: Vec<Nanos>,
    pub(super) busy: u32,
    pub(super) stats: Vec<ChannelStats>,
    /// When each tenant last became ready (its reservation tags start there).
    pub(super) ready_since: Vec<Nanos>,
    /// Fragments still in service or queued, per fragmented task in service.
    pub(super) fragments_left: Slab<u32>,
}

/// What `take_head` took off a channel: a whole task or one fragment of it.
pub(super) struct Taken {
    pub(super) task: Task,
    pub(super) head: HeadInfo,
    pub(super) fragment: Option<Subtask>,
    pub(super) group: Option<usize>,
}

impl EngineState {
    pub(super) fn new(
        spec: EngineSpec,
        policy: Box<dyn Policy>,
        tenants: &[Tenant],
        shares: Vec<TenantShare>,
    ) -> Self {
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
    pub(super) fn admit_head(&mut self, now: Nanos, t: usize) {
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

    pub(super) fn key_reservation(&mut self, t: usize, seq: u64) {
        if let Some(r) = &self.reservation[t] {
            self.reservation_due
                .set(t, HeapKey::new(r.ready_at() as f64, seq));
        }
    }

    pub(super) fn release_throttled(&mut self, now: Nanos) {
        while let Some((t, key)) = self.throttled.peek() {
            if key.tag() > now as f64 {
                break;
            }
            self.throttled.remove(t);
            self.admit_head(now, t);
        }
    }

    /// Chooses the tenant a free slot serves at `now`, and why.
    pub(super) fn choose(&mut self, now: Nanos) -> Option<(usize, DispatchReason)> {
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
    pub(super) fn fragment_size(&self, now: Nanos, t: usize, bytes: Bytes) -> Option<Bytes> {
        self.spec
            .fragment
            .map(|f| self.policy.split_bytes(now, t, f).max(1))
            .filter(|&f| bytes > f)
            .map(|f| f.max(bytes.div_ceil(u32::MAX as u64)))
    }

    /// How many dispatches a task of `bytes` bytes planned with `frag` takes.
    pub(super) fn fragment_count(bytes: Bytes, frag: Option<Bytes>) -> u32 {
        frag.map_or(1, |f| bytes.div_ceil(f) as u32)
    }

    /// How `task` is dispatched when planned with fragment size `frag`
    /// (`None`: whole): fragment costs come from the engine's model (or, if
    /// it does not know the operator, the task's cost pro rata).
    pub(super) fn plan(&self, task: &Task, frag: Option<Bytes>) -> Plan {
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
    pub(super) fn head_for(task: &Task, seq: u64, sent: Bytes, plan: &Plan) -> HeadInfo {
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
    pub(super) fn replan_head(&mut self, now: Nanos, t: usize) {
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
    pub(super) fn take_head(&mut self, now: Nanos, t: usize, reason: DispatchReason) -> Option<Taken> {
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
    pub(super) fn next_wakeup(&self) -> Option<Nanos> {
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
