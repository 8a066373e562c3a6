//! Allowances for operations that need more approvers than one (issue 41): proposed with the
//! first signature, approving nothing until co-signers bring them to their quorum, each
//! co-signature checked as an approval's would be and recorded.

use std::time::Duration;

use approval_gate::allowance::{AllowanceSignature, SignedAllowance};
use approval_gate::{AuditEvent, Decision, Error, ErrorCode, Gate, RequestId, Status};

use super::allowances::{Team, gate, signed, terms};
use crate::backend::Backend;
use crate::binding;
use crate::ssh::Approver;

const OP: &str = "payments.refund";

fn payload(amount: u64) -> String {
    format!(r#"{{"amount":{amount},"to":"bob@example.com"}}"#)
}

/// `approver`'s signature over `signed`'s statement, as they would sign it to co-sign.
fn cosignature(signed: &SignedAllowance, approver: &Approver) -> AllowanceSignature {
    AllowanceSignature {
        principal: approver.principal.clone(),
        signature: approver.sign(
            &signed
                .allowance
                .statement(&approver.principal, signed.required)
                .expect("a statement"),
        ),
    }
}

fn events(gate: &Gate, id: RequestId) -> Vec<AuditEvent> {
    gate.audit_records()
        .expect("audit records")
        .into_iter()
        .filter(|r| r.id == id)
        .map(|r| r.event)
        .collect()
}

/// A refund needs two approvers: Alice's signature alone keeps the allowance as proposed,
/// listed as awaiting one more and approving nothing; Bob's co-signature completes it, and
/// from then on it approves what it covers and counts each use.
pub fn an_allowance_needing_two_approvers_approves_nothing_until_cosigned(backend: &dyn Backend) {
    let team = Team::new();
    let (_store, gate, _clock) = gate(backend, Some(team.policy()));
    let proposed = signed(terms(OP), 2, &[&team.alice]);
    let aid = proposed.allowance.id();
    let report = gate.propose_allowance(proposed.clone()).expect("proposed");
    assert_eq!(report.signatures_missing, 1);
    assert!(!report.is_active());
    let listed = gate.allowance(aid).expect("kept");
    assert_eq!(listed.allowance, proposed, "kept as signed");
    assert_eq!(listed.signatures_missing, 1);
    assert!(!listed.is_active());
    assert_eq!(listed.to_json()["signaturesMissing"], 1);
    assert_eq!(listed.to_json()["active"], false);

    // Nothing is approved by it yet: a covered request waits for a human.
    let waiting = file_refund(&gate, 100);
    assert_eq!(waiting.status(), Status::Pending);
    assert_eq!(waiting.allowance(), None);

    let complete = gate
        .cosign_allowance(aid, &cosignature(&proposed, &team.bob))
        .expect("co-signed");
    assert_eq!(complete.signatures_missing, 0);
    assert!(complete.is_active());
    assert_eq!(complete.allowance.signatures.len(), 2);
    assert_eq!(gate.allowance(aid).expect("kept"), complete);

    let covered = file_refund(&gate, 200);
    assert_eq!(covered.status(), Status::Approved);
    assert_eq!(covered.allowance(), Some(aid));
    let _grant = gate
        .consume::<serde_json::Value>(
            covered.id(),
            &binding("send the invoice", Some(OP), Some(&payload(200))),
        )
        .expect("runs");
    assert_eq!(gate.allowance(aid).expect("kept").usage.uses, 1);

    assert_eq!(
        events(&gate, aid),
        [AuditEvent::AllowanceProposed, AuditEvent::AllowanceSigned]
    );
    let signed_line = gate
        .audit_records()
        .expect("records")
        .into_iter()
        .find(|r| r.event == AuditEvent::AllowanceSigned)
        .expect("its line");
    assert_eq!(
        signed_line.details["principal"],
        team.bob.principal.as_str()
    );
    assert_eq!(signed_line.details["signatures"], 2);
    assert_eq!(signed_line.details["requiredApprovals"], 2);
    gate.verify_audit().expect("the chain verifies");
}

fn file_refund(gate: &Gate, amount: u64) -> approval_gate::Request {
    let new = approval_gate::NewRequest::new("send the invoice", "invoices")
        .operation(OP)
        .payload(approval_gate::CanonicalPayload::from_json_text(&payload(amount)).expect("json"));
    gate.request_approval(new).expect("filed").request
}

/// Every proposal or co-signature that would not count as an approval's signature is refused
/// with its reason, and the allowance stays as it was: signed as part of too small a quorum,
/// one approver twice, an untrusted key, a signature over other terms or another quorum,
/// after revocation, past its window, once complete, or for an allowance that does not exist.
pub fn a_cosignature_that_would_not_count_is_refused_and_changes_nothing(backend: &dyn Backend) {
    let team = Team::new();
    let (_store, gate, clock) = gate(backend, Some(team.policy()));
    let propose = |signed: SignedAllowance| gate.propose_allowance(signed).map(drop);

    // Proposals.
    let code = |r: Result<(), Error>| r.expect_err("refused").code();
    assert_eq!(
        code(propose(signed(terms(OP), 1, &[&team.alice]))),
        ErrorCode::InsufficientApprovals,
        "signed as one of one for an operation that needs two"
    );
    assert_eq!(
        code(propose(signed(terms(OP), 2, &[]))),
        ErrorCode::SignatureRequired
    );
    assert_eq!(
        code(propose(signed(terms(OP), 2, &[&team.mallory]))),
        ErrorCode::UntrustedSigner
    );
    assert!(gate.allowances().expect("list").is_empty());

    let proposed = signed(terms(OP), 2, &[&team.alice]);
    let aid = proposed.allowance.id();
    gate.propose_allowance(proposed.clone()).expect("proposed");
    let cosign = |signature| gate.cosign_allowance(aid, &signature).map(drop);

    // Alice again: one approver counts once.
    assert_eq!(
        code(cosign(cosignature(&proposed, &team.alice))),
        ErrorCode::BadSignature
    );
    // Mallory's signature relabelled as Bob's: the statement names its signer, so it does
    // not verify as Bob's; under Mallory's own name, her key is not trusted.
    let mut as_bob = cosignature(&proposed, &team.mallory);
    as_bob.principal.clone_from(&team.bob.principal);
    assert_eq!(code(cosign(as_bob)), ErrorCode::BadSignature);
    assert_eq!(
        code(cosign(cosignature(&proposed, &team.mallory))),
        ErrorCode::UntrustedSigner
    );
    // Bob's signature over other terms, or as part of another quorum.
    let other = signed(terms("payments.*"), 2, &[&team.alice]);
    assert_eq!(
        code(cosign(cosignature(&other, &team.bob))),
        ErrorCode::BadSignature
    );
    let smaller = SignedAllowance {
        required: 1,
        ..proposed.clone()
    };
    assert_eq!(
        code(cosign(cosignature(&smaller, &team.bob))),
        ErrorCode::BadSignature
    );
    let unknown = RequestId::parse("0123456789ab").expect("an id");
    assert_eq!(
        gate.cosign_allowance(unknown, &cosignature(&proposed, &team.bob))
            .expect_err("none")
            .code(),
        ErrorCode::NotFound
    );
    let kept = gate.allowance(aid).expect("kept");
    assert_eq!(kept.allowance, proposed, "nothing was added");
    assert_eq!(events(&gate, aid), [AuditEvent::AllowanceProposed]);

    // Complete: nothing more to sign.
    gate.cosign_allowance(aid, &cosignature(&proposed, &team.bob))
        .expect("co-signed");
    let again = gate
        .cosign_allowance(aid, &cosignature(&proposed, &team.bob))
        .expect_err("complete");
    assert!(matches!(again, Error::InvalidInput { .. }), "{again}");

    // Revoked, and past its window: nothing is signed.
    let revoked = signed(terms(OP), 2, &[&team.alice]);
    let rid = revoked.allowance.id();
    gate.propose_allowance(revoked.clone()).expect("proposed");
    gate.revoke_allowance(rid, &Decision::by("alice"))
        .expect("revoked");
    let refused = gate
        .cosign_allowance(rid, &cosignature(&revoked, &team.bob))
        .expect_err("revoked");
    assert!(matches!(refused, Error::InvalidInput { .. }), "{refused}");
    let late = signed(terms("payments.*"), 2, &[&team.bob]);
    let lid = late.allowance.id();
    gate.propose_allowance(late.clone()).expect("proposed");
    clock.advance(Duration::from_secs(86_401));
    let ended = gate
        .cosign_allowance(lid, &cosignature(&late, &team.alice))
        .expect_err("ended");
    assert!(matches!(ended, Error::InvalidInput { .. }), "{ended}");
    for id in [rid, lid] {
        assert_eq!(
            gate.allowance(id).expect("kept").allowance.signatures.len(),
            1
        );
        assert!(!events(&gate, id).contains(&AuditEvent::AllowanceSigned));
    }
    gate.verify_audit().expect("the chain verifies");
}

/// Co-signatures arriving at once are counted under the allowance's lock: eight copies of
/// Bob's signature racing add it exactly once, and the others are refused.
pub fn cosignatures_racing_add_each_approver_once(backend: &dyn Backend) {
    let team = Team::new();
    let (_store, gate, _clock) = gate(backend, Some(team.policy()));
    let proposed = signed(terms(OP), 2, &[&team.alice]);
    let aid = proposed.allowance.id();
    gate.propose_allowance(proposed.clone()).expect("proposed");
    let bob = cosignature(&proposed, &team.bob);
    let start = std::sync::Barrier::new(8);
    let added = std::thread::scope(|s| {
        let racers: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    gate.cosign_allowance(aid, &bob)
                })
            })
            .collect();
        racers
            .into_iter()
            .flat_map(|r| r.join().expect("no panic"))
            .count()
    });
    assert_eq!(added, 1);
    let kept = gate.allowance(aid).expect("kept");
    assert_eq!(kept.allowance.signatures.len(), 2);
    assert!(kept.is_active());
    let lines = events(&gate, aid)
        .into_iter()
        .filter(|e| *e == AuditEvent::AllowanceSigned)
        .count();
    assert_eq!(lines, 1);
}
