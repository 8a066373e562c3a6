//! `deny`, `revoke`, `archive` and `audit verify` change, or report, exactly what they say.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use approval_gate::{AuditEvent, Binding, Decision, EffectiveStatus, Error, NewRequest, os_user};

use crate::support::{Store, assert_exit, assert_success, stderr, stdout};

fn last_event(store: &Store) -> AuditEvent {
    store.gate().audit_records().unwrap().last().unwrap().event
}

#[test]
fn deny_changes_exactly_one_request() {
    let store = Store::new();
    let target = store.ask("delete the backups");
    let other = store.ask("rotate the logs");
    let before = store.snapshot();
    let output = store.run(&["deny", target.id().as_str(), "too", "risky"]);
    assert_success(&output);
    assert_eq!(
        stdout(&output),
        format!("denied {}: delete the backups\n", target.id())
    );
    let id = target.id();
    assert_eq!(
        Store::changed(&before, &store.snapshot()),
        [
            "audit.head".to_owned(),
            "audit.jsonl".to_owned(),
            "journal.wal".to_owned(),
            "queue".to_owned(),
            format!("requests/{id}.json"),
        ]
    );
    let report = store.gate().status(id).unwrap();
    assert_eq!(report.effective_status(), EffectiveStatus::Denied);
    assert_eq!(report.request().decided_by(), Some(os_user().as_str()));
    assert_eq!(report.request().decision_reason(), Some("too risky"));
    assert_eq!(last_event(&store), AuditEvent::Denied);
    let untouched = store.gate().status(other.id()).unwrap();
    assert_eq!(untouched.effective_status(), EffectiveStatus::Pending);

    // Deciding again, or deciding what does not exist, is refused with exit code 1.
    let before = store.snapshot();
    let again = store.run(&["deny", id.as_str()]);
    assert_exit(
        &again,
        1,
        &format!("refused: cannot deny request {id}: it is denied"),
    );
    let unknown = store.run(&["deny", "0123456789ab"]);
    assert_exit(&unknown, 1, "refused: request 0123456789ab not found");
    let revoke_denied = store.run(&["revoke", id.as_str()]);
    assert_exit(&revoke_denied, 1, "cannot revoke");
    // Each refusal of a request leaves its line and changes no record; the unknown id had
    // nothing to decide and leaves none.
    let refused = (
        AuditEvent::DecisionRefused,
        id.to_string(),
        "wrong_state".to_owned(),
    );
    assert_eq!(store.lines_since(&before), [refused.clone(), refused]);
}

#[test]
fn revoke_withdraws_an_unconsumed_approval() {
    let store = Store::new();
    let request = store.ask("publish the post");
    let id = request.id();
    let gate = store.gate();
    gate.approve(id, &Decision::by("alice")).unwrap();
    let pending = store.ask("another");
    let before = store.snapshot();
    let output = store.run(&["revoke", id.as_str(), "changed my mind"]);
    assert_success(&output);
    assert!(stdout(&output).starts_with(&format!("revoked {id}: ")));
    assert_eq!(
        Store::changed(&before, &store.snapshot()),
        [
            "audit.head".to_owned(),
            "audit.jsonl".to_owned(),
            "journal.wal".to_owned(),
            format!("requests/{id}.json"),
        ]
    );
    let report = gate.status(id).unwrap();
    assert_eq!(report.effective_status(), EffectiveStatus::Revoked);
    assert_eq!(report.request().decision_reason(), Some("changed my mind"));
    assert_eq!(last_event(&store), AuditEvent::Revoked);
    let consumed = gate.consume::<()>(id, &Binding::new("publish the post"));
    assert!(matches!(consumed, Err(Error::Revoked(_))));

    // A pending request has no approval to revoke; an unknown id is not found.
    let before = store.snapshot();
    assert_exit(
        &store.run(&["revoke", pending.id().as_str()]),
        1,
        "it is pending",
    );
    assert_exit(&store.run(&["revoke", "ffffffffffff"]), 1, "not found");
    assert_eq!(
        store.lines_since(&before),
        [(
            AuditEvent::DecisionRefused,
            pending.id().to_string(),
            "wrong_state".to_owned()
        )]
    );
}

