//! A store of approval-gate-mcp (Node), as its clean-room writer makes one
//! (`approval_gate_tests::predecessor`): every front end recognises it, says so in one line
//! with the command that brings it over, and changes nothing in it.

use std::process::{Command, Stdio};

use approval_gate::{Error, ErrorCode, Gate};
use approval_gate_tests::predecessor::{OldStore, snapshot};
use approval_gate_tests::workspace_binary;

const NOW: i64 = 1_790_000_000_000;

fn theirs() -> (tempfile::TempDir, OldStore) {
    let tmp = tempfile::tempdir().unwrap();
    let store = OldStore::sample(&tmp.path().join("gate"), NOW);
    (tmp, store)
}

fn says_predecessor(text: &str, dir: &std::path::Path) {
    let line = format!(
        "this is a store of approval-gate-mcp (Node), not ours yet: run `approval-gate migrate --dir {}`",
        dir.display()
    );
    assert!(text.contains(&line), "{text}");
    assert!(text.contains("nothing in it was changed"), "{text}");
    assert_eq!(text.trim().lines().count(), 1, "one line: {text}");
}

#[test]
fn the_library_refuses_their_store_before_creating_or_checking_anything() {
    let (_tmp, store) = theirs();
    let before = snapshot(&store.root);
    let error = Gate::open(&store.root).unwrap_err();
    assert_eq!(error.code(), ErrorCode::PredecessorStore, "{error}");
    assert!(matches!(error, Error::PredecessorStore { .. }));
    says_predecessor(&error.to_string(), &store.root);
    assert_eq!(
        snapshot(&store.root),
        before,
        "nothing changed, not even a mode"
    );
}

#[test]
fn the_cli_says_so_in_one_line_and_changes_nothing() {
    let (_tmp, store) = theirs();
    let before = snapshot(&store.root);
    for args in [
        &["list"][..],
        &["doctor"],
        &["show", "a00000000001"],
        &["deny", "a00000000001"],
    ] {
        let output = Command::new(workspace_binary("approval-gate"))
            .arg("--dir")
            .arg(&store.root)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        says_predecessor(&String::from_utf8_lossy(&output.stderr), &store.root);
        assert_eq!(snapshot(&store.root), before, "{args:?} changed nothing");
    }
}

#[test]
fn the_mcp_server_says_so_and_changes_nothing() {
    let (_tmp, store) = theirs();
    let before = snapshot(&store.root);
    let output = Command::new(workspace_binary("approval-gate-mcp"))
        .env("APPROVAL_GATE_DIR", &store.root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success(), "{output:?}");
    says_predecessor(&String::from_utf8_lossy(&output.stderr), &store.root);
    assert_eq!(snapshot(&store.root), before);
}

#[test]
fn the_residue_of_an_earlier_binary_of_ours_is_still_their_store() {
    let (_tmp, store) = theirs();
    // What a binary of ours from before this check left in it: empty folders, locks, an empty
    // anchor, the queue index.
    for dir in ["claims", "archive", "locks"] {
        std::fs::create_dir(store.root.join(dir)).unwrap();
    }
    for file in ["audit.head", "gate.lock", "locks/00.lock", "locks/ff.lock"] {
        std::fs::write(store.root.join(file), b"").unwrap();
    }
    std::fs::write(store.root.join("queue"), b"anything").unwrap();
    let error = Gate::open(&store.root).unwrap_err();
    assert_eq!(error.code(), ErrorCode::PredecessorStore, "{error}");
}

#[test]
fn a_store_mixing_their_records_with_ours_is_refused_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gate");
    let gate = Gate::open(&dir).unwrap();
    let ours = gate
        .request_approval(approval_gate::NewRequest::new("ours", "r"))
        .unwrap();
    drop(gate);
    // Their record dropped in, and the anchor lost: the store is neither's.
    std::fs::write(dir.join("audit.head"), b"").unwrap();
    let store = OldStore { root: dir.clone() };
    store.write(&approval_gate_tests::predecessor::OldRecord::pending(
        "b00000000001",
        "theirs",
        NOW,
        3_600_000,
    ));
    let error = Gate::open(&dir).unwrap_err();
    assert_eq!(error.code(), ErrorCode::PredecessorStore, "{error}");
    let text = error.to_string();
    assert!(
        text.contains("mixes files of approval-gate-mcp (Node)"),
        "{text}"
    );
    assert!(text.contains("b00000000001.json"), "{text}");
    assert!(text.contains("with files of ours (audit.jsonl)"), "{text}");
    assert!(
        dir.join("requests")
            .join(format!("{}.json", ours.request.id()))
            .exists()
    );
}

#[test]
fn an_empty_directory_and_a_store_of_ours_open_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gate");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let gate = Gate::open(&dir).unwrap();
    gate.request_approval(approval_gate::NewRequest::new("ours", "r"))
        .unwrap();
    drop(gate);
    Gate::open(&dir).unwrap();
}

#[test]
fn their_store_cut_short_by_a_crash_is_still_theirs() {
    let tmp = tempfile::tempdir().unwrap();
    let store = OldStore::create(&tmp.path().join("gate"));
    // The predecessor truncates, then writes: a crash leaves the start of a record, and of a
    // line.
    store.write_raw("a00000000001.json", b"{\n  \"id\": \"a00000");
    store.append_raw(b"{\"at\":\"2026-12-06T21:1");
    let before = snapshot(&store.root);
    let error = Gate::open(&store.root).unwrap_err();
    assert_eq!(error.code(), ErrorCode::PredecessorStore, "{error}");
    assert_eq!(snapshot(&store.root), before);
}

#[test]
fn a_store_of_ours_with_its_anchor_is_told_at_once_and_a_record_of_theirs_in_it_is_unreadable() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gate");
    let gate = Gate::open(&dir).unwrap();
    gate.request_approval(approval_gate::NewRequest::new("ours", "r"))
        .unwrap();
    drop(gate);
    // Its audit.head is not empty: no record is read to open it, and a record of theirs
    // dropped in is one unreadable record of ours, refusing only its own id.
    OldStore { root: dir.clone() }.write(&approval_gate_tests::predecessor::OldRecord::pending(
        "b00000000001",
        "theirs",
        NOW,
        3_600_000,
    ));
    let gate = Gate::open(&dir).unwrap();
    let health = gate.check_health().unwrap();
    assert_eq!(health.unreadable.len(), 1, "{health:?}");
}
