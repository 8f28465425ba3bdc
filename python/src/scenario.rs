//! `isola.Scenario`: a checked scenario, from a dict, TOML text or a file.

use crate::convert::dict_to_toml;
use crate::errors::{from_scenario_error, scenario_error};
use isola_model::Scenario;
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::Arc;

/// A checked scenario (docs/scenario-format.md): build one with
/// `Scenario.from_dict`, `Scenario.from_toml` or `Scenario.load`.
#[pyclass(name = "Scenario", module = "isola", frozen)]
pub struct PyScenario {
    /// The scenario, shared with the runs that read it (no copy per run).
    pub scenario: Arc<Scenario>,
    /// The TOML text it was checked from (made from the dict for a dict).
    text: String,
}

#[pymethods]
impl PyScenario {
    /// A scenario from `data`, a dict with the TOML format's keys and units
    /// (`{"run": {...}, "engine": [...], "tenant": [...]}`), checked as a
    /// file is; `name` stands for a file name in results and errors (and
    /// anchors relative trace paths). Raises `ScenarioError` naming the key.
    #[staticmethod]
    #[pyo3(signature = (data, name = "<dict>"))]
    fn from_dict(py: Python<'_>, data: &Bound<'_, PyAny>, name: &str) -> PyResult<Self> {
        let table = dict_to_toml(data).map_err(|e| {
            scenario_error(
                py,
                format!("{name}: key `{}`: {}", e.key, e.message),
                Some(&e.key),
                0,
                name,
            )
        })?;
        let text = toml::to_string(&table).map_err(|e| {
            scenario_error(
                py,
                format!("{name}: cannot be written as TOML: {e}"),
                None,
                0,
                name,
            )
        })?;
        Self::parse(py, text, name, true)
    }

    /// A scenario from TOML `text` (`name` as for `from_dict`).
    #[staticmethod]
    #[pyo3(signature = (text, name = "<string>"))]
    fn from_toml(py: Python<'_>, text: String, name: &str) -> PyResult<Self> {
        Self::parse(py, text, name, false)
    }

    /// The scenario file at `path`.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let text = isola_model::input::read_text_bounded(&path, isola_model::input::MAX_SCENARIO_BYTES)
            .map_err(|message| {
                let file = path.display().to_string();
                scenario_error(py, format!("{file}: {message}"), None, 0, &file)
            })?;
        let scenario = Scenario::parse(&text, &path).map_err(|e| from_scenario_error(py, &e, None, ""))?;
        Ok(PyScenario {
            scenario: Arc::new(scenario),
            text,
        })
    }

    /// The name it goes by in results (its file, or the name given).
    #[getter]
    fn name(&self) -> String {
        self.scenario.path.display().to_string()
    }

    /// The TOML text it was checked from.
    #[getter]
    fn toml(&self) -> &str {
        &self.text
    }

    /// The tenants' names, in order.
    #[getter]
    fn tenants(&self) -> Vec<String> {
        self.scenario.tenants.iter().map(|t| t.name.clone()).collect()
    }

    /// The engines' names, in order.
    #[getter]
    fn engines(&self) -> Vec<String> {
        self.scenario.engines.iter().map(|e| e.name.clone()).collect()
    }

    /// The labels of the runs its `[run] policies` lists.
    #[getter]
    fn policies(&self) -> Vec<String> {
        self.scenario
            .run
            .policies
            .iter()
            .map(|p| p.label.clone())
            .collect()
    }

    /// Its `[run] seed`.
    #[getter]
    fn seed(&self) -> u64 {
        self.scenario.run.seed
    }

    fn __repr__(&self) -> String {
        format!(
            "Scenario({:?}, engines={:?}, tenants={:?}, policies={:?})",
            self.name(),
            self.engines(),
            self.tenants(),
            self.policies()
        )
    }
}

impl PyScenario {
    fn parse(py: Python<'_>, text: String, name: &str, from_dict: bool) -> PyResult<Self> {
        let scenario = Scenario::parse(&text, name)
            .map_err(|e| from_scenario_error(py, &e, from_dict.then_some(text.as_str()), name))?;
        Ok(PyScenario {
            scenario: Arc::new(scenario),
            text,
        })
    }
}
