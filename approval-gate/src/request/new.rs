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
            check_operation_name(operation)?;
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
pub(crate) enum Blank {
    Refused,
    Allowed,
}

pub(crate) fn check_text(
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

/// Checks `name` against the one grammar of operation names: lowercase ASCII segments of
/// `a-z`, `0-9` and `_`, joined by single dots, 1 to
/// [`MAX_OPERATION_BYTES`](crate::limits::MAX_OPERATION_BYTES) bytes (`smtp.send`,
/// `payments.wire_transfer`).
///
/// Quorum patterns (`payments.*=2`) match names byte for byte, and the agent chooses the name
/// it files. With one spelling per name, `Payments.transfer` or `payments-transfer` cannot
/// dodge a pattern written for `payments.transfer`. Filing, the executor's
/// [`Binding`](crate::Binding) and `#[requires_approval(operation = ...)]` (at compile time)
/// all hold names to it.
///
/// ```
/// use approval_gate::check_operation_name;
/// assert!(check_operation_name("payments.transfer").is_ok());
/// assert!(check_operation_name("Payments.transfer").is_err());
/// assert!(check_operation_name("payments-transfer").is_err());
/// ```
///
/// # Errors
///
/// [`Error::InvalidInput`] (field `operation`) saying what is wrong.
pub fn check_operation_name(name: &str) -> Result<(), Error> {
    operation_problem(name).map_or(Ok(()), |problem| {
        Err(Error::InvalidInput {
            field: "operation",
            problem,
        })
    })
}

/// The operation-name grammar of [`check_operation_name`] as a regular expression (POSIX
/// and ECMA-262 alike): what the MCP tool schema and the PostgreSQL schema check, held to
/// the Rust rule by tests.
pub const OPERATION_NAME_PATTERN: &str = r"^[a-z0-9_]+(\.[a-z0-9_]+)*$";

/// What is wrong with an operation name, if anything. `approval-gate-macros` holds the same
/// rule (it cannot depend on this crate); its tests compare the two.
fn operation_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("must not be empty".to_owned());
    }
    if name.len() > MAX_OPERATION_BYTES {
        return Some(format!(
            "is {} bytes long; the limit is {MAX_OPERATION_BYTES}",
            name.len()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|&c| !matches!(c, 'a'..='z' | '0'..='9' | '_' | '.'))
    {
        return Some(format!(
            "{name:?} has {bad:?}: an operation name is lowercase ASCII letters, digits and `_` \
             in segments joined by dots (e.g. `payments.transfer`), one spelling per name"
        ));
    }
    if name.split('.').any(str::is_empty) {
        return Some(format!(
            "{name:?} has an empty segment: segments of `a-z0-9_` joined by single dots \
             (e.g. `payments.transfer`)"
        ));
    }
    None
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
            ok.clone().operation("Smtp.send"),
            ok.clone().operation("smtp-send"),
            ok.clone().operation("smtp..send"),
            ok.clone().operation(".smtp"),
            ok.clone().operation("smtp."),
            ok.clone().operation("deploy:prod/v2"),
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
        for name in ["smtp.send", "a", "payments.wire_transfer", "x1.y_2.z3", "_"] {
            assert!(ok.clone().operation(name).validate().is_ok(), "{name}");
        }
        let longest = "a".repeat(MAX_OPERATION_BYTES);
        assert!(ok.clone().operation(longest.as_str()).validate().is_ok());
        assert!(
            ok.clone()
                .operation(format!("{longest}a"))
                .validate()
                .is_err()
        );
        assert!(ok.ttl(MAX_TTL).validate().is_ok());
    }
}
