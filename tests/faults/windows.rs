//! The windows between the steps of consume and execute, each opened on purpose: the clock
//! passing expiry once the start is recorded, the `consumed` line failing to be written, a
//! claim appearing between the check and the exclusive create. Each must refuse with its
//! reason and run nothing.

use std::cell::Cell;
use std::time::Duration;

use approval_gate::limits::MAX_TTL;
use approval_gate::{
    AuditEvent, Binding, Decision, EffectiveStatus, Error, Gate, Grant, ManualClock, NewRequest,
    RequestId, Timestamp,
};
use fail::FailScenario;

const T0: Timestamp = Timestamp::from_unix_millis(1_796_000_000_000);

fn approved_store() -> (tempfile::TempDir, Gate, ManualClock, RequestId) {
    let tmp = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let gate = Gate::builder()
        .dir(tmp.path().join("gate"))
        .clock(clock.clone())
        .open()
        .unwrap();
    let id = gate
        .request_approval(NewRequest::new("pay 1 EUR", "rent"))
        .unwrap()
        .request
        .id();
    gate.approve(id, &Decision::by("alice")).unwrap();
    (tmp, gate, clock, id)
}

fn execute(gate: &Gate, id: RequestId, ran: &Cell<usize>) -> Result<(), Error> {
    gate.execute_approved(id, &Binding::new("pay 1 EUR"), |_: &Grant<()>| {
        ran.set(ran.get() + 1);
        Ok::<_, Error>(())
    })
}

fn events(
    gate: &Gate,
    id: RequestId,
) -> Vec<(AuditEvent, serde_json::Map<String, serde_json::Value>)> {
    gate.audit_records()
        .unwrap()
        .into_iter()
        .filter(|r| r.id == id)
        .map(|r| (r.event, r.details))
        .collect()
}

#[test]
fn an_approval_expiring_once_its_start_is_recorded_does_not_run() {
    let _scenario = FailScenario::setup();
    let (_tmp, gate, clock, id) = approved_store();
    let later = clock.clone();
    fail::cfg_callback("execute::after_started", move || {
        later.advance(MAX_TTL + Duration::from_secs(60));
    })
    .unwrap();
    let ran = Cell::new(0);
    let result = execute(&gate, id, &ran);
    fail::remove("execute::after_started");
    assert!(
        matches!(result, Err(Error::ApprovalExpired { id: got, .. }) if got == id),
        "{result:?}"
    );
    assert_eq!(ran.get(), 0, "nothing runs after the approval expired");
    let finished: Vec<_> = events(&gate, id)
        .into_iter()
        .filter(|(e, _)| *e == AuditEvent::ExecutionFinished)
        .collect();
    assert_eq!(finished.len(), 1, "the start has its outcome");
    assert_eq!(finished[0].1["outcome"], "not_run");
    // Spent: the approval never runs later either.
    let retry = execute(&gate, id, &ran);
    assert!(matches!(retry, Err(Error::AlreadyConsumed(_))), "{retry:?}");
    assert_eq!(ran.get(), 0);
}

#[test]
fn a_consumed_line_that_cannot_be_written_refuses_runs_nothing_and_stays_spent() {
    let _scenario = FailScenario::setup();
    let (tmp, gate, _clock, id) = approved_store();
    // The claim is made first; the first audit write after it is the `consumed` line.
    fail::cfg("audit::before_write", "1*return").unwrap();
    let ran = Cell::new(0);
    let result = execute(&gate, id, &ran);
    fail::remove("audit::before_write");
    // The claim took effect: the refusal says so, and names the audit failure behind it.
    match &result {
        Err(Error::NotRecorded {
            id: refused,
            operation: "consume",
            source,
        }) => {
            assert_eq!(*refused, id);
            assert!(
                source.to_string().contains("audit::before_write"),
                "{source}"
            );
        }
        other => panic!("expected the consume to be reported not recorded, got {other:?}"),
    }
    assert_eq!(ran.get(), 0, "nothing runs without its consumed line");
    assert!(
        !events(&gate, id)
            .iter()
            .any(|(e, _)| *e == AuditEvent::ExecutionStarted),
        "no execution started"
    );
    assert_eq!(
        gate.status(id).unwrap().effective_status(),
        EffectiveStatus::Consumed,
        "the claim stands: the approval is spent"
    );
    let retry = execute(&gate, id, &ran);
    assert!(matches!(retry, Err(Error::AlreadyConsumed(_))), "{retry:?}");
    assert_eq!(ran.get(), 0);
    // Reopening adds the missing line, marked as recovered.
    let reopened = Gate::builder()
        .dir(tmp.path().join("gate"))
        .clock(ManualClock::new(T0))
        .open()
        .unwrap();
    let consumed: Vec<_> = events(&reopened, id)
        .into_iter()
        .filter(|(e, _)| *e == AuditEvent::Consumed)
        .collect();
    assert_eq!(consumed.len(), 1);
    assert_eq!(consumed[0].1["recovered"], true);
    reopened.verify_audit().unwrap();
}

