use super::*;

const AT: Timestamp = Timestamp::from_unix_millis(1_796_000_000_000);
const LEASE: Duration = Duration::from_secs(30);

#[test]
fn what_is_recorded_is_not_sent_again_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let ledger = DirLedger::open(root).unwrap();
    assert_eq!(
        ledger.claim("a.ops.filed", LEASE, AT).unwrap(),
        NoticeClaim::Mine
    );
    ledger
        .record("a.ops.filed", &Outcome::Delivered, AT)
        .unwrap();
    let dead = Outcome::Dead {
        reason: "h answered 400",
        attempts: 1,
    };
    ledger.record("b.ops.filed", &dead, AT).unwrap();
    drop(ledger);
    let ledger = DirLedger::open(root).unwrap();
    assert_eq!(
        ledger.claim("a.ops.filed", LEASE, AT).unwrap(),
        NoticeClaim::Delivered
    );
    assert_eq!(
        ledger.claim("b.ops.filed", LEASE, AT).unwrap(),
        NoticeClaim::Dead
    );
    assert_eq!(
        ledger.claim("c.ops.filed", LEASE, AT).unwrap(),
        NoticeClaim::Mine
    );
    assert_eq!(
        dead_letters(root).unwrap(),
        [DeadLetter {
            key: "b.ops.filed".into(),
            reason: "h answered 400".into(),
            attempts: 1,
            at: AT,
        }]
    );
}

#[test]
fn a_second_notifier_on_the_same_store_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let _first = DirLedger::open(tmp.path()).unwrap();
    let error = DirLedger::open(tmp.path()).unwrap_err().to_string();
    assert!(
        error.contains("another `approval-gate notify` runs"),
        "{error}"
    );
}

#[test]
fn a_torn_last_line_is_dropped_and_its_message_sent_again() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let ledger = DirLedger::open(root).unwrap();
    ledger
        .record("a.ops.filed", &Outcome::Delivered, AT)
        .unwrap();
    drop(ledger);
    let path = ledger_path(root);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"key":"b.ops.filed","state":"deliv"#);
    std::fs::write(&path, &bytes).unwrap();
    let ledger = DirLedger::open(root).unwrap();
    assert_eq!(
        ledger.claim("b.ops.filed", LEASE, AT).unwrap(),
        NoticeClaim::Mine
    );
    ledger
        .record("b.ops.filed", &Outcome::Delivered, AT)
        .unwrap();
    drop(ledger);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.lines()
            .all(|line| serde_json::from_str::<Value>(line).is_ok())
    );
}

#[test]
fn a_damaged_line_in_the_middle_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    drop(DirLedger::open(root).unwrap());
    std::fs::write(
        ledger_path(root),
        "garbage\n{\"key\":\"a\",\"state\":\"dead\"}\n",
    )
    .unwrap();
    let error = dead_letters(root).unwrap_err();
    assert!(matches!(error, Error::Corrupt { .. }), "{error}");
    assert!(error.to_string().contains("line 1"), "{error}");
}
