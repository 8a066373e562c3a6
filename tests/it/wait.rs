//! Waiting for a decision: it ends promptly on a decision from another thread or process, on
//! expiry with nobody writing, at its timeout, and without a file watcher; its async form
//! runs under tokio's current-thread runtime and can be dropped mid-wait. Arrivals yield each
//! pending request once.
//!
//! The fallback re-read is set a minute away wherever only events may make a test pass in
//! time.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use approval_gate::limits::MIN_TTL;
use approval_gate::{
    Change, Clock, Decision, EffectiveStatus, Error, Gate, NewRequest, RequestId, SystemClock,
    Timestamp, Waited, Watch,
};

/// Far enough that a test finishing in time proves events (or the expiry timer) woke it.
const NO_FALLBACK: Duration = Duration::from_secs(60);
/// "Promptly", with room for a loaded machine.
const PROMPTLY: Duration = Duration::from_secs(10);

fn store() -> (tempfile::TempDir, Gate) {
    let tmp = tempfile::tempdir().unwrap();
    let gate = Gate::open(tmp.path().join("gate")).unwrap();
    (tmp, gate)
}

fn ask(gate: &Gate, action: &str) -> RequestId {
    gate.request_approval(NewRequest::new(action, "wait test"))
        .unwrap()
        .request
        .id()
}

fn watch(gate: &Gate) -> Watch {
    let watch = gate.watcher().fallback(NO_FALLBACK).start();
    assert_eq!(watch.polling(), None, "this machine should have inotify");
    watch
}

/// Runs `decide` on another thread after a moment, so the wait is already blocked.
fn later(gate: &Gate, decide: impl FnOnce(&Gate) + Send + 'static) -> thread::JoinHandle<()> {
    let gate = gate.clone();
    thread::spawn(move || {
        thread::sleep(Duration::from_millis(100));
        decide(&gate);
    })
}

fn decided(waited: Waited) -> EffectiveStatus {
    match waited {
        Waited::Decided(report) => report.effective_status(),
        Waited::TimedOut(report) => panic!("timed out: {report:?}"),
    }
}

#[test]
fn a_decision_from_another_thread_ends_the_wait_promptly() {
    let (_tmp, gate) = store();
    let watch = watch(&gate);
    for (verb, expected) in [
        ("approve", EffectiveStatus::ApprovedUnconsumed),
        ("deny", EffectiveStatus::Denied),
    ] {
        let id = ask(&gate, &format!("thread {verb}"));
        let human = later(&gate, move |gate| {
            let decision = Decision::by("alice");
            match verb {
                "approve" => gate.approve(id, &decision).map(drop).unwrap(),
                _ => gate.deny(id, &decision).map(drop).unwrap(),
            }
        });
        let started = Instant::now();
        let waited = watch
            .wait_for_decision(id, Duration::from_secs(120))
            .unwrap();
        assert!(
            started.elapsed() < PROMPTLY,
            "{verb}: {:?}",
            started.elapsed()
        );
        assert_eq!(decided(waited), expected, "{verb}");
        human.join().unwrap();
    }
}

#[test]
fn a_decision_from_another_process_ends_the_wait_promptly() {
    let (tmp, gate) = store();
    let dir = tmp.path().join("gate");
    let watch = watch(&gate);
    for (verb, expected) in [
        ("approve", EffectiveStatus::ApprovedUnconsumed),
        ("deny", EffectiveStatus::Denied),
    ] {
        let id = ask(&gate, &format!("process {verb}"));
        let human = thread::spawn({
            let dir = dir.clone();
            move || {
                thread::sleep(Duration::from_millis(100));
                decide_elsewhere(&dir, id, verb);
            }
        });
        let started = Instant::now();
        let waited = watch
            .wait_for_decision(id, Duration::from_secs(120))
            .unwrap();
        assert!(
            started.elapsed() < PROMPTLY,
            "{verb}: {:?}",
            started.elapsed()
        );
        assert_eq!(decided(waited), expected, "{verb}");
        human.join().unwrap();
    }
}

fn decide_elsewhere(dir: &std::path::Path, id: RequestId, verb: &str) {
    let status = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_approval-gate-decide")))
        .arg(dir)
        .args([id.as_str(), verb])
        .status()
        .unwrap();
    assert!(status.success(), "approval-gate-decide {verb}: {status}");
}

