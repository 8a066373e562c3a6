//! The native grant: what a consume proved, with the gate's clock for `assertActive`.

use approval_gate::{CanonicalPayload, Error, Gate, Grant, PayloadDigest, RequestId, Timestamp};
use napi_derive::napi;
use serde_json::Value;

use crate::to_js;

/// What a successful consume (or a started execution) of a request proved: the request, the
/// approved operation and payload, and until when. Made only by this module; the JavaScript
/// layer keeps it in a private field of its `Grant`.
#[napi]
#[derive(Clone)]
pub struct NativeGrant {
    gate: Gate,
    id: RequestId,
    operation: Option<String>,
    payload_digest: Option<PayloadDigest>,
    expires_at: Timestamp,
    payload: Option<String>,
}

impl NativeGrant {
    /// The native grant of a library grant: the approved payload as its canonical text.
    pub(crate) fn new(gate: &Gate, grant: &Grant<Value>) -> Result<Self, Error> {
        let payload = match grant.payload() {
            Value::Null => None,
            value => Some(CanonicalPayload::from_value(value)?.as_str().to_owned()),
        };
        Ok(Self {
            gate: gate.clone(),
            id: grant.id(),
            operation: grant.operation().map(str::to_owned),
            payload_digest: grant.payload_digest(),
            expires_at: grant.expires_at(),
            payload,
        })
    }
}

#[napi]
impl NativeGrant {
    /// The consumed request's id.
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.id.as_str().to_owned()
    }

    /// The approved operation, if the request carried one.
    #[napi(getter)]
    pub fn operation(&self) -> Option<String> {
        self.operation.clone()
    }

    /// The BLAKE3 digest (64 hex characters) of the approved canonical payload, if any.
    #[napi(getter)]
    pub fn payload_digest(&self) -> Option<String> {
        self.payload_digest.map(|d| d.to_hex())
    }

    /// The approved payload's canonical JSON text (RFC 8785), if any: exactly the bytes the
    /// human approved.
    #[napi(getter)]
    pub fn payload_text(&self) -> Option<String> {
        self.payload.clone()
    }

    /// When the approval stops being usable, as RFC 3339 text.
    #[napi(getter)]
    pub fn expires_at(&self) -> String {
        self.expires_at.to_string()
    }

    /// Reads the gate's clock and throws `approval_expired` once it is past the expiry (the
    /// library's `Grant::assert_active`). A clock read, no I/O: synchronous.
    #[napi]
    pub fn assert_active(&self) -> napi::Result<()> {
        if self.gate.now() > self.expires_at {
            return Err(to_js(&Error::ApprovalExpired {
                id: self.id,
                expired_at: self.expires_at,
            }));
        }
        Ok(())
    }
}
