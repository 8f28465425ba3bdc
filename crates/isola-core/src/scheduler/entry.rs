//! Queued tasks kept in place (issue 34): each engine keeps its tasks in
//! one slab of entries, from submission until their last dispatch
//! completes. A tenant's channel holds the entries' keys (4 bytes each),
//! not the entries; taking a head moves nothing, and a task's last (or
//! only) dispatch is served from the entry where it was queued, so neither
//! the dispatch nor its completion copies the task. Only a split task's
//! earlier subtasks, dispatched while the rest of the task stays queued,
//! get a record of their own ([`PieceInService`]).

use super::engine::{ChannelState, EngineState};
use super::plan::Plan;
use super::{Dispatch, DispatchId, DispatchReason, DispatchedTask};
use crate::engine::EngineId;
use crate::policy::HeadInfo;
use crate::task::{OpRef, Subtask, Task};
use crate::units::{Bytes, Nanos};
use std::num::NonZeroU64;

/// A queued task. When its engine splits it, the first `index` subtasks
/// (`sent` bytes of the task) have been dispatched and `next` describes the
/// next one.
///
/// Kept small (192 bytes, was 232): every decision reads the next head,
/// usually from a cache line not touched since its submission (issue 17).
/// What the policy sees of the head ([`Queued::head`]) is rebuilt from
/// `next` and the task.
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

/// A task in its engine's slab: queued, or (once its channel no longer
/// holds its key) its last dispatch in service; or a vacant slot.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) queued: Queued,
    /// Set when its last dispatch is taken; `in_service` until then false.
    pub(super) service: Service,
    /// Whether the slot holds a task (else it is on the free list).
    occupied: bool,
    /// The next vacant slot, while this one is vacant.
    next_free: u32,
}

/// No slot: the end of the free list.
const NO_SLOT: u32 = u32::MAX;

/// An engine's slab of entries (queued tasks, and tasks whose last
/// dispatch is in service), each under a stable `u32` key. Written by hand
/// rather than with the `slab` crate the rest of the core uses: its
/// `remove` moves the whole 200-byte entry out to return it, a copy and a
/// drop on every completion (about 65 instructions a task under
/// `callgrind`, issue 34), where a slot here is recycled where it lies:
/// what it holds beyond plain data (a planner, a listed plan) is dropped
/// when it is freed, the rest is overwritten by the next task.
#[derive(Debug)]
pub(super) struct Entries {
    slots: Vec<Entry>,
    /// The most recently freed slot (reused first, as `slab` does).
    free: u32,
}

impl Default for Entries {
    /// An empty slab, its free list ended ([`Entries::new`]).
    fn default() -> Self {
        Entries::new()
    }
}

impl Entries {
    /// An empty slab (allocates on the first insert).
    pub(super) fn new() -> Self {
        Entries {
            slots: Vec::new(),
            free: NO_SLOT,
        }
    }

    /// Stores `queued`, not in service, and returns its key.
    #[inline(always)]
    pub(super) fn insert(&mut self, queued: Queued) -> u32 {
        let key = self.free;
        if key == NO_SLOT {
            let key = self.slots.len();
            assert!(key < NO_SLOT as usize, "queued tasks fit 32-bit keys");
            self.slots.push(Entry {
                queued,
                service: Service::default(),
                occupied: true,
                next_free: NO_SLOT,
            });
            return key as u32;
        }
        let e = &mut self.slots[key as usize];
        debug_assert!(!e.occupied, "a slot on the free list is vacant");
        self.free = e.next_free;
        // A vacant slot holds nothing to drop (`release` dropped its
        // planner and listed plan): overwritten without the drop's checks
        // (13 instructions a task, issue 34).
        debug_assert!(
            e.queued.task.planner.is_none() && matches!(e.queued.plan, Plan::Whole { .. }),
            "a vacant slot holds plain data"
        );
        std::mem::forget(std::mem::replace(&mut e.queued, queued));
        e.service = Service::default();
        e.occupied = true;
        key
    }

    /// The entry under `key`, if it holds a task.
    #[inline]
    pub(super) fn get(&self, key: usize) -> Option<&Entry> {
        self.slots.get(key).filter(|e| e.occupied)
    }

    /// The entry under `key`, if it holds a task, to update in place.
    #[inline]
    pub(super) fn get_mut(&mut self, key: usize) -> Option<&mut Entry> {
        self.slots.get_mut(key).filter(|e| e.occupied)
    }

    /// Frees `key`'s slot.
    #[inline(always)]
    pub(super) fn release(&mut self, key: usize) {
        let e = &mut self.slots[key];
        debug_assert!(e.occupied, "only a task's slot is freed");
        e.occupied = false;
        e.service.in_service = false;
        // What is more than plain data goes now, not when the slot is
        // next used.
        e.queued.task.planner = None;
        if !matches!(e.queued.plan, Plan::Whole { .. }) {
            e.queued.plan = Plan::Whole { cost: 0 };
        }
        e.next_free = self.free;
        self.free = key as u32;
    }

