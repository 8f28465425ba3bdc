//! Task and subtask descriptors: what a tenant asks an engine to do. The core
//! never sees an operator's bytes, only their size.

use crate::engine::EngineId;
use crate::tenant::TenantId;
use crate::units::{Bytes, Nanos};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex};

/// Unique id of a task, chosen by the driver that submits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TaskId(pub u64);

/// An operator and its parameters (`key=value` pairs, in the order given).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OpSpec {
    /// Operator name, e.g. `ec-encode`, `aes-gcm-encrypt`, `generic`.
    pub name: String,
    /// Operator parameters, e.g. `("k", "10")`.
    pub params: Vec<(String, String)>,
}

impl OpSpec {
    /// An operator with no parameters, interned (see [`OpRef`]).
    pub fn named(name: impl AsRef<str>) -> OpRef {
        OpRef::named(name.as_ref())
    }

    /// This operator, interned (see [`OpRef`]).
    pub fn intern(self) -> OpRef {
        OpRef::intern(self)
    }
}

/// An interned [`OpSpec`]: a plain reference, so a task carries and drops
/// its operator without touching a reference count (two locked
/// instructions a task when it was an `Arc`). Each distinct operator and
/// parameters is stored once for the life of the process, so the table
/// grows with the operator configurations a process names (the runtime
/// builds and keeps each configuration once anyway), never with its tasks.
/// Equal specs give the same reference, so equality and hashing are the
/// pointer's.
#[derive(Clone, Copy)]
pub struct OpRef(&'static OpSpec);

/// Every interned operator, and the parameterless ones by name too (so
/// [`OpRef::named`] finds one without building a spec). Written by hand on
/// std (`LazyLock`, `Mutex`, `HashSet`): a dozen lines, not worth a
/// dependency.
#[derive(Default)]
struct Interned {
    specs: HashSet<&'static OpSpec>,
    named: HashMap<&'static str, &'static OpSpec>,
}

static INTERNED: LazyLock<Mutex<Interned>> = LazyLock::new(|| Mutex::new(Interned::default()));

impl Interned {
    fn get_or_insert(&mut self, spec: OpSpec) -> OpRef {
        if let Some(known) = self.specs.get(&spec) {
            return OpRef(known);
        }
        let stored: &'static OpSpec = Box::leak(Box::new(spec));
        self.specs.insert(stored);
        if stored.params.is_empty() {
            self.named.insert(stored.name.as_str(), stored);
        }
        OpRef(stored)
    }
}

impl OpRef {
    /// The interned copy of `spec` (stored on first use).
    pub fn intern(spec: OpSpec) -> OpRef {
        INTERNED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(spec)
    }

    /// The interned operator `name` with no parameters (allocates only the
    /// first time a name is seen).
    pub fn named(name: &str) -> OpRef {
        let mut table = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = table.named.get(name) {
            return OpRef(known);
        }
        table.get_or_insert(OpSpec {
            name: name.to_string(),
            params: Vec::new(),
        })
    }

    /// The operator, for as long as the process runs.
    pub fn spec(self) -> &'static OpSpec {
        self.0
    }
}

impl std::ops::Deref for OpRef {
    type Target = OpSpec;
    fn deref(&self) -> &OpSpec {
        self.0
    }
}

impl From<OpSpec> for OpRef {
    fn from(spec: OpSpec) -> OpRef {
        OpRef::intern(spec)
    }
}

impl PartialEq for OpRef {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for OpRef {}

impl std::hash::Hash for OpRef {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(self.0, state)
    }
}

impl std::fmt::Debug for OpRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// One unit of work a tenant submits to one engine. The tenant sees exactly
/// one completion per task, never a partial one.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Driver-chosen id, echoed in the dispatch and the completion.
    pub id: TaskId,
    /// Who submitted it.
    pub tenant: TenantId,
    /// Which engine serves it.
    pub engine: EngineId,
    /// What to run (interned: a task copies and drops a reference).
    pub op: OpRef,
    /// Input size.
    pub bytes: Bytes,
    /// When it was submitted.
    pub arrival: Nanos,
    /// Optional absolute deadline.
    pub deadline: Option<Nanos>,
    /// Predicted service time on its engine. `None` lets the scheduler fill it
    /// in from the engine's cost model at submit.
    pub predicted_cost: Option<Nanos>,
    /// How the task is cut into subtasks when its engine splits it (see
    /// [`SubtaskPlanner`]); `None`: into equal byte ranges.
    pub planner: Option<PlannerRef>,
    /// Which of its tenant's flow queues it waits in (an index into the
    /// tenant's [`crate::Slo::flows`]; 0 for a tenant with one queue).
    pub flow: u32,
}

