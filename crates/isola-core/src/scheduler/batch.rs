//! Batching a tenant's small tasks into one dispatch ([`crate::BatchRule`]):
//! which queued tasks join the one a free slot serves, and how long a
//! tenant whose channel has just become ready waits for a batch to fill.
//!
//! A batch holds one slot. Each of its tasks is its own dispatch (its own
//! id, its own completion, its own charge to the tenant and its flow
//! queue), so everything that counts dispatches still counts each task;
//! only the slot is shared, and freed when the batch's last dispatch
//! completes.

use super::engine::{ChannelState, EngineState};
use super::entry::Queued;
use super::{Dispatch, DispatchReason, Scheduler};
use crate::engine::BatchRule;
use crate::engine::EngineId;
use crate::task::OpRef;
use crate::units::{Bytes, Nanos};

/// When a tenant whose head `q` may go at `now`, with `queued` tasks in
/// its channel, stops waiting for a batch to fill on an engine with
/// `rule`; `None` when it goes now: the engine does not batch or batches
/// without a wait, its head is a split task's (never batched) or fills the
/// rule's `bytes` alone, `tasks` tasks (of any operator) are queued
/// already, or its head has waited `wait` since it arrived. Asked when the
/// tenant's channel becomes ready; a tenant that stays ready after a
/// dispatch does not wait again.
#[inline]
pub(super) fn gathers_until(rule: Option<BatchRule>, now: Nanos, q: &Queued, queued: usize) -> Option<Nanos> {
    let rule = rule.filter(|r| r.wait > 0)?;
    let until = q.task.arrival.saturating_add(rule.wait);
    let gathers = until > now
        && q.index == 0
        && q.plan.count() == 1
        && queued < rule.tasks as usize
        && q.next.bytes < rule.bytes;
    gathers.then_some(until)
}

impl EngineState {
    /// Whether tenant `t`'s head joins a batch of `op`'s tasks that has
    /// `count` tasks and `bytes` bytes: the tenant is still ready (its
    /// limit lets the head go), the head is a whole task of the same
    /// operator, and the batch stays within the engine's rule.
    fn joins_batch(&self, t: usize, op: OpRef, count: u32, bytes: Bytes) -> bool {
        let Some(rule) = self.spec.batch else {
            return false;
        };
        if self.tenants[t].state != ChannelState::Ready || count >= rule.tasks {
            return false;
        }
        self.head_of(t).is_some_and(|q| {
            q.index == 0
                && q.plan.count() == 1
                && q.group.is_none()
                && bytes.saturating_add(q.next.bytes) <= rule.bytes
                && q.task.op == op
        })
    }
}

impl Scheduler {
    /// The next dispatches for a free slot of `engine` at `now`, appended
    /// to `batch`; returns how many (0: nothing may go, as
    /// [`Scheduler::next`] returning `None`). On an engine with a
    /// [`crate::BatchRule`] the first is chosen as `next` chooses, and the
    /// same tenant's whole queued tasks of the same operator that follow
    /// it join (when it is a whole task too), within the rule: all of them share the one slot, which is
    /// free again once every one has been completed. Without a rule, or
    /// when nothing joins, this is `next`.
    pub fn next_batch(&mut self, now: Nanos, engine: EngineId, batch: &mut Vec<Dispatch>) -> usize {
        let Some((t, reason)) = self.choose_for_slot(now, engine) else {
            return 0;
        };
        let e = &self.engines[engine.index()];
        // A batch is one operator's tasks: the first one's.
        let op = e.spec.batch.and_then(|_| e.head_of(t).map(|q| q.task.op));
        let first = self.take(now, engine, t, reason, None);
        batch.push(first);
        // A subtask goes alone: a task is split to bound how long others
        // wait behind it, which a batch would undo.
        let Some(op) = op.filter(|_| first.subtask.is_none()) else {
            return 1;
        };
        let (mut count, mut bytes) = (1u32, first.task.bytes);
        let mut key = None;
        while self.engines[engine.index()].joins_batch(t, op, count, bytes) {
            let e = &mut self.engines[engine.index()];
            let key = *key.get_or_insert_with(|| {
                let k = e.batches.insert(1);
                assert!(k < u32::MAX as usize, "batches in service fit 32-bit keys");
                k as u32
            });
            e.batches[key as usize] += 1;
            let member = self.take(now, engine, t, DispatchReason::Batched, Some(key));
            count += 1;
            bytes = bytes.saturating_add(member.task.bytes);
            batch.push(member);
        }
        if let Some(key) = key {
            // The first dispatch holds the slot for the batch.
            self.engines[engine.index()].set_batch(first.id, key);
        }
        count as usize
    }
}
