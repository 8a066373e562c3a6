//! `approval-gate migrate` killed (SIGKILL) at each of its steps and at every file system
//! operation it makes: each time, the directory holds either the old store untouched or the
//! new one complete; the next run then finishes, and the result is the same as an
//! uninterrupted run's.

use std::path::Path;
use std::process::{Command, Stdio};

use approval_gate::{Clock as _, EffectiveStatus, Gate, RequestId, SystemClock};
use approval_gate_tests::predecessor::{OldStore, snapshot};
use approval_gate_tests::workspace_binary;

const STEPS: &[&str] = &[
    "migrate::before_build",
    "migrate::after_keeping",
    "migrate::after_migrated_line",
    "migrate::after_request",
    "migrate::before_check",
    "migrate::before_swap",
    "migrate::after_swap",
];

const EXPECTED: [EffectiveStatus; 5] = [
    EffectiveStatus::Pending,
    EffectiveStatus::Consumed,
    EffectiveStatus::Denied,
    EffectiveStatus::Expired,
    EffectiveStatus::Expired,
];

fn run(dir: &Path, failpoints: Option<&str>) -> Option<i32> {
    let mut command = Command::new(workspace_binary("approval-gate-migrate"));
    command.arg(dir).stdout(Stdio::null()).stderr(Stdio::null());
    match failpoints {
        Some(points) => command.env("FAILPOINTS", points),
        None => command.env_remove("FAILPOINTS"),
    };
    command.status().unwrap().code()
}

/// The new store, complete: every request where an uninterrupted run puts it, the chain whole,
/// nothing stray.
fn assert_complete(dir: &Path, what: &str) {
    let gate = Gate::open(dir).unwrap_or_else(|e| panic!("{what}: {e}"));
    for (n, expected) in (1..=5).zip(EXPECTED) {
        let id = RequestId::parse(&format!("a0000000000{n}")).unwrap();
        let status = gate.status(id).unwrap().effective_status();
        assert_eq!(status, expected, "{what}: {id}");
    }
    gate.verify_audit()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let health = gate.check_health().unwrap();
    assert!(health.is_healthy(), "{what}: {health:?}");
}

/// Kills the migration with `failpoints`, checks what it left, runs it again and checks the
/// result. Returns whether the kill happened (the child did not finish on its own).
fn trial(failpoints: &str) -> bool {
    let tmp = tempfile::tempdir().unwrap();
    let now = SystemClock.now().unix_millis() - 60_000;
    let store = OldStore::sample(&tmp.path().join("gate"), now);
    let old = snapshot(&store.root);
    let killed = match run(&store.root, Some(failpoints)) {
        Some(0) => false,
        None => true,
        other => panic!("{failpoints}: exited {other:?}"),
    };
    if killed && snapshot(&store.root) == old {
        // Untouched: still refused as their store by everything of ours.
        assert!(Gate::open(&store.root).is_err(), "{failpoints}");
    } else {
        assert_complete(&store.root, failpoints);
    }
    assert_eq!(
        run(&store.root, None),
        Some(0),
        "{failpoints}: the next run"
    );
    assert_complete(&store.root, failpoints);
    let names: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        ["gate"],
        "{failpoints}: nothing left beside the store"
    );
    for (path, _, bytes) in old.iter().filter(|(_, _, bytes)| bytes.is_some()) {
        let kept = store
            .root
            .join("predecessor")
            .join(path.strip_prefix(&store.root).unwrap());
        assert_eq!(
            &std::fs::read(&kept).ok(),
            bytes,
            "{failpoints}: {}",
            kept.display()
        );
    }
    killed
}

#[test]
fn a_migration_killed_at_any_step_leaves_the_old_store_or_the_new_one_and_the_next_run_finishes() {
    for step in STEPS {
        assert!(trial(&format!("{step}=return(kill)")), "{step} was reached");
    }
}

/// Every how many file system operations a kill lands: 7 by default, so that the run stays
/// short (the new store's 256 lock files are most of its ~300 operations, all alike);
/// `APPROVAL_GATE_MIGRATE_CRASH_STRIDE=1` kills at each one (about three minutes).
fn stride() -> usize {
    std::env::var("APPROVAL_GATE_MIGRATE_CRASH_STRIDE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(7)
}

#[test]
fn a_migration_killed_at_every_file_system_operation_leaves_the_old_store_or_the_new_one() {
    let mut operations = 0;
    while trial(&format!("fs::op={operations}*off->return(kill)")) {
        operations += stride();
        assert!(operations < 10_000, "the migration never finished");
    }
    // It did some: the kill landed at each of them.
    assert!(operations > 20, "{operations}");
}
