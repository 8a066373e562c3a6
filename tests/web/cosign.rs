//! Allowances that need two approvers, on the page (issue 41): "approve this and allow more
//! like it" says before the passkey prompt that the signature only proposes the allowance,
//! and proposes it; the proposal approves nothing, and the list shows it awaiting one more
//! signature, with a "Sign this allowance" action for an approver who has not signed it. The
//! sign page shows the allowance read from the store, in words, and its button's challenge
//! is the statement that approver signs; the post carries only the assertion. A second
//! signature by the proposer, an assertion over another allowance's statement, a post without
//! a session or without the page key, a signature on a revoked allowance: each refused in
//! words, and nothing changes.

use approval_gate::{AllowanceReport, CanonicalPayload, Gate, NewRequest, RequestId, Status};
use approval_gate_tests::http::{Client, Response};
use approval_gate_tests::webauthn::SoftPasskey;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::{Value, json};

use crate::server::{Served, approve, attribute, csrf, sign_in};

const ACTION: &str = "refund order 12";

fn alice() -> SoftPasskey {
    SoftPasskey::new(1, "alice@example.com", "localhost")
}

fn bob() -> SoftPasskey {
    SoftPasskey::new(2, "bob@example.com", "localhost")
}

fn payload(amount: u64) -> CanonicalPayload {
    CanonicalPayload::from_value(&json!({ "to": "<i>carol</i>@example.com", "amount": amount }))
        .unwrap()
}

fn file(gate: &Gate, amount: u64) -> approval_gate::Request {
    gate.request_approval(
        NewRequest::new(ACTION, "due")
            .operation("payments.refund")
            .payload(payload(amount)),
    )
    .unwrap()
    .request
}

/// An attribute's value as the browser reads it: the page's entities undone.
fn unescaped(value: &str) -> String {
    value
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Alice, signed in, proposes on the offer of `id` (keeping only the recipient, `uses`
/// uses): the offer's body and the post's answer.
fn propose(
    browser: &mut Client,
    alice: &SoftPasskey,
    served: &Served,
    id: RequestId,
    uses: u32,
) -> (String, Response) {
    let page = browser.get(&format!(
        "/requests/{id}/allow?uses={uses}&hours=24&c=%2Fto"
    ));
    assert_eq!(page.status, 200, "{}", page.body);
    let allowance: Value = serde_json::from_str(&unescaped(
        &attribute(&page.body, "data-allowance").unwrap(),
    ))
    .unwrap();
    let challenge = B64
        .decode(attribute(&page.body, "data-challenge").unwrap())
        .unwrap();
    let token = csrf(browser);
    let assertion = alice.assertion(&challenge, &alice.made(&served.origin));
    let answer = browser.post_json(
        &format!("/requests/{id}/allow"),
        &json!({ "assertion": assertion, "allowance": allowance }),
        &token,
    );
    (page.body, answer)
}

/// The allowance `aid` as the store holds it.
fn stored(served: &Served, aid: &str) -> AllowanceReport {
    served
        .agent()
        .allowance(RequestId::parse(aid).unwrap())
        .unwrap()
}

/// Two approvers, a quorum of two for everything.
fn two_approvers() -> (SoftPasskey, SoftPasskey, Served) {
    let (alice, bob) = (alice(), bob());
    let served = Served::start(&[&alice, &bob], 2);
    (alice, bob, served)
}

#[test]
fn an_allowance_needing_two_approvers_is_proposed_on_the_page_and_approves_nothing() {
    let (alice, _bob, served) = two_approvers();
    let id = file(&served.agent(), 120).id();
    let mut browser = served.client();
    sign_in(&mut browser, &alice);

    let (offer, proposed) = propose(&mut browser, &alice, &served, id, 2);
    // Said in words before the passkey prompt: a proposal, and the request's own approval
    // one of two.
    let button = offer.find("id=\"allow\"").expect("the passkey button");
    let words = offer
        .find("your signature proposes this allowance")
        .expect("the proposal said in words");
    assert!(words < button, "{offer}");
    assert!(
        offer.contains("payments.refund needs 2 approvers"),
        "{offer}"
    );
    assert!(
        offer.contains("it approves nothing until another approver signs it"),
        "{offer}"
    );
    assert!(
        offer.contains("The request itself needs 2 approvals: yours is one of them"),
        "{offer}"
    );
    assert_eq!(proposed.status, 200, "{}", proposed.body);
    let aid = proposed.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(
        proposed.json()["message"],
        format!(
            "allowance {aid} proposed: it needs 1 more approver's signature; they sign it from \
             the allowances page"
        )
    );
    let report = stored(&served, &aid);
    assert_eq!(report.signatures_missing, 1);
    assert!(!report.is_active());

    // The request's own approval, as the page does next: one of two.
    let approved = approve(&mut browser, &alice, id, &alice.made(&served.origin));
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert!(
        approved.json()["message"]
            .as_str()
            .unwrap()
            .contains("1 of 2"),
        "{}",
        approved.body
    );
    assert_eq!(
        served.agent().status(id).unwrap().request().status(),
        Status::Pending
    );

    // The proposal approves nothing: a like request waits for humans.
    let executor = served.executor(2);
    let waiting = file(&executor, 130);
    assert_eq!(waiting.status(), Status::Pending);
    assert_eq!(waiting.allowance(), None);

    // The list: awaiting one more, signed by Alice; no sign action for her.
    let listed = browser.get("/allowances");
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(
        listed.body.contains("awaiting 1 more signature"),
        "{}",
        listed.body
    );
    assert!(
        listed.body.contains("signed by alice@example.com"),
        "{}",
        listed.body
    );
    assert!(
        !listed.body.contains(&format!("/allowances/{aid}/sign")),
        "{}",
        listed.body
    );
}
