//! Payloads between Python and the library: Python JSON values to `serde_json` and back,
//! refusing what JSON cannot carry exactly.

use approval_gate::limits::{MAX_PAYLOAD_DEPTH, MAX_SAFE_INTEGER};
use approval_gate::{CanonicalPayload, Error, PayloadError, StatusReport};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// A JSON Pointer segment, escaped as RFC 6901 says.
fn pointer(path: &str, segment: &str) -> String {
    format!("{path}/{}", segment.replace('~', "~0").replace('/', "~1"))
}

/// Why a Python value cannot be a payload: a refusal of the payload, before any digest exists.
fn refuse(problem: String) -> Error {
    Error::InvalidPayload(PayloadError::Serialize(problem))
}

/// A Python JSON value (`dict` with `str` keys, `list`, `tuple`, `str`, `int`, `float`,
/// `bool`, `None`) as a `serde_json::Value`, refusing whatever JSON cannot carry exactly.
/// `bool` is checked before `int` (it is a subclass of it); integers beyond
/// ±9007199254740991 and floats that are NaN or infinite are refused here, with the path to
/// them; the library's own rules (integral floats, NUL characters, size) apply afterwards.
fn to_value(value: &Bound<'_, PyAny>, path: &str, depth: usize) -> Result<Value, Error> {
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        return match value.extract::<i64>() {
            Ok(int) if int.unsigned_abs() <= MAX_SAFE_INTEGER => Ok(Value::from(int)),
            _ => Err(Error::InvalidPayload(PayloadError::IntegerOutOfRange {
                path: path.to_owned(),
                value: value
                    .str()
                    .map(|s| s.to_string_lossy().chars().take(64).collect())
                    .unwrap_or_default(),
            })),
        };
    }
    if let Ok(float) = value.cast::<PyFloat>() {
        let float = float.value();
        return Number::from_f64(float).map(Value::Number).ok_or_else(|| {
            refuse(format!(
                "the float {float} at {} is not a finite number; json has no NaN or infinity",
                shown(path)
            ))
        });
    }
    if let Ok(text) = value.cast::<PyString>() {
        let text = text.to_cow().map_err(|e| {
            refuse(format!(
                "the string at {} is not valid unicode text ({e}); lone surrogates cannot be json",
                shown(path)
            ))
        })?;
        return Ok(Value::String(text.into_owned()));
    }
    let container = |depth: usize| -> Result<usize, Error> {
        if depth >= MAX_PAYLOAD_DEPTH {
            return Err(Error::InvalidPayload(PayloadError::TooDeep {
                limit: MAX_PAYLOAD_DEPTH,
                path: path.to_owned(),
            }));
        }
        Ok(depth + 1)
    };
    if let Ok(dict) = value.cast::<PyDict>() {
        let depth = container(depth)?;
        let mut map = Map::new();
        for (key, item) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                return Err(refuse(format!(
                    "the object at {} has a key of type {}; json object keys are strings only (no \
                     implicit conversion, which could merge two keys into one)",
                    shown(path),
                    type_name(&key)
                )));
            };
            let key = key.to_cow().map_err(|e| {
                refuse(format!(
                    "a key of the object at {} is not valid unicode text ({e})",
                    shown(path)
                ))
            })?;
            let item = to_value(&item, &pointer(path, &key), depth)?;
            map.insert(key.into_owned(), item);
        }
        return Ok(Value::Object(map));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let depth = container(depth)?;
        let mut items = Vec::new();
        for (index, item) in value
            .try_iter()
            .map_err(|e| refuse(e.to_string()))?
            .enumerate()
        {
            let item = item.map_err(|e| refuse(e.to_string()))?;
            items.push(to_value(&item, &pointer(path, &index.to_string()), depth)?);
        }
        return Ok(Value::Array(items));
    }
    Err(refuse(format!(
        "the value at {} is of type {}, which is not json; pass dicts, lists, strings, ints, \
         floats, bools and None (dataclasses and pydantic models through their json form)",
        shown(path),
        type_name(value)
    )))
}

/// A path as messages show it.
fn shown(path: &str) -> String {
    if path.is_empty() {
        "the top level".to_owned()
    } else {
        path.escape_debug().to_string()
    }
}

/// The name of a value's type, for messages.
fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |name| name.to_string())
}

/// The canonical payload of a Python JSON value.
pub(crate) fn canonical(value: &Bound<'_, PyAny>) -> Result<CanonicalPayload, Error> {
    Ok(CanonicalPayload::from_value(&to_value(value, "", 0)?)?)
}

/// A `serde_json::Value` as a fresh Python value (integers as `int`, other numbers as
/// `float`).
pub(crate) fn from_value(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
    Ok(match value {
        Value::Null => py.None(),
        Value::Bool(flag) => PyBool::new(py, *flag).to_owned().into_any().unbind(),
        Value::Number(number) => {
            if let Some(int) = number.as_i64() {
                int.into_pyobject(py)?.into_any().unbind()
            } else if let Some(int) = number.as_u64() {
                int.into_pyobject(py)?.into_any().unbind()
            } else {
                let float = number
                    .as_f64()
                    .ok_or_else(|| PyValueError::new_err("a number json cannot hold"))?;
                PyFloat::new(py, float).into_any().unbind()
            }
        }
        Value::String(text) => PyString::new(py, text).into_any().unbind(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(from_value(py, item)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, from_value(py, item)?)?;
            }
            dict.into_any().unbind()
        }
    })
}

/// A value the library serializes (a report, an audit line) as a Python value.
pub(crate) fn to_python<T: serde::Serialize>(py: Python<'_>, value: &T) -> PyResult<Py<PyAny>> {
    let json = serde_json::to_value(value).map_err(|e| PyValueError::new_err(e.to_string()))?;
    from_value(py, &json)
}

/// A report as the dict every front end shows (`StatusReport::to_json` with the payload).
pub(crate) fn report(py: Python<'_>, report: &StatusReport) -> PyResult<Py<PyAny>> {
    to_python(py, report)
}
