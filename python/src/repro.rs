//! The papers' experiments (`isola repro`) from Python: their list, and
//! running them with the GIL released, as the objects `json.loads` makes
//! of what `isola repro --json` prints.

use crate::errors::SimulationError;
use isola_experiments::{run_experiments, select, Progress, ALL};
use pyo3::prelude::*;
use std::time::{Duration, Instant};

/// Every experiment's name, paper, title and the paper's claims, as dicts.
#[pyfunction]
pub fn experiments_list(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let list: Vec<serde_json::Value> = ALL
        .iter()
        .map(|e| serde_json::json!({"name": e.name, "paper": e.paper, "title": e.title, "claims": e.claims}))
        .collect();
    crate::convert::json_to_py(py, &serde_json::Value::Array(list))
}

/// Progress of experiments for Python: the callback, at most every 50 ms.
/// An experiment cannot be stopped midway (its library has no stop), so
/// Ctrl-C is looked at here and acted on between experiments.
struct PyProgress<'a> {
    callback: Option<&'a Py<PyAny>>,
    last: Instant,
    interrupted: Option<PyErr>,
    experiment: usize,
    experiments: usize,
}

impl Progress for PyProgress<'_> {
    fn update(&mut self, fraction: f64, what: &str) {
        if self.interrupted.is_some() || self.last.elapsed() < Duration::from_millis(50) {
            return;
        }
        self.last = Instant::now();
        let overall = (self.experiment as f64 + fraction) / self.experiments as f64;
        Python::attach(|py| {
            let outcome = py.check_signals().and_then(|()| match self.callback {
                Some(p) => p.call1(py, (overall, what)).map(drop),
                None => Ok(()),
            });
            self.interrupted = outcome.err();
        });
    }
}

/// Runs experiment `name` (or `all`) simulated, with `seed` (default: each
/// scenario's) and at the papers' full lengths where `full`;
/// `progress(fraction, what)` hears how far. Returns the outcomes as dicts.
#[pyfunction]
#[pyo3(signature = (name, seed = None, full = false, progress = None))]
pub fn repro_outcomes<'py>(
    py: Python<'py>,
    name: &str,
    seed: Option<u64>,
    full: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let chosen = select(name).map_err(|e| SimulationError::new_err(e.to_string()))?;
    let mut watch = PyProgress {
        callback: progress.as_ref(),
        last: Instant::now() - Duration::from_millis(50),
        interrupted: None,
        experiment: 0,
        experiments: chosen.len(),
    };
    let mut outcomes = Vec::new();
    for (i, e) in chosen.iter().enumerate() {
        watch.experiment = i;
        let one = py.detach(|| run_experiments(std::slice::from_ref(e), false, full, seed, &mut watch));
        if let Some(err) = watch.interrupted.take() {
            return Err(err);
        }
        outcomes.extend(one.map_err(|e| SimulationError::new_err(format!("{e:#}")))?);
    }
    let value = serde_json::to_value(&outcomes).map_err(|e| SimulationError::new_err(e.to_string()))?;
    crate::convert::json_to_py(py, &value)
}
