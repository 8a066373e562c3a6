//! What the tools answer: the structured content of every result. Each answer carries
//! `authorizesExecution: false`, typed so that nothing else can be written. Refusals, with
//! `isError: true`, are in `refusal.rs`.

use std::borrow::Cow;

use approval_gate::{
    AllowanceReport, EffectiveStatus, Error, ListItem, PayloadDigest, PayloadShown, ReportJson,
    RequestId, Status, StatusReport, Timestamp, UnreadableRecord,
};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Serialize, Serializer};

/// A JSON boolean that is always `B`, with a schema that says so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Const<const B: bool>;

impl<const B: bool> Serialize for Const<B> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bool(B)
    }
}

impl<const B: bool> JsonSchema for Const<B> {
    fn schema_name() -> Cow<'static, str> {
        if B { "True" } else { "False" }.into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "boolean", "const": B })
    }
}

/// `authorizesExecution`: no answer over MCP ever authorizes execution.
pub(crate) type NotAuthorized = Const<false>;

/// A request with a sentence on what its state means for the agent.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StatusAnswer {
    #[serde(flatten)]
    request: ReportJson,
    /// What is left of the allowance that approved it, when one did and it could be read.
    #[serde(flatten)]
    left: Left,
    /// What this state means and what to do next.
    note: String,
}

impl StatusAnswer {
    /// The answer for `report`; `allowance` is the allowance that approved it, as read for
    /// this answer (none when a human decided, or when it could not be read).
    pub(crate) fn of(report: &StatusReport, allowance: Option<&AllowanceReport>) -> Self {
        let id = report.request().id();
        let status = report.effective_status();
        let mut note = match report.request().allowance() {
            Some(by) if status == EffectiveStatus::ApprovedUnconsumed => by_allowance(id, by),
            _ => note(id, status),
        };
        if let Some(quorum) = quorum(report) {
            note = format!("{quorum}. {note}");
        }
        Self {
            request: report.to_json(PayloadShown::Full),
            left: Left::of(allowance),
            note,
        }
    }
}

/// What is left of the allowance that approved a request, as read when the answer was
/// made: information for the agent, never a promise (the consume counts the use, and may
/// refuse if the allowance was spent, revoked or ended meanwhile).
#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Left {
    /// Uses of the allowance left before this request's use is counted; left out when it
    /// counts no uses or could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) allowance_uses_left: Option<u32>,
    /// Budget of the allowance left before this request's amount is counted; left out when
    /// it has no budget or could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) allowance_budget_left: Option<u64>,
}

impl Left {
    pub(crate) fn of(allowance: Option<&AllowanceReport>) -> Self {
        allowance.map_or_else(Self::default, |report| Self {
            allowance_uses_left: report.uses_left(),
            allowance_budget_left: report.budget_left(),
        })
    }
}

/// The note of a request the allowance `by` approved as it was filed.
pub(crate) fn by_allowance(id: RequestId, by: RequestId) -> String {
    format!(
        "request {id} was approved as it was filed by allowance {by}, which a human signed: no \
         need to wait. This authorizes nothing by itself: consume it with exactly this action, \
         operation and payload, and proceed only if consume_approval returns ok: true; the \
         consume counts a use of the allowance and refuses if it was spent, revoked or ended \
         meanwhile (then ask again, for a human)."
    )
}

/// `1 of 2 signed approvals so far`, for a request that needs several approvers or holds
/// signed approvals; `None` otherwise.
pub(crate) fn quorum(report: &StatusReport) -> Option<String> {
    let required = report.required_approvals();
    let count = report.counted_approvals();
    if required <= 1 && count == 0 {
        return None;
    }
    Some(format!(
        "{count} of {required} signed approvals{}",
        if report.effective_status() == EffectiveStatus::Pending {
            " so far: it stays pending until enough distinct approvers have signed"
        } else {
            ""
        }
    ))
}

/// The answer to `request_approval`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Requested {
    /// The request id: pass it to `wait_for_approval`, `check_approval` and `consume_approval`.
    pub(crate) id: String,
    /// `pending`, or `approved` when an allowance approved it as it was filed.
    pub(crate) status: Status,
    /// `pending`, or `approved_unconsumed` when an allowance approved it as it was filed.
    pub(crate) effective_status: EffectiveStatus,
    /// Always false: filing a request authorizes nothing.
    pub(crate) authorizes_execution: NotAuthorized,
    /// When the request, and any approval of it, stops being usable (RFC 3339, UTC).
    pub(crate) expires_at: Timestamp,
    /// The operation name the approval is bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) operation: Option<String>,
    /// BLAKE3 digest (64 hex characters) of the canonical payload the approval is bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) payload_digest: Option<PayloadDigest>,
    /// True if an identical request was already pending and is returned instead of a new one.
    pub(crate) deduplicated: bool,
    /// The allowance a human signed that approved the request as it was filed: no need to
    /// wait; left out when it waits for a human.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) allowance: Option<String>,
    /// What is left of that allowance, when it could be read.
    #[serde(flatten)]
    pub(crate) left: Left,
    /// The command a human runs in their own terminal to approve this request.
    pub(crate) approve_command: String,
    /// What happens next.
    pub(crate) note: String,
}

/// A request record that cannot be read: it refuses everything about its own id.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UnreadableView {
    #[serde(flatten)]
    record: UnreadableRecord,
    /// What this means for the agent.
    note: String,
}

