//! Policies from Python: the registry of classes written in Python, and
//! [`PythonPolicy`], the core's `Policy` that calls one back.
//!
//! A registered class is instantiated once per engine with a [`PySetup`]
//! and called for each hook of the core's policy protocol
//! (docs/adding-a-policy.md): `on_ready(now, tenant, head, cx)`,
//! `pick(now, cx)`, `on_dispatch(now, tenant, served, next, cx)`, and
//! optionally `on_complete(now, tenant, served, measured, cx)` and
//! `admits(tenant, cx)`. Each call takes the GIL. A hook that raises, or a
//! `pick` naming a tenant that is not ready, fails the run: the first error
//! is kept, the stop flag raised (the simulator ends the run with
//! `SimError::Stopped` at its next look), and from then on the policy
//! calls nothing and picks nobody, so the scheduler's invariants hold
//! while the run winds down.

use crate::errors::PolicyError as PyPolicyError;
use isola_core::policy::registry::{check_unique, PolicySetup};
use isola_core::policy::{HeadInfo, Params, PolicyContext, PolicyInfo, POLICIES};
use isola_core::{Nanos, Policy, PolicyError, TenantClass};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Policies written in Rust outside Isola that the package offers beside
/// the built-in ones: the strict priority of docs/adding-a-policy.md
/// (`strict-priority`, alias `prio`), the original of the Python strict
/// priority docs/python.md writes.
pub static RUST_EXTRA: &[PolicyInfo] = &[isola_example_embed::STRICT_PRIORITY];

/// The Rust policy of [`RUST_EXTRA`] named (or aliased) `name`.
pub fn find_rust_extra(name: &str) -> Option<&'static PolicyInfo> {
    RUST_EXTRA
        .iter()
        .find(|p| p.name == name || p.aliases.contains(&name))
}

/// A class registered from Python, and the registry entry the core sees.
struct Registered {
    info: PolicyInfo,
    class: Py<PyAny>,
}

/// Every policy registered from Python, in registration order. Their
/// names and descriptions are leaked into `'static` strings (the core's
/// registry holds `&'static str`): once per name registered, a few bytes.
static REGISTRY: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

/// How a run with a Python policy fails: the first error and the flag
/// the simulator watches.
#[derive(Default)]
pub struct Failure {
    /// Raised on the first error; the simulator's stop flag.
    pub stop: AtomicBool,
    /// The first error, with the hook that raised it.
    pub error: Mutex<Option<PyErr>>,
}

impl Failure {
    /// Keeps `error` if it is the first, and raises the stop flag.
    pub fn fail(&self, error: PyErr) {
        let mut first = self.error.lock().unwrap_or_else(PoisonError::into_inner);
        if first.is_none() {
            *first = Some(error);
        }
        self.stop.store(true, Ordering::Relaxed);
    }

