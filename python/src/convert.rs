//! A Python dict as a TOML document, so that a scenario written as a dict
//! goes through the very checks a scenario file does (`Scenario::parse`).
//!
//! Written by hand because what a serde bridge (pythonize) reports for a
//! value TOML cannot hold is the value, not where it is: here every
//! refusal names the dotted path of its key (`tenant[1].workload.count`).
//! Only the shape is checked here (what TOML can represent); every
//! meaning (units, ranges, known keys) is the scenario checker's.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Deepest nesting accepted: a scenario nests a few levels; a
/// self-referencing or absurdly deep structure is refused, not recursed.
const MAX_DEPTH: usize = 32;

/// Why a value cannot be a TOML value: where (a dotted key path) and why.
#[derive(Debug)]
pub struct ShapeError {
    /// The dotted path of the offending key.
    pub key: String,
    /// What is wrong with its value.
    pub message: String,
}

/// `dict` as a TOML table.
pub fn dict_to_toml(dict: &Bound<'_, PyAny>) -> Result<toml::Table, ShapeError> {
    match value_to_toml(dict, "", 0)? {
        toml::Value::Table(t) => Ok(t),
        _ => Err(ShapeError {
            key: "(top level)".into(),
            message: format!("a scenario is a dict, not {}", type_name(dict)),
        }),
    }
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "an unknown type".into())
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn value_to_toml(value: &Bound<'_, PyAny>, path: &str, depth: usize) -> Result<toml::Value, ShapeError> {
    let fail = |message: String| ShapeError {
        key: if path.is_empty() {
            "(top level)".into()
        } else {
            path.to_string()
        },
        message,
    };
    if depth > MAX_DEPTH {
        return Err(fail(format!("nested more than {MAX_DEPTH} levels deep")));
    }
    // bool before int: Python's bool is an int.
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(toml::Value::Boolean(b.is_true()));
    }
    if value.cast::<PyInt>().is_ok() {
        return value
            .extract::<i64>()
            .map(toml::Value::Integer)
            .map_err(|_| fail(format!("{value} does not fit in a 64-bit signed integer")));
    }
    if let Ok(f) = value.cast::<PyFloat>() {
        let x = f.value();
        if !x.is_finite() {
            return Err(fail(format!("{x} is not a finite number")));
        }
        return Ok(toml::Value::Float(x));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return s
            .to_cow()
            .map(|s| toml::Value::String(s.into_owned()))
            .map_err(|_| fail("a string that is not valid UTF-8".into()));
    }
    if let Ok(d) = value.cast::<PyDict>() {
        let mut table = toml::Table::new();
        for (k, v) in d.iter() {
            let Ok(k) = k.cast::<PyString>().map(|s| s.to_string()) else {
                return Err(fail(format!("a key that is not a string: {k}")));
            };
            let item = value_to_toml(&v, &child(path, &k), depth + 1)?;
            table.insert(k, item);
        }
        return Ok(toml::Value::Table(table));
    }
    let items: Vec<Bound<'_, PyAny>> = if let Ok(l) = value.cast::<PyList>() {
        l.iter().collect()
    } else if let Ok(t) = value.cast::<PyTuple>() {
        t.iter().collect()
    } else if value.is_none() {
        return Err(fail("None: leave the key out instead".into()));
    } else {
        return Err(fail(format!(
            "a value of type `{}` cannot be a scenario value (use a dict, list, str, int, float or bool)",
            type_name(value)
        )));
    };
    let mut array = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        array.push(value_to_toml(item, &format!("{path}[{i}]"), depth + 1)?);
    }
    Ok(toml::Value::Array(array))
}

/// The dotted key path of line `line` (1-based) of `text`, TOML as
/// `toml::to_string` writes a table (headers `[a.b]` and `[[a]]`, then
/// `key = value` lines): where a checker's error about the TOML made from
/// a dict points, said in the dict's terms (`tenant[1].workload.count`).
pub fn key_at_line(text: &str, line: usize) -> Option<String> {
    let mut arrays: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut header = String::new();
    for (i, raw) in text.lines().enumerate().take(line) {
        let l = raw.trim();
        let is_array = l.starts_with("[[");
        if l.starts_with('[') {
            let name = l.trim_start_matches('[').trim_end_matches(']').trim();
            let segments: Vec<&str> = name.split('.').map(|s| s.trim().trim_matches('"')).collect();
            if is_array {
                *arrays.entry(segments.join(".")).or_insert(0) += 1;
            }
            // Each prefix that is an array of tables gets its current index.
            let mut path = String::new();
            for k in 0..segments.len() {
                path = child(&path, segments[k]);
                if let Some(n) = arrays.get(&segments[..=k].join(".")) {
                    path = format!("{path}[{}]", n - 1);
                }
            }
            header = path;
            if i + 1 == line {
                return Some(header);
            }
            continue;
        }
        if i + 1 == line {
            let key = l.split('=').next()?.trim().trim_matches('"');
            return (!key.is_empty()).then(|| child(&header, key));
        }
    }
    None
}

/// `value` as the Python objects `json.loads` makes of its JSON text
/// (dicts, lists, int, float, str, bool, None), without the text: results
/// cross as `isola sim --json` prints them (a non-finite float, which JSON
/// writes as null, is None here too), with no JSON module to import.
pub fn json_to_py<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use pyo3::IntoPyObjectExt;
    use serde_json::Value;
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_bound_py_any(py)?,
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u.into_bound_py_any(py)?,
            (None, Some(i)) => i.into_bound_py_any(py)?,
            // Neither integer form: a float (finite, or it would be null).
            _ => n.as_f64().unwrap_or(f64::NAN).into_bound_py_any(py)?,
        },
        Value::String(s) => s.into_bound_py_any(py)?,
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, json_to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}
