//! Requests: the stored record and its report, and the inputs that create, decide and bind
//! them.

mod approval;
mod binding;
mod decision;
pub(crate) mod new;
mod report;

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

pub use self::approval::{SIGNATURE_NAMESPACE, STATEMENT_VERSION, SignedApproval};
pub use self::binding::Binding;
pub use self::decision::{Decision, os_user};
pub(crate) use self::new::check_ttl;
pub use self::new::{NewRequest, OPERATION_NAME_PATTERN, check_operation_name};
pub use self::report::{ApprovalJson, NotAuthorized, PayloadShown, ReportJson, StatusReport};
use crate::id::RequestId;
use crate::limits::{MAX_QUORUM, MAX_SIGNATURE_BYTES};
use crate::payload::{CanonicalPayload, PayloadDigest};
pub use crate::status::{EffectiveStatus, Status};
use crate::time::Timestamp;

/// A request as stored in `requests/<id>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Request {
    version: u32,
    id: RequestId,
    action: String,
    reason: String,
    requested_by: Option<String>,
    operation: Option<String>,
    #[serde(deserialize_with = "stored_payload")]
    payload: Option<CanonicalPayload>,
    payload_digest: Option<PayloadDigest>,
    created_at: Timestamp,
    expires_at: Timestamp,
    status: Status,
    decided_at: Option<Timestamp>,
    decision_reason: Option<String>,
    decided_by: Option<String>,
    /// How many distinct approvers must sign (1 unless a policy asked for more at filing).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    required_approvals: u32,
    /// The signed approvals so far, in the order they came.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    approvals: Vec<SignedApproval>,
    /// Who filed it, as the store authenticated them: the database's session user on
    /// PostgreSQL (set by the database, whatever the caller wrote), the OS user on the
    /// directory store (which cannot authenticate more than that). Absent in records written
    /// before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filed_by: Option<String>,
    /// The allowance that approved it at filing, instead of a human: its consume verifies the
    /// allowance again and counts the use. Absent in records of requests a human decided, and
    /// in records written before allowances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allowance: Option<RequestId>,
}

