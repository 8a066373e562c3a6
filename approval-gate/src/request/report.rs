//! A request together with where it stands.

use serde::{Serialize, Serializer};

use super::Request;
use crate::error::Error;
use crate::id::RequestId;
use crate::payload::{CanonicalPayload, PayloadDigest};
use crate::policy::{Policy, Standing};
use crate::status::{EffectiveStatus, Status};
use crate::time::Timestamp;

/// A request together with where it stands. Never an authorization.
///
/// Serialized as [`StatusReport::to_json`] with the full payload: the one JSON shape every
/// front end shows (the stored record has its own format).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusReport {
    request: Request,
    effective_status: EffectiveStatus,
    required_approvals: u32,
    standings: Vec<Standing>,
    authorizes_execution: bool,
}

impl StatusReport {
    /// The report of `request` as a gate holding `policy` (or none) reads it at `now`: its
    /// approvals are verified here, so what is shown as counting is what this gate counts.
    pub(crate) fn new(
        request: Request,
        effective_status: EffectiveStatus,
        required_approvals: u32,
        policy: Option<&Policy>,
        now: Timestamp,
    ) -> Self {
        let standings = crate::policy::standings(policy, &request, required_approvals, now);
        Self {
            request,
            effective_status,
            required_approvals,
            standings,
            authorizes_execution: false,
        }
    }

    /// Where each of the request's [approvals](Request::approvals) stands, in order, as the
    /// reporting gate verified it: only [`Standing::Counts`] counts toward the quorum.
    #[must_use]
    pub fn standings(&self) -> &[Standing] {
        &self.standings
    }

    /// How many distinct approvers whose signatures the reporting gate verified (under its
    /// policy: trusted ones only) have approved: the "k" of "k of M".
    #[must_use]
    pub fn counted_approvals(&self) -> u32 {
        crate::policy::counted(&self.standings)
    }

    /// The request.
    #[must_use]
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// Where it stands.
    #[must_use]
    pub fn effective_status(&self) -> EffectiveStatus {
        self.effective_status
    }

    /// How many distinct approvers must sign it: the larger of what it recorded when filed
    /// and what the reporting gate's policy says. With [`Request::approvals`] this is the
    /// "k of M" a human is shown.
    #[must_use]
    pub fn required_approvals(&self) -> u32 {
        self.required_approvals
    }

    /// The [decision statement](Request::decision_statement) an approver shown this report
    /// signs as `principal`: the request as shown, and this report's quorum, so the
    /// signature says "one of M" for the M the approver was told.
    ///
    /// # Errors
    ///
    /// As [`Request::decision_statement`].
    pub fn decision_statement(&self, principal: &str) -> Result<Vec<u8>, Error> {
        self.request.statement(principal, self.required_approvals)
    }

    /// Always `false`: a status never authorizes execution. Only a successful consume does.
    #[must_use]
    pub fn authorizes_execution(&self) -> bool {
        self.authorizes_execution
    }

    /// The request, dropping the status.
    #[must_use]
    pub fn into_request(self) -> Request {
        self.request
    }
}

/// How much of the payload a report's JSON carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadShown {
    /// The payload itself, and its digest.
    Full,
    /// Only its digest: what a listing shows.
    DigestOnly,
}

impl StatusReport {
    /// The one JSON shape of a request and where it stands, shared by every front end
    /// (`approval-gate --json`, the MCP answers). Fields without a value are left out.
    #[must_use]
    pub fn to_json(&self, payload: PayloadShown) -> ReportJson {
        let request = &self.request;
        ReportJson {
            id: request.id(),
            status: request.status(),
            effective_status: self.effective_status,
            authorizes_execution: NotAuthorized,
            action: request.action().to_owned(),
            reason: request.reason().to_owned(),
            requested_by: request.requested_by().map(str::to_owned),
            filed_by: request.filed_by().map(str::to_owned),
            operation: request.operation().map(str::to_owned),
            payload_digest: request.payload_digest(),
            payload: request
                .payload()
                .filter(|_| payload == PayloadShown::Full)
                .cloned(),
            created_at: request.created_at(),
            expires_at: request.expires_at(),
            decided_at: request.decided_at(),
            decided_by: request.decided_by().map(str::to_owned),
            decision_reason: request.decision_reason().map(str::to_owned),
            allowance: request.allowance(),
            required_approvals: self.required_approvals,
            counted_approvals: (self.required_approvals > 1 || !request.approvals().is_empty())
                .then(|| self.counted_approvals()),
            approvals: request
                .approvals()
                .iter()
                .zip(&self.standings)
                .map(|(a, standing)| ApprovalJson {
                    principal: a.principal().to_owned(),
                    decided_by: a.decided_by().to_owned(),
                    decided_at: a.decided_at(),
                    standing: standing.as_str(),
                    problem: standing.detail().map(str::to_owned),
                })
                .collect(),
        }
    }
}

