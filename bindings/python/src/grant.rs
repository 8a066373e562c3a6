//! The grant: proof of a consume, live only during the call it was made for.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use approval_gate::{Error, Gate, Grant, PayloadDigest, RequestId, Timestamp};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde_json::Value;

use crate::payload::from_value;
use crate::to_py;

/// What a grant knows while it is live.
pub(crate) struct Live {
    gate: Gate,
    id: RequestId,
    operation: Option<String>,
    payload_digest: Option<PayloadDigest>,
    expires_at: Timestamp,
    /// The approved payload, converted afresh at every read: no Python object of it is shared.
    payload: Value,
}

/// Proof, inside this process, that an approval was consumed: made only by a successful
/// consume, live only while the call it was made for runs (or until `close`).
///
/// It cannot be built from Python, copied, pickled or kept: once the call returns every
/// method raises `GrantClosed`.
#[pyclass(module = "approval_gate._native", name = "Grant", frozen)]
pub(crate) struct PyGrant {
    live: Mutex<Option<Live>>,
    /// Whether a sealed body has run under this grant: one body per grant.
    body_ran: AtomicBool,
    /// The process the grant was made in: a forked child's copy of it is closed.
    pid: u32,
}

impl PyGrant {
    pub(crate) fn new<T>(gate: &Gate, grant: &Grant<T>, payload: Value) -> Self {
        Self {
            live: Mutex::new(Some(Live {
                gate: gate.clone(),
                id: grant.id(),
                operation: grant.operation().map(str::to_owned),
                payload_digest: grant.payload_digest(),
                expires_at: grant.expires_at(),
                payload,
            })),
            body_ran: AtomicBool::new(false),
            pid: std::process::id(),
        }
    }

    /// Admits one run of a sealed body of `operation` under this grant: it must be live, made
    /// for that operation, and no body may have run under it before. Returns the request and
    /// the approved payload's digest, for the body's payload to be checked against.
    pub(crate) fn admit(
        &self,
        py: Python<'_>,
        operation: &str,
    ) -> PyResult<(RequestId, Option<PayloadDigest>)> {
        self.with(py, |live| {
            if live.operation.as_deref() != Some(operation) {
                return Err(PyTypeError::new_err(format!(
                    "this grant is for operation {:?}, not {operation:?}",
                    live.operation.as_deref().unwrap_or("")
                )));
            }
            if self.body_ran.swap(true, Ordering::SeqCst) {
                return Err(closed(py));
            }
            Ok((live.id, live.payload_digest))
        })
    }

    /// Ends the grant: every method raises from now on.
    pub(crate) fn end(&self) {
        if let Ok(mut live) = self.live.lock() {
            live.take();
        }
    }

    /// Whether this is the process the grant was made in (not a child forked under it, whose
    /// copy outlives the parent's call).
    fn in_its_process(&self) -> bool {
        std::process::id() == self.pid
    }

    fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&Live) -> PyResult<R>) -> PyResult<R> {
        let live = self
            .live
            .lock()
            .map_err(|_| PyValueError::new_err("the grant's lock is poisoned"))?;
        match live.as_ref() {
            Some(live) if self.in_its_process() => f(live),
            _ => Err(closed(py)),
        }
    }
}

/// `approval_gate.errors.GrantClosed`.
pub(crate) fn closed(py: Python<'_>) -> PyErr {
    let made = || -> PyResult<PyErr> {
        let class = py.import("approval_gate.errors")?.getattr("GrantClosed")?;
        Ok(PyErr::from_value(class.call1((
            "this grant is closed: it was live only inside the call it was made for, in the process \
             that made it, and authorizes nothing now",
        ))?))
    };
    made().unwrap_or_else(|failure| failure)
}

#[pymethods]
impl PyGrant {
    /// The consumed request's id.
    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |live| Ok(live.id.as_str().to_owned()))
    }

    /// The approved operation, if the request carried one.
    #[getter]
    fn operation(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |live| Ok(live.operation.clone()))
    }

    /// The BLAKE3 digest (64 hex characters) of the approved canonical payload, if any.
    #[getter]
    fn payload_digest(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |live| Ok(live.payload_digest.map(|d| d.to_hex())))
    }

    /// When the approval stops being usable, as RFC 3339 text.
    #[getter]
    fn expires_at(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |live| Ok(live.expires_at.to_string()))
    }

    /// The approved payload as JSON values, rebuilt from the approved canonical bytes
    /// (`None` for a request without one): a fresh copy at every read, so nothing done to one
    /// changes what the grant holds.
    #[getter]
    fn payload(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.with(py, |live| from_value(py, &live.payload))
    }

    /// Whether the grant is still live (inside its call, not closed).
    #[getter]
    fn live(&self) -> bool {
        self.in_its_process() && self.live.lock().is_ok_and(|live| live.is_some())
    }

    /// Reads the gate's clock and raises `ApprovalExpired` once it is past the expiry (the
    /// library's `Grant::assert_active`). Call it immediately before the side effect.
    fn assert_active(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |live| {
            if live.gate.now() > live.expires_at {
                return Err(to_py(
                    py,
                    &Error::ApprovalExpired {
                        id: live.id,
                        expired_at: live.expires_at,
                    },
                ));
            }
            Ok(())
        })
    }

    /// Ends the grant now; every method raises afterwards. Closing twice is harmless.
    fn close(&self) {
        self.end();
    }

    fn __enter__(slf: Py<Self>, py: Python<'_>) -> PyResult<Py<Self>> {
        slf.get().with(py, |_| Ok(()))?;
        Ok(slf)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.end();
        false
    }

    #[allow(clippy::unused_self)] // Python's protocol: a method of the instance
    fn __copy__(&self) -> PyResult<()> {
        Err(PyTypeError::new_err("a grant cannot be copied"))
    }

    #[allow(clippy::unused_self)] // Python's protocol: a method of the instance
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(PyTypeError::new_err("a grant cannot be copied"))
    }

    #[allow(clippy::unused_self)] // Python's protocol: a method of the instance
    fn __reduce__(&self) -> PyResult<()> {
        Err(PyTypeError::new_err("a grant cannot be pickled or stored"))
    }

    #[allow(clippy::unused_self)] // Python's protocol: a method of the instance
    fn __reduce_ex__(&self, _protocol: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(PyTypeError::new_err("a grant cannot be pickled or stored"))
    }

    #[allow(clippy::unused_self)] // Python's protocol: a method of the instance
    fn __getstate__(&self) -> PyResult<()> {
        Err(PyTypeError::new_err("a grant cannot be pickled or stored"))
    }

    fn __repr__(&self) -> String {
        match self.live.lock().ok().as_deref() {
            Some(Some(live)) if self.in_its_process() => format!(
                "<Grant of request {} (operation {:?}), live>",
                live.id.as_str(),
                live.operation.as_deref().unwrap_or("")
            ),
            _ => "<Grant, closed>".to_owned(),
        }
    }
}
