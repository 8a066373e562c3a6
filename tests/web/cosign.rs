//! Allowances that need two approvers, on the page (issue 41): "approve this and allow more
//! like it" says before the passkey prompt that the signature only proposes the allowance,
//! and proposes it; the proposal approves nothing, and the list shows it awaiting one more
//! signature, with a "Sign this allowance" action for an approver who has not signed it. The
//! sign page shows the allowance read from the store, in words, and its button's challenge
//! is the statement that approver signs; the post carries only the assertion. A second
//! signature by the proposer, an assertion over another allowance's statement, a post without
//! a session or without the page key, a signature on a revoked allowance: each refused in
//! words, and nothing changes.

use approval_gate::allowance::SignedAllowance;
use approval_gate::{
    AllowanceReport, Binding, CanonicalPayload, EffectiveStatus, Gate, NewRequest, RequestId,
    Status, passkey,
};
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

/// `passkey`'s assertion over the statement its principal signs to co-sign `signed`.
fn cosignature(passkey: &SoftPasskey, signed: &SignedAllowance, served: &Served) -> Value {
    let statement = signed
        .allowance
        .statement(&passkey.principal, signed.required)
        .unwrap();
    passkey.assertion(
        &passkey::challenge(&statement),
        &passkey.made(&served.origin),
    )
}

/// The sign page of `report`'s allowance for `principal`: every line of the allowance as
/// the store holds it, escaped; who signed it; a challenge over the statement `principal`
/// signs.
fn assert_sign_page(client: &mut Client, report: &AllowanceReport, principal: &str) {
    let signed = &report.allowance;
    let page = client.get(&format!("/allowances/{}/sign", signed.allowance.id()));
    assert_eq!(page.status, 200, "{}", page.body);
    for line in signed.allowance.describe() {
        let escaped = line
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;");
        assert!(page.body.contains(&escaped), "{line}: {}", page.body);
    }
    assert!(!page.body.contains("<i>carol"), "{}", page.body);
    assert!(
        page.body.contains("signed by alice@example.com"),
        "{}",
        page.body
    );
    let statement = signed
        .allowance
        .statement(principal, signed.required)
        .unwrap();
    assert_eq!(
        B64.decode(attribute(&page.body, "data-challenge").unwrap())
            .unwrap(),
        passkey::challenge(&statement)
    );
}