impl Serialize for StatusReport {
    /// As [`StatusReport::to_json`] with the full payload.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json(PayloadShown::Full).serialize(serializer)
    }
}

/// `authorizesExecution`: always `false`, and its schema says so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NotAuthorized;

impl Serialize for NotAuthorized {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bool(false)
    }
}

#[cfg(feature = "schemars")]
impl schemars::JsonSchema for NotAuthorized {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "False".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "boolean", "const": false })
    }
}

/// A request and where it stands, as JSON: see [`StatusReport::to_json`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReportJson {
    /// The request id: 12 lowercase hex characters.
    id: RequestId,
    /// The persisted status.
    status: Status,
    /// Where the request stands, combining status, consumption and the clock. Only
    /// `approved_unconsumed` can still be consumed; everything else means no.
    effective_status: EffectiveStatus,
    /// Always false: a status never authorizes execution.
    authorizes_execution: NotAuthorized,
    /// The exact action text the human reads and approves.
    action: String,
    /// Why the agent asked.
    reason: String,
    /// Who asked, as they said (not verified).
    #[serde(skip_serializing_if = "Option::is_none")]
    requested_by: Option<String>,
    /// Who filed it, as the store authenticated them: the PostgreSQL session user, or the
    /// directory store's OS user. Left out for records written before it was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    filed_by: Option<String>,
    /// The operation name the approval is bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    operation: Option<String>,
    /// BLAKE3 digest (64 hex characters) of the canonical payload the approval is bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    payload_digest: Option<PayloadDigest>,
    /// The payload the approval is bound to, as the human sees it.
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<CanonicalPayload>,
    /// When the request was filed (RFC 3339, UTC).
    created_at: Timestamp,
    /// When the request, and any approval of it, stops being usable (RFC 3339, UTC).
    expires_at: Timestamp,
    /// When it was decided (approved, denied, expired or revoked).
    #[serde(skip_serializing_if = "Option::is_none")]
    decided_at: Option<Timestamp>,
    /// Who decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    decided_by: Option<String>,
    /// The reason given with the decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    decision_reason: Option<String>,
    /// The allowance that approved it at filing, instead of a human (its consume counts a use
    /// of it); left out when a human decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    allowance: Option<RequestId>,
    /// How many distinct approvers must sign; left out when one approval is enough.
    #[serde(skip_serializing_if = "is_one")]
    required_approvals: u32,
    /// How many of the approvals count toward that number, as the reporting gate verified
    /// them (under its policy: distinct trusted approvers); left out when one unsigned
    /// approval is enough and none is stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    counted_approvals: Option<u32>,
    /// The signed approvals so far, oldest first; left out when there are none. A request
    /// needing more than these stays `pending`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    approvals: Vec<ApprovalJson>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_one(n: &u32) -> bool {
    *n == 1
}

/// One signed approval in a report: who signed, as whom, when (the signature itself stays in
/// the record and the audit log).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApprovalJson {
    /// The approver's principal, as in the policy's `allowed_signers`.
    principal: String,
    /// Who approved, as the store recorded it.
    decided_by: String,
    /// When.
    decided_at: Timestamp,
    /// Where it stands as the reporting gate verified it: `counts`, `repeat` (its approver
    /// counted already), `bad_signature`, `untrusted` or `unjudged` (the gate holds no
    /// policy to judge it by). Only `counts` counts.
    standing: &'static str,
    /// What is wrong with it (a bad signature's problem, the fingerprint of an untrusted or
    /// unjudged key); left out when it counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
}