    /// Takes the queued task under `key` out and frees its slot.
    pub(super) fn remove(&mut self, key: usize) -> Queued {
        let queued = self.slots[key].queued.clone();
        self.release(key);
        queued
    }
}

impl std::ops::Index<usize> for Entries {
    type Output = Entry;
    #[inline]
    fn index(&self, key: usize) -> &Entry {
        let e = &self.slots[key];
        debug_assert!(e.occupied, "a channel names an occupied slot");
        e
    }
}

impl std::ops::IndexMut<usize> for Entries {
    #[inline]
    fn index_mut(&mut self, key: usize) -> &mut Entry {
        let e = &mut self.slots[key];
        debug_assert!(e.occupied, "a channel names an occupied slot");
        e
    }
}

/// The in-service part of an [`Entry`]: what its dispatch adds to the
/// queued task.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Service {
    /// Whether the entry's last dispatch is in service (its channel no
    /// longer holds it).
    pub(super) in_service: bool,
    /// The generation in its [`DispatchId`].
    pub(super) generation: u32,
    /// The batch it went in, if it shares its slot (an
    /// `EngineState::batches` key).
    pub(super) batch: Option<u32>,
    /// When it was dispatched.
    pub(super) dispatched: Nanos,
}

/// A split task's subtask in service that is not the task's last: the
/// task's entry stays queued for the rest, so what the completion reads is
/// kept here.
#[derive(Debug, Clone, Copy)]
pub(super) struct PieceInService {
    generation: u32,
    task: DispatchedTask,
    head: HeadInfo,
    subtask: Option<Subtask>,
    group: u32,
    op: OpRef,
    dispatched: Nanos,
}

/// What a completion reads of a dispatch in service (built where it is
/// used, from the entry or the piece record, and inlined: only the fields
/// read are loaded).
#[derive(Clone, Copy)]
pub(super) struct Served {
    pub(super) task: DispatchedTask,
    pub(super) head: HeadInfo,
    pub(super) subtask: Option<Subtask>,
    pub(super) group: Option<usize>,
    pub(super) op: OpRef,
    pub(super) dispatched: Nanos,
    pub(super) batch: Option<u32>,
}

impl EngineState {
    /// Tenant `t`'s head: the entry its current flow queue's head names.
    #[inline]
    pub(super) fn head_of(&self, t: usize) -> Option<&Queued> {
        let &key = self.tenants[t].channel.head()?;
        Some(&self.entries[key as usize].queued)
    }

    /// Tenant `t`'s head, to update in place.
    #[inline]
    pub(super) fn head_of_mut(&mut self, t: usize) -> Option<&mut Queued> {
        let &key = self.tenants[t].channel.head()?;
        Some(&mut self.entries[key as usize].queued)
    }

    /// What dispatch `id` (of this engine), a split task's earlier
    /// subtask, served, if it is in service.
    #[inline(always)]
    pub(super) fn served_piece(&self, id: DispatchId) -> Option<Served> {
        debug_assert!(id.piece);
        let p = self
            .pieces
            .get(id.slot as usize)
            .filter(|p| p.generation == id.generation)?;
        Some(Served {
            task: p.task,
            head: p.head,
            subtask: p.subtask,
            group: Some(p.group as usize),
            op: p.op,
            dispatched: p.dispatched,
            batch: None,
        })
    }

    /// What dispatch `id` (of this engine), a task's last or only one,
    /// served, if it is in service.
    #[inline(always)]
    pub(super) fn served_entry(&self, id: DispatchId) -> Option<Served> {
        debug_assert!(!id.piece);
        let entry = self
            .entries
            .get(id.slot as usize)
            .filter(|e| e.service.in_service && e.service.generation == id.generation)?;
        let q = &entry.queued;
        // The last dispatch of the task: its head and index were left as
        // they were when it was taken.
        let subtask = match q.plan {
            Plan::Whole { .. } => None,
            _ => q.plan.piece(&q.task, q.index, q.sent).subtask,
        };
        Some(Served {
            task: DispatchedTask::of(&q.task),
            head: q.head(),
            subtask,
            group: q.group.map(|g| g as usize),
            op: q.task.op,
            dispatched: entry.service.dispatched,
            batch: entry.service.batch,
        })
    }

    /// Frees dispatch `id`'s record (its entry, or its piece's record).
    #[inline(always)]
    pub(super) fn release(&mut self, id: DispatchId) {
        if id.piece {
            self.pieces.remove(id.slot as usize);
        } else {
            self.entries.release(id.slot as usize);
        }
    }

    /// Sets the batch of dispatch `id`, a whole task's, taken alone.
    pub(super) fn set_batch(&mut self, id: DispatchId, batch: u32) {
        debug_assert!(!id.piece, "a subtask is never batched");
        if let Some(e) = self.entries.get_mut(id.slot as usize) {
            debug_assert!(e.service.in_service && e.service.batch.is_none());
            e.service.batch = Some(batch);
        }
    }

