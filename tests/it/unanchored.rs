//! A store whose audit anchor was deleted: every "yes" is refused before it takes effect,
//! every "no" takes effect and says it was not recorded, until a human re-anchors.

use approval_gate::{AuditEvent, Decision, EffectiveStatus, Error, Gate, Grant, NewRequest};
use approval_gate_tests::{Fixture, binding};

#[test]
fn without_its_anchor_the_log_refuses_every_yes_until_a_human_reanchors() {
    let fx = Fixture::new();
    let approved = fx.approved("pay 1 EUR", None, None);
    let pending = fx.ask("pay 2 EUR", None, None);
    let to_deny = fx.ask("pay 3 EUR", None, None);
    std::fs::remove_file(fx.dir.join("audit.head")).unwrap();
    let lines = || {
        std::fs::read_to_string(fx.dir.join("audit.jsonl"))
            .unwrap()
            .lines()
            .count()
    };
    let before = lines();
    // Reopening (which runs recovery) still works: the log stays inspectable.
    let gate = Gate::builder()
        .dir(&fx.dir)
        .clock(fx.clock.clone())
        .open()
        .unwrap();
    // Nothing to repair (no torn line, no lost claim), so recovery neither fails nor writes:
    // refusing is left to every append and to `audit verify`.
    assert!(gate.recover().unwrap().is_empty());
    assert_eq!(lines(), before);

    let consumed = gate.consume::<()>(approved, &binding("pay 1 EUR", None, None));
    assert!(
        matches!(consumed, Err(Error::AuditBroken { .. })),
        "{consumed:?}"
    );
    let ran = gate.execute_approved(
        approved,
        &binding("pay 1 EUR", None, None),
        |_: &Grant<()>| Ok::<_, Error>(()),
    );
    assert!(matches!(ran, Err(Error::AuditBroken { .. })), "{ran:?}");
    assert_eq!(
        gate.status(approved).unwrap().effective_status(),
        EffectiveStatus::ApprovedUnconsumed,
        "a refused consume spends nothing"
    );
    let approve = gate.approve(pending, &Decision::by("alice"));
    assert!(
        matches!(approve, Err(Error::AuditBroken { .. })),
        "{approve:?}"
    );
    assert_eq!(
        gate.status(pending).unwrap().effective_status(),
        EffectiveStatus::Pending
    );
    let filed = gate.request_approval(NewRequest::new("pay 4 EUR", "r"));
    assert!(matches!(filed, Err(Error::AuditBroken { .. })), "{filed:?}");
    assert_eq!(
        std::fs::read_dir(fx.dir.join("requests")).unwrap().count(),
        3
    );
    assert!(matches!(gate.archive(8), Err(Error::AuditBroken { .. })));

    // A "no" stands, and says it could not be recorded.
    let denied = gate.deny(to_deny, &Decision::by("alice"));
    match &denied {
        Err(
            error @ Error::NotRecorded {
                id,
                operation: "deny",
                ..
            },
        ) => {
            assert_eq!(*id, to_deny);
            assert!(error.took_effect());
            assert!(
                error.to_string().contains("the request is denied"),
                "{error}"
            );
        }
        other => panic!("expected a deny that took effect, not recorded: {other:?}"),
    }
    assert_eq!(
        gate.status(to_deny).unwrap().effective_status(),
        EffectiveStatus::Denied
    );
    assert_eq!(
        lines(),
        before,
        "nothing was appended to the unanchored log"
    );
    assert!(gate.verify_audit().is_err());

    let done = gate.reanchor_audit("alice").unwrap();
    assert_eq!(done.found_lines as usize, before);
    gate.verify_audit().unwrap();
    gate.execute_approved(
        approved,
        &binding("pay 1 EUR", None, None),
        |_: &Grant<()>| Ok::<_, Error>(()),
    )
    .unwrap();
    let records = gate.audit_records().unwrap();
    let events: Vec<_> = records[before..].iter().map(|r| r.event).collect();
    assert_eq!(
        events,
        [
            AuditEvent::Reanchored,
            AuditEvent::Consumed,
            AuditEvent::ExecutionStarted,
            AuditEvent::ExecutionFinished,
        ]
    );
}

/// Lines cut from the tail and accepted by a re-anchoring are lost for good: what they said
/// is unknown, so a request whose approval was among them may be consumed after the
/// re-anchoring and the log still makes sense; what follows is held to the rules again (the
/// choice documented in docs/authorization-states.md).
#[test]
fn after_a_reanchoring_lost_lines_are_allowed_for_and_later_ones_are_checked() {
    let fx = Fixture::new();
    let id = fx.ask("pay 1 EUR", None, None);
    let log = fx.dir.join("audit.jsonl");
    let filed = std::fs::read_to_string(&log).unwrap();
    fx.gate.approve(id, &Decision::by("alice")).unwrap();
    // The tail (the `approved` line) is cut, the anchor with it, and a human accepts it.
    std::fs::write(&log, &filed).unwrap();
    std::fs::remove_file(fx.dir.join("audit.head")).unwrap();
    fx.gate.reanchor_audit("alice").unwrap();
    let _spent = fx
        .gate
        .consume::<()>(id, &binding("pay 1 EUR", None, None))
        .unwrap();
    let events: Vec<_> = fx
        .gate
        .audit_records()
        .unwrap()
        .iter()
        .map(|r| r.event)
        .collect();
    assert_eq!(
        events,
        [
            AuditEvent::Requested,
            AuditEvent::Reanchored,
            AuditEvent::Consumed
        ]
    );
    assert_eq!(fx.gate.verify_audit().unwrap().lines, 3);
    // A second `consumed` (a careful forger's, chained and anchored) is caught at its line.
    approval_gate_tests::backend::Backend::forge_audit_line(
        &approval_gate_tests::backend::Directory,
        &approval_gate_tests::backend::Directory::at(&fx.dir),
        AuditEvent::Consumed,
        id,
        &serde_json::Map::new(),
    );
    match fx.gate.verify_audit() {
        Err(Error::AuditInconsistent {
            line: 4,
            id: named,
            problem,
        }) => {
            assert_eq!(named, id);
            assert!(problem.contains("`consumed`"), "{problem}");
        }
        other => panic!("expected the second consume at line 4, got {other:?}"),
    }
}
