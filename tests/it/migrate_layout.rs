//! A directory store written by release 0.1's layout (before issue 42's journal) opens on
//! today's code and keeps every request, claim and audit line, and works on from there.
//!
//! The store is `tests/fixtures/dir-store-0.1/`, written by
//! `migrate_layout_fixture::write_the_fixture` and committed.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use approval_gate::{
    AuditEvent, AuditRecord, Decision, EffectiveStatus, Error, Gate, Grant, ListFilter, ListItem,
    ManualClock, RequestId, Timestamp,
};
use serde_json::Value;

use crate::migrate_layout_fixture::{
    ALLOWED, FIXTURE, FIXTURE_BOOT, MINUTE, WEEK, allowed, approve, bound, file,
};

/// When the fixture is opened again, 2026-11-30T01:00:00Z: an hour after it was written,
/// so that the ten-minute request has lapsed meanwhile and the week-long ones have not.
const REOPENED: Timestamp =
    Timestamp::from_unix_millis(1_795_132_800_000 + 10 * 86_400_000 + 3_600_000);

/// What each request of the fixture is, by its action text, once opened at [`REOPENED`].
const EXPECTED: [(&str, Expected); 14] = [
    ("pay the pending invoice", Live(EffectiveStatus::Pending)),
    (
        "pay the other pending invoice",
        Live(EffectiveStatus::Pending),
    ),
    (
        "pay the approved invoice",
        Live(EffectiveStatus::ApprovedUnconsumed),
    ),
    (
        "pay the approved late invoice",
        Live(EffectiveStatus::ApprovedExpired),
    ),
    ("pay the denied invoice", Live(EffectiveStatus::Denied)),
    ("pay the revoked invoice", Live(EffectiveStatus::Revoked)),
    ("pay the expired invoice", Live(EffectiveStatus::Expired)),
    ("pay the lapsing invoice", Live(EffectiveStatus::Expired)),
    ("pay the consumed invoice", Live(EffectiveStatus::Consumed)),
    ("pay the executed invoice", Live(EffectiveStatus::Consumed)),
    ("pay the failed invoice", Live(EffectiveStatus::Consumed)),
    ("pay the crashed invoice", Live(EffectiveStatus::Consumed)),
    (ALLOWED, Live(EffectiveStatus::Consumed)),
    ("pay the archived invoice", Archived),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    Live(EffectiveStatus),
    Archived,
}
use Expected::{Archived, Live};

/// A record of the fixture as written: its file's JSON.
#[derive(Debug)]
struct Record {
    id: RequestId,
    json: Value,
}

impl Record {
    fn text(&self, field: &str) -> Option<&str> {
        self.json.get(field).and_then(Value::as_str)
    }

    fn time(&self, field: &str) -> Timestamp {
        serde_json::from_value(self.json[field].clone()).unwrap()
    }
}

/// The fixture's records in `folder` (`requests` or `archive`), by action text.
fn records(folder: &str) -> BTreeMap<String, Record> {
    let mut records = BTreeMap::new();
    for entry in std::fs::read_dir(Path::new(FIXTURE).join(folder)).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            let id = RequestId::parse(path.file_stem().unwrap().to_str().unwrap()).unwrap();
            let record = Record { id, json };
            let action = record.text("action").unwrap().to_owned();
            assert!(records.insert(action, record).is_none());
        }
    }
    records
}

/// The ids the fixture holds a claim for (`<id>.used`) in `folder`.
fn claimed(folder: &str) -> BTreeSet<RequestId> {
    std::fs::read_dir(Path::new(FIXTURE).join(folder))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "used"))
        .map(|path| RequestId::parse(path.file_stem().unwrap().to_str().unwrap()).unwrap())
        .collect()
}

/// The fixture's one allowance, and its uses as written (request, amount).
fn fixture_allowance() -> (RequestId, Vec<(RequestId, u64)>) {
    let folder = Path::new(FIXTURE).join("allowances");
    let mut ids: Vec<RequestId> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .map(|path| RequestId::parse(path.file_stem().unwrap().to_str().unwrap()).unwrap())
        .collect();
    assert_eq!(ids.len(), 1, "one allowance");
    let id = ids.remove(0);
    let uses = std::fs::read_to_string(folder.join(format!("{id}.uses")))
        .unwrap()
        .lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line).unwrap();
            let request = RequestId::parse(line["request"].as_str().unwrap()).unwrap();
            (request, line["amount"].as_u64().unwrap())
        })
        .collect();
    (id, uses)
}

/// Copies `from` into `to` as the store keeps its files: directories `0700`, files `0600`
/// (git keeps neither).
fn copy_private(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700)).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_private(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
    }
}