    /// The first error, taken.
    pub fn take(&self) -> Option<PyErr> {
        self.error.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// The Python policy the runs on this thread build, while they run: the
/// core builds a policy from a plain `fn` ([`build`]), which finds its
/// class here. A run and its builds happen on one thread.
struct Building {
    name: String,
    class: Py<PyAny>,
    failure: Arc<Failure>,
}

thread_local! {
    static BUILDING: RefCell<Option<Building>> = const { RefCell::new(None) };
}

/// The registry entry and class of Python policy `name`, if one is registered.
pub fn find(py: Python<'_>, name: &str) -> Option<(PolicyInfo, Py<PyAny>)> {
    let registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    registry
        .iter()
        .find(|r| r.info.name == name)
        .map(|r| (r.info, r.class.clone_ref(py)))
}

/// While `f` runs on this thread, policies built through [`build`] are
/// instances of `class` (registered as `name`), failing into `failure`.
pub fn building<T>(name: &str, class: Py<PyAny>, failure: Arc<Failure>, f: impl FnOnce() -> T) -> T {
    BUILDING.with(|b| {
        *b.borrow_mut() = Some(Building {
            name: name.to_string(),
            class,
            failure,
        })
    });
    let out = f();
    // Dropping the class here may happen without the GIL: PyO3 defers the
    // reference count's decrement until a thread holds it.
    BUILDING.with(|b| b.borrow_mut().take());
    out
}

/// The core's constructor of every Python policy.
fn build(_params: &Params<'_>, setup: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Python::attach(|py| {
        let (name, class, failure) = BUILDING
            .with(|b| {
                b.borrow()
                    .as_ref()
                    .map(|b| (b.name.clone(), b.class.clone_ref(py), b.failure.clone()))
            })
            .ok_or_else(|| PolicyError::Infeasible {
                policy: "(python)".into(),
                reason: "a Python policy is built only inside isola.simulate".into(),
            })?;
        let py_setup = PySetup {
            weights: setup.tenants.iter().map(|t| t.weight).collect(),
            classes: setup
                .tenants
                .iter()
                .map(|t| class_name(t.class).to_string())
                .collect(),
            slots: setup.slots,
        };
        let tenants = setup.tenants.len();
        match class.call1(py, (py_setup,)) {
            Ok(object) => {
                let has = |method: &str| object.bind(py).hasattr(method).unwrap_or(false);
                Ok(Box::new(PythonPolicy {
                    has_on_complete: has("on_complete"),
                    has_admits: has("admits"),
                    object,
                    name,
                    ready: vec![false; tenants],
                    failure,
                    failed: false,
                }) as Box<dyn Policy>)
            }
            Err(e) => {
                let reason = format!("its class raised {}", describe(py, &e));
                let err = PyPolicyError::new_err(format!("policy `{name}`: {reason}"));
                err.set_cause(py, Some(e));
                failure.fail(err);
                Err(PolicyError::Infeasible { policy: name, reason })
            }
        }
    })
}

fn class_name(class: TenantClass) -> &'static str {
    match class {
        TenantClass::LatencySensitive => "latency",
        TenantClass::BandwidthSensitive => "bandwidth",
        TenantClass::BestEffort => "best-effort",
    }
}

/// `TypeName: message` of a Python exception.
fn describe(py: Python<'_>, e: &PyErr) -> String {
    let kind = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "exception".into());
    format!("{kind}: {}", e.value(py))
}

/// A policy instance written in Python, called back for each hook.
struct PythonPolicy {
    object: Py<PyAny>,
    name: String,
    /// Which tenants are ready, as the core told: a `pick` outside them is
    /// refused before it reaches the scheduler (which asserts it).
    ready: Vec<bool>,
    has_on_complete: bool,
    has_admits: bool,
    failure: Arc<Failure>,
    /// Whether this instance has failed (then it calls nothing more).
    failed: bool,
}

impl PythonPolicy {
    /// Calls hook `method` with `args`, or records its failure; `None` on failure.
    fn call<'py>(
        &mut self,
        py: Python<'py>,
        method: &str,
        args: impl pyo3::call::PyCallArgs<'py>,
    ) -> Option<Bound<'py, PyAny>> {
        if self.failed {
            return None;
        }
        match self
            .object
            .bind(py)
            .call_method1(PyString::intern(py, method), args)
        {
            Ok(v) => Some(v),
            Err(e) => {
                self.fail(py, method, e);
                None
            }
        }
    }

    fn fail(&mut self, py: Python<'_>, method: &str, cause: PyErr) {
        self.failed = true;
        self.failure.fail(stop_error(py, &self.name, method, cause));
    }
}

/// What ends a run whose policy's hook `method` raised `cause`: a
/// `PolicyError` with the cause as its `__cause__`; but an exception that
/// is not an `Exception` (Ctrl-C's `KeyboardInterrupt`, `SystemExit`),
/// raised inside a hook because the hooks run Python, stays itself, so
/// that `except KeyboardInterrupt` sees it.
fn stop_error(py: Python<'_>, name: &str, method: &str, cause: PyErr) -> PyErr {
    if !cause.is_instance_of::<pyo3::exceptions::PyException>(py) {
        return cause;
    }
    let err = PyPolicyError::new_err(format!(
        "policy `{name}`: `{method}` raised {}; the run was stopped",
        describe(py, &cause)
    ));
    err.set_cause(py, Some(cause));
    err
}

