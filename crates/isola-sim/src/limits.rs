//! The limits that keep one simulated run from taking the machine: the
//! event budget (`[run] max_events`, also checked before a run against its
//! open-loop arrivals), no progress at one instant, simulated time past
//! [`MAX_SIMULATED_NS`] without a duration, metrics windows
//! (`[run] max_windows`), and tasks the core refused as costing ages.
//! The run guard's check runs on every event of the event loop, so its
//! passing path is a handful of integer comparisons; messages are made
//! only for the error.

use crate::sim::SimError;
use isola_core::{Nanos, NANOS_PER_SEC};
use isola_model::quantity::format_duration;
use isola_model::scenario::{ArrivalSpec, Scenario};

/// Most events a run may process at one instant of simulated time before
/// it is stopped as making no progress: a closed loop whose service time
/// is zero would otherwise run forever at t = 0.
pub const MAX_EVENTS_AT_ONE_INSTANT: u64 = 1_000_000;

/// The latest simulated time a run without a `duration` may reach: the
/// largest duration a scenario may state (`quantity::MAX_DURATION_NS`).
/// Service times that would pass it (a transfer at 1 bit/s) stop the run
/// with an error instead of overflowing the clock.
pub const MAX_SIMULATED_NS: Nanos = isola_model::quantity::MAX_DURATION_NS;

/// Refuses a run of `scenario` lasting `horizon` whose open-loop arrivals
/// alone (of tenant `solo` only, if given) would exceed the event budget:
/// arrivals at 10^15/s for 20 ms would otherwise run for days.
pub(crate) fn check_arrival_budget(
    scenario: &Scenario,
    horizon: Option<Nanos>,
    solo: Option<usize>,
) -> Result<(), SimError> {
    let Some(h) = horizon else {
        return Ok(());
    };
    let secs = h as f64 / NANOS_PER_SEC as f64;
    let budget = scenario.run.max_events;
    let mut total = 0.0;
    let workloads = scenario
        .tenants
        .iter()
        .enumerate()
        .flat_map(|(i, t)| t.workloads.iter().map(move |w| (i, t, w)));
    for (i, t, w) in workloads {
        if solo.is_some_and(|s| s != i) {
            continue;
        }
        let rate = match &w.arrival {
            ArrivalSpec::Poisson(r) | ArrivalSpec::Constant(r) | ArrivalSpec::Uniform(r) => *r,
            ArrivalSpec::OnOff { on, off, rate } => rate * *on as f64 / (*on + *off) as f64,
            ArrivalSpec::Steps(steps) => steps.iter().map(|s| s.1).fold(0.0, f64::max),
            ArrivalSpec::Closed(_) | ArrivalSpec::Trace(_) => 0.0,
        };
        let arrivals = (rate * secs).min(w.count.map_or(f64::INFINITY, |c| c as f64));
        total += arrivals * w.stages.len().max(1) as f64;
        if total > budget as f64 {
            return Err(SimError::Limit {
                limit: "max_events",
                message: format!(
                    "the arrivals alone would make about {total:.3e} events over the run's {}, above the event \
                     budget of {budget} (tenant `{}` contributes {arrivals:.3e} arrivals): lower the rate or the \
                     duration, or raise [run] max_events",
                    format_duration(h),
                    t.name
                ),
            });
        }
    }
    Ok(())
}

/// What a run has done that its limits judge.
#[derive(Debug)]
pub(crate) struct RunGuard {
    /// Events processed.
    pub(crate) events: u64,
    /// The current instant and the events processed at it.
    now: Nanos,
    at_this_instant: u64,
    /// The run's limits, read from its scenario once (issue 34): its
    /// event budget, and the time its windows end (`window x
    /// max_windows`; never reached by a run with a duration, which its
    /// horizon ends instead).
    max_events: u64,
    windows_end: Nanos,
    /// Whether one of the two notes below was taken (the check's one
    /// comparison for both).
    noted: bool,
    /// The first event time past [`MAX_SIMULATED_NS`] (runs without a
    /// duration).
    overrun: Option<Nanos>,
    /// The first task the core refused as costing more than
    /// `MAX_TASK_COST_NS`: (tenant, engine, predicted cost).
    too_costly: Option<(usize, usize, Nanos)>,
}

