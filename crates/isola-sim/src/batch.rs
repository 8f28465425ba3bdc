//! Batches on a simulated engine ([`isola_core::BatchRule`]): the device
//! serves a batch as one piece of work the size of all its tasks together
//! (one descriptor, one doorbell, one transfer: AaaS' message-size
//! normalisation), and when it ends each task completes with its share of
//! the service, in proportion to its predicted cost, the shares summing
//! to the whole. The first task's dispatch stands for the batch at the
//! device; the others wait here.

use crate::device::Finished;
use isola_core::{Dispatch, DispatchId};
use std::collections::HashMap;

/// The batches in service on every engine, by their first dispatch.
#[derive(Debug, Default)]
pub struct Batches {
    /// Each batch of more than one dispatch, by its first one's id.
    held: HashMap<DispatchId, Vec<Dispatch>>,
}

impl Batches {
    /// Keeps `batch` (as the core handed it out: at least one dispatch)
    /// until its device work finishes; returns the first dispatch, which
    /// stands for the batch, and the bytes of all of its tasks.
    pub fn hold(&mut self, batch: &[Dispatch]) -> (Dispatch, u64) {
        let first = *batch.first().expect("a batch has a dispatch");
        let bytes = batch
            .iter()
            .map(|d| d.subtask.map_or(d.task.bytes, |s| s.bytes))
            .sum();
        if batch.len() > 1 {
            let before = self.held.insert(first.id, batch.to_vec());
            debug_assert!(before.is_none(), "a dispatch stands for one batch at a time");
        }
        (first, bytes)
    }

    /// Whether `first` stands for a batch of more than one dispatch.
    pub fn holds(&self, first: DispatchId) -> bool {
        self.held.contains_key(&first)
    }

    /// The dispatches `done` finished: the batch it stands for, each with
    /// its share of the service (or `done` alone, when it is no batch),
    /// appended to `out`.
    pub fn finish(&mut self, done: &Finished, out: &mut Vec<Finished>) {
        let Some(batch) = self.held.remove(&done.dispatch) else {
            out.push(*done);
            return;
        };
        let total: u128 = batch.iter().map(|d| u128::from(d.predicted.max(1))).sum();
        let mut given = 0;
        for (i, d) in batch.iter().enumerate() {
            let share = if i + 1 == batch.len() {
                done.service - given
            } else {
                (u128::from(done.service) * u128::from(d.predicted.max(1)) / total) as u64
            };
            given += share;
            out.push(Finished {
                dispatch: d.id,
                service: share,
                ..*done
            });
        }
        debug_assert_eq!(given, done.service, "a batch's shares sum to its service");
    }

    /// Takes back the other dispatches of the batch `first` stands for
    /// (the device refused it): each ends as its first does.
    pub fn take(&mut self, first: DispatchId) -> Vec<Dispatch> {
        let mut batch = self.held.remove(&first).unwrap_or_default();
        if !batch.is_empty() {
            batch.remove(0);
        }
        batch
    }
}
