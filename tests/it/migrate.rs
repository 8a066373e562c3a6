//! `approval-gate migrate` (`approval_gate::migrate_predecessor`) on stores the clean-room
//! writer makes: what each request becomes, the spent rule, the old log kept and committed to,
//! idempotence, `--dry-run`, and every refusal leaving the store's bytes as they were.

use std::os::unix::fs::PermissionsExt;

use approval_gate::{
    AuditEvent, Binding, EffectiveStatus, Error, ErrorCode, Gate, MigrationOutcome, RequestId,
    migrate_predecessor,
};
use approval_gate_tests::predecessor::{OldRecord, OldStore, iso, snapshot};

/// Now, as the tests' requests see it: the real clock (migrate reads it), less a minute.
fn now_ms() -> i64 {
    use approval_gate::Clock as _;
    approval_gate::SystemClock.now().unix_millis() - 60_000
}

fn id(text: &str) -> RequestId {
    RequestId::parse(text).unwrap()
}

fn sample() -> (tempfile::TempDir, OldStore) {
    let tmp = tempfile::tempdir().unwrap();
    let store = OldStore::sample(&tmp.path().join("gate"), now_ms());
    (tmp, store)
}

fn status(gate: &Gate, text: &str) -> EffectiveStatus {
    gate.status(id(text)).unwrap().effective_status()
}

#[test]
fn every_request_is_brought_over_and_nothing_approved_is_usable() {
    let (_tmp, store) = sample();
    let old_log = std::fs::read(store.root.join("audit.jsonl")).unwrap();
    let old_records: Vec<_> = (1..=5)
        .map(|n| std::fs::read(store.root.join(format!("requests/a0000000000{n}.json"))).unwrap())
        .collect();
    let done = migrate_predecessor(&store.root, false).unwrap();
    assert_eq!(done.outcome, MigrationOutcome::Migrated);
    assert_eq!(done.requests.len(), 5);
    let gate = Gate::open(&store.root).unwrap();
    assert_eq!(status(&gate, "a00000000001"), EffectiveStatus::Pending);
    assert_eq!(status(&gate, "a00000000002"), EffectiveStatus::Consumed);
    assert_eq!(status(&gate, "a00000000003"), EffectiveStatus::Denied);
    assert_eq!(status(&gate, "a00000000004"), EffectiveStatus::Expired);
    assert_eq!(status(&gate, "a00000000005"), EffectiveStatus::Expired);
    // The approved one is spent: no consume of it is ever granted.
    let refused = gate
        .consume::<()>(id("a00000000002"), &Binding::new("pay 10 EUR"))
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::AlreadyConsumed, "{refused}");
    // Every field and time kept.
    let pending = gate.status(id("a00000000001")).unwrap().into_request();
    assert_eq!(pending.action(), "send email to alice");
    assert_eq!(pending.reason(), "because");
    assert_eq!(pending.requested_by(), Some("agent-1"));
    let approved = gate.status(id("a00000000002")).unwrap().into_request();
    assert_eq!(approved.decision_reason(), Some("looks right"));
    assert_eq!(
        approved.decided_at().unwrap().to_string(),
        iso(approved.created_at().unix_millis() + 5_000)
    );
    // The old files, byte for byte, and the new chain's first line commits to the old log.
    assert_eq!(
        std::fs::read(store.root.join("predecessor/audit.jsonl")).unwrap(),
        old_log
    );
    for (n, bytes) in (1..=5).zip(&old_records) {
        let kept = store
            .root
            .join(format!("predecessor/requests/a0000000000{n}.json"));
        assert_eq!(&std::fs::read(kept).unwrap(), bytes);
    }
    gate.verify_audit().unwrap();
    let records = gate.audit_records().unwrap();
    let first = &records[0];
    assert_eq!(first.event, AuditEvent::Migrated);
    assert_eq!(first.id, RequestId::STORE);
    assert_eq!(
        first.details["predecessorLogBlake3"],
        blake3::hash(&old_log).to_hex().to_string()
    );
    assert_eq!(first.details["predecessorLogBytes"], old_log.len());
    assert_eq!(done.log_blake3, blake3::hash(&old_log).to_hex().to_string());
    // Each request's own lines say what became of it.
    let events = |text: &str| -> Vec<AuditEvent> {
        records
            .iter()
            .filter(|r| r.id == id(text))
            .map(|r| r.event)
            .collect()
    };
    assert_eq!(events("a00000000001"), [AuditEvent::Requested]);
    // (and the replay refused above)
    assert_eq!(
        events("a00000000002"),
        [
            AuditEvent::Requested,
            AuditEvent::Approved,
            AuditEvent::Consumed,
            AuditEvent::ConsumeReplayed
        ]
    );
    assert_eq!(
        events("a00000000003"),
        [AuditEvent::Requested, AuditEvent::Denied]
    );
    assert_eq!(
        events("a00000000004"),
        [AuditEvent::Requested, AuditEvent::Expired]
    );
    assert_eq!(
        events("a00000000005"),
        [AuditEvent::Requested, AuditEvent::Expired]
    );
    // The store is healthy: nothing stray, nothing unreadable.
    let health = gate.check_health().unwrap();
    assert!(health.is_healthy(), "{health:?}");
}

