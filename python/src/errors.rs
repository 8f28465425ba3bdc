//! The package's exceptions, and Isola's typed errors turned into them.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    isola,
    ScenarioError,
    PyValueError,
    "A scenario is wrong: its `key` attribute names the offending key (a dotted path for a dict), \
     `line` its line in a file (0 when it has none)."
);
pyo3::create_exception!(
    isola,
    PolicyError,
    PyRuntimeError,
    "A policy could not be registered or built, or a policy written in Python failed during a run \
     (the run ends; the Python exception is the cause)."
);
pyo3::create_exception!(
    isola,
    SimulationError,
    PyRuntimeError,
    "A run could not start or was stopped by one of the simulator's limits (its message names the limit)."
);

/// A `ScenarioError` with `message`, and `key`, `line` and `file` set as
/// attributes (None where unknown).
pub fn scenario_error(py: Python<'_>, message: String, key: Option<&str>, line: usize, file: &str) -> PyErr {
    let err = ScenarioError::new_err(message);
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail short of
    // memory exhaustion; the message carries the same facts regardless.
    let _ = value.setattr("key", key);
    let _ = value.setattr("line", line);
    let _ = value.setattr("file", file);
    err
}

/// Isola's scenario error as a `ScenarioError`. For a scenario built from
/// a dict (`toml`: the TOML made from it), the lines are of that TOML, so
/// the key is said as the dict's dotted path instead (found from the line).
/// `name` is the scenario's name (an error about another file, a trace,
/// keeps its lines).
pub fn from_scenario_error(
    py: Python<'_>,
    e: &isola_model::scenario::ScenarioError,
    toml: Option<&str>,
    name: &str,
) -> PyErr {
    let Some(text) = toml.filter(|_| e.file == name) else {
        return scenario_error(py, e.to_string(), e.key.as_deref(), e.line, &e.file);
    };
    let ours = e.line > 0;
    let path = ours.then(|| crate::convert::key_at_line(text, e.line)).flatten();
    let key = path.or_else(|| e.key.clone());
    let message = match &key {
        Some(k) => format!("{}: key `{k}`: {}", e.file, e.message),
        None => format!("{}: {}", e.file, e.message),
    };
    scenario_error(py, message, key.as_deref(), 0, &e.file)
}