/// The fixture, copied and opened at [`REOPENED`].
struct Reopened {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    clock: ManualClock,
    gate: Gate,
}

impl Reopened {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("gate");
        copy_private(Path::new(FIXTURE), &dir);
        let clock = ManualClock::new(REOPENED);
        let gate = Self::open(&dir, &clock);
        Self {
            _tmp: tmp,
            dir,
            clock,
            gate,
        }
    }

    fn open(dir: &Path, clock: &ManualClock) -> Gate {
        Gate::builder()
            .dir(dir)
            .clock(clock.clone())
            .open()
            .unwrap_or_else(|e| panic!("the store of release 0.1 opens: {e}"))
    }

    fn log(&self) -> Vec<u8> {
        std::fs::read(self.dir.join("audit.jsonl")).unwrap()
    }

    fn records_of(&self, id: RequestId) -> Vec<AuditRecord> {
        self.gate
            .audit_records()
            .unwrap()
            .into_iter()
            .filter(|r| r.id == id)
            .collect()
    }
}

fn original_log() -> Vec<u8> {
    std::fs::read(Path::new(FIXTURE).join("audit.jsonl")).unwrap()
}

/// Lines in a log that ends with a whole line.
fn lines(bytes: &[u8]) -> u64 {
    assert!(bytes.ends_with(b"\n"), "the log ends with a whole line");
    u64::try_from(bytes.split_inclusive(|&b| b == b'\n').count()).unwrap()
}

/// The fixture holds what this test says it does, so that nothing below passes on a fixture
/// that lost something.
#[test]
fn the_fixture_holds_every_kind_of_request_claim_and_line() {
    let live = records("requests");
    let archived = records("archive");
    let mut named: Vec<&str> = live
        .keys()
        .chain(archived.keys())
        .map(String::as_str)
        .collect();
    named.sort_unstable();
    let mut expected: Vec<&str> = EXPECTED.iter().map(|(action, _)| *action).collect();
    expected.sort_unstable();
    assert_eq!(named, expected);
    for (action, expected) in EXPECTED {
        assert_eq!(
            archived.contains_key(action),
            expected == Archived,
            "{action}"
        );
    }
    let mut spent: BTreeSet<RequestId> = ["consumed", "executed", "failed", "crashed"]
        .iter()
        .map(|what| live[&format!("pay the {what} invoice")].id)
        .collect();
    spent.insert(live[ALLOWED].id);
    assert_eq!(claimed("claims"), spent);
    assert_eq!(
        claimed("archive"),
        BTreeSet::from([archived["pay the archived invoice"].id])
    );
    let crashed = live["pay the crashed invoice"].id;
    assert!(
        Path::new(FIXTURE)
            .join(format!("claims/{crashed}.exec"))
            .exists()
    );
    let log = original_log();
    assert_eq!(lines(&log), 45);
    let text = String::from_utf8(log).unwrap();
    assert!(text.ends_with(&format!(
        "\"event\":\"execution_started\",\"id\":\"{crashed}\"{}",
        &text[text.rfind(",\"operation\"").unwrap()..]
    )));
    for event in [
        "consume_refused",
        "consume_replayed",
        "decision_refused",
        "archived",
        "expired",
        "allowance_granted",
    ] {
        assert!(text.contains(&format!("\"event\":\"{event}\"")), "{event}");
    }
    let (allowance, uses) = fixture_allowance();
    assert_eq!(uses, [(live[ALLOWED].id, 4000)], "allowance {allowance}");
    let head = std::fs::read_to_string(Path::new(FIXTURE).join("audit.head")).unwrap();
    assert!(head.starts_with("00000000000000000045 "), "{head}");
    assert!(head.trim_end().ends_with(FIXTURE_BOOT), "{head}");
}

