//! `--json` output parses, carries exactly the store's data, pages visit every request
//! exactly once, and errors are JSON too.

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::process::Output;
use std::time::Duration;

use approval_gate::{
    Binding, CanonicalPayload, Decision, EffectiveStatus, Gate, ListFilter, NewRequest,
    StatusReport,
};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::support::{HOSTILE, Store, assert_clean, assert_success, json, stderr, stdout};

/// The payload of an item exactly as printed, to check it against the canonical bytes.
#[derive(Deserialize)]
struct RawItem<'a> {
    #[serde(borrow)]
    payload: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawPage<'a> {
    #[serde(borrow)]
    items: Vec<RawItem<'a>>,
}

/// Asserts that a printed item is the library's report: the same JSON value field by field,
/// and a payload that canonicalizes to exactly the stored bytes.
fn assert_same(printed: &Value, raw: &RawItem<'_>, report: &StatusReport) {
    let mut expected: Value =
        serde_json::from_str(&serde_json::to_string(report).unwrap()).unwrap();
    let mut printed = printed.clone();
    expected.as_object_mut().unwrap().remove("payload");
    printed.as_object_mut().unwrap().remove("payload");
    assert_eq!(printed, expected);
    assert_eq!(printed["authorizesExecution"], Value::Bool(false));
    let stored = report.request().payload().map(CanonicalPayload::as_bytes);
    let shown = raw
        .payload
        .filter(|raw| raw.get() != "null")
        .map(|raw| CanonicalPayload::from_json_text(raw.get()).unwrap());
    assert_eq!(shown.as_ref().map(CanonicalPayload::as_bytes), stored);
}

/// Seven requests in every state: pending, denied, approved, consumed, revoked.
fn busy_store() -> (Store, Gate) {
    let store = Store::new();
    let gate = store.gate();
    let mut ids = Vec::new();
    for (index, text) in HOSTILE.iter().take(7).enumerate() {
        let payload = serde_json::json!({
            "text": text,
            "amount": 0.1 + f64::from(u8::try_from(index).unwrap()),
            "small": 1e-7,
            "big": 123_456_789,
        });
        let request = store.ask_full(&format!("{index} {text}"), &payload.to_string());
        ids.push(request);
    }
    let by = Decision::by("tester");
    gate.deny(ids[1].id(), &by).unwrap();
    gate.approve(ids[2].id(), &by).unwrap();
    gate.approve(ids[3].id(), &by).unwrap();
    let binding = Binding::new(ids[3].action())
        .operation("smtp.send")
        .payload(ids[3].payload().unwrap().clone());
    let _grant = gate.consume::<Value>(ids[3].id(), &binding).unwrap();
    gate.approve(ids[4].id(), &by).unwrap();
    gate.revoke(ids[4].id(), &by).unwrap();
    (store, gate)
}

#[test]
fn show_json_is_the_status_report() {
    let (store, gate) = busy_store();
    for item in gate.list(ListFilter::All, None, 100).unwrap().items {
        let report = item.report().expect("readable");
        let output = store.run(&["show", report.request().id().as_str(), "--json"]);
        let printed = json(&output);
        let raw: RawItem<'_> = serde_json::from_slice(&output.stdout).unwrap();
        assert_same(&printed, &raw, report);
        assert_eq!(
            printed["effectiveStatus"],
            Value::from(report.effective_status().as_str())
        );
    }
}

/// Every request in the store, all readable.
fn readable(gate: &Gate) -> Vec<StatusReport> {
    let page = gate.list(ListFilter::All, None, 100).unwrap();
    page.items
        .iter()
        .map(|item| item.report().expect("readable").clone())
        .collect()
}

