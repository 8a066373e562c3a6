//! Each way in that the web page could open, tried with a hand-made request: all refused,
//! nothing approved, and every refused approval in the audit trail.

use approval_gate::{
    AuditEvent, Binding, CanonicalPayload, EffectiveStatus, Gate, NewRequest, RequestId,
};
use approval_gate_tests::webauthn::{SoftPasskey, UP};
use serde_json::json;

use crate::server::{Served, approve, attribute, challenge, csrf, sign_in};

fn alice() -> SoftPasskey {
    SoftPasskey::new(1, "alice@example.com", "localhost")
}

fn bob() -> SoftPasskey {
    SoftPasskey::new(2, "bob@example.com", "localhost")
}

/// The agent files a request to pay `amount`.
pub(crate) fn file(gate: &Gate, amount: u32) -> RequestId {
    gate.request_approval(
        NewRequest::new(format!("pay {amount} EUR to ACME"), "invoice")
            .operation("payments.send")
            .payload(
                CanonicalPayload::from_json_text(&format!(r#"{{"amount":{amount}}}"#)).unwrap(),
            ),
    )
    .unwrap()
    .request
    .id()
}

pub(crate) fn binding(amount: u32) -> Binding {
    Binding::new(format!("pay {amount} EUR to ACME"))
        .operation("payments.send")
        .payload(CanonicalPayload::from_json_text(&format!(r#"{{"amount":{amount}}}"#)).unwrap())
}

/// The refusals the audit log holds for `id`: their `reason` codes.
pub(crate) fn refusals(gate: &Gate, id: RequestId) -> Vec<String> {
    gate.audit_records()
        .unwrap()
        .into_iter()
        .filter(|r| r.id == id && r.event == AuditEvent::DecisionRefused)
        .map(|r| r.details["reason"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// What the executor (holding the approvers file) says when it tries to consume `id`.
fn executor_refusal(served: &Served, id: RequestId) -> approval_gate::Error {
    served
        .executor(1)
        .consume::<serde_json::Value>(id, &binding(5))
        .map(drop)
        .unwrap_err()
}

pub(crate) fn status(gate: &Gate, id: RequestId) -> EffectiveStatus {
    gate.status(id).unwrap().effective_status()
}

#[test]
fn a_passkey_approval_is_a_signature_the_executor_verifies_offline() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let id = file(&served.agent(), 5);
    let mut browser = served.client();
    let signed = sign_in(&mut browser, &alice);
    assert_eq!(signed.status, 200, "{}", signed.body);
    let made = alice.made(&served.origin);
    let approved = approve(&mut browser, &alice, id, &made);
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert!(
        approved.json()["message"]
            .as_str()
            .unwrap()
            .contains("approved (1 of 1)")
    );

    // The executor holds the approvers file: the stored assertion verifies there, once.
    let executor = served.executor(1);
    let _spent = executor
        .consume::<serde_json::Value>(id, &binding(5))
        .unwrap();
    assert!(
        executor
            .consume::<serde_json::Value>(id, &binding(5))
            .is_err()
    );
    let record = served.agent().status(id).unwrap();
    let approval = &record.request().approvals()[0];
    assert_eq!(approval.principal(), "alice@example.com");
    assert!(
        approval.signature().contains("WEBAUTHN"),
        "{}",
        approval.signature()
    );
}

#[test]
fn an_assertion_for_one_request_is_refused_on_another_and_audited() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let agent = served.agent();
    let small = file(&agent, 5);
    let large = file(&agent, 5000);
    let mut browser = served.client();
    sign_in(&mut browser, &alice);
    // Alice looks at the small payment and signs it; the assertion is posted to the large one.
    let signed_small = challenge(&mut browser, small);
    let token = csrf(&mut browser);
    let assertion = alice.assertion(&signed_small, &alice.made(&served.origin));
    let replayed = browser.post_json(&format!("/requests/{large}/approve"), &assertion, &token);
    assert_eq!(replayed.status, 403, "{}", replayed.body);
    assert!(
        replayed
            .body
            .contains("not alice@example.com's decision statement"),
        "{}",
        replayed.body
    );
    assert_eq!(status(&agent, large), EffectiveStatus::Pending);
    assert_eq!(refusals(&agent, large), ["bad_signature"]);
    // The same assertion where it belongs still approves what alice saw, and only that.
    let right = browser.post_json(&format!("/requests/{small}/approve"), &assertion, &token);
    assert_eq!(right.status, 200, "{}", right.body);
    assert_eq!(status(&agent, small), EffectiveStatus::ApprovedUnconsumed);
    // Posted again, it approves nothing more and is refused.
    let again = browser.post_json(&format!("/requests/{small}/approve"), &assertion, &token);
    assert_ne!(again.status, 200, "{}", again.body);
}

#[test]
fn wrong_origin_wrong_rp_id_and_no_user_verification_are_refused_and_audited() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let agent = served.agent();
    let mut browser = served.client();
    sign_in(&mut browser, &alice);
    let cases = [
        ("origin", {
            let mut made = alice.made(&served.origin);
            made.origin = "https://evil.example".into();
            made
        }),
        ("rp id", {
            let mut made = alice.made(&served.origin);
            made.rp_id = "evil.example".into();
            made
        }),
        ("user verification", {
            let mut made = alice.made(&served.origin);
            made.flags = UP;
            made
        }),
        ("type", {
            let mut made = alice.made(&served.origin);
            made.kind = "webauthn.create".into();
            made
        }),
    ];
    // Each its own request: filing the same one again is the same request.
    for (amount, (what, made)) in (7..).zip(cases) {
        let id = file(&agent, amount);
        let refused = approve(&mut browser, &alice, id, &made);
        assert_eq!(refused.status, 403, "{what}: {}", refused.body);
        assert_eq!(refused.json()["ok"], false, "{what}");
        assert_eq!(status(&agent, id), EffectiveStatus::Pending, "{what}");
        assert_eq!(refusals(&agent, id), ["bad_signature"], "{what}");
    }
    // Nor does such an assertion open a session.
    let mut other = served.client();
    let begin = other.post_json("/signin/begin", &json!({}), "");
    let challenge = base64_decode(begin.json()["challenge"].as_str().unwrap());
    let mut made = alice.made(&served.origin);
    made.flags = UP;
    let refused = other.post_json("/signin/finish", &alice.assertion(&challenge, &made), "");
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("not verified"), "{}", refused.body);
    assert_eq!(other.get("/").status, 303);
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .unwrap()
}

#[test]
fn forged_posts_without_a_session_a_token_or_our_origin_change_nothing() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let agent = served.agent();
    let id = file(&agent, 5);
    let deny = format!("/requests/{id}/deny");
    let approve_path = format!("/requests/{id}/approve");
    let assertion = json!({
        "credentialId": "eA", "authenticatorData": "eA", "clientDataJSON": "eA", "signature": "eA"
    });

    // No session at all: the agent, or a page of another site in the approver's browser.
    let mut stranger = served.client();
    assert_eq!(stranger.post_form(&deny, "csrf=x&reason=no").status, 401);
    assert_eq!(
        stranger.post_json(&approve_path, &assertion, "x").status,
        401
    );

    // A session, but no CSRF token, a wrong one, another origin, or no origin.
    let mut browser = served.client();
    sign_in(&mut browser, &alice);
    let token = csrf(&mut browser);
    assert_eq!(browser.post_form(&deny, "reason=no").status, 403);
    assert_eq!(browser.post_form(&deny, "csrf=AAAA&reason=no").status, 403);
    let forms = [
        vec![
            ("Origin", "https://evil.example"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        vec![("Content-Type", "application/x-www-form-urlencoded")],
    ];
    for headers in forms {
        let forged = browser.send(
            "POST",
            &deny,
            &headers,
            Some(format!("csrf={token}").as_bytes()),
        );
        assert_eq!(forged.status, 403, "{headers:?}: {}", forged.body);
    }
    // Another session's token is no token for this one.
    let mut other = served.client();
    sign_in(&mut other, &alice);
    let other_token = csrf(&mut other);
    assert_ne!(other_token, token);
    let crossed = browser.post_form(&deny, &format!("csrf={other_token}&reason=no"));
    assert_eq!(crossed.status, 403, "{}", crossed.body);
    assert_eq!(status(&agent, id), EffectiveStatus::Pending);
    assert!(refusals(&agent, id).is_empty(), "nothing reached the gate");

    // With all three, the denial is taken, and the executor refuses.
    let denied = browser.post_form(&deny, &format!("csrf={token}&reason=not+ours"));
    assert_eq!(denied.status, 303, "{}", denied.body);
    assert_eq!(status(&agent, id), EffectiveStatus::Denied);
    let refused = executor_refusal(&served, id);
    assert!(
        matches!(refused, approval_gate::Error::Denied(_)),
        "{refused:?}"
    );
}

#[test]
fn an_agent_without_a_passkey_cannot_sign_in_or_forge_a_session() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let agent = served.agent();
    let id = file(&agent, 5);
    // A passkey of its own, named as alice: not in the approvers file.
    let mallory = SoftPasskey::new(9, "alice@example.com", "localhost");
    let mut browser = served.client();
    let refused = sign_in(&mut browser, &mallory);
    assert_eq!(refused.status, 403, "{}", refused.body);
    // Said on the server's stderr, where the operator sees it.
    let said = served.wait_for_line("sign-in from 127.0.0.1 refused");
    assert!(said.contains("not one of that approver's"), "{said}");
    assert!(!browser.cookies.contains_key("__Host-approval-gate-session"));
    // A made-up session cookie opens nothing.
    browser.cookies.insert(
        "__Host-approval-gate-session".into(),
        "99999999999999.YWxpY2VAZXhhbXBsZS5jb20.AAAA".into(),
    );
    let page = browser.get(&format!("/requests/{id}"));
    assert_eq!(page.status, 303);
    assert_eq!(
        page.header("location").unwrap(),
        format!("/signin?next=/requests/{id}")
    );
    assert_eq!(browser.get("/events").status, 401);
    assert_eq!(browser.get("/fragment/pending").status, 401);
    // Bob's passkey, trusted for bob, approves nothing as alice's session.
    let bob = bob();
    let mut alice_browser = served.client();
    sign_in(&mut alice_browser, &alice);
    let made = bob.made(&served.origin);
    let theirs = approve(&mut alice_browser, &bob, id, &made);
    assert_eq!(theirs.status, 403, "{}", theirs.body);
    assert_eq!(status(&agent, id), EffectiveStatus::Pending);
}

#[test]
fn a_signin_assertion_works_only_in_the_browser_that_asked_for_it() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let mut browser = served.client();
    let begin = browser.post_json("/signin/begin", &json!({}), "");
    // The ticket lasts five minutes.
    let ticket = begin.header("set-cookie").unwrap();
    assert!(
        ticket.starts_with("__Host-approval-gate-signin="),
        "{ticket}"
    );
    assert!(
        ticket.contains("Max-Age=300; HttpOnly; Secure; SameSite=Strict"),
        "{ticket}"
    );
    let challenge = base64_decode(begin.json()["challenge"].as_str().unwrap());
    let assertion = alice.assertion(&challenge, &alice.made(&served.origin));
    // Captured and replayed from elsewhere: no ticket, no session.
    let mut thief = served.client();
    let stolen = thief.post_json("/signin/finish", &assertion, "");
    assert_eq!(stolen.status, 403, "{}", stolen.body);
    assert!(
        stolen.body.contains("no sign-in was started"),
        "{}",
        stolen.body
    );
    // The thief's own ticket stands for another challenge.
    let _ = thief.post_json("/signin/begin", &json!({}), "");
    let stolen = thief.post_json("/signin/finish", &assertion, "");
    assert_eq!(stolen.status, 403, "{}", stolen.body);
    // The browser that asked signs in, and its cookie is HttpOnly, Secure, SameSite=Strict.
    let signed = browser.post_json("/signin/finish", &assertion, "");
    assert_eq!(signed.status, 200, "{}", signed.body);
    let cookie = signed
        .header("set-cookie")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("__Host-approval-gate-session="))
        .unwrap()
        .to_owned();
    // Eight hours.
    for attribute in [
        "HttpOnly",
        "Secure",
        "SameSite=Strict",
        "Path=/",
        "Max-Age=28800",
    ] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
}

#[test]
fn refused_signins_are_printed_up_to_a_limit_and_never_block_a_passkey() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let mut browser = served.client();
    let garbage = json!({
        "credentialId": "eA", "authenticatorData": "eA", "clientDataJSON": "eA", "signature": "eA"
    });
    let statuses: Vec<u16> = (0..25)
        .map(|_| browser.post_json("/signin/finish", &garbage, "").status)
        .collect();
    assert!(statuses.iter().all(|s| *s == 403), "{statuses:?}");
    let said = served.wait_for_line("are not printed");
    assert!(said.contains("sign-in from 127.0.0.1 refused"), "{said}");
    assert_eq!(sign_in(&mut browser, &alice).status, 200);
}

#[test]
fn every_page_forbids_inline_script_and_frames_and_answers_for_its_own_host_only() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let mut browser = served.client();
    let expected = [
        ("/signin", 200, "text/html"),
        ("/", 303, ""),
        ("/static/app.js", 200, "text/javascript"),
        ("/static/app.css", 200, "text/css"),
        ("/favicon.ico", 200, "image/svg+xml"),
        ("/nowhere", 404, "text/html"),
    ];
    for (path, status, kind) in expected {
        let page = browser.get(path);
        assert_eq!(page.status, status, "{path}");
        let content_type = page.header("content-type").unwrap_or_default();
        assert!(content_type.starts_with(kind), "{path}: {content_type}");
        let csp = page.header("content-security-policy").unwrap_or_default();
        assert!(csp.contains("script-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(
            page.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
    }
    // DNS rebinding: a page of evil.example whose name now points at 127.0.0.1.
    let rebound = browser.send("GET", "/signin", &[], None);
    assert_eq!(rebound.status, 200);
    browser.host = "evil.example:80".into();
    let rebound = browser.send("GET", "/signin", &[], None);
    assert_eq!(rebound.status, 421, "{}", rebound.body);
}

#[test]
fn hostile_text_is_rendered_escaped() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let hostile_action = "pay <script>alert(1)</script> \u{202e}0001\u{202c} to ex\u{430}mple.com";
    let payload = json!({
        "to": "<img src=x onerror=alert(1)>",
        "memo": "\u{200b}hidden\u{2066}",
        // As large as a payload may be (the store takes 64 KiB at most).
        "padding": "x".repeat(approval_gate::limits::MAX_PAYLOAD_BYTES - 200),
    });
    let id = served
        .agent()
        .request_approval(
            NewRequest::new(hostile_action, "\"><script>alert(2)</script>")
                .requested_by("\u{1b}[2Jagent")
                .payload(CanonicalPayload::from_value(&payload).unwrap()),
        )
        .unwrap()
        .request
        .id();
    let mut browser = served.client();
    sign_in(&mut browser, &alice);
    for path in ["/".to_owned(), format!("/requests/{id}")] {
        let page = browser.get(&path);
        assert_eq!(page.status, 200);
        let body = &page.body;
        for raw in [
            "<script>alert",
            "<img",
            "\u{202e}",
            "\u{200b}",
            "\u{1b}",
            "\u{430}",
            "\"><script>alert(2)",
        ] {
            assert!(!body.contains(raw), "{path}: {raw:?} reached the page raw");
        }
        assert!(
            body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{path}"
        );
        assert!(body.contains(r"\u{202e}0001\u{202c}"), "{path}");
        assert!(body.contains(r"ex\u{430}mple.com"), "{path}");
        assert!(body.contains("look-alike"), "{path}");
    }
    let page = browser.get(&format!("/requests/{id}"));
    let padding = "x".repeat(approval_gate::limits::MAX_PAYLOAD_BYTES - 200);
    assert!(page.body.contains(&padding), "the payload is shown whole");
    assert!(
        page.body.contains(r"\u200bhidden\u2066"),
        "the payload's escapes are JSON's"
    );
    assert!(attribute(&page.body, "data-challenge").is_some());
    let audit = browser.get(&format!("/requests/{id}/audit"));
    assert_eq!(audit.status, 200);
    assert!(audit.body.contains("requested"), "{}", audit.body);
    assert!(!audit.body.contains("<script>alert"));
}

#[test]
fn two_approvers_each_sign_and_the_quorum_counts_them_once() {
    let alice = alice();
    let bob = bob();
    let served = Served::start(&[&alice, &bob], 2);
    let agent = served.agent();
    let id = file(&agent, 5);
    let mut a = served.client();
    let mut b = served.client();
    sign_in(&mut a, &alice);
    sign_in(&mut b, &bob);
    let first = approve(&mut a, &alice, id, &alice.made(&served.origin));
    assert_eq!(first.status, 200, "{}", first.body);
    assert!(first.body.contains("1 of 2"), "{}", first.body);
    // Alice again: her page has no button now, and a post made anyway does not count twice.
    let page = a.get(&format!("/requests/{id}"));
    assert!(
        attribute(&page.body, "data-challenge").is_none(),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("Your approval is recorded"),
        "{}",
        page.body
    );
    // The statement as a gate holding the 2-of-2 policy shows it.
    let statement = served
        .executor(2)
        .status(id)
        .unwrap()
        .decision_statement("alice@example.com")
        .unwrap();
    let challenge = approval_gate::passkey::challenge(&statement);
    let token = csrf(&mut a);
    let again = a.post_json(
        &format!("/requests/{id}/approve"),
        &alice.assertion(&challenge, &alice.made(&served.origin)),
        &token,
    );
    assert_eq!(again.status, 409, "{}", again.body);
    assert_eq!(status(&agent, id), EffectiveStatus::Pending);
    let second = approve(&mut b, &bob, id, &bob.made(&served.origin));
    assert_eq!(second.status, 200, "{}", second.body);
    assert!(second.body.contains("approved (2 of 2)"), "{}", second.body);
    let _spent = served
        .executor(2)
        .consume::<serde_json::Value>(id, &binding(5))
        .unwrap();
}

#[test]
fn unknown_requests_and_bad_input_are_answered_as_such_and_change_nothing() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let agent = served.agent();
    let id = file(&agent, 5);
    let mut browser = served.client();
    sign_in(&mut browser, &alice);
    assert_eq!(browser.get("/requests/ffffffffffff").status, 404);
    assert_eq!(browser.get("/requests/ffffffffffff/audit").status, 404);
    assert_eq!(browser.get("/requests/not-an-id").status, 404);
    let token = csrf(&mut browser);
    let long = "x".repeat(approval_gate::limits::MAX_REASON_BYTES + 1);
    let refused = browser.post_form(
        &format!("/requests/{id}/deny"),
        &format!("csrf={token}&reason={long}"),
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    let unknown = browser.post_form(
        "/requests/ffffffffffff/deny",
        &format!("csrf={token}&reason=no"),
    );
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    let garbled = browser.post_json(
        &format!("/requests/{id}/approve"),
        &json!({"credentialId": "!", "authenticatorData": "", "clientDataJSON": "", "signature": ""}),
        &token,
    );
    assert_eq!(garbled.status, 400, "{}", garbled.body);
    assert_eq!(status(&agent, id), EffectiveStatus::Pending);
    assert!(refusals(&agent, id).is_empty(), "bad input is no decision");
}

#[test]
fn an_approval_revoked_on_the_page_is_refused_by_the_executor() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let agent = served.agent();
    let id = file(&agent, 5);
    let mut browser = served.client();
    sign_in(&mut browser, &alice);
    let approved = approve(&mut browser, &alice, id, &alice.made(&served.origin));
    assert_eq!(approved.status, 200, "{}", approved.body);
    let page = browser.get(&format!("/requests/{id}"));
    assert!(page.body.contains("/revoke"), "{}", page.body);
    let token = csrf(&mut browser);
    let revoked = browser.post_form(
        &format!("/requests/{id}/revoke"),
        &format!("csrf={token}&reason=wrong+account"),
    );
    assert_eq!(revoked.status, 303, "{}", revoked.body);
    assert_eq!(status(&agent, id), EffectiveStatus::Revoked);
    let refused = executor_refusal(&served, id);
    assert!(
        matches!(refused, approval_gate::Error::Revoked(_)),
        "{refused:?}"
    );
}