#[test]
fn a_store_of_release_0_1_opens_with_every_request_where_it_stood() {
    let store = Reopened::new();
    let live = records("requests");
    let archived = records("archive");

    // Every live request listed, and only those, each where it stood.
    let page = store.gate.list(ListFilter::All, None, 1000).unwrap();
    assert_eq!(page.next_after, None);
    let listed: BTreeMap<RequestId, EffectiveStatus> = page
        .items
        .iter()
        .map(|item| {
            let report = item.report().expect("every record reads");
            (item.id(), report.effective_status())
        })
        .collect();
    let wanted: BTreeMap<RequestId, EffectiveStatus> = EXPECTED
        .iter()
        .filter_map(|(action, expected)| match expected {
            Live(status) => Some((live[*action].id, *status)),
            Archived => None,
        })
        .collect();
    assert_eq!(listed, wanted);
    let pending: BTreeSet<RequestId> = store
        .gate
        .list(ListFilter::Pending, None, 1000)
        .unwrap()
        .items
        .iter()
        .map(ListItem::id)
        .collect();
    assert_eq!(
        pending,
        BTreeSet::from([
            live["pay the pending invoice"].id,
            live["pay the other pending invoice"].id
        ])
    );

    // Each by its id, with every field it was filed and decided with.
    for (action, expected) in EXPECTED {
        match expected {
            Live(status) => {
                let record = &live[action];
                let report = store.gate.status(record.id).unwrap();
                assert_eq!(report.effective_status(), status, "{action}");
                let request = report.request();
                assert_eq!(request.action(), action);
                assert_eq!(Some(request.reason()), record.text("reason"));
                assert_eq!(request.requested_by(), record.text("requestedBy"));
                assert_eq!(request.operation(), record.text("operation"));
                assert_eq!(
                    request.payload_digest().map(|d| d.to_string()).as_deref(),
                    record.text("payloadDigest")
                );
                assert_eq!(request.created_at(), record.time("createdAt"));
                assert_eq!(request.expires_at(), record.time("expiresAt"));
                assert_eq!(request.decided_by(), record.text("decidedBy"), "{action}");
                assert_eq!(request.decision_reason(), record.text("decisionReason"));
                assert_eq!(request.filed_by(), record.text("filedBy"));
            }
            Archived => {
                let id = archived[action].id;
                let refused = store.gate.status(id).unwrap_err();
                assert!(
                    matches!(refused, Error::Archived(x) if x == id),
                    "{refused}"
                );
            }
        }
    }
}

