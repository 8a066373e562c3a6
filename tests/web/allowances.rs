//! Allowances on the page (issue 41), over HTTP: from a pending request, "approve this and
//! allow more like it" shows the allowance in words (payload strings escaped) before any
//! passkey prompt; the assertion over the allowance statement's challenge grants it, and the
//! executor then runs a like request without a human, verifying the passkey signature
//! offline; the list shows the uses left; revoke takes it back. An allowance edited after
//! signing, or posted without the page key, grants nothing. A request an allowance approved
//! says so on its page, with what the allowance has left.

use approval_gate::{CanonicalPayload, EffectiveStatus, Gate, NewRequest, RequestId};
use approval_gate_tests::http::Client;
use approval_gate_tests::webauthn::SoftPasskey;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::{Value, json};

use crate::server::{Served, approve, attribute, csrf, sign_in};

fn alice() -> SoftPasskey {
    SoftPasskey::new(1, "alice@example.com", "localhost")
}

const ACTION: &str = "send invoice 7 to acme";

fn payload() -> CanonicalPayload {
    CanonicalPayload::from_value(&json!({ "to": "<b>acme</b>@example.com", "amount": 120 }))
        .unwrap()
}

fn file(gate: &Gate) -> RequestId {
    gate.request_approval(
        NewRequest::new(ACTION, "due")
            .operation("mail.send")
            .payload(payload()),
    )
    .unwrap()
    .request
    .id()
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

/// The offer page of `id` with `query`: its body, the allowance as offered, and the
/// challenge its button signs.
fn offer(browser: &mut Client, id: RequestId, query: &str) -> (String, Value, Vec<u8>) {
    let page = browser.get(&format!("/requests/{id}/allow{query}"));
    assert_eq!(page.status, 200, "{}", page.body);
    let allowance = unescaped(&attribute(&page.body, "data-allowance").expect("an allow button"));
    let challenge = B64
        .decode(attribute(&page.body, "data-challenge").unwrap())
        .unwrap();
    (
        page.body,
        serde_json::from_str(&allowance).unwrap(),
        challenge,
    )
}

#[test]
fn approve_and_allow_more_like_it_then_the_list_and_revoke() {
    let alice = alice();
    allow_list_and_revoke(&alice, &Served::start(&[&alice], 1));
}

/// The same on PostgreSQL: the page grants through its login, the agent's gate and the
/// executor's read and count in the database.
#[test]
fn approve_and_allow_more_like_it_on_postgresql() {
    let url = approval_gate_tests::pg::create_database();
    let init = url.clone();
    approval_gate_tests::pg::on_own_thread(move || approval_gate::postgres::init(&init))
        .expect("db init");
    let alice = alice();
    let tmp = tempfile::tempdir().unwrap();
    let approvers = tmp.path().join("approvers");
    let port = approval_gate_tests::http::free_port();
    let line = alice.allowed_signers_line(&format!("http://localhost:{port}"));
    std::fs::write(&approvers, line + "\n").unwrap();
    let served = Served::start_on(tmp, url, approvers, "*=1", port, &[]);
    allow_list_and_revoke(&alice, &served);
}

fn allow_list_and_revoke(alice: &SoftPasskey, served: &Served) {
    let agent = served.agent();
    let id = file(&agent);
    let mut browser = served.client();
    sign_in(&mut browser, alice);

    // The request's page links to the offer.
    let shown = browser.get(&format!("/requests/{id}"));
    assert!(
        shown.body.contains(&format!("/requests/{id}/allow")),
        "{}",
        shown.body
    );

    let (body, allowance, challenge) = offer(&mut browser, id, "?uses=2&hours=48&c=%2Fto");
    // In words, before any prompt; the agent's string escaped, never markup.
    assert!(body.contains("operation mail.send"), "{body}");
    assert!(body.contains("/to is"), "{body}");
    assert!(
        body.contains("&lt;b&gt;acme&lt;/b&gt;@example.com"),
        "{body}"
    );
    assert!(!body.contains("<b>acme"), "{body}");
    // /amount was left out: any amount.
    assert!(!body.contains("/amount is"), "{body}");
    assert_eq!(allowance["constraints"].as_array().unwrap().len(), 1);

    let token = csrf(&mut browser);
    let assertion = alice.assertion(&challenge, &alice.made(&served.origin));
    let granted = browser.post_json(
        &format!("/requests/{id}/allow"),
        &json!({ "assertion": assertion, "allowance": allowance }),
        &token,
    );
    assert_eq!(granted.status, 200, "{}", granted.body);
    let aid = granted.json()["id"].as_str().unwrap().to_owned();
    // And the request itself, with its own assertion, as the page does next.
    let approved = approve(&mut browser, alice, id, &alice.made(&served.origin));
    assert_eq!(approved.status, 200, "{}", approved.body);

    // A like request, another amount, filed through a gate holding the approvers file (an
    // allowance approves at filing only where its signatures can be verified): approved as
    // it is filed; the executor verifies the passkey's signature offline and counts the use.
    let executor = served.executor(1);
    let next = executor
        .request_approval(
            NewRequest::new(ACTION, "due")
                .operation("mail.send")
                .payload(
                    CanonicalPayload::from_value(
                        &json!({ "to": "<b>acme</b>@example.com", "amount": 999 }),
                    )
                    .unwrap(),
                ),
        )
        .unwrap()
        .request;
    assert_eq!(next.allowance().map(|a| a.to_string()), Some(aid.clone()));
    let binding = approval_gate::Binding::new(ACTION)
        .operation("mail.send")
        .payload(
            CanonicalPayload::from_value(
                &json!({ "to": "<b>acme</b>@example.com", "amount": 999 }),
            )
            .unwrap(),
        );
    let _spent = executor.consume::<Value>(next.id(), &binding).unwrap();

    // The request's page says which allowance approved it and what it has left.
    assert_approved_by(&mut browser, next.id(), &aid, "active");

    let list = browser.get("/allowances");
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.body.contains(&aid), "{}", list.body);
    assert!(
        list.body
            .contains("<span class=\"uses-left\">1</span> uses left"),
        "{}",
        list.body
    );
    assert!(
        list.body.contains("signed by alice@example.com"),
        "{}",
        list.body
    );

    // Revoke: without the page key, refused; with it, at once.
    let refused = browser.post_form(&format!("/allowances/{aid}/revoke"), "reason=x");
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(served.agent().allowances().unwrap()[0].is_active());
    let form = format!("csrf={token}&reason=enough");
    let revoked = browser.post_form(&format!("/allowances/{aid}/revoke"), &form);
    assert!(
        revoked.status == 303 || revoked.status == 200,
        "{}",
        revoked.body
    );
    assert!(served.agent().allowances().unwrap()[0].revoked);
    assert_approved_by(&mut browser, next.id(), &aid, "revoked");
    let after = file(&executor);
    assert_eq!(
        agent.status(after).unwrap().effective_status(),
        EffectiveStatus::Pending
    );
}

