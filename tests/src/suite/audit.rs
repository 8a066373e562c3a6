//! The audit trail as the gate writes it: every event of a lifecycle, in order, numbered and
//! chained so that it verifies. (How a backend detects edits to it is the backend's own test:
//! the directory store's are `tests/it/audit_forgery.rs` and `tests/it/unanchored.rs`.)

use std::time::Duration;

use approval_gate::{AuditEvent, Claim, Decision, Error, ErrorCode, Gate, Grant, RequestId};
use serde_json::{Map, json};

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

/// Every refused consume leaves a `consume_refused` line with the code the caller got, also
/// when nothing can be said about the request: its record cannot be read, nobody filed its
/// id, it was archived, or the guarded function's payload is refused before any consume.
pub fn every_refused_consume_leaves_a_line_even_for_an_unreadable_unknown_or_archived_request(
    backend: &dyn Backend,
) {
    let fx = Subject::new(backend);
    let payload = r#"{"n":1}"#;
    let damaged = fx.approved("damaged", Some("pay"), Some(payload));
    // The record now holds a payload its digest does not describe: it cannot be read.
    backend.tamper(&fx.store, damaged, &mut |record| {
        record["payload"] = json!({ "n": 2 });
    });
    let exact = binding("damaged", Some("pay"), Some(payload));
    let refused = fx
        .gate
        .consume::<serde_json::Value>(damaged, &exact)
        .map(drop)
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::Unreadable, "{refused}");
    let mut ran = false;
    let refused = fx
        .gate
        .execute_approved(damaged, &exact, |_: &Grant<serde_json::Value>| {
            ran = true;
            Ok::<_, Error>(())
        })
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::Unreadable, "{refused}");
    assert!(!ran, "nothing runs");
    assert!(!backend.claimed(&fx.store, damaged), "nothing is spent");

    let unknown = RequestId::parse("0123456789ab").unwrap();
    let refused = fx
        .gate
        .consume::<()>(unknown, &binding("anything", None, None))
        .map(drop)
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::NotFound, "{refused}");

    // `#[requires_approval]` refuses a payload that cannot be canonical JSON before it
    // consumes anything: a refusal of a well-formed id all the same.
    let guarded = fx.approved("guarded", Some("pay"), Some(payload));
    let approval = Claim::new(&fx.gate, guarded, "guarded");
    let refused =
        approval_gate::__private::execute(&approval, "pay", &u64::MAX, |_: &Grant<u64>| {
            Ok::<_, Error>(())
        })
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidPayload, "{refused}");
    assert!(!backend.claimed(&fx.store, guarded), "nothing is spent");

    let old = fx.ask("old", None, None);
    fx.gate.deny(old, &Decision::by("h")).unwrap();
    fx.advance(Duration::from_secs(9 * 24 * 3600));
    assert!(fx.gate.archive(8).unwrap().archived.contains(&old));
    let refused = fx
        .gate
        .consume::<()>(old, &binding("old", None, None))
        .map(drop)
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::Archived, "{refused}");

    let refusals: Vec<(RequestId, String)> = fx
        .gate
        .audit_records()
        .unwrap()
        .into_iter()
        .filter(|r| r.event == AuditEvent::ConsumeRefused)
        .map(|r| {
            (
                r.id,
                r.details["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected = [
        (damaged, "unreadable"),
        (damaged, "unreadable"),
        (unknown, "not_found"),
        (guarded, "invalid_payload"),
        (old, "archived"),
    ]
    .map(|(id, reason)| (id, reason.to_owned()));
    assert_eq!(refusals, expected);
    // Refusals may stand anywhere in a request's trail, even for an id nobody filed.
    fx.gate.verify_audit().unwrap();
}

/// A line linked and hashed as the store would, anchored, but saying what the state machine
/// does not allow: `consumed` with no approval before it. Verification names the line and the
/// request, as a problem of its own kind.
pub fn a_well_chained_line_that_says_what_cannot_happen_fails_verification_at_that_line(
    backend: &dyn Backend,
) {
    let fx = Subject::new(backend);
    let filed = fx.ask("never approved", None, None);
    fx.gate.verify_audit().unwrap();
    backend.forge_audit_line(&fx.store, AuditEvent::Consumed, filed, &Map::new());
    let forged = fx.gate.audit_records().expect("the chain itself is whole");
    let at = forged.last().unwrap().seq;
    assert_eq!(forged.last().unwrap().event, AuditEvent::Consumed);
    assert_inconsistent(&fx.gate, at, filed);

    // The same story told by the store itself: a record made approved by someone who can
    // write the store, with no `approved` line, then consumed (no policy: the record is
    // taken at its word). The log records what the executor did; verify sees it makes no
    // sense.
    let fx = Subject::new(backend);
    let id = fx.ask("approved by nobody", None, None);
    backend.tamper(&fx.store, id, &mut |record| {
        record["status"] = json!("approved");
        record["decidedAt"] = json!(crate::T0);
        record["decidedBy"] = json!("agent");
    });
    let _spent = fx
        .gate
        .consume::<()>(id, &binding("approved by nobody", None, None))
        .unwrap();
    let at = fx.gate.audit_records().unwrap().last().unwrap().seq;
    assert_inconsistent(&fx.gate, at, id);
    // From a gate opened anew as well: it is the log that is wrong, not this process.
    assert_inconsistent(&fx.reopen(), at, id);
}

/// `verify_audit` fails with the meaning problem at line `at`, about `id`.
fn assert_inconsistent(gate: &Gate, at: u64, id: RequestId) {
    let error = gate.verify_audit().unwrap_err();
    assert_eq!(error.code().as_str(), "audit_inconsistent", "{error}");
    let message = error.to_string();
    assert!(message.contains(&format!("line {at}")), "{message}");
    assert!(message.contains(id.as_str()), "{message}");
    assert_eq!(error.request_id(), Some(id), "{error:?}");
}

/// Every refused decision of a request leaves a line too: an approval of a request already
/// denied, a revocation of what was never approved. A hostile agent probing what it may
/// decide is seen in the trail, and the trail still verifies. A decision on an id nobody
/// filed had nothing to decide and leaves none.
pub fn every_refused_decision_leaves_a_line(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let denied = fx.ask("denied", None, None);
    fx.gate.deny(denied, &Decision::by("h")).unwrap();
    let refused = fx.gate.approve(denied, &Decision::by("h")).unwrap_err();
    assert_eq!(refused.code(), ErrorCode::WrongState, "{refused}");
    let pending = fx.ask("pending", None, None);
    let refused = fx.gate.revoke(pending, &Decision::by("h")).unwrap_err();
    assert_eq!(refused.code(), ErrorCode::WrongState, "{refused}");
    // A front end's own refusal (a web page that saw a passkey's counter go back).
    fx.gate.record_refused_approval(
        pending,
        &approval_gate::Error::BadSignature {
            id: pending,
            principal: "alice@example.com".into(),
            problem: "the passkey's signature counter went back".into(),
        },
    );
    let unknown = RequestId::parse("0123456789ab").unwrap();
    let refused = fx.gate.deny(unknown, &Decision::by("h")).unwrap_err();
    assert_eq!(refused.code(), ErrorCode::NotFound, "{refused}");

    let refusals: Vec<(RequestId, String, String)> = fx
        .gate
        .audit_records()
        .unwrap()
        .into_iter()
        .filter(|r| serde_json::to_value(r.event).unwrap() == "decision_refused")
        .map(|r| {
            let text = |key: &str| r.details[key].as_str().unwrap_or_default().to_owned();
            (r.id, text("operation"), text("reason"))
        })
        .collect();
    // The unknown id had nothing to decide: no line.
    let expected = [
        (denied, "approve", "wrong_state"),
        (pending, "revoke", "wrong_state"),
        (pending, "approve", "bad_signature"),
    ]
    .map(|(id, operation, reason)| (id, operation.to_owned(), reason.to_owned()));
    assert_eq!(refusals, expected);
    fx.gate.verify_audit().unwrap();
}

/// A chain whose last line was cut refuses every "yes" (a consume spends nothing, filing
/// files nothing) until a human re-anchors it; `audit verify` names the problem, re-anchoring
/// records it, and from there the chain verifies and the gate works again.
pub fn a_cut_chain_refuses_every_yes_until_a_human_reanchors_it(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let id = fx.approved("send the report", None, None);
    let before = fx.gate.verify_audit().expect("a whole chain").lines;
    backend.cut_audit_tail(&fx.store);

    assert!(
        matches!(fx.gate.verify_audit(), Err(Error::AuditBroken { .. })),
        "a cut chain fails verification"
    );
    let refused = fx
        .gate
        .consume::<()>(id, &binding("send the report", None, None))
        .expect_err("nothing is spent on a chain that cannot record it");
    assert_eq!(refused.code(), ErrorCode::AuditBroken, "{refused}");
    assert!(!backend.claimed(&fx.store, id), "the approval is not spent");
    let filed = fx
        .gate
        .request_approval(approval_gate::NewRequest::new("another", "agent"));
    assert!(
        matches!(filed, Err(Error::AuditBroken { .. })),
        "nothing is filed either: {filed:?}"
    );
    assert!(
        matches!(fx.gate.archive(0), Err(Error::AuditBroken { .. })),
        "nor archived"
    );

    let reanchored = fx.gate.reanchor_audit("ops on call").expect("re-anchored");
    assert!(!reanchored.problem.is_empty(), "{reanchored:?}");
    assert_eq!(reanchored.found_lines, before - 1, "{reanchored:?}");
    let records = fx.gate.audit_records().expect("the chain reads");
    let last = records.last().expect("a line");
    assert_eq!(last.event, AuditEvent::Reanchored);
    assert_eq!(last.details["by"], "ops on call");
    assert_eq!(fx.gate.verify_audit().expect("whole again").lines, before);
    let grant = fx
        .gate
        .consume::<()>(id, &binding("send the report", None, None))
        .expect("the approval is still there to spend");
    assert_eq!(grant.id(), id);
    assert!(backend.claimed(&fx.store, id));
}
