//! What an agent asks for, and the checks every field passes before anything is written.

use std::time::Duration;

use crate::error::Error;
use crate::limits::{
    MAX_ACTION_BYTES, MAX_NAME_BYTES, MAX_OPERATION_BYTES, MAX_REASON_BYTES, MAX_TTL, MIN_TTL,
};
use crate::payload::CanonicalPayload;

/// What an agent asks for: the input to [`Gate::request_approval`](crate::Gate::request_approval).
///
/// ```
/// use std::time::Duration;
/// use approval_gate::{CanonicalPayload, NewRequest};
///
/// let ask = NewRequest::new("send email to alice@example.com", "invoice is due")
///     .requested_by("billing-agent")
///     .operation("smtp.send")
///     .payload(CanonicalPayload::from_json_text(r#"{"to":"alice@example.com"}"#)?)
///     .ttl(Duration::from_secs(600));
/// # Ok::<(), approval_gate::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRequest {
    pub(super) action: String,
    pub(super) reason: String,
    pub(super) requested_by: Option<String>,
    pub(crate) operation: Option<String>,
    pub(super) payload: Option<CanonicalPayload>,
    pub(crate) ttl: Option<Duration>,
}

impl NewRequest {
    /// A request to do `action` (the text the human reads and approves) because of `reason`.
    #[must_use]
    pub fn new(action: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            action: action.into(),
            reason: reason.into(),
            requested_by: None,
            operation: None,
            payload: None,
            ttl: None,
        }
    }

    /// Who is asking (informative; not verified).
    #[must_use]
    pub fn requested_by(mut self, who: impl Into<String>) -> Self {
        self.requested_by = Some(who.into());
        self
    }

    /// Binds the approval to an operation name such as `smtp.send`.
    #[must_use]
    pub fn operation(mut self, operation: impl Into<String>) -> Self {
        self.operation = Some(operation.into());
        self
    }

    /// Binds the approval to an exact payload.
    #[must_use]
    pub fn payload(mut self, payload: CanonicalPayload) -> Self {
        self.payload = Some(payload);
        self
    }

    /// How long the request, and an approval of it, stays usable (10 s to 7 days; default:
    /// the operator's [`Limits::default_ttl`](crate::limits::Limits::default_ttl), 1 h unless
    /// set).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Checks every field; nothing is written unless this passes.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        check_text("action", &self.action, MAX_ACTION_BYTES, Blank::Refused)?;
        check_text("reason", &self.reason, MAX_REASON_BYTES, Blank::Refused)?;
        if let Some(who) = &self.requested_by {
            check_text("requested_by", who, MAX_NAME_BYTES, Blank::Refused)?;
        }
        if let Some(operation) = &self.operation {
            check_operation(operation)?;
        }
        if let Some(ttl) = self.ttl {
            check_ttl("ttl", ttl)?;
        }
        Ok(())
    }
}

/// Refuses a time to live outside [`MIN_TTL`] to [`MAX_TTL`].
pub(crate) fn check_ttl(field: &'static str, ttl: Duration) -> Result<(), Error> {
    if ttl < MIN_TTL || ttl > MAX_TTL {
        return Err(Error::InvalidInput {
            field,
            problem: format!(
                "{} s is outside {} s to {} s",
                ttl.as_secs_f64(),
                MIN_TTL.as_secs(),
                MAX_TTL.as_secs()
            ),
        });
    }
    Ok(())
}

/// Whether a text field may be left empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Blank {
    Refused,
    Allowed,
}

pub(super) fn check_text(
    field: &'static str,
    text: &str,
    max: usize,
    blank: Blank,
) -> Result<(), Error> {
    let problem = if blank == Blank::Refused && text.trim().is_empty() {
        "must not be empty".to_owned()
    } else if text.len() > max {
        format!("is {} bytes long; the limit is {max}", text.len())
    } else if text.contains('\0') {
        "contains a NUL character".to_owned()
    } else {
        return Ok(());
    };
    Err(Error::InvalidInput { field, problem })
}

fn check_operation(operation: &str) -> Result<(), Error> {
    let problem = if operation.is_empty() {
        "must not be empty".to_owned()
    } else if operation.len() > MAX_OPERATION_BYTES {
        format!(
            "is {} bytes long; the limit is {MAX_OPERATION_BYTES}",
            operation.len()
        )
    } else if !operation
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b':' | b'/'))
    {
        "may contain only ASCII letters, digits and `. _ - : /` (e.g. `smtp.send`)".to_owned()
    } else {
        return Ok(());
    };
    Err(Error::InvalidInput {
        field: "operation",
        problem,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_refuses_bad_text_and_ttl() {
        let ok = NewRequest::new("do it", "because");
        assert!(ok.validate().is_ok());
        let cases = [
            NewRequest::new("", "because"),
            NewRequest::new("   ", "because"),
            NewRequest::new("do it", ""),
            NewRequest::new("a".repeat(MAX_ACTION_BYTES + 1), "because"),
            NewRequest::new("do\0it", "because"),
            NewRequest::new("do it", "be\0cause"),
            ok.clone().requested_by(""),
            ok.clone().requested_by("x".repeat(MAX_NAME_BYTES + 1)),
            ok.clone().operation(""),
            ok.clone().operation("smtp send"),
            ok.clone().operation("smtp.send\u{202e}"),
            ok.clone().ttl(Duration::from_secs(9)),
            ok.clone().ttl(MAX_TTL + Duration::from_secs(1)),
        ];
        for case in cases {
            assert!(
                matches!(case.validate(), Err(Error::InvalidInput { .. })),
                "{case:?} must be refused"
            );
        }
        assert!(ok.clone().ttl(MIN_TTL).validate().is_ok());
        assert!(ok.ttl(MAX_TTL).validate().is_ok());
    }
}
