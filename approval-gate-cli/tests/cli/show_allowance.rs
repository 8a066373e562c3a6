//! `show` of a request an allowance approved: which allowance, and what it has left, in
//! words and in `--json`; an allowance that cannot be read is said, and the request still
//! shown.

use std::time::Duration;

use approval_gate::allowance::Allowance;
use approval_gate::{
    Binding, CanonicalPayload, Clock as _, Gate, Grant, NewRequest, RequestId, SystemClock,
};
use approval_gate_tests::suite::allowances::{Team, sign, terms};
use serde_json::Value;

use crate::support::{Store, assert_success, json, stdout};

const PAYLOAD: &str = r#"{"amount":4000,"subject":"invoice","to":"bob@example.com"}"#;

/// A gate over `store` with an allowance of 3 uses and a budget of 10000 over `/amount`
/// for `mail.send`, and a request it approved.
fn allowed(store: &Store) -> (Gate, RequestId, RequestId) {
    let team = Team::new();
    let gate = Gate::builder()
        .dir(&store.path)
        .policy(team.policy())
        .open()
        .unwrap();
    let now = SystemClock.now();
    let mut allowed = terms("mail.send");
    allowed.bounds.not_before = now;
    allowed.bounds.not_after = now.saturating_add(Duration::from_secs(86_400));
    let signed = sign(Allowance::new(allowed, now).unwrap(), 1, &[&team.alice]);
    let allowance = gate.allow(signed).unwrap().allowance.allowance.id();
    let request = gate
        .request_approval(
            NewRequest::new("send", "invoice")
                .operation("mail.send")
                .payload(CanonicalPayload::from_json_text(PAYLOAD).unwrap()),
        )
        .unwrap()
        .request;
    assert_eq!(request.allowance(), Some(allowance));
    (gate, allowance, request.id())
}

#[test]
fn show_says_which_allowance_approved_a_request_and_what_it_has_left_after_its_use() {
    let store = Store::new();
    let (gate, allowance, id) = allowed(&store);

    let shown = store.run(&["show", id.as_str()]);
    assert_success(&shown);
    let text = stdout(&shown);
    assert!(
        text.contains(&format!(
            "approved by     allowance {allowance} (active, mail.send): 0 used, 3 left, budget 0 spent, 10000 left\n"
        )),
        "{text}"
    );
    let body = json(&store.run(&["show", id.as_str(), "--json"]));
    assert_eq!(body["allowance"], allowance.as_str());
    assert_eq!(body["allowanceReport"]["id"], allowance.as_str());
    assert_eq!(body["allowanceReport"]["usesLeft"], 3);
    assert_eq!(body["allowanceReport"]["budgetLeft"], 10000);

    let binding = Binding::new("send")
        .operation("mail.send")
        .payload(CanonicalPayload::from_json_text(PAYLOAD).unwrap());
    let _grant: Grant<Value> = gate.consume(id, &binding).unwrap();

    let text = stdout(&store.run(&["show", id.as_str()]));
    assert!(
        text.contains(&format!(
            "allowance {allowance} (active, mail.send): 1 used, 2 left, budget 4000 spent, 6000 left\n"
        )),
        "one use fewer: {text}"
    );
    let body = json(&store.run(&["show", id.as_str(), "--json"]));
    assert_eq!(body["allowanceReport"]["usesLeft"], 2);
    assert_eq!(body["allowanceReport"]["budgetLeft"], 6000);
}

#[test]
fn show_of_a_request_a_human_approved_has_no_allowance_line() {
    let store = Store::new();
    let (gate, _, _) = allowed(&store);
    let request = gate
        .request_approval(NewRequest::new("deploy", "release").operation("deploy.prod"))
        .unwrap()
        .request;
    assert_eq!(request.allowance(), None);
    let text = stdout(&store.run(&["show", request.id().as_str()]));
    assert!(!text.contains("approved by"), "{text}");
    let body = json(&store.run(&["show", request.id().as_str(), "--json"]));
    assert!(body.get("allowanceReport").is_none(), "{body}");
}

#[test]
fn show_says_when_the_allowance_cannot_be_read_and_still_shows_the_request() {
    let store = Store::new();
    let (_gate, allowance, id) = allowed(&store);
    let file = store
        .path
        .join("allowances")
        .join(format!("{allowance}.json"));

    std::fs::write(&file, "{not json").unwrap();
    let shown = store.run(&["show", id.as_str()]);
    assert_success(&shown);
    let text = stdout(&shown);
    assert!(text.contains(&format!("request         {id}")), "{text}");
    assert!(
        text.contains(&format!(
            "allowance {allowance}, which cannot be read now: "
        )),
        "{text}"
    );
    let body = json(&store.run(&["show", id.as_str(), "--json"]));
    assert_eq!(body["id"], id.as_str());
    assert!(body["allowanceReport"]["error"].is_string(), "{body}");

    std::fs::remove_file(&file).unwrap();
    let shown = store.run(&["show", id.as_str()]);
    assert_success(&shown);
    assert!(
        stdout(&shown).contains(&format!(
            "allowance {allowance}, which is no longer in the store"
        )),
        "{}",
        stdout(&shown)
    );
    let body = json(&store.run(&["show", id.as_str(), "--json"]));
    assert_eq!(body["allowanceReport"]["code"], "not_found");
}
