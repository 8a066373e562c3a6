//! Python bindings of approval-gate: the `approval_gate._native` extension module.
//!
//! Everything that decides goes through the Rust library itself: payloads are canonicalized by
//! its `CanonicalPayload`, consumes and executions are its `Gate::consume` and
//! `Gate::execute_approved`, refusals are its `Error`s. This module only converts values
//! between Python and Rust, and releases the GIL while the library works (fsyncs, file locks,
//! database calls, waits). The Python package (`approval_gate`) adds the decorator, the
//! exception classes and the typed views.

use std::fmt;
use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use approval_gate::limits::{MAX_PAYLOAD_DEPTH, MAX_SAFE_INTEGER};
use approval_gate::{
    Binding, CanonicalPayload, Decision, Error, ErrorCode, Gate, Grant, Limits, Location,
    NewRequest, PayloadDigest, PayloadError, Policy, RequestId, StatusReport, Timestamp, Waited,
    Waiting,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

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
fn canonical(value: &Bound<'_, PyAny>) -> Result<CanonicalPayload, Error> {
    Ok(CanonicalPayload::from_value(&to_value(value, "", 0)?)?)
}

/// A `serde_json::Value` as a fresh Python value (integers as `int`, other numbers as
/// `float`).
fn from_value(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
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
fn to_python<T: serde::Serialize>(py: Python<'_>, value: &T) -> PyResult<Py<PyAny>> {
    let json = serde_json::to_value(value).map_err(|e| PyValueError::new_err(e.to_string()))?;
    from_value(py, &json)
}

/// A report as the dict every front end shows (`StatusReport::to_json` with the payload).
fn report(py: Python<'_>, report: &StatusReport) -> PyResult<Py<PyAny>> {
    to_python(py, report)
}

/// Seconds as a `Duration`, refusing what is negative or not a number.
fn seconds(field: &str, value: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value).map_err(|_| {
        PyValueError::new_err(format!(
            "{field} must be a non-negative number of seconds, not {value}"
        ))
    })
}

/// What an execution's body did: returned a value, or raised. The message is taken while the
/// GIL is held, so the library can write it to the audit log without Python.
enum Failure {
    /// The gate refused, or failed around the body.
    Gate(Error),
    /// The body raised: the exception, and its text for the audit log.
    Body(PyErr, String),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Self::Gate(error)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Gate(error) => error.fmt(f),
            Self::Body(_, text) => f.write_str(text),
        }
    }
}

/// The text of a Python exception for the audit log: `TypeName: message`.
fn describe(py: Python<'_>, error: &PyErr) -> String {
    let name = error
        .get_type(py)
        .name()
        .map_or_else(|_| "exception".to_owned(), |name| name.to_string());
    let value = error.value(py);
    match value.str() {
        Ok(text) if !text.to_string_lossy().is_empty() => {
            format!("{name}: {}", text.to_string_lossy())
        }
        _ => name,
    }
}

/// What a grant knows while it is live.
struct Live {
    gate: Gate,
    id: RequestId,
    operation: Option<String>,
    payload_digest: Option<PayloadDigest>,
    expires_at: Timestamp,
    payload: Py<PyAny>,
}

/// Proof, inside this process, that an approval was consumed: made only by a successful
/// consume, live only while the call it was made for runs (or until `close`).
///
/// It cannot be built from Python, copied, pickled or kept: once the call returns every
/// method raises `GrantClosed`.
#[pyclass(module = "approval_gate._native", name = "Grant", frozen)]
struct PyGrant {
    live: Mutex<Option<Live>>,
}

impl PyGrant {
    fn new<T>(gate: &Gate, grant: &Grant<T>, payload: Py<PyAny>) -> Self {
        Self {
            live: Mutex::new(Some(Live {
                gate: gate.clone(),
                id: grant.id(),
                operation: grant.operation().map(str::to_owned),
                payload_digest: grant.payload_digest(),
                expires_at: grant.expires_at(),
                payload,
            })),
        }
    }

    /// Ends the grant: every method raises from now on.
    fn end(&self) {
        if let Ok(mut live) = self.live.lock() {
            live.take();
        }
    }

    fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&Live) -> PyResult<R>) -> PyResult<R> {
        let live = self
            .live
            .lock()
            .map_err(|_| PyValueError::new_err("the grant's lock is poisoned"))?;
        match live.as_ref() {
            Some(live) => f(live),
            None => Err(closed(py)),
        }
    }
}

