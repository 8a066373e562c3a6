//! The invariants that must hold after any crash or fault, once recovery has run.

use std::path::Path;

use approval_gate::{AuditEvent, Gate, RequestId};

/// What the store says about one request.
#[derive(Debug)]
pub(crate) struct Observed {
    pub(crate) claim: bool,
    pub(crate) consumed_lines: usize,
    pub(crate) started: usize,
    pub(crate) finished: usize,
}

/// Reopens the store (running recovery), checks every invariant for `id`, and returns what
/// it saw. `runs` is how many times the executor's side effect happened.
pub(crate) fn check(dir: &Path, id: RequestId, runs: usize) -> Observed {
    let gate = Gate::open(dir).expect("the store reopens after any crash or fault");
    assert!(
        gate.recover().expect("recovery").is_empty(),
        "recovery is idempotent"
    );
    gate.verify_audit().expect("the audit chain verifies");
    let records = gate.audit_records().unwrap();
    let mine: Vec<_> = records.iter().filter(|r| r.id == id).collect();
    let count = |event| mine.iter().filter(|r| r.event == event).count();
    let claim = dir.join("claims").join(format!("{id}.used")).exists();
    let seen = Observed {
        claim,
        consumed_lines: count(AuditEvent::Consumed),
        started: count(AuditEvent::ExecutionStarted),
        finished: count(AuditEvent::ExecutionFinished),
    };
    assert!(runs <= 1, "double execution: {runs} runs");
    assert!(seen.consumed_lines <= 1, "{seen:?}");
    assert_eq!(
        seen.claim,
        seen.consumed_lines == 1,
        "claim iff consumed is logged: {seen:?}"
    );
    assert!(seen.started <= 1, "{seen:?}");
    assert_eq!(
        seen.started, seen.finished,
        "every start has an outcome: {seen:?}"
    );
    if runs == 1 {
        assert!(
            seen.claim && seen.started == 1,
            "ran without a durable claim and start: {seen:?}"
        );
    }
    // A start implies an approval before it, with no deny, revoke or expiry in between.
    if let Some(start) = mine
        .iter()
        .position(|r| r.event == AuditEvent::ExecutionStarted)
    {
        let before = &mine[..start];
        let approved = before.iter().rposition(|r| r.event == AuditEvent::Approved);
        assert!(approved.is_some(), "started without an approval");
        assert!(
            before[approved.unwrap()..].iter().all(|r| !matches!(
                r.event,
                AuditEvent::Denied | AuditEvent::Revoked | AuditEvent::Expired
            )),
            "started after a deny, revoke or expiry"
        );
    }
    // Terminal states stay terminal: nothing after a denial, revocation or expiry decides again.
    let decisions: Vec<_> = mine
        .iter()
        .filter(|r| {
            matches!(
                r.event,
                AuditEvent::Approved
                    | AuditEvent::Denied
                    | AuditEvent::Revoked
                    | AuditEvent::Expired
            )
        })
        .map(|r| r.event)
        .collect();
    if let Some(first_terminal) = decisions.iter().position(|e| {
        matches!(
            e,
            AuditEvent::Denied | AuditEvent::Revoked | AuditEvent::Expired
        )
    }) {
        assert_eq!(
            first_terminal,
            decisions.len() - 1,
            "a terminal state changed: {decisions:?}"
        );
    }
    seen
}