/// Follows `nextAfter` from the first page to the last; every id printed, in order.
fn walk(store: &Store, gate: &Gate, status: &str, limit: usize) -> Vec<String> {
    let reports = readable(gate);
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    let limit = limit.to_string();
    loop {
        let mut args = vec!["list", status, "--json", "--limit", &limit];
        if let Some(after) = &after {
            args.extend(["--after", after]);
        }
        let output = store.run(&args);
        let page = json(&output);
        let raw: RawPage<'_> = serde_json::from_slice(&output.stdout).unwrap();
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= limit.parse().unwrap());
        for (item, raw) in items.iter().zip(&raw.items) {
            let id = item["id"].as_str().unwrap().to_owned();
            let report = reports
                .iter()
                .find(|r| r.request().id().as_str() == id)
                .unwrap();
            assert_same(item, raw, report);
            seen.push(id);
        }
        match &page["nextAfter"] {
            Value::Null => return seen,
            Value::String(next) => after = Some(next.clone()),
            other => panic!("nextAfter is {other}"),
        }
    }
}

#[test]
fn pages_visit_every_request_exactly_once() {
    let (store, gate) = busy_store();
    let everything = readable(&gate);
    for limit in [1, 2, 3, 7, 100] {
        let seen = walk(&store, &gate, "all", limit);
        assert_eq!(seen.len(), everything.len(), "limit {limit}: {seen:?}");
        let unique: HashSet<_> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "limit {limit}: {seen:?}");
        // Pending first.
        let statuses: Vec<_> = seen
            .iter()
            .map(|id| {
                everything
                    .iter()
                    .find(|r| r.request().id().as_str() == id)
                    .unwrap()
                    .effective_status()
            })
            .collect();
        let first_other = statuses
            .iter()
            .position(|s| *s != EffectiveStatus::Pending)
            .unwrap();
        assert!(
            statuses[first_other..]
                .iter()
                .all(|s| *s != EffectiveStatus::Pending)
        );
        assert_eq!(first_other, 3);

        let pending = walk(&store, &gate, "pending", limit);
        assert_eq!(pending.len(), 3);
        assert_eq!(pending.iter().collect::<HashSet<_>>().len(), 3);
    }
    for (status, count) in [
        ("approved", 1),
        ("consumed", 1),
        ("denied", 1),
        ("revoked", 1),
        ("expired", 0),
    ] {
        assert_eq!(walk(&store, &gate, status, 2).len(), count, "{status}");
    }
}

#[test]
fn audit_verify_json_matches_the_library() {
    let (store, gate) = busy_store();
    let summary = gate.verify_audit().unwrap();
    let output = store.run(&["audit", "verify", "--json"]);
    let printed = json(&output);
    assert_eq!(printed["ok"], Value::Bool(true));
    assert_eq!(printed["lines"], Value::from(summary.lines));
    assert_eq!(printed["lastHash"], Value::from(summary.last_hash.as_str()));
    assert_success(&store.run(&["audit", "verify"]));
}

