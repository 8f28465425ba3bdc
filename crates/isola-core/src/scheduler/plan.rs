//! How a queued task is cut into dispatches: whole, in equal byte ranges,
//! or as its [`SubtaskPlanner`](crate::task::SubtaskPlanner) cut it. The
//! plan is fixed with its predicted costs when the task is planned, so that
//! taking a subtask asks no cost model.

use crate::cost::CostModel;
use crate::policy::HeadInfo;
use crate::task::{Subtask, Task};
use crate::units::{Bytes, Nanos};
use std::sync::Arc;

/// A task's cut into dispatches.
#[derive(Debug, Clone)]
pub(super) enum Plan {
    /// One dispatch of the whole task.
    Whole {
        /// Its predicted cost.
        cost: Nanos,
    },
    /// Ranges of `size` bytes, the last one shorter.
    Uniform {
        /// Bytes of each range but the last.
        size: Bytes,
        /// How many ranges.
        count: u32,
        /// Predicted cost of a range of `size` bytes.
        cost: Nanos,
        /// Predicted cost of the last range.
        last_cost: Nanos,
    },
    /// The task's planner's subtasks.
    Listed(Arc<Listed>),
}

/// A planner's subtasks, each with the bytes of the task it is charged and
/// its predicted cost.
#[derive(Debug)]
pub(super) struct Listed {
    subtasks: Vec<Subtask>,
    /// Bytes of the task each subtask stands for (they sum to the task's).
    charge: Vec<Bytes>,
    /// Predicted cost of each subtask.
    cost: Vec<Nanos>,
    /// Predicted cost of each subtask and of those after it.
    remaining: Vec<Nanos>,
    ordered: bool,
}

/// One dispatch of a plan.
#[derive(Debug, Clone, Copy)]
pub(super) struct Piece {
    /// Bytes of the task it is charged.
    pub(super) bytes: Bytes,
    /// Its predicted cost.
    pub(super) cost: Nanos,
    /// Its predicted cost and that of the task's dispatches after it.
    pub(super) remaining: Nanos,
    /// The subtask it serves; `None` for a whole task.
    pub(super) subtask: Option<Subtask>,
}

/// Most subtasks one task is split into: 65,536. A smaller split size is
/// enlarged for a larger task (a 1 MiB task splits into pieces of at
/// least 16 B), so one task cannot hold the dispatcher for long.
pub const MAX_SUBTASKS_PER_TASK: u64 = 1 << 16;

/// How a plan predicts its pieces: a model learned from measured service
/// (first, when it knows the operator), else the task's planner, else the
/// engine's configured model.
pub(super) trait TaskCost {
    /// The learned prediction for `bytes` of `task`'s operator, if any.
    fn learned(&self, _task: &Task, _bytes: Bytes) -> Option<Nanos> {
        None
    }
    /// The configured model's prediction.
    fn configured(&self, task: &Task, bytes: Bytes) -> Option<Nanos>;
}

impl<M: CostModel + ?Sized> TaskCost for M {
    fn configured(&self, task: &Task, bytes: Bytes) -> Option<Nanos> {
        self.predict(&task.op.name, bytes)
    }
}

impl Plan {
    /// `task` (its predicted cost filled in) in one dispatch: what
    /// [`Plan::new`] plans without a split size.
    #[inline]
    pub(super) fn whole(task: &Task) -> Plan {
        Plan::Whole {
            cost: task.predicted_cost.unwrap_or(0),
        }
    }

    /// Plans `task` (its predicted cost filled in) in pieces of about
    /// `split` bytes (`None`: whole), predicting each piece's cost with the
    /// task's planner, else `model`, else (when neither knows the operator)
    /// pro rata of the task's cost.
    pub(super) fn new<M: TaskCost + ?Sized>(task: &Task, split: Option<Bytes>, model: &M) -> Plan {
        let total = task.predicted_cost.unwrap_or(0);
        let Some(size) = split.filter(|&s| s > 0 && s < task.bytes) else {
            return Plan::whole(task);
        };
        // Enlarged if needed so that no task has more than
        // `MAX_SUBTASKS_PER_TASK` pieces: each is a dispatch, a hand-off
        // and a completion on the one dispatcher thread.
        let size = size.max(task.bytes.div_ceil(MAX_SUBTASKS_PER_TASK));
        let planner = task.planner.as_ref();
        // A piece is predicted at most at the task's limit, so the sums of
        // pieces the core keeps cannot overflow (the task itself was
        // refused above it).
        let cost_of = |bytes: Bytes| {
            model
                .learned(task, bytes)
                .or_else(|| planner.and_then(|p| p.0.predict(task, bytes)))
                .or_else(|| model.configured(task, bytes))
                .unwrap_or_else(|| (total as u128 * bytes as u128 / task.bytes.max(1) as u128) as Nanos)
                .min(crate::MAX_TASK_COST_NS)
        };
        if let Some(planner) = planner {
            return match planner
                .0
                .plan(task, size)
                .and_then(|s| Listed::new(task, s, cost_of))
            {
                Some(listed) => Plan::Listed(Arc::new(listed)),
                None => Plan::Whole { cost: total },
            };
        }
        let count = task.bytes.div_ceil(size);
        let last = task.bytes - (count - 1) * size;
        Plan::Uniform {
            size,
            count: count as u32,
            cost: cost_of(size),
            last_cost: cost_of(last),
        }
    }

