//! The audit trail as the gate writes it: every event of a lifecycle, in order, numbered and
//! chained so that it verifies. (How a backend detects edits to it is the backend's own test:
//! the directory store's are `tests/it/audit_forgery.rs` and `tests/it/unanchored.rs`.)

use std::time::Duration;

use approval_gate::{AuditEvent, Decision, Error, Gate, Grant, RequestId};

use crate::backend::Backend;
use crate::{Subject, binding};

/// Every event of a lifecycle is logged and the chain verifies.
pub fn every_event_of_a_lifecycle_is_logged_and_the_chain_verifies(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let id = fx.approved("a", None, None);
    let _g = fx
        .gate
        .consume::<()>(id, &binding("a", None, None))
        .unwrap();
    let denied = fx.ask("b", None, None);
    fx.gate
        .deny(denied, &Decision::by("bob").reason("wrong recipient"))
        .unwrap();
    let revoked = fx.approved("c", None, None);
    fx.gate.revoke(revoked, &Decision::by("carol")).unwrap();

    let records = fx.gate.audit_records().unwrap();
    let events: Vec<_> = records.iter().map(|r| r.event).collect();
    assert_eq!(
        events,
        [
            AuditEvent::Requested,
            AuditEvent::Approved,
            AuditEvent::Consumed,
            AuditEvent::Requested,
            AuditEvent::Denied,
            AuditEvent::Requested,
            AuditEvent::Approved,
            AuditEvent::Revoked,
        ]
    );
    assert!(
        records
            .iter()
            .enumerate()
            .all(|(i, r)| r.seq == i as u64 + 1)
    );
    // What was asked is on its `requested` line; a quorum's size only where above one.
    let asked = &records[0].details;
    assert_eq!(asked["action"], "a");
    assert_eq!(
        asked["expiresAt"],
        serde_json::to_value(fx.gate.status(id).unwrap().request().expires_at()).unwrap()
    );
    for field in ["reason", "requestedBy", "operation", "payloadDigest"] {
        assert!(asked.contains_key(field), "{field} in {asked:?}");
    }
    assert!(!asked.contains_key("requiredApprovals"), "{asked:?}");
    assert_eq!(records[4].details["decidedBy"], "bob");
    assert_eq!(records[4].details["reason"], "wrong recipient");
    assert_eq!(fx.gate.verify_audit().unwrap().lines, 8);
}

/// A workload that makes every kind of lifecycle event: each appears, on the right request,
/// every refused consume with the reason code the caller got, numbered from 1 without a gap,
/// and the chain verifies over all of it, also from a gate opened anew.
pub fn a_workload_records_every_lifecycle_event_and_the_chain_verifies(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let ran = fx.approved("run", None, None);
    fx.gate
        .execute_approved(ran, &binding("run", None, None), |_: &Grant<()>| {
            Ok::<_, Error>(())
        })
        .unwrap();
    let denied = fx.ask("deny", None, None);
    fx.gate.deny(denied, &Decision::by("h")).unwrap();
    let revoked = fx.approved("revoke", None, None);
    fx.gate.revoke(revoked, &Decision::by("h")).unwrap();
    let mismatched = fx.approved("mismatch", None, None);
    let pending = fx.ask("left pending", None, None);

    let mut refusals = Vec::new();
    let mut refuse = |id: RequestId, action: &str| {
        let error = fx
            .gate
            .consume::<()>(id, &binding(action, None, None))
            .expect_err("refused");
        refusals.push((id, error.code().as_str()));
    };
    refuse(ran, "run");
    refuse(denied, "deny");
    refuse(revoked, "revoke");
    refuse(mismatched, "something else");
    refuse(pending, "left pending");
    fx.advance(Duration::from_secs(3600) + Duration::from_millis(1));
    refuse(pending, "left pending");
    refuse(mismatched, "mismatch");
    assert_eq!(
        refusals.iter().map(|(_, code)| *code).collect::<Vec<_>>(),
        [
            "already_consumed",
            "denied",
            "revoked",
            "action_mismatch",
            "not_approved",
            "expired",
            "approval_expired",
        ]
    );
    fx.advance(Duration::from_secs(9 * 24 * 3600));
    let mut archived = fx.gate.archive(8).unwrap().archived;
    archived.sort();
    let mut all = vec![ran, denied, revoked, mismatched, pending];
    all.sort();
    assert_eq!(archived, all);

    let requests = Requests {
        ran,
        denied,
        revoked,
        mismatched,
        pending,
    };
    for gate in [fx.gate.clone(), fx.reopen()] {
        check_trail(&gate, &requests, &refusals);
    }
}

/// The requests of the workload above.
struct Requests {
    ran: RequestId,
    denied: RequestId,
    revoked: RequestId,
    mismatched: RequestId,
    pending: RequestId,
}

/// The whole audit trail of the workload above, as `gate` reads it.
fn check_trail(gate: &Gate, requests: &Requests, refusals: &[(RequestId, &str)]) {
    use AuditEvent as E;
    let &Requests {
        ran,
        denied,
        revoked,
        mismatched,
        pending,
    } = requests;
    let records = gate.audit_records().unwrap();
    assert!(
        records
            .iter()
            .enumerate()
            .all(|(i, r)| r.seq == i as u64 + 1),
        "numbered from 1 without a gap"
    );
    assert_eq!(gate.verify_audit().unwrap().lines, records.len() as u64);
    let of = |id: RequestId| -> Vec<AuditEvent> {
        records
            .iter()
            .filter(|r| r.id == id)
            .map(|r| r.event)
            .collect()
    };
    assert_eq!(
        of(ran),
        [
            E::Requested,
            E::Approved,
            E::Consumed,
            E::ExecutionStarted,
            E::ExecutionFinished,
            E::ConsumeReplayed,
            E::Archived,
        ]
    );
    assert_eq!(
        of(denied),
        [E::Requested, E::Denied, E::ConsumeRefused, E::Archived]
    );
    assert_eq!(
        of(revoked),
        [
            E::Requested,
            E::Approved,
            E::Revoked,
            E::ConsumeRefused,
            E::Archived
        ]
    );
    assert_eq!(
        of(mismatched),
        [
            E::Requested,
            E::Approved,
            E::ConsumeRefused,
            E::ConsumeRefused,
            E::Archived
        ]
    );
    assert_eq!(
        of(pending),
        [
            E::Requested,
            E::ConsumeRefused,
            E::Expired,
            E::ConsumeRefused,
            E::Archived
        ]
    );
    let audited: Vec<_> = records
        .iter()
        .filter(|r| matches!(r.event, E::ConsumeRefused | E::ConsumeReplayed))
        .map(|r| (r.id, r.details["reason"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(audited, refusals, "each refusal with its reason code");
}
