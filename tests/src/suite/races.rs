//! Races between processes and threads: every one has exactly one winner.

use std::process::{Command, Stdio};
use std::sync::Barrier;
use std::time::Duration;

use approval_gate::{AuditEvent, Decision, EffectiveStatus, Error, Grant, NewRequest, Status};

use super::count;
use crate::backend::Backend;
use crate::{Subject, binding, child_binary};

/// 64 processes race to execute one approval, 100 times: exactly one closure runs, one
/// `consumed` line, 63 `consume_replayed`.
pub fn sixty_four_processes_race_to_execute_one_approval_and_exactly_one_runs(
    backend: &dyn Backend,
) {
    const PROCESSES: usize = 64;
    const TRIALS: usize = 100;
    let tmp = tempfile::tempdir().unwrap();
    let store = backend.fresh();
    let gate = store.gate();
    let child = child_binary();
    let payload = r#"{"to":"alice@example.com","cents":100}"#;
    for trial in 0..TRIALS {
        let action = format!("pay alice, trial {trial}");
        let submitted = gate
            .request_approval(
                NewRequest::new(&action, "race")
                    .operation("pay")
                    .payload(approval_gate::CanonicalPayload::from_json_text(payload).unwrap()),
            )
            .unwrap();
        let id = submitted.request.id();
        gate.approve(id, &Decision::by("tester")).unwrap();
        let runs = tmp.path().join(format!("runs-{trial}"));
        let children: Vec<_> = (0..PROCESSES)
            .map(|_| {
                Command::new(&child)
                    .args([
                        store.location().as_ref(),
                        id.as_str().as_ref(),
                        action.as_ref(),
                        runs.as_os_str(),
                    ])
                    .args(["pay", payload])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn child")
            })
            .collect();
        let mut winners = 0;
        for child in children {
            let out = child.wait_with_output().unwrap();
            match out.status.code() {
                Some(0) => winners += 1,
                Some(3) => {}
                other => panic!(
                    "trial {trial}: child exited {other:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ),
            }
        }
        let executions = std::fs::read_to_string(&runs)
            .unwrap_or_default()
            .lines()
            .count();
        assert_eq!(winners, 1, "trial {trial}: winners");
        assert_eq!(executions, 1, "trial {trial}: closure runs");
        assert_eq!(
            count(&gate, id, AuditEvent::Consumed),
            1,
            "trial {trial}: consumed lines"
        );
        assert_eq!(count(&gate, id, AuditEvent::ExecutionStarted), 1);
        assert_eq!(count(&gate, id, AuditEvent::ConsumeReplayed), PROCESSES - 1);
    }
    gate.verify_audit().unwrap();
}

/// Runs `a` and `b` on two threads released at the same instant.
fn race<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let barrier = Barrier::new(2);
    std::thread::scope(|s| {
        let ha = s.spawn(|| {
            barrier.wait();
            a()
        });
        let hb = s.spawn(|| {
            barrier.wait();
            b()
        });
        (ha.join().unwrap(), hb.join().unwrap())
    })
}

const TRIALS: usize = 150;

/// Approve and deny at the same instant, 150 times: one wins, one line records it.
pub fn approve_versus_deny_has_one_winner(backend: &dyn Backend) {
    for _ in 0..TRIALS {
        let fx = Subject::new(backend);
        let id = fx.ask("a", None, None);
        let (approved, denied) = race(
            || fx.gate.approve(id, &Decision::by("alice")),
            || fx.gate.deny(id, &Decision::by("bob")),
        );
        assert!(
            approved.is_ok() != denied.is_ok(),
            "{approved:?} / {denied:?}"
        );
        let status = fx.gate.status(id).unwrap().request().status();
        assert_eq!(
            status,
            if approved.is_ok() {
                Status::Approved
            } else {
                Status::Denied
            }
        );
        let decisions =
            count(&fx.gate, id, AuditEvent::Approved) + count(&fx.gate, id, AuditEvent::Denied);
        assert_eq!(decisions, 1);
    }
}

