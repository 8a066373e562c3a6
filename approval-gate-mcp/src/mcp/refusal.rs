//! Refusals: what a tool answers when it does not do what was asked, with `isError: true`.
//!
//! A refusal's `code` is stable (the library's [`Error::code`] where the library refused) and
//! its `message` says what happened and what the agent should do next; `error` repeats the
//! message, under the name the Node predecessor (approval-gate-mcp) gave its refusals. A wait
//! that times out also carries the request's fields with `status: "pending"` and a `note`, as
//! the predecessor answered.

use std::borrow::Cow;

use approval_gate::{
    EffectiveStatus, Error, PayloadDigest, Request, RequestId, Status, StatusReport, Timestamp,
};
use rmcp::ErrorData;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, CallToolResult};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Serialize, Serializer};

use super::agent_gate::Failure;
use super::answer::{Const, NotAuthorized, advice, note, quorum};

/// A refusal: the call did not do what was asked. Every refusal means no.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Refusal {
    /// Always false.
    ok: Const<false>,
    /// Stable `snake_case` reason, e.g. `timeout`, `denied`, `expired`, `revoked`,
    /// `already_consumed`, `action_mismatch`, `not_found`, `invalid_arguments`.
    code: &'static str,
    /// The same text as `message`, under the name approval-gate-mcp (Node) gave its refusals
    /// (`{"error": "No request with id ..."}`), for agents that test for `error`.
    error: String,
    /// What happened and what to do next.
    message: String,
    /// The request concerned, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    /// Where the request stands, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    effective_status: Option<EffectiveStatus>,
    /// The request's own fields and a `note`, on a wait that ended without an approval, where
    /// the record does not say `approved`: what the Node predecessor answered there.
    #[serde(flatten)]
    request: Option<Box<RecordFields>>,
    /// Always false.
    authorizes_execution: NotAuthorized,
}

/// A request's own fields on a refusal about it, as the Node predecessor's
/// `wait_for_approval` answered them (the record, with a `note` on a timeout), so an agent
/// that reads the record finds it. Only where the record's `status` itself says no: a
/// refusal never says `approved`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RecordFields {
    /// The persisted status: `pending`, `denied`, `expired` or `revoked`, never `approved`.
    status: NoStatus,
    /// The exact action text the human reads and approves.
    action: String,
    /// Why the agent asked.
    reason: String,
    /// Who asked, as they said (not verified).
    #[serde(skip_serializing_if = "Option::is_none")]
    requested_by: Option<String>,
    /// The operation name the approval is bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    operation: Option<String>,
    /// BLAKE3 digest (64 hex characters) of the canonical payload the approval is bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    payload_digest: Option<PayloadDigest>,
    /// When the request was filed (RFC 3339, UTC).
    created_at: Timestamp,
    /// When the request, and any approval of it, stops being usable (RFC 3339, UTC).
    expires_at: Timestamp,
    /// When it was denied or expired.
    #[serde(skip_serializing_if = "Option::is_none")]
    decided_at: Option<Timestamp>,
    /// The reason given with the decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    decision_reason: Option<String>,
    /// What this means for the agent: not approved, do not proceed.
    note: String,
}

impl RecordFields {
    /// `None` where the record says `approved` (a spent or expired approval): a refusal
    /// carries no `status` an agent could take for a yes.
    fn of(request: &Request, note: String) -> Option<Self> {
        Some(Self {
            status: NoStatus::of(request.status())?,
            action: request.action().to_owned(),
            reason: request.reason().to_owned(),
            requested_by: request.requested_by().map(str::to_owned),
            operation: request.operation().map(str::to_owned),
            payload_digest: request.payload_digest(),
            created_at: request.created_at(),
            expires_at: request.expires_at(),
            decided_at: request.decided_at(),
            decision_reason: request.decision_reason().map(str::to_owned),
            note,
        })
    }
}

/// A persisted status that is not `approved`, with a schema that says so.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NoStatus(Status);

impl NoStatus {
    #[deny(clippy::wildcard_enum_match_arm)]
    fn of(status: Status) -> Option<Self> {
        match status {
            Status::Approved => None,
            Status::Pending | Status::Denied | Status::Expired | Status::Revoked => {
                Some(Self(status))
            }
        }
    }
}

impl Serialize for NoStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl JsonSchema for NoStatus {
    fn schema_name() -> Cow<'static, str> {
        "NoStatus".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "enum": ["pending", "denied", "expired", "revoked"] })
    }
}

