//! Another process's recovery running in the gap between an executor's creation of
//! `claims/<id>.exec` and its lock on it. Recovery removes any marker it can lock; the
//! executor must notice that the file it locked is no longer at the path and lock a new one,
//! so that a live execution never runs without its marker (a crash would then leave its
//! outcome unrecorded forever).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use approval_gate::{AuditEvent, Binding, Decision, Error, Gate, Grant, NewRequest};
use fail::FailScenario;

#[test]
fn recovery_in_the_gap_before_the_marker_is_locked_cannot_strip_a_live_execution() {
    let _scenario = FailScenario::setup();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gate");
    let gate = Gate::open(&dir).unwrap();
    let id = gate
        .request_approval(NewRequest::new("pay 1 EUR", "gap"))
        .unwrap()
        .request
        .id();
    gate.approve(id, &Decision::by("tester")).unwrap();
    let marker = dir.join("claims").join(format!("{id}.exec"));
    // Stands for a second process opening the store: its own handles, its own locks.
    let other = Gate::open(&dir).unwrap();

    let fired = Arc::new(AtomicBool::new(false));
    let in_gap = Arc::new(Mutex::new(None));
    fail::cfg_callback("execute::before_marker_lock", {
        let (fired, in_gap, other, marker) = (
            Arc::clone(&fired),
            Arc::clone(&in_gap),
            other.clone(),
            marker.clone(),
        );
        move || {
            if !fired.swap(true, Ordering::SeqCst) {
                let recovered = other.recover().map(|r| r.is_empty());
                *in_gap.lock().unwrap() = Some((recovered, marker.exists()));
            }
        }
    })
    .unwrap();

    let result = gate.execute_approved(id, &Binding::new("pay 1 EUR"), |_: &Grant<()>| {
        // A live execution keeps its marker, and recovery now leaves it alone.
        let held = marker.exists();
        let recovered = other.recover().map(|r| r.is_empty());
        Ok::<_, Error>((held, recovered, marker.exists()))
    });
    fail::remove("execute::before_marker_lock");

    let (recovered, left) = in_gap.lock().unwrap().take().expect("the gap was reached");
    assert!(recovered.unwrap(), "nothing to repair in the gap");
    assert!(
        !left,
        "the scenario: recovery removed the marker in the gap"
    );
    let (held, recovered_during, held_after) = result.unwrap();
    assert!(held, "the execution ran without its marker");
    assert!(
        recovered_during.unwrap(),
        "recovery repaired a live execution"
    );
    assert!(held_after, "recovery removed a live execution's marker");

    let mine: Vec<_> = gate
        .audit_records()
        .unwrap()
        .into_iter()
        .filter(|r| r.id == id)
        .collect();
    let count = |event| mine.iter().filter(|r| r.event == event).count();
    assert_eq!(count(AuditEvent::Consumed), 1);
    assert_eq!(count(AuditEvent::ExecutionStarted), 1);
    assert_eq!(count(AuditEvent::ExecutionFinished), 1);
    let finished = mine
        .iter()
        .find(|r| r.event == AuditEvent::ExecutionFinished)
        .unwrap();
    assert_eq!(finished.details["outcome"], "ok");
    assert!(
        !marker.exists(),
        "the marker goes once the outcome is recorded"
    );
    gate.verify_audit().unwrap();
}