#[test]
fn archive_moves_only_old_finished_requests() {
    let store = Store::new();
    let old = store.gate_ago(Duration::from_secs(10 * 24 * 3600));
    let denied = old
        .request_approval(NewRequest::new("old denied", "r"))
        .unwrap()
        .request
        .id();
    old.deny(denied, &Decision::by("alice")).unwrap();
    let consumed = old
        .request_approval(NewRequest::new("old consumed", "r"))
        .unwrap()
        .request
        .id();
    old.approve(consumed, &Decision::by("alice")).unwrap();
    let _grant = old
        .consume::<()>(consumed, &Binding::new("old consumed"))
        .unwrap();
    let expired = old
        .request_approval(NewRequest::new("old never decided", "r"))
        .unwrap()
        .request
        .id();
    let fresh = store.ask("new and pending").id();
    // Let the store record what has expired, so the dry run has nothing left to record.
    store
        .gate()
        .list(approval_gate::ListFilter::All, None, 100)
        .unwrap();
    let mut old_ids = [denied, consumed, expired].map(|id| id.to_string());
    old_ids.sort();

    let before = store.snapshot();
    let dry = store.run(&["archive", "--older-than-days", "9", "--dry-run"]);
    assert_success(&dry);
    let listed = stdout(&dry);
    for id in &old_ids {
        assert!(
            listed.contains(&format!("would archive {id}\n")),
            "{listed}"
        );
    }
    assert!(!listed.contains(fresh.as_str()));
    assert!(listed.ends_with("would archive 3 requests (dry run: nothing changed)\n"));
    assert_eq!(
        Store::changed(&before, &store.snapshot()),
        Vec::<String>::new()
    );

    let too_recent = store.run(&["archive", "--older-than-days", "11"]);
    assert_success(&too_recent);
    assert_eq!(stdout(&too_recent), "archived 0 requests\n");
    assert_eq!(
        Store::changed(&before, &store.snapshot()),
        Vec::<String>::new()
    );

    let real = store.run(&["archive", "--older-than-days", "1"]);
    assert_success(&real);
    assert!(String::from_utf8_lossy(&real.stderr).contains("at least 8 days ago"));
    assert!(stdout(&real).ends_with("archived 3 requests\n"));
    let after = store.snapshot();
    let mut changed = Store::changed(&before, &after);
    changed.retain(|path| !path.starts_with("audit.") && path != "journal.wal" && path != "queue");
    // Only the old requests' files moved or went away (the library may keep more per-claim
    // bookkeeping than these; all of it must belong to an archived request).
    for path in &changed {
        assert!(
            old_ids.iter().any(|id| path.contains(id.as_str())),
            "{path} changed"
        );
    }
    for id in &old_ids {
        assert!(after.contains_key(std::path::Path::new(&format!("archive/{id}.json"))));
        assert!(!after.contains_key(std::path::Path::new(&format!("requests/{id}.json"))));
    }
    assert!(after.contains_key(std::path::Path::new(&format!("archive/{consumed}.used"))));
    assert!(!after.contains_key(std::path::Path::new(&format!("claims/{consumed}.used"))));
    let archived = store
        .gate()
        .audit_records()
        .unwrap()
        .iter()
        .filter(|r| r.event == AuditEvent::Archived)
        .count();
    assert_eq!(archived, 3);
    assert_exit(
        &store.run(&["show", denied.as_str()]),
        1,
        "is archived and can no longer be used",
    );
    assert_success(&store.run(&["show", fresh.as_str()]));
}

#[test]
fn audit_verify_reports_the_first_bad_line() {
    let store = Store::new();
    let a = store.ask("first");
    store.ask("second");
    store.gate().deny(a.id(), &Decision::by("alice")).unwrap();
    let ok = store.run(&["audit", "verify"]);
    assert_success(&ok);
    assert!(stdout(&ok).starts_with("audit log ok: 3 lines, last hash "));

    let log = store.path.join("audit.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let tampered = text.replacen("\"second\"", "\"SECOND\"", 1);
    assert_ne!(text, tampered);
    std::fs::write(&log, tampered).unwrap();
    let broken = store.run(&["audit", "verify"]);
    assert_exit(&broken, 2, "audit log broken at line 2");
    let broken = store.run(&["audit", "verify", "--json"]);
    assert_exit(&broken, 2, "audit log broken at line 2");
    // A broken log is the command's error: one JSON document, the error object, which
    // says where and what.
    let report: serde_json::Value = serde_json::from_slice(&broken.stdout).unwrap();
    let error = &report["error"];
    assert_eq!(error["code"], "audit_broken");
    assert_eq!(error["line"], serde_json::Value::from(2));
    assert!(error["problem"].as_str().unwrap().contains("altered"));
    assert!(error["message"].as_str().unwrap().contains("line 2"));
    assert_eq!(report.as_object().unwrap().len(), 1, "{report}");

    // Truncation is caught as well.
    let first_line = text.lines().next().unwrap();
    std::fs::write(&log, format!("{first_line}\n")).unwrap();
    assert_exit(&store.run(&["audit", "verify"]), 2, "line 2");
}

