//! Allowances under load and attack (issue 41): concurrent uses never exceed the count or
//! the budget, the rate and the window hold at their edges, a revocation racing a use has
//! one winner, and every forgery of the kept record is refused at the consume with its
//! reason.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use approval_gate::{AuditEvent, Decision, ErrorCode, Gate, RequestId, Status, Timestamp};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;

use super::allowances::{Team, gate as open_gate, signed, terms};
use super::allowed::{consume, file};
use crate::T0;
use crate::backend::Backend;

fn payload(n: usize, amount: u64) -> String {
    format!(r#"{{"amount":{amount},"to":"user{n}@example.com"}}"#)
}

/// Consumes every filed `(id, payload)` at once, one thread each; the codes (`None` for a
/// use that ran), in the order given.
fn race(gate: &Gate, filed: &[(RequestId, String)]) -> Vec<Option<ErrorCode>> {
    let barrier = Arc::new(Barrier::new(filed.len()));
    let handles: Vec<_> = filed
        .iter()
        .cloned()
        .map(|(id, payload)| {
            let gate = gate.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                consume(&gate, id, &payload).err().map(|e| e.code())
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("a consumer"))
        .collect()
}

fn consumed_under(gate: &Gate, allowance: RequestId) -> usize {
    gate.audit_records()
        .expect("records")
        .iter()
        .filter(|r| r.event == AuditEvent::Consumed && r.details["allowance"] == allowance.as_str())
        .count()
}

/// 64 requests an allowance of 5 uses approved, consumed at once: exactly 5 run, the others
/// are refused as exhausted and spend nothing.
pub fn sixty_four_concurrent_consumes_under_five_uses_run_exactly_five(backend: &dyn Backend) {
    let team = Team::new();
    let (_store, gate, _clock) = open_gate(backend, Some(team.policy()));
    let mut five = terms("mail.send");
    five.bounds.uses = Some(5);
    five.bounds.budget = None;
    let aid = gate
        .allow(signed(five, 1, &[&team.alice]))
        .expect("granted")
        .allowance
        .allowance
        .id();
    let filed: Vec<_> = (0..64)
        .map(|n| {
            let payload = payload(n, 1);
            let request = file(&gate, &payload);
            assert_eq!(request.allowance(), Some(aid), "filed while uses were left");
            (request.id(), payload)
        })
        .collect();
    let outcomes = race(&gate, &filed);
    assert_eq!(outcomes.iter().filter(|o| o.is_none()).count(), 5);
    assert!(
        outcomes
            .iter()
            .flatten()
            .all(|code| *code == ErrorCode::AllowanceExhausted),
        "{outcomes:?}"
    );
    assert_eq!(gate.allowance(aid).expect("it").usage.uses, 5);
    assert_eq!(consumed_under(&gate, aid), 5);
    gate.verify_audit().expect("the chain verifies");
}

/// Random amounts under a budget, consumed at once: what ran never adds up to more than the
/// budget, the store counts exactly what ran, and every refused amount would have overdrawn
/// it. Few cases, each on a fresh store, so the suite stays fast.
pub fn a_budget_is_never_overdrawn_by_concurrent_uses(backend: &dyn Backend) {
    let team = Team::new();
    let mut runner = TestRunner::new(Config {
        cases: 4,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(1u64..=5000, 2..10), |amounts| {
            let (_store, gate, _clock) = open_gate(backend, Some(team.policy()));
            let mut budget = terms("mail.send");
            budget.bounds.uses = None;
            let total = 10_000u64;
            let aid = gate
                .allow(signed(budget, 1, &[&team.alice]))
                .expect("granted")
                .allowance
                .allowance
                .id();
            let filed: Vec<_> = amounts
                .iter()
                .enumerate()
                .map(|(n, &amount)| {
                    let payload = payload(n, amount);
                    (file(&gate, &payload).id(), payload)
                })
                .collect();
            let outcomes = race(&gate, &filed);
            let ran: u64 = amounts
                .iter()
                .zip(&outcomes)
                .filter(|(_, o)| o.is_none())
                .map(|(a, _)| a)
                .sum();
            prop_assert!(ran <= total, "{ran} of {total}: {amounts:?} {outcomes:?}");
            let spent = gate.allowance(aid).expect("it").usage.spent;
            prop_assert_eq!(spent, ran);
            for (amount, outcome) in amounts.iter().zip(&outcomes) {
                if let Some(code) = outcome {
                    prop_assert_eq!(*code, ErrorCode::AllowanceExhausted);
                    prop_assert!(spent + amount > total, "{amount} would have fit");
                }
            }
            Ok(())
        })
        .expect("never overdrawn");
}

/// A rate of 2 a minute: a third use within the minute of the first is refused, and fits
/// exactly when the first falls out of it. A window: not covered a moment before it opens,
/// covered as it opens, usable at its last moment and not a millisecond after.
pub fn the_rate_and_the_window_hold_at_their_edges(backend: &dyn Backend) {
    let team = Team::new();
    let (_store, gate, clock) = open_gate(backend, Some(team.policy()));
    let mut rated = terms("mail.send");
    rated.bounds.uses = None;
    rated.bounds.budget = None;
    rated.bounds.rate = Some(approval_gate::allowance::Rate {
        count: 2,
        period: Duration::from_secs(60),
    });
    gate.allow(signed(rated, 1, &[&team.alice]))
        .expect("granted");
    let filed: Vec<_> = (0..3)
        .map(|n| {
            let payload = payload(n, 1);
            (file(&gate, &payload).id(), payload)
        })
        .collect();
    let use_one = |(id, payload): &(RequestId, String)| consume(&gate, *id, payload);
    let _first = use_one(&filed[0]).expect("first");
    clock.advance(Duration::from_secs(10));
    let _second = use_one(&filed[1]).expect("second");
    clock.set(T0.saturating_add(Duration::from_millis(59_999)));
    let refused = use_one(&filed[2]).expect_err("a third within the minute");
    assert_eq!(refused.code(), ErrorCode::AllowanceExhausted, "{refused}");
    clock.set(T0.saturating_add(Duration::from_secs(60)));
    let _third = use_one(&filed[2]).expect("the first use fell out of the minute");

    // The window, on an allowance made at T0 that opens ten minutes later and lasts ten.
    let (_store, gate, clock) = gate_at(backend, &team);
    let opens = T0.saturating_add(Duration::from_secs(600));
    let closes = T0.saturating_add(Duration::from_secs(1200));
    let mut later = terms("mail.send");
    later.bounds.not_before = opens;
    later.bounds.not_after = closes;
    gate.allow(signed(later, 1, &[&team.alice]))
        .expect("granted before it opens");
    clock.set(Timestamp::from_unix_millis(opens.unix_millis() - 1));
    assert_eq!(file(&gate, &payload(0, 1)).status(), Status::Pending);
    clock.set(opens);
    let at_open = payload(1, 1);
    let request = file(&gate, &at_open);
    assert_eq!(request.status(), Status::Approved, "covered as it opens");
    let last = payload(2, 1);
    let last_request = file(&gate, &last);
    clock.set(closes);
    let _at_end = consume(&gate, request.id(), &at_open).expect("usable at its last moment");
    clock.set(Timestamp::from_unix_millis(closes.unix_millis() + 1));
    let refused = consume(&gate, last_request.id(), &last).expect_err("after");
    assert_eq!(refused.code(), ErrorCode::ApprovalExpired, "{refused}");
}

fn gate_at(
    backend: &dyn Backend,
    team: &Team,
) -> (crate::backend::Store, Gate, approval_gate::ManualClock) {
    open_gate(backend, Some(team.policy()))
}

/// A revocation racing a use: either the use was counted before the revocation (its
/// `consumed` line comes first) or it is refused as revoked and nothing runs; never both.
pub fn revoke_racing_a_use_has_one_winner(backend: &dyn Backend) {
    let team = Team::new();
    for _ in 0..6 {
        let (_store, gate, _clock) = open_gate(backend, Some(team.policy()));
        let aid = gate
            .allow(signed(terms("mail.send"), 1, &[&team.alice]))
            .expect("granted")
            .allowance
            .allowance
            .id();
        let payload = payload(0, 1);
        let id = file(&gate, &payload).id();
        let barrier = Arc::new(Barrier::new(2));
        let (g, b, p) = (gate.clone(), Arc::clone(&barrier), payload.clone());
        let user = std::thread::spawn(move || {
            b.wait();
            consume(&g, id, &p).map(drop).map_err(|e| e.code())
        });
        barrier.wait();
        gate.revoke_allowance(aid, &Decision::by("alice"))
            .expect("revoked");
        let outcome = user.join().expect("the user");
        let records = gate.audit_records().expect("records");
        let seq = |event: AuditEvent, of: RequestId| {
            records
                .iter()
                .find(|r| r.event == event && r.id == of)
                .map(|r| r.seq)
        };
        match outcome {
            Ok(()) => assert!(
                seq(AuditEvent::Consumed, id) < seq(AuditEvent::AllowanceRevoked, aid),
                "a use that ran was counted before the revocation"
            ),
            Err(code) => {
                assert_eq!(code, ErrorCode::Revoked);
                assert_eq!(seq(AuditEvent::Consumed, id), None);
                assert_eq!(gate.allowance(aid).expect("it").usage.uses, 0);
            }
        }
        gate.verify_audit().expect("the chain verifies");
    }
}

/// The kept record forged after it was granted, by someone who can write the store but holds
/// no approver's key: a constraint widened, the uses raised, the window extended, the
/// operation widened, the signatures removed or replaced by an untrusted key's, one of a
/// quorum's two removed, the quorum lowered; a request of another operation marked as
/// approved by it. Each refused at the consume with its reason, nothing spent. Deleting its
/// uses gives them back (as anyone who can write the store could), and the audit chain still
/// holds every use.
#[allow(clippy::too_many_lines)] // one forgery a line, and the two that need a store each
pub fn every_forgery_of_a_kept_allowance_is_refused_at_the_consume(backend: &dyn Backend) {
    type Edit = fn(&mut serde_json::Value, &serde_json::Value);
    let team = Team::new();
    let untrusted = signed(terms("mail.send"), 1, &[&team.mallory]).to_json();
    let mail: [(&str, Edit, ErrorCode); 6] = [
        (
            "a constraint widened",
            |r, _| {
                r["allowance"]["constraints"][1]["atMost"] = json!(5_000_000);
            },
            ErrorCode::BadSignature,
        ),
        (
            "the uses raised",
            |r, _| {
                r["allowance"]["bounds"]["uses"] = json!(1000);
            },
            ErrorCode::BadSignature,
        ),
        (
            "the window extended",
            |r, _| {
                r["allowance"]["bounds"]["notAfter"] = json!("2026-12-03T00:53:20.000Z");
            },
            ErrorCode::BadSignature,
        ),
        (
            "the operation widened",
            |r, _| {
                r["allowance"]["operation"] = json!("mail.*");
            },
            ErrorCode::BadSignature,
        ),
        (
            "the signatures removed",
            |r, _| {
                r["signatures"] = json!([]);
            },
            ErrorCode::SignatureRequired,
        ),
        (
            "an untrusted key's signature of another allowance",
            |r, other| {
                r["signatures"] = other["signatures"].clone();
            },
            ErrorCode::BadSignature,
        ),
    ];
    let payments: [(&str, Edit, ErrorCode); 2] = [
        (
            "one of two signatures removed",
            |r, _| {
                r["signatures"] = json!([r["signatures"][0]]);
            },
            ErrorCode::InsufficientApprovals,
        ),
        (
            "the quorum lowered to one",
            |r, _| {
                r["requiredApprovals"] = json!(1);
                r["signatures"] = json!([r["signatures"][0]]);
            },
            ErrorCode::InsufficientApprovals,
        ),
    ];
    let cases = mail
        .iter()
        .map(|case| ("mail.send", case))
        .chain(payments.iter().map(|case| ("payments.wire", case)));
    for (operation, (what, edit, expected)) in cases {
        let (store, gate, _clock) = open_gate(backend, Some(team.policy()));
        let allowance = if operation == "mail.send" {
            signed(terms("mail.send"), 1, &[&team.alice])
        } else {
            signed(terms("payments.*"), 2, &[&team.alice, &team.bob])
        };
        let aid = gate
            .allow(allowance)
            .expect("granted")
            .allowance
            .allowance
            .id();
        let payload = payload(0, 10);
        let new = approval_gate::NewRequest::new("send the invoice", "invoices")
            .operation(operation)
            .payload(approval_gate::CanonicalPayload::from_json_text(&payload).expect("json"));
        let request = gate.request_approval(new).expect("filed").request;
        assert_eq!(request.allowance(), Some(aid), "{what}");
        backend.tamper_allowance(&store, aid, &mut |record| edit(record, &untrusted));
        let binding = crate::binding("send the invoice", Some(operation), Some(&payload));
        let refused = gate
            .consume::<serde_json::Value>(request.id(), &binding)
            .expect_err(what);
        assert_eq!(refused.code(), *expected, "{what}: {refused}");
        assert!(
            !backend.claimed(&store, request.id()),
            "{what}: nothing spent"
        );
    }

    // An untrusted key's signature of this very allowance.
    let (store, gate, _clock) = open_gate(backend, Some(team.policy()));
    let granted = signed(terms("mail.send"), 1, &[&team.alice]);
    let by_mallory = super::allowances::sign(granted.allowance.clone(), 1, &[&team.mallory]);
    let aid = gate
        .allow(granted)
        .expect("granted")
        .allowance
        .allowance
        .id();
    let sent = payload(0, 10);
    let id = file(&gate, &sent).id();
    let replaced = by_mallory.to_json()["signatures"].clone();
    backend.tamper_allowance(&store, aid, &mut |record| {
        record["signatures"] = replaced.clone();
    });
    let refused = consume(&gate, id, &sent).expect_err("untrusted");
    assert_eq!(refused.code(), ErrorCode::UntrustedSigner, "{refused}");
    assert!(!backend.claimed(&store, id));

    // A request of another operation, marked by hand as approved by the allowance.
    let (store, gate, _clock) = open_gate(backend, Some(team.policy()));
    let aid = gate
        .allow(signed(terms("mail.send"), 1, &[&team.alice]))
        .expect("granted")
        .allowance
        .allowance
        .id();
    let other = payload(0, 10);
    let new = approval_gate::NewRequest::new("delete the mailbox", "cleanup")
        .operation("mail.delete")
        .payload(approval_gate::CanonicalPayload::from_json_text(&other).expect("json"));
    let request = gate.request_approval(new).expect("filed").request;
    assert_eq!(request.status(), Status::Pending, "not covered");
    let decided = request.created_at().to_string();
    backend.tamper(&store, request.id(), &mut |record| {
        record["status"] = json!("approved");
        record["decidedAt"] = json!(decided);
        record["decidedBy"] = json!(format!("allowance {aid}"));
        record["allowance"] = json!(aid);
    });
    let binding = crate::binding("delete the mailbox", Some("mail.delete"), Some(&other));
    let refused = gate
        .consume::<serde_json::Value>(request.id(), &binding)
        .expect_err("another operation");
    assert_eq!(refused.code(), ErrorCode::AllowanceNotCovering, "{refused}");
    assert!(!backend.claimed(&store, request.id()));

    // Uses deleted: they come back, and the chain still names each.
    let (store, gate, _clock) = open_gate(backend, Some(team.policy()));
    let mut once = terms("mail.send");
    once.bounds.uses = Some(1);
    let aid = gate
        .allow(signed(once, 1, &[&team.alice]))
        .expect("granted")
        .allowance
        .allowance
        .id();
    let first = payload(0, 1);
    let id = file(&gate, &first).id();
    let _grant = consume(&gate, id, &first).expect("the one use");
    assert_eq!(file(&gate, &payload(1, 1)).status(), Status::Pending);
    backend.forget_uses(&store, aid);
    assert_eq!(gate.allowance(aid).expect("it").usage.uses, 0);
    assert_eq!(consumed_under(&gate, aid), 1, "the chain keeps the use");
}