impl Refusal {
    pub(crate) fn new(code: &'static str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            ok: Const,
            code,
            error: message.clone(),
            message,
            id: None,
            effective_status: None,
            request: None,
            authorizes_execution: NotAuthorized::default(),
        }
    }

    pub(crate) fn id(mut self, id: RequestId) -> Self {
        self.id = Some(id.to_string());
        self
    }

    pub(crate) fn status(mut self, status: EffectiveStatus) -> Self {
        self.effective_status = Some(status);
        self
    }

    /// Arguments that do not fit the tool's input schema.
    pub(crate) fn arguments(problem: impl std::fmt::Display) -> Self {
        let mut problem = problem.to_string();
        if let Some((cut, _)) = problem.char_indices().nth(300) {
            problem.truncate(cut);
            problem.push_str("...");
        }
        Self::new(
            "invalid_arguments",
            format!("invalid arguments: {problem}; nothing changed, see the tool's input schema"),
        )
    }

    /// A refusal by the store (or of the blocking task that ran it).
    pub(crate) fn failure(failure: &Failure) -> Self {
        match failure {
            Failure::Gate(error) => Self::error(error),
            Failure::Task(problem) => Self::new(
                "internal",
                format!(
                    "the server could not complete the call ({problem}); treat it as not approved and do not proceed"
                ),
            ),
        }
    }

    /// A library refusal: its code, its message, and what the agent should do about it.
    pub(crate) fn error(error: &Error) -> Self {
        let mut refusal = Self::new(error.code().as_str(), format!("{error}; {}", advice(error)));
        refusal.id = error.request_id().map(|id| id.to_string());
        // Where a change took effect but was not made durable or recorded, the agent has to
        // ask again: the status is not known from the error.
        refusal.effective_status = error.status();
        refusal
    }
}

/// A tool's structured content: its own answer, or a refusal. The output schemas describe
/// this type; a result is serialized from the answer or the refusal itself.
#[expect(dead_code, reason = "only its schema is used")]
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Outcome<T> {
    /// What the tool was asked for.
    Done(T),
    /// Why not (with `isError: true`).
    Refused(Refusal),
}

impl IntoCallToolResult for Refusal {
    /// The structured content, the same JSON as text for clients that read only text, and
    /// `isError: true`.
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        let value = serde_json::to_value(&self).unwrap_or_else(|e| {
            let message = format!("cannot encode the answer ({e}); treat it as not approved");
            serde_json::json!({
                "ok": false,
                "code": "internal",
                "error": message,
                "message": message,
                "authorizesExecution": false,
            })
        });
        Ok(CallToolResult::structured_error(value).into())
    }
}

impl From<Failure> for Refusal {
    fn from(failure: Failure) -> Self {
        Refusal::failure(&failure)
    }
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Self {
        Refusal::error(&error)
    }
}

impl From<approval_gate::InvalidId> for Refusal {
    fn from(invalid: approval_gate::InvalidId) -> Self {
        Refusal::error(&Error::from(invalid))
    }
}

/// A wait whose time ran out while the request is pending, as `report` (the wait's last read)
/// shows: not approved. A refusal, as every wait that ends without an approval is, that also
/// carries what the Node predecessor answered (the record, `status: "pending"` and a
/// `note`), so an agent written for either reads it as no.
pub(crate) fn timed_out(report: &StatusReport, seconds: u64) -> Refusal {
    let id = report.request().id();
    let quorum = quorum(report).map(|q| format!(" ({q})"));
    let mut refusal = Refusal::new(
        "timeout",
        format!(
            "still pending{}: not approved. No human decided request {id} within {seconds} s; \
             do not proceed. Call wait_for_approval again to keep waiting.",
            quorum.unwrap_or_default()
        ),
    )
    .id(id)
    .status(EffectiveStatus::Pending);
    let note = "timed out while pending: not approved. Do not proceed; call wait_for_approval \
                again to keep waiting";
    refusal.request = RecordFields::of(report.request(), note.to_owned()).map(Box::new);
    refusal
}

/// A wait that ended in anything but an approval ready to consume; with the record, as the
/// predecessor answered, unless it says `approved` (spent, or expired unused).
pub(crate) fn decided_no(report: &StatusReport) -> Refusal {
    let id = report.request().id();
    let status = report.effective_status();
    let code = match status {
        EffectiveStatus::Denied => "denied",
        EffectiveStatus::Expired => "expired",
        EffectiveStatus::Revoked => "revoked",
        EffectiveStatus::Consumed => "already_consumed",
        EffectiveStatus::ApprovedExpired => "approval_expired",
        EffectiveStatus::Pending | EffectiveStatus::ApprovedUnconsumed => "internal",
    };
    let mut message = format!("request {id}: {}", note(id, status));
    if let Some(reason) = report.request().decision_reason() {
        message.push_str("; the decision's reason: ");
        message.push_str(reason);
    }
    let mut refusal = Refusal::new(code, message).id(id).status(status);
    refusal.request = RecordFields::of(report.request(), note(id, status)).map(Box::new);
    refusal
}
