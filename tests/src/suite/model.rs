//! Model-based test: random sequences of request, approve, deny, revoke, consume, execute,
//! clock advance, archive and reopen, checked step by step against a small reference model
//! of docs/authorization-states.md.

use std::time::Duration;

use approval_gate::{
    AuditEvent, Binding, Decision, EffectiveStatus, Error, Gate, Grant, Limits, ManualClock,
    NewRequest, RequestId, Timestamp,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::backend::{Backend, Store};

const ACTIONS: [&str; 3] = ["send mail", "delete repo", "pay invoice"];
const TTLS: [Duration; 3] = [
    Duration::from_secs(10),
    Duration::from_secs(60),
    Duration::from_secs(3600),
];
const STEPS: [Duration; 5] = [
    Duration::from_millis(1),
    Duration::from_secs(5),
    Duration::from_secs(61),
    Duration::from_secs(3601),
    Duration::from_secs(9 * 24 * 3600),
];
const DAY_MS: i64 = 24 * 3600 * 1000;

#[derive(Debug, Clone)]
enum Op {
    Request { action: usize, ttl: usize },
    Approve(usize),
    Deny(usize),
    Revoke(usize),
    Consume { target: usize, exact: bool },
    Execute(usize),
    Advance(usize),
    Archive(u32),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..ACTIONS.len(), 0..TTLS.len()).prop_map(|(action, ttl)| Op::Request { action, ttl }),
        3 => any::<usize>().prop_map(Op::Approve),
        1 => any::<usize>().prop_map(Op::Deny),
        1 => any::<usize>().prop_map(Op::Revoke),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(target, exact)| Op::Consume { target, exact }),
        2 => any::<usize>().prop_map(Op::Execute),
        2 => (0..STEPS.len()).prop_map(Op::Advance),
        1 => prop_oneof![Just(0u32), Just(8), Just(30)].prop_map(Op::Archive),
        1 => Just(Op::Reopen),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Pending,
    Approved,
    Denied,
    Expired,
    Revoked,
}

#[derive(Debug)]
struct Req {
    id: RequestId,
    action: usize,
    created: i64,
    expires: i64,
    status: St,
    claimed: bool,
    archived: bool,
    runs: usize,
}

impl Req {
    /// Records the expiry of a pending request past it, as the gate does on any touch.
    fn touch(&mut self, now: i64) {
        if self.status == St::Pending && now > self.expires {
            self.status = St::Expired;
        }
    }

    fn effective(&self, now: i64) -> EffectiveStatus {
        match self.status {
            St::Pending if now > self.expires => EffectiveStatus::Expired,
            St::Pending => EffectiveStatus::Pending,
            St::Approved if self.claimed => EffectiveStatus::Consumed,
            St::Approved if now > self.expires => EffectiveStatus::ApprovedExpired,
            St::Approved => EffectiveStatus::ApprovedUnconsumed,
            St::Denied => EffectiveStatus::Denied,
            St::Expired => EffectiveStatus::Expired,
            St::Revoked => EffectiveStatus::Revoked,
        }
    }

    /// The model's answer to a consume with the exact (or a wrong) binding.
    fn consume(&mut self, now: i64, exact: bool) -> Result<(), &'static str> {
        if self.archived {
            return Err("archived");
        }
        self.touch(now);
        match self.status {
            St::Pending => Err("not_approved"),
            St::Denied => Err("denied"),
            St::Expired => Err("expired"),
            St::Revoked => Err("revoked"),
            St::Approved if self.claimed => Err("already_consumed"),
            St::Approved if now > self.expires => Err("approval_expired"),
            St::Approved if !exact => Err("action_mismatch"),
            St::Approved => {
                self.claimed = true;
                Ok(())
            }
        }
    }

    fn decide(&mut self, now: i64, to: St) -> Result<(), &'static str> {
        if self.archived {
            return Err("archived");
        }
        self.touch(now);
        let current = self.effective(now);
        let allowed = match to {
            St::Revoked => matches!(
                current,
                EffectiveStatus::ApprovedUnconsumed | EffectiveStatus::ApprovedExpired
            ),
            _ => current == EffectiveStatus::Pending,
        };
        if allowed {
            self.status = to;
            Ok(())
        } else if current == EffectiveStatus::Expired && to != St::Revoked {
            Err("expired")
        } else {
            Err("wrong_state")
        }
    }
}

