//! The audit log as the gate writes it: every event, chained, verifiable; edits detected.

use approval_gate::{AuditEvent, Decision, Error};
use approval_gate_tests::{Fixture, binding};

#[test]
fn every_event_of_a_lifecycle_is_logged_and_the_chain_verifies() {
    let fx = Fixture::new();
    let id = fx.approved("a", None, None);
    let _g = fx
        .gate
        .consume::<()>(id, &binding("a", None, None))
        .unwrap();
    let denied = fx.ask("b", None, None);
    fx.gate
        .deny(denied, &Decision::by("bob").reason("wrong recipient"))
        .unwrap();
    let revoked = fx.approved("c", None, None);
    fx.gate.revoke(revoked, &Decision::by("carol")).unwrap();

    let records = fx.gate.audit_records().unwrap();
    let events: Vec<_> = records.iter().map(|r| r.event).collect();
    assert_eq!(
        events,
        [
            AuditEvent::Requested,
            AuditEvent::Approved,
            AuditEvent::Consumed,
            AuditEvent::Requested,
            AuditEvent::Denied,
            AuditEvent::Requested,
            AuditEvent::Approved,
            AuditEvent::Revoked,
        ]
    );
    assert!(
        records
            .iter()
            .enumerate()
            .all(|(i, r)| r.seq == i as u64 + 1)
    );
    assert_eq!(records[4].details["decidedBy"], "bob");
    assert_eq!(records[4].details["reason"], "wrong recipient");
    assert_eq!(fx.gate.verify_audit().unwrap().lines, 8);
}

#[test]
fn an_edited_log_is_reported_at_the_edited_line() {
    let fx = Fixture::new();
    for i in 0..4 {
        let _ = fx.ask(&format!("req {i}"), None, None);
    }
    let path = fx.dir.join("audit.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replacen("req 2", "req 9", 1);
    std::fs::write(&path, edited).unwrap();
    match fx.gate.verify_audit() {
        Err(Error::AuditBroken { line, .. }) => assert_eq!(line, 3),
        other => panic!("edit not detected: {other:?}"),
    }
}
