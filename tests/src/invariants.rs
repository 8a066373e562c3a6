//! The invariants that must hold after any crash or fault, once recovery has run: checked
//! by the crash matrix of the conformance suite on every backend, and by the directory
//! store's own fault and power-loss tests.

use std::path::Path;

use approval_gate::{AuditEvent, RequestId};

use crate::backend::{Backend, Directory, Store};

/// What the store says about one request.
#[derive(Debug)]
pub struct Observed {
    /// The backend holds a spent claim on it.
    pub claim: bool,
    /// Its `consumed` lines.
    pub consumed_lines: usize,
    /// Its `execution_started` lines.
    pub started: usize,
    /// Its `execution_finished` lines.
    pub finished: usize,
}

/// [`check`] on the directory store at `dir`.
///
/// # Panics
///
/// As [`check`].
// Called for its assertions as often as for what it saw.
#[allow(clippy::must_use_candidate)]
pub fn check_dir(dir: &Path, id: RequestId, runs: usize) -> Observed {
    check(&Directory, &Directory::at(dir), id, runs)
}

/// Reopens `store` (running recovery), checks every invariant for `id`, and returns what
/// it saw. `runs` is how many times the executor's side effect happened.
///
/// # Panics
///
/// If an invariant does not hold.
pub fn check(backend: &dyn Backend, store: &Store, id: RequestId, runs: usize) -> Observed {
    backend.settle(store);
    let gate = store
        .builder()
        .open()
        .expect("the store reopens after any crash or fault");
    assert!(
        gate.recover().expect("recovery").is_empty(),
        "recovery is idempotent"
    );
    gate.verify_audit().expect("the audit chain verifies");
    let records = gate.audit_records().unwrap();
    let mine: Vec<_> = records.iter().filter(|r| r.id == id).collect();
    let count = |event| mine.iter().filter(|r| r.event == event).count();
    // Read from the backend's storage: a status read through the gate could record an
    // expiry, and the check must change nothing.
    let claim = backend.claimed(store, id);
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