fn code<T>(result: &Result<T, Error>) -> Result<(), &'static str> {
    match result {
        Ok(_) => Ok(()),
        Err(e) => Err(e.code().as_str()),
    }
}

fn pick(reqs: &mut [Req], i: usize) -> Option<&mut Req> {
    let n = reqs.len();
    if n == 0 { None } else { reqs.get_mut(i % n) }
}

/// The real gate and the model, side by side.
struct Harness {
    store: Store,
    clock: ManualClock,
    gate: Gate,
    reqs: Vec<Req>,
}

impl Harness {
    fn new(backend: &dyn Backend) -> Self {
        let store = backend.fresh_for_logic();
        let clock = ManualClock::new(Timestamp::from_unix_millis(1_796_000_000_000));
        let gate = store.open(Some(clock.clone()), Limits::default());
        Self {
            store,
            clock,
            gate,
            reqs: Vec::new(),
        }
    }

    fn step(&mut self, step: usize, op: &Op) {
        let now = self.clock.now_millis();
        let gate = &self.gate;
        match op {
            Op::Request { action, ttl } => self.request(step, now, *action, *ttl),
            Op::Approve(i) | Op::Deny(i) | Op::Revoke(i) => {
                let Some(r) = pick(&mut self.reqs, *i) else {
                    return;
                };
                let (to, real) = match op {
                    Op::Approve(_) => (St::Approved, gate.approve(r.id, &Decision::by("m"))),
                    Op::Deny(_) => (St::Denied, gate.deny(r.id, &Decision::by("m"))),
                    _ => (St::Revoked, gate.revoke(r.id, &Decision::by("m"))),
                };
                assert_eq!(
                    code(&real),
                    r.decide(now, to),
                    "step {step}: {op:?} on {r:?}"
                );
            }
            Op::Consume { target, exact } => {
                let Some(r) = pick(&mut self.reqs, *target) else {
                    return;
                };
                let action = if *exact {
                    ACTIONS[r.action]
                } else {
                    "something else"
                };
                let real = gate.consume::<()>(r.id, &Binding::new(action));
                assert_eq!(
                    code(&real),
                    r.consume(now, *exact),
                    "step {step}: {op:?} on {r:?}"
                );
            }
            Op::Execute(i) => {
                let Some(r) = pick(&mut self.reqs, *i) else {
                    return;
                };
                let mut ran = 0;
                let real = gate.execute_approved(
                    r.id,
                    &Binding::new(ACTIONS[r.action]),
                    |_: &Grant<()>| {
                        ran += 1;
                        Ok::<_, Error>(())
                    },
                );
                let expected = r.consume(now, true);
                assert_eq!(code(&real), expected, "step {step}: {op:?} on {r:?}");
                r.runs += ran;
                assert!(r.runs <= 1, "step {step}: executed twice");
                assert_eq!(ran, usize::from(expected.is_ok()));
            }
            Op::Advance(k) => self.clock.advance(STEPS[*k]),
            Op::Archive(days) => self.archive(step, now, *days),
            Op::Reopen => {
                self.gate = self.store.open(Some(self.clock.clone()), Limits::default());
            }
        }
    }

