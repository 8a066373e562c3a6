//! A body under `requires_approval`, sealed: Python code can run it only with a live grant made
//! for its operation, once per grant, on the approved payload; no attribute hands it out.

use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::{PyTraverseError, intern};

use approval_gate::{Error, PayloadError};

use crate::grant::PyGrant;
use crate::payload::canonical;
use crate::to_py;

/// The function a decorator guards. It keeps the function out of reach of Python attributes
/// (a pyo3 object's fields are not attributes) and calls it only through `call`.
#[pyclass(module = "approval_gate._native", name = "SealedBody", frozen)]
pub(crate) struct PySealedBody {
    body: Py<PyAny>,
    operation: String,
    /// Where the payload stands among the body's positional arguments; the grant is next and
    /// last.
    payload_index: usize,
}

#[pymethods]
impl PySealedBody {
    #[new]
    fn new(body: Py<PyAny>, operation: String, payload_index: usize) -> Self {
        Self {
            body,
            operation,
            payload_index,
        }
    }

    /// `typing.get_type_hints` of the body: its annotations, resolved.
    fn type_hints(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let hints = py.import("typing")?.getattr("get_type_hints")?;
        Ok(hints.call1((self.body.bind(py),))?.unbind())
    }

    /// Calls the body with `args` (positional, the grant last) if that grant is live, made for
    /// this body's operation, has not run a body yet, and the payload among `args` is exactly
    /// the approved one (its canonical JSON has the approved digest). Raises otherwise.
    fn call(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        if args.len() != self.payload_index + 2 {
            return Err(PyIndexError::new_err(format!(
                "the body takes {} arguments, not {}",
                self.payload_index + 2,
                args.len()
            )));
        }
        let grant = args.get_item(self.payload_index + 1)?;
        let grant = grant.cast::<PyGrant>().map_err(|_| {
            PyTypeError::new_err("the body runs only with the grant of its approved execution")
        })?;
        let (id, approved) = grant.get().admit(py, &self.operation)?;
        let payload = args.get_item(self.payload_index)?;
        let presented = if payload.is_none() {
            None
        } else {
            let json_form = py
                .import(intern!(py, "approval_gate._payload"))?
                .getattr(intern!(py, "json_form"))?;
            let value = json_form.call1((&payload,))?;
            Some(canonical(&value).map_err(|e| to_py(py, &e))?.digest())
        };
        if presented != approved {
            let refusal = Error::PayloadType {
                id,
                problem: PayloadError::Deserialize(
                    "the object handed to the body is not the approved payload".into(),
                ),
            };
            return Err(to_py(py, &refusal));
        }
        Ok(self.body.bind(py).call1(args)?.unbind())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.body)
    }

    fn __repr__(&self) -> String {
        format!("<sealed body of operation {:?}>", self.operation)
    }
}