#[test]
fn an_approved_line_spends_the_request_whatever_its_record_says_now() {
    let tmp = tempfile::tempdir().unwrap();
    let store = OldStore::create(&tmp.path().join("gate"));
    let now = now_ms();
    // Two decisions raced: both lines were written, the denial's record won.
    let raced = OldRecord::pending("c00000000001", "wire money", now - 10_000, 3_600_000);
    store.file(&raced);
    store.log(
        now - 5_000,
        "approved",
        "c00000000001",
        &serde_json::json!({"action": "wire money"}),
    );
    store.decide(&raced.clone().decided("denied", now - 4_000, Some("no")));
    // And a record still pending whose approval line was written: spent too.
    let torn = OldRecord::pending("c00000000002", "wire more", now - 10_000, 3_600_000);
    store.file(&torn);
    store.log(
        now - 5_000,
        "approved",
        "c00000000002",
        &serde_json::json!({"action": "wire more"}),
    );
    let done = migrate_predecessor(&store.root, false).unwrap();
    assert!(
        done.requests
            .iter()
            .all(|r| r.new_status == EffectiveStatus::Consumed),
        "{done:?}"
    );
    let gate = Gate::open(&store.root).unwrap();
    assert_eq!(status(&gate, "c00000000001"), EffectiveStatus::Consumed);
    assert_eq!(status(&gate, "c00000000002"), EffectiveStatus::Consumed);
}

#[test]
fn a_second_run_says_so_and_changes_nothing() {
    let (_tmp, store) = sample();
    migrate_predecessor(&store.root, false).unwrap();
    let after = snapshot(&store.root);
    let again = migrate_predecessor(&store.root, false).unwrap();
    assert_eq!(again.outcome, MigrationOutcome::AlreadyMigrated);
    assert_eq!(snapshot(&store.root), after);
    let dry = migrate_predecessor(&store.root, true).unwrap();
    assert_eq!(dry.outcome, MigrationOutcome::AlreadyMigrated);
}

#[test]
fn a_dry_run_says_what_it_would_do_and_changes_nothing() {
    let (tmp, store) = sample();
    let before = snapshot(tmp.path());
    let plan = migrate_predecessor(&store.root, true).unwrap();
    assert_eq!(plan.outcome, MigrationOutcome::Planned);
    assert_eq!(snapshot(tmp.path()), before);
    let approved = plan
        .requests
        .iter()
        .find(|r| r.id == id("a00000000002"))
        .unwrap();
    assert_eq!(approved.old_status, "approved");
    assert_eq!(approved.new_status, EffectiveStatus::Consumed);
    assert!(approved.why.contains("spent"), "{}", approved.why);
}

