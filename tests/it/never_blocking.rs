//! The async forms do the store's work (fsyncs, file locks) on threads of their own, never on
//! the thread that polls them: a slow disk stalls no other task on the caller's runtime.
//! Shown without timing anything: the directory store notes every write and fsync on the
//! thread that made it (`approval_gate::fs_trace`), and the polling thread must have made
//! none.

use approval_gate::fs_trace::{self, FsOp};
use approval_gate::{AuditEvent, Binding, Decision, Error, Gate, Grant, NewRequest};

fn approved(gate: &Gate, action: &str) -> approval_gate::RequestId {
    let id = gate
        .request_approval(NewRequest::new(action, "agent"))
        .unwrap()
        .request
        .id();
    gate.approve(id, &Decision::by("alice")).unwrap();
    id
}

#[test]
fn execute_approved_async_writes_and_syncs_nothing_on_the_polling_thread() {
    let tmp = tempfile::tempdir().unwrap();
    let gate = Gate::open(tmp.path().join("g")).unwrap();
    let id = approved(&gate, "send it");
    // Sanity: the same work done synchronously is seen on this thread.
    let sync_id = approved(&gate, "send it too");
    let (ran, seen) = fs_trace::record(|| {
        gate.execute_approved(sync_id, &Binding::new("send it too"), |_: &Grant<()>| {
            Ok::<_, Error>(())
        })
    });
    ran.unwrap();
    assert!(
        seen.iter()
            .any(|op| matches!(op, FsOp::Fsync { .. } | FsOp::FsyncDir { .. })),
        "the trace sees this thread's syncs: {seen:?}"
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (ran, on_this_thread) = fs_trace::record(|| {
        runtime.block_on(gate.execute_approved_async(
            id,
            &Binding::new("send it"),
            async |_: &Grant<()>| Ok::<_, Error>(()),
        ))
    });
    ran.unwrap();
    assert_eq!(
        on_this_thread,
        Vec::<FsOp>::new(),
        "the polling thread wrote or synced"
    );
    // The work was done, elsewhere: consumed, started, finished ok.
    let lines: Vec<_> = gate
        .audit_records()
        .unwrap()
        .into_iter()
        .filter(|line| line.id == id)
        .collect();
    let events: Vec<_> = lines.iter().map(|line| line.event).collect();
    assert_eq!(
        events,
        [
            AuditEvent::Requested,
            AuditEvent::Approved,
            AuditEvent::Consumed,
            AuditEvent::ExecutionStarted,
            AuditEvent::ExecutionFinished,
        ]
    );
    assert_eq!(lines[4].details["outcome"], "ok");
}

#[test]
fn request_approval_async_writes_and_syncs_nothing_on_the_polling_thread() {
    let tmp = tempfile::tempdir().unwrap();
    let gate = Gate::open(tmp.path().join("g")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (filed, on_this_thread) = fs_trace::record(|| {
        runtime.block_on(gate.request_approval_async(NewRequest::new("rotate the key", "agent")))
    });
    let filed = filed.unwrap();
    assert!(!filed.deduplicated);
    assert_eq!(
        on_this_thread,
        Vec::<FsOp>::new(),
        "the polling thread wrote or synced"
    );
    // Filed, elsewhere, and found again by its ask.
    let again = runtime
        .block_on(gate.request_approval_async(NewRequest::new("rotate the key", "agent")))
        .unwrap();
    assert!(again.deduplicated);
    assert_eq!(again.request.id(), filed.request.id());
    // The same filing done synchronously is seen on this thread.
    let (sync, seen) =
        fs_trace::record(|| gate.request_approval(NewRequest::new("and another", "agent")));
    sync.unwrap();
    assert!(
        seen.iter()
            .any(|op| matches!(op, FsOp::Fsync { .. } | FsOp::FsyncDir { .. })),
        "the trace sees this thread's syncs: {seen:?}"
    );
}
