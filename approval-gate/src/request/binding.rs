//! What trusted code is about to do, to be matched against the approved request.

use serde::Serialize;

use crate::error::Error;
use crate::payload::CanonicalPayload;

/// What trusted code is about to do, to be matched against the approved request.
///
/// The action text must be byte-for-byte the approved one. The operation and payload must be
/// present exactly when the request carried them, and equal (payloads as canonical bytes).
///
/// ```
/// use approval_gate::Binding;
/// # #[derive(serde::Serialize)] struct Mail { to: String }
///
/// let mail = Mail { to: "alice@example.com".into() };
/// let binding = Binding::new("send email to alice@example.com")
///     .operation("smtp.send")
///     .payload_of(&mail)?;
/// # Ok::<(), approval_gate::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub(crate) action: String,
    pub(crate) operation: Option<String>,
    pub(crate) payload: Option<CanonicalPayload>,
}

impl Binding {
    /// A binding to the exact action text.
    #[must_use]
    pub fn new(action: impl Into<String>) -> Self {
        Self {
            action: action.into(),
            operation: None,
            payload: None,
        }
    }

    /// Adds the operation name.
    #[must_use]
    pub fn operation(mut self, operation: impl Into<String>) -> Self {
        self.operation = Some(operation.into());
        self
    }

    /// Adds an already canonical payload.
    #[must_use]
    pub fn payload(mut self, payload: CanonicalPayload) -> Self {
        self.payload = Some(payload);
        self
    }

    /// Adds the payload the caller intends to run, canonicalized from any serializable value.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPayload`] if the value cannot be canonical JSON.
    pub fn payload_of<T: Serialize + ?Sized>(self, payload: &T) -> Result<Self, Error> {
        Ok(self.payload(CanonicalPayload::from_serialize(payload)?))
    }

    /// The action text.
    #[must_use]
    pub fn action(&self) -> &str {
        &self.action
    }
}
