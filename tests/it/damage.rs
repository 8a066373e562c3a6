//! One unreadable record spoils only itself: its id refuses everything, listings
//! show it as unreadable, and every other request, listing, decision and consume keeps
//! working. One test per kind of damage, each through the whole scenario.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::PathBuf;
use std::time::Duration;

use approval_gate::limits::MAX_PAGE;
use approval_gate::{
    AuditEvent, Decision, Error, Gate, Grant, Limits, ListFilter, ListItem, NewRequest, RequestId,
    UnreadableRecord,
};
use approval_gate_tests::{Fixture, binding, changed, snapshot};

const DAY: Duration = Duration::from_secs(24 * 3600);
const VICTIM: &str = "victim";
const PAYLOAD: &str = r#"{"to":"a@example.com"}"#;

/// A store with a pending victim and one request in most other states.
struct Damaged {
    fx: Fixture,
    victim: RequestId,
    pending: RequestId,
    approved: RequestId,
    denied: RequestId,
}

impl Damaged {
    /// Files the requests, then lets `damage` rewrite the victim's record from its bytes.
    fn new(damage: impl FnOnce(Vec<u8>) -> Vec<u8>) -> Self {
        let fx = Fixture::new();
        let victim = fx.ask(VICTIM, Some("smtp.send"), Some(PAYLOAD));
        fx.advance(Duration::from_millis(1));
        let pending = fx.ask("pending", None, None);
        fx.advance(Duration::from_millis(1));
        let approved = fx.approved("approved", None, None);
        fx.advance(Duration::from_millis(1));
        let denied = fx.ask("denied", None, None);
        fx.gate.deny(denied, &Decision::by("h")).unwrap();
        let path = record(&fx, victim);
        let bytes = damage(std::fs::read(&path).unwrap());
        std::fs::write(&path, bytes).unwrap();
        Self {
            fx,
            victim,
            pending,
            approved,
            denied,
        }
    }

    fn gate(&self) -> &Gate {
        &self.fx.gate
    }
}

fn record(fx: &Fixture, id: RequestId) -> PathBuf {
    fx.dir.join("requests").join(format!("{id}.json"))
}

fn replace(from: &str, to: &str) -> impl FnOnce(Vec<u8>) -> Vec<u8> {
    let (from, to) = (from.to_owned(), to.to_owned());
    move |bytes| {
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains(&from), "{from} not in {text}");
        text.replacen(&from, &to, 1).into_bytes()
    }
}