/// Cuts a task into subtasks in its operator's own terms. The scheduler
/// decides *whether* a task is split and *about how large* its subtasks are
/// (the engine's split rule, adapted by the policy); a planner says *where*
/// the cuts fall, since an operator may need them aligned (AES-GCM to
/// 16-byte blocks) or in its own units (erasure coding plans ranges of each
/// data shard). The live runtime plans with the operator; the simulator,
/// which has no operator, uses equal byte ranges ([`Subtask::ranges`]).
///
/// Each subtask is charged (cost model, rate shapers, accounting) the share
/// of the task's bytes its range covers of all the ranges planned.
pub trait SubtaskPlanner: Send + Sync {
    /// The subtasks of `task` when pieces of about `split` bytes of its
    /// input are wanted, in order (indices from 0, `count` on each), or
    /// `None` when it cannot or need not be split (it is then served whole).
    /// `ordered` subtasks are dispatched one after another, each once the
    /// one before it has completed.
    fn plan(&self, task: &Task, split: Bytes) -> Option<Vec<Subtask>>;

    /// Predicted service time of a subtask charged `bytes` of `task`, when
    /// the planner knows better than the engine's cost model (a tenant
    /// whose tasks cost differently); `None`: the engine's model decides.
    fn predict(&self, _task: &Task, _bytes: Bytes) -> Option<Nanos> {
        None
    }
}

/// The planner of tasks that cannot be split (an operator with no way to
/// cut its input): they are served whole whatever their engine's split rule.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unsplittable;

impl SubtaskPlanner for Unsplittable {
    fn plan(&self, _task: &Task, _split: Bytes) -> Option<Vec<Subtask>> {
        None
    }
}

/// A shared [`SubtaskPlanner`], compared by identity.
#[derive(Clone)]
pub struct PlannerRef(pub Arc<dyn SubtaskPlanner>);

impl std::fmt::Debug for PlannerRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PlannerRef(..)")
    }
}

impl PartialEq for PlannerRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// A contiguous byte range of a task, served as its own dispatch. Subtasks of
/// one task are reassembled before the tenant sees a completion; `ordered`
/// subtasks (hash state carried from one to the next) must run in index order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subtask {
    /// The task this is part of.
    pub task: TaskId,
    /// Position among the task's subtasks, from 0.
    pub index: u32,
    /// How many subtasks the task was split into.
    pub count: u32,
    /// First byte of the range, from the start of the task's input.
    pub offset: Bytes,
    /// Length of the range.
    pub bytes: Bytes,
    /// Whether subtask `index` may only start after `index - 1` completed.
    pub ordered: bool,
}

impl Subtask {
    /// Splits `task_bytes` bytes into ranges of `chunk` bytes (the last one
    /// shorter when `chunk` does not divide the size). A zero `chunk`, or one
    /// at least as large as the task, gives a single subtask.
    pub fn ranges(task: TaskId, task_bytes: Bytes, chunk: Bytes, ordered: bool) -> Vec<Subtask> {
        let chunk = if chunk == 0 || chunk >= task_bytes {
            task_bytes.max(1)
        } else {
            // Enlarged if needed so the count fits the `u32` index.
            chunk.max(task_bytes.div_ceil(u32::MAX as u64))
        };
        let count = task_bytes.div_ceil(chunk).max(1);
        (0..count)
            .map(|i| {
                let offset = i * chunk;
                Subtask {
                    task,
                    index: i as u32,
                    count: count as u32,
                    offset,
                    bytes: chunk.min(task_bytes - offset.min(task_bytes)),
                    ordered,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn subtask_ranges_cover_the_task_exactly(bytes in 0u64..100_000, chunk in 0u64..10_000) {
            let parts = Subtask::ranges(TaskId(1), bytes, chunk, true);
            let mut next = 0;
            for (i, p) in parts.iter().enumerate() {
                prop_assert_eq!(p.index as usize, i);
                prop_assert_eq!(p.count as usize, parts.len());
                prop_assert_eq!(p.offset, next);
                next += p.bytes;
            }
            prop_assert_eq!(next, bytes);
        }

        /// Interned references are equal exactly when the specs are equal
        /// by content (`OpSpec`'s derived equality), and each reads back
        /// its own spec.
        #[test]
        fn interned_operators_are_equal_exactly_when_their_specs_are(
            a in ("[ab]{1,2}", proptest::collection::vec(("[kl]", "[12]"), 0..2)),
            b in ("[ab]{1,2}", proptest::collection::vec(("[kl]", "[12]"), 0..2)),
        ) {
            let spec_a = OpSpec { name: a.0, params: a.1 };
            let spec_b = OpSpec { name: b.0, params: b.1 };
            let (ref_a, ref_b) = (spec_a.clone().intern(), spec_b.clone().intern());
            prop_assert_eq!(ref_a == ref_b, spec_a == spec_b);
            prop_assert_eq!(&*ref_a, &spec_a);
            prop_assert_eq!(ref_b.spec(), &spec_b);
            if spec_a.params.is_empty() {
                prop_assert_eq!(OpSpec::named(&spec_a.name), ref_a);
            }
        }
    }
}
