//! The simulator's speed (`isola bench sim`): events per second of wall
//! time, and of this thread's CPU time, for each policy and tenant count on
//! OSMOSIS' PU contention scaled up (`isola_sim::speed`), and its table.

use crate::Progress;
use serde::Serialize;

/// One policy and tenant count: its speed, or why the policy cannot run
/// the setup (its builder's refusal, e.g. a static partition in
/// `mode = "slots"` with more tenants than slots).
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The policy.
    pub policy: String,
    /// Tenants, every one backlogged.
    pub tenants: usize,
    /// Events one run processes (2 ms simulated).
    pub events_per_run: u64,
    /// Runs measured.
    pub runs: u32,
    /// Wall-clock seconds they took.
    pub seconds: f64,
    /// Events per second of wall time.
    pub events_per_s: f64,
    /// Wall time per event, ns.
    pub ns_per_event: f64,
    /// Events per second of this thread's CPU time: on a shared machine,
    /// what the simulator would do with a core to itself.
    pub events_per_cpu_s: Option<f64>,
    /// Why the policy cannot run the setup.
    pub cannot_run: Option<String>,
}

/// Measures each of `policies` (registered names) with each of `tenants`
/// for about `seconds` (at least one run) each.
pub fn measure(
    policies: &[String],
    tenants: &[usize],
    seconds: f64,
    progress: &mut dyn Progress,
) -> Vec<Point> {
    let total = (policies.len() * tenants.len()).max(1) as f64;
    let mut points = Vec::new();
    for p in policies {
        for &n in tenants {
            progress.update(points.len() as f64 / total, &format!("{p} x{n}"));
            points.push(point(p, n, seconds));
        }
    }
    points
}

/// The points as a table for people (those that ran), then a line for
/// each policy and tenant count that cannot run, saying why.
pub fn table(points: &[Point]) -> String {
    let rows: Vec<Vec<String>> = points
        .iter()
        .filter(|p| p.cannot_run.is_none())
        .map(|p| {
            vec![
                p.policy.clone(),
                p.tenants.to_string(),
                p.events_per_run.to_string(),
                p.runs.to_string(),
                format!("{:.2}", p.events_per_s / 1e6),
                format!("{:.0}", p.ns_per_event),
                p.events_per_cpu_s
                    .map_or("-".into(), |e| format!("{:.2}", e / 1e6)),
            ]
        })
        .collect();
    let header = [
        "policy",
        "tenants",
        "events/run",
        "runs",
        "M events/s",
        "ns/event",
        "M events/CPU-s",
    ];
    let mut out = isola_report::text::table_with(&header, &rows, 1);
    for p in points {
        if let Some(why) = &p.cannot_run {
            out.push_str(&format!(
                "{} with {} tenants cannot run: {why}\n",
                p.policy, p.tenants
            ));
        }
    }
    out
}

/// Measures `policy` with `tenants` for about `seconds`.
fn point(policy: &str, tenants: usize, seconds: f64) -> Point {
    let mut point = Point {
        policy: policy.to_string(),
        tenants,
        events_per_run: 0,
        runs: 0,
        seconds: 0.0,
        events_per_s: 0.0,
        ns_per_event: 0.0,
        events_per_cpu_s: None,
        cannot_run: None,
    };
    // What fails here is the policy refusing the setup.
    let cpu_before = isola_runtime::host::thread_cpu_ns();
    let speed = isola_sim::speed::contention_scenario(tenants, policy).and_then(|scenario| {
        isola_sim::speed::measure(&scenario, scenario.run.seed, seconds).map_err(|e| e.to_string())
    });
    let cpu = isola_runtime::host::thread_cpu_ns()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    match speed {
        Ok(speed) => {
            point.events_per_run = speed.events;
            point.runs = speed.runs;
            point.seconds = speed.seconds;
            point.events_per_s = speed.events_per_sec();
            point.ns_per_event = speed.ns_per_event();
            // The CPU time includes building the scenario (small beside
            // the runs), so this is a slight underestimate.
            point.events_per_cpu_s = cpu
                .filter(|&ns| ns > 0)
                .map(|ns| (speed.events * u64::from(speed.runs)) as f64 / (ns as f64 / 1e9));
        }
        Err(e) => point.cannot_run = Some(e),
    }
    point
}
