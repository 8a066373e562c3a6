//! Python bindings of approval-gate: the `approval_gate._native` extension module.
//!
//! Everything that decides goes through the Rust library itself: payloads are canonicalized by
//! its `CanonicalPayload`, consumes and executions are its `Gate::consume` and
//! `Gate::execute_approved`, refusals are its `Error`s. This module only converts values
//! between Python and Rust, and releases the GIL while the library works (fsyncs, file locks,
//! database calls, waits). The Python package (`approval_gate`) adds the decorator, the
//! exception classes and the typed views.

mod gate;
mod grant;
mod payload;
mod sealed;
mod wait;

use std::time::Duration;

use approval_gate::limits::MAX_SAFE_INTEGER;
use approval_gate::{Error, ErrorCode, RequestId};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use gate::PyGate;
use grant::PyGrant;
use payload::canonical;
use sealed::PySealedBody;
use wait::PyAsyncWait;

/// The Python exception for a library error: an instance of the class
/// `approval_gate.errors` keeps for its code, carrying the code, the message, the request and
/// where it stands. If that module cannot be imported, its import error is raised instead:
/// either way the caller gets an exception, never a success.
fn to_py(py: Python<'_>, error: &Error) -> PyErr {
    let made = || -> PyResult<PyErr> {
        let module = py.import("approval_gate.errors")?;
        let instance = module.getattr("_from_native")?.call1((
            error.code().as_str(),
            error.to_string(),
            error.request_id().map(|id| id.as_str().to_owned()),
            error.status().map(approval_gate::EffectiveStatus::as_str),
            error.took_effect(),
        ))?;
        Ok(PyErr::from_value(instance))
    };
    made().unwrap_or_else(|failure| failure)
}

/// Parses a request id, raising `InvalidId` for anything else.
fn parse_id(py: Python<'_>, id: &str) -> PyResult<RequestId> {
    RequestId::parse(id).map_err(|invalid| to_py(py, &Error::from(invalid)))
}

/// Seconds as a `Duration`, refusing what is negative or not a number.
fn seconds(field: &str, value: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value).map_err(|_| {
        PyValueError::new_err(format!(
            "{field} must be a non-negative number of seconds, not {value}"
        ))
    })
}

/// The canonical text (RFC 8785) and BLAKE3 digest of a Python JSON value, as the library
/// computes them; raises `InvalidPayload` for what cannot be one.
#[pyfunction]
fn canonicalize(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<(String, String)> {
    let payload = canonical(value).map_err(|e| to_py(py, &e))?;
    Ok((payload.as_str().to_owned(), payload.digest().to_hex()))
}

/// Every error code of the library, in declaration order.
#[pyfunction]
fn error_codes() -> Vec<&'static str> {
    ErrorCode::ALL.iter().map(|code| code.as_str()).collect()
}

/// The library's error table as `(code, class, family)`, in declaration order: what
/// `approval_gate.errors` is checked against (each code's exception class, its base, its
/// family).
#[pyfunction]
fn error_table() -> Vec<(&'static str, &'static str, &'static str)> {
    ErrorCode::ALL
        .iter()
        .map(|code| (code.as_str(), code.class().as_str(), code.family().as_str()))
        .collect()
}

/// Applies the PostgreSQL store's schema (what `approval-gate db init` does); returns its
/// version. An operator's step, run once per database.
#[pyfunction]
fn postgres_init(py: Python<'_>, url: String) -> PyResult<u32> {
    py.detach(move || approval_gate::postgres::init(&url))
        .map_err(|e| to_py(py, &e))
}

/// Raises `InvalidInput` unless `name` is a valid operation name (the library's
/// `check_operation_name`): what `requires_approval` checks when it decorates.
#[pyfunction]
fn check_operation_name(py: Python<'_>, name: &str) -> PyResult<()> {
    approval_gate::check_operation_name(name).map_err(|e| to_py(py, &e))
}

/// The extension module.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyGate>()?;
    module.add_class::<PyGrant>()?;
    module.add_class::<PyAsyncWait>()?;
    module.add_class::<PySealedBody>()?;
    module.add_function(wrap_pyfunction!(canonicalize, module)?)?;
    module.add_function(wrap_pyfunction!(error_codes, module)?)?;
    module.add_function(wrap_pyfunction!(error_table, module)?)?;
    module.add_function(wrap_pyfunction!(postgres_init, module)?)?;
    module.add_function(wrap_pyfunction!(check_operation_name, module)?)?;
    module.add("MAX_SAFE_INTEGER", MAX_SAFE_INTEGER)?;
    Ok(())
}