/// `answer` refused with `status`, saying `words`.
fn assert_refused(answer: &Response, status: u16, words: &str) {
    assert_eq!(answer.status, status, "{}", answer.body);
    assert_eq!(answer.json()["ok"], false, "{}", answer.body);
    let message = answer.json()["message"].as_str().unwrap().to_owned();
    assert!(message.contains(words), "{message}");
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

#[test]
fn a_proposed_allowance_is_cosigned_from_the_list_and_then_approves_what_it_allows() {
    let (alice, bob, served) = two_approvers();
    cosigned_from_the_list(&alice, &bob, &served);
}

/// The same on PostgreSQL: the page proposes and co-signs through its login, the executor
/// counts the use in the database.
#[test]
fn a_proposed_allowance_is_cosigned_from_the_list_on_postgresql() {
    let url = approval_gate_tests::pg::create_database();
    let init = url.clone();
    approval_gate_tests::pg::on_own_thread(move || approval_gate::postgres::init(&init))
        .expect("db init");
    let (alice, bob) = (alice(), bob());
    let tmp = tempfile::tempdir().unwrap();
    let approvers = tmp.path().join("approvers");
    let port = approval_gate_tests::http::free_port();
    let origin = format!("http://localhost:{port}");
    let lines = [&alice, &bob].map(|p| p.allowed_signers_line(&origin));
    std::fs::write(&approvers, lines.join("\n") + "\n").unwrap();
    let served = Served::start_on(tmp, url, approvers, "*=2", port, &[]);
    cosigned_from_the_list(&alice, &bob, &served);
}

fn cosigned_from_the_list(alice: &SoftPasskey, bob: &SoftPasskey, served: &Served) {
    let id = file(&served.agent(), 120).id();
    let mut browser = served.client();
    sign_in(&mut browser, alice);
    let (_, proposed) = propose(&mut browser, alice, served, id, 2);
    let aid = proposed.json()["id"].as_str().unwrap().to_owned();
    let report = stored(served, &aid);
    let executor = served.executor(2);
    let waiting = file(&executor, 130);

    // Bob's list offers the action; its page shows the stored allowance in words, escaped,
    // and its challenge is the statement Bob signs.
    let mut bobs = served.client();
    sign_in(&mut bobs, bob);
    let listed = bobs.get("/allowances");
    assert!(
        listed.body.contains(&format!(
            "href=\"/allowances/{aid}/sign\">Sign this allowance"
        )),
        "{}",
        listed.body
    );
    assert_sign_page(&mut bobs, &report, &bob.principal);

    let token = csrf(&mut bobs);
    let signed = bobs.post_json(
        &format!("/allowances/{aid}/sign"),
        &cosignature(bob, &report.allowance, served),
        &token,
    );
    assert_eq!(signed.status, 200, "{}", signed.body);
    assert_eq!(
        signed.json()["message"],
        format!("allowance {aid} signed: it has all its signatures and approves what it allows")
    );
    let complete = stored(served, &aid);
    assert!(complete.is_active());
    assert_eq!(complete.allowance.signatures.len(), 2);
    let listed = bobs.get("/allowances");
    assert!(
        listed
            .body
            .contains("signed by alice@example.com, bob@example.com"),
        "{}",
        listed.body
    );
    assert!(!listed.body.contains("awaiting"), "{}", listed.body);

    // Now it approves a like request, and the executor spends it.
    let covered = file(&executor, 140);
    assert_eq!(covered.status(), Status::Approved);
    assert_eq!(
        covered.allowance().map(|a| a.to_string()),
        Some(aid.clone())
    );
    let binding = Binding::new(ACTION)
        .operation("payments.refund")
        .payload(payload(140));
    let _spent = executor.consume::<Value>(covered.id(), &binding).unwrap();

    // Complete: signing again is refused in words, and changes nothing.
    let again = bobs.post_json(
        &format!("/allowances/{aid}/sign"),
        &cosignature(bob, &report.allowance, served),
        &token,
    );
    assert_refused(&again, 409, "has all the signatures it needs");
    assert_eq!(stored(served, &aid).allowance, complete.allowance);
    let page = bobs.get(&format!("/allowances/{aid}/sign"));
    assert_eq!(page.status, 409, "{}", page.body);
    assert!(
        page.body.contains("has all the signatures it needs"),
        "{}",
        page.body
    );
    assert_eq!(
        served
            .agent()
            .status(waiting.id())
            .unwrap()
            .effective_status(),
        EffectiveStatus::Pending
    );
}

#[test]
fn a_cosignature_by_the_proposer_for_another_allowance_or_off_the_page_signs_nothing() {
    let (alice, bob, served) = two_approvers();
    let id = file(&served.agent(), 120).id();
    let mut browser = served.client();
    sign_in(&mut browser, &alice);
    let (_, first) = propose(&mut browser, &alice, &served, id, 2);
    let aid = first.json()["id"].as_str().unwrap().to_owned();
    let (_, second) = propose(&mut browser, &alice, &served, id, 3);
    let other = second.json()["id"].as_str().unwrap().to_owned();
    let before = stored(&served, &aid);
    let other_before = stored(&served, &other);

    // Alice cannot sign twice: the page refuses in words, and so does a post.
    let page = browser.get(&format!("/allowances/{aid}/sign"));
    assert_eq!(page.status, 409, "{}", page.body);
    assert!(
        page.body.contains("you have signed allowance"),
        "{}",
        page.body
    );
    let token = csrf(&mut browser);
    let twice = browser.post_json(
        &format!("/allowances/{aid}/sign"),
        &cosignature(&alice, &before.allowance, &served),
        &token,
    );
    assert_refused(&twice, 409, "you have signed allowance");

    let mut bobs = served.client();
    sign_in(&mut bobs, &bob);
    let token = csrf(&mut bobs);
    // Bob's assertion over the other allowance's statement, posted for this one.
    let crossed = bobs.post_json(
        &format!("/allowances/{aid}/sign"),
        &cosignature(&bob, &other_before.allowance, &served),
        &token,
    );
    assert_refused(&crossed, 403, "nothing was signed");
    // Right statement, wrong origin in the assertion.
    let statement = before
        .allowance
        .allowance
        .statement(&bob.principal, 2)
        .unwrap();
    let elsewhere = bob.assertion(
        &passkey::challenge(&statement),
        &bob.made("http://localhost:1"),
    );
    let refused = bobs.post_json(&format!("/allowances/{aid}/sign"), &elsewhere, &token);
    assert_eq!(refused.status, 403, "{}", refused.body);
    // Alice's passkey posted in Bob's session.
    let not_his = bobs.post_json(
        &format!("/allowances/{aid}/sign"),
        &alice.assertion(&passkey::challenge(&statement), &alice.made(&served.origin)),
        &token,
    );
    assert_eq!(not_his.status, 403, "{}", not_his.body);
    // The right assertion without the page key, and with no session at all (the agent's
    // side).
    let good = cosignature(&bob, &before.allowance, &served);
    let no_key = bobs.post_json(&format!("/allowances/{aid}/sign"), &good, "");
    assert_eq!(no_key.status, 403, "{}", no_key.body);
    let mut agent = served.client();
    let no_session = agent.post_json(&format!("/allowances/{aid}/sign"), &good, &token);
    assert_eq!(no_session.status, 401, "{}", no_session.body);
    // Anything but the assertion is not taken.
    let mut widened = good.clone();
    widened["allowance"] = json!(other_before.allowance.allowance.to_json());
    let extra = bobs.post_json(&format!("/allowances/{aid}/sign"), &widened, &token);
    assert!(extra.status >= 400, "{}", extra.body);

    // Nothing changed.
    assert_eq!(stored(&served, &aid).allowance, before.allowance);
    assert_eq!(stored(&served, &other).allowance, other_before.allowance);
    assert!(!stored(&served, &aid).is_active());

    // A revoked proposal: the page and a post refuse in words.
    let form = format!("csrf={}&reason=not+needed", csrf(&mut browser));
    let revoked = browser.post_form(&format!("/allowances/{other}/revoke"), &form);
    assert!(
        revoked.status == 303 || revoked.status == 200,
        "{}",
        revoked.body
    );
    let page = bobs.get(&format!("/allowances/{other}/sign"));
    assert_eq!(page.status, 409, "{}", page.body);
    assert!(page.body.contains("was revoked"), "{}", page.body);
    let late = bobs.post_json(
        &format!("/allowances/{other}/sign"),
        &cosignature(&bob, &other_before.allowance, &served),
        &token,
    );
    assert_refused(&late, 409, "was revoked");
    assert_eq!(
        stored(&served, &other).allowance.signatures,
        other_before.allowance.signatures
    );

    // And the right one, at last, signs.
    let signed = bobs.post_json(&format!("/allowances/{aid}/sign"), &good, &token);
    assert_eq!(signed.status, 200, "{}", signed.body);
    assert!(stored(&served, &aid).is_active());
}

/// An approver who approved the request before opening the offer is asked once, for the
/// allowance: approving it again would add nothing.
#[test]
fn an_approver_who_approved_the_request_already_is_asked_only_for_the_allowance() {
    let (alice, _bob, served) = two_approvers();
    let id = file(&served.agent(), 120).id();
    let mut browser = served.client();
    sign_in(&mut browser, &alice);
    let before = browser.get(&format!("/requests/{id}/allow"));
    assert!(
        attribute(&before.body, "data-approve-url").is_some(),
        "{}",
        before.body
    );
    let approved = approve(&mut browser, &alice, id, &alice.made(&served.origin));
    assert_eq!(approved.status, 200, "{}", approved.body);

    let (offer, proposed) = propose(&mut browser, &alice, &served, id, 2);
    assert!(
        offer.contains(&format!(
            "Your passkey is asked once, to propose the allowance above: you have approved \
             request {id} already."
        )),
        "{offer}"
    );
    assert!(attribute(&offer, "data-approve-url").is_none(), "{offer}");
    assert!(
        attribute(&offer, "data-approve-challenge").is_none(),
        "{offer}"
    );
    assert_eq!(proposed.status, 200, "{}", proposed.body);
}

/// Three approvers: the proposal awaits two, Bob's signature leaves it awaiting Carol's, and
/// only hers makes it approve anything.
#[test]
fn an_allowance_needing_three_approvers_awaits_each_signature_in_turn() {
    let (alice, bob) = (alice(), bob());
    let carol = SoftPasskey::new(3, "carol@example.com", "localhost");
    let served = Served::start(&[&alice, &bob, &carol], 3);
    let id = file(&served.agent(), 120).id();
    let mut browser = served.client();
    sign_in(&mut browser, &alice);
    let (offer, proposed) = propose(&mut browser, &alice, &served, id, 2);
    assert!(
        offer.contains("payments.refund needs 3 approvers: your signature proposes this allowance; it approves nothing until 2 other approvers sign it"),
        "{offer}"
    );
    assert_eq!(proposed.status, 200, "{}", proposed.body);
    let aid = proposed.json()["id"].as_str().unwrap().to_owned();
    assert!(
        proposed.json()["message"].as_str().unwrap().ends_with(
            "proposed: it needs 2 more approvers' signatures; they sign it from the allowances page"
        ),
        "{}",
        proposed.body
    );
    let report = stored(&served, &aid);

    let mut bobs = served.client();
    sign_in(&mut bobs, &bob);
    assert!(
        bobs.get("/allowances")
            .body
            .contains("awaiting 2 more signatures")
    );
    let token = csrf(&mut bobs);
    let signed = bobs.post_json(
        &format!("/allowances/{aid}/sign"),
        &cosignature(&bob, &report.allowance, &served),
        &token,
    );
    assert_eq!(signed.status, 200, "{}", signed.body);
    assert_eq!(
        signed.json()["message"],
        format!(
            "allowance {aid} signed: awaiting 1 more signature; the others sign it from the \
             allowances page"
        )
    );
    assert!(!stored(&served, &aid).is_active());
    let listed = bobs.get("/allowances");
    assert!(
        listed.body.contains("awaiting 1 more signature"),
        "{}",
        listed.body
    );
    assert!(
        !listed.body.contains(&format!("/allowances/{aid}/sign")),
        "{}",
        listed.body
    );

    let mut carols = served.client();
    sign_in(&mut carols, &carol);
    assert!(
        carols
            .get("/allowances")
            .body
            .contains(&format!("/allowances/{aid}/sign"))
    );
    let token = csrf(&mut carols);
    let signed = carols.post_json(
        &format!("/allowances/{aid}/sign"),
        &cosignature(&carol, &report.allowance, &served),
        &token,
    );
    assert_eq!(signed.status, 200, "{}", signed.body);
    let complete = stored(&served, &aid);
    assert!(complete.is_active());
    assert_eq!(complete.allowance.signatures.len(), 3);
}