impl RunGuard {
    /// The guard of a run of `scenario` lasting `horizon`, if it has one.
    pub(crate) fn new(scenario: &Scenario, horizon: Option<Nanos>) -> Self {
        let run = &scenario.run;
        RunGuard {
            events: 0,
            now: 0,
            at_this_instant: 0,
            max_events: run.max_events,
            windows_end: match horizon {
                Some(_) => Nanos::MAX,
                None => run.window.saturating_mul(run.max_windows),
            },
            noted: false,
            overrun: None,
            too_costly: None,
        }
    }

    /// Counts an event at `at`.
    #[inline]
    pub(crate) fn event(&mut self, at: Nanos) {
        self.at_this_instant = if at == self.now {
            self.at_this_instant + 1
        } else {
            1
        };
        self.now = at;
        self.events += 1;
    }

    /// Notes an event that would fall at `at`, past [`MAX_SIMULATED_NS`].
    pub(crate) fn overran(&mut self, at: Nanos) {
        self.overrun.get_or_insert(at);
        self.noted = true;
    }

    /// Notes a task of tenant `t` on engine `e` the core refused as
    /// predicted to take `cost` ns.
    pub(crate) fn too_costly(&mut self, t: usize, e: usize, cost: Nanos) {
        self.too_costly.get_or_insert((t, e, cost));
        self.noted = true;
    }

    /// Whether the run of `scenario` (the one the guard was made for)
    /// stays within its limits. Asked at every event: the comparisons
    /// inline, the error apart.
    #[inline]
    pub(crate) fn check(&self, scenario: &Scenario) -> Result<(), SimError> {
        // `now / window < max_windows`, without a division per event
        // (`Nanos::MAX` for a run with a duration: no time is at or past it).
        let within = self.events <= self.max_events
            && self.at_this_instant <= MAX_EVENTS_AT_ONE_INSTANT
            && !self.noted
            && self.now < self.windows_end;
        if within {
            return Ok(());
        }
        self.exceeded(scenario)
    }

    /// The limit the run exceeded, as an error ([`RunGuard::check`] found one).
    #[cold]
    #[inline(never)]
    fn exceeded(&self, scenario: &Scenario) -> Result<(), SimError> {
        let run = &scenario.run;
        let windows = self.now / run.window;
        let at = format_duration(self.now);
        let (limit, message) = if self.events > run.max_events {
            (
                "max_events",
                format!(
                    "stopped after {} events at simulated time {at}: raise [run] max_events, or shorten the run",
                    run.max_events
                ),
            )
        } else if self.at_this_instant > MAX_EVENTS_AT_ONE_INSTANT {
            (
                "events at one instant",
                format!(
                    "simulated time stopped advancing at {at}: {MAX_EVENTS_AT_ONE_INSTANT} events at one instant \
                     (a closed loop whose service time is zero?)"
                ),
            )
        } else if let Some((t, e, cost)) = self.too_costly {
            (
                "task cost",
                format!(
                    "tenant `{}`'s task on engine `{}` is predicted to take {cost} ns, above the {} ns a task may \
                     (a bandwidth of bits per second?): check the engine's and the workload's models",
                    scenario.tenants[t].name,
                    scenario.engines[e].name,
                    isola_core::MAX_TASK_COST_NS
                ),
            )
        } else if let Some(t) = self.overrun {
            (
                "simulated time",
                format!(
                    "an event was due at {t} ns, past the longest run this simulator takes ({}): a service time \
                     of ages (a bandwidth of bits per second?); give the run a duration or check the models",
                    format_duration(MAX_SIMULATED_NS)
                ),
            )
        } else {
            (
                "max_windows",
                format!(
                    "the run reached {at}, {windows} windows of {}, above max_windows = {}: give [run] a wider \
                     window or raise max_windows",
                    format_duration(run.window),
                    run.max_windows
                ),
            )
        };
        Err(SimError::Limit { limit, message })
    }
}