    /// How many dispatches the task takes.
    #[inline]
    pub(super) fn count(&self) -> u32 {
        match self {
            Plan::Whole { .. } => 1,
            Plan::Uniform { count, .. } => *count,
            Plan::Listed(l) => l.subtasks.len() as u32,
        }
    }

    /// Whether each subtask may only start once the one before it completed.
    pub(super) fn ordered(&self) -> bool {
        matches!(self, Plan::Listed(l) if l.ordered)
    }

    /// Dispatch `index` of `task`, `sent` bytes of which were charged to
    /// the dispatches before it.
    #[inline(always)]
    pub(super) fn piece(&self, task: &Task, index: u32, sent: Bytes) -> Piece {
        debug_assert!(
            index < self.count(),
            "dispatch {index} of a {}-piece plan",
            self.count()
        );
        match self {
            Plan::Whole { cost } => Piece {
                bytes: task.bytes,
                cost: *cost,
                remaining: *cost,
                subtask: None,
            },
            Plan::Uniform {
                size,
                count,
                cost,
                last_cost,
            } => {
                let left = task.bytes - sent;
                let last = index + 1 == *count;
                debug_assert_eq!(last, left <= *size, "uniform ranges tile the task");
                // This range and the later ones: whole ranges, then the last.
                let remaining = (left - 1) / size * cost + last_cost;
                let bytes = left.min(*size);
                Piece {
                    bytes,
                    cost: if last { *last_cost } else { *cost },
                    remaining,
                    subtask: Some(Subtask {
                        task: task.id,
                        index,
                        count: *count,
                        offset: sent,
                        bytes,
                        ordered: false,
                    }),
                }
            }
            Plan::Listed(l) => {
                let i = index as usize;
                Piece {
                    bytes: l.charge[i],
                    cost: l.cost[i],
                    remaining: l.remaining[i],
                    subtask: Some(l.subtasks[i]),
                }
            }
        }
    }

    /// What a policy sees of dispatch `index` of `task` (see [`Plan::piece`]).
    #[inline]
    pub(super) fn head(&self, task: &Task, seq: u64, index: u32, sent: Bytes) -> HeadInfo {
        let piece = self.piece(task, index, sent);
        HeadInfo {
            seq,
            arrival: task.arrival,
            bytes: piece.bytes,
            cost: piece.cost,
            remaining_cost: piece.remaining,
            task_cost: task.predicted_cost.unwrap_or(0),
            deadline: task.deadline,
        }
    }
}

