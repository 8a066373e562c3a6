//! An I/O error injected at the N-th filesystem operation, for every N, of
//! `execute_approved`, of each decision and of filing a request. The store must stay valid,
//! the closure must not run unless its claim and `execution_started` were durable, and every
//! reported outcome must match the state on disk: success and "took effect" errors
//! ([`Error::took_effect`]: durability unknown, not recorded) mean the state changed, any
//! other error means it did not.

use std::cell::Cell;

use approval_gate::{
    AuditEvent, Decision, EffectiveStatus, Error, Gate, Grant, ManualClock, NewRequest, Status,
    Timestamp,
};
use fail::FailScenario;

use approval_gate_tests::invariants;

const T0: Timestamp = Timestamp::from_unix_millis(1_796_000_000_000);

fn store() -> (tempfile::TempDir, Gate, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gate");
    let gate = Gate::builder()
        .dir(&dir)
        .clock(ManualClock::new(T0))
        .open()
        .unwrap();
    (tmp, gate, dir)
}

/// Runs `f` with the N-th filesystem operation failing; returns what `f` returned. The
/// caller holds the `FailScenario`, which keeps other fault tests out meanwhile.
fn with_fault_at<R>(n: usize, f: impl FnOnce() -> R) -> R {
    fail::cfg("fs::op", &format!("{n}*off->return")).unwrap();
    let result = f();
    fail::remove("fs::op");
    result
}

/// Whether a reported outcome says the operation changed the store.
fn reported_change<T>(result: &Result<T, Error>) -> bool {
    result.as_ref().map_or_else(Error::took_effect, |_| true)
}

/// The kinds of "took effect" error a sweep has seen, so it can show it covered them.
#[derive(Default)]
struct Seen {
    durability_unknown: bool,
    not_recorded: bool,
}

impl Seen {
    fn note<T>(&mut self, result: &Result<T, Error>) {
        match result {
            Err(Error::DurabilityUnknown { .. }) => self.durability_unknown = true,
            Err(Error::NotRecorded { .. }) => self.not_recorded = true,
            _ => {}
        }
    }
}

#[test]
fn a_fault_at_any_operation_of_execute_approved_leaves_a_valid_store_and_runs_at_most_once() {
    let _scenario = FailScenario::setup();
    let mut kinds = Seen::default();
    let mut n = 0;
    loop {
        let (_tmp, gate, dir) = store();
        let id = gate
            .request_approval(NewRequest::new("a", "r"))
            .unwrap()
            .request
            .id();
        gate.approve(id, &Decision::by("h")).unwrap();
        let ran = Cell::new(0);
        let binding = approval_gate::Binding::new("a");
        let result = with_fault_at(n, || {
            gate.execute_approved(id, &binding, |_: &Grant<()>| {
                ran.set(ran.get() + 1);
                Ok::<_, Error>(())
            })
        });
        let seen = invariants::check_dir(&dir, id, ran.get());
        assert_eq!(
            seen.claim,
            reported_change(&result),
            "n={n}: reported {result:?}, but the approval spent on disk is {}",
            seen.claim
        );
        kinds.note(&result);
        let ran_under_fault = ran.get();
        // A retry never runs a spent approval, and runs an unspent one.
        let retry = gate.execute_approved(id, &binding, |_: &Grant<()>| {
            ran.set(ran.get() + 1);
            Ok::<_, Error>(())
        });
        if seen.claim {
            assert!(
                matches!(retry, Err(Error::AlreadyConsumed(_))),
                "n={n}: {retry:?}"
            );
        } else {
            assert!(retry.is_ok(), "n={n}: {retry:?}");
        }
        // A spent approval stays spent even if nothing ran: at most once, never twice.
        let expected = if seen.claim { ran_under_fault } else { 1 };
        assert_eq!(ran.get(), expected, "n={n}");
        invariants::check_dir(&dir, id, ran.get());
        if result.is_ok() {
            break;
        }
        n += 1;
    }
    assert!(n > 10, "the fault sweep covered only {n} operations");
    assert!(
        kinds.durability_unknown && kinds.not_recorded,
        "the sweep never reported a consume that took effect"
    );
}