    /// Takes the head of ready tenant `t` (a whole task or its next
    /// subtask) as dispatch `generation` of `engine` (this one) and
    /// updates shapers, state and policy. With `batch` the dispatch joins
    /// that batch's slot, else it takes a slot of its own.
    #[inline]
    pub(super) fn take_head(
        &mut self,
        now: Nanos,
        engine: EngineId,
        t: usize,
        reason: DispatchReason,
        batch: Option<u32>,
        generation: u32,
    ) -> Dispatch {
        let tn = &mut self.tenants[t];
        debug_assert_eq!(
            tn.state,
            ChannelState::Ready,
            "only a ready tenant's head is taken"
        );
        let holds_slot = batch.is_none();
        let key = *tn.channel.head().expect("a ready tenant's channel has a head") as usize;
        let entry = &mut self.entries[key];
        let q = &mut entry.queued;
        let head = q.head();
        let first = q.index == 0;
        let count = q.plan.count();
        let subtask = match q.plan {
            Plan::Whole { .. } => None,
            _ => q.plan.piece(&q.task, q.index, q.sent).subtask,
        };
        // An ordered task's next subtask waits for this one to complete.
        let blocks = q.plan.ordered() && q.index + 1 < count;
        let task = DispatchedTask::of(&q.task);
        debug_assert!(
            head.bytes <= task.bytes,
            "a dispatch serves at most its task's bytes"
        );
        let (slot, piece) = if q.index + 1 >= count {
            debug_assert_eq!(q.sent + head.bytes, q.task.bytes, "subtasks tile their task");
            // The last dispatch is served from the entry where it lies:
            // nothing is copied (issue 34).
            entry.service = Service {
                in_service: true,
                generation,
                batch,
                dispatched: now,
            };
            tn.channel.charge(head.cost);
            tn.channel.discard_head();
            (key as u32, false)
        } else {
            let group = *q.group.get_or_insert_with(|| {
                let k = self.subtasks_left.insert(count);
                assert!(k < u32::MAX as usize, "split tasks in service fit 32-bit keys");
                k as u32
            });
            q.sent += head.bytes;
            q.index += 1;
            q.next = q.plan.head(&q.task, head.seq, q.index, q.sent).into();
            let op = q.task.op;
            debug_assert!(batch.is_none(), "a subtask is never batched");
            let k = self.pieces.insert(PieceInService {
                generation,
                task,
                head,
                subtask,
                group,
                op,
                dispatched: now,
            });
            assert!(k < u32::MAX as usize, "subtasks in service fit 32-bit keys");
            tn.channel.charge(head.cost);
            if blocks {
                tn.channel.block_current();
            }
            (k as u32, true)
        };
        if !self.plain {
            // A limit break uses capacity nobody else wanted; it is not
            // held against the tenant by pushing its limit further into
            // the future.
            if reason != DispatchReason::LimitBreak {
                if let Some(l) = &mut tn.limit {
                    l.charge_piece(now, head.bytes, first);
                }
            }
            if reason == DispatchReason::Reservation {
                if let Some(r) = &mut tn.reservation {
                    r.charge_piece(tn.backlogged_since, head.bytes, first);
                }
                tn.stats.reserved_dispatches += 1;
            }
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
        tn.stats.dispatched += 1;
        // The new head (from whichever flow queue goes next), and whether
        // it continues a task already started.
        let any = tn.channel.select();
        if any {
            self.replan_head(now, t);
        }
        let tn = &mut self.tenants[t];
        let next = match tn.channel.head() {
            Some(&k) if any => {
                let q = &self.entries[k as usize].queued;
                // A limit lets it go, unless it holds the tenant now.
                let held = tn
                    .limit
                    .as_ref()
                    .is_some_and(|l| !l.admits_piece(now, q.index > 0));
                (!held).then(|| q.head())
            }
            _ => None,
        };
        match next {
            Some(n) => {
                if let Some(k) = tn.reservation_key(n.seq) {
                    self.reservation_due.set(t, k);
                }
                self.policy.on_dispatch(now, t, &head, Some(&n), cx!(self));
            }
            None => {
                tn.state = ChannelState::Empty;
                let refill = !tn.channel.is_empty();
                self.policy.on_dispatch(now, t, &head, None, cx!(self));
                if !self.plain {
                    self.reservation_due.remove(t);
                }
                // An emptied channel stays empty (what `admit_head` finds
                // too, without the call).
                if refill {
                    self.admit_head(now, t);
                }
            }
        }
        Dispatch {
            id: DispatchId {
                slot,
                generation,
                engine: engine.index() as u32,
                piece,
            },
            engine,
            task,
            subtask,
            predicted: head.cost,
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::AffineCost;
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

    /// The queue entry stays small: every decision reads one (232 bytes
    /// before issue 17's pass).
    #[test]
    fn a_queue_entry_stays_small() {
        let size = std::mem::size_of::<Queued>();
        println!("Queued: {size} bytes");
        assert!(size <= 192, "{size}");
    }
}
