//! Signed approvals: what each approver signs, and what the record keeps of it.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::Request;
use crate::error::Error;
use crate::payload::CanonicalPayload;
use crate::time::Timestamp;

/// The SSHSIG namespace of a decision statement: `ssh-keygen -Y sign -n approval-gate`.
pub const SIGNATURE_NAMESPACE: &str = "approval-gate";

/// Version of the decision statement's format.
pub const STATEMENT_VERSION: u32 = 1;

/// One approver's signed approval, as the request record keeps it.
///
/// The signature is over [`Request::decision_statement`] for its principal; the executor's
/// [`Policy`](crate::Policy) decides whether it counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignedApproval {
    principal: String,
    decided_by: String,
    decided_at: Timestamp,
    signature: String,
}

impl SignedApproval {
    pub(crate) fn new(
        principal: String,
        decided_by: String,
        decided_at: Timestamp,
        signature: String,
    ) -> Self {
        Self {
            principal,
            decided_by,
            decided_at,
            signature,
        }
    }

    /// The principal the approver signed as (an `allowed_signers` identity).
    #[must_use]
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// Who approved, as the store recorded it (the OS user or database session).
    #[must_use]
    pub fn decided_by(&self) -> &str {
        &self.decided_by
    }

    /// When the approval was recorded.
    #[must_use]
    pub fn decided_at(&self) -> Timestamp {
        self.decided_at
    }

    /// The armored SSHSIG (`-----BEGIN SSH SIGNATURE-----`) over the decision statement.
    #[must_use]
    pub fn signature(&self) -> &str {
        &self.signature
    }
}

impl Request {
    /// The decision statement an approver signs to approve this request as `principal`:
    /// RFC 8785 JSON of the statement's version, the request's store-independent fields (id,
    /// action, operation, payload digest, creation and expiry) and the decision, as bytes.
    ///
    /// ```json
    /// {"action":"pay 5 EUR","createdAt":"2026-12-01T10:00:00.000Z","decision":"approve",
    ///  "expiresAt":"2026-12-01T11:00:00.000Z","id":"0123456789ab","operation":"pay",
    ///  "payloadDigest":"…","principal":"alice@example.com",
    ///  "statement":"approval-gate decision","version":1}
    /// ```
    ///
    /// Sign it with `ssh-keygen -Y sign -n approval-gate -f KEY` (see
    /// [`SshKeygen::sign`](crate::SshKeygen::sign)); any change to one of those
    /// fields, or another principal, is another statement.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `principal` cannot be part of a statement (it is checked
    /// as a decider's name is).
    pub fn decision_statement(&self, principal: &str) -> Result<Vec<u8>, Error> {
        super::new::check_text(
            "principal",
            principal,
            crate::limits::MAX_NAME_BYTES,
            super::new::Blank::Refused,
        )?;
        let statement = json!({
            "statement": "approval-gate decision",
            "version": STATEMENT_VERSION,
            "id": self.id(),
            "action": self.action(),
            "operation": self.operation(),
            "payloadDigest": self.payload_digest(),
            "createdAt": self.created_at(),
            "expiresAt": self.expires_at(),
            "decision": "approve",
            "principal": principal,
        });
        Ok(CanonicalPayload::from_value(&statement)?
            .as_bytes()
            .to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::RequestId;
    use crate::limits::MIN_TTL;
    use crate::request::NewRequest;

    #[test]
    fn the_statement_is_canonical_json_of_exactly_the_bound_fields() {
        let id = RequestId::parse("0123456789ab").unwrap();
        let t0 = Timestamp::parse_rfc3339("2026-12-01T10:00:00Z").unwrap();
        let new = NewRequest::new("pay \"5\" EUR", "rent")
            .operation("pay")
            .payload(CanonicalPayload::from_json_text(r#"{"b":1,"a":"x"}"#).unwrap());
        let request = Request::new(id, new, t0, MIN_TTL, 1);
        let digest = request.payload_digest().unwrap();
        let statement = String::from_utf8(request.decision_statement("alice@x").unwrap()).unwrap();
        assert_eq!(
            statement,
            format!(
                r#"{{"action":"pay \"5\" EUR","createdAt":"2026-12-01T10:00:00.000Z","decision":"approve","expiresAt":"2026-12-01T10:00:10.000Z","id":"0123456789ab","operation":"pay","payloadDigest":"{digest}","principal":"alice@x","statement":"approval-gate decision","version":1}}"#
            )
        );
        // Another principal, another statement; the reason is not part of it.
        assert_ne!(
            request.decision_statement("bob@x").unwrap(),
            statement.as_bytes()
        );
        let other = Request::new(
            id,
            NewRequest::new("pay \"5\" EUR", "other reason")
                .operation("pay")
                .payload(CanonicalPayload::from_json_text(r#"{"a":"x","b":1}"#).unwrap()),
            t0,
            MIN_TTL,
            1,
        );
        assert_eq!(
            other.decision_statement("alice@x").unwrap(),
            statement.as_bytes()
        );
        assert!(request.decision_statement("").is_err());
    }
}