#[test]
fn a_fault_at_any_operation_of_a_decision_leaves_one_clear_outcome() {
    let _scenario = FailScenario::setup();
    for decision in ["approve", "deny", "revoke"] {
        let mut kinds = Seen::default();
        let mut n = 0;
        loop {
            let (_tmp, gate, dir) = store();
            let id = gate
                .request_approval(NewRequest::new("a", "r"))
                .unwrap()
                .request
                .id();
            if decision == "revoke" {
                gate.approve(id, &Decision::by("h")).unwrap();
            }
            let who = Decision::by("h");
            let result = with_fault_at(n, || match decision {
                "approve" => gate.approve(id, &who),
                "deny" => gate.deny(id, &who),
                _ => gate.revoke(id, &who),
            });
            let reopened = Gate::builder()
                .dir(&dir)
                .clock(ManualClock::new(T0))
                .open()
                .unwrap();
            let status = reopened.status(id).unwrap().request().status();
            let lines = |event| {
                reopened
                    .audit_records()
                    .unwrap()
                    .iter()
                    .filter(|r| r.id == id && r.event == event)
                    .count()
            };
            match decision {
                // A yes is recorded before it takes effect: never approved without its line.
                "approve" => {
                    if status == Status::Approved {
                        assert_eq!(lines(AuditEvent::Approved), 1, "n={n}");
                    } else {
                        assert_eq!(status, Status::Pending, "n={n}");
                    }
                }
                "deny" => assert!(matches!(status, Status::Pending | Status::Denied), "n={n}"),
                _ => assert!(
                    matches!(status, Status::Approved | Status::Revoked),
                    "n={n}"
                ),
            }
            let changed = match decision {
                "approve" => status == Status::Approved,
                "deny" => status == Status::Denied,
                _ => status == Status::Revoked,
            };
            assert_eq!(
                changed,
                reported_change(&result),
                "n={n}: {decision} reported {result:?} but the store says {status:?}"
            );
            kinds.note(&result);
            if result.is_ok() {
                break;
            }
            invariants::check_dir(&dir, id, 0);
            // The human can always try again.
            let again = match decision {
                "approve" => reopened.approve(id, &who),
                "deny" => reopened.deny(id, &who),
                _ => reopened.revoke(id, &who),
            };
            let settled = reopened.status(id).unwrap().effective_status();
            assert!(
                again.is_ok() || matches!(again, Err(Error::WrongState { .. })),
                "n={n}: {again:?}"
            );
            assert!(
                matches!(
                    settled,
                    EffectiveStatus::ApprovedUnconsumed
                        | EffectiveStatus::Denied
                        | EffectiveStatus::Revoked
                ),
                "n={n}: {settled:?}"
            );
            n += 1;
        }
        assert!(n > 3, "{decision}: the sweep covered only {n} operations");
        assert!(
            kinds.durability_unknown,
            "{decision}: the sweep never reported a durability unknown"
        );
        // A yes is recorded before it takes effect: never left unrecorded. (A no is journalled
        // first too, and stands unrecorded only if the journal fails and its record can still
        // be written, which a fault that persists never allows: see below.)
        if decision == "approve" {
            assert!(!kinds.not_recorded, "{decision}");
        }
    }
}