fn one() -> u32 {
    1
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_one(n: &u32) -> bool {
    *n == 1
}

/// A stored payload must already be canonical: re-canonicalizing it must give the same bytes.
fn stored_payload<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<CanonicalPayload>, D::Error> {
    let raw = Option::<Box<serde_json::value::RawValue>>::deserialize(deserializer)?;
    let Some(raw) = raw else { return Ok(None) };
    let payload = CanonicalPayload::from_json_text(raw.get()).map_err(serde::de::Error::custom)?;
    if payload.as_str() != raw.get() {
        return Err(serde::de::Error::custom(
            "stored payload is not in canonical form",
        ));
    }
    Ok(Some(payload))
}

pub(crate) const FORMAT_VERSION: u32 = 1;

fn unsupported_version(version: u32) -> String {
    format!("unsupported format version {version} (this build reads version {FORMAT_VERSION})")
}

impl Request {
    pub(crate) fn new(
        id: RequestId,
        new: NewRequest,
        now: Timestamp,
        ttl: Duration,
        required_approvals: u32,
    ) -> Self {
        let payload_digest = new.payload.as_ref().map(CanonicalPayload::digest);
        Self {
            version: FORMAT_VERSION,
            id,
            action: new.action,
            reason: new.reason,
            requested_by: new.requested_by,
            operation: new.operation,
            payload: new.payload,
            payload_digest,
            created_at: now,
            expires_at: now.saturating_add(ttl),
            status: Status::Pending,
            decided_at: None,
            decision_reason: None,
            decided_by: None,
            required_approvals: required_approvals.max(1),
            approvals: Vec::new(),
            filed_by: None,
            allowance: None,
        }
    }

    /// A request of the predecessor's store as `migrate` brings it over: pending, as it was
    /// filed (its own times; no operation, payload or filer, which it did not keep).
    pub(crate) fn migrated(
        id: RequestId,
        ask: NewRequest,
        created_at: Timestamp,
        expires_at: Timestamp,
    ) -> Self {
        Self {
            version: FORMAT_VERSION,
            id,
            action: ask.action,
            reason: ask.reason,
            requested_by: ask.requested_by,
            operation: None,
            payload: None,
            payload_digest: None,
            created_at,
            expires_at,
            status: Status::Pending,
            decided_at: None,
            decision_reason: None,
            decided_by: None,
            required_approvals: 1,
            approvals: Vec::new(),
            filed_by: None,
            allowance: None,
        }
    }

    /// Records a decision the predecessor made, as it recorded it: who decided it, it did not
    /// keep, so `decided_by` names the predecessor.
    pub(crate) fn decided_before(&mut self, status: Status, at: Timestamp, reason: Option<String>) {
        self.status = status;
        self.decided_at = Some(at);
        self.decision_reason = reason;
        self.decided_by = Some("approval-gate-mcp".to_owned());
    }

    /// The same request, recorded as filed by `who` (the store's authenticated filer).
    #[must_use]
    pub(crate) fn filed_by_as(mut self, who: Option<String>) -> Self {
        self.filed_by = who;
        self
    }

    /// Reads a stored record, saying in one line what is wrong with a damaged one.
    pub(crate) fn decode(expected_id: RequestId, bytes: &[u8]) -> Result<Self, String> {
        /// Just the version, read leniently, so that a record of another format version is
        /// named as such rather than as a syntax error.
        #[derive(Deserialize)]
        struct Version {
            version: u32,
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|e| format!("not valid utf-8 (at byte {})", e.valid_up_to()))?;
        if text.trim().is_empty() {
            return Err("the record is empty".to_owned());
        }
        let request: Self = serde_json::from_str(text).map_err(|e| {
            match serde_json::from_str::<Version>(text) {
                Ok(Version { version }) if version != FORMAT_VERSION => {
                    unsupported_version(version)
                }
                _ => format!("not a valid request record: {e}"),
            }
        })?;
        request.check(expected_id)?;
        Ok(request)
    }

    /// Checks what serde cannot: the record is internally consistent.
    pub(crate) fn check(&self, expected_id: RequestId) -> Result<(), String> {
        if self.version != FORMAT_VERSION {
            return Err(unsupported_version(self.version));
        }
        if self.id != expected_id {
            return Err(format!("holds request {} instead", self.id));
        }
        if self.payload.as_ref().map(CanonicalPayload::digest) != self.payload_digest {
            return Err("payload digest does not match the payload".into());
        }
        if self.expires_at <= self.created_at {
            return Err("expires before it was created".into());
        }
        if !(1..=MAX_QUORUM).contains(&self.required_approvals) {
            return Err(format!(
                "requires {} approvals (1 to {MAX_QUORUM} are possible)",
                self.required_approvals
            ));
        }
        if self.approvals.len() > MAX_QUORUM as usize {
            return Err(format!("holds {} approvals", self.approvals.len()));
        }
        // Duplicates are left to the policy, which counts each principal and key once.
        for approval in &self.approvals {
            if approval.signature().len() > MAX_SIGNATURE_BYTES {
                return Err(format!(
                    "the signature of {} is over {MAX_SIGNATURE_BYTES} bytes",
                    approval.principal()
                ));
            }
        }
        let decided = self.decided_at.is_some();
        if decided == (self.status == Status::Pending) {
            return Err(format!(
                "status {} disagrees with its decision time",
                self.status
            ));
        }
        Ok(())
    }

    /// The id.
    #[must_use]
    pub fn id(&self) -> RequestId {
        self.id
    }
    /// The human-readable action text the human approves.
    #[must_use]
    pub fn action(&self) -> &str {
        &self.action
    }
    /// Why the agent wants to do it.
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.reason
    }
    /// Who asked, as they said (not verified).
    #[must_use]
    pub fn requested_by(&self) -> Option<&str> {
        self.requested_by.as_deref()
    }
    /// The operation name the approval is bound to, if any.
    #[must_use]
    pub fn operation(&self) -> Option<&str> {
        self.operation.as_deref()
    }
    /// The canonical payload the approval is bound to, if any.
    #[must_use]
    pub fn payload(&self) -> Option<&CanonicalPayload> {
        self.payload.as_ref()
    }
    /// BLAKE3 digest of the canonical payload, if any.
    #[must_use]
    pub fn payload_digest(&self) -> Option<PayloadDigest> {
        self.payload_digest
    }
    /// When the request was filed.
    #[must_use]
    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }
    /// When the request, and any approval of it, stops being usable.
    #[must_use]
    pub fn expires_at(&self) -> Timestamp {
        self.expires_at
    }
    /// The persisted status.
    #[must_use]
    pub fn status(&self) -> Status {
        self.status
    }
    /// When it was decided (approved, denied, expired or revoked).
    #[must_use]
    pub fn decided_at(&self) -> Option<Timestamp> {
        self.decided_at
    }
    /// The reason given with the decision.
    #[must_use]
    pub fn decision_reason(&self) -> Option<&str> {
        self.decision_reason.as_deref()
    }
    /// Who decided.
    #[must_use]
    pub fn decided_by(&self) -> Option<&str> {
        self.decided_by.as_deref()
    }

    /// Who filed it, as the store authenticated them (the PostgreSQL session user, or the
    /// directory store's OS user), beside the [claimed requester](Request::requested_by);
    /// `None` in records written before it was kept.
    #[must_use]
    pub fn filed_by(&self) -> Option<&str> {
        self.filed_by.as_deref()
    }

    /// The allowance that approved it at filing, if one did (and not a human).
    #[must_use]
    pub fn allowance(&self) -> Option<RequestId> {
        self.allowance
    }

    /// Approves the pending request by the allowance `allowance` at `now`.
    pub(crate) fn approve_by_allowance(&mut self, allowance: RequestId, now: Timestamp) {
        self.status = Status::Approved;
        self.decided_at = Some(now);
        self.decided_by = Some(format!("allowance {allowance}"));
        self.allowance = Some(allowance);
    }

    /// How many distinct approvers must sign, as recorded when it was filed.
    #[must_use]
    pub fn required_approvals(&self) -> u32 {
        self.required_approvals
    }
    /// The signed approvals so far, oldest first.
    #[must_use]
    pub fn approvals(&self) -> &[SignedApproval] {
        &self.approvals
    }

    pub(crate) fn add_approval(&mut self, approval: SignedApproval) {
        self.approvals.push(approval);
    }

    /// Keeps the approvals at the positions `keep` says.
    pub(crate) fn retain_approvals(&mut self, keep: impl Fn(usize) -> bool) {
        let mut i = 0;
        self.approvals.retain(|_| {
            i += 1;
            keep(i - 1)
        });
    }

    pub(crate) fn is_past_expiry(&self, now: Timestamp) -> bool {
        now > self.expires_at
    }

    pub(crate) fn decide(&mut self, status: Status, now: Timestamp, decision: Option<&Decision>) {
        self.status = status;
        self.decided_at = Some(now);
        self.decision_reason = decision.and_then(|d| d.reason.clone());
        self.decided_by = decision.map(|d| d.decided_by.clone());
    }

    /// The same request as `shown`, approvals added since aside: what a human approving it
    /// saw is still what it is.
    pub(crate) fn same_as_shown(&self, shown: &Request) -> bool {
        let strip = |r: &Request| Request {
            approvals: Vec::new(),
            ..r.clone()
        };
        strip(self) == strip(shown)
    }

    /// Gives a request being filed another id (its own was taken).
    pub(crate) fn renumber(&mut self, id: RequestId) {
        self.id = id;
    }

    /// Same request as far as de-duplication goes.
    pub(crate) fn same_ask(&self, other: &Request) -> bool {
        self.action == other.action
            && self.operation == other.operation
            && self.payload_digest == other.payload_digest
            && self.requested_by == other.requested_by
    }

    /// A name for what [`same_ask`](Self::same_ask) compares: equal for equal asks (64 hex
    /// digits of a hash, so unequal asks differ but for a collision nobody can find).
    pub(crate) fn ask_key(&self) -> String {
        let ask = (
            &self.action,
            &self.operation,
            &self.payload_digest,
            &self.requested_by,
        );
        let encoded = serde_json::to_vec(&ask).unwrap_or_default();
        blake3::hash(&encoded).to_hex().to_string()
    }

    /// Combines the persisted status with the claim and the clock.
    pub(crate) fn effective(&self, consumed: bool, now: Timestamp) -> EffectiveStatus {
        match self.status {
            Status::Pending if self.is_past_expiry(now) => EffectiveStatus::Expired,
            Status::Pending => EffectiveStatus::Pending,
            Status::Approved if consumed => EffectiveStatus::Consumed,
            Status::Approved if self.is_past_expiry(now) => EffectiveStatus::ApprovedExpired,
            Status::Approved => EffectiveStatus::ApprovedUnconsumed,
            Status::Denied => EffectiveStatus::Denied,
            Status::Expired => EffectiveStatus::Expired,
            Status::Revoked => EffectiveStatus::Revoked,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MIN_TTL;

    #[test]
    fn effective_status_combines_claim_and_clock() {
        let id = RequestId::parse("0123456789ab").unwrap();
        let t0 = Timestamp::from_unix_millis(1_000_000);
        let mut r = Request::new(id, NewRequest::new("a", "b"), t0, MIN_TTL, 1);
        let before = t0.saturating_add(MIN_TTL);
        let after = before.saturating_add(Duration::from_millis(1));
        assert_eq!(r.effective(false, before), EffectiveStatus::Pending);
        assert_eq!(r.effective(false, after), EffectiveStatus::Expired);
        r.decide(Status::Approved, t0, Some(&Decision::by("me")));
        assert_eq!(
            r.effective(false, before),
            EffectiveStatus::ApprovedUnconsumed
        );
        assert_eq!(r.effective(false, after), EffectiveStatus::ApprovedExpired);
        assert_eq!(r.effective(true, after), EffectiveStatus::Consumed);
        assert!(r.check(id).is_ok());
    }
}
