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

/// Where a request stands as far as its audit trail can tell: its effective status, the clock
/// aside, with the execution of a consumed approval and the archive told apart. What
/// [`next_stage`] allows between them is what the functions above allow between statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    Pending,
    Approved,
    Consumed,
    Executing,
    Executed,
    Denied,
    Expired,
    Revoked,
    Archived,
}

impl Stage {
    /// Every stage.
    pub(crate) const ALL: [Self; 9] = [
        Self::Pending,
        Self::Approved,
        Self::Consumed,
        Self::Executing,
        Self::Executed,
        Self::Denied,
        Self::Expired,
        Self::Revoked,
        Self::Archived,
    ];

    /// The stage's name, as problems name it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Consumed => "consumed",
            Self::Executing => "executing",
            Self::Executed => "executed",
            Self::Denied => "denied",
            Self::Expired => "expired",
            Self::Revoked => "revoked",
            Self::Archived => "archived",
        }
    }

    /// The effective status of a request at this stage; `None` once archived, when nothing
    /// can happen to it any more. The log does not say what the clock said: an approval
    /// counts as unexpired ([`next_stage`] lets archiving see it expired, as it must be by
    /// then).
    fn status(self) -> Option<EffectiveStatus> {
        Some(match self {
            Self::Pending => EffectiveStatus::Pending,
            Self::Approved => EffectiveStatus::ApprovedUnconsumed,
            Self::Consumed | Self::Executing | Self::Executed => EffectiveStatus::Consumed,
            Self::Denied => EffectiveStatus::Denied,
            Self::Expired => EffectiveStatus::Expired,
            Self::Revoked => EffectiveStatus::Revoked,
            Self::Archived => return None,
        })
    }

    fn of(status: Status) -> Self {
        match status {
            Status::Pending => Self::Pending,
            Status::Approved => Self::Approved,
            Status::Denied => Self::Denied,
            Status::Expired => Self::Expired,
            Status::Revoked => Self::Revoked,
        }
    }
}

/// What an audit event does to the request its line names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Files it: the first line of its trail.
    Files,
    /// Moves it from one [`Stage`] to another, where [`next_stage`] allows it.
    Moves,
    /// Nothing: a refused consume or decision changes nothing, and may be tried at any stage,
    /// of any id.
    Refuses,
    /// Concerns the whole store (the line names [`RequestId::STORE`](crate::RequestId::STORE)):
    /// a re-anchoring accepted the log as it was, lines lost before it included.
    Reanchors,
    /// Concerns the whole store too: its owner changed a setting (the caps). No request
    /// moves.
    Configures,
}

/// Every event, for [`reachable`]. A new event must be added here and to [`effect`].
pub(crate) const EVENTS: [AuditEvent; 15] = [
    AuditEvent::Requested,
    AuditEvent::Approved,
    AuditEvent::ApprovalAdded,
    AuditEvent::Denied,
    AuditEvent::Revoked,
    AuditEvent::Expired,
    AuditEvent::Consumed,
    AuditEvent::ConsumeRefused,
    AuditEvent::ConsumeReplayed,
    AuditEvent::DecisionRefused,
    AuditEvent::ExecutionStarted,
    AuditEvent::ExecutionFinished,
    AuditEvent::Archived,
    AuditEvent::Reanchored,
    AuditEvent::LimitsSet,
];

/// What `event` does to the request its line names.
pub(crate) fn effect(event: AuditEvent) -> Effect {
    match event {
        AuditEvent::Requested => Effect::Files,
        AuditEvent::Approved
        | AuditEvent::ApprovalAdded
        | AuditEvent::Denied
        | AuditEvent::Revoked
        | AuditEvent::Expired
        | AuditEvent::Consumed
        | AuditEvent::ExecutionStarted
        | AuditEvent::ExecutionFinished
        | AuditEvent::Archived => Effect::Moves,
        AuditEvent::ConsumeRefused | AuditEvent::ConsumeReplayed | AuditEvent::DecisionRefused => {
            Effect::Refuses
        }
        AuditEvent::Reanchored => Effect::Reanchors,
        AuditEvent::LimitsSet => Effect::Configures,
    }
}

/// The decision an event records, if it records one (an added approval is an approve that
/// leaves the request pending).
fn verdict_of(event: AuditEvent) -> Option<Verdict> {
    if event == AuditEvent::ApprovalAdded {
        return Some(Verdict::Approve);
    }
    Verdict::ALL
        .into_iter()
        .find(|verdict| verdict.event() == event)
}

/// The stage `event` moves a request at `from` to, if the rules allow it there: decisions as
/// [`Verdict::check`] allows them; an expiry only of a pending request (as
/// `Gate::expire_if_due`); a consume only of an unconsumed approval (as [`check_consumable`]),
/// an execution only of a fresh consume and its end only after its start (as
/// `Gate::execute_approved`); and archiving only of a finished request no execution holds
/// (as [`archivable`] and `Gate::archive`). Nothing moves an archived request.
pub(crate) fn next_stage(from: Stage, event: AuditEvent) -> Option<Stage> {
    let status = from.status()?;
    if let Some(verdict) = verdict_of(event) {
        verdict.check(crate::RequestId::STORE, status).ok()?;
        return Some(if event == AuditEvent::ApprovalAdded {
            Stage::Pending
        } else {
            Stage::of(verdict.status())
        });
    }
    match event {
        AuditEvent::Expired => (status == EffectiveStatus::Pending).then_some(Stage::Expired),
        AuditEvent::Consumed => {
            (status == EffectiveStatus::ApprovedUnconsumed).then_some(Stage::Consumed)
        }
        AuditEvent::ExecutionStarted => (from == Stage::Consumed).then_some(Stage::Executing),
        AuditEvent::ExecutionFinished => (from == Stage::Executing).then_some(Stage::Executed),
        AuditEvent::Archived => {
            // Archiving waits until the expiry is days past: an approval it finds expired.
            let status = if status == EffectiveStatus::ApprovedUnconsumed {
                EffectiveStatus::ApprovedExpired
            } else {
                status
            };
            (status.is_finished() && from != Stage::Executing).then_some(Stage::Archived)
        }
        _ => None,
    }
}

/// Whether a line of `event` is written before its effect takes place, so that a crash or a
/// failed write may leave the line without the effect (an approval: [`Order::RecordFirst`]).
pub(crate) fn recorded_first(event: AuditEvent) -> bool {
    verdict_of(event).is_some_and(|verdict| verdict.order() == Order::RecordFirst)
}

/// The stages a request at `from` may have reached with no line saying so, when a store
/// writes a line after its effect: a "no" ([`Order::EffectFirst`]: deny, revoke, and an
/// expiry, which `Gate::expire_if_due` records the same way) stands even when its line could
/// not be written.
pub(crate) fn unrecorded(from: Stage) -> impl Iterator<Item = Stage> {
    let silent = Verdict::ALL
        .into_iter()
        .filter(|verdict| verdict.order() == Order::EffectFirst)
        .map(Verdict::event)
        .chain([AuditEvent::Expired]);
    silent.filter_map(move |event| next_stage(from, event))
}

/// Every stage a request at `from` can reach through any number of events (`from` included):
/// what may have happened in lines that were lost.
pub(crate) fn reachable(from: Stage) -> Vec<Stage> {
    let mut seen = vec![from];
    let mut next = 0;
    while let Some(&stage) = seen.get(next) {
        next += 1;
        for event in EVENTS {
            if let Some(to) = next_stage(stage, event)
                && !seen.contains(&to)
            {
                seen.push(to);
            }
        }
    }
    seen
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
