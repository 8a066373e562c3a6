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
///
/// The 64 processes start once, each opening the store (`approval-gate-child --serve`); each
/// trial hands all of them the same approval at once and collects their 64 answers.
pub fn sixty_four_processes_race_to_execute_one_approval_and_exactly_one_runs(
    backend: &dyn Backend,
) {
    const PROCESSES: usize = 64;
    const TRIALS: usize = 100;
    let tmp = tempfile::tempdir().unwrap();
    let store = backend.fresh();
    let gate = store.gate();
    let payload = r#"{"to":"alice@example.com","cents":100}"#;
    let mut children: Vec<Server> = (0..PROCESSES)
        .map(|_| Server::start(store.location(), "pay", payload))
        .collect();
    for child in &mut children {
        assert_eq!(child.answer(), "ready", "a child opened the store");
    }
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
        let order = format!("{id}\t{action}\t{}\n", runs.display());
        for child in &mut children {
            child.send(&order);
        }
        let mut winners = 0;
        for child in &mut children {
            match child.answer().as_str() {
                "0" => winners += 1,
                "3" => {}
                other => panic!("trial {trial}: a child answered {other:?}"),
            }
        }
        let executions = std::fs::read_to_string(&runs)
            .unwrap_or_default()
            .lines()
            .count();
        assert_eq!(winners, 1, "trial {trial}: winners");
        assert_eq!(executions, 1, "trial {trial}: closure runs");
        // This trial's lines, read once (the chain grows by 66 a trial).
        let lines = gate.audit_records().unwrap();
        let count = |event| {
            lines
                .iter()
                .filter(|r| r.id == id && r.event == event)
                .count()
        };
        assert_eq!(
            count(AuditEvent::Consumed),
            1,
            "trial {trial}: consumed lines"
        );
        assert_eq!(count(AuditEvent::ExecutionStarted), 1);
        assert_eq!(count(AuditEvent::ConsumeReplayed), PROCESSES - 1);
    }
    for child in children {
        child.finish();
    }
    gate.verify_audit().unwrap();
}

/// One `approval-gate-child --serve` process.
struct Server {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: std::io::BufReader<std::process::ChildStdout>,
}

impl Server {
    fn start(store: &str, operation: &str, payload: &str) -> Self {
        let mut child = Command::new(child_binary())
            .arg("--serve")
            .arg(store)
            .args([operation, payload])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn child");
        let input = child.stdin.take().expect("piped stdin");
        let output = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
        Self {
            child,
            input,
            output,
        }
    }

    fn send(&mut self, line: &str) {
        use std::io::Write as _;
        self.input
            .write_all(line.as_bytes())
            .expect("write to a child");
        self.input.flush().expect("flush to a child");
    }

    /// Its next line, without the newline.
    fn answer(&mut self) -> String {
        use std::io::BufRead as _;
        let mut line = String::new();
        self.output.read_line(&mut line).expect("read from a child");
        assert!(line.ends_with('\n'), "a child ended early: {line:?}");
        line.pop();
        line
    }

    fn finish(mut self) {
        drop(self.input);
        let status = self.child.wait().expect("wait for a child");
        assert!(status.success(), "a child exited {status}");
    }
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

/// 16 gates file at the same instant, 10 times each way: the queue cap, the creation limit
/// and de-duplication hold exactly, however the store serialises filings (the directory
/// store locks; the PostgreSQL store files side by side).
pub fn concurrent_filings_keep_the_caps_and_deduplication_exact(backend: &dyn Backend) {
    const GATES: usize = 16;
    const TRIALS: usize = 10;
    /// Files one ask from each of `GATES` gates released together: their outcomes.
    fn file_all(
        backend: &dyn Backend,
        limits: approval_gate::Limits,
        ask: impl Fn(usize) -> NewRequest + Sync,
    ) -> Vec<Result<approval_gate::Submitted, Error>> {
        let store = backend.fresh();
        let gates: Vec<_> = (0..GATES).map(|_| store.open(None, limits)).collect();
        let barrier = Barrier::new(GATES);
        let outcomes = std::thread::scope(|s| {
            let handles: Vec<_> = gates
                .iter()
                .enumerate()
                .map(|(i, gate)| {
                    let (barrier, ask) = (&barrier, &ask);
                    s.spawn(move || {
                        barrier.wait();
                        gate.request_approval(ask(i))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        });
        let live = store
            .gate()
            .list(approval_gate::ListFilter::Pending, None, 100)
            .unwrap()
            .items
            .len();
        let filed = outcomes
            .iter()
            .filter(|o| o.as_ref().is_ok_and(|s| !s.deduplicated))
            .count();
        assert_eq!(live, filed, "every request filed is pending, and no other");
        store.gate().verify_audit().unwrap();
        outcomes
    }
    for trial in 0..TRIALS {
        // Queue cap: 12 of 16 distinct asks get in. (Caps above the PostgreSQL store's
        // margin of 8 filings in flight, so that its filings start side by side and end
        // counting exactly.)
        let outcomes = file_all(
            backend,
            approval_gate::Limits::default().max_pending(12),
            |i| NewRequest::new(format!("ask {i}"), "r"),
        );
        let filed = outcomes.iter().filter(|o| o.is_ok()).count();
        let full = outcomes
            .iter()
            .filter(|o| matches!(o, Err(Error::QueueFull { limit: 12, .. })))
            .count();
        assert_eq!((filed, full), (12, GATES - 12), "trial {trial}: queue cap");
        // Creation limit: 11 of 16.
        let outcomes = file_all(
            backend,
            approval_gate::Limits::default().max_requests(11),
            |i| NewRequest::new(format!("ask {i}"), "r"),
        );
        let filed = outcomes.iter().filter(|o| o.is_ok()).count();
        let limited = outcomes
            .iter()
            .filter(|o| matches!(o, Err(Error::CreationLimit { limit: 11, .. })))
            .count();
        assert_eq!(
            (filed, limited),
            (11, GATES - 11),
            "trial {trial}: creation limit"
        );
        // Sixteen identical asks: one request, fifteen times found.
        let outcomes = file_all(backend, approval_gate::Limits::default(), |_| {
            NewRequest::new("the same ask", "r").requested_by("agent")
        });
        let ids: std::collections::BTreeSet<_> = outcomes
            .iter()
            .map(|o| o.as_ref().unwrap().request.id())
            .collect();
        let fresh = outcomes
            .iter()
            .filter(|o| !o.as_ref().unwrap().deduplicated)
            .count();
        assert_eq!((ids.len(), fresh), (1, 1), "trial {trial}: de-duplication");
    }
}
