//! Allowances in a real browser (issue 41): headless Chromium with its virtual
//! authenticator opens "approve this and allow more like it" on a hostile request, reads the
//! allowance in words (escaped, before any prompt), presses the one button: its passkey
//! signs the allowance, then the request; the list shows the uses left, and a like request
//! filed afterwards is approved as it is filed and spent by the executor.

use approval_gate::{Binding, CanonicalPayload, EffectiveStatus, NewRequest};
use serde_json::{Value, json};

use crate::browser::{WAIT, approver_page, serve_for_alice, sign_in};
use crate::cdp::Browser;

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
