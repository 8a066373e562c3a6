//! The exact origin a passkey approves on: the one its approvers-file line names. A page on
//! another port of the same host (a look-alike the agent serves) gets the same passkey
//! prompt and a valid signature over the agent's request; the executor must not count it.

use base64ct::{Base64UrlUnpadded, Encoding};
use tempfile::TempDir;

use super::authenticator::Authenticator;
use super::challenge;
use crate::request::{Binding, Decision, NewRequest, Request};
use crate::time::{ManualClock, Timestamp};
use crate::{CanonicalPayload, Error, Gate, Policy};

const ACTION: &str = "send the report to bob@example.com";

/// The line trusting `authenticator` for alice on `origin`, written out by hand (as an
/// operator would) so that it reads the same before and after `allowed_signers_line` knew of
/// origins.
fn line(authenticator: &Authenticator, origin: &str) -> String {
    format!(
        "alice@example.com namespaces=\"approval-gate\" {} passkey:{} origin:{origin}",
        authenticator.passkey().to_openssh(),
        Base64UrlUnpadded::encode_string(authenticator.credential_id())
    )
}

/// A gate on the store in `dir` holding `allowed_signers`.
fn gate(dir: &TempDir, allowed_signers: &str) -> Gate {
    Gate::builder()
        .dir(dir.path().join("gate"))
        .clock(ManualClock::new(
            Timestamp::parse_rfc3339("2026-12-01T10:00:00Z").unwrap(),
        ))
        .policy(Policy::from_allowed_signers(allowed_signers).unwrap())
        .open()
        .unwrap()
}

fn file(gate: &Gate) -> Request {
    let ask = NewRequest::new(ACTION, "weekly")
        .operation("mail.send")
        .payload(CanonicalPayload::from_json_text("{}").unwrap());
    gate.request_approval(ask).unwrap().request
}

/// Alice's assertion over `request`'s statement, made by a page at `origin`, armored.
fn made_on(alice: &Authenticator, request: &Request, origin: &str) -> String {
    made_on_at(alice, request, origin, 7)
}

/// [`made_on`], with the authenticator's signature counter at `count` (it counts up with
/// each signature, and the gate refuses one that does not: a clone).
fn made_on_at(alice: &Authenticator, request: &Request, origin: &str, count: u32) -> String {
    let statement = request.decision_statement("alice@example.com").unwrap();
    let mut ceremony = alice.ceremony(&challenge(&statement));
    ceremony.origin = origin.into();
    ceremony.sign_count = count;
    alice.assert(&ceremony).armor(&alice.passkey()).unwrap()
}

fn consume(gate: &Gate, request: &Request) -> Result<(), Error> {
    let binding = Binding::new(ACTION)
        .operation("mail.send")
        .payload_of(&serde_json::json!({}))
        .unwrap();
    gate.consume::<serde_json::Value>(request.id(), &binding)
        .map(|_| ())
}

#[test]
fn an_approval_made_on_another_port_is_refused_by_the_gate_and_the_executor() {
    let alice = Authenticator::new(1, "localhost");
    let dir = tempfile::tempdir().unwrap();
    let executor = gate(&dir, &line(&alice, "http://localhost:8470"));
    let request = file(&executor);
    // The agent's look-alike page on port 9999 of the same host: same RP ID, same passkey.
    let signature = made_on(&alice, &request, "http://localhost:9999");
    let decision = Decision::by("alice").signed("alice@example.com", &signature);
    match executor.approve(request.id(), &decision) {
        Err(Error::BadSignature { problem, .. }) => {
            assert!(problem.contains("http://localhost:9999"), "{problem}");
            assert!(problem.contains("http://localhost:8470"), "{problem}");
        }
        other => panic!("an approval made on another port was taken: {other:?}"),
    }
    // Written into the store by a gate whose file names that port (as a same-user agent can
    // write the store directly), the executor still does not count it.
    let agent = gate(&dir, &line(&alice, "http://localhost:9999"));
    agent.approve(request.id(), &decision).unwrap();
    assert!(
        matches!(
            consume(&executor, &request),
            Err(Error::BadSignature { .. })
        ),
        "the executor consumed an approval made on another port"
    );
    // The same passkey on the line's own origin approves (its counter one up from the
    // signature the agent stored).
    let request = file(&executor);
    let signature = made_on_at(&alice, &request, "http://localhost:8470", 8);
    let decision = Decision::by("alice").signed("alice@example.com", &signature);
    executor.approve(request.id(), &decision).unwrap();
    consume(&executor, &request).unwrap();
}

#[test]
fn an_https_approval_on_another_port_is_refused() {
    let alice = Authenticator::new(2, "approvals.example.com");
    let dir = tempfile::tempdir().unwrap();
    let executor = gate(&dir, &line(&alice, "https://approvals.example.com"));
    let request = file(&executor);
    for origin in [
        "https://approvals.example.com:8443",
        "https://approvals.example.com:444",
    ] {
        let signature = made_on(&alice, &request, origin);
        let decision = Decision::by("alice").signed("alice@example.com", &signature);
        assert!(
            matches!(
                executor.approve(request.id(), &decision),
                Err(Error::BadSignature { .. })
            ),
            "{origin}"
        );
    }
    let signature = made_on(&alice, &request, "https://approvals.example.com");
    let decision = Decision::by("alice").signed("alice@example.com", &signature);
    executor.approve(request.id(), &decision).unwrap();
}

#[test]
fn a_passkey_line_without_an_origin_is_refused_naming_the_fix() {
    let alice = Authenticator::new(3, "localhost");
    let without = format!(
        "alice@example.com {} passkey:{}",
        alice.passkey().to_openssh(),
        Base64UrlUnpadded::encode_string(alice.credential_id())
    );
    let error = Policy::from_allowed_signers(&without).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("names no origin"), "{text}");
    assert!(text.contains("origin:"), "{text}");
    for bad in [
        "origin:http://localhost:1 origin:http://localhost:2",
        "origin:https://evil.example",
        "origin:http://localhost:8470/",
        "origin:",
    ] {
        let text = format!("{without} {bad}");
        assert!(Policy::from_allowed_signers(&text).is_err(), "{bad}");
    }
    // SSH keys need none.
    let ed = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnZwmXVt3qbW0f6C3lbYqQ7Y1E9ifmZhhiCphQ2YUlz";
    assert!(Policy::from_allowed_signers(&format!("bob@example.com {ed}")).is_ok());
}