fn head(h: &HeadInfo) -> PyHead {
    PyHead {
        seq: h.seq,
        arrival: h.arrival,
        bytes: h.bytes,
        cost: h.cost,
        remaining_cost: h.remaining_cost,
        task_cost: h.task_cost,
        deadline: h.deadline,
    }
}

fn context(cx: &PolicyContext<'_>) -> PyContext {
    PyContext {
        slots: cx.slots,
        in_flight: cx.in_flight.to_vec(),
        queued: cx.queued.to_vec(),
    }
}

impl Policy for PythonPolicy {
    fn on_ready(&mut self, now: Nanos, tenant: usize, h: &HeadInfo, cx: &PolicyContext<'_>) {
        self.ready[tenant] = true;
        Python::attach(|py| {
            self.call(py, "on_ready", (now, tenant, head(h), context(cx)));
        });
    }

    fn admits(&self, tenant: usize, cx: &PolicyContext<'_>) -> bool {
        if !self.has_admits || self.failed {
            return !self.failed;
        }
        Python::attach(|py| {
            let answer = self
                .object
                .bind(py)
                .call_method1(PyString::intern(py, "admits"), (tenant, context(cx)))
                .and_then(|v| v.is_truthy());
            answer.unwrap_or_else(|e| {
                // `admits` takes `&self`: the failure is recorded through
                // the shared slot, and later hooks see the stop.
                self.failure.fail(stop_error(py, &self.name, "admits", e));
                false
            })
        })
    }

    fn pick(&mut self, now: Nanos, cx: &PolicyContext<'_>) -> Option<usize> {
        if self.failed || self.failure.stop.load(Ordering::Relaxed) {
            self.failed = true;
            return None;
        }
        Python::attach(|py| {
            let answer = self.call(py, "pick", (now, context(cx)))?;
            if answer.is_none() {
                return None;
            }
            let error = match answer.extract::<i64>() {
                Ok(t) if t >= 0 && (t as usize) < self.ready.len() && self.ready[t as usize] => {
                    return Some(t as usize)
                }
                Ok(t) => PyValueError::new_err(format!(
                    "pick returned tenant {t}, which is not ready (ready: {:?})",
                    self.ready
                        .iter()
                        .enumerate()
                        .filter(|(_, r)| **r)
                        .map(|(i, _)| i)
                        .collect::<Vec<_>>()
                )),
                Err(_) => PyTypeError::new_err(format!(
                    "pick returned {answer}, not a tenant index (int) or None"
                )),
            };
            self.fail(py, "pick", error);
            None
        })
    }

    fn on_dispatch(
        &mut self,
        now: Nanos,
        tenant: usize,
        served: &HeadInfo,
        next: Option<&HeadInfo>,
        cx: &PolicyContext<'_>,
    ) {
        self.ready[tenant] = next.is_some();
        Python::attach(|py| {
            self.call(
                py,
                "on_dispatch",
                (now, tenant, head(served), next.map(head), context(cx)),
            );
        });
    }

    fn on_complete(
        &mut self,
        now: Nanos,
        tenant: usize,
        served: &HeadInfo,
        measured: Nanos,
        cx: &PolicyContext<'_>,
    ) {
        if self.has_on_complete {
            Python::attach(|py| {
                self.call(
                    py,
                    "on_complete",
                    (now, tenant, head(served), measured, context(cx)),
                );
            });
        }
    }
}

/// What a Python policy is built for: passed to its class.
#[pyclass(name = "Setup", module = "isola", frozen, get_all)]
pub struct PySetup {
    /// Each tenant's weight, by index.
    pub weights: Vec<f64>,
    /// Each tenant's class: "latency", "bandwidth" or "best-effort".
    pub classes: Vec<String>,
    /// The engine's slots.
    pub slots: u32,
}

