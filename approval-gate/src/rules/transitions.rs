//! The state machine as data: the stages a request's audit trail can show it at, what each
//! event does, and the table of moves ([`TRANSITIONS`]) that [`next_stage`] reads.
//!
//! The table is what [`Verdict::check`](super::Verdict::check),
//! [`check_consumable`](super::check_consumable), `Gate::expire_if_due`,
//! `Gate::execute_approved` and `Gate::archive` allow between statuses, written out once; the
//! PostgreSQL schema enforces it again and `store/pg/rules_agree.rs` holds the two together.

use super::Verdict;
use crate::audit::AuditEvent;

/// Where a request stands as far as its audit trail can tell: its effective status, the clock
/// aside, with the execution of a consumed approval and the archive told apart. What
/// [`next_stage`] allows between them is what the rules above allow between statuses.
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
    /// Concerns the whole store too: its owner changed a setting (the caps), or `migrate`
    /// began the chain of a store brought over from the predecessor. No request moves.
    Configures,
    /// Concerns an allowance, not a request (the line names the allowance's id): granted or
    /// revoked. No request moves; the uses it approves are recorded on their requests.
    Allows,
}

/// Every event, for [`reachable`]. A new event must be added here and to [`effect`].
pub(crate) const EVENTS: [AuditEvent; 20] = [
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
    AuditEvent::Migrated,
    AuditEvent::AllowanceGranted,
    AuditEvent::AllowanceProposed,
    AuditEvent::AllowanceSigned,
    AuditEvent::AllowanceRevoked,
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
        AuditEvent::LimitsSet | AuditEvent::Migrated => Effect::Configures,
        AuditEvent::AllowanceGranted
        | AuditEvent::AllowanceProposed
        | AuditEvent::AllowanceSigned
        | AuditEvent::AllowanceRevoked => Effect::Allows,
    }
}

/// One allowed move: a request at `from` of which `event` is recorded stands at `to` after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Transition {
    /// Where the request stands before.
    pub(crate) from: Stage,
    /// What is recorded of it: an event whose [`effect`] is [`Effect::Moves`].
    pub(crate) event: AuditEvent,
    /// Where it stands after.
    pub(crate) to: Stage,
}

const fn row(from: Stage, event: AuditEvent, to: Stage) -> Transition {
    Transition { from, event, to }
}

/// Every move the rules allow, and no other: [`next_stage`] reads it. At most one row per
/// `(from, event)`; none leaves [`Stage::Archived`], and every stage is reachable from
/// [`Stage::Pending`] (the invariants its tests hold).
///
/// - decisions as [`Verdict::check`](super::Verdict::check) allows them: approve (or add one
///   approval of a quorum, which leaves the request pending) and deny only a pending request;
///   revoke only an unconsumed approval (expired or not);
/// - an expiry only of a pending request (as `Gate::expire_if_due`);
/// - a consume only of an unconsumed approval (as [`check_consumable`](super::check_consumable));
/// - an execution only of a fresh consume, and its end only after its start (as
///   `Gate::execute_approved`);
/// - archiving only of a finished request no execution holds (as
///   [`archivable`](super::archivable) and `Gate::archive`): it waits until the expiry is days
///   past, so an approval it finds is an expired one.
pub(crate) const TRANSITIONS: [Transition; 14] = {
    use AuditEvent as E;
    use Stage as S;
    [
        row(S::Pending, E::Approved, S::Approved),
        row(S::Pending, E::ApprovalAdded, S::Pending),
        row(S::Pending, E::Denied, S::Denied),
        row(S::Pending, E::Expired, S::Expired),
        row(S::Approved, E::Revoked, S::Revoked),
        row(S::Approved, E::Consumed, S::Consumed),
        row(S::Approved, E::Archived, S::Archived),
        row(S::Consumed, E::ExecutionStarted, S::Executing),
        row(S::Consumed, E::Archived, S::Archived),
        row(S::Executing, E::ExecutionFinished, S::Executed),
        row(S::Executed, E::Archived, S::Archived),
        row(S::Denied, E::Archived, S::Archived),
        row(S::Expired, E::Archived, S::Archived),
        row(S::Revoked, E::Archived, S::Archived),
    ]
};

/// The stage `event` moves a request at `from` to, if the rules allow it there: the row of
/// [`TRANSITIONS`] for `(from, event)`, if there is one.
pub(crate) fn next_stage(from: Stage, event: AuditEvent) -> Option<Stage> {
    TRANSITIONS
        .iter()
        .find(|row| row.from == from && row.event == event)
        .map(|row| row.to)
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

/// Whether a line of `event` is written before its effect takes place, so that a crash or a
/// failed write may leave the line without the effect (an approval:
/// [`Order::RecordFirst`](super::Order::RecordFirst)).
pub(crate) fn recorded_first(event: AuditEvent) -> bool {
    verdict_of(event).is_some_and(|verdict| verdict.order() == super::Order::RecordFirst)
}

/// The stages a request at `from` may have reached with no line saying so, when a store
/// writes a line after its effect: a "no" ([`Order::EffectFirst`](super::Order::EffectFirst):
/// deny, revoke, and an expiry, which `Gate::expire_if_due` records the same way) stands even
/// when its line could not be written.
pub(crate) fn unrecorded(from: Stage) -> impl Iterator<Item = Stage> {
    let silent = Verdict::ALL
        .into_iter()
        .filter(|verdict| verdict.order() == super::Order::EffectFirst)
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
