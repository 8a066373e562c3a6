//! Requests an allowance covers (issue 41): approved by it when filed, and each consume
//! verifies it again and counts the use, the budget and the rate in the step that spends.

use std::time::Duration;

use approval_gate::{
    AuditEvent, CanonicalPayload, Decision, EffectiveStatus, Error, ErrorCode, Gate, Grant,
    NewRequest, RequestId, Status,
};
use serde_json::Value;

use super::allowances::{Team, gate, signed, terms};
use crate::backend::Backend;
use crate::binding;

const OP: &str = "mail.send";

fn payload(to: &str, amount: u64) -> String {
    format!(r#"{{"amount":{amount},"to":"{to}"}}"#)
}

/// Files a request to send `payload`; the request as filed.
///
/// # Panics
///
/// If the payload is not JSON or the filing fails.
#[must_use]
pub fn file(gate: &Gate, payload: &str) -> approval_gate::Request {
    let new = NewRequest::new("send the invoice", "invoices")
        .operation(OP)
        .payload(CanonicalPayload::from_json_text(payload).expect("a payload"));
    gate.request_approval(new).expect("filed").request
}

/// Consumes `id` bound to exactly what was filed.
///
/// # Errors
///
/// The consume's refusal.
pub fn consume(gate: &Gate, id: RequestId, payload: &str) -> Result<Grant<Value>, Error> {
    gate.consume::<Value>(id, &binding("send the invoice", Some(OP), Some(payload)))
}

/// A covered request is approved by the allowance when filed, says so, and runs once; its
/// `consumed` line names the allowance; one that is not covered waits for a human; the
/// allowance counts every use and its budget until nothing is left.
pub fn a_covered_request_is_approved_by_the_allowance_and_each_use_counted(backend: &dyn Backend) {
    let team = Team::new();
    let (_store, gate, _clock) = gate(backend, Some(team.policy()));
    let granted = gate
        .allow(signed(terms(OP), 1, &[&team.alice]))
        .expect("granted");
    let aid = granted.allowance.allowance.id();

    let first = payload("bob@example.com", 4000);
    let request = file(&gate, &first);
    assert_eq!(request.status(), Status::Approved);
    assert_eq!(request.allowance(), Some(aid));
    let report = gate.status(request.id()).expect("status");
    assert_eq!(
        report.effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
    let json = serde_json::to_value(&report).expect("json");
    assert_eq!(json["allowance"], aid.as_str());

    // Not covered: another domain, an amount over the cap, another operation.
    for other in [
        payload("eve@evil.example", 10),
        payload("bob@example.com", 5001),
    ] {
        let pending = file(&gate, &other);
        assert_eq!(pending.status(), Status::Pending, "{other}");
        assert_eq!(pending.allowance(), None);
    }

    let _grant = consume(&gate, request.id(), &first).expect("runs");
    let replay = consume(&gate, request.id(), &first).expect_err("once");
    assert_eq!(replay.code(), ErrorCode::AlreadyConsumed);
    let consumed: Vec<_> = gate
        .audit_records()
        .expect("records")
        .into_iter()
        .filter(|r| r.id == request.id() && r.event == AuditEvent::Consumed)
        .collect();
    assert_eq!(consumed.len(), 1);
    assert_eq!(consumed[0].details["allowance"], aid.as_str());
    assert_eq!(consumed[0].details["amount"], 4000);
    let now = gate.allowance(aid).expect("it");
    assert_eq!((now.usage.uses, now.usage.spent), (1, 4000));

    // 4000 + 4000 fits the budget of 10000; a third 4000 would not, and waits for a human.
    let second = payload("carol@example.com", 4000);
    let request = file(&gate, &second);
    assert_eq!(request.allowance(), Some(aid));
    let _grant = consume(&gate, request.id(), &second).expect("runs");
    let over = file(&gate, &payload("dan@example.com", 4000));
    assert_eq!(over.status(), Status::Pending);
    // 2000 fits, and is the third and last use.
    let third = payload("dan@example.com", 2000);
    let request = file(&gate, &third);
    assert_eq!(request.allowance(), Some(aid));
    let _grant = consume(&gate, request.id(), &third).expect("runs");
    let now = gate.allowance(aid).expect("it");
    assert_eq!((now.usage.uses, now.usage.spent), (3, 10_000));
    let none_left = file(&gate, &payload("erin@example.com", 1));
    assert_eq!(none_left.status(), Status::Pending);
    gate.verify_audit().expect("the chain verifies");
}

/// What changes between the filing and the consume counts at the consume: the last use
/// spent by another request, a revocation, the window closing. Each refuses with its reason
/// and spends nothing.
pub fn exhaustion_revocation_and_expiry_after_filing_refuse_and_spend_nothing(
    backend: &dyn Backend,
) {
    let team = Team::new();
    let (_store, gate, clock) = gate(backend, Some(team.policy()));
    let mut once = terms(OP);
    once.bounds.uses = Some(1);
    once.bounds.budget = None;
    once.bounds.not_after =
        approval_gate::Timestamp::from_unix_millis(crate::T0.unix_millis() + 20 * 60 * 1000);
    let aid = gate
        .allow(signed(once.clone(), 1, &[&team.alice]))
        .expect("granted")
        .allowance
        .allowance
        .id();
    let (first, second) = (payload("a@example.com", 1), payload("b@example.com", 1));
    let (ra, rb) = (file(&gate, &first), file(&gate, &second));
    assert_eq!((ra.allowance(), rb.allowance()), (Some(aid), Some(aid)));
    let _grant = consume(&gate, ra.id(), &first).expect("the one use");
    let refused = consume(&gate, rb.id(), &second).expect_err("none left");
    assert_eq!(refused.code(), ErrorCode::AllowanceExhausted, "{refused}");
    assert_eq!(
        gate.status(rb.id()).expect("status").effective_status(),
        EffectiveStatus::ApprovedUnconsumed,
        "nothing spent"
    );

    // Revoked after filing.
    let revoked = gate
        .allow(signed(once.clone(), 1, &[&team.alice]))
        .expect("granted")
        .allowance
        .allowance
        .id();
    let third = payload("c@example.com", 1);
    let rc = file(&gate, &third);
    assert_eq!(rc.allowance(), Some(revoked));
    gate.revoke_allowance(revoked, &Decision::by("alice"))
        .expect("revoked");
    let refused = consume(&gate, rc.id(), &third).expect_err("revoked");
    assert_eq!(refused.code(), ErrorCode::Revoked, "{refused}");

    // The window closes after filing: at its end it still counts, a moment later not.
    let closing = gate
        .allow(signed(once, 1, &[&team.alice]))
        .expect("granted")
        .allowance
        .allowance
        .id();
    let (fourth, fifth) = (payload("d@example.com", 1), payload("e@example.com", 1));
    let rd = file(&gate, &fourth);
    assert_eq!(rd.allowance(), Some(closing));
    clock.advance(Duration::from_secs(20 * 60 + 1));
    let refused = consume(&gate, rd.id(), &fourth).expect_err("ended");
    assert_eq!(refused.code(), ErrorCode::ApprovalExpired, "{refused}");
    assert_eq!(file(&gate, &fifth).status(), Status::Pending);
    for id in [rb.id(), rc.id(), rd.id()] {
        assert_ne!(
            gate.status(id).expect("status").effective_status(),
            EffectiveStatus::Consumed
        );
    }
    gate.verify_audit().expect("the chain verifies");
}