/// The page of `id`, which the allowance `aid` approved, says so: its state, one use
/// counted and one left, and a link to the list.
fn assert_approved_by(browser: &mut Client, id: RequestId, aid: &str, state: &str) {
    let page = browser.get(&format!("/requests/{id}"));
    assert_eq!(page.status, 200, "{}", page.body);
    let line =
        format!("<dt>approved by</dt><dd>allowance {aid} ({state}, mail.send): 1 used, 1 left");
    assert!(page.body.contains(&line), "{}", page.body);
    assert!(
        page.body
            .contains("(<a href=\"/allowances\">allowances</a>)</dd>"),
        "{}",
        page.body
    );
}

#[test]
fn an_allowance_edited_after_signing_or_posted_without_the_page_key_grants_nothing() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let id = file(&served.agent());
    let mut browser = served.client();
    sign_in(&mut browser, &alice);
    let (_, allowance, challenge) = offer(&mut browser, id, "");
    let token = csrf(&mut browser);

    // Signed as offered (3 uses), posted widened to 1000 uses.
    let mut widened = allowance.clone();
    widened["bounds"]["uses"] = json!(1000);
    let assertion = alice.assertion(&challenge, &alice.made(&served.origin));
    let forged = browser.post_json(
        &format!("/requests/{id}/allow"),
        &json!({ "assertion": assertion, "allowance": widened }),
        &token,
    );
    assert!(forged.status >= 400, "{}", forged.body);
    assert_eq!(forged.json()["ok"], false);

    // The right allowance, without the page key.
    let assertion = alice.assertion(&challenge, &alice.made(&served.origin));
    let no_key = browser.post_json(
        &format!("/requests/{id}/allow"),
        &json!({ "assertion": assertion, "allowance": allowance }),
        "",
    );
    assert_eq!(no_key.status, 403, "{}", no_key.body);
    assert!(served.agent().allowances().unwrap().is_empty());

    // A window longer than seven days is not offered.
    let long = browser.get(&format!("/requests/{id}/allow?uses=1&hours=169"));
    assert_eq!(long.status, 400, "{}", long.body);
}