impl UnreadableView {
    pub(crate) fn of(record: &UnreadableRecord) -> Self {
        Self {
            record: record.clone(),
            note: "this request's record cannot be read, so it refuses everything (check, wait, consume, deny): not approved. A human has to repair or remove it; do not proceed with it, and file a new request if the action is still needed".to_owned(),
        }
    }
}

/// One entry of `list_pending`: a pending request, or a record that cannot be read.
// Built once per listed entry and serialized at once: boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum PendingItem {
    /// A pending request.
    Request(ReportJson),
    /// A record the pending index names but that cannot be read.
    Unreadable(UnreadableView),
}

impl PendingItem {
    pub(crate) fn of(item: &ListItem) -> Self {
        match item {
            ListItem::Request(report) => Self::Request(report.to_json(PayloadShown::DigestOnly)),
            ListItem::Unreadable(record) => Self::Unreadable(UnreadableView::of(record)),
        }
    }
}

/// One page of pending requests.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PendingPage {
    /// Records that cannot be read (with `unreadable: true`), then pending requests, oldest
    /// first.
    pub(crate) items: Vec<PendingItem>,
    /// Pass as `after` to get the next page; null on the last page.
    pub(crate) next_after: Option<String>,
    /// The same as `nextAfter`, under the name approval-gate-mcp (Node) 0.4 gave it: pass it
    /// as `cursor` (or `after`).
    pub(crate) next_cursor: Option<String>,
    /// Always false.
    pub(crate) authorizes_execution: NotAuthorized,
}

/// The answer to a successful `consume_approval`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Consumed {
    /// True: the approval was spent now, by this call, and can never be used again.
    pub(crate) ok: Const<true>,
    /// The request.
    pub(crate) id: String,
    /// Always `consumed`.
    pub(crate) effective_status: EffectiveStatus,
    /// Always false: this answer is information for the agent's own policy, never proof of
    /// approval for trusted code.
    pub(crate) authorizes_execution: NotAuthorized,
    /// What this means.
    pub(crate) note: String,
}

/// What the agent should do about a library error: by its family, from the error table (no
/// wildcard: a family added to the library must be decided here); a few codes get a finer word
/// than their family's.
#[deny(clippy::wildcard_enum_match_arm)]
pub(crate) fn advice(error: &Error) -> &'static str {
    use approval_gate::{ErrorCode as C, ErrorFamily as F};
    let code = error.code();
    match code.family() {
        F::Input if code == C::InvalidId => {
            "pass the id exactly as request_approval returned it; nothing changed"
        }
        F::Input | F::State => "nothing changed",
        F::Capacity if code == C::QueueFull => {
            "not filed: a human has to decide pending requests (or they expire) first; do not proceed"
        }
        F::Capacity => "not filed: a human has to archive old requests first; do not proceed",
        F::Missing => "not approved; do not proceed",
        F::Pending => "do not proceed; call wait_for_approval for the human's decision",
        F::Denied => "a human said no: do not proceed",
        F::Spent if code == C::AllowanceExhausted => {
            "the allowance that approved it has nothing left, and nothing was spent: do not proceed; file a new request for a human to decide"
        }
        // An approval that expired while being consumed is spent, not merely unusable.
        F::Spent => "the approval is spent: do not act on it again",
        F::Expired if code == C::ExpiredDuringConsume => {
            "the approval is spent: do not act on it again"
        }
        F::Expired => {
            "not usable: do not proceed; file a new request if the action is still needed"
        }
        F::Revoked => "a human withdrew the approval: do not proceed",
        F::Incomplete => {
            "it took effect, but the store needs a human's attention; call check_approval, treat nothing as approved and do not proceed"
        }
        F::Signature | F::Quorum => {
            "not authorized: the approval lacks the trusted signatures the executor's policy requires, and it was not spent; do not proceed, a human has to look at the store"
        }
        F::Binding => {
            "the approval was not spent; do only exactly what was approved (same action text, operation and payload), or file a new request for what you now intend"
        }
        F::Permission => {
            "the store's database does not let this login do that (its role is another's): nothing changed; do not proceed"
        }
        F::Store if code == C::Blocked => {
            "another session of the store's database held what this step needed and it gave up waiting: nothing changed; do not proceed, a human has to look at the session it names"
        }
        F::Damage | F::Setup | F::Store => {
            "the approval store needs a human's attention; treat this as not approved and do not proceed"
        }
    }
}

/// What a state means for the agent, naming the human's commands where a human must act.
pub(crate) fn note(id: RequestId, status: EffectiveStatus) -> String {
    match status {
        EffectiveStatus::Pending => format!(
            "pending: not approved. A human decides in their own terminal (`approval-gate approve {id}` or `approval-gate deny {id}`); do not proceed until wait_for_approval says approved"
        ),
        EffectiveStatus::ApprovedUnconsumed => "approved by a human and not yet consumed. This status authorizes nothing by itself: call consume_approval with the same id and exact action (and the same operation and payload, if any) and proceed only if it returns ok: true".to_owned(),
        EffectiveStatus::ApprovedExpired => "approved, but the approval expired unused: do not proceed; file a new request if the action is still needed".to_owned(),
        EffectiveStatus::Consumed => "approved and already consumed: the approval is spent; do not act on it again".to_owned(),
        EffectiveStatus::Denied => "denied by a human: do not proceed".to_owned(),
        EffectiveStatus::Expired => "expired before a human decided: not approved; do not proceed, file a new request if the action is still needed".to_owned(),
        EffectiveStatus::Revoked => "approval revoked by a human: do not proceed".to_owned(),
    }
}