    fn request(&mut self, step: usize, now: i64, action: usize, ttl: usize) {
        for r in &mut self.reqs {
            if !r.archived {
                r.touch(now);
            }
        }
        let existing = self
            .reqs
            .iter()
            .find(|r| !r.archived && r.action == action && r.status == St::Pending);
        let submitted = self
            .gate
            .request_approval(NewRequest::new(ACTIONS[action], "model").ttl(TTLS[ttl]))
            .unwrap();
        if let Some(existing) = existing {
            assert!(
                submitted.deduplicated,
                "step {step}: expected de-duplication"
            );
            assert_eq!(submitted.request.id(), existing.id);
        } else {
            assert!(!submitted.deduplicated, "step {step}");
            let ttl_ms = i64::try_from(TTLS[ttl].as_millis()).unwrap();
            self.reqs.push(Req {
                id: submitted.request.id(),
                action,
                created: now,
                expires: now + ttl_ms,
                status: St::Pending,
                claimed: false,
                archived: false,
                runs: 0,
            });
        }
    }

    fn archive(&mut self, step: usize, now: i64, days: u32) {
        let created_cutoff = now - i64::from(days.max(8)) * DAY_MS;
        let expired_cutoff = now - 8 * DAY_MS;
        let mut expected: Vec<RequestId> = Vec::new();
        for r in &mut self.reqs {
            if !r.archived && r.created <= created_cutoff && r.expires <= expired_cutoff {
                r.touch(now);
                r.archived = true;
                expected.push(r.id);
            }
        }
        let mut archived = self.gate.archive(days).unwrap().archived;
        archived.sort();
        expected.sort();
        assert_eq!(archived, expected, "step {step}: archive");
    }

    /// Every request reads as the model says.
    fn check(&self, step: usize) {
        let now = self.clock.now_millis();
        for r in &self.reqs {
            match self.gate.status(r.id) {
                Ok(report) => {
                    assert!(!r.archived, "step {step}: archived request still live");
                    assert_eq!(
                        report.effective_status(),
                        r.effective(now),
                        "step {step}: {r:?}"
                    );
                    assert!(!report.authorizes_execution());
                }
                Err(Error::Archived(_)) => assert!(r.archived, "step {step}: {r:?}"),
                Err(e) => panic!("step {step}: status of {r:?}: {e}"),
            }
        }
    }

    /// The audit trail agrees: one `consumed` line per claim, starts only for real runs.
    fn check_audit(&self) {
        let records = self.gate.audit_records().unwrap();
        for r in &self.reqs {
            let count = |event| {
                records
                    .iter()
                    .filter(|x| x.id == r.id && x.event == event)
                    .count()
            };
            assert_eq!(count(AuditEvent::Consumed), usize::from(r.claimed), "{r:?}");
            assert_eq!(count(AuditEvent::ExecutionStarted), r.runs, "{r:?}");
            assert_eq!(count(AuditEvent::ExecutionFinished), r.runs, "{r:?}");
        }
        self.gate.verify_audit().unwrap();
        assert!(self.gate.recover().unwrap().is_empty());
    }
}

fn run(backend: &dyn Backend, ops: &[Op]) {
    let mut harness = Harness::new(backend);
    for (step, op) in ops.iter().enumerate() {
        harness.step(step, op);
        harness.check(step);
    }
    harness.check_audit();
}

trait NowMillis {
    fn now_millis(&self) -> i64;
}

impl NowMillis for ManualClock {
    fn now_millis(&self) -> i64 {
        approval_gate::Clock::now(self).unix_millis()
    }
}

/// Random sequences of up to 40 operations (`APPROVAL_GATE_MODEL_CASES` of them, by default
/// the backend's [`model_cases`](Backend::model_cases)), each checked against the model step
/// by step, shrunk to the shortest failing one.
pub fn the_gate_behaves_like_the_state_machine(backend: &dyn Backend) {
    let cases = std::env::var("APPROVAL_GATE_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| backend.model_cases());
    let mut runner = TestRunner::new(Config {
        cases,
        max_shrink_iters: 2000,
        // Failing sequences are saved next to this file and replayed first next time.
        source_file: Some(file!()),
        ..Config::default()
    });
    let result = runner.run(&prop::collection::vec(op(), 1..40), |ops| {
        run(backend, &ops);
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}