#[test]
fn a_directory_without_their_store_is_not_migrated() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gate");
    std::fs::create_dir(&dir).unwrap();
    let error = migrate_predecessor(&dir, false).unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidInput, "{error}");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    drop(Gate::open(&dir).unwrap());
    let before = snapshot(&dir);
    let error = migrate_predecessor(&dir, false).unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidInput, "{error}");
    assert_eq!(snapshot(&dir), before);
}

/// A damage done to a sample store, the file the refusal names, and words it says.
type Damage = (&'static str, fn(&OldStore), &'static str, &'static str);

const DAMAGES: &[Damage] = &[
    (
        "an empty record",
        |s| s.write_raw("a00000000002.json", b""),
        "requests/a00000000002.json",
        "empty",
    ),
    (
        "a truncated record",
        |s| s.write_raw("a00000000002.json", b"{\n  \"id\": \"a000"),
        "requests/a00000000002.json",
        "truncated",
    ),
    (
        "a record under another name",
        |s| {
            let bytes = std::fs::read(s.root.join("requests/a00000000003.json")).unwrap();
            s.write_raw("b00000000009.json", &bytes);
        },
        "requests/b00000000009.json",
        "under another name",
    ),
    (
        "an unknown key",
        |s| {
            let text = String::from_utf8(
                std::fs::read(s.root.join("requests/a00000000001.json")).unwrap(),
            )
            .unwrap();
            s.write_raw(
                "a00000000001.json",
                text.replacen(
                    "{\n",
                    "{\n  \"consumedAt\": \"2026-01-01T00:00:00.000Z\",\n",
                    1,
                )
                .as_bytes(),
            );
        },
        "requests/a00000000001.json",
        "unknown key `consumedAt`",
    ),
    (
        "an unknown status",
        |s| {
            let text = String::from_utf8(
                std::fs::read(s.root.join("requests/a00000000002.json")).unwrap(),
            )
            .unwrap();
            s.write_raw(
                "a00000000002.json",
                text.replace("\"approved\"", "\"revoked\"").as_bytes(),
            );
        },
        "requests/a00000000002.json",
        "status \"revoked\"",
    ),
    (
        "a partial audit line",
        |s| s.append_raw(b"{\"at\":\"2026-"),
        "audit.jsonl",
        "cut short",
    ),
    (
        "a later version's event",
        |s| s.log(0, "consumed", "a00000000002", &serde_json::json!({})),
        "audit.jsonl",
        "\"consumed\" is not one 0.1 writes",
    ),
    (
        "0.4's execution_started line",
        |s| {
            s.log(
                0,
                "execution_started",
                "a00000000002",
                &serde_json::json!({}),
            );
        },
        "audit.jsonl",
        "\"execution_started\" is not one 0.1 writes",
    ),
    (
        "0.4's operation on a record",
        |s| add_key(s, "a00000000001", "  \"operation\": \"smtp.send\",\n"),
        "requests/a00000000001.json",
        "unknown key `operation`",
    ),
    (
        "0.4's revokedAt on a record",
        |s| {
            add_key(
                s,
                "a00000000002",
                "  \"revokedAt\": \"2026-01-01T00:00:00.000Z\",\n",
            );
        },
        "requests/a00000000002.json",
        "unknown key `revokedAt`",
    ),
    (
        "a claim marker beside the store's files",
        |s| std::fs::write(s.root.join("a00000000002.used"), b"").unwrap(),
        "a00000000002.used",
        "not something approval-gate-mcp (Node) 0.1 writes",
    ),
    (
        "a record written without JSON.stringify's times",
        |s| {
            let text = read_text(s, "a00000000003");
            let created = text.split("\"createdAt\": \"").nth(1).unwrap()[..24].to_owned();
            let odd = created.replace(".000Z", "Z").replace('Z', "+00:00");
            s.write_raw("a00000000003.json", text.replace(&created, &odd).as_bytes());
        },
        "requests/a00000000003.json",
        "createdAt",
    ),
    (
        "a record without its reason",
        |s| {
            let text = read_text(s, "a00000000003");
            let text = text.replace("  \"reason\": \"because\",\n", "");
            s.write_raw("a00000000003.json", text.as_bytes());
        },
        "requests/a00000000003.json",
        "no `reason`",
    ),
    (
        "a pending record with a decision reason",
        |s| add_key(s, "a00000000001", "  \"decisionReason\": \"x\",\n"),
        "requests/a00000000001.json",
        "pending, yet it has a decision",
    ),
    (
        "requests that is a file",
        |s| {
            std::fs::remove_dir_all(s.root.join("requests")).unwrap();
            std::fs::write(s.root.join("requests"), b"").unwrap();
        },
        "requests",
        "not something approval-gate-mcp (Node) 0.1 writes",
    ),
    (
        "an audit log that is a directory",
        |s| {
            std::fs::remove_file(s.root.join("audit.jsonl")).unwrap();
            std::fs::create_dir(s.root.join("audit.jsonl")).unwrap();
        },
        "audit.jsonl",
        "not something approval-gate-mcp (Node) 0.1 writes",
    ),
    (
        "a line of a request without a record",
        |s| {
            s.log(
                0,
                "approved",
                "d00000000001",
                &serde_json::json!({"action": "x"}),
            );
        },
        "audit.jsonl",
        "has no record",
    ),
    (
        "a pending record the log decided",
        |s| {
            s.log(
                0,
                "denied",
                "a00000000001",
                &serde_json::json!({"action": "send email to alice"}),
            );
        },
        "requests/a00000000001.json",
        "decided it at line",
    ),
    (
        "a temporary file",
        |s| s.write_raw(".a00000000001.json.tmp-1", b"{}"),
        "requests/.a00000000001.json.tmp-1",
        "temporary file",
    ),
    (
        "a claim marker",
        |s| std::fs::write(s.root.join("requests/a00000000002.used"), b"").unwrap(),
        "requests/a00000000002.used",
        "not a request record's name",
    ),
    (
        "an archive",
        |s| {
            std::fs::create_dir(s.root.join("archive")).unwrap();
            std::fs::write(s.root.join("archive/a00000000009.json"), b"{}").unwrap();
        },
        "archive",
        "not something approval-gate-mcp (Node) 0.1 writes",
    ),
    (
        "a file others may write",
        |s| {
            std::fs::set_permissions(
                s.root.join("requests/a00000000003.json"),
                std::fs::Permissions::from_mode(0o666),
            )
            .unwrap();
        },
        "requests/a00000000003.json",
        "writable by others",
    ),
    (
        "a symlink",
        |s| {
            std::os::unix::fs::symlink("/etc/hostname", s.root.join("requests/a00000000009.json"))
                .unwrap();
        },
        "requests/a00000000009.json",
        "symlink",
    ),
    (
        "no audit log",
        |s| std::fs::remove_file(s.root.join("audit.jsonl")).unwrap(),
        "audit.jsonl",
        "missing while requests exist",
    ),
];

fn read_text(store: &OldStore, id: &str) -> String {
    String::from_utf8(std::fs::read(store.root.join(format!("requests/{id}.json"))).unwrap())
        .unwrap()
}

/// Adds a key (a line of JSON, with its comma) at the top of a record.
fn add_key(store: &OldStore, id: &str, line: &str) {
    let text = read_text(store, id).replacen("{\n", &format!("{{\n{line}"), 1);
    store.write_raw(&format!("{id}.json"), text.as_bytes());
}

#[test]
fn a_store_it_cannot_read_exactly_is_refused_whole_naming_the_file_and_nothing_changes() {
    for (what, damage, file, words) in DAMAGES {
        let (tmp, store) = sample();
        damage(&store);
        let before = snapshot(tmp.path());
        for dry_run in [true, false] {
            let error = migrate_predecessor(&store.root, dry_run).unwrap_err();
            assert_eq!(error.code(), ErrorCode::PredecessorStore, "{what}: {error}");
            let Error::PredecessorStore { path, problem } = &error else {
                unreachable!()
            };
            assert_eq!(path, &store.root.join(file), "{what}: {error}");
            assert!(problem.contains(words), "{what}: {error}");
            assert_eq!(snapshot(tmp.path()), before, "{what}: nothing changed");
        }
    }
}

#[test]
fn a_pending_request_over_our_limits_is_refused_and_a_finished_one_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let store = OldStore::create(&tmp.path().join("gate"));
    let now = now_ms();
    let long = "x".repeat(5000);
    let denied = OldRecord::pending("e00000000001", &long, now - 10_000, 3_600_000);
    store.file(&denied);
    store.decide(&denied.decided("denied", now - 5_000, None));
    migrate_predecessor(&store.root, true).unwrap();
    let pending = OldRecord::pending("e00000000002", &long, now - 10_000, 3_600_000);
    store.file(&pending);
    let error = migrate_predecessor(&store.root, true).unwrap_err();
    assert_eq!(error.code(), ErrorCode::PredecessorStore, "{error}");
    assert!(error.to_string().contains("e00000000002.json"), "{error}");
}