/// Revoke and execute at the same instant, 150 times: never both.
pub fn revoke_versus_execute_never_both(backend: &dyn Backend) {
    let mut outcomes = [0usize; 2];
    for _ in 0..TRIALS {
        let fx = Subject::new(backend);
        let id = fx.approved("a", None, None);
        let b = binding("a", None, None);
        let (revoked, executed) = race(
            || fx.gate.revoke(id, &Decision::by("alice")),
            || {
                fx.gate
                    .execute_approved(id, &b, |_: &Grant<()>| Ok::<_, Error>(()))
            },
        );
        match (&revoked, &executed) {
            (Ok(_), Err(Error::Revoked(_))) => outcomes[0] += 1,
            (
                Err(Error::WrongState {
                    status: EffectiveStatus::Consumed,
                    ..
                }),
                Ok(()),
            ) => outcomes[1] += 1,
            other => panic!("two winners or none: {other:?}"),
        }
        let revoke_lines = count(&fx.gate, id, AuditEvent::Revoked);
        let start_lines = count(&fx.gate, id, AuditEvent::ExecutionStarted);
        assert_eq!(
            revoke_lines + start_lines,
            1,
            "history has both a revoke and an execution, or neither"
        );
    }
    assert_eq!(outcomes.iter().sum::<usize>(), TRIALS);
}

/// A consume as the approval expires, 150 times: spent with its `consumed` line, or not
/// spent and no line.
pub fn expiry_versus_consume_has_one_consistent_outcome(backend: &dyn Backend) {
    for _ in 0..TRIALS {
        let fx = Subject::new(backend);
        let id = fx.approved("a", None, None);
        fx.advance(Duration::from_secs(3600) - Duration::from_millis(1));
        let b = binding("a", None, None);
        let clock = fx.clock.clone();
        let (consumed, ()) = race(
            || fx.gate.consume::<()>(id, &b),
            || clock.advance(Duration::from_millis(2)),
        );
        let claim = backend.claimed(&fx.store, id);
        assert_eq!(
            fx.gate.status(id).unwrap().effective_status() == EffectiveStatus::Consumed,
            claim,
            "the gate and the backend agree on the claim"
        );
        let consumed_lines = count(&fx.gate, id, AuditEvent::Consumed);
        match consumed {
            Ok(_grant) => assert!(claim && consumed_lines == 1),
            Err(Error::ExpiredDuringConsume { .. }) => {
                assert!(claim && consumed_lines == 1, "spent");
            }
            Err(Error::ApprovalExpired { .. }) => {
                assert!(!claim && consumed_lines == 0, "not spent");
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
        // Whatever happened, the approval cannot be used now.
        assert!(fx.gate.consume::<()>(id, &b).is_err());
    }
}

/// An approval as the request expires, 150 times: approved or expired, one line.
pub fn approve_versus_expiry_has_one_outcome(backend: &dyn Backend) {
    for _ in 0..TRIALS {
        let fx = Subject::new(backend);
        let id = fx.ask("a", None, None);
        fx.advance(Duration::from_secs(3600) - Duration::from_millis(1));
        let clock = fx.clock.clone();
        let (approved, ()) = race(
            || fx.gate.approve(id, &Decision::by("alice")),
            || clock.advance(Duration::from_millis(2)),
        );
        let status = fx.gate.status(id).unwrap().request().status();
        match approved {
            Ok(_) => assert_eq!(status, Status::Approved),
            Err(Error::Expired(_)) => assert_eq!(status, Status::Expired),
            Err(other) => panic!("unexpected {other:?}"),
        }
        let decisions =
            count(&fx.gate, id, AuditEvent::Approved) + count(&fx.gate, id, AuditEvent::Expired);
        assert_eq!(decisions, 1);
    }
}
