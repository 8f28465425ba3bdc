//! Slowing a scenario's arrivals down for a live run on a small machine:
//! every open-loop rate divided by a factor, every time of the arrival
//! processes and the run (duration, window, starts, on/off periods, rate
//! steps, trace times) multiplied by it, so a run sees the same number of
//! arrivals in the same pattern, spread over a longer wall time, and every
//! tenant's reservation and limit divided by it, so they bind as written
//! (`isola_core::Slo::scaled`). Service
//! times are this machine's own and are not scaled; closed loops keep
//! their number in flight. A live run on this 2-core machine cannot
//! submit a million tasks a second (OSMOSIS' DMA scenario asks that of its
//! victim): [`auto_factor`] picks the factor that brings the scenario's
//! summed open-loop rate to [`LIVE_RATE_CAP`], and the run says so.

use isola_model::scenario::ArrivalSpec;
use isola_model::Scenario;

/// Summed open-loop arrival rate a live run offers at most before it is
/// slowed down: 10,000 tasks a second. One dispatcher thread carries some
/// 70,000 dispatches a second here beside the workers and the tenants'
/// drivers (OSMOSIS' DMA scenario, WRR: 69k tasks/s of two stages each on
/// a quiet machine), half that while other programs build on the other
/// core; a pipeline's task is a dispatch per stage, and a policy that
/// gives each tenant half an engine must leave an open-loop tenant room.
pub const LIVE_RATE_CAP: f64 = 10_000.0;

/// The scenario's summed open-loop arrival rate, tasks/s (closed loops and
/// traces count nothing: a trace's rate is its rows').
pub fn open_loop_rate(scenario: &Scenario) -> f64 {
    scenario
        .tenants
        .iter()
        .flat_map(|t| &t.workloads)
        .map(|w| match &w.arrival {
            ArrivalSpec::Poisson(r) | ArrivalSpec::Constant(r) | ArrivalSpec::Uniform(r) => *r,
            ArrivalSpec::OnOff { rate, .. } => *rate,
            ArrivalSpec::Steps(steps) => steps.iter().map(|s| s.1).fold(0.0, f64::max),
            ArrivalSpec::Trace(rows) => match (rows.first(), rows.last()) {
                (Some(a), Some(b)) if b.time > a.time => rows.len() as f64 * 1e9 / (b.time - a.time) as f64,
                _ => 0.0,
            },
            ArrivalSpec::Closed(_) => 0.0,
        })
        .sum()
}

/// The longest a slowed run may last: 2 s of wall time (or its own
/// duration, if longer). A scenario asking far more than this machine can
/// offer (a hostile 100M tasks/s) is slowed only this far, its generator
/// falls behind and the run says so, rather than running for hours.
pub const MAX_SLOWED_DURATION_NS: u64 = 2_000_000_000;

/// The most a run without a duration (ending by task counts) is slowed.
pub const MAX_FACTOR_WITHOUT_DURATION: f64 = 100.0;

/// The slow-down a live run of `scenario` gets: 1 when its open-loop rate
/// is within [`LIVE_RATE_CAP`], else the factor bringing it there, at most
/// what keeps the run within [`MAX_SLOWED_DURATION_NS`] (or
/// [`MAX_FACTOR_WITHOUT_DURATION`] for a run that ends by its counts).
pub fn auto_factor(scenario: &Scenario) -> f64 {
    let wanted = (open_loop_rate(scenario) / LIVE_RATE_CAP).max(1.0);
    let most = match scenario.run.duration {
        Some(d) if d > 0 => (MAX_SLOWED_DURATION_NS as f64 / d as f64).max(1.0),
        _ => MAX_FACTOR_WITHOUT_DURATION,
    };
    wanted.min(most)
}

/// `scenario` with its arrivals slowed down `factor` times (see the module
/// comment); a factor of 1 or less, or not finite, changes nothing.
pub fn slowed(scenario: &Scenario, factor: f64) -> Scenario {
    let mut s = scenario.clone();
    if !(factor.is_finite() && factor > 1.0) {
        return s;
    }
    let time = |t: u64| (t as f64 * factor).round().min(u64::MAX as f64) as u64;
    s.run.duration = s.run.duration.map(time);
    s.run.window = time(s.run.window);
    // The tenants' reservations and limits slow down with their arrivals,
    // so each is as binding as in the scenario; service times are this
    // machine's own, and so are the objectives and budgets on them.
    let scale = isola_core::TimeScale {
        rates_over: factor,
        times_by: 1.0,
    };
    for t in &mut s.tenants {
        (t.slo, t.overrides) = t.scaled_slo(scale);
        for w in &mut t.workloads {
            w.start = time(w.start);
            w.arrival = match std::mem::replace(&mut w.arrival, ArrivalSpec::Closed(0)) {
                ArrivalSpec::Poisson(r) => ArrivalSpec::Poisson(r / factor),
                ArrivalSpec::Constant(r) => ArrivalSpec::Constant(r / factor),
                ArrivalSpec::Uniform(r) => ArrivalSpec::Uniform(r / factor),
                ArrivalSpec::OnOff { on, off, rate } => ArrivalSpec::OnOff {
                    on: time(on),
                    off: time(off),
                    rate: rate / factor,
                },
                ArrivalSpec::Steps(steps) => {
                    ArrivalSpec::Steps(steps.into_iter().map(|(at, r)| (time(at), r / factor)).collect())
                }
                ArrivalSpec::Trace(mut rows) => {
                    rows.iter_mut().for_each(|r| r.time = time(r.time));
                    ArrivalSpec::Trace(rows)
                }
                closed @ ArrivalSpec::Closed(_) => closed,
            };
        }
    }
    s
}

/// The warning a slowed run carries.
pub fn slowed_warning(factor: f64) -> String {
    format!(
        "arrivals slowed down {factor:.0}x for this machine (every open-loop rate, reservation and limit / \
         {factor:.0}, the duration, window and arrival times x {factor:.0}; closed loops unchanged): this machine cannot offer the \
         scenario's rates live; service times are this machine's own"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slowing_keeps_the_arrival_count_and_scales_times() {
        // OSMOSIS' DMA scenario: a victim at 1M/s, a congestor in a closed loop.
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/osmosis-dma-hol.toml"
        );
        let s = Scenario::load(path).unwrap();
        assert_eq!(open_loop_rate(&s), 1e6);
        assert_eq!(auto_factor(&s), 100.0);
        let slow = slowed(&s, 50.0);
        assert_eq!(slow.run.duration, Some(250_000_000));
        assert_eq!(slow.run.window, 5_000_000);
        assert_eq!(slow.tenants[0].workload().arrival, ArrivalSpec::Poisson(20_000.0));
        assert_eq!(slow.tenants[1].workload().arrival, ArrivalSpec::Closed(16));
        // Expected arrivals (rate x duration) are unchanged.
        assert_eq!(1e6 * 5e-3, 20_000.0 * 0.25);
        assert_eq!(slowed(&s, 0.5).run.duration, s.run.duration);
    }

    #[test]
    fn a_hostile_rate_is_slowed_only_as_far_as_two_seconds() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/osmosis-dma-hol.toml"
        );
        let mut s = Scenario::load(path).unwrap();
        s.tenants[0].workload_mut().arrival = ArrivalSpec::Poisson(1e12);
        // 5 ms may become 2 s: 400x, not the 1e8x the rate would ask.
        assert_eq!(auto_factor(&s), 400.0);
        s.run.duration = None;
        assert_eq!(auto_factor(&s), MAX_FACTOR_WITHOUT_DURATION);
    }
}
