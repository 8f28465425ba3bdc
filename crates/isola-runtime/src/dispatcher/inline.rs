//! Small tasks of a worker engine run on the dispatcher's own thread
//! while the engine's workers have nothing (`EngineConfig::inline_below`).
//!
//! A task handed to a worker crosses two threads more than one the
//! dispatcher runs itself: the hand-off to the worker, and the worker's
//! report back (its completion, on the way to the tenant). On a machine
//! with fewer cores than polling threads each crossing waits for a core
//! (docs/perf.md, "Issue 34: the worker path's round trip": a token passed
//! round three polling threads on two cores takes 2.1-2.4 us, round two
//! 0.4-0.6 us), which is many times a 64 B task's service. So a whole task the
//! core predicts to be shorter than that runs here, as an engine run on
//! the dispatcher runs every task, but only while none of the engine's
//! workers has work: the task is then the engine's only one, served at
//! once as an idle worker would serve it, timed and charged alike, in
//! worker 0's place in the engine's busy time (free: nothing is handed to
//! it while the dispatcher runs this). The engine's slots, order and
//! shares are the core's as before; only where the work runs changes.
//!
//! What it must not do: hold the dispatcher longer than the hand-off it
//! saves. A prediction can be wrong (the core learns costs as it goes,
//! and a tenant's input may be costlier than its size says, or its own
//! operator never end), so only operators that check a watch between
//! bounded chunks of work (`Operator::stoppable`: the registry's
//! checksums, hashes, ciphers...) run here, each watched: one still
//! running at [`INLINE_OVERRUN`] times the limit is stopped and handed
//! to the engine's workers to run from the start, and its tenant's tasks
//! on that engine go to the workers for a while: [`FIRST_DEMOTION_NS`],
//! doubled at each stop up to [`LAST_DEMOTION_NS`], and then tried here
//! again; a run here to its end starts the doubling over (a stop may be
//! the machine's: a run preempted by another thread for 16 us is stopped
//! too). The limit counts from the operator's first look at its watch,
//! so a task of one chunk of work (every small one) is never stopped: it
//! runs to its end, and two such runs of a tenant in a row past the limit
//! demote it as a stop does (one alone may be an operator's first, cold
//! run). A tenant whose tasks are all costlier than predicted so holds
//! the dispatcher for two tasks, or 16 us, once every 10 s at most; the
//! stopped run's time is the engine's (its busy time counts it) but no
//! tenant's charge.

use isola_core::{Dispatch, Nanos};

/// How far over the engine's `inline_below` a task run here may run
/// before it is stopped: 8 times.
pub const INLINE_OVERRUN: u64 = 8;

/// How long a tenant's tasks go to the workers after its first stop: 10 ms.
pub(crate) const FIRST_DEMOTION_NS: Nanos = 10_000_000;

/// The longest they do, however often its tasks were stopped: 10 s.
pub(crate) const LAST_DEMOTION_NS: Nanos = 10_000_000_000;

/// Which of one worker engine's tasks run on the dispatcher (the
/// dispatcher keeps where they run: the engine's worker 0's place).
pub(crate) struct Inline {
    /// Whole tasks predicted at most this long run here, ns (> 0).
    below: Nanos,
    /// Per tenant: its record of runs here.
    demoted: Vec<Demotion>,
}

/// One tenant's record of its runs on the dispatcher.
#[derive(Debug, Clone, Copy, Default)]
struct Demotion {
    /// Its tasks go to the workers until then, ns.
    until: Nanos,
    /// Its runs here stopped (or ended late twice) since one ran on time.
    stops: u32,
    /// Its last run here ended past the limit.
    late: bool,
}

impl Inline {
    /// For an engine whose `inline_below` is `below` ns (`None` when 0:
    /// nothing runs here).
    pub(super) fn new(below: Nanos) -> Option<Inline> {
        (below > 0).then_some(Inline {
            below,
            demoted: Vec::new(),
        })
    }