/// One fault, once, at the N-th operation of a denial or a revocation: a "no" whose journal
/// entry cannot be written takes effect anyway, durably, and says it is not recorded.
#[test]
fn a_no_the_journal_cannot_take_stands_unrecorded() {
    let _scenario = FailScenario::setup();
    for decision in ["deny", "revoke"] {
        let mut unrecorded = 0;
        let mut n = 0;
        loop {
            let (_tmp, gate, dir) = store();
            let id = gate
                .request_approval(NewRequest::new("a", "r"))
                .unwrap()
                .request
                .id();
            if decision == "revoke" {
                gate.approve(id, &Decision::by("h")).unwrap();
            }
            let who = Decision::by("h");
            fail::cfg("fs::op", &format!("{n}*off->1*return")).unwrap();
            let result = match decision {
                "deny" => gate.deny(id, &who),
                _ => gate.revoke(id, &who),
            };
            fail::remove("fs::op");
            let reopened = Gate::builder()
                .dir(&dir)
                .clock(ManualClock::new(T0))
                .open()
                .unwrap();
            let status = reopened.status(id).unwrap().request().status();
            let no = if decision == "deny" {
                Status::Denied
            } else {
                Status::Revoked
            };
            assert_eq!(
                status == no,
                reported_change(&result),
                "n={n}: {decision} reported {result:?} but the store says {status:?}"
            );
            if matches!(result, Err(Error::NotRecorded { .. })) {
                unrecorded += 1;
                let lines = reopened
                    .audit_records()
                    .unwrap()
                    .iter()
                    .filter(|r| {
                        r.id == id && matches!(r.event, AuditEvent::Denied | AuditEvent::Revoked)
                    })
                    .count();
                assert_eq!(lines, 0, "n={n}: not recorded, and no line");
            }
            invariants::check_dir(&dir, id, 0);
            if result.is_ok() {
                break;
            }
            n += 1;
        }
        assert!(unrecorded > 0, "{decision}: never left unrecorded");
    }
}

#[test]
fn a_fault_at_any_operation_of_filing_a_request_is_reported_as_what_happened() {
    let _scenario = FailScenario::setup();
    let mut kinds = Seen::default();
    let mut n = 0;
    loop {
        let (_tmp, gate, dir) = store();
        let result = with_fault_at(n, || gate.request_approval(NewRequest::new("a", "r")));
        let filed = std::fs::read_dir(dir.join("requests")).unwrap().count();
        assert!(filed <= 1, "n={n}");
        assert_eq!(
            filed == 1,
            reported_change(&result),
            "n={n}: reported {result:?} but {filed} request(s) on disk"
        );
        kinds.note(&result);
        let reopened = Gate::builder()
            .dir(&dir)
            .clock(ManualClock::new(T0))
            .open()
            .unwrap();
        reopened.verify_audit().unwrap();
        if let Ok(submitted) = &result {
            let id = submitted.request.id();
            assert_eq!(
                reopened.status(id).unwrap().effective_status(),
                EffectiveStatus::Pending
            );
            break;
        }
        n += 1;
    }
    assert!(n > 3, "the sweep covered only {n} operations");
    assert!(kinds.durability_unknown && kinds.not_recorded);
}

/// Filing beside a request already pending, with one operation failing once (the N-th, for
/// every N of a clean filing): no failure is swallowed. Each is reported (an error, or "took
/// effect" once the record may exist) and never a plain success; in particular a pending
/// record that cannot be read for an I/O reason fails the filing rather than being counted
/// and passed over.
#[test]
fn no_single_fault_of_filing_beside_a_pending_request_is_swallowed() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let _scenario = FailScenario::setup();
    let fresh = || {
        let (tmp, gate, dir) = store();
        let waiting = gate
            .request_approval(NewRequest::new("already waiting", "r"))
            .unwrap()
            .request
            .id();
        (tmp, gate, dir, waiting)
    };
    // How many filesystem operations a clean filing makes.
    let (_tmp, gate, _dir, _) = fresh();
    let ops = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ops);
    fail::cfg_callback("fs::op", move || {
        counter.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    gate.request_approval(NewRequest::new("a", "r")).unwrap();
    fail::remove("fs::op");
    let total = ops.load(Ordering::SeqCst);
    assert!(total > 5, "a filing made only {total} operations");

    for n in 0..total {
        let (_tmp, gate, dir, waiting) = fresh();
        fail::cfg("fs::op", &format!("{n}*off->1*return->off")).unwrap();
        let result = gate.request_approval(NewRequest::new("a", "r"));
        fail::remove("fs::op");
        assert!(
            result.is_err(),
            "n={n} of {total}: the fault was swallowed and the filing reported success"
        );
        let filed = std::fs::read_dir(dir.join("requests")).unwrap().count();
        assert_eq!(
            filed == 2,
            result.as_ref().err().is_some_and(Error::took_effect),
            "n={n}: reported {result:?} with {filed} request(s) on disk"
        );
        assert_eq!(
            gate.status(waiting).unwrap().effective_status(),
            EffectiveStatus::Pending
        );
    }
}
