//! Allowances (issue 41): a human signs "this, up to that, until then" once. Granted only
//! with the signatures an approval of every operation it reaches would need, listed with
//! what each has counted, revoked at once; each step audited.

use std::time::Duration;

use approval_gate::allowance::Allowance;
use approval_gate::allowance::{
    AllowanceSignature, Bounds, Budget, Constraint, SignedAllowance, Terms, Test,
};
use approval_gate::{AuditEvent, Decision, Error, ErrorCode, Gate, ManualClock, Policy, RequestId};
use serde_json::json;

use crate::T0;
use crate::backend::{Backend, Store};
use crate::ssh::{Approver, Keys};

/// Two trusted approvers and a stranger; `payments.*` needs two, anything else one.
pub struct Team {
    keys: Keys,
    /// Trusted.
    pub alice: Approver,
    /// Trusted.
    pub bob: Approver,
    /// Not trusted.
    pub mallory: Approver,
}

impl Default for Team {
    fn default() -> Self {
        Self::new()
    }
}

impl Team {
    /// Their keys, made with `ssh-keygen`.
    #[must_use]
    pub fn new() -> Self {
        let keys = Keys::new();
        Self {
            alice: keys.approver("alice@example.com"),
            bob: keys.approver("bob@example.com"),
            mallory: keys.approver("mallory@example.com"),
            keys,
        }
    }

    /// Alice and Bob trusted; `payments.*` needs two, anything else one.
    ///
    /// # Panics
    ///
    /// If the quorum cannot be set.
    #[must_use]
    pub fn policy(&self) -> Policy {
        self.keys
            .policy(&[&self.alice, &self.bob])
            .require("payments.*", 2)
            .and_then(|policy| policy.require("*", 1))
            .expect("a quorum")
    }
}

/// A gate on a fresh store of `backend` holding `policy` (or none), on a manual clock at T0.
///
/// # Panics
///
/// If the store cannot be opened.
pub fn gate(backend: &dyn Backend, policy: Option<Policy>) -> (Store, Gate, ManualClock) {
    let store = backend.fresh();
    let clock = ManualClock::new(T0);
    let builder = store.builder().clock(clock.clone());
    let gate = match policy {
        Some(policy) => builder.policy(policy),
        None => builder,
    }
    .open()
    .expect("open the store");
    (store, gate, clock)
}

/// Terms for `operation`: `to` at example.com, `amount` at most 5000, 3 uses, a budget of
/// 10000 over `amount`, for a day from T0.
///
/// # Panics
///
/// Never: the constraints are well-formed.
#[must_use]
pub fn terms(operation: &str) -> Terms {
    Terms {
        operation: operation.into(),
        constraints: vec![
            Constraint::new("/to", Test::Glob("*@example.com".into())).expect("a glob"),
            Constraint::new("/amount", Test::AtMost(5000)).expect("a maximum"),
        ],
        bounds: Bounds {
            uses: Some(3),
            budget: Some(Budget {
                pointer: "/amount".into(),
                total: 10_000,
            }),
            rate: None,
            not_before: T0,
            not_after: T0.saturating_add(Duration::from_secs(86_400)),
        },
        agent: None,
        reason: "invoices today".into(),
    }
}

/// `terms` made at T0, signed by `by` as `required` approvers.
///
/// # Panics
///
/// If the terms are refused or ssh-keygen fails.
#[must_use]
pub fn signed(terms: Terms, required: u32, by: &[&Approver]) -> SignedAllowance {
    let allowance = Allowance::new(terms, T0).expect("an allowance");
    sign(allowance, required, by)
}

/// `allowance` signed by `by` as `required` approvers.
///
/// # Panics
///
/// If ssh-keygen fails.
#[must_use]
pub fn sign(allowance: Allowance, required: u32, by: &[&Approver]) -> SignedAllowance {
    let signatures = by
        .iter()
        .map(|approver| AllowanceSignature {
            principal: approver.principal.clone(),
            signature: approver.sign(
                &allowance
                    .statement(&approver.principal, required)
                    .expect("a statement"),
            ),
        })
        .collect();
    SignedAllowance {
        allowance,
        required,
        signatures,
    }
}

fn lines(gate: &Gate, event: AuditEvent) -> Vec<RequestId> {
    gate.audit_records()
        .expect("audit records")
        .into_iter()
        .filter(|r| r.event == event)
        .map(|r| r.id)
        .collect()
}

