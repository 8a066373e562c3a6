//! Sessions against another local process: signing in cannot be locked out from loopback, and
//! signing out ends a session wherever it was copied to.

use approval_gate::{EffectiveStatus, NewRequest};
use approval_gate_tests::webauthn::SoftPasskey;
use serde_json::json;

use crate::server::{Served, csrf, sign_in};

const SESSION: &str = "__Host-approval-gate-session";

fn alice() -> SoftPasskey {
    SoftPasskey::new(1, "alice@example.com", "localhost")
}

/// Any local process can send sign-in requests from loopback (and behind a reverse proxy
/// every user shares its address): many sessionless begins and refused finishes, then the
/// approver signs in all the same.
#[test]
fn a_local_process_cannot_lock_the_approver_out_of_signing_in() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let mut agent = served.client();
    let garbage = json!({
        "credentialId": "eA", "authenticatorData": "eA", "clientDataJSON": "eA", "signature": "eA"
    });
    for _ in 0..30 {
        let begin = agent.post_json("/signin/begin", &json!({}), "");
        assert_ne!(begin.status, 500, "{}", begin.body);
        let finish = agent.post_json("/signin/finish", &garbage, "");
        assert_ne!(finish.status, 200, "{}", finish.body);
    }
    // A passkey the approvers file does not hold, signing correctly: refused, every time.
    let mallory = SoftPasskey::new(9, "alice@example.com", "localhost");
    for _ in 0..5 {
        assert_eq!(sign_in(&mut served.client(), &mallory).status, 403);
    }
    let mut browser = served.client();
    let signed = sign_in(&mut browser, &alice);
    assert_eq!(signed.status, 200, "{}", signed.body);
    assert_eq!(browser.get("/").status, 200);
}

/// A session copied elsewhere (cookie and page key alike) ends when its approver signs out:
/// it neither reads nor decides any more.
#[test]
fn signing_out_ends_a_copied_session_too() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let id = served
        .agent()
        .request_approval(NewRequest::new("pay 5 EUR", "test"))
        .unwrap()
        .request
        .id();
    let mut browser = served.client();
    assert_eq!(sign_in(&mut browser, &alice).status, 200);
    let key = csrf(&mut browser);
    let mut copy = browser.clone();
    assert_eq!(copy.get("/").status, 200, "a copy reads until sign-out");

    let out = browser.post_form("/signout", &format!("csrf={key}"));
    assert_eq!(out.status, 303, "{}", out.body);
    assert!(!browser.cookies.contains_key(SESSION));
    assert!(copy.cookies.contains_key(SESSION));

    assert_eq!(copy.get("/").status, 303, "the copy is signed out");
    assert_eq!(copy.get(&format!("/requests/{id}")).status, 303);
    assert_eq!(copy.get("/fragment/pending").status, 401);
    assert_eq!(copy.get("/events").status, 401);
    let deny = copy.post_form(
        &format!("/requests/{id}/deny"),
        &format!("csrf={key}&reason=no"),
    );
    assert_eq!(deny.status, 401, "{}", deny.body);
    assert_eq!(
        served.agent().status(id).unwrap().effective_status(),
        EffectiveStatus::Pending
    );
    // Signing in again opens a new session.
    assert_eq!(sign_in(&mut browser, &alice).status, 200);
    assert_eq!(browser.get("/").status, 200);
}
