//! The one error type of the crate.
//!
//! Every refusal on the authorization path has its own variant, so callers (and the agent
//! reading an MCP result) can tell "denied" from "expired" from "already consumed". Any
//! error at all means **no**.

use std::io;
use std::path::PathBuf;

use crate::id::RequestId;
use crate::payload::PayloadError;
use crate::request::EffectiveStatus;
use crate::time::Timestamp;

/// Everything that can go wrong, each refusal in its own variant.
///
/// Messages are lowercase and say what happened; none of them authorizes anything.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The text is not a request id (12 lowercase hex characters).
    #[error("invalid request id {id:?}: expected 12 lowercase hex characters")]
    InvalidId {
        /// The offending text (at most 64 characters of it).
        id: String,
    },

    /// A field of a new request or decision is not acceptable.
    #[error("invalid {field}: {problem}")]
    InvalidInput {
        /// Which field.
        field: &'static str,
        /// What is wrong with it and how to fix it.
        problem: String,
    },

    /// The payload is not acceptable canonical JSON.
    #[error("invalid payload: {0}")]
    InvalidPayload(#[from] PayloadError),

    /// The approved payload cannot be carried faithfully by the executor's payload type.
    #[error(
        "approved payload of request {id} does not round-trip through the executor's type: {problem}"
    )]
    PayloadType {
        /// The request.
        id: RequestId,
        /// What did not round-trip.
        problem: PayloadError,
    },

    /// Too many pending requests: a human has to decide some, or they have to expire.
    #[error("approval queue full: {pending} pending requests (limit {limit})")]
    QueueFull {
        /// Pending requests now.
        pending: usize,
        /// The configured cap.
        limit: usize,
    },

    /// Too many requests on disk: archive finished ones.
    #[error(
        "approval store full: {requests} requests on disk (limit {limit}); run `approval-gate archive`"
    )]
    CreationLimit {
        /// Requests on disk now.
        requests: usize,
        /// The configured cap.
        limit: usize,
    },

    /// No request with this id in the live store.
    #[error("request {0} not found")]
    NotFound(RequestId),

    /// The request was archived and can never be used again.
    #[error("request {0} is archived and can no longer be used")]
    Archived(RequestId),

    /// The request is still waiting for a human decision.
    #[error("request {0} is pending: not approved")]
    NotApproved(RequestId),

    /// A human denied the request.
    #[error("request {0} was denied")]
    Denied(RequestId),

    /// The request expired before a human approved it.
    #[error("request {0} expired before it was approved")]
    Expired(RequestId),

    /// A human revoked the approval before it was consumed.
    #[error("approval of request {0} was revoked")]
    Revoked(RequestId),

    /// The approval was already consumed: a replay.
    #[error("approval of request {0} was already consumed")]
    AlreadyConsumed(RequestId),

    /// The approval expired before it was consumed.
    #[error("approval of request {id} expired at {expired_at}")]
    ApprovalExpired {
        /// The request.
        id: RequestId,
        /// When it expired.
        expired_at: Timestamp,
    },

    /// The approval expired while the consume was being made durable; it is spent.
    #[error(
        "approval of request {id} expired at {expired_at} while the consume was being recorded; it is spent"
    )]
    ExpiredDuringConsume {
        /// The request.
        id: RequestId,
        /// When it expired.
        expired_at: Timestamp,
    },

    /// The action text differs from the approved one.
    #[error("action text does not match the approved request {0}")]
    ActionMismatch(RequestId),

    /// The operation differs from the approved one.
    #[error(
        "operation does not match the approved request {id}: expected {expected:?}, got {got:?}"
    )]
    OperationMismatch {
        /// The request.
        id: RequestId,
        /// The approved operation.
        expected: Option<String>,
        /// The operation supplied.
        got: Option<String>,
    },

    /// The payload differs from the approved one.
    #[error("payload does not match the approved request {id} (approved digest {expected})")]
    PayloadMismatch {
        /// The request.
        id: RequestId,
        /// Digest of the approved payload, or `none`.
        expected: String,
    },

    /// The request is no longer the one the human was shown.
    #[error("request {0} changed since it was shown: nothing was approved")]
    Changed(RequestId),

    /// A decision was attempted on a request in a state that does not allow it.
    #[error("cannot {operation} request {id}: it is {status}")]
    WrongState {
        /// The request.
        id: RequestId,
        /// What was attempted (`approve`, `deny`, `revoke`).
        operation: &'static str,
        /// Where the request stands.
        status: EffectiveStatus,
    },

    /// A state directory or file is a symlink, not ours, or writable by others.
    #[error("refusing unsafe state path {path}: {problem}")]
    UnsafeState {
        /// The path.
        path: PathBuf,
        /// Why it is refused.
        problem: String,
    },

    /// A state file does not hold what this crate writes.
    #[error("corrupt state file {path}: {problem}")]
    Corrupt {
        /// The path.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },

    /// A request's record cannot be read (damaged, truncated, of an unknown format version,
    /// or failing its own consistency checks). It refuses everything about its own id and
    /// nothing else: listings show it as unreadable, other requests keep working.
    #[error(
        "request {id} is unreadable: {problem}; it refuses everything until a human repairs or removes its record (`approval-gate doctor` lists such records)"
    )]
    Unreadable {
        /// The request.
        id: RequestId,
        /// What is wrong with its record.
        problem: String,
    },

    /// The audit log fails verification.
    #[error("audit log broken at line {line}: {problem}")]
    AuditBroken {
        /// 1-based line number of the first bad line.
        line: u64,
        /// What is wrong there.
        problem: String,
    },

    /// The operation took effect on disk, but the directory fsync that makes it survive a
    /// crash failed: after a power loss it may be as if it never happened. It is not a
    /// refusal: check where the request stands (`approval-gate show ID`) before acting
    /// again. A consume reported this way is spent and authorizes nothing.
    #[error(
        "{operation} of request {id} took effect ({}), but its durability is unknown: {source}; check the request with `approval-gate show {id}`",
        consequence(operation)
    )]
    DurabilityUnknown {
        /// The request.
        id: RequestId,
        /// What was done: `request`, `approve`, `deny`, `revoke`, `expire`, `consume`,
        /// `execute` or `archive`.
        operation: &'static str,
        /// The failure after the change was in place.
        source: Box<Error>,
    },

    /// The operation took effect, but what follows it (its audit line, or for `execute` the
    /// start of the execution) failed. A "no" (deny, revoke, expire) stands even when it
    /// cannot be recorded; a consume reported this way is spent and authorizes nothing.
    #[error(
        "{operation} of request {id} took effect ({}), but recording it failed: {source}; run `approval-gate audit verify`",
        consequence(operation)
    )]
    NotRecorded {
        /// The request.
        id: RequestId,
        /// What was done, as for [`Error::DurabilityUnknown`].
        operation: &'static str,
        /// What failed.
        source: Box<Error>,
    },

    /// The store has no directory to use.
    #[error("no state directory: set APPROVAL_GATE_DIR or HOME")]
    NoStateDir,

    /// The operating system's random source failed.
    #[error("random source failed: {0}")]
    Random(String),

    /// A filesystem operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// On which path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// What an operation that took effect means for the reader.