/// Only a human makes one: every allowance that is not signed by as many distinct trusted
/// approvers as the most any operation it reaches needs is refused with its reason, and
/// nothing is kept or recorded.
pub fn an_allowance_is_granted_only_with_the_quorum_of_every_operation_it_reaches(
    backend: &dyn Backend,
) {
    let team = Team::new();
    let (_store, gate, clock) = gate(backend, Some(team.policy()));
    let code = |signed: SignedAllowance| gate.allow(signed).expect_err("refused").code();

    let (_other, without, _) = gate_without_policy(backend);
    let good = signed(terms("mail.send"), 1, &[&team.alice]);
    assert_eq!(
        without.allow(good).expect_err("no policy").code(),
        ErrorCode::NoApprovers
    );

    assert_eq!(
        code(signed(terms("mail.send"), 1, &[])),
        ErrorCode::SignatureRequired
    );
    assert_eq!(
        code(signed(terms("mail.send"), 1, &[&team.mallory])),
        ErrorCode::UntrustedSigner
    );
    // `payments.*` needs two: one signature, or a statement saying one is enough, is short.
    assert_eq!(
        code(signed(terms("payments.*"), 2, &[&team.alice])),
        ErrorCode::InsufficientApprovals
    );
    assert_eq!(
        code(signed(terms("payments.*"), 1, &[&team.alice])),
        ErrorCode::InsufficientApprovals
    );
    // `*` reaches `payments.*` too.
    assert_eq!(
        code(signed(terms("*"), 1, &[&team.alice])),
        ErrorCode::InsufficientApprovals
    );
    // Signed as one of two where the operation needs one: its signer asked for two.
    assert_eq!(
        code(signed(terms("mail.send"), 2, &[&team.alice])),
        ErrorCode::InsufficientApprovals
    );
    // The same approver twice counts once.
    assert_eq!(
        code(signed(terms("payments.*"), 2, &[&team.alice, &team.alice])),
        ErrorCode::InsufficientApprovals
    );
    // A constraint widened after signing.
    let good = signed(terms("mail.send"), 1, &[&team.alice]);
    let mut record = good.to_json();
    record["allowance"]["constraints"][1]["atMost"] = json!(5_000_000);
    let edited = SignedAllowance::from_json(&record).expect("still an allowance");
    assert_eq!(code(edited), ErrorCode::BadSignature);
    // A window that has closed.
    clock.advance(Duration::from_secs(86_401));
    let late = gate
        .allow(signed(terms("mail.send"), 1, &[&team.alice]))
        .expect_err("ended");
    assert!(
        matches!(
            &late,
            Error::InvalidInput {
                field: "allowance",
                ..
            }
        ),
        "{late}"
    );

    assert!(gate.allowances().expect("list").is_empty());
    assert!(lines(&gate, AuditEvent::AllowanceGranted).is_empty());
    gate.verify_audit().expect("the chain verifies");
}

fn gate_without_policy(backend: &dyn Backend) -> (Store, Gate, ManualClock) {
    gate(backend, None)
}

/// A granted allowance is kept as signed, listed with what it has counted, and revoked at
/// once; each recorded once, under the allowance's own id, and the chain verifies.
pub fn a_granted_allowance_is_listed_and_revoked_once_with_its_lines(backend: &dyn Backend) {
    let team = Team::new();
    let (_store, gate, _clock) = gate(backend, Some(team.policy()));
    let wanted = signed(terms("payments.*"), 2, &[&team.alice, &team.bob]);
    let id = wanted.allowance.id();
    let granted = gate.allow(wanted.clone()).expect("granted");
    assert_eq!(granted.allowance, wanted);
    assert!(granted.is_active());

    let listed = gate.allowances().expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].allowance, wanted, "kept exactly as signed");
    assert_eq!(listed[0].usage.uses, 0);
    assert_eq!(listed[0].usage.spent, 0);
    assert!(listed[0].is_active());
    assert_eq!(gate.allowance(id).expect("one"), listed[0]);
    assert_eq!(lines(&gate, AuditEvent::AllowanceGranted), [id]);

    // The same allowance again keeps nothing more.
    let again = gate.allow(wanted).expect_err("its id is taken");
    assert!(matches!(again, Error::InvalidInput { .. }), "{again}");

    let revoked = gate
        .revoke_allowance(id, &Decision::by("alice").reason("done"))
        .expect("revoked");
    assert!(revoked.revoked && !revoked.is_active());
    let twice = gate
        .revoke_allowance(id, &Decision::by("alice"))
        .expect("revoking twice changes nothing");
    assert!(twice.revoked);
    assert_eq!(lines(&gate, AuditEvent::AllowanceRevoked), [id]);
    assert!(gate.allowances().expect("list")[0].revoked);

    let unknown = RequestId::parse("0123456789ab").expect("an id");
    assert_eq!(
        gate.revoke_allowance(unknown, &Decision::by("alice"))
            .expect_err("none")
            .code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        gate.allowance(unknown).expect_err("none").code(),
        ErrorCode::NotFound
    );
    gate.verify_audit().expect("the chain verifies");
}
