//! The transition table against the rules it writes out, and its invariants.

use super::transitions::TRANSITIONS;
use super::{EVENTS, Effect, Stage, Verdict, effect, next_stage, reachable};
use crate::audit::AuditEvent;
use crate::request::{EffectiveStatus, Status};

/// The effective status of a request at `stage`; `None` once archived, when nothing can happen
/// to it any more. The log does not say what the clock said: an approval counts as unexpired.
fn status(stage: Stage) -> Option<EffectiveStatus> {
    Some(match stage {
        Stage::Pending => EffectiveStatus::Pending,
        Stage::Approved => EffectiveStatus::ApprovedUnconsumed,
        Stage::Consumed | Stage::Executing | Stage::Executed => EffectiveStatus::Consumed,
        Stage::Denied => EffectiveStatus::Denied,
        Stage::Expired => EffectiveStatus::Expired,
        Stage::Revoked => EffectiveStatus::Revoked,
        Stage::Archived => return None,
    })
}

fn stage_of(status: Status) -> Stage {
    match status {
        Status::Pending => Stage::Pending,
        Status::Approved => Stage::Approved,
        Status::Denied => Stage::Denied,
        Status::Expired => Stage::Expired,
        Status::Revoked => Stage::Revoked,
    }
}

/// The moves derived from the rules themselves, as `next_stage` computed them before it read
/// a table: decisions through [`Verdict::check`], and the other events by the status they need.
fn derived(from: Stage, event: AuditEvent) -> Option<Stage> {
    let status = status(from)?;
    let verdict = if event == AuditEvent::ApprovalAdded {
        Some(Verdict::Approve)
    } else {
        Verdict::ALL.into_iter().find(|v| v.event() == event)
    };
    if let Some(verdict) = verdict {
        verdict.check(crate::RequestId::STORE, status).ok()?;
        return Some(if event == AuditEvent::ApprovalAdded {
            Stage::Pending
        } else {
            stage_of(verdict.status())
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

#[test]
fn the_table_is_the_rules_for_every_stage_and_event() {
    let mut allowed = 0;
    for from in Stage::ALL {
        for event in EVENTS {
            assert_eq!(
                next_stage(from, event),
                derived(from, event),
                "{event:?} from {from:?}"
            );
            allowed += usize::from(derived(from, event).is_some());
        }
    }
    // Every row is one the rules allow, and every move they allow is a row.
    assert_eq!(allowed, TRANSITIONS.len());
}

#[test]
fn each_stage_and_event_has_at_most_one_row() {
    for (i, a) in TRANSITIONS.iter().enumerate() {
        for b in &TRANSITIONS[i + 1..] {
            assert!(
                (a.from, a.event) != (b.from, b.event),
                "two rows for {:?} from {:?}",
                a.event,
                a.from
            );
        }
    }
}

#[test]
fn only_moving_events_have_rows_and_each_has_one() {
    for row in TRANSITIONS {
        assert_eq!(effect(row.event), Effect::Moves, "{row:?}");
    }
    for event in EVENTS.into_iter().filter(|e| effect(*e) == Effect::Moves) {
        assert!(
            TRANSITIONS.iter().any(|row| row.event == event),
            "{event:?} moves nothing"
        );
    }
}

#[test]
fn nothing_leaves_the_archive_and_only_the_archive_is_terminal() {
    for stage in Stage::ALL {
        let outgoing = TRANSITIONS.iter().filter(|row| row.from == stage).count();
        if stage == Stage::Archived {
            assert_eq!(outgoing, 0, "an archived request moves");
        } else {
            assert!(outgoing > 0, "{stage:?} is a dead end");
            assert!(
                reachable(stage).contains(&Stage::Archived),
                "{stage:?} never reaches the archive"
            );
        }
    }
}

#[test]
fn every_stage_is_reachable_from_pending_and_nothing_returns_to_it_but_a_partial_quorum() {
    assert_eq!(reachable(Stage::Pending).len(), Stage::ALL.len());
    for row in TRANSITIONS {
        if row.to == Stage::Pending {
            assert_eq!(
                (row.from, row.event),
                (Stage::Pending, AuditEvent::ApprovalAdded),
                "{row:?}"
            );
        }
    }
}

#[test]
fn a_spent_or_executing_approval_is_never_decided_again() {
    for from in [Stage::Consumed, Stage::Executing, Stage::Executed] {
        for verdict in Verdict::ALL {
            assert_eq!(
                next_stage(from, verdict.event()),
                None,
                "{verdict:?} {from:?}"
            );
        }
        assert_eq!(next_stage(from, AuditEvent::Consumed), None, "{from:?}");
    }
    assert_eq!(next_stage(Stage::Executing, AuditEvent::Archived), None);
}
