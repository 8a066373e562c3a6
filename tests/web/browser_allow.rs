//! Allowances in a real browser (issue 41): headless Chromium with its virtual
//! authenticator opens "approve this and allow more like it" on a hostile request, reads the
//! allowance in words (escaped, before any prompt), presses the one button: its passkey
//! signs the allowance, then the request; the list shows the uses left, and a like request
//! filed afterwards is approved as it is filed and spent by the executor. For an operation
//! that needs two approvers, the first browser's press proposes the allowance and a second
//! browser signs it from the list.

use approval_gate::{Binding, CanonicalPayload, EffectiveStatus, NewRequest};
use serde_json::{Value, json};

use approval_gate_tests::http::free_port;

use crate::browser::{WAIT, approver_page, enroll, serve_for_alice, sign_in};
use crate::cdp::Browser;
use crate::server::Served;

const ACTION: &str = "send invoice 8 to acme";

fn payload(amount: u32) -> CanonicalPayload {
    CanonicalPayload::from_value(
        &json!({ "to": "<img src=x onerror=alert(1)>@example.com", "amount": amount }),
    )
    .unwrap()
}

#[test]
fn approve_and_allow_in_a_browser_then_a_like_request_runs_without_asking() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let (page, _key) = approver_page(&browser);
    let served = serve_for_alice(&page);
    sign_in(&page, &served.origin);
    let id = served
        .agent()
        .request_approval(
            NewRequest::new(ACTION, "due")
                .operation("mail.send")
                .payload(payload(40)),
        )
        .unwrap()
        .request
        .id();

    page.navigate(&format!("{}/requests/{id}", served.origin));
    page.expect_navigation(|| page.click("a.allow"));
    // Only the recipient is kept: any amount.
    page.click("input[name=c][value='/amount']");
    page.fill("input[name=uses]", "2");
    page.expect_navigation(|| page.click(".allow-terms button"));
    let words = page.text("#allowance-words");
    assert!(words.contains("operation mail.send"), "{words}");
    assert!(
        words.contains("/to is \"<img src=x onerror=alert(1)>@example.com\""),
        "{words}"
    );
    assert!(!words.contains("/amount"), "{words}");
    assert!(words.contains("at most 2 times"), "{words}");
    let markup = page.eval("document.querySelectorAll('main img').length");
    assert_eq!(markup, json!(0), "the payload's string became markup");

    page.expect_navigation(|| page.click("#allow"));
    page.wait_for("location.pathname === '/allowances'", WAIT);
    let listed = page.text("main");
    // The request itself was approved by the second assertion, not by the allowance.
    assert!(listed.contains("2 uses left"), "{listed}");
    assert!(listed.contains("signed by alice@example.com"), "{listed}");
    assert_eq!(
        served.agent().status(id).unwrap().effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );

    let executor = served.executor(1);
    let next = executor
        .request_approval(
            NewRequest::new(ACTION, "due")
                .operation("mail.send")
                .payload(payload(75)),
        )
        .unwrap()
        .request;
    assert!(next.allowance().is_some(), "a like request waits");
    let binding = Binding::new(ACTION)
        .operation("mail.send")
        .payload(payload(75));
    let _spent = executor.consume::<Value>(next.id(), &binding).unwrap();
    assert_eq!(executor.allowances().unwrap()[0].uses_left(), Some(1));
    page.assert_no_errors();
    browser.close();
}

/// Two approvers in two browsers, a quorum of two: Alice's press proposes the allowance (the
/// offer says so first), the list shows it awaiting Bob, whose "Sign this allowance" shows
/// it in words and signs it with his passkey; then it approves a like request.
#[test]
fn a_proposed_allowance_is_signed_in_a_second_browser() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let (alice, _alice_key) = approver_page(&browser);
    let (bob, _bob_key) = approver_page(&browser);
    let port = free_port();
    let lines = [
        enroll(&alice, "alice@example.com", port),
        enroll(&bob, "bob@example.com", port),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let approvers = tmp.path().join("approvers");
    std::fs::write(&approvers, lines.join("\n") + "\n").unwrap();
    approval_gate::Gate::open(&store).unwrap();
    let store = store.display().to_string();
    let served = Served::start_on(tmp, store, approvers, "*=2", port, &[]);
    let origin = served.origin.clone();
    let id = served
        .agent()
        .request_approval(
            NewRequest::new(ACTION, "due")
                .operation("mail.send")
                .payload(payload(40)),
        )
        .unwrap()
        .request
        .id();

    sign_in(&alice, &origin);
    // Only the recipient is kept: any amount.
    alice.navigate(&format!(
        "{origin}/requests/{id}/allow?uses=2&hours=24&c=%2Fto"
    ));
    let said = alice.text("#allowance-words + p");
    assert!(
        said.contains("your signature proposes this allowance"),
        "{said}"
    );
    alice.expect_navigation(|| alice.click("#allow"));
    alice.wait_for("location.pathname === '/allowances'", WAIT);
    let listed = alice.text("main");
    assert!(listed.contains("awaiting 1 more signature"), "{listed}");
    assert_eq!(
        alice.eval("document.querySelectorAll('a.cosign').length"),
        json!(0)
    );
    assert!(!served.agent().allowances().unwrap()[0].is_active());

    sign_in(&bob, &origin);
    bob.navigate(&format!("{origin}/allowances"));
    bob.expect_navigation(|| bob.click("a.cosign"));
    let words = bob.text("#allowance-words");
    assert!(
        words.contains("/to is \"<img src=x onerror=alert(1)>@example.com\""),
        "{words}"
    );
    assert_eq!(
        bob.eval("document.querySelectorAll('main img').length"),
        json!(0)
    );
    bob.expect_navigation(|| bob.click("#cosign"));
    bob.wait_for("location.pathname === '/allowances'", WAIT);
    let listed = bob.text("main");
    assert!(
        listed.contains("signed by alice@example.com, bob@example.com"),
        "{listed}"
    );
    assert!(!listed.contains("awaiting"), "{listed}");

    let next = served
        .executor(2)
        .request_approval(
            NewRequest::new(ACTION, "due")
                .operation("mail.send")
                .payload(payload(75)),
        )
        .unwrap()
        .request;
    assert!(next.allowance().is_some(), "a like request waits");
    alice.assert_no_errors();
    bob.assert_no_errors();
    browser.close();
}
