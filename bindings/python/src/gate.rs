//! The gate: the library's `Gate` with the GIL released while it works.

use std::fmt;
use std::path::PathBuf;

use approval_gate::settings::{Flags, Settings};
use approval_gate::{
    Binding, Decision, Error, Gate, Grant, Location, NewRequest, PayloadError, RequestId,
    StatusReport, Waited,
};
use pyo3::prelude::*;
use pyo3::types::PyString;
use serde_json::Value;

use crate::grant::PyGrant;
use crate::payload::{canonical, report, to_python};
use crate::wait::PyAsyncWait;
use crate::{parse_id, seconds, to_py};

/// What an execution's body did: returned a value, or raised. The message is taken while the
/// GIL is held, so the library can write it to the audit log without Python.
pub(crate) enum Failure {
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
pub(crate) fn describe(py: Python<'_>, error: &PyErr) -> String {
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

/// The approval gate over a store: requests, decisions, single-use consumes.
#[pyclass(module = "approval_gate._native", name = "Gate", frozen)]
pub(crate) struct PyGate {
    gate: Gate,
}

impl PyGate {
    /// A decision on request `id`, made with the GIL released; the request as it now stands.
    fn decide(
        &self,
        py: Python<'_>,
        id: &str,
        decision: Decision,
        make: fn(&Gate, RequestId, &Decision) -> Result<StatusReport, Error>,
    ) -> PyResult<Py<PyAny>> {
        let id = parse_id(py, id)?;
        let gate = self.gate.clone();
        let status = py
            .detach(move || make(&gate, id, &decision))
            .map_err(|e| to_py(py, &e))?;
        report(py, &status)
    }

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
    /// Opens a store with the operator's settings, resolved by the library's `settings` as
    /// every front end resolves them (the CLI, `exec`, the MCP server): `store`, `approvers`
    /// and `quorum` are the layer of the CLI's `--store` (`--dir` for a path object),
    /// `--approvers` and `--quorum`; then the environment, the config file and the system
    /// policy, which nothing here can lower. `default_ttl`, `max_pending` and `max_requests`,
    /// when given, replace the resolved limits.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one each
    #[pyo3(signature = (store=None, *, approvers=None, quorum=None, default_ttl=None, max_pending=None, max_requests=None))]
    fn open(
        py: Python<'_>,
        store: Option<&Bound<'_, PyAny>>,
        approvers: Option<PathBuf>,
        quorum: Option<String>,
        default_ttl: Option<f64>,
        max_pending: Option<usize>,
        max_requests: Option<usize>,
    ) -> PyResult<Self> {
        let mut flags = Flags {
            approvers,
            quorum,
            ..Flags::default()
        };
        match store {
            None => {}
            Some(store) if store.is_instance_of::<PyString>() => {
                flags.store = Some(store.extract::<String>()?);
            }
            Some(store) => flags.dir = Some(store.extract::<PathBuf>()?),
        }
        let settings = py.detach(|| Settings::resolve(&flags)).map_err(|e| {
            let refusal = Error::InvalidInput {
                field: "settings",
                problem: e.to_string(),
            };
            to_py(py, &refusal)
        })?;
        let mut limits = settings.limits();
        if let Some(ttl) = default_ttl {
            limits = limits.default_ttl(seconds("default_ttl", ttl)?);
        }
        if let Some(max) = max_pending {
            limits = limits.max_pending(max);
        }
        if let Some(max) = max_requests {
            limits = limits.max_requests(max);
        }
        let opened = py.detach(move || {
            let builder = Gate::builder().store(settings.store.value).limits(limits);
            match settings.policy {
                Some(policy) => builder.policy(policy),
                None => builder,
            }
            .open()
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
        let gate = self.gate.clone();
        PyAsyncWait::start(py, move || {
            gate.watch().wait_for_decision_async(id, timeout)
        })
    }

    /// The human's side: approves request `id` as `by`. Under a policy, `signed` is
    /// `(principal, armored SSHSIG of the decision statement, or a passkey assertion over its
    /// SHA-256 in the library's WebAuthn envelope)`.
    #[pyo3(signature = (id, *, by, reason=None, signed=None))]
    fn approve(
        &self,
        py: Python<'_>,
        id: &str,
        by: String,
        reason: Option<String>,
        signed: Option<(String, String)>,
    ) -> PyResult<Py<PyAny>> {
        let mut decision = decision(by, reason);
        if let Some((principal, signature)) = signed {
            decision = decision.signed(principal, signature);
        }
        self.decide(py, id, decision, Gate::approve)
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
        self.decide(py, id, decision(by, reason), Gate::deny)
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
        self.decide(py, id, decision(by, reason), Gate::revoke)
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
        Ok(PyGrant::new(&self.gate, &grant, grant.payload().clone()))
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
                        let live =
                            Py::new(py, PyGrant::new(&gate, grant, grant.payload().clone()))?;
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

/// A decision by `by`, with its reason if one was given.
fn decision(by: String, reason: Option<String>) -> Decision {
    let decision = Decision::by(by);
    match reason {
        Some(reason) => decision.reason(reason),
        None => decision,
    }
}
