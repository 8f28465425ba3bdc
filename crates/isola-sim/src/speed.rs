//! The simulator's own speed (issue 17: at least 5 M events/s at 128
//! tenants for every policy): the contention scenario it is measured on,
//! and the measurement, shared by `benches/events.rs` and `isola bench sim`.

use crate::sim::{run_policy, SimError};
use isola_model::Scenario;
use std::fmt::Write;
use std::time::Instant;

/// OSMOSIS' processing-unit contention (its section 6.2 setup: kernels of
/// two costs on a cluster of run-to-completion PUs) scaled to `tenants`
/// tenants under `policy`: 32 PUs, half the tenants Victims (500 cycles +
/// 0.25 cycle/B) and half Congestors at twice the base cost, on 1 KiB
/// packets, offered 42 M packets/s in all, about 1.5x what the PUs serve
/// (~28 M/s), so that every tenant stays backlogged and every event goes
/// through the policy with `tenants` ready channels. 2 ms simulated, in
/// windows of 100 us. Tenants fewer than 1 or above 65,536 are refused.
pub fn contention_scenario(tenants: usize, policy: &str) -> Result<Scenario, String> {
    if !(1..=65_536).contains(&tenants) {
        return Err(format!("{tenants} tenants: give 1 to 65536"));
    }
    let mut text = format!(
        "[run]\nduration = \"2ms\"\nwindow = \"100us\"\npolicies = [\"{policy}\"]\n\
         [[engine]]\nname = \"pu\"\nkind = \"pu\"\nslots = 32\n"
    );
    let rate = 42e6 / tenants as f64;
    for t in 0..tenants {
        let base = if t % 2 == 0 { 500 } else { 1000 };
        // Infallible: writing to a String.
        let _ = write!(
            text,
            "[[tenant]]\nname = \"t{t}\"\nqueue_cap = 16\n[tenant.workload]\nengine = \"pu\"\n\
             size = \"1KiB\"\narrival = {{ poisson = \"{rate}/s\" }}\n\
             service = {{ dist = \"cycles\", base = {base}, per_byte = 0.25 }}\n"
        );
    }
    Scenario::parse(&text, "contention.toml").map_err(|e| e.to_string())
}

/// The simulator's speed on one scenario's first run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speed {
    /// Events one run processes.
    pub events: u64,
    /// Runs measured.
    pub runs: u32,
    /// Wall-clock seconds they took together, each from building the
    /// scheduler to its result (the scenario is parsed before).
    pub seconds: f64,
}

impl Speed {
    /// Events per second of wall time.
    pub fn events_per_sec(&self) -> f64 {
        (self.events * u64::from(self.runs)) as f64 / self.seconds.max(1e-9)
    }

    /// Wall time per event, in ns.
    pub fn ns_per_event(&self) -> f64 {
        1e9 / self.events_per_sec()
    }
}

/// Runs `scenario`'s first run with `seed` again and again for at least
/// `seconds` of wall time (and at least once).
pub fn measure(scenario: &Scenario, seed: u64, seconds: f64) -> Result<Speed, SimError> {
    let policy = scenario
        .run
        .policies
        .first()
        .ok_or_else(|| SimError::Select("the scenario has no run".into()))?;
    let start = Instant::now();
    let mut runs = 0;
    let mut events = 0;
    while runs == 0 || start.elapsed().as_secs_f64() < seconds {
        events = std::hint::black_box(run_policy(scenario, policy, seed, None, None)?).events;
        runs += 1;
    }
    Ok(Speed {
        events,
        runs,
        seconds: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contention_scenario_saturates_its_pus_and_is_measured() {
        assert!(contention_scenario(0, "fcfs").is_err());
        let s = contention_scenario(8, "fcfs").expect("valid");
        assert_eq!(s.tenants.len(), 8);
        let speed = measure(&s, 1, 0.0).expect("runs");
        assert_eq!(speed.runs, 1);
        // 42 M/s offered for 2 ms: ~84k arrivals, of which the PUs serve
        // about 28 M/s (two events per served packet, one per refused one).
        assert!((100_000..200_000).contains(&speed.events), "{}", speed.events);
        assert!(speed.events_per_sec() > 0.0);
    }
}