#[test]
fn audit_verify_and_doctor_report_a_line_that_says_what_cannot_happen() {
    use approval_gate_tests::backend::{Backend, Directory};
    let store = Store::new();
    let filed = store.ask("never approved");
    // A `consumed` line chained and anchored as the store would write it.
    Directory.forge_audit_line(
        &Directory::at(&store.path),
        approval_gate::AuditEvent::Consumed,
        filed.id(),
        &serde_json::Map::new(),
    );
    let expected = format!("audit log inconsistent at line 2: request {}", filed.id());
    assert_exit(&store.run(&["audit", "verify"]), 2, &expected);
    let output = store.run(&["audit", "verify", "--json"]);
    assert_exit(&output, 2, &expected);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let error = &report["error"];
    assert_eq!(error["code"], "audit_inconsistent");
    assert_eq!(error["line"], serde_json::Value::from(2));
    assert_eq!(error["id"], filed.id().as_str());
    assert!(
        error["problem"].as_str().unwrap().contains("`consumed`"),
        "{error}"
    );
    let output = store.run(&["doctor"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains(&expected), "{}", stdout(&output));
    let doctor: serde_json::Value =
        serde_json::from_slice(&store.run(&["doctor", "--json"]).stdout).unwrap();
    assert_eq!(doctor["audit"]["code"], "audit_inconsistent");
    // Re-anchoring is not the repair: the lines and their anchor agree.
    let output = store.run(&["audit", "reanchor"]);
    assert_exit(&output, 1, "not what the lines say");
}

#[test]
fn an_unsafe_store_is_an_error_not_a_refusal() {
    let store = Store::new();
    let id = store.ask("anything").id();
    std::fs::set_permissions(&store.path, std::fs::Permissions::from_mode(0o777)).unwrap();
    for args in [
        vec!["list"],
        vec!["deny", id.as_str()],
        vec!["audit", "verify"],
    ] {
        assert_exit(
            &store.run(&args),
            2,
            "approval-gate: error: refusing unsafe state path",
        );
    }
}

#[test]
fn a_deleted_anchor_is_reported_and_refused_until_a_human_reanchors() {
    let store = Store::new();
    let first = store.ask("first");
    let second = store.ask("second");
    store
        .gate()
        .deny(first.id(), &Decision::by("alice"))
        .unwrap();
    // Cut the last line and delete the anchor that would have shown the cut.
    let log = store.path.join("audit.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let kept: Vec<&str> = text.lines().take(2).collect();
    std::fs::write(&log, format!("{}\n", kept.join("\n"))).unwrap();
    std::fs::remove_file(store.path.join("audit.head")).unwrap();

    assert_exit(
        &store.run(&["audit", "verify"]),
        2,
        "audit log broken at line 1: unanchored",
    );
    // A "no" still takes effect, and says it could not be recorded.
    let denied = store.run(&["deny", second.id().as_str()]);
    assert_exit(
        &denied,
        3,
        "approval-gate: took effect, but: deny of request",
    );
    assert!(
        stderr(&denied).contains("the request is denied"),
        "{}",
        stderr(&denied)
    );
    assert_eq!(
        store.gate().status(second.id()).unwrap().effective_status(),
        EffectiveStatus::Denied
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 2);
    // A "yes" (filing, approving, consuming) is refused with nothing written.
    let before = store.snapshot();
    let filed = store.gate().request_approval(NewRequest::new("third", "r"));
    assert!(matches!(filed, Err(Error::AuditBroken { .. })), "{filed:?}");
    // Without --yes, re-anchoring only says what it would accept.
    let asked = store.run(&["audit", "reanchor"]);
    assert_exit(
        &asked,
        1,
        "refused: not re-anchored: audit log broken at line 1",
    );
    assert!(stderr(&asked).contains("--yes"), "{}", stderr(&asked));
    assert_eq!(
        Store::changed(&before, &store.snapshot()),
        Vec::<String>::new()
    );
    assert_exit(&store.run(&["audit", "verify"]), 2, "unanchored");

    let done = store.run(&["audit", "reanchor", "--yes"]);
    assert_success(&done);
    assert!(
        stdout(&done).starts_with(&format!(
            "audit log re-anchored by {}: found 2 lines",
            os_user()
        )),
        "{}",
        stdout(&done)
    );
    let verified = store.run(&["audit", "verify"]);
    assert_success(&verified);
    assert!(stdout(&verified).starts_with("audit log ok: 3 lines"));
    let records = store.gate().audit_records().unwrap();
    let line = records.last().unwrap();
    assert_eq!(line.event, AuditEvent::Reanchored);
    assert_eq!(line.details["by"], os_user().as_str());
    assert_eq!(line.details["foundLines"], 2);
    // Writes work again, and the chain goes on from the re-anchored end.
    let third = store.ask("third");
    assert_success(&store.run(&["deny", third.id().as_str()]));
    assert_success(&store.run(&["audit", "verify"]));
    assert_eq!(last_event(&store), AuditEvent::Denied);
    // A sound log has nothing to re-anchor.
    assert_exit(
        &store.run(&["audit", "reanchor", "--yes"]),
        2,
        "nothing to re-anchor",
    );
}

#[test]
fn a_store_readable_by_others_is_refused_with_the_chmod_to_run() {
    let store = Store::new();
    let id = store.ask("anything").id();
    std::fs::set_permissions(&store.path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let listed = store.run(&["list"]);
    assert_exit(&listed, 2, "mode 755");
    assert!(stderr(&listed).contains("chmod 700"), "{}", stderr(&listed));
    std::fs::set_permissions(&store.path, std::fs::Permissions::from_mode(0o700)).unwrap();
    let request = store.path.join("requests").join(format!("{id}.json"));
    std::fs::set_permissions(&request, std::fs::Permissions::from_mode(0o644)).unwrap();
    let shown = store.run(&["show", id.as_str()]);
    assert_exit(&shown, 2, "mode 644");
    assert!(stderr(&shown).contains("chmod 600"), "{}", stderr(&shown));
    // Refused, not silently changed.
    let mode = std::fs::metadata(&request).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
}
