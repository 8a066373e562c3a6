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
pub const STATEMENT_VERSION: u32 = 2;

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

    /// The armored SSHSIG (`-----BEGIN SSH SIGNATURE-----`) over the decision statement, or
    /// the passkey assertion over its challenge (`-----BEGIN APPROVAL-GATE WEBAUTHN-----`,
    /// [`passkey`](crate::passkey)).
    #[must_use]
    pub fn signature(&self) -> &str {
        &self.signature
    }
}

impl Request {
    /// The decision statement an approver signs to approve this request as `principal`,
    /// one of the [`required_approvals`](Request::required_approvals) recorded with it: RFC
    /// 8785 JSON of the statement's version, every field an approver is shown (id, action,
    /// reason, claimed requester, who filed it, operation, payload digest, creation and
    /// expiry), the quorum, and the decision, as bytes.
    ///
    /// ```json
    /// {"action":"pay 5 EUR","createdAt":"2026-12-01T10:00:00.000Z","decision":"approve",
    ///  "expiresAt":"2026-12-01T11:00:00.000Z","filedBy":"agent","id":"0123456789ab",
    ///  "operation":"pay",
    ///  "payloadDigest":"…","principal":"alice@example.com","reason":"rent",
    ///  "requestedBy":null,"requiredApprovals":1,
    ///  "statement":"approval-gate decision","version":2}
    /// ```
    ///
    /// Sign it with `ssh-keygen -Y sign -n approval-gate -f KEY` (see
    /// [`SshKeygen::sign`](crate::SshKeygen::sign)); any change to one of those
    /// fields, another principal or another quorum, is another statement. An approver shown
    /// a gate's quorum signs [`StatusReport::decision_statement`](crate::StatusReport::decision_statement).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `principal` cannot be part of a statement (it is checked
    /// as a decider's name is).
    pub fn decision_statement(&self, principal: &str) -> Result<Vec<u8>, Error> {
        self.statement(principal, self.required_approvals())
    }

    /// The decision statement for `principal` as one of `required` approvers. The quorum
    /// is signed because it is part of what the approver agreed to: "one of two" is not
    /// consent to be the only one.
    pub(crate) fn statement(&self, principal: &str, required: u32) -> Result<Vec<u8>, Error> {
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
            "reason": self.reason(),
            "requestedBy": self.requested_by(),
            "filedBy": self.filed_by(),
            "operation": self.operation(),
            "payloadDigest": self.payload_digest(),
            "createdAt": self.created_at(),
            "expiresAt": self.expires_at(),
            "requiredApprovals": required,
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
                r#"{{"action":"pay \"5\" EUR","createdAt":"2026-12-01T10:00:00.000Z","decision":"approve","expiresAt":"2026-12-01T10:00:10.000Z","filedBy":null,"id":"0123456789ab","operation":"pay","payloadDigest":"{digest}","principal":"alice@x","reason":"rent","requestedBy":null,"requiredApprovals":1,"statement":"approval-gate decision","version":2}}"#
            )
        );
        // Another principal, another statement; and so is another quorum.
        assert_ne!(
            request.decision_statement("bob@x").unwrap(),
            statement.as_bytes()
        );
        assert_ne!(
            request.statement("alice@x", 2).unwrap(),
            statement.as_bytes()
        );
        let same = |reason: &str, by: Option<&str>| {
            let mut new = NewRequest::new("pay \"5\" EUR", reason)
                .operation("pay")
                .payload(CanonicalPayload::from_json_text(r#"{"a":"x","b":1}"#).unwrap());
            if let Some(by) = by {
                new = new.requested_by(by);
            }
            Request::new(id, new, t0, MIN_TTL, 1)
                .decision_statement("alice@x")
                .unwrap()
        };
        // Key order of the payload is not a difference; every field the approver is shown is.
        assert_eq!(same("rent", None), statement.as_bytes());
        assert_ne!(same("other reason", None), statement.as_bytes());
        assert_ne!(same("rent", Some("alice@x")), statement.as_bytes());
        assert!(request.decision_statement("").is_err());
    }
}