fn consequence(operation: &str) -> &'static str {
    match operation {
        "request" => "the request is filed",
        "approve" => "the request is approved",
        "deny" => "the request is denied",
        "revoke" => "the approval is revoked",
        "expire" => "the request is expired",
        "consume" | "execute" => {
            "the approval is spent; nothing is authorized and nothing ran: do not act on it"
        }
        "archive" => "the request is archived",
        _ => "it changed the store",
    }
}

impl Error {
    /// Builds an [`Error::Io`].
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// Whether the operation that failed nevertheless took effect:
    /// [`Error::DurabilityUnknown`], [`Error::NotRecorded`] and
    /// [`Error::ExpiredDuringConsume`] (the approval is spent). Every other error means
    /// nothing changed.
    #[must_use]
    pub fn took_effect(&self) -> bool {
        matches!(
            self,
            Self::DurabilityUnknown { .. }
                | Self::NotRecorded { .. }
                | Self::ExpiredDuringConsume { .. }
        )
    }

    /// Wraps `self`, a failure after `operation` took effect on `id`.
    pub(crate) fn after_effect(self, id: RequestId, operation: &'static str) -> Self {
        if self.took_effect() {
            return self;
        }
        Self::NotRecorded {
            id,
            operation,
            source: Box::new(self),
        }
    }

    /// A short stable code for the kind of error, used in audit lines and by tools.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidId { .. } => "invalid_id",
            Self::InvalidInput { .. } => "invalid_input",
            Self::InvalidPayload(_) => "invalid_payload",
            Self::PayloadType { .. } => "payload_type",
            Self::QueueFull { .. } => "queue_full",
            Self::CreationLimit { .. } => "creation_limit",
            Self::NotFound(_) => "not_found",
            Self::Archived(_) => "archived",
            Self::NotApproved(_) => "not_approved",
            Self::Denied(_) => "denied",
            Self::Expired(_) => "expired",
            Self::Revoked(_) => "revoked",
            Self::AlreadyConsumed(_) => "already_consumed",
            Self::ApprovalExpired { .. } => "approval_expired",
            Self::ExpiredDuringConsume { .. } => "expired_during_consume",
            Self::ActionMismatch(_) => "action_mismatch",
            Self::OperationMismatch { .. } => "operation_mismatch",
            Self::PayloadMismatch { .. } => "payload_mismatch",
            Self::Changed(_) => "changed",
            Self::WrongState { .. } => "wrong_state",
            Self::UnsafeState { .. } => "unsafe_state",
            Self::Corrupt { .. } => "corrupt",
            Self::Unreadable { .. } => "unreadable",
            Self::AuditBroken { .. } => "audit_broken",
            Self::DurabilityUnknown { .. } => "durability_unknown",
            Self::NotRecorded { .. } => "not_recorded",
            Self::NoStateDir => "no_state_dir",
            Self::Random(_) => "random",
            Self::Io { .. } => "io",
        }
    }
}