#[test]
fn signing_out_ends_the_session_in_that_browser() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let mut browser = served.client();
    sign_in(&mut browser, &alice);
    let token = csrf(&mut browser);
    // Without the token, sign-out is refused too (no logout CSRF).
    assert_eq!(browser.post_form("/signout", "").status, 403);
    assert_eq!(browser.get("/").status, 200);
    let out = browser.post_form("/signout", &format!("csrf={token}"));
    assert_eq!(out.status, 303, "{}", out.body);
    assert_eq!(out.header("location"), Some("/signin"));
    assert!(!browser.cookies.contains_key("__Host-approval-gate-session"));
    assert_eq!(browser.get("/").status, 303);
}

#[test]
fn a_cloned_authenticator_whose_counter_goes_back_approves_nothing_and_is_audited() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let agent = served.agent();
    let (first, second) = (file(&agent, 5), file(&agent, 6));
    let mut browser = served.client();
    sign_in(&mut browser, &alice);
    let made = alice.made(&served.origin);
    // Alice's own authenticator counts: sign-in 1, this approval 2.
    assert_eq!(approve(&mut browser, &alice, first, &made).status, 200);
    // A clone of the same key, used afterwards, starts again from its copy's count.
    let clone = SoftPasskey::new(1, "alice@example.com", "localhost");
    let refused = approve(&mut browser, &clone, second, &made);
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.body.contains("counter went back (1 after 2)"),
        "{}",
        refused.body
    );
    assert_eq!(status(&agent, second), EffectiveStatus::Pending);
    assert_eq!(refusals(&agent, second), ["bad_signature"]);
    // A copy that stopped counting (it says 0 after 2) is refused as well.
    let zeroed = SoftPasskey::new(1, "alice@example.com", "localhost").without_counter();
    let refused = approve(&mut browser, &zeroed, second, &made);
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("(0 after 2)"), "{}", refused.body);
    // The real one, counting on, still approves.
    assert_eq!(approve(&mut browser, &alice, second, &made).status, 200);
}

