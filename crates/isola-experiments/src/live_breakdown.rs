//! Where a live run's time went, per tenant, from its completions (each
//! carries the runtime's `LatencyBreakdown`): the service its tasks really
//! took (against what a calibration measured alone, where one did: a
//! packet run's dilation assumes the two agree), what they were predicted
//! to cost, and, for its slowest 1% (its tail), where their latency went.
//! The run's notes carry it, so a live tail that differs from the
//! simulator's can be told apart: work slower in the run than alone (more
//! load than the scenario's), the worker off its CPU, or time on the
//! dispatch path.

use isola_model::quantity::format_duration;
use isola_model::Scenario;
use isola_runtime::Completion;

/// One tenant's means over a set of its completions, ns.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Means {
    /// Completions counted.
    pub(crate) n: usize,
    /// Submission (the dispatcher taking the packet) to completion.
    pub(crate) latency: f64,
    /// Measured service.
    pub(crate) service: f64,
    /// Of the service, its worker off its CPU.
    pub(crate) off_cpu: f64,
    /// Predicted service (the cost model's).
    pub(crate) predicted: f64,
    /// Waiting behind the tenant's own packets and behind others'.
    pub(crate) behind: f64,
    /// Waiting while the engine served nobody (the dispatch path).
    pub(crate) idle: f64,
    /// Hand-off to the dispatcher and delivery after service.
    pub(crate) path: f64,
}

impl Means {
    /// The means over `completions`.
    pub(crate) fn of<'a>(completions: impl IntoIterator<Item = &'a Completion>) -> Means {
        let mut m = Means::default();
        for c in completions {
            let b = &c.breakdown;
            m.n += 1;
            m.latency += c.latency_ns() as f64;
            m.service += b.service_ns as f64;
            m.off_cpu += b.service_off_cpu_ns as f64;
            m.predicted += c.predicted_ns as f64;
            m.behind += (b.behind_own_ns + b.behind_others_ns) as f64;
            m.idle += b.engine_idle_ns as f64;
            m.path += (b.handoff_ns + b.delivery_ns) as f64;
        }
        let n = m.n.max(1) as f64;
        for v in [
            &mut m.latency,
            &mut m.service,
            &mut m.off_cpu,
            &mut m.predicted,
            &mut m.behind,
            &mut m.idle,
            &mut m.path,
        ] {
            *v /= n;
        }
        m
    }
}

/// Tenant `tenant`'s completions that ran (refusals and aborts left
/// out), and its tail: those at or above its 99th latency percentile.
pub(crate) fn tenant_means(completions: &[Completion], tenant: usize) -> (Means, Means) {
    let mut ran: Vec<&Completion> = completions
        .iter()
        .filter(|c| c.tenant.0 as usize == tenant && c.result.is_ok())
        .collect();
    ran.sort_by_key(|c| c.latency_ns());
    let all = Means::of(ran.iter().copied());
    // The slowest 1% (at least one).
    let tail = ran.len() - (ran.len() / 100).max(1).min(ran.len());
    (all, Means::of(ran[tail..].iter().copied()))
}

/// One note per tenant that completed work: its service in the run
/// (against `calibrated[i]`, its cost measured alone, ns, where known),
/// its prediction, and where its mean and its tail's latency went, in the
/// run's time (a packet run's: divide by its dilation for the scenario's).
pub(crate) fn notes(
    scenario: &Scenario,
    calibrated: &[Option<f64>],
    completions: &[Completion],
) -> Vec<String> {
    let d = |ns: f64| format_duration(ns.max(0.0) as u64);
    scenario
        .tenants
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let (all, tail) = tenant_means(completions, i);
            let against = match calibrated.get(i).copied().flatten() {
                Some(c) => format!(" (x{:.2} its calibration's {})", all.service / c.max(1.0), d(c)),
                None => String::new(),
            };
            (all.n > 0).then(|| {
                format!(
                    "tenant `{}` in the run: service {} a task{against}, {} of it off the CPU; predicted {}; \
                     mean latency {}: {} waiting behind tasks, {} dispatch path (the engine serving nobody), {} \
                     hand-off and delivery; its slowest 1% ({} tasks): {}: {} behind, {} dispatch path, {} \
                     hand-off and delivery, {} service, {} of it off the CPU",
                    t.name,
                    d(all.service),
                    d(all.off_cpu),
                    d(all.predicted),
                    d(all.latency),
                    d(all.behind),
                    d(all.idle),
                    d(all.path),
                    tail.n,
                    d(tail.latency),
                    d(tail.behind),
                    d(tail.idle),
                    d(tail.path),
                    d(tail.service),
                    d(tail.off_cpu),
                )
            })
        })
        .collect()
}