#[test]
fn a_revocation_in_another_process_is_a_hint_for_its_request() {
    let (tmp, gate) = store();
    let id = ask(&gate, "revoke me");
    let other = ask(&gate, "leave me");
    gate.approve(id, &Decision::by("alice")).unwrap();
    let watch = watch(&gate);
    let mut changes = watch.changes();
    decide_elsewhere(&tmp.path().join("gate"), id, "revoke");
    let deadline = Instant::now() + PROMPTLY;
    loop {
        match changes.next_before(deadline) {
            Some(Change::Request(hinted)) if hinted == id => break,
            Some(Change::Request(hinted)) => assert_ne!(hinted, other),
            Some(other) => panic!("unexpected {other:?}"),
            None => panic!("no hint within {PROMPTLY:?}"),
        }
    }
    // A request that is no longer pending ends a wait at once, revoked.
    let waited = watch.wait_for_decision(id, Duration::ZERO).unwrap();
    assert_eq!(decided(waited), EffectiveStatus::Revoked);
}

/// The system clock moved forward by a settable amount, so a request filed with the
/// shortest time to live can expire within a fraction of a second.
#[derive(Debug, Clone, Default)]
struct AheadClock(Arc<AtomicI64>);

impl Clock for AheadClock {
    fn now(&self) -> Timestamp {
        let ahead = self.0.load(Ordering::SeqCst);
        Timestamp::from_unix_millis(SystemClock.now().unix_millis() + ahead)
    }
}

#[test]
fn expiry_ends_the_wait_just_after_it_with_nobody_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = AheadClock::default();
    let gate = Gate::builder()
        .dir(tmp.path().join("gate"))
        .clock(clock.clone())
        .open()
        .unwrap();
    let request = gate
        .request_approval(NewRequest::new("expire me", "wait test").ttl(MIN_TTL))
        .unwrap()
        .request;
    let (id, expires_at) = (request.id(), request.expires_at().unix_millis());
    let watch = watch(&gate);
    // The gate's clock now reads 400 ms before the expiry, counted from this moment, not
    // from the filing or the watch's start (which a busy machine may have made long ago).
    let ahead = expires_at - 400 - SystemClock.now().unix_millis();
    clock.0.store(ahead, Ordering::SeqCst);
    let started = Instant::now();
    let before = clock.now().unix_millis();
    let waited = watch
        .wait_for_decision(id, Duration::from_secs(120))
        .unwrap();
    let elapsed = started.elapsed();
    let after = clock.now().unix_millis();
    assert_eq!(decided(waited), EffectiveStatus::Expired);
    // It waited, and not past the expiry by the gate's own clock: however slowly this
    // machine ran the set-up, the wait began before the expiry and ended after it.
    assert!(
        before < expires_at,
        "the wait began {before} after the expiry {expires_at}"
    );
    assert!(
        after > expires_at,
        "the wait ended at {after}, before the expiry {expires_at}"
    );
    assert!(elapsed < PROMPTLY, "{elapsed:?}");
    // The wait's own re-read recorded the expiry.
    assert!(
        gate.audit_records()
            .unwrap()
            .iter()
            .any(|r| r.id == id && r.event == approval_gate::AuditEvent::Expired)
    );
}

#[test]
fn at_the_timeout_the_wait_reports_the_request_still_pending() {
    let (_tmp, gate) = store();
    let id = ask(&gate, "nobody decides");
    let watch = watch(&gate);
    let started = Instant::now();
    let waited = watch
        .wait_for_decision(id, Duration::from_millis(300))
        .unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
    assert!(elapsed < PROMPTLY, "{elapsed:?}");
    let Waited::TimedOut(report) = waited else {
        panic!("decided: {waited:?}");
    };
    assert_eq!(report.effective_status(), EffectiveStatus::Pending);
    assert!(!report.authorizes_execution());
}

#[test]
fn without_a_watcher_the_wait_polls_and_still_sees_the_decision() {
    let (_tmp, gate) = store();
    let watch = gate
        .watcher()
        .without_events()
        .fallback(Duration::from_millis(100))
        .start();
    assert!(watch.polling().is_some());
    assert_eq!(watch.fallback(), Duration::from_millis(100));
    let id = ask(&gate, "poll for me");
    let human = later(&gate, move |gate| {
        gate.approve(id, &Decision::by("alice")).unwrap();
    });
    let waited = watch
        .wait_for_decision(id, Duration::from_secs(120))
        .unwrap();
    assert_eq!(decided(waited), EffectiveStatus::ApprovedUnconsumed);
    human.join().unwrap();
    // And a subscription without events still wakes, on the fallback.
    let started = Instant::now();
    assert_eq!(watch.changes().next(), Some(Change::Unknown));
    assert!(started.elapsed() < PROMPTLY);
}

