//! SIGKILL at every failpoint of `execute_approved`, many times each, in a child process;
//! then recovery, the invariants, and a retry that must never run a second time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use approval_gate::{Decision, Gate, NewRequest, RequestId};

use crate::invariants;

fn child_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_approval-gate-child"))
}

/// Failpoint configurations that kill the child at each step. Audit points are hit by
/// several appends on the way (`consumed`, `execution_started`, `execution_finished`), so
/// each occurrence gets its own entry.
const KILL_POINTS: &[&str] = &[
    "consume::before_claim=return(kill)",
    "fs::create_exclusive::before_sync=return(kill)",
    "fs::create_exclusive::before_dir_sync=return(kill)",
    "consume::after_claim=return(kill)",
    "audit::before_write=return(kill)",
    "audit::before_sync=return(kill)",
    "audit::before_head=return(kill)",
    "consume::after_consumed_line=return(kill)",
    "consume::before_expiry_recheck=return(kill)",
    "execute::before_started=return(kill)",
    "audit::before_write=1*off->return(kill)",
    "audit::before_sync=1*off->return(kill)",
    "audit::before_head=1*off->return(kill)",
    "execute::after_started=return(kill)",
    "execute::before_closure=return(kill)",
    "execute::after_closure=return(kill)",
    "audit::before_write=2*off->return(kill)",
    "audit::before_sync=2*off->return(kill)",
    "audit::before_head=2*off->return(kill)",
];

/// Trials per kill point. `APPROVAL_GATE_CRASH_TRIALS` raises it for a longer run.
fn trials() -> usize {
    std::env::var("APPROVAL_GATE_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50)
}

fn run_child(dir: &Path, id: RequestId, runs: &Path, failpoints: Option<&str>) -> Option<i32> {
    let mut command = Command::new(child_binary());
    command
        .args([
            dir.as_os_str(),
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

#[test]
fn sigkill_at_every_failpoint_never_executes_twice_and_recovers() {
    // Keeps the in-process fault tests (which configure global failpoints) out meanwhile.
    let _scenario = fail::FailScenario::setup();
    let tmp = tempfile::tempdir().unwrap();
    let trials = trials();
    // The children spend their time waiting on fsync; a few at once use the disk better.
    std::thread::scope(|s| {
        for (p, point) in KILL_POINTS.iter().enumerate() {
            let root = tmp.path();
            s.spawn(move || {
                for trial in 0..trials {
                    crash_once(&root.join(format!("{p}-{trial}")), point);
                }
            });
        }
    });
}

fn crash_once(dir: &Path, point: &str) {
    let gate = Gate::open(dir).unwrap();
    let id = gate
        .request_approval(NewRequest::new("pay 1 EUR", "crash matrix"))
        .unwrap()
        .request
        .id();
    gate.approve(id, &Decision::by("tester")).unwrap();
    drop(gate);
    let runs = dir.with_extension("runs");

    let code = run_child(dir, id, &runs, Some(point));
    assert_eq!(
        code, None,
        "{point}: the child must die by SIGKILL, exited {code:?}"
    );
    let after_crash = invariants::check(dir, id, count_runs(&runs));

    let retry = run_child(dir, id, &runs, None);
    let runs_now = count_runs(&runs);
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
    invariants::check(dir, id, runs_now);
    std::fs::remove_dir_all(dir).unwrap();
}
