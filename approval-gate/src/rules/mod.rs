//! The rulebook: what may happen to a request, whatever stores it.
//!
//! Nothing here touches a store. The lifecycle modules ask these functions what is allowed
//! and in which order, then make the store's atomic steps happen; every backend therefore
//! follows the same state machine, refuses for the same reasons, and records the same events.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::audit::AuditEvent;
use crate::error::Error;
use crate::payload::CanonicalPayload;
use crate::policy::Policy;
use crate::request::{Binding, EffectiveStatus, Request, Status};
use crate::time::Timestamp;

mod transitions;

#[cfg(test)]
pub(crate) use transitions::EVENTS;
pub(crate) use transitions::{
    Effect, Stage, effect, next_stage, reachable, recorded_first, unrecorded,
};

#[cfg(test)]
mod tests;

/// A human's decision about a request, and what it needs to be allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Approve,
    Deny,
    Revoke,
}

/// How a decision takes effect relative to its audit line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// A "yes" is recorded before it takes effect: it never exists without its line.
    RecordFirst,
    /// A "no" takes effect before it is recorded, and stands if it cannot be.
    EffectFirst,
}

impl Verdict {
    /// Every verdict.
    pub(crate) const ALL: [Self; 3] = [Self::Approve, Self::Deny, Self::Revoke];

    /// The status the request takes.
    pub(crate) fn status(self) -> Status {
        match self {
            Self::Approve => Status::Approved,
            Self::Deny => Status::Denied,
            Self::Revoke => Status::Revoked,
        }
    }

    /// The operation's name, in errors and the audit log.
    pub(crate) fn operation(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Deny => "deny",
            Self::Revoke => "revoke",
        }
    }

    /// The event that records it.
    pub(crate) fn event(self) -> AuditEvent {
        match self {
            Self::Approve => AuditEvent::Approved,
            Self::Deny => AuditEvent::Denied,
            Self::Revoke => AuditEvent::Revoked,
        }
    }

    pub(crate) fn order(self) -> Order {
        match self {
            Self::Approve => Order::RecordFirst,
            Self::Deny | Self::Revoke => Order::EffectFirst,
        }
    }

    /// Whether the verdict may be given to a request that stands at `current`: approve and
    /// deny only a pending request, revoke only an unconsumed approval (expired or not).
    ///
    /// # Errors
    ///
    /// [`Error::Expired`] to approve or deny a request that expired first;
    /// [`Error::WrongState`] otherwise.
    pub(crate) fn check(self, id: crate::RequestId, current: EffectiveStatus) -> Result<(), Error> {
        let allowed = match self {
            Self::Approve | Self::Deny => current == EffectiveStatus::Pending,
            Self::Revoke => matches!(
                current,
                EffectiveStatus::ApprovedUnconsumed | EffectiveStatus::ApprovedExpired
            ),
        };
        if allowed {
            Ok(())
        } else if current == EffectiveStatus::Expired && self != Self::Revoke {
            Err(Error::Expired(id))
        } else {
            Err(Error::WrongState {
                id,
                operation: self.operation(),
                status: current,
            })
        }
    }
}

/// Whether a request read at `now` is due to be recorded expired before anything else is
/// done with it: pending and past its expiry (`Gate::expire_if_due` records it).
pub(crate) fn expiry_due(request: &Request, now: Timestamp) -> bool {
    request.status() == Status::Pending && request.is_past_expiry(now)
}

/// The checks of a consume before anything is spent: the binding's operation name follows
/// [`check_operation_name`](crate::check_operation_name); then, in the order of docs/authorization-states.md: the
/// request is approved (under a `policy`, by the signatures of enough distinct trusted approvers:
/// `(policy, required)`); not consumed; not expired; the action text is byte-for-byte equal; the
/// operation is equal; the payload is equal as canonical JSON; and the approved payload
/// round-trips through `T` exactly. Returns the payload as `T`.
///
/// # Errors
///
/// One variant per refusal, the first that applies.
pub(crate) fn check_consumable<T>(
    request: &Request,
    claimed: bool,
    binding: &Binding,
    policy: Option<(&Policy, u32)>,
    now: Timestamp,
) -> Result<T, Error>
where
    T: DeserializeOwned + Serialize,
{
    let id = request.id();
    // The executor's operation follows the one grammar too: a name spelt another way is
    // its mistake, said as such rather than as a mismatch.
    if let Some(operation) = &binding.operation {
        crate::request::check_operation_name(operation)?;
    }
    match request.status() {
        Status::Pending => return Err(Error::NotApproved(id)),
        Status::Denied => return Err(Error::Denied(id)),
        Status::Expired => return Err(Error::Expired(id)),
        Status::Revoked => return Err(Error::Revoked(id)),
        Status::Approved => {}
    }
    if let Some((policy, required)) = policy {
        policy.verify(request, required, now)?;
    }
    if claimed {
        return Err(Error::AlreadyConsumed(id));
    }
    if request.is_past_expiry(now) {
        return Err(Error::ApprovalExpired {
            id,
            expired_at: request.expires_at(),
        });
    }
    if binding.action.as_bytes() != request.action().as_bytes() {
        return Err(Error::ActionMismatch(id));
    }
    if binding.operation.as_deref() != request.operation() {
        return Err(Error::OperationMismatch {
            id,
            expected: request.operation().map(str::to_owned),
            got: binding.operation.clone(),
        });
    }
    if binding.payload.as_ref() != request.payload() {
        return Err(Error::PayloadMismatch {
            id,
            expected: request
                .payload_digest()
                .map_or_else(|| "none".to_owned(), |d| d.to_string()),
        });
    }
    // Without a payload the executor's type must be a faithful image of `null`, e.g. `()`.
    let null;
    let approved = if let Some(payload) = request.payload() {
        payload
    } else {
        null = CanonicalPayload::no_payload();
        &null
    };
    approved
        .deserialize_faithful::<T>()
        .map_err(|problem| Error::PayloadType { id, problem })
}

/// The event that records a refused consume: a replay of a spent approval is told apart.
pub(crate) fn refusal_event(refusal: &Error) -> AuditEvent {
    if matches!(refusal, Error::AlreadyConsumed(_)) {
        AuditEvent::ConsumeReplayed
    } else {
        AuditEvent::ConsumeRefused
    }
}

/// Whether a request may leave the live store: finished (`status`), created at least
/// `max(older_than_days, MIN_ARCHIVE_AGE_DAYS)` days ago and expired at least
/// `MIN_ARCHIVE_AGE_DAYS` days ago, so that nothing archived could still be used.
pub(crate) fn archivable(request: &Request, older_than_days: u32, now: Timestamp) -> bool {
    use crate::limits::MIN_ARCHIVE_AGE_DAYS;
    let day = std::time::Duration::from_secs(24 * 3600);
    let created_cutoff = now.saturating_sub(day * older_than_days.max(MIN_ARCHIVE_AGE_DAYS));
    let expired_cutoff = now.saturating_sub(day * MIN_ARCHIVE_AGE_DAYS);
    request.created_at() <= created_cutoff && request.expires_at() <= expired_cutoff
}
