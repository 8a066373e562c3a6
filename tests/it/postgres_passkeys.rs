//! Passkey approvals on the PostgreSQL store, by login: the signature counter's lock
//! (`hold`, class 1095192405) is an approver's, so an agent login can neither hold up every
//! passkey approval with it nor approve through it; the approver approves.

use approval_gate::{Decision, EffectiveStatus, Error, Gate, Location, NewRequest, Policy};
use approval_gate_tests::backend::{Backend, Postgres, Store};
use approval_gate_tests::pg::url_with;
use approval_gate_tests::webauthn::SoftPasskey;

use crate::postgres::Logins;

const ORIGIN: &str = "https://approvals.example.com";

/// A gate on `store` as `login`, trusting `passkey`.
fn gate_as(store: &Store, login: &str, passkey: &SoftPasskey) -> Gate {
    let policy = Policy::from_allowed_signers(&passkey.allowed_signers_line(ORIGIN))
        .and_then(|policy| policy.require("*", 1))
        .expect("a policy");
    let url = url_with(&Postgres::url(store), login, None);
    Gate::builder()
        .store(Location::parse(&url).expect("a store URL"))
        .policy(policy)
        .open()
        .unwrap_or_else(|e| panic!("open the store as {login}: {e}"))
}

#[test]
fn only_an_approver_login_records_a_passkey_approval() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let alice = SoftPasskey::new(1, "alice@example.com", "approvals.example.com");
    let agent = gate_as(&store, &logins.agent, &alice);
    let approver = gate_as(&store, &logins.approver, &alice);
    let id = agent
        .request_approval(NewRequest::new("deploy", "test"))
        .expect("file")
        .request
        .id();
    let approve = |gate: &Gate| {
        let request = gate.status(id).unwrap().into_request();
        let statement = request.decision_statement(&alice.principal).unwrap();
        let signature = alice.approval(&statement, ORIGIN);
        gate.approve(id, &Decision::by("web").signed(&alice.principal, signature))
    };
    // A valid assertion the agent captured: still not the agent's to record.
    let refused = approve(&agent);
    assert!(
        matches!(refused, Err(Error::NotPermitted { .. })),
        "{refused:?}"
    );
    assert_eq!(
        agent.status(id).unwrap().effective_status(),
        EffectiveStatus::Pending
    );
    let report = approve(&approver).expect("the approver approves");
    assert_eq!(
        report.effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
}