impl Listed {
    /// Checks a planner's subtasks (indexed in order, counted alike, one
    /// ordering, fitting a `u32`, not empty) and charges each the share of
    /// the task's bytes its range covers. `None` (the task then goes whole)
    /// for a plan of one subtask, or one that breaks those rules: a
    /// planner's bug, which debug builds stop at.
    fn new(task: &Task, subtasks: Vec<Subtask>, cost_of: impl Fn(Bytes) -> Nanos) -> Option<Listed> {
        let n = subtasks.len();
        let ordered = subtasks.first()?.ordered;
        if n as u64 > MAX_SUBTASKS_PER_TASK {
            return None;
        }
        let well_formed = subtasks.iter().enumerate().all(|(i, s)| {
            s.index as usize == i && s.count as usize == n && s.ordered == ordered && s.task == task.id
        });
        debug_assert!(
            well_formed,
            "a planner's subtasks are indexed 0..count in order: {subtasks:?}"
        );
        let planned: u128 = subtasks.iter().map(|s| s.bytes as u128).sum();
        if !well_formed || n < 2 || planned == 0 {
            return None;
        }
        // Cumulative rounding, so that the charges sum to the task's bytes.
        let mut charge = Vec::with_capacity(n);
        let mut covered = 0u128;
        let mut charged = 0u64;
        for s in &subtasks {
            covered += s.bytes as u128;
            let upto = (task.bytes as u128 * covered / planned) as u64;
            charge.push(upto - charged);
            charged = upto;
        }
        debug_assert_eq!(charged, task.bytes, "subtask charges tile the task");
        let cost: Vec<Nanos> = charge.iter().map(|&b| cost_of(b)).collect();
        let mut remaining = cost.clone();
        for i in (0..n - 1).rev() {
            remaining[i] = remaining[i].saturating_add(remaining[i + 1]);
        }
        Some(Listed {
            subtasks,
            charge,
            cost,
            remaining,
            ordered,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::AffineCost;
    use crate::engine::EngineId;
    use crate::task::{OpSpec, PlannerRef, SubtaskPlanner, TaskId};
    use crate::tenant::TenantId;
    use proptest::prelude::*;

    fn task(bytes: Bytes, planner: Option<PlannerRef>) -> Task {
        Task {
            id: TaskId(7),
            tenant: TenantId(0),
            engine: EngineId(0),
            op: OpSpec::named("generic"),
            bytes,
            arrival: 0,
            deadline: None,
            predicted_cost: Some(bytes * 2),
            planner,
            flow: 0,
        }
    }

    /// Plans in ranges of a scaled size, as erasure coding plans shard ranges.
    struct Scaled(u64, bool);
    impl SubtaskPlanner for Scaled {
        fn plan(&self, task: &Task, split: Bytes) -> Option<Vec<Subtask>> {
            let mut s = Subtask::ranges(task.id, task.bytes / self.0, (split / self.0).max(1), self.1);
            s.iter_mut().for_each(|s| s.ordered = self.1);
            Some(s)
        }
    }

    fn walk(plan: &Plan, t: &Task) -> Vec<Piece> {
        let mut sent = 0;
        (0..plan.count())
            .map(|i| {
                let p = plan.piece(t, i, sent);
                sent += p.bytes;
                p
            })
            .collect()
    }

    /// A split size far below the task's size is enlarged so that no task
    /// has more than `MAX_SUBTASKS_PER_TASK` pieces: a 1 MiB task split
    /// into 4-byte pieces held the one dispatcher thread for 34 s (issue
    /// 14). Listed plans with more pieces run whole.
    #[test]
    fn no_task_has_more_than_the_most_subtasks() {
        let model = AffineCost::new(100.0, 1.0).unwrap();
        for listed in [false, true] {
            let planner = listed.then(|| PlannerRef(Arc::new(Scaled(1, false))));
            let t = task(1 << 20, planner);
            let plan = Plan::new(&t, Some(4), &model);
            assert!(
                u64::from(plan.count()) <= MAX_SUBTASKS_PER_TASK,
                "{}",
                plan.count()
            );
            assert!(plan.count() > 1);
            let pieces = walk(&plan, &t);
            assert_eq!(pieces.iter().map(|p| p.bytes).sum::<u64>(), 1 << 20);
        }
    }

    proptest! {
        /// Whatever the size and planner, the pieces tile the task's bytes,
        /// their costs add up to the first piece's remaining cost, and each
        /// remaining cost is the sum of its own and the later ones.
        #[test]
        fn pieces_tile_the_task(bytes in 1u64..1_000_000, split in 0u64..100_000, scale in 1u64..40, ordered: bool, listed: bool) {
            let planner = listed.then(|| PlannerRef(Arc::new(Scaled(scale, ordered))));
            let t = task(bytes, planner);
            let model = AffineCost::new(100.0, 1.0).unwrap();
            let plan = Plan::new(&t, Some(split), &model);
            let pieces = walk(&plan, &t);
            prop_assert_eq!(pieces.iter().map(|p| p.bytes).sum::<u64>(), bytes);
            for (i, p) in pieces.iter().enumerate() {
                let later: u64 = pieces[i..].iter().map(|p| p.cost).sum();
                prop_assert_eq!(p.remaining, later);
                if let Some(s) = p.subtask {
                    prop_assert_eq!(s.index as usize, i);
                    prop_assert_eq!(s.count as usize, pieces.len());
                }
            }
            prop_assert_eq!(plan.ordered(), listed && ordered && pieces.len() > 1);
        }
    }

    #[test]
    fn a_task_no_larger_than_the_split_goes_whole() {
        let t = task(4096, None);
        let plan = Plan::new(&t, Some(4096), &AffineCost::new(0.0, 1.0).unwrap());
        assert_eq!(plan.count(), 1);
        assert!(plan.piece(&t, 0, 0).subtask.is_none());
    }
}