/// The victim's id refuses everything, naming itself, and nothing on disk changes.
fn assert_refuses_everything(d: &Damaged, problem: &str) {
    let id = d.victim;
    let before = snapshot(&d.fx.dir);
    let unreadable = |result: Result<(), Error>| match result {
        Err(Error::Unreadable {
            id: named,
            problem: found,
        }) => {
            assert_eq!(named, id);
            assert!(found.contains(problem), "{found:?} lacks {problem:?}");
            let message = Error::Unreadable { id, problem: found }.to_string();
            assert!(message.contains(id.as_str()), "{message}");
        }
        other => panic!("expected unreadable {id}, got {other:?}"),
    };
    let by = Decision::by("h");
    unreadable(d.gate().status(id).map(drop));
    unreadable(d.gate().approve(id, &by).map(drop));
    unreadable(d.gate().deny(id, &by).map(drop));
    unreadable(d.gate().revoke(id, &by).map(drop));
    let exact = binding(VICTIM, Some("smtp.send"), Some(PAYLOAD));
    unreadable(d.gate().consume::<serde_json::Value>(id, &exact).map(drop));
    let mut ran = false;
    unreadable(
        d.gate()
            .execute_approved(id, &exact, |_: &Grant<serde_json::Value>| {
                ran = true;
                Ok::<_, Error>(())
            }),
    );
    assert!(!ran, "nothing runs for an unreadable record");
    // Nothing changed but the audit log (and the journal its lines go through): each
    // refused consume left its line.
    assert_eq!(
        changed(&before, &snapshot(&d.fx.dir)),
        [
            PathBuf::from("audit.head"),
            PathBuf::from("audit.jsonl"),
            PathBuf::from("journal.wal")
        ]
    );
    let records = d.gate().audit_records().unwrap();
    let refusals: Vec<_> = records
        .iter()
        .rev()
        .take(2)
        .map(|r| {
            (
                r.event,
                r.id,
                r.details["reason"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        refusals,
        [(AuditEvent::ConsumeRefused, id, "unreadable"); 2],
        "the consume, then the execution"
    );
}

/// Every filter, every page size: the victim is listed first as unreadable, and exactly the
/// other requests of that filter follow.
fn assert_listed(d: &Damaged, problem: &str) {
    let expected = |filter| match filter {
        ListFilter::Pending => vec![d.pending],
        ListFilter::Approved => vec![d.approved],
        ListFilter::Denied => vec![d.denied],
        ListFilter::All => vec![d.pending, d.approved, d.denied],
        _ => vec![],
    };
    for filter in [
        ListFilter::Pending,
        ListFilter::Approved,
        ListFilter::Consumed,
        ListFilter::Denied,
        ListFilter::Expired,
        ListFilter::Revoked,
        ListFilter::All,
    ] {
        for limit in [1, 2, MAX_PAGE] {
            let mut seen = Vec::new();
            let mut after = None;
            loop {
                let page = d.gate().list(filter, after, limit).unwrap();
                assert!(page.items.len() <= limit);
                seen.extend(page.items);
                match page.next_after {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            let (first, rest) = seen.split_first().expect("the victim is listed");
            let record = first.unreadable().expect("unreadable first");
            assert_eq!(record.id(), d.victim, "{filter:?}");
            assert!(record.problem().contains(problem), "{}", record.problem());
            let ids: Vec<_> = rest.iter().map(ListItem::id).collect();
            assert_eq!(ids, expected(filter), "{filter:?} limit {limit}");
            assert!(rest.iter().all(|item| item.report().is_some()));
        }
    }
    let json = serde_json::to_value(d.gate().list(ListFilter::All, None, 10).unwrap()).unwrap();
    assert_eq!(json["items"][0]["id"], d.victim.as_str());
    assert_eq!(json["items"][0]["unreadable"], true);
    assert_eq!(json["items"][0]["authorizesExecution"], false);
    assert_eq!(json["items"][1]["id"], d.pending.as_str());
    assert!(json["items"][1].get("unreadable").is_none());
}

/// New requests, decisions and consumes of other ids work; archive skips the victim.
fn assert_others_work(d: &Damaged) {
    let new = d
        .gate()
        .request_approval(NewRequest::new("new", "r"))
        .unwrap();
    assert!(!new.deduplicated);
    let again = d
        .gate()
        .request_approval(NewRequest::new("new", "r"))
        .unwrap();
    assert!(again.deduplicated);
    d.gate().approve(d.pending, &Decision::by("h")).unwrap();
    let _grant = d
        .gate()
        .consume::<()>(d.approved, &binding("approved", None, None))
        .unwrap();
    d.gate().deny(new.request.id(), &Decision::by("h")).unwrap();

    d.fx.advance(9 * DAY);
    let dry = d.gate().plan_archive(8).unwrap();
    assert_eq!(skipped(&dry.skipped), vec![d.victim]);
    let report = d.gate().archive(8).unwrap();
    let mut archived = report.archived.clone();
    archived.sort();
    let mut expected = vec![d.pending, d.approved, d.denied, new.request.id()];
    expected.sort();
    assert_eq!(archived, expected);
    assert_eq!(skipped(&report.skipped), vec![d.victim]);
    assert!(
        record(&d.fx, d.victim).exists(),
        "the victim stays in place"
    );
    assert!(d.gate().verify_audit().is_ok());

    let health = d.gate().check_health().unwrap();
    assert!(!health.is_healthy());
    assert_eq!(skipped(&health.unreadable), vec![d.victim]);
    assert!(health.audit.is_ok());
    assert_eq!(health.stray, Vec::<PathBuf>::new());
}

fn skipped(records: &[UnreadableRecord]) -> Vec<RequestId> {
    records.iter().map(UnreadableRecord::id).collect()
}

fn scenario(damage: impl FnOnce(Vec<u8>) -> Vec<u8>, problem: &str) {
    let d = Damaged::new(damage);
    assert_refuses_everything(&d, problem);
    assert_listed(&d, problem);
    // A gate opened afresh on the damaged store (recovery runs) works as well.
    Gate::open(&d.fx.dir).unwrap();
    assert_others_work(&d);
}

#[test]
fn an_unreadable_record_stays_in_the_queue_when_the_index_is_rebuilt() {
    // The queue index holds for one boot; in the next it is rebuilt from the records, and a
    // record that cannot be read (it may be pending) must stay in it, listed as unreadable.
    let d = Damaged::new(|_| b"\x00\x01 garbage {{".to_vec());
    approval_gate::fs_trace::reboot();
    assert_listed(&d, "not a valid request record");
}

#[test]
fn garbage_bytes() {
    scenario(
        |_| b"\x00\x01 garbage {{".to_vec(),
        "not a valid request record",
    );
}

#[test]
fn a_truncated_record() {
    scenario(
        |bytes| bytes[..bytes.len() / 2].to_vec(),
        "not a valid request record",
    );
}

#[test]
fn an_empty_record() {
    scenario(|_| Vec::new(), "the record is empty");
}

#[test]
fn a_payload_that_does_not_match_its_digest() {
    scenario(
        replace(r#""to":"a@example.com""#, r#""to":"b@example.com""#),
        "payload digest does not match",
    );
}

/// What a JSON `null` payload used to leave on disk: a digest, and no payload to read back.
#[test]
fn a_null_payload_with_a_digest() {
    scenario(
        replace(&format!(r#""payload":{PAYLOAD}"#), r#""payload":null"#),
        "payload digest does not match",
    );
}

#[test]
fn an_unknown_format_version() {
    scenario(
        replace(r#""version":1"#, r#""version":2"#),
        "unsupported format version 2",
    );
}

/// A newer format with fields this build does not know is named by its version, not as a
/// syntax error.
#[test]
fn a_newer_format_with_new_fields() {
    scenario(
        replace(r#""version":1,"#, r#""version":7,"signatures":[],"#),
        "unsupported format version 7",
    );
}

#[test]
fn a_record_that_is_not_utf8() {
    scenario(
        |bytes| {
            let mut bytes = replace(VICTIM, "vic?tim")(bytes);
            let at = bytes.iter().position(|&b| b == b'?').unwrap();
            bytes[at] = 0xff;
            bytes
        },
        "not valid utf-8",
    );
}

#[test]
fn an_oversized_record() {
    scenario(
        |mut bytes| {
            // Valid JSON still: whitespace only, beyond the size any record of ours has.
            bytes.extend(std::iter::repeat_n(b' ', 1024 * 1024 + 1));
            bytes
        },
        "larger than",
    );
}

#[test]
fn a_record_of_another_request() {
    let fx = Fixture::new();
    let other = fx.ask("other", None, None);
    let d = Damaged::new(|_| std::fs::read(record(&fx, other)).unwrap());
    assert_refuses_everything(&d, &format!("holds request {other} instead"));
}

/// A symlinked record stays an unsafe-state refusal for its own id (a sign of tampering),
/// and listings and new requests still work around it.
#[test]
fn a_symlinked_record_is_refused_for_its_id_and_listed_as_unreadable() {
    let d = Damaged::new(|bytes| bytes);
    let path = record(&d.fx, d.victim);
    let moved = d.fx.tmp.path().join("moved.json");
    std::fs::rename(&path, &moved).unwrap();
    symlink(&moved, &path).unwrap();
    assert!(matches!(
        d.gate().status(d.victim),
        Err(Error::UnsafeState { .. })
    ));
    assert_listed(&d, "symbolic link");
    d.gate()
        .request_approval(NewRequest::new("new", "r"))
        .unwrap();
}

/// An unreadable record in the pending index may be pending: it counts towards the queue
/// cap, and the cap answers `QueueFull` rather than failing on the record.
#[test]
fn the_queue_cap_counts_an_unreadable_pending_record() {
    let d = Damaged::new(|_| b"garbage".to_vec());
    let capped = Gate::builder()
        .dir(&d.fx.dir)
        .clock(d.fx.clock.clone())
        .limits(Limits::default().max_pending(2))
        .open()
        .unwrap();
    let refused = capped.request_approval(NewRequest::new("one more", "r"));
    assert!(
        matches!(
            refused,
            Err(Error::QueueFull {
                pending: 2,
                limit: 2
            })
        ),
        "{refused:?}"
    );
    let roomy = Gate::builder()
        .dir(&d.fx.dir)
        .clock(d.fx.clock.clone())
        .limits(Limits::default().max_pending(3).max_requests(5))
        .open()
        .unwrap();
    roomy
        .request_approval(NewRequest::new("one more", "r"))
        .unwrap();
    let full = roomy.request_approval(NewRequest::new("and another", "r"));
    assert!(
        matches!(
            full,
            Err(Error::QueueFull {
                pending: 3,
                limit: 3
            })
        ),
        "{full:?}"
    );
    let small = Gate::builder()
        .dir(&d.fx.dir)
        .clock(d.fx.clock.clone())
        .limits(Limits::default().max_requests(5))
        .open()
        .unwrap();
    let full = small.request_approval(NewRequest::new("and another", "r"));
    assert!(
        matches!(
            full,
            Err(Error::CreationLimit {
                requests: 5,
                limit: 5
            })
        ),
        "{full:?}"
    );
}

#[test]
fn health_reports_stray_entries_and_a_healthy_store() {
    let fx = Fixture::new();
    let _id = fx.approved("a", None, None);
    let health = fx.gate.check_health().unwrap();
    assert!(health.is_healthy(), "{health:?}");

    let private = std::fs::Permissions::from_mode(0o600);
    for stray in [
        "notes.txt",
        "requests/notes.txt",
        "claims/zz.used",
        "locks/x",
    ] {
        let path = fx.dir.join(stray);
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, private.clone()).unwrap();
    }
    std::fs::create_dir(fx.dir.join("archive").join("old")).unwrap();
    let odd = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"\xff");
    std::fs::write(fx.dir.join("requests").join(odd), b"").unwrap();
    let health = fx.gate.check_health().unwrap();
    assert!(!health.is_healthy());
    assert!(health.unreadable.is_empty());
    let stray: Vec<_> = health
        .stray
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        stray,
        [
            "archive/old",
            "claims/zz.used",
            "locks/x",
            "notes.txt",
            "requests/notes.txt",
            "requests/\u{fffd}",
        ]
    );
}
