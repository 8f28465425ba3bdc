//! A program embedding Isola's live runtime: one hashing engine shared by a
//! batch tenant (large tasks, submitted all at once) and an interactive one
//! (small tasks, one at a time), scheduled by a policy this crate wrote
//! (`strict-priority`, registered by name). Prints each tenant's tasks and
//! latencies; exits with status 1 if any task failed.

use isola_core::{AffineCost, Slo};
use isola_example_embed::STRICT_PRIORITY;
use isola_runtime::{EngineConfig, Mode, RuntimeBuilder};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;

const TASKS: usize = 16;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let mut b = RuntimeBuilder::new();
    b.register_policy(STRICT_PRIORITY);
    // A cost model for the scheduler's predictions: about 1 ns a byte.
    let cost = Arc::new(AffineCost::new(1_000.0, 1.0)?);
    b.engine(EngineConfig::new("hash", &["sha256"], 1, cost));
    let batch = b.tenant("batch", Slo::default());
    let interactive = b.tenant(
        "interactive",
        Slo {
            weight: 8.0,
            ..Slo::default()
        },
    );
    b.mode(Mode::Isolated {
        policy: "strict-priority".into(),
        params: BTreeMap::new(),
    });
    let rt = b.start()?;
    let params = BTreeMap::new();
    let big = Arc::new(isola_ops::text_payload(4 << 20, 1));
    let small = Arc::new(isola_ops::text_payload(4 << 10, 2));
    let results = std::thread::scope(|s| {
        let batch = s.spawn(|| {
            let handle = rt.tenant(batch);
            let tickets: Vec<_> = (0..TASKS)
                .map(|_| handle.submit("sha256", &params, Arc::clone(&big)))
                .collect::<Result<_, _>>()?;
            Ok::<_, isola_runtime::SubmitError>(tickets.into_iter().map(|t| t.wait()).collect::<Vec<_>>())
        });
        let interactive = s.spawn(|| {
            let handle = rt.tenant(interactive);
            (0..TASKS)
                .map(|_| Ok(handle.submit("sha256", &params, Arc::clone(&small))?.wait()))
                .collect::<Result<Vec<_>, isola_runtime::SubmitError>>()
        });
        [batch.join(), interactive.join()]
    });
    rt.shutdown();
    let mut all_ok = true;
    for (name, done) in ["batch", "interactive"].iter().zip(results) {
        let done = done.map_err(|_| "a tenant thread panicked")??;
        let failed = done.iter().filter(|c| c.result.is_err()).count();
        all_ok &= failed == 0;
        let mut latency: Vec<u64> = done.iter().map(|c| c.latency_ns()).collect();
        latency.sort_unstable();
        let mean = latency.iter().sum::<u64>() as f64 / latency.len().max(1) as f64;
        let max = latency.last().copied().unwrap_or(0);
        println!(
            "{name}: {} tasks, {failed} failed, mean latency {:.0} us, max {:.0} us",
            done.len(),
            mean / 1e3,
            max as f64 / 1e3
        );
    }
    Ok(all_ok)
}
