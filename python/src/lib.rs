//! # isola-python
//!
//! Isola from Python: the native part of the `isola` Python package
//! (`isola._native`, built by maturin from `python/pyproject.toml`). It
//! builds scenarios from Python dicts or files through the scenario
//! format's own checks, runs them in `isola-sim` with the GIL released
//! (progress, Ctrl-C), runs policies written in Python inside the core
//! scheduler, lists the policies and runs the papers' experiments of
//! `isola-experiments`. Results cross as the objects `json.loads` makes of
//! what `isola sim --json` prints; `python/isola/` gives them attributes
//! and rows.
//!
//! What it must not do: decide, simulate or compute a figure itself (the
//! core, the simulator and the results model do), panic into Python (every
//! bad input is a Python exception naming its key), or hold the GIL while
//! a simulation runs.

mod convert;
mod errors;
mod policy;
mod repro;
mod run;
mod scenario;

use pyo3::prelude::*;

/// The `isola._native` module.
#[pymodule]
#[pyo3(name = "_native")]
fn native_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ScenarioError", py.get_type::<errors::ScenarioError>())?;
    m.add("PolicyError", py.get_type::<errors::PolicyError>())?;
    m.add("SimulationError", py.get_type::<errors::SimulationError>())?;
    m.add_class::<scenario::PyScenario>()?;
    m.add_class::<policy::PySetup>()?;
    m.add_class::<policy::PyHead>()?;
    m.add_class::<policy::PyContext>()?;
    m.add_function(wrap_pyfunction!(policy::policies_list, m)?)?;
    m.add_function(wrap_pyfunction!(policy::register_policy, m)?)?;
    m.add_function(wrap_pyfunction!(policy::unregister_policy, m)?)?;
    m.add_function(wrap_pyfunction!(run::simulate_report, m)?)?;
    m.add_function(wrap_pyfunction!(repro::experiments_list, m)?)?;
    m.add_function(wrap_pyfunction!(repro::repro_outcomes, m)?)?;
    Ok(())
}
