//! What an executor is about to run: the action text, operation and payload a consume is
//! bound to.

use approval_gate::{Binding, Error, Gate, RequestId};
use napi_derive::napi;

use crate::canonical;

/// What the executor is about to run: the action text, and the operation and payload (JSON
/// text) if the request carried them.
#[napi(object)]
pub struct BindingInput {
    /// The exact action text the human approved.
    pub action: String,
    /// The operation name, if the request had one.
    pub operation: Option<String>,
    /// The payload as JSON text, if the request had one.
    pub payload: Option<String>,
}

/// The library's binding of what the caller is about to run; a payload that cannot be bound
/// is a refused consume, recorded as one (as `#[requires_approval]` does).
pub(crate) fn binding(gate: &Gate, id: RequestId, input: BindingInput) -> Result<Binding, Error> {
    let mut binding = Binding::new(input.action);
    if let Some(operation) = input.operation {
        binding = binding.operation(operation);
    }
    if let Some(payload) = input.payload {
        match canonical(&payload) {
            Ok(payload) => binding = binding.payload(payload),
            Err(refusal) => {
                gate.record_refused_consume(id, &refusal);
                return Err(refusal);
            }
        }
    }
    Ok(binding)
}