#[test]
fn a_store_of_release_0_1_keeps_every_claim_spent_and_every_outcome() {
    let store = Reopened::new();
    let live = records("requests");
    let archived_id = records("archive")["pay the archived invoice"].id;

    // The execution cut by the crash: recorded as of unknown outcome when the store opened.
    let crashed = live["pay the crashed invoice"].id;
    let outcomes = |id| -> Vec<String> {
        store
            .records_of(id)
            .iter()
            .filter(|r| r.event == AuditEvent::ExecutionFinished)
            .map(|r| r.details["outcome"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(outcomes(crashed), ["unknown"]);
    assert_eq!(outcomes(live["pay the executed invoice"].id), ["ok"]);
    assert_eq!(outcomes(live["pay the failed invoice"].id), ["error"]);
    assert!(
        store.gate.recover().unwrap().is_empty(),
        "done once, on open"
    );

    // No claim is usable again, nor is the crashed one retried.
    for what in ["consumed", "executed", "failed", "crashed"] {
        let action = format!("pay the {what} invoice");
        let id = live[&action].id;
        let refused = store
            .gate
            .consume::<Value>(id, &bound(&action))
            .unwrap_err();
        assert!(
            matches!(refused, Error::AlreadyConsumed(x) if x == id),
            "{what}: {refused}"
        );
        let ran = Cell::new(false);
        let refused = store
            .gate
            .execute_approved(id, &bound(&action), |_: &Grant<Value>| {
                ran.set(true);
                Ok::<_, Error>(())
            })
            .unwrap_err();
        assert!(
            matches!(refused, Error::AlreadyConsumed(_)),
            "{what}: {refused}"
        );
        assert!(!ran.get(), "{what} ran again");
    }
    let started = store
        .records_of(crashed)
        .iter()
        .filter(|r| r.event == AuditEvent::ExecutionStarted)
        .count();
    assert_eq!(started, 1, "the crashed execution was never retried");
    assert_eq!(outcomes(crashed), ["unknown"]);

    let id = live[ALLOWED].id;
    let refused = store.gate.consume::<Value>(id, &allowed()).unwrap_err();
    assert!(
        matches!(refused, Error::AlreadyConsumed(x) if x == id),
        "{refused}"
    );

    // The archived one stays archived, its claim with it.
    let refused = store
        .gate
        .consume::<Value>(archived_id, &bound("pay the archived invoice"))
        .unwrap_err();
    assert!(matches!(refused, Error::Archived(_)), "{refused}");
    let refused = store
        .gate
        .approve(archived_id, &Decision::by("alice"))
        .unwrap_err();
    assert!(matches!(refused, Error::Archived(_)), "{refused}");
    assert!(
        store
            .dir
            .join(format!("archive/{archived_id}.json"))
            .exists()
    );
    assert!(
        store
            .dir
            .join(format!("archive/{archived_id}.used"))
            .exists()
    );
    assert!(
        !store
            .dir
            .join(format!("requests/{archived_id}.json"))
            .exists()
    );

    // Nor is anything not approved usable.
    for what in [
        "pending",
        "approved late",
        "denied",
        "revoked",
        "expired",
        "lapsing",
    ] {
        let action = format!("pay the {what} invoice");
        let refused = store
            .gate
            .consume::<Value>(live[&action].id, &bound(&action));
        assert!(refused.is_err(), "{what}");
    }
}

#[test]
fn a_store_of_release_0_1_keeps_every_audit_line_byte_for_byte() {
    let store = Reopened::new();
    let original = original_log();
    let log = store.log();
    assert!(
        log.starts_with(&original),
        "the log of release 0.1 is kept as it was, at its start"
    );
    let summary = store.gate.verify_audit().unwrap();
    assert_eq!(summary.lines, lines(&log));
    // What opening added: the crashed execution's outcome, nothing else.
    let added: Vec<(AuditEvent, RequestId)> = store
        .gate
        .audit_records()
        .unwrap()
        .into_iter()
        .filter(|r| r.seq > lines(&original))
        .map(|r| (r.event, r.id))
        .collect();
    let crashed = records("requests")["pay the crashed invoice"].id;
    assert_eq!(added, [(AuditEvent::ExecutionFinished, crashed)]);

    // Opened again at once: the move is made once, nothing more is written.
    let again = Reopened::open(&store.dir, &store.clock);
    assert!(again.recover().unwrap().is_empty());
    assert!(store.log() == log, "a second opening wrote to the log");
    assert_eq!(again.verify_audit().unwrap(), summary);
}

#[test]
fn a_store_of_release_0_1_works_on_and_opens_again_unchanged() {
    let store = Reopened::new();
    let live = records("requests");

    // Approved before the move, used after: once.
    let approved = "pay the approved invoice";
    let runs = Cell::new(0);
    let paid = store
        .gate
        .execute_approved(
            live[approved].id,
            &bound(approved),
            |grant: &Grant<Value>| {
                grant.assert_active()?;
                runs.set(runs.get() + 1);
                Ok::<_, Error>(grant.payload()["amount_cents"].as_u64())
            },
        )
        .unwrap();
    assert_eq!((paid, runs.get()), (Some(1200), 1));
    let again = store
        .gate
        .consume::<Value>(live[approved].id, &bound(approved));
    assert!(matches!(again, Err(Error::AlreadyConsumed(_))), "{again:?}");

    // A new request, filed, approved and executed.
    store.clock.advance(MINUTE);
    let fresh = file(&store.gate, "pay the new invoice", WEEK);
    approve(&store.gate, fresh);
    store
        .gate
        .execute_approved(fresh, &bound("pay the new invoice"), |_: &Grant<Value>| {
            Ok::<_, Error>(())
        })
        .unwrap();
    assert_eq!(
        store.gate.status(fresh).unwrap().effective_status(),
        EffectiveStatus::Consumed
    );
    // (The listing records the lapsed request's expiry: the log is read after it.)
    let before = store.gate.list(ListFilter::All, None, 1000).unwrap();
    let summary = store.gate.verify_audit().unwrap();
    let log = store.log();
    assert!(log.starts_with(&original_log()));
    assert_eq!(summary.lines, lines(&log));

    // Opened again, by another handle: nothing to repair, nothing written, all as it was.
    let again = Reopened::open(&store.dir, &store.clock);
    assert!(again.recover().unwrap().is_empty());
    assert!(store.log() == log, "a second opening wrote to the log");
    assert_eq!(again.list(ListFilter::All, None, 1000).unwrap(), before);
    assert_eq!(again.verify_audit().unwrap(), summary);
    assert_eq!(
        before.items.len(),
        live.len() + 1,
        "those of release 0.1 and the new one"
    );
}

#[test]
fn a_store_of_release_0_1_keeps_its_allowance_and_the_use_it_counted() {
    let store = Reopened::new();
    let id = records("requests")[ALLOWED].id;
    let (allowance, uses) = fixture_allowance();
    let all = store.gate.allowances().unwrap();
    assert_eq!(all.len(), 1);
    let report = &all[0];
    assert_eq!(report.allowance.allowance.id(), allowance);
    assert_eq!(uses.len(), 1);
    assert_eq!((report.usage.uses, report.usage.spent), (1, 4000));
    assert_eq!(
        (report.uses_left(), report.budget_left()),
        (Some(2), Some(6000))
    );
    assert!(!report.revoked);
    assert_eq!(report.allowance.signatures.len(), 1);
    assert_eq!(
        report.allowance.signatures[0].principal,
        "alice@example.com"
    );
    assert_eq!(
        store.gate.status(id).unwrap().request().allowance(),
        Some(allowance)
    );
}