#[test]
fn waits_for_requests_that_are_not_there_fail_closed() {
    let (_tmp, gate) = store();
    let missing = RequestId::parse("a1b2c3d4e5f6").unwrap();
    let result = gate.wait_for_decision(missing, Duration::from_secs(1));
    assert!(
        matches!(result, Err(Error::NotFound(id)) if id == missing),
        "{result:?}"
    );
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

#[test]
fn the_async_wait_runs_on_a_current_thread_runtime() {
    let (_tmp, gate) = store();
    let watch = watch(&gate);
    let id = ask(&gate, "async approve");
    let human = later(&gate, move |gate| {
        gate.approve(id, &Decision::by("alice")).unwrap();
    });
    let runtime = current_thread();
    let (waited, ticks) = runtime.block_on(async {
        // The executor's only thread stays free while the wait blocks elsewhere: this
        // ticker keeps running.
        let mut ticks = 0u32;
        let wait = watch.wait_for_decision_async(id, Duration::from_secs(120));
        tokio::pin!(wait);
        let mut interval = tokio::time::interval(Duration::from_millis(10));
        loop {
            tokio::select! {
                waited = &mut wait => break (waited, ticks),
                _ = interval.tick() => ticks += 1,
            }
        }
    });
    assert_eq!(
        decided(waited.unwrap()),
        EffectiveStatus::ApprovedUnconsumed
    );
    assert!(ticks >= 3, "the runtime was blocked: {ticks} ticks");
    human.join().unwrap();

    // The async timeout answers like the blocking one.
    let id = ask(&gate, "async timeout");
    let waited = runtime
        .block_on(watch.wait_for_decision_async(id, Duration::from_millis(200)))
        .unwrap();
    assert!(
        matches!(&waited, Waited::TimedOut(r) if r.effective_status() == EffectiveStatus::Pending)
    );
}

#[test]
fn a_dropped_async_wait_leaves_the_store_and_later_waits_alone() {
    let (_tmp, gate) = store();
    let watch = watch(&gate);
    let id = ask(&gate, "drop my wait");
    let runtime = current_thread();
    let abandoned = runtime.block_on(async {
        tokio::time::timeout(
            Duration::from_millis(100),
            watch.wait_for_decision_async(id, Duration::from_secs(120)),
        )
        .await
    });
    assert!(
        abandoned.is_err(),
        "the wait ended by itself: {abandoned:?}"
    );
    // Dropped before it was ever polled: nothing starts at all.
    drop(watch.wait_for_decision_async(id, Duration::from_secs(120)));
    assert_eq!(
        gate.status(id).unwrap().effective_status(),
        EffectiveStatus::Pending
    );
    let human = later(&gate, move |gate| {
        gate.deny(id, &Decision::by("alice")).unwrap();
    });
    let waited = runtime
        .block_on(watch.wait_for_decision_async(id, Duration::from_secs(120)))
        .unwrap();
    assert_eq!(decided(waited), EffectiveStatus::Denied);
    human.join().unwrap();
}

#[test]
fn arrivals_yield_each_pending_request_once_and_stop_when_closed() {
    let (_tmp, gate) = store();
    let waiting = ask(&gate, "already waiting");
    let decided_before = ask(&gate, "decided before");
    gate.deny(decided_before, &Decision::by("alice")).unwrap();
    let watch = watch(&gate);
    let mut arrivals = watch.arrivals();
    let closer = arrivals.closer();
    let first = arrivals.next().unwrap().unwrap();
    assert_eq!(first.id(), waiting);
    let asker = later(&gate, move |gate| {
        ask(gate, "new one");
        // A decision on the first request is a hint too, and must not yield it again.
        gate.approve(waiting, &Decision::by("alice")).unwrap();
    });
    let started = Instant::now();
    let second = arrivals.next().unwrap().unwrap();
    assert!(started.elapsed() < PROMPTLY);
    assert_eq!(second.report().unwrap().request().action(), "new one");
    asker.join().unwrap();
    let stopper = thread::spawn(move || {
        thread::sleep(Duration::from_millis(100));
        closer.close();
    });
    assert!(arrivals.next().is_none(), "nothing else arrived");
    stopper.join().unwrap();
}