#[test]
fn a_passkey_that_does_not_count_is_not_held_to_a_counter() {
    let synced = SoftPasskey::new(5, "alice@example.com", "localhost").without_counter();
    let served = Served::start(&[&synced], 1);
    let agent = served.agent();
    let mut browser = served.client();
    sign_in(&mut browser, &synced);
    let made = synced.made(&served.origin);
    for amount in [5, 6] {
        let id = file(&agent, amount);
        let approved = approve(&mut browser, &synced, id, &made);
        assert_eq!(approved.status, 200, "{}", approved.body);
    }
}

#[test]
fn a_record_the_store_cannot_read_is_an_error_of_the_server_not_a_no() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let id = file(&served.agent(), 5);
    let record = std::path::Path::new(&served.store)
        .join("requests")
        .join(format!("{id}.json"));
    std::fs::write(&record, b"{ not a request").unwrap();
    let mut browser = served.client();
    sign_in(&mut browser, &alice);
    let page = browser.get(&format!("/requests/{id}"));
    assert_eq!(page.status, 500, "{}", page.body);
    assert!(page.body.contains("<h1>Error</h1>"), "{}", page.body);
    assert!(page.body.contains("is unreadable"), "{}", page.body);
    // The list names it, and the doctor.
    let list = browser.get("/");
    assert_eq!(list.status, 200);
    assert!(list.body.contains("approval-gate doctor"), "{}", list.body);
}