fn cli(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(approval_gate_tests::workspace_binary("approval-gate"))
        .arg("migrate")
        .arg("--dir")
        .arg(dir)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn the_cli_migrates_says_what_it_would_do_and_refuses_with_the_error_tables_exit() {
    let (tmp, store) = sample();
    let before = snapshot(tmp.path());
    let dry = cli(&store.root, &["--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{dry:?}");
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        text.contains("a00000000002  approved -> consumed: approved by approval-gate-mcp"),
        "{text}"
    );
    assert!(text.contains("a00000000001  pending -> pending"), "{text}");
    assert!(text.contains("nothing was changed"), "{text}");
    assert_eq!(snapshot(tmp.path()), before);
    let done = cli(&store.root, &["--json"]);
    assert_eq!(done.status.code(), Some(0), "{done:?}");
    let json: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(json["outcome"], "migrated");
    assert_eq!(json["requests"].as_array().unwrap().len(), 5);
    let again = cli(&store.root, &[]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to do"));
    // A refusal: exit 2 (a fault), one line naming the file, the bytes as they were.
    let (tmp, store) = sample();
    store.write_raw("a00000000003.json", b"{\n  \"id\": \"a0000");
    let before = snapshot(tmp.path());
    let refused = cli(&store.root, &[]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("requests/a00000000003.json"), "{stderr}");
    assert!(stderr.contains("nothing in it was changed"), "{stderr}");
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn two_pending_requests_for_the_same_ask_are_refused_and_finished_ones_are_not() {
    let tmp = tempfile::tempdir().unwrap();
    let store = OldStore::create(&tmp.path().join("gate"));
    let now = now_ms();
    // Denied and expired twins are finished: brought over as they are.
    for n in 1..=2 {
        let twin = OldRecord::pending(&format!("f0000000000{n}"), "same", now - 10_000, 3_600_000);
        store.file(&twin);
        store.decide(&twin.decided("denied", now - 5_000, None));
    }
    migrate_predecessor(&store.root, true).unwrap();
    for n in 3..=4 {
        store.file(&OldRecord::pending(
            &format!("f0000000000{n}"),
            "same",
            now - 10_000,
            3_600_000,
        ));
    }
    let error = migrate_predecessor(&store.root, true).unwrap_err();
    assert_eq!(error.code(), ErrorCode::PredecessorStore, "{error}");
    assert!(error.to_string().contains("f00000000004.json"), "{error}");
    assert!(
        error.to_string().contains("same action and requester"),
        "{error}"
    );
}

/// A file beyond the residue, and the damage that makes it.
type Beyond = (&'static str, fn(&OldStore));

/// What a binary of ours from before the check left in their store when it opened it.
fn add_residue(store: &OldStore) {
    for dir in ["claims", "archive", "locks"] {
        std::fs::create_dir(store.root.join(dir)).unwrap();
    }
    for file in [
        "audit.head",
        "gate.lock",
        "locks/00.lock",
        "locks/ff.lock",
        "locks/passkeys.lock",
    ] {
        std::fs::write(store.root.join(file), b"").unwrap();
    }
    std::fs::write(store.root.join("queue"), vec![b'q'; 64 * 1024]).unwrap();
}

#[test]
fn the_residue_of_an_earlier_binary_of_ours_is_dropped_and_nothing_more_is_tolerated() {
    let (_tmp, store) = sample();
    add_residue(&store);
    let done = migrate_predecessor(&store.root, false).unwrap();
    assert_eq!(done.outcome, MigrationOutcome::Migrated);
    assert!(!store.root.join("predecessor/queue").exists());
    // Anything beyond it is not residue: refused, naming it.
    let beyond: &[Beyond] = &[
        ("audit.head", |s| {
            std::fs::write(s.root.join("audit.head"), b"1").unwrap();
        }),
        ("gate.lock", |s| {
            std::fs::write(s.root.join("gate.lock"), b"1").unwrap();
        }),
        ("queue", |s| {
            std::fs::write(s.root.join("queue"), vec![b'q'; 64 * 1024 + 1]).unwrap();
        }),
        ("claims", |s| {
            std::fs::write(s.root.join("claims/a00000000002.used"), b"").unwrap();
        }),
        ("archive", |s| {
            std::fs::write(s.root.join("archive/a00000000002.json"), b"").unwrap();
        }),
        ("locks", |s| {
            std::fs::write(s.root.join("locks/0.lock"), b"").unwrap();
        }),
        ("locks", |s| {
            std::fs::write(s.root.join("locks/0g.lock"), b"").unwrap();
        }),
        ("locks", |s| {
            std::fs::write(s.root.join("locks/00.lock"), b"x").unwrap();
        }),
        ("locks", |s| {
            std::fs::create_dir(s.root.join("locks/01.lock")).unwrap();
        }),
        ("gate.lock", |s| {
            std::fs::remove_file(s.root.join("gate.lock")).unwrap();
            std::fs::create_dir(s.root.join("gate.lock")).unwrap();
        }),
    ];
    for (name, damage) in beyond {
        let (tmp, store) = sample();
        add_residue(&store);
        damage(&store);
        let before = snapshot(tmp.path());
        let error = migrate_predecessor(&store.root, false).unwrap_err();
        let Error::PredecessorStore { path, .. } = &error else {
            panic!("{name}: {error}")
        };
        assert_eq!(path, &store.root.join(name), "{error}");
        assert_eq!(snapshot(tmp.path()), before, "{name}");
    }
}

#[test]
fn a_record_up_to_the_largest_a_request_file_may_be_is_read_and_a_larger_one_refused() {
    const LIMIT: usize = 1024 * 1024;
    for (size, readable) in [(LIMIT, true), (LIMIT + 1, false)] {
        let tmp = tempfile::tempdir().unwrap();
        let store = OldStore::create(&tmp.path().join("gate"));
        let now = now_ms();
        let mut big = OldRecord::pending("e00000000001", "", now - 10_000, 3_600_000).decided(
            "denied",
            now - 5_000,
            None,
        );
        let short = big.bytes().len();
        big.action = "x".repeat(size - short);
        assert_eq!(big.bytes().len(), size);
        store.write(&big);
        store.log(
            now,
            "requested",
            "e00000000001",
            &serde_json::json!({"action": "x", "reason": "because"}),
        );
        let result = migrate_predecessor(&store.root, true);
        assert_eq!(result.is_ok(), readable, "{size}: {result:?}");
        if let Err(error) = result {
            assert!(error.to_string().contains("larger than"), "{error}");
        }
    }
}

#[test]
fn a_store_of_ours_holding_predecessor_that_no_migration_made_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gate");
    drop(Gate::open(&dir).unwrap());
    std::fs::create_dir(dir.join("predecessor")).unwrap();
    let before = snapshot(&dir);
    let error = migrate_predecessor(&dir, false).unwrap_err();
    let Error::PredecessorStore { path, problem } = &error else {
        panic!("{error}")
    };
    assert_eq!(path, &dir.join("predecessor"));
    assert!(
        problem.contains("not the result of `approval-gate migrate`"),
        "{error}"
    );
    assert_eq!(snapshot(&dir), before);
}
