//! `allowances` and `revoke-allowance`: what humans have allowed, with what each has counted
//! and has left, in words with anything that could hide escaped; revoking one at once.

use std::time::Duration;

use approval_gate::allowance::{Allowance, Constraint, Test};
use approval_gate::{CanonicalPayload, Clock as _, Gate, Grant, NewRequest, SystemClock};
use approval_gate_tests::suite::allowances::{Team, sign, terms};
use serde_json::Value;

use crate::support::{Store, assert_exit, assert_success, json, stdout};

#[test]
fn allowances_lists_each_with_its_uses_and_budget_left_and_revoke_allowance_takes_it_back() {
    let store = Store::new();
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
    // A listed value an agent's payload put there, hiding a right-to-left override.
    allowed.constraints.push(
        Constraint::new(
            "/subject",
            Test::OneOf(vec![Value::from("invoice \u{202e}fdp.exe")]),
        )
        .unwrap(),
    );
    let signed = sign(Allowance::new(allowed, now).unwrap(), 1, &[&team.alice]);
    let id = gate.allow(signed).unwrap().allowance.allowance.id();
    let payload = r#"{"amount":4000,"subject":"invoice \u202efdp.exe","to":"bob@example.com"}"#;
    let request = gate
        .request_approval(
            NewRequest::new("send", "invoice")
                .operation("mail.send")
                .payload(CanonicalPayload::from_json_text(payload).unwrap()),
        )
        .unwrap()
        .request;
    assert_eq!(request.allowance(), Some(id));
    let binding = approval_gate::Binding::new("send")
        .operation("mail.send")
        .payload(CanonicalPayload::from_json_text(payload).unwrap());
    let _grant: Grant<Value> = gate.consume(request.id(), &binding).unwrap();

    let listed = store.run(&["allowances"]);
    assert_success(&listed);
    let text = stdout(&listed);
    assert!(text.starts_with(&format!("{id} active mail.send: 1 used, 2 left, budget 4000 spent, 6000 left; signed by alice@example.com\n")), "{text}");
    assert!(text.contains("/to matches \"*@example.com\""), "{text}");
    assert!(
        text.contains("\\u{202e}"),
        "the override is shown escaped: {text}"
    );
    assert!(!text.contains('\u{202e}'), "{text}");

    let listed = json(&store.run(&["allowances", "--json"]));
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["usesLeft"], 2);
    assert_eq!(listed[0]["budgetLeft"], 6000);
    assert_eq!(listed[0]["active"], true);

    let revoked = store.run(&["revoke-allowance", id.as_str(), "done", "for", "today"]);
    assert_success(&revoked);
    assert_eq!(
        stdout(&revoked),
        format!("revoked allowance {id} (1 used)\n")
    );
    let listed = json(&store.run(&["allowances", "--json"]));
    assert_eq!(listed[0]["revoked"], true);
    assert_eq!(listed[0]["active"], false);
    let records = gate.audit_records().unwrap();
    let line = records
        .iter()
        .find(|r| r.event == approval_gate::AuditEvent::AllowanceRevoked)
        .expect("its line");
    assert_eq!(line.details["reason"], "done for today");

    let unknown = store.run(&["revoke-allowance", "0123456789ab", "--json"]);
    assert_exit(&unknown, 1, "not found");
    let error: Value = serde_json::from_str(&stdout(&unknown)).unwrap();
    assert_eq!(error["error"]["code"], "not_found");
}

#[test]
fn allowances_says_when_there_are_none() {
    let store = Store::new();
    let listed = store.run(&["allowances"]);
    assert_success(&listed);
    assert_eq!(stdout(&listed), "no allowances\n");
    assert_eq!(
        json(&store.run(&["allowances", "--json"])),
        Value::Array(vec![])
    );
}
