//! `decide.rs`: what a front end asks before a human confirms an approval.

use std::time::Duration;

use crate::limits::MAX_REASON_BYTES;
use crate::{
    Decision, EffectiveStatus, Error, Gate, ManualClock, NewRequest, RequestId, Timestamp,
};

fn gate(dir: &tempfile::TempDir, clock: &ManualClock) -> Gate {
    Gate::builder()
        .dir(dir.path().join("gate"))
        .clock(clock.clone())
        .open()
        .unwrap()
}

fn file(gate: &Gate, action: &str) -> RequestId {
    let ask = NewRequest::new(action, "because").ttl(Duration::from_secs(600));
    gate.request_approval(ask).unwrap().request.id()
}

#[test]
fn a_request_shown_is_approvable_until_its_expiry_and_asking_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000));
    let gate = gate(&dir, &clock);
    let id = file(&gate, "send it");
    let shown = gate.status(id).unwrap();
    let lines = gate.audit_records().unwrap().len();

    gate.check_approvable(&shown).unwrap();
    // At the expiry itself it is still valid; a millisecond on it is not.
    clock.advance(Duration::from_secs(600));
    gate.check_approvable(&shown).unwrap();
    clock.advance(Duration::from_millis(1));
    let late = gate.check_approvable(&shown).unwrap_err();
    assert!(matches!(late, Error::Expired(at) if at == id), "{late:?}");
    // Asking wrote nothing, and what approving would say is the same refusal.
    assert_eq!(gate.audit_records().unwrap().len(), lines);
    let approved = gate.approve_as_shown(shown.request(), &Decision::by("h"));
    assert!(matches!(approved, Err(Error::Expired(_))), "{approved:?}");
}

#[test]
fn a_request_decided_is_not_approvable() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000));
    let gate = gate(&dir, &clock);
    for (action, decide) in [
        (
            "deny it",
            Gate::deny as fn(&Gate, RequestId, &Decision) -> _,
        ),
        ("approve it", Gate::approve),
    ] {
        let id = file(&gate, action);
        let decided = decide(&gate, id, &Decision::by("h")).unwrap();
        let refused = gate.check_approvable(&decided).unwrap_err();
        assert!(
            matches!(
                refused,
                Error::WrongState { operation: "approve", status, .. }
                    if status == decided.effective_status()
            ),
            "{refused:?}"
        );
    }
    let pending = gate.status(file(&gate, "leave it")).unwrap();
    assert_eq!(pending.effective_status(), EffectiveStatus::Pending);
    gate.check_approvable(&pending).unwrap();
}

#[test]
fn a_decision_is_checked_before_it_is_taken() {
    let at_limit = Decision::by("h").reason("r".repeat(MAX_REASON_BYTES));
    at_limit.validate().unwrap();
    let over = Decision::by("h").reason("r".repeat(MAX_REASON_BYTES + 1));
    let refused = over.validate().unwrap_err();
    assert!(
        matches!(&refused, Error::InvalidInput { field: "decision reason", problem }
            if problem.contains("the limit is")),
        "{refused:?}"
    );
    assert!(Decision::by(" ").validate().is_err());
}
