//! Requests, their statuses, and the inputs that create and decide them.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::Error;
use crate::id::RequestId;
use crate::limits::{
    MAX_ACTION_BYTES, MAX_NAME_BYTES, MAX_OPERATION_BYTES, MAX_REASON_BYTES, MAX_TTL, MIN_TTL,
};
use crate::payload::{CanonicalPayload, PayloadDigest};
use crate::time::Timestamp;

/// The persisted status of a request.
///
/// Consumption is not a status: it is a separate, durable, single-use claim. See
/// [`EffectiveStatus`] for the combined view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Waiting for a human decision.
    Pending,
    /// A human approved it; usable once, until it expires.
    Approved,
    /// Denied.
    Denied,
    /// Its time to live passed while it was pending.
    Expired,
    /// A human withdrew the approval before it was consumed.
    Revoked,
}

/// Where a request stands, combining its status, its claim and the clock.
///
/// None of these authorizes anything: only a successful consume does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectiveStatus {
    /// Waiting for a human decision.
    Pending,
    /// Approved, not yet consumed, not yet expired.
    ApprovedUnconsumed,
    /// Approved, never consumed, and now past its expiry: unusable.
    ApprovedExpired,
    /// Approved and consumed: spent.
    Consumed,
    /// Denied.
    Denied,
    /// Expired while pending.
    Expired,
    /// Revoked after approval.
    Revoked,
}

impl EffectiveStatus {
    /// The snake-case name used in JSON and on the command line.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::ApprovedUnconsumed => "approved_unconsumed",
            Self::ApprovedExpired => "approved_expired",
            Self::Consumed => "consumed",
            Self::Denied => "denied",
            Self::Expired => "expired",
            Self::Revoked => "revoked",
        }
    }

    /// Whether nothing can change this request any more.
    #[must_use]
    pub fn is_finished(self) -> bool {
        !matches!(self, Self::Pending | Self::ApprovedUnconsumed)
    }
}

impl fmt::Display for EffectiveStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Status {
    /// The snake-case name used in JSON and in the request file.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Expired => "expired",
            Self::Revoked => "revoked",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    pub(crate) fn new(id: RequestId, new: NewRequest, now: Timestamp, ttl: Duration) -> Self {
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
        }
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

    pub(crate) fn is_past_expiry(&self, now: Timestamp) -> bool {
        now > self.expires_at
    }

    pub(crate) fn decide(&mut self, status: Status, now: Timestamp, decision: Option<&Decision>) {
        self.status = status;
        self.decided_at = Some(now);
        self.decision_reason = decision.and_then(|d| d.reason.clone());
        self.decided_by = decision.map(|d| d.decided_by.clone());
    }

    /// Same request as far as de-duplication goes.
    pub(crate) fn same_ask(&self, new: &NewRequest) -> bool {
        self.action == new.action
            && self.operation == new.operation
            && self.payload_digest == new.payload.as_ref().map(CanonicalPayload::digest)
            && self.requested_by == new.requested_by
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

/// A request together with where it stands. Never an authorization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    #[serde(flatten)]
    request: Request,
    effective_status: EffectiveStatus,
    authorizes_execution: bool,
}

impl StatusReport {
    pub(crate) fn new(request: Request, effective_status: EffectiveStatus) -> Self {
        Self {
            request,
            effective_status,
            authorizes_execution: false,
        }
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
    action: String,
    reason: String,
    requested_by: Option<String>,
    operation: Option<String>,
    payload: Option<CanonicalPayload>,
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
        check_text("action", &self.action, MAX_ACTION_BYTES, true)?;
        check_text("reason", &self.reason, MAX_REASON_BYTES, true)?;
        if let Some(who) = &self.requested_by {
            check_text("requested_by", who, MAX_NAME_BYTES, true)?;
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

/// Who decides, and why: the input to approve, deny and revoke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    decided_by: String,
    reason: Option<String>,
}

impl Decision {
    /// A decision by `decided_by` (for a human at the CLI, their OS user name).
    #[must_use]
    pub fn by(decided_by: impl Into<String>) -> Self {
        Self {
            decided_by: decided_by.into(),
            reason: None,
        }
    }

    /// A decision by the current OS user (see [`os_user`]).
    #[must_use]
    pub fn by_os_user() -> Self {
        Self::by(os_user())
    }

    /// Adds a reason. An empty reason is the same as none.
    #[must_use]
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        self.reason = (!reason.is_empty()).then_some(reason);
        self
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        check_text("decided_by", &self.decided_by, MAX_NAME_BYTES, true)?;
        if let Some(reason) = &self.reason {
            check_text("decision reason", reason, MAX_REASON_BYTES, false)?;
        }
        Ok(())
    }
}

/// The name of the current OS user: `$USER`, else `$LOGNAME`, else `uid <n>`.
#[must_use]
pub fn os_user() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .find(|name| !name.is_empty() && name.len() <= MAX_NAME_BYTES && !name.contains('\0'))
        .unwrap_or_else(|| format!("uid {}", rustix::process::geteuid().as_raw()))
}

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

fn check_text(field: &'static str, text: &str, max: usize, required: bool) -> Result<(), Error> {
    let problem = if required && text.trim().is_empty() {
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

    #[test]
    fn effective_status_combines_claim_and_clock() {
        let id = RequestId::parse("0123456789ab").unwrap();
        let t0 = Timestamp::from_unix_millis(1_000_000);
        let mut r = Request::new(id, NewRequest::new("a", "b"), t0, MIN_TTL);
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

    #[test]
    fn status_names_match_their_json() {
        for status in [
            Status::Pending,
            Status::Approved,
            Status::Denied,
            Status::Expired,
            Status::Revoked,
        ] {
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
            assert_eq!(status.to_string(), status.as_str());
        }
        for status in [
            EffectiveStatus::Pending,
            EffectiveStatus::ApprovedUnconsumed,
            EffectiveStatus::ApprovedExpired,
            EffectiveStatus::Consumed,
            EffectiveStatus::Denied,
            EffectiveStatus::Expired,
            EffectiveStatus::Revoked,
        ] {
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
        }
    }
}
