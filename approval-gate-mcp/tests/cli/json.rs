//! `--json` output parses, carries exactly the store's data, and pages visit every request
//! exactly once.

use std::collections::HashSet;

use approval_gate::{
    Binding, CanonicalPayload, Decision, EffectiveStatus, Gate, ListFilter, StatusReport,
};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::support::{HOSTILE, Store, assert_success, json};

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
