//! iPipe's host migration (a workload's `migrate`,
//! [`isola_model::scenario::MigrateSpec`]): the workloads that may move off
//! an engine (the DPU's cores) form a group, checked every `every` (the
//! smallest of its members'). At a check, with `q` the engine's queued cost
//! per slot: if `q` is over a member's `up`, the member on the DPU whose
//! tenant has the most queued cost there (the first on a tie, and only one
//! with work queued) moves its new requests to the host; else, if `q` is
//! under the `down` of the member that moved last, that one moves back.
//! One move per check; between `down` and `up` nothing moves (hysteresis).
//! Requests already submitted stay where they are.

use isola_core::Nanos;
use isola_model::scenario::WorkloadSpec;

/// One workload that may move.
#[derive(Debug, Clone)]
struct Member {
    workload: usize,
    tenant: usize,
    up: Nanos,
    down: Nanos,
    on_host: bool,
}

/// The workloads that may move off one engine.
#[derive(Debug, Clone)]
struct Group {
    from: usize,
    slots: u64,
    every: Nanos,
    members: Vec<Member>,
    /// Members on the host, in the order they moved.
    moved: Vec<usize>,
}

/// A move the rule decided: workload `workload` now places its new
/// requests on the host (`on_host`) or back on its own stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Move {
    /// The workload (index among the run's workloads).
    pub workload: usize,
    /// Where its new requests go from now on.
    pub on_host: bool,
}

/// Every group of a run, and each tenant's moves so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct Migrations {
    groups: Vec<Group>,
    moves: Vec<u64>,
}

impl Migrations {
    /// The groups of `workloads` (each: its tenant and spec, in the run's
    /// order) among `tenants` tenants, with `slots(e)` engine `e`'s slots.
    pub(crate) fn new<'a>(
        workloads: impl Iterator<Item = (usize, &'a WorkloadSpec)>,
        tenants: usize,
        slots: impl Fn(usize) -> u32,
    ) -> Migrations {
        let mut groups: Vec<Group> = Vec::new();
        for (workload, (tenant, spec)) in workloads.enumerate() {
            let Some(m) = spec.migrate else { continue };
            let member = Member {
                workload,
                tenant,
                up: m.up,
                down: m.down,
                on_host: false,
            };
            match groups.iter_mut().find(|g| g.from == m.from) {
                Some(g) => {
                    g.every = g.every.min(m.every);
                    g.members.push(member);
                }
                None => groups.push(Group {
                    from: m.from,
                    slots: u64::from(slots(m.from).max(1)),
                    every: m.every,
                    members: vec![member],
                    moved: Vec::new(),
                }),
            }
        }
        let moves = if groups.is_empty() {
            Vec::new()
        } else {
            vec![0; tenants]
        };
        Migrations { groups, moves }
    }

    /// How many groups there are (each checked by its own event).
    pub(crate) fn len(&self) -> usize {
        self.groups.len()
    }

    /// Group `g`'s check period.
    pub(crate) fn every(&self, g: usize) -> Nanos {
        self.groups[g].every
    }

    /// Group `g`'s engine (the one its members move off).
    pub(crate) fn from(&self, g: usize) -> usize {
        self.groups[g].from
    }

    /// Applies the rule to group `g` with each tenant's queued cost on its
    /// engine (`queued_cost`, by tenant): the move it makes, if any.
    pub(crate) fn check(&mut self, g: usize, queued_cost: &[Nanos]) -> Option<Move> {
        let group = &mut self.groups[g];
        let queued = |t: usize| queued_cost.get(t).copied().unwrap_or(0);
        let per_slot = queued_cost.iter().sum::<Nanos>() / group.slots;
        let out = group
            .members
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.on_host && per_slot > m.up && queued(m.tenant) > 0)
            .fold(None, |best: Option<(usize, Nanos)>, (i, m)| match best {
                Some((_, q)) if q >= queued(m.tenant) => best,
                _ => Some((i, queued(m.tenant))),
            })
            .map(|(i, _)| i);
        let i = match out {
            Some(i) => {
                group.moved.push(i);
                i
            }
            None => {
                let &last = group.moved.last()?;
                if per_slot >= group.members[last].down {
                    return None;
                }
                group.moved.pop();
                last
            }
        };
        let m = &mut group.members[i];
        m.on_host = !m.on_host;
        self.moves[m.tenant] += 1;
        Some(Move {
            workload: m.workload,
            on_host: m.on_host,
        })
    }

    /// Each tenant's moves (empty when no workload migrates).
    pub(crate) fn into_moves(self) -> Vec<u64> {
        self.moves
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two tenants' workloads on an engine of 4 slots, `up` 1000 ns and
    /// `down` 200 ns queued a slot.
    fn two() -> Migrations {
        let member = |workload: usize| Member {
            workload,
            tenant: workload,
            up: 1_000,
            down: 200,
            on_host: false,
        };
        Migrations {
            groups: vec![Group {
                from: 0,
                slots: 4,
                every: 1_000_000,
                members: vec![member(0), member(1)],
                moved: Vec::new(),
            }],
            moves: vec![0, 0],
        }
    }

    #[test]
    fn the_most_queued_tenant_moves_above_up_and_back_below_down() {
        let mut m = two();
        // 4 slots: 4000 ns queued is 1000 a slot, not over `up`.
        assert_eq!(m.check(0, &[3_000, 1_000]), None);
        // 4004 ns is 1001 a slot: tenant 1, with the more queued, moves.
        let out = m.check(0, &[1_004, 3_000]);
        assert_eq!(
            out,
            Some(Move {
                workload: 1,
                on_host: true
            })
        );
        // Still over `up`: the other one moves too, one per check.
        assert_eq!(
            m.check(0, &[8_000, 0]),
            Some(Move {
                workload: 0,
                on_host: true
            })
        );
        assert_eq!(m.check(0, &[8_000, 0]), None, "nobody is left on the DPU");
        // 800 ns is 200 a slot: not under `down`; 796 is.
        assert_eq!(m.check(0, &[800, 0]), None);
        // The last to move comes back first, one per check.
        assert_eq!(
            m.check(0, &[796, 0]),
            Some(Move {
                workload: 0,
                on_host: false
            })
        );
        assert_eq!(
            m.check(0, &[0, 0]),
            Some(Move {
                workload: 1,
                on_host: false
            })
        );
        assert_eq!(m.check(0, &[0, 0]), None);
        assert_eq!(m.into_moves(), vec![2, 2]);
    }

    /// Between `down` and `up` nothing moves, whichever way the queue goes:
    /// no flapping.
    #[test]
    fn hysteresis_holds_between_down_and_up() {
        let mut m = two();
        assert!(m.check(0, &[5_000, 0]).is_some());
        for per_slot in [1_000, 200, 600, 999, 201, 1_000] {
            assert_eq!(m.check(0, &[per_slot * 4, 0]), None, "{per_slot} ns a slot");
        }
        assert_eq!(m.into_moves(), vec![1, 0]);
    }

    /// A tenant with nothing queued on the engine does not move, however
    /// loaded it is.
    #[test]
    fn a_tenant_with_nothing_queued_stays() {
        let mut m = two();
        assert_eq!(
            m.check(0, &[0, 9_000]),
            Some(Move {
                workload: 1,
                on_host: true
            })
        );
        assert_eq!(m.check(0, &[0, 9_000]), None);
    }
}