#[test]
fn deny_and_revoke_json_print_the_request_as_show_does() {
    let store = Store::new();
    let hostile = HOSTILE[0];
    let denied = store.ask_full(hostile, r#"{"to":"a@example.com"}"#);
    let output = store.run(&["deny", denied.id().as_str(), "--json", "not", "today"]);
    let printed = json(&output);
    assert_clean("deny --json", &output.stdout);
    assert_eq!(printed["effectiveStatus"], "denied");
    assert_eq!(printed["decisionReason"], "not today");
    assert_eq!(printed["action"], hostile);
    assert_eq!(
        printed,
        json(&store.run(&["show", denied.id().as_str(), "--json"]))
    );

    let approved = store.ask("rotate the keys");
    store
        .gate()
        .approve(approved.id(), &Decision::by("alice"))
        .unwrap();
    let printed = json(&store.run(&["revoke", approved.id().as_str(), "--json"]));
    assert_eq!(printed["effectiveStatus"], "revoked");
    assert_eq!(printed["authorizesExecution"], false);
    assert_eq!(
        printed,
        json(&store.run(&["show", approved.id().as_str(), "--json"]))
    );
}

#[test]
fn archive_json_names_what_it_moves_and_a_dry_run_moves_nothing() {
    let store = Store::new();
    let old = store.gate_ago(Duration::from_secs(10 * 24 * 3600));
    let id = old
        .request_approval(NewRequest::new("old and denied", "r"))
        .unwrap()
        .request
        .id();
    old.deny(id, &Decision::by("alice")).unwrap();
    store.ask("new and pending");
    store.gate().list(ListFilter::All, None, 100).unwrap();

    let before = store.snapshot();
    let args = ["archive", "--older-than-days", "9", "--json"];
    let dry = json(&store.run(&[&args[..], &["--dry-run"]].concat()));
    let expected = serde_json::json!({ "dryRun": true, "archived": [id], "skipped": [] });
    assert_eq!(dry, expected);
    assert!(Store::changed(&before, &store.snapshot()).is_empty());

    let done = json(&store.run(&args));
    let expected = serde_json::json!({ "dryRun": false, "archived": [id], "skipped": [] });
    assert_eq!(done, expected);
    let gone = store.run(&["show", id.as_str(), "--json"]);
    assert_eq!(gone.status.code(), Some(1));
    assert_eq!(error_of(&gone)["code"], "archived");
}

/// The `error` object of a failed `--json` run: the only thing on stdout, with the same
/// message as the line on stderr.
fn error_of(output: &Output) -> Value {
    assert_ne!(output.status.code(), Some(0));
    let printed: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout(output)));
    assert_eq!(printed.as_object().unwrap().len(), 1, "{printed}");
    let error = printed["error"].clone();
    let message = error["message"].as_str().unwrap();
    assert!(stderr(output).contains(message), "{}", stderr(output));
    assert!(error["code"].is_string(), "{error}");
    assert!(error.get("id").is_some(), "{error}");
    error
}

#[test]
fn with_json_errors_are_json_on_stdout_too() {
    let store = Store::new();
    let pending = store.ask("send the invoice").id();
    let unknown = "0123456789ab";

    let output = store.run(&["deny", unknown, "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let expected = serde_json::json!({
        "code": "not_found",
        "message": format!("request {unknown} not found"),
        "id": unknown,
    });
    assert_eq!(error_of(&output), expected);
    assert_eq!(
        stderr(&output),
        format!("approval-gate: refused: request {unknown} not found\n")
    );
    // Without --json, stdout stays empty.
    let plain = store.run(&["deny", unknown]);
    assert_eq!(plain.status.code(), Some(1));
    assert_eq!(stdout(&plain), "");

    let revoke = store.run(&["revoke", pending.as_str(), "--json"]);
    assert_eq!(revoke.status.code(), Some(1));
    let error = error_of(&revoke);
    assert_eq!(error["code"], "wrong_state");
    assert_eq!(error["id"], pending.as_str());

    let reanchor = store.run(&["audit", "reanchor", "--json"]);
    assert_eq!(reanchor.status.code(), Some(1));
    let error = error_of(&reanchor);
    assert_eq!(error["code"], "not_reanchored");
    assert_eq!(error["id"], Value::Null);

    for args in [
        vec!["show", "not-an-id", "--json"],
        vec!["list", "--json", "--limit", "0"],
        vec!["deny", "--json"],
    ] {
        let output = store.run(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let error = error_of(&output);
        assert_eq!(error["code"], "usage", "{args:?}");
        assert_eq!(error["id"], Value::Null);
        assert!(!error["message"].as_str().unwrap().starts_with("error:"));
    }
    // After `--`, `--json` is a word of the reason, not a flag.
    let words = store.run(&["deny", "not-an-id", "--", "--json"]);
    assert_eq!(words.status.code(), Some(2));
    assert_eq!(stdout(&words), "");

    std::fs::set_permissions(&store.path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let unsafe_store = store.run(&["list", "--json"]);
    assert_eq!(unsafe_store.status.code(), Some(2));
    assert_eq!(error_of(&unsafe_store)["code"], "unsafe_state");
}
