//! Crash recovery: an executor killed at every failpoint, or dying inside its closure, in a
//! child process; then recovery, the invariants, and a retry that must never run a second
//! time.

use std::path::Path;
use std::process::{Command, Stdio};

use approval_gate::{AuditEvent, Decision, NewRequest, RequestId};

use super::count;
use crate::backend::{Backend, Store};
use crate::{Subject, child_binary, invariants};

/// The failpoints of the lifecycle itself (consume and execute), where any backend's
/// executor can be killed; [`Backend::kill_points`] adds the backend's own.
const KILL_POINTS: &[&str] = &[
    "consume::before_claim=return(kill)",
    "consume::after_claim=return(kill)",
    "consume::after_consumed_line=return(kill)",
    "consume::before_expiry_recheck=return(kill)",
    "execute::before_started=return(kill)",
    "execute::after_started=return(kill)",
    "execute::before_closure=return(kill)",
    "execute::after_closure=return(kill)",
];

/// Trials per kill point. `APPROVAL_GATE_CRASH_TRIALS` raises it for a longer run.
fn trials() -> usize {
    std::env::var("APPROVAL_GATE_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50)
}

fn run_child(store: &Store, id: RequestId, runs: &Path, failpoints: Option<&str>) -> Option<i32> {
    let mut command = Command::new(child_binary());
    command
        .args([
            store.location().as_ref(),
            id.as_str().as_ref(),
            "pay 1 EUR".as_ref(),
            runs.as_os_str(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match failpoints {
        Some(points) => command.env("FAILPOINTS", points),
        None => command.env_remove("FAILPOINTS"),
    };
    command.status().expect("spawn child").code()
}

fn count_runs(runs: &Path) -> usize {
    std::fs::read_to_string(runs).map_or(0, |text| text.lines().count())
}

/// SIGKILL at every failpoint of `execute_approved` (the lifecycle's and the backend's),
/// 50 times each (`APPROVAL_GATE_CRASH_TRIALS`): after each, recovery, the invariants, and a
/// retry that runs an unspent approval once and refuses a spent one.
pub fn sigkill_at_every_failpoint_never_executes_twice_and_recovers(backend: &dyn Backend) {
    let tmp = tempfile::tempdir().unwrap();
    let trials = trials();
    let points: Vec<&str> = KILL_POINTS
        .iter()
        .chain(backend.kill_points())
        .copied()
        .collect();
    // The children spend their time waiting on fsync; a few at once use the disk better.
    std::thread::scope(|s| {
        for (p, point) in points.iter().enumerate() {
            let root = tmp.path();
            s.spawn(move || {
                for trial in 0..trials {
                    crash_once(backend, &root.join(format!("{p}-{trial}.runs")), point);
                }
            });
        }
    });
}

fn crash_once(backend: &dyn Backend, runs: &Path, point: &str) {
    let store = backend.fresh();
    let gate = store.gate();
    let id = gate
        .request_approval(NewRequest::new("pay 1 EUR", "crash matrix"))
        .unwrap()
        .request
        .id();
    gate.approve(id, &Decision::by("tester")).unwrap();
    drop(gate);

    let code = run_child(&store, id, runs, Some(point));
    assert_eq!(
        code, None,
        "{point}: the child must die by SIGKILL, exited {code:?}"
    );
    let after_crash = invariants::check(backend, &store, id, count_runs(runs));

    let retry = run_child(&store, id, runs, None);
    let runs_now = count_runs(runs);
    if after_crash.claim {
        assert_eq!(
            retry,
            Some(3),
            "{point}: a spent approval must refuse the retry"
        );
    } else {
        assert_eq!(
            retry,
            Some(0),
            "{point}: an unspent approval must still work"
        );
        assert_eq!(runs_now, 1);
    }
    invariants::check(backend, &store, id, runs_now);
}

/// A process that dies inside its closure: the next open records the outcome `unknown`,
/// once, and nothing runs again.
pub fn a_process_that_dies_mid_execution_is_recorded_as_unknown_and_never_rerun(
    backend: &dyn Backend,
) {
    let fx = Subject::new(backend);
    let scratch = tempfile::tempdir().unwrap();
    // The child uses the system clock; give it an approval that is valid now.
    let gate = fx.store.gate();
    let id = gate
        .request_approval(NewRequest::new("wire 100 EUR", "crash test"))
        .unwrap()
        .request
        .id();
    gate.approve(id, &Decision::by("tester")).unwrap();
    let runs = scratch.path().join("runs");
    let status = Command::new(child_binary())
        .args([
            fx.store.location().as_ref(),
            id.as_str().as_ref(),
            "wire 100 EUR".as_ref(),
            runs.as_os_str(),
        ])
        .env("APPROVAL_GATE_CHILD_ABORT", "1")
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the child must have crashed");
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 1);
    assert_eq!(count(&gate, id, AuditEvent::ExecutionStarted), 1);
    assert_eq!(count(&gate, id, AuditEvent::ExecutionFinished), 0);

    // Any later open recovers: outcome unknown, exactly once.
    backend.settle(&fx.store);
    let reopened = fx.store.gate();
    assert_eq!(count(&reopened, id, AuditEvent::ExecutionFinished), 1);
    let last = reopened.audit_records().unwrap().pop().unwrap();
    assert_eq!(last.details["outcome"], "unknown");
    assert!(reopened.recover().unwrap().is_empty());

    // And nothing runs again.
    let retry = Command::new(child_binary())
        .args([
            fx.store.location().as_ref(),
            id.as_str().as_ref(),
            "wire 100 EUR".as_ref(),
            runs.as_os_str(),
        ])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(retry.code(), Some(3), "already consumed");
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 1);
    reopened.verify_audit().unwrap();
}
