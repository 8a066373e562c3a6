//! What an error says about its request: whether it took effect, which request, where it
//! stands. Each is decided for every variant by name (no wildcard), so a variant added to the
//! table does not compile until it is decided here too.

use super::{Error, ErrorClass};
use crate::id::RequestId;
use crate::status::EffectiveStatus;

#[deny(clippy::wildcard_enum_match_arm)]
impl Error {
    /// Whether the operation that failed nevertheless took effect: the codes of class
    /// [`ErrorClass::Incomplete`] ([`Error::DurabilityUnknown`], [`Error::NotRecorded`]) and
    /// [`Error::ExpiredDuringConsume`] (the approval is spent). Every other error means
    /// nothing changed.
    #[must_use]
    pub fn took_effect(&self) -> bool {
        self.code().class() == ErrorClass::Incomplete
            || matches!(self, Self::ExpiredDuringConsume { .. })
    }

    /// The request this error is about, if it is about one.
    #[must_use]
    pub fn request_id(&self) -> Option<RequestId> {
        match self {
            Self::NotFound(id)
            | Self::Archived(id)
            | Self::NotApproved(id)
            | Self::Denied(id)
            | Self::Expired(id)
            | Self::Revoked(id)
            | Self::AlreadyConsumed(id)
            | Self::ActionMismatch(id)
            | Self::Changed(id)
            | Self::PayloadType { id, .. }
            | Self::ApprovalExpired { id, .. }
            | Self::ExpiredDuringConsume { id, .. }
            | Self::OperationMismatch { id, .. }
            | Self::PayloadMismatch { id, .. }
            | Self::WrongState { id, .. }
            | Self::InsufficientApprovals { id, .. }
            | Self::BadSignature { id, .. }
            | Self::UntrustedSigner { id, .. }
            | Self::SignatureRequired { id, .. }
            | Self::AllowanceExhausted { id, .. }
            | Self::AllowanceNotCovering { id, .. }
            | Self::AlreadySigned { id, .. }
            | Self::NoApprovers { id }
            | Self::Unreadable { id, .. }
            | Self::AuditInconsistent { id, .. }
            | Self::DurabilityUnknown { id, .. }
            | Self::NotRecorded { id, .. } => Some(*id),
            Self::InvalidId { .. }
            | Self::InvalidInput { .. }
            | Self::InvalidPayload(_)
            | Self::QueueFull { .. }
            | Self::CreationLimit { .. }
            | Self::Signing(_)
            | Self::UnsafeState { .. }
            | Self::Corrupt { .. }
            | Self::PredecessorStore { .. }
            | Self::AuditBroken { .. }
            | Self::NoStateDir
            | Self::Random(_)
            | Self::Database { .. }
            | Self::NotPermitted { .. }
            | Self::Blocked { .. }
            | Self::Io { .. } => None,
        }
    }

    /// Where the request stands, as far as this refusal tells (a consume refused for a
    /// payload mismatch says the approval is still unconsumed, say); `None` when it does not.
    #[must_use]
    pub fn status(&self) -> Option<EffectiveStatus> {
        use EffectiveStatus as S;
        Some(match self {
            Self::NotApproved(_) => S::Pending,
            Self::Denied(_) => S::Denied,
            Self::Expired(_) => S::Expired,
            Self::Revoked(_) => S::Revoked,
            Self::AlreadyConsumed(_) | Self::ExpiredDuringConsume { .. } => S::Consumed,
            Self::ApprovalExpired { .. } => S::ApprovedExpired,
            Self::ActionMismatch(_)
            | Self::OperationMismatch { .. }
            | Self::PayloadMismatch { .. }
            | Self::PayloadType { .. }
            | Self::AllowanceExhausted { .. }
            | Self::AllowanceNotCovering { .. } => S::ApprovedUnconsumed,
            Self::WrongState { status, .. } => *status,
            // Where a change took effect but was not made durable or recorded, the status is
            // not known from the error; the others do not say, or are not about one request.
            Self::InvalidId { .. }
            | Self::InvalidInput { .. }
            | Self::InvalidPayload(_)
            | Self::QueueFull { .. }
            | Self::CreationLimit { .. }
            | Self::NotFound(_)
            | Self::Archived(_)
            | Self::InsufficientApprovals { .. }
            | Self::BadSignature { .. }
            | Self::UntrustedSigner { .. }
            | Self::SignatureRequired { .. }
            | Self::AlreadySigned { .. }
            | Self::NoApprovers { .. }
            | Self::Signing(_)
            | Self::Changed(_)
            | Self::UnsafeState { .. }
            | Self::Corrupt { .. }
            | Self::PredecessorStore { .. }
            | Self::Unreadable { .. }
            | Self::AuditBroken { .. }
            | Self::AuditInconsistent { .. }
            | Self::DurabilityUnknown { .. }
            | Self::NotRecorded { .. }
            | Self::NoStateDir
            | Self::Random(_)
            | Self::Database { .. }
            | Self::NotPermitted { .. }
            | Self::Blocked { .. }
            | Self::Io { .. } => return None,
        })
    }
}