    /// Whether dispatch `d` runs here at `now`: a whole task (or a
    /// pipeline's stage) predicted within the limit, of a tenant not
    /// demoted, while the engine's workers have nothing (`workers_idle`:
    /// every piece handed to them has ended, `EngineBusy::workers_idle`).
    pub(super) fn takes(&self, d: &Dispatch, workers_idle: bool, now: Nanos) -> bool {
        workers_idle
            && d.subtask.is_none()
            && d.task.predicted_cost <= self.below
            && self
                .demoted
                .get(d.task.tenant.index())
                .is_none_or(|t| t.until <= now)
    }

    /// How long a task may run here before it is stopped, ns.
    pub(super) fn limit(&self) -> Nanos {
        self.below.saturating_mul(INLINE_OVERRUN)
    }

    /// A task of `tenant` ran here to its end within the limit: its next
    /// stop, if any, demotes it for [`FIRST_DEMOTION_NS`] again.
    pub(super) fn ran_to_end(&mut self, tenant: usize) {
        if let Some(t) = self.demoted.get_mut(tenant) {
            t.stops = 0;
            t.late = false;
        }
    }

    /// A task of `tenant` ran here to its end at `now`, but past the
    /// limit: the second such run in a row demotes it as a stop does.
    pub(super) fn ran_late(&mut self, tenant: usize, now: Nanos) {
        let t = self.tenant(tenant);
        if std::mem::replace(&mut t.late, true) {
            t.late = false;
            self.demote(tenant, now);
        }
    }

    /// `tenant`'s record, made if it has none.
    fn tenant(&mut self, tenant: usize) -> &mut Demotion {
        if self.demoted.len() <= tenant {
            self.demoted.resize(tenant + 1, Demotion::default());
        }
        &mut self.demoted[tenant]
    }

    /// A task of `tenant` ran past [`Inline::limit`] here at `now`: its
    /// tasks go to the workers for twice as long as after its last stop
    /// ([`FIRST_DEMOTION_NS`] the first time, [`LAST_DEMOTION_NS`] at most).
    pub(super) fn demote(&mut self, tenant: usize, now: Nanos) {
        let t = self.tenant(tenant);
        let period = FIRST_DEMOTION_NS
            .saturating_mul(1u64 << t.stops.min(20))
            .min(LAST_DEMOTION_NS);
        t.stops = t.stops.saturating_add(1);
        t.until = now.saturating_add(period);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Until when `tenant`'s tasks go to the workers.
    fn until(i: &Inline, tenant: usize) -> Nanos {
        i.demoted.get(tenant).map_or(0, |d| d.until)
    }

    #[test]
    fn a_stop_demotes_only_its_tenant_for_twice_as_long_each_time() {
        let mut i = Inline::new(2_000).expect("a limit above 0");
        assert_eq!(i.limit(), 16_000);
        i.demote(3, 1_000);
        assert_eq!(until(&i, 3), 1_000 + FIRST_DEMOTION_NS);
        assert_eq!((until(&i, 0), until(&i, 4)), (0, 0));
        i.demote(3, 5_000);
        assert_eq!(until(&i, 3), 5_000 + 2 * FIRST_DEMOTION_NS);
        for _ in 0..40 {
            i.demote(3, 0);
        }
        assert_eq!(
            until(&i, 3),
            LAST_DEMOTION_NS,
            "never longer than the last period"
        );
        i.ran_to_end(3);
        i.demote(3, 7);
        assert_eq!(
            until(&i, 3),
            7 + FIRST_DEMOTION_NS,
            "a run to its end starts over"
        );
    }

    #[test]
    fn two_late_runs_in_a_row_demote_one_does_not() {
        let mut i = Inline::new(2_000).expect("a limit above 0");
        i.ran_late(1, 100);
        assert_eq!(until(&i, 1), 0, "one late run may be a cold first one");
        i.ran_to_end(1);
        i.ran_late(1, 200);
        assert_eq!(until(&i, 1), 0, "an on-time run in between starts over");
        i.ran_late(1, 300);
        assert_eq!(until(&i, 1), 300 + FIRST_DEMOTION_NS);
    }

    #[test]
    fn nothing_runs_here_with_a_limit_of_zero() {
        assert!(Inline::new(0).is_none());
    }
}
