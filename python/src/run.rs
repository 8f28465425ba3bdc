//! Running a scenario from Python: its runs (built-in policies the
//! scenario lists or names, and policies registered from Python) in the
//! simulator with the GIL released, progress and Ctrl-C looked at about
//! every 50 ms, and the report as the objects `json.loads` makes of what
//! `isola sim --json` prints.

use crate::errors::{PolicyError, SimulationError};
use crate::policy::{self, Failure};
use crate::scenario::PyScenario;
use isola_model::scenario::PolicyRun;
use isola_model::{Scenario, SimReport};
use isola_sim::{run_policy_with, RunHooks, SimError};
use pyo3::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often, at most, a run takes the GIL to look for Ctrl-C and report
/// progress: often enough that an interrupt feels immediate, rarely enough
/// that the simulator runs undisturbed (a look costs a few microseconds).
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// One run to do: the policy run and, for a Python policy, its class.
struct Planned {
    run: PolicyRun,
    python: Option<(isola_core::PolicyInfo, Py<PyAny>)>,
}

/// A run of registered policy `name` on every engine, labelled by its name.
fn run_of(name: &str) -> PolicyRun {
    PolicyRun {
        name: name.to_string(),
        label: name.to_string(),
        params: BTreeMap::new(),
        split: None,
        on: Vec::new(),
    }
}

/// The runs `names` asks of `scenario`: every run it lists when empty;
/// else each name a Python policy's (a run of it, labelled by its name) or
/// one of [`policy::RUST_EXTRA`]'s, or the scenario's runs it selects (by label or policy name, as `isola sim
/// --policy` selects).
fn plan(py: Python<'_>, scenario: &Scenario, names: &[String]) -> PyResult<Vec<Planned>> {
    if names.is_empty() {
        let runs = scenario.run.select(&[]).map_err(SimulationError::new_err)?;
        return Ok(runs
            .into_iter()
            .map(|r| Planned {
                run: r.clone(),
                python: None,
            })
            .collect());
    }
    let mut planned: Vec<Planned> = Vec::new();
    for name in names {
        if let Some((info, class)) = policy::find(py, name) {
            planned.push(Planned {
                run: run_of(info.name),
                python: Some((info, class)),
            });
            continue;
        }
        if let Some(info) = policy::find_rust_extra(name) {
            planned.push(Planned {
                run: run_of(info.name),
                python: None,
            });
            continue;
        }
        let runs = scenario
            .run
            .select(std::slice::from_ref(name))
            .map_err(|e| SimulationError::new_err(format!("policies: {e}")))?;
        for r in runs {
            if !planned.iter().any(|p| p.run.label == r.label) {
                planned.push(Planned {
                    run: r.clone(),
                    python: None,
                });
            }
        }
    }
    Ok(planned)
}

/// What the progress callback does: look for Ctrl-C and call the Python
/// callback, at most every [`LOOK_EVERY`] and at each run's end, with the
/// GIL taken for the look.
struct Watch<'a> {
    progress: Option<&'a Py<PyAny>>,
    last: Instant,
    failure: &'a Failure,
}

impl Watch<'_> {
    fn look(&mut self, run: usize, runs: usize, fraction: f64) {
        // A run's last report (its end) always goes through.
        let early = self.last.elapsed() < LOOK_EVERY && fraction < 1.0;
        if early || self.failure.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        self.last = Instant::now();
        Python::attach(|py| {
            let outcome = py.check_signals().and_then(|()| match self.progress {
                Some(p) => p.call1(py, (run, runs, fraction)).map(drop),
                None => Ok(()),
            });
            if let Err(e) = outcome {
                self.failure.fail(e);
            }
        });
    }
}

/// Runs `scenario` under `policies` (see [`plan`]) with `seed` (default:
/// the scenario's); `progress(run, runs, fraction)` hears how far it is.
/// Returns the report as a dict: what `json.loads` makes of what `isola
/// sim --json` prints.
#[pyfunction]
#[pyo3(signature = (scenario, policies = Vec::new(), seed = None, progress = None))]
pub fn simulate_report<'py>(
    py: Python<'py>,
    scenario: &PyScenario,
    policies: Vec<String>,
    seed: Option<u64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let scenario = scenario.scenario.clone();
    let planned = plan(py, &scenario, &policies)?;
    let seed = seed.unwrap_or(scenario.run.seed);
    let failure = Arc::new(Failure::default());
    let outcome = py.detach(|| simulate(&scenario, planned, seed, progress.as_ref(), &failure));
    if let Some(e) = failure.take() {
        return Err(e);
    }
    let report = outcome.map_err(|e| match e {
        SimError::Build(b) => PolicyError::new_err(b.to_string()),
        other => SimulationError::new_err(other.to_string()),
    })?;
    let value = serde_json::to_value(&report).map_err(|e| SimulationError::new_err(e.to_string()))?;
    crate::convert::json_to_py(py, &value)
}

/// [`isola_sim::simulate`] over planned runs: solo runs first where the
/// scenario asks for slowdowns (each tenant alone under FCFS), then each run.
fn simulate(
    scenario: &Scenario,
    planned: Vec<Planned>,
    seed: u64,
    progress: Option<&Py<PyAny>>,
    failure: &Arc<Failure>,
) -> Result<SimReport, SimError> {
    let solo_runs = if scenario.run.solo {
        scenario.tenants.len()
    } else {
        0
    };
    let total = planned.len() + solo_runs;
    let mut watch = Watch {
        progress,
        // The first look comes at the first report.
        last: Instant::now() - LOOK_EVERY,
        failure,
    };
    let stop = Some(&failure.stop);
    let mut alone = Vec::with_capacity(solo_runs);
    for t in 0..solo_runs {
        let mut tick = |f: f64| watch.look(t, total, f);
        let hooks = RunHooks { policies: &[], stop };
        let solo = run_policy_with(
            scenario,
            &PolicyRun::alone(),
            seed,
            Some(t),
            Some(&mut tick),
            hooks,
        )?;
        alone.push(solo.tenants[t].latency_ns.mean);
    }
    let mut out = Vec::with_capacity(planned.len());
    for (i, p) in planned.into_iter().enumerate() {
        let mut tick = |f: f64| watch.look(solo_runs + i, total, f);
        let mut result = match p.python {
            Some((info, class)) => policy::building(info.name, class, failure.clone(), || {
                let registered: Vec<_> = policy::RUST_EXTRA.iter().copied().chain([info]).collect();
                let hooks = RunHooks {
                    policies: &registered,
                    stop,
                };
                run_policy_with(scenario, &p.run, seed, None, Some(&mut tick), hooks)
            })?,
            None => {
                let hooks = RunHooks {
                    policies: policy::RUST_EXTRA,
                    stop,
                };
                run_policy_with(scenario, &p.run, seed, None, Some(&mut tick), hooks)?
            }
        };
        if scenario.run.solo {
            result.add_slowdowns(&alone);
        }
        out.push(result);
    }
    Ok(SimReport {
        scenario: scenario.path.display().to_string(),
        seed,
        policies: out,
    })
}
