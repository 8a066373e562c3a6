//! An unreadable record spoils only itself in `list`, `show`, `deny` and `archive`, and
//! `doctor` reports it, a broken audit log and stray files.

use approval_gate::Decision;
use serde_json::Value;

use crate::support::{Store, assert_exit, assert_success, json, stdout};

/// A store with a pending victim whose record is garbage, a pending and a denied request.
fn damaged() -> (Store, String, String, String) {
    let store = Store::new();
    let victim = store.ask("victim").id().to_string();
    let other = store.ask("other").id().to_string();
    let denied = store.ask("denied").id();
    store.gate().deny(denied, &Decision::by("h")).unwrap();
    std::fs::write(
        store.path.join("requests").join(format!("{victim}.json")),
        b"\xff garbage",
    )
    .unwrap();
    (store, victim, other, denied.to_string())
}

fn doctor_json(store: &Store) -> (Option<i32>, Value) {
    let output = store.run(&["doctor", "--json"]);
    let report = serde_json::from_slice(&output.stdout).expect("doctor prints json");
    (output.status.code(), report)
}

#[test]
fn list_shows_the_unreadable_record_and_every_other_request() {
    let (store, victim, other, denied) = damaged();
    let output = store
        .command(&["list"])
        .env("COLUMNS", "200")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_success(&output);
    let text = stdout(&output);
    let lines: Vec<_> = text.lines().collect();
    assert!(
        lines[1].starts_with(&format!("{victim}  unreadable ")),
        "{text}"
    );
    assert!(
        lines[1].ends_with("  -             not valid utf-8 (at byte 0)"),
        "{text}"
    );
    assert!(lines[2].starts_with(&other), "{text}");
    assert_eq!(lines.len(), 3, "{text}");

    let all = stdout(&store.run(&["list", "all"]));
    for id in [&victim, &other, &denied] {
        assert!(all.contains(id.as_str()), "{id} in {all}");
    }
    let page = json(&store.run(&["list", "all", "--json"]));
    let items = page["items"].as_array().unwrap();
    let ids: Vec<_> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [victim.as_str(), other.as_str(), denied.as_str()]);
    assert_eq!(items[0]["unreadable"], true);
    assert_eq!(items[0]["authorizesExecution"], false);
    assert_eq!(items[1]["effectiveStatus"], "pending");

    let first = json(&store.run(&["list", "all", "--json", "--limit", "1"]));
    assert_eq!(first["items"][0]["id"], victim.as_str());
    assert_eq!(first["nextAfter"], victim.as_str());
    let second = json(&store.run(&["list", "all", "--json", "--limit", "1", "--after", &victim]));
    assert_eq!(second["items"][0]["id"], other.as_str());
}

#[test]
fn its_id_refuses_and_the_others_work() {
    let (store, victim, other, _) = damaged();
    let before = store.snapshot();
    let message = format!("request {victim} is unreadable");
    assert_exit(&store.run(&["show", &victim]), 2, &message);
    assert_exit(&store.run(&["show", &victim, "--json"]), 2, &message);
    assert_exit(&store.run(&["deny", &victim]), 2, &message);
    assert_exit(&store.run(&["revoke", &victim]), 2, &message);
    // Each refused decision leaves its line; no record changes.
    let refused = (
        approval_gate::AuditEvent::DecisionRefused,
        victim.clone(),
        "unreadable".to_owned(),
    );
    assert_eq!(store.lines_since(&before), [refused.clone(), refused]);
    assert_success(&store.run(&["show", &other]));
    assert_success(&store.run(&["deny", &other]));

    let output = store.run(&["archive", "--older-than-days", "8"]);
    assert_success(&output);
    let text = stdout(&output);
    assert!(
        text.contains(&format!("skipped {victim}: unreadable (not valid utf-8")),
        "{text}"
    );
    assert!(
        text.contains("archived 0 requests, skipped 1 unreadable"),
        "{text}"
    );
}

#[test]
fn doctor_exits_0_on_a_healthy_store_and_1_on_each_problem() {
    let store = Store::new();
    let _ = store.ask("fine");
    let output = store.run(&["doctor"]);
    assert_success(&output);
    assert!(
        stdout(&output).ends_with("healthy\n"),
        "{}",
        stdout(&output)
    );
    let (code, report) = doctor_json(&store);
    assert_eq!(code, Some(0));
    assert_eq!(report["ok"], true);
    assert_eq!(report["audit"]["ok"], true);

    // A stray file.
    std::fs::write(store.path.join("requests").join("notes.txt"), b"").unwrap();
    let output = store.run(&["doctor"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains("stray entry requests/notes.txt"),
        "{}",
        stdout(&output)
    );
    let (code, report) = doctor_json(&store);
    assert_eq!(code, Some(1));
    assert_eq!(report["stray"], serde_json::json!(["requests/notes.txt"]));
    std::fs::remove_file(store.path.join("requests").join("notes.txt")).unwrap();

    // An altered audit line.
    let log = store.path.join("audit.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text.replacen("fine", "FINE", 1)).unwrap();
    let output = store.run(&["doctor"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains("audit log: audit log broken at line 1"),
        "{}",
        stdout(&output)
    );
    let (_, report) = doctor_json(&store);
    assert_eq!(report["audit"]["ok"], false);
    assert_eq!(report["audit"]["code"], "audit_broken");
    std::fs::write(&log, text).unwrap();

    // An unreadable record.
    let (store, victim, _, _) = damaged();
    let output = store.run(&["doctor"]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.contains(&format!("unreadable request {victim}: not valid utf-8")),
        "{text}"
    );
    assert!(text.ends_with("1 problem found\n"), "{text}");
    let (code, report) = doctor_json(&store);
    assert_eq!(code, Some(1));
    assert_eq!(report["ok"], false);
    assert_eq!(report["unreadable"][0]["id"], victim.as_str());
    assert_eq!(report["unreadable"].as_array().unwrap().len(), 1);
}