#[pymethods]
impl PySetup {
    fn __repr__(&self) -> String {
        format!(
            "Setup(weights={:?}, classes={:?}, slots={})",
            self.weights, self.classes, self.slots
        )
    }
}

/// What a policy may know of a tenant's head task (the core's `HeadInfo`).
#[pyclass(name = "Head", module = "isola", frozen, get_all)]
pub struct PyHead {
    /// Submission sequence number (earlier is smaller).
    pub seq: u64,
    /// When the task was submitted (ns).
    pub arrival: u64,
    /// Input size (of this subtask when split), bytes.
    pub bytes: u64,
    /// Predicted service time on this engine (ns).
    pub cost: u64,
    /// Predicted service time of this dispatch and the task's subtasks after it (ns).
    pub remaining_cost: u64,
    /// Predicted service time of the whole task (ns).
    pub task_cost: u64,
    /// The task's absolute deadline (ns), if it has one.
    pub deadline: Option<u64>,
}

#[pymethods]
impl PyHead {
    fn __repr__(&self) -> String {
        format!(
            "Head(seq={}, arrival={}, bytes={}, cost={})",
            self.seq, self.arrival, self.bytes, self.cost
        )
    }
}

/// The engine's state at a hook (the core's `PolicyContext`, less what
/// `Setup` already gave).
#[pyclass(name = "Context", module = "isola", frozen, get_all)]
pub struct PyContext {
    /// The engine's slots.
    pub slots: u32,
    /// Dispatches in service, per tenant.
    pub in_flight: Vec<u32>,
    /// Dispatches waiting, per tenant.
    pub queued: Vec<u64>,
}

/// Registers `cls` as policy `name`: `isola.simulate(..., policies=[name])`
/// runs it. A name a built-in policy takes is refused; registering a name
/// again replaces its class.
#[pyfunction]
#[pyo3(signature = (name, cls, description = "", work_conserving = true))]
pub fn register_policy(name: &str, cls: Py<PyAny>, description: &str, work_conserving: bool) -> PyResult<()> {
    if name.is_empty() || name.chars().any(|c| c.is_whitespace()) {
        return Err(PyPolicyError::new_err(format!(
            "policy name `{name}`: give a non-empty name without spaces"
        )));
    }
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(r) = registry.iter_mut().find(|r| r.info.name == name) {
        let old = std::mem::replace(&mut r.class, cls);
        // The old class is dropped after the lock: dropping it may run
        // Python code, which may let another thread take the GIL and ask
        // for the lock.
        drop(registry);
        drop(old);
        return Ok(());
    }
    let info = PolicyInfo {
        name: Box::leak(name.to_string().into_boxed_str()),
        aliases: &[],
        description: Box::leak(description.to_string().into_boxed_str()),
        source: "Python (isola.register_policy)",
        work_conserving,
        params: &[],
        build,
    };
    check_unique(&info, RUST_EXTRA).map_err(|e| PyPolicyError::new_err(e.to_string()))?;
    registry.push(Registered { info, class: cls });
    Ok(())
}

/// Forgets Python policy `name`; whether it was registered.
#[pyfunction]
pub fn unregister_policy(name: &str) -> bool {
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let mut removed = Vec::new();
    while let Some(at) = registry.iter().position(|r| r.info.name == name) {
        removed.push(registry.remove(at));
    }
    // Dropped after the lock, as in `register_policy`.
    drop(registry);
    !removed.is_empty()
}

/// Every policy, built-in, then [`RUST_EXTRA`], then registered from
/// Python, as dicts (what `isola policies --json` prints, read by `json.loads`).
#[pyfunction]
pub fn policies_list(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let all: Vec<&PolicyInfo> = POLICIES
        .iter()
        .chain(RUST_EXTRA)
        .chain(registry.iter().map(|r| &r.info))
        .collect();
    let value = serde_json::to_value(&all).map_err(|e| PyValueError::new_err(e.to_string()))?;
    crate::convert::json_to_py(py, &value)
}