#[test]
fn a_claim_that_appears_before_the_exclusive_create_is_a_replay() {
    let _scenario = FailScenario::setup();
    let (tmp, gate, _clock, id) = approved_store();
    // Another writer that got past the per-request lock (a lock that does not hold on this
    // filesystem, say) claims first: the exclusive create is the layer that still says no.
    let claim = tmp
        .path()
        .join("gate")
        .join("claims")
        .join(format!("{id}.used"));
    fail::cfg_callback("consume::before_claim", move || {
        std::fs::write(&claim, b"{}").unwrap();
    })
    .unwrap();
    let ran = Cell::new(0);
    let result = execute(&gate, id, &ran);
    fail::remove("consume::before_claim");
    assert!(
        matches!(result, Err(Error::AlreadyConsumed(got)) if got == id),
        "{result:?}"
    );
    assert_eq!(ran.get(), 0, "the second claimant runs nothing");
    let mine = events(&gate, id);
    assert!(
        mine.iter()
            .any(|(e, d)| *e == AuditEvent::ConsumeReplayed && d["reason"] == "already_consumed"),
        "{mine:?}"
    );
    assert!(
        !mine
            .iter()
            .any(|(e, _)| matches!(e, AuditEvent::Consumed | AuditEvent::ExecutionStarted)),
        "{mine:?}"
    );
}

#[test]
fn a_replacement_that_fails_before_its_rename_leaves_no_temporary_file() {
    let _scenario = FailScenario::setup();
    let tmp = tempfile::tempdir().unwrap();
    let gate = Gate::builder()
        .dir(tmp.path().join("gate"))
        .clock(ManualClock::new(T0))
        .open()
        .unwrap();
    let id = gate
        .request_approval(NewRequest::new("pay 1 EUR", "rent"))
        .unwrap()
        .request
        .id();
    fail::cfg("fs::write_atomic::before_rename", "return").unwrap();
    let result = gate.deny(id, &Decision::by("alice"));
    fail::remove("fs::write_atomic::before_rename");
    // The denial is journalled before its record is written: the record's write failing
    // leaves it in the journal, to be made by the next step, and says so.
    assert!(
        matches!(&result, Err(Error::DurabilityUnknown { source, .. }) if matches!(**source, Error::Io { .. })),
        "{result:?}"
    );
    let requests = tmp.path().join("gate").join("requests");
    let left: Vec<_> = std::fs::read_dir(&requests)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left,
        [format!("{id}.json")],
        "only the request itself remains"
    );
}

/// An archive is journalled before its record and claim move: when the move fails after the
/// entry is durable, the next opening after a power loss makes it, and the request never
/// comes back live (a replay of the journal's earlier entries, which wrote its record and
/// its claim, is followed by the archive's).
#[test]
fn an_archive_whose_move_failed_after_its_entry_is_made_by_the_replay() {
    let _scenario = FailScenario::setup();
    let (tmp, gate, clock, id) = approved_store();
    let ran = Cell::new(0);
    execute(&gate, id, &ran).unwrap();
    clock.advance(Duration::from_secs(9 * 24 * 3600));
    fail::cfg("archive::before_move", "return").unwrap();
    let result = gate.archive(8);
    fail::remove("archive::before_move");
    assert!(
        matches!(&result, Err(e) if e.took_effect()),
        "an archive journalled but not moved took effect: {result:?}"
    );
    let dir = tmp.path().join("gate");
    assert!(dir.join("requests").join(format!("{id}.json")).exists());
    approval_gate::fs_trace::reboot();
    let reopened = Gate::builder()
        .dir(&dir)
        .clock(clock.clone())
        .open()
        .unwrap();
    assert!(!dir.join("requests").join(format!("{id}.json")).exists());
    assert!(dir.join("archive").join(format!("{id}.json")).exists());
    assert!(dir.join("archive").join(format!("{id}.used")).exists());
    assert!(!dir.join("claims").join(format!("{id}.used")).exists());
    assert!(matches!(reopened.status(id), Err(Error::Archived(_))));
    let again = execute(&reopened, id, &ran);
    assert!(again.is_err(), "{again:?}");
    assert_eq!(ran.get(), 1, "never runs again");
    reopened.verify_audit().unwrap();
}