/// `approval_gate.errors.GrantClosed`.
fn closed(py: Python<'_>) -> PyErr {
    let made = || -> PyResult<PyErr> {
        let class = py.import("approval_gate.errors")?.getattr("GrantClosed")?;
        Ok(PyErr::from_value(class.call1((
            "this grant is closed: it was live only inside the call it was made for, and \
             authorizes nothing now",
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
    /// (`None` for a request without one).
    #[getter]
    fn payload(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.with(py, |live| Ok(live.payload.clone_ref(py)))
    }

    /// Whether the grant is still live (inside its call, not closed).
    #[getter]
    fn live(&self) -> bool {
        self.live.lock().is_ok_and(|live| live.is_some())
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
            Some(Some(live)) => format!(
                "<Grant of request {} (operation {:?}), live>",
                live.id.as_str(),
                live.operation.as_deref().unwrap_or("")
            ),
            _ => "<Grant, closed>".to_owned(),
        }
    }
}

/// Wakes an asyncio event loop from the library's wait thread by writing a byte to a socket
/// the loop watches (`loop.add_reader`). It never touches Python: the library calls a waker
/// while it holds the lock that `poll` takes, so a waker that needed the GIL could deadlock
/// with a `poll` holding it.
struct WakeLoop {
    tx: UnixStream,
}

impl Wake for WakeLoop {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Non-blocking: a full socket already holds a wake-up the loop has not read yet.
        let _ = (&self.tx).write(&[1]);
    }
}

/// A wait for a decision as the library's future (`Watch::wait_for_decision_async`), polled
/// from an asyncio event loop: the library's own thread waits, and wakes the loop through the
/// socket `fileno()` names. Closing it (or dropping it) ends the wait and its thread at once.
#[pyclass(module = "approval_gate._native", name = "AsyncWait", frozen)]
struct PyAsyncWait {
    waiting: Mutex<Option<Waiting>>,
    waker: Waker,
    rx: UnixStream,
}

#[pymethods]
impl PyAsyncWait {
    /// The socket to watch for readability: readable when the answer may be ready.
    fn fileno(&self) -> i32 {
        self.rx.as_raw_fd()
    }

    /// `(decided, report)` once the wait is over, `None` while it is not. Never blocks.
    fn poll(&self, py: Python<'_>) -> PyResult<Option<(bool, Py<PyAny>)>> {
        // Drain the wake-ups first: one written after this is for a later poll.
        let mut buffer = [0u8; 64];
        while matches!((&self.rx).read(&mut buffer), Ok(n) if n > 0) {}
        let mut waiting = self
            .waiting
            .lock()
            .map_err(|_| PyValueError::new_err("the wait's lock is poisoned"))?;
        let Some(future) = waiting.as_mut() else {
            return Err(PyValueError::new_err("this wait is closed"));
        };
        let mut context = Context::from_waker(&self.waker);
        match Pin::new(future).poll(&mut context) {
            Poll::Pending => Ok(None),
            Poll::Ready(answer) => {
                waiting.take();
                let waited = answer.map_err(|e| to_py(py, &e))?;
                let decided = matches!(waited, Waited::Decided(_));
                Ok(Some((decided, report(py, waited.report())?)))
            }
        }
    }

    /// Ends the wait and its thread now; closing twice is harmless.
    fn close(&self) {
        let future = self
            .waiting
            .lock()
            .ok()
            .and_then(|mut waiting| waiting.take());
        drop(future);
    }
}

/// The approval gate over a store: requests, decisions, single-use consumes.
#[pyclass(module = "approval_gate._native", name = "Gate", frozen)]
struct PyGate {
    gate: Gate,
}

impl PyGate {
    /// The binding of what the caller is about to run; a payload that cannot be bound is a
    /// refused consume, recorded as one (as `#[requires_approval]` does).
    fn binding(
        &self,
        id: RequestId,
        action: String,
        operation: Option<String>,
        payload: Option<&Bound<'_, PyAny>>,
    ) -> Result<Binding, Error> {
        let mut binding = Binding::new(action);
        if let Some(operation) = operation {
            binding = binding.operation(operation);
        }
        if let Some(payload) = payload {
            match canonical(payload) {
                Ok(payload) => binding = binding.payload(payload),
                Err(refusal) => {
                    self.gate.record_refused_consume(id, &refusal);
                    return Err(refusal);
                }
            }
        }
        Ok(binding)
    }
}

#[pymethods]
impl PyGate {
    /// Opens a store: a directory (a path, or a `file:` URL) or a `postgres://` URL; `None`
    /// for the default (`APPROVAL_GATE_STORE`, else `APPROVAL_GATE_DIR`, else
    /// `~/.approval-gate`). `approvers` is an OpenSSH `allowed_signers` file and `quorum` a
    /// list of `(operation pattern, approvals)`: together the library's `Policy`.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one each
    #[pyo3(signature = (store=None, *, approvers=None, quorum=None, default_ttl=None, max_pending=None, max_requests=None))]
    fn open(
        py: Python<'_>,
        store: Option<&Bound<'_, PyAny>>,
        approvers: Option<PathBuf>,
        quorum: Option<Vec<(String, u32)>>,
        default_ttl: Option<f64>,
        max_pending: Option<usize>,
        max_requests: Option<usize>,
    ) -> PyResult<Self> {
        let location = match store {
            None => None,
            Some(store) if store.is_instance_of::<PyString>() => {
                Some(Location::parse(&store.extract::<String>()?).map_err(|e| to_py(py, &e))?)
            }
            Some(store) => Some(Location::Dir(store.extract::<PathBuf>()?)),
        };
        let mut limits = Limits::default();
        if let Some(ttl) = default_ttl {
            limits = limits.default_ttl(seconds("default_ttl", ttl)?);
        }
        if let Some(max) = max_pending {
            limits = limits.max_pending(max);
        }
        if let Some(max) = max_requests {
            limits = limits.max_requests(max);
        }
        let policy = match (approvers, quorum) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err(to_py(
                    py,
                    &Error::InvalidInput {
                        field: "quorum",
                        problem: "a quorum needs trusted approvers to count: give approvers, an \
                                  OpenSSH allowed_signers file"
                            .into(),
                    },
                ));
            }
            (Some(path), quorum) => {
                let mut policy = Policy::load_allowed_signers(path).map_err(|e| to_py(py, &e))?;
                for (pattern, approvals) in quorum.unwrap_or_default() {
                    policy = policy
                        .require(&pattern, approvals)
                        .map_err(|e| to_py(py, &e))?;
                }
                // A table without `*` is refused, never completed with a silent one.
                policy.check_quorum_table().map_err(|e| to_py(py, &e))?;
                Some(policy)
            }
        };
        let opened = py.detach(move || {
            let mut builder = Gate::builder().limits(limits);
            if let Some(location) = location {
                builder = builder.store(location);
            }
            if let Some(policy) = policy {
                builder = builder.policy(policy);
            }
            builder.open()
        });
        opened.map(|gate| Self { gate }).map_err(|e| to_py(py, &e))
    }

    /// Where the store is (a PostgreSQL URL is shown without its password).
    #[getter]
    fn location(&self) -> String {
        match self.gate.location() {
            Location::Dir(dir) => dir.display().to_string(),
            other => format!("{other}"),
        }
    }

    /// Files a request for a human decision. Returns `(id, deduplicated, report)`.
    #[pyo3(signature = (action, reason, *, operation=None, payload=None, ttl=None, requested_by=None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one each
    fn request_approval(
        &self,
        py: Python<'_>,
        action: String,
        reason: String,
        operation: Option<String>,
        payload: Option<&Bound<'_, PyAny>>,
        ttl: Option<f64>,
        requested_by: Option<String>,
    ) -> PyResult<(String, bool, Py<PyAny>)> {
        let mut new = NewRequest::new(action, reason);
        if let Some(operation) = operation {
            new = new.operation(operation);
        }
        if let Some(payload) = payload {
            new = new.payload(canonical(payload).map_err(|e| to_py(py, &e))?);
        }
        if let Some(ttl) = ttl {
            new = new.ttl(seconds("ttl", ttl)?);
        }
        if let Some(who) = requested_by {
            new = new.requested_by(who);
        }
        let gate = self.gate.clone();
        let submitted = py
            .detach(move || {
                let submitted = gate.request_approval(new)?;
                let id = submitted.request.id();
                Ok::<_, Error>((id, submitted.deduplicated, gate.status(id)?))
            })
            .map_err(|e| to_py(py, &e))?;
        let (id, deduplicated, status) = submitted;
        Ok((id.as_str().to_owned(), deduplicated, report(py, &status)?))
    }

    /// Where a request stands, as the report dict. Never an authorization.
    fn check(&self, py: Python<'_>, id: &str) -> PyResult<Py<PyAny>> {
        let id = parse_id(py, id)?;
        let gate = self.gate.clone();
        let status = py
            .detach(move || gate.status(id))
            .map_err(|e| to_py(py, &e))?;
        report(py, &status)
    }

    /// Waits, without holding the GIL, until the request is no longer pending or `timeout`
    /// seconds pass; woken by the store's events. Returns `(decided, report)`.
    fn wait(&self, py: Python<'_>, id: &str, timeout: f64) -> PyResult<(bool, Py<PyAny>)> {
        let id = parse_id(py, id)?;
        let timeout = seconds("timeout", timeout)?;
        let gate = self.gate.clone();
        let waited = py
            .detach(move || gate.wait_for_decision(id, timeout))
            .map_err(|e| to_py(py, &e))?;
        let decided = matches!(waited, Waited::Decided(_));
        Ok((decided, report(py, waited.report())?))
    }

    /// The same wait for asyncio: starts watching the store (call it off the event loop: a
    /// PostgreSQL store connects), and returns the wait to poll from the loop whenever its
    /// `fileno()` is readable.
    fn wait_async(&self, py: Python<'_>, id: &str, timeout: f64) -> PyResult<PyAsyncWait> {
        let id = parse_id(py, id)?;
        let timeout = seconds("timeout", timeout)?;
        let (tx, rx) = UnixStream::pair()
            .and_then(|(tx, rx)| {
                tx.set_nonblocking(true)?;
                rx.set_nonblocking(true)?;
                Ok((tx, rx))
            })
            .map_err(|e| {
                to_py(
                    py,
                    &Error::Io {
                        op: "making the wait's wake-up socket",
                        path: PathBuf::new(),
                        source: e,
                    },
                )
            })?;
        let gate = self.gate.clone();
        let waiting = py.detach(move || gate.watch().wait_for_decision_async(id, timeout));
        Ok(PyAsyncWait {
            waiting: Mutex::new(Some(waiting)),
            waker: Waker::from(Arc::new(WakeLoop { tx })),
            rx,
        })
    }

    /// The human's side: approves request `id` as `by`. Under a policy, `signed` is
    /// `(principal, armored SSHSIG of the decision statement)`.
    #[pyo3(signature = (id, *, by, reason=None, signed=None))]
    fn approve(
        &self,
        py: Python<'_>,
        id: &str,
        by: String,
        reason: Option<String>,
        signed: Option<(String, String)>,
    ) -> PyResult<Py<PyAny>> {
        let id = parse_id(py, id)?;
        let mut decision = Decision::by(by);
        if let Some(reason) = reason {
            decision = decision.reason(reason);
        }
        if let Some((principal, signature)) = signed {
            decision = decision.signed(principal, signature);
        }
        let gate = self.gate.clone();
        let status = py
            .detach(move || gate.approve(id, &decision))
            .map_err(|e| to_py(py, &e))?;
        report(py, &status)
    }

    /// The human's side: denies request `id` as `by`.
    #[pyo3(signature = (id, *, by, reason=None))]
    fn deny(
        &self,
        py: Python<'_>,
        id: &str,
        by: String,
        reason: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let id = parse_id(py, id)?;
        let mut decision = Decision::by(by);
        if let Some(reason) = reason {
            decision = decision.reason(reason);
        }
        let gate = self.gate.clone();
        let status = py
            .detach(move || gate.deny(id, &decision))
            .map_err(|e| to_py(py, &e))?;
        report(py, &status)
    }

    /// The human's side: revokes the approval of request `id` before it is used.
    #[pyo3(signature = (id, *, by, reason=None))]
    fn revoke(
        &self,
        py: Python<'_>,
        id: &str,
        by: String,
        reason: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let id = parse_id(py, id)?;
        let mut decision = Decision::by(by);
        if let Some(reason) = reason {
            decision = decision.reason(reason);
        }
        let gate = self.gate.clone();
        let status = py
            .detach(move || gate.revoke(id, &decision))
            .map_err(|e| to_py(py, &e))?;
        report(py, &status)
    }

    /// The statement an approver signs (`ssh-keygen -Y sign -n approval-gate`) to approve
    /// request `id` as `principal` under a policy.
    fn decision_statement<'py>(
        &self,
        py: Python<'py>,
        id: &str,
        principal: &str,
    ) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let id = parse_id(py, id)?;
        let gate = self.gate.clone();
        let principal = principal.to_owned();
        let statement = py
            .detach(move || gate.status(id)?.decision_statement(&principal))
            .map_err(|e| to_py(py, &e))?;
        Ok(pyo3::types::PyBytes::new(py, &statement))
    }

    /// Consumes the approval of request `id`, bound to exactly this action, operation and
    /// payload: the library's `Gate::consume`. The grant is live until closed.
    #[pyo3(signature = (id, action, *, operation=None, payload=None))]
    fn consume(
        &self,
        py: Python<'_>,
        id: &str,
        action: String,
        operation: Option<String>,
        payload: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyGrant> {
        let id = parse_id(py, id)?;
        let binding = self
            .binding(id, action, operation, payload)
            .map_err(|e| to_py(py, &e))?;
        let gate = self.gate.clone();
        let grant = py
            .detach(move || gate.consume::<Value>(id, &binding))
            .map_err(|e| to_py(py, &e))?;
        let payload = from_value(py, grant.payload())?;
        Ok(PyGrant::new(&self.gate, &grant, payload))
    }

    /// Runs `body(grant)` exactly once for an approved request, and only then: the library's
    /// `Gate::execute_approved` (consume, record the start, re-check the expiry, run, record
    /// the outcome). The grant is closed when `body` returns; an exception from `body` is
    /// recorded as an error outcome and raised again.
    #[pyo3(signature = (id, action, body, *, operation=None, payload=None))]
    fn execute_approved(
        &self,
        py: Python<'_>,
        id: &str,
        action: String,
        body: Py<PyAny>,
        operation: Option<String>,
        payload: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let id = parse_id(py, id)?;
        let binding = self
            .binding(id, action, operation, payload)
            .map_err(|e| to_py(py, &e))?;
        let gate = self.gate.clone();
        let result = py.detach(move || {
            gate.execute_approved(id, &binding, |grant: &Grant<Value>| {
                Python::attach(|py| {
                    let call = || -> PyResult<Py<PyAny>> {
                        let payload = from_value(py, grant.payload())?;
                        let live = Py::new(py, PyGrant::new(&gate, grant, payload))?;
                        let result = body.call1(py, (live.clone_ref(py),));
                        live.get().end();
                        result
                    };
                    call().map_err(|error| {
                        let text = describe(py, &error);
                        Failure::Body(error, text)
                    })
                })
            })
        });
        match result {
            Ok(value) => Ok(value),
            Err(Failure::Gate(error)) => Err(to_py(py, &error)),
            Err(Failure::Body(error, _)) => Err(error),
        }
    }

    /// Records a consume of `id` refused before it could be asked, as the library's
    /// `Gate::record_refused_consume`: the executor's payload type cannot carry the approved
    /// payload (`payload_type`). Returns the exception to raise.
    fn refuse_payload_type(
        &self,
        py: Python<'_>,
        id: &str,
        problem: String,
    ) -> PyResult<Py<PyAny>> {
        let id = parse_id(py, id)?;
        let refusal = Error::PayloadType {
            id,
            problem: PayloadError::Deserialize(problem),
        };
        let gate = self.gate.clone();
        let error = &refusal;
        py.detach(|| gate.record_refused_consume(id, error));
        Ok(to_py(py, &refusal).into_value(py).into_any())
    }

    /// Makes the audit log agree with the claims after a crash (runs on every open too).
    /// Returns the ids whose execution outcome is now recorded as unknown.
    fn recover(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let gate = self.gate.clone();
        let recovery = py
            .detach(move || gate.recover())
            .map_err(|e| to_py(py, &e))?;
        Ok(recovery
            .unknown_outcomes
            .iter()
            .map(|id| id.as_str().to_owned())
            .collect())
    }

    /// Every line of the audit log, as dicts (`seq`, `ts`, `event`, `id`, and the details).
    fn audit_records(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let gate = self.gate.clone();
        let records = py
            .detach(move || gate.audit_records())
            .map_err(|e| to_py(py, &e))?;
        to_python(py, &records)
    }

    /// Verifies the audit log's chain; raises `AuditBroken` or `AuditInconsistent`.
    fn verify_audit(&self, py: Python<'_>) -> PyResult<u64> {
        let gate = self.gate.clone();
        let summary = py
            .detach(move || gate.verify_audit())
            .map_err(|e| to_py(py, &e))?;
        Ok(summary.lines)
    }

    fn __repr__(&self) -> String {
        format!("<Gate {}>", self.location())
    }
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
    module.add_function(wrap_pyfunction!(canonicalize, module)?)?;
    module.add_function(wrap_pyfunction!(error_codes, module)?)?;
    module.add_function(wrap_pyfunction!(postgres_init, module)?)?;
    module.add_function(wrap_pyfunction!(check_operation_name, module)?)?;
    module.add("MAX_SAFE_INTEGER", MAX_SAFE_INTEGER)?;
    Ok(())
}
