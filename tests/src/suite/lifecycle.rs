//! Requests, decisions, expiry, limits: every state refuses consume with its own reason.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use approval_gate::{
    AuditEvent, CanonicalPayload, Clock, Decision, EffectiveStatus, Error, Gate, Grant, Limits,
    NewRequest, Status, Timestamp,
};

use crate::backend::Backend;
use crate::{Subject, T0, binding, changed};

const HOUR: Duration = Duration::from_secs(3600);

fn consume(fx: &Subject, id: approval_gate::RequestId, action: &str) -> Result<Grant<()>, Error> {
    fx.gate.consume::<()>(id, &binding(action, None, None))
}

/// A request starts pending and never authorizes.
pub fn a_request_starts_pending_and_never_authorizes(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let id = fx.ask(
        "delete the staging database",
        Some("db.drop"),
        Some(r#"{"db":"staging"}"#),
    );
    let report = fx.gate.status(id).unwrap();
    assert_eq!(report.request().status(), Status::Pending);
    assert_eq!(report.effective_status(), EffectiveStatus::Pending);
    assert!(!report.authorizes_execution());
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["authorizesExecution"], false);
    assert_eq!(json["effectiveStatus"], "pending");
    assert_eq!(json["payload"], serde_json::json!({"db": "staging"}));
    assert_eq!(
        json["payloadDigest"],
        CanonicalPayload::from_json_text(r#"{"db":"staging"}"#)
            .unwrap()
            .digest()
            .to_string()
    );
    assert_eq!(report.request().expires_at(), T0.saturating_add(HOUR));
}

/// Every non approved state refuses consume with its own reason.
pub fn every_non_approved_state_refuses_consume_with_its_own_reason(backend: &dyn Backend) {
    let fx = Subject::new(backend);

    let pending = fx.ask("pending one", None, None);
    assert!(
        matches!(consume(&fx, pending, "pending one"), Err(Error::NotApproved(i)) if i == pending)
    );

    let denied = fx.ask("denied one", None, None);
    fx.gate
        .deny(denied, &Decision::by("h").reason("no"))
        .unwrap();
    assert!(matches!(consume(&fx, denied, "denied one"), Err(Error::Denied(i)) if i == denied));

    let revoked = fx.approved("revoked one", None, None);
    fx.gate.revoke(revoked, &Decision::by("h")).unwrap();
    assert!(matches!(consume(&fx, revoked, "revoked one"), Err(Error::Revoked(i)) if i == revoked));

    let consumed = fx.approved("consumed one", None, None);
    let _grant = consume(&fx, consumed, "consumed one").unwrap();
    assert!(
        matches!(consume(&fx, consumed, "consumed one"), Err(Error::AlreadyConsumed(i)) if i == consumed)
    );

    let unknown = approval_gate::RequestId::parse("0123456789ab").unwrap();
    assert!(matches!(consume(&fx, unknown, "x"), Err(Error::NotFound(i)) if i == unknown));

    let approved_late = fx.approved("approved then late", None, None);
    let expired = fx.ask("expires while pending", None, None);
    fx.advance(HOUR + Duration::from_millis(1));
    assert!(
        matches!(consume(&fx, expired, "expires while pending"), Err(Error::Expired(i)) if i == expired)
    );
    assert!(matches!(
        consume(&fx, approved_late, "approved then late"),
        Err(Error::ApprovalExpired { id, .. }) if id == approved_late
    ));

    // The refusals are on the record; the replay has its own event.
    let records = fx.gate.audit_records().unwrap();
    let replayed: Vec<_> = records
        .iter()
        .filter(|r| r.event == AuditEvent::ConsumeReplayed)
        .collect();
    assert_eq!(replayed.len(), 1);
    assert_eq!(replayed[0].id, consumed);
    let refused = records
        .iter()
        .filter(|r| r.event == AuditEvent::ConsumeRefused)
        .count();
    assert_eq!(
        refused, 6,
        "pending, denied, revoked, unknown, expired, approval expired"
    );
    // Each with its reason code, as the caller was told it.
    let reasons: Vec<_> = records
        .iter()
        .filter(|r| {
            matches!(
                r.event,
                AuditEvent::ConsumeRefused | AuditEvent::ConsumeReplayed
            )
        })
        .map(|r| (r.id, r.details["reason"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(
        reasons,
        [
            (pending, "not_approved"),
            (denied, "denied"),
            (revoked, "revoked"),
            (consumed, "already_consumed"),
            // Nobody filed it, and the attempt is on the record all the same.
            (unknown, "not_found"),
            (expired, "expired"),
            (approved_late, "approval_expired"),
        ]
    );
}

/// The expiry boundary is inclusive and recorded.
pub fn the_expiry_boundary_is_inclusive_and_recorded(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let at_edge = fx.approved("edge", None, None);
    let pending = fx.ask("pending edge", None, None);
    fx.advance(HOUR);
    assert_eq!(
        fx.gate.status(pending).unwrap().effective_status(),
        EffectiveStatus::Pending
    );
    assert!(
        consume(&fx, at_edge, "edge").is_ok(),
        "usable at exactly expires_at"
    );

    fx.advance(Duration::from_millis(1));
    let report = fx.gate.status(pending).unwrap();
    assert_eq!(
        report.request().status(),
        Status::Expired,
        "a pending request past expiry is recorded expired"
    );
    assert!(matches!(
        fx.gate.approve(pending, &Decision::by("h")),
        Err(Error::Expired(_))
    ));
    let expired_lines = fx
        .gate
        .audit_records()
        .unwrap()
        .into_iter()
        .filter(|r| r.event == AuditEvent::Expired && r.id == pending)
        .count();
    assert_eq!(expired_lines, 1, "expiry is recorded once");
}

/// A clock stopped at `T0` that jumps two hours ahead from its `jump_at`-th read on, and
/// counts its reads.
#[derive(Debug)]
struct Scripted {
    reads: Arc<AtomicUsize>,
    jump_at: usize,
}

impl Clock for Scripted {
    fn now(&self) -> Timestamp {
        let n = self.reads.fetch_add(1, Ordering::SeqCst);
        if n >= self.jump_at {
            T0.saturating_add(HOUR * 2)
        } else {
            T0
        }
    }
}

fn scripted_gate(fx: &Subject, jump_at: usize) -> (Gate, Arc<AtomicUsize>) {
    let reads = Arc::new(AtomicUsize::new(0));
    let clock = Scripted {
        reads: Arc::clone(&reads),
        jump_at,
    };
    (fx.store.builder().clock(clock).open().unwrap(), reads)
}

/// A clock past expiry after persistence refuses and spends.
pub fn a_clock_past_expiry_after_persistence_refuses_and_spends(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let probe = fx.approved("probe", None, None);
    let id = fx.approved("late", None, None);
    // The last clock read of a successful consume is the one after all persistence.
    let (counting, reads) = scripted_gate(&fx, usize::MAX);
    let _grant = counting
        .consume::<()>(probe, &binding("probe", None, None))
        .unwrap();
    let last_read = reads.load(Ordering::SeqCst) - 1;

    let (jumping, _) = scripted_gate(&fx, last_read);
    let result = jumping.consume::<()>(id, &binding("late", None, None));
    assert!(
        matches!(result, Err(Error::ExpiredDuringConsume { .. })),
        "{result:?}"
    );
    let records = fx.gate.audit_records().unwrap();
    let mine: Vec<_> = records.iter().filter(|r| r.id == id).collect();
    assert_eq!(
        mine.iter().map(|r| r.event).collect::<Vec<_>>(),
        [
            AuditEvent::Requested,
            AuditEvent::Approved,
            AuditEvent::Consumed,
            AuditEvent::ConsumeRefused
        ],
        "spent, then refused"
    );
    assert_eq!(mine[3].details["reason"], "expired_during_consume");
    // The approval is spent: even a clock back in range cannot use it now.
    assert!(matches!(
        consume(&fx, id, "late"),
        Err(Error::AlreadyConsumed(_))
    ));
    assert_eq!(
        fx.gate.status(id).unwrap().effective_status(),
        EffectiveStatus::Consumed
    );
}

/// Decisions apply only to the right states.
pub fn decisions_apply_only_to_the_right_states(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let id = fx.ask("a", None, None);
    assert!(matches!(
        fx.gate.revoke(id, &Decision::by("h")),
        Err(Error::WrongState {
            status: EffectiveStatus::Pending,
            ..
        })
    ));
    let report = fx
        .gate
        .approve(id, &Decision::by("alice").reason("fine"))
        .unwrap();
    assert_eq!(report.request().decided_by(), Some("alice"));
    assert_eq!(report.request().decision_reason(), Some("fine"));
    assert_eq!(
        report.effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
    assert!(
        matches!(
            fx.gate.approve(id, &Decision::by("h")),
            Err(Error::WrongState { .. })
        ),
        "second approve"
    );
    assert!(matches!(
        fx.gate.deny(id, &Decision::by("h")),
        Err(Error::WrongState { .. })
    ));
    let _grant = consume(&fx, id, "a").unwrap();
    assert!(matches!(
        fx.gate.revoke(id, &Decision::by("h")),
        Err(Error::WrongState {
            status: EffectiveStatus::Consumed,
            ..
        })
    ));
    let denied = fx.ask("b", None, None);
    fx.gate.deny(denied, &Decision::by("h")).unwrap();
    assert!(matches!(
        fx.gate.approve(denied, &Decision::by("h")),
        Err(Error::WrongState {
            status: EffectiveStatus::Denied,
            ..
        })
    ));
    assert!(matches!(
        fx.gate.revoke(denied, &Decision::by("h")),
        Err(Error::WrongState { .. })
    ));
}

/// Bad input is refused and nothing changes in the store.
pub fn bad_input_is_refused_and_nothing_changes_in_the_store(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let existing = fx.ask("already here", None, None);
    let before = backend.contents(&fx.store);
    let bad_payloads = [
        "{\"a\":1,\"a\":2}".to_owned(),
        "9007199254740992".to_owned(),
        "{\"n\":1.0}".to_owned(),
        "\"nul\\u0000\"".to_owned(),
        format!("{}1{}", "[".repeat(40), "]".repeat(40)),
        format!(
            "\"{}\"",
            "x".repeat(approval_gate::limits::MAX_PAYLOAD_BYTES + 1)
        ),
    ];
    for text in &bad_payloads {
        assert!(
            CanonicalPayload::from_json_text(text).is_err(),
            "{text:.40}"
        );
    }
    let bad_requests = [
        NewRequest::new("", "r"),
        NewRequest::new("a\0b", "r"),
        NewRequest::new("x".repeat(approval_gate::limits::MAX_ACTION_BYTES + 1), "r"),
        NewRequest::new("a", "r").ttl(Duration::from_secs(5)),
        NewRequest::new("a", "r").ttl(Duration::from_secs(8 * 24 * 3600)),
        NewRequest::new("a", "r").operation("smtp send"),
    ];
    for new in bad_requests {
        assert!(matches!(
            fx.gate.request_approval(new),
            Err(Error::InvalidInput { .. })
        ));
    }
    let id = existing;
    assert!(matches!(
        fx.gate.approve(id, &Decision::by("")),
        Err(Error::InvalidInput { .. })
    ));
    assert!(matches!(
        fx.gate.deny(id, &Decision::by("h").reason("a\0")),
        Err(Error::InvalidInput { .. })
    ));
    assert_eq!(
        changed(&before, &backend.contents(&fx.store)),
        Vec::<String>::new(),
        "refused input changed the store"
    );
}

/// An identical pending request is returned not duplicated.
pub fn an_identical_pending_request_is_returned_not_duplicated(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let ask = || {
        NewRequest::new("send report", "weekly")
            .requested_by("agent-1")
            .operation("smtp.send")
            .payload(CanonicalPayload::from_json_text(r#"{"to":"a@b.c"}"#).unwrap())
    };
    let first = fx.gate.request_approval(ask()).unwrap();
    assert!(!first.deduplicated);
    let second = fx.gate.request_approval(ask()).unwrap();
    assert!(second.deduplicated);
    assert_eq!(second.request.id(), first.request.id());
    // Any difference in what is asked makes a new request.
    let other = fx
        .gate
        .request_approval(ask().requested_by("agent-2"))
        .unwrap();
    assert_ne!(other.request.id(), first.request.id());
    let other_payload = fx
        .gate
        .request_approval(
            ask().payload(CanonicalPayload::from_json_text(r#"{"to":"x@b.c"}"#).unwrap()),
        )
        .unwrap();
    assert!(!other_payload.deduplicated);
    // Once decided it no longer absorbs new asks.
    fx.gate
        .deny(first.request.id(), &Decision::by("h"))
        .unwrap();
    assert!(!fx.gate.request_approval(ask()).unwrap().deduplicated);
}

/// Queue cap and creation limit fail requests never decisions.
pub fn queue_cap_and_creation_limit_fail_requests_never_decisions(backend: &dyn Backend) {
    let store = backend.fresh();
    let gate = store.open(None, Limits::default().max_pending(3).max_requests(5));
    let ids: Vec<_> = (0..3)
        .map(|i| {
            gate.request_approval(NewRequest::new(format!("a{i}"), "r"))
                .unwrap()
                .request
                .id()
        })
        .collect();
    let full = gate
        .request_approval(NewRequest::new("a3", "r"))
        .unwrap_err();
    assert!(matches!(
        full,
        Error::QueueFull {
            pending: 3,
            limit: 3
        }
    ));
    assert!(full.to_string().contains("approval queue full"));
    // The human can still decide; that frees a slot.
    gate.deny(ids[0], &Decision::by("h")).unwrap();
    gate.approve(ids[1], &Decision::by("h")).unwrap();
    gate.request_approval(NewRequest::new("a3", "r")).unwrap();
    gate.request_approval(NewRequest::new("a4", "r")).unwrap();
    gate.deny(ids[2], &Decision::by("h")).unwrap();
    let limit = gate
        .request_approval(NewRequest::new("a5", "r"))
        .unwrap_err();
    assert!(
        matches!(
            limit,
            Error::CreationLimit {
                requests: 5,
                limit: 5
            }
        ),
        "{limit:?}"
    );
}

/// Approve as shown approves only the record the human saw.
pub fn approve_as_shown_approves_only_the_record_the_human_saw(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let id = fx.ask("a", None, None);
    let shown = fx.gate.status(id).unwrap().into_request();
    // Someone else decides while the human reads: the shown record is stale.
    fx.gate.deny(id, &Decision::by("other")).unwrap();
    assert!(matches!(
        fx.gate.approve_as_shown(&shown, &Decision::by("h")),
        Err(Error::WrongState {
            status: EffectiveStatus::Denied,
            ..
        })
    ));

    let id = fx.ask("b", None, None);
    let shown = fx.gate.status(id).unwrap().into_request();
    // A record that differs in any field is refused, even while still pending.
    let other = fx.ask("c", None, None);
    let different = fx.gate.status(other).unwrap().into_request();
    let forged = serde_json::to_string(&different)
        .unwrap()
        .replace(other.as_str(), id.as_str());
    let forged: approval_gate::Request = serde_json::from_str(&forged).unwrap();
    assert!(matches!(
        fx.gate.approve_as_shown(&forged, &Decision::by("h")),
        Err(Error::Changed(_))
    ));
    assert_eq!(
        fx.gate.status(id).unwrap().effective_status(),
        EffectiveStatus::Pending
    );
    let approved = fx
        .gate
        .approve_as_shown(&shown, &Decision::by("h"))
        .unwrap();
    assert_eq!(
        approved.effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
}

/// The operators default ttl applies unless the request asks and is checked at open.
pub fn the_operators_default_ttl_applies_unless_the_request_asks_and_is_checked_at_open(
    backend: &dyn Backend,
) {
    let store = backend.fresh();
    let clock = approval_gate::ManualClock::new(T0);
    let gate = store.open(
        Some(clock),
        Limits::default().default_ttl(Duration::from_secs(120)),
    );
    let unsaid = gate.request_approval(NewRequest::new("a", "r")).unwrap();
    assert_eq!(
        unsaid.request.expires_at(),
        T0.saturating_add(Duration::from_secs(120))
    );
    let asked = gate
        .request_approval(NewRequest::new("b", "r").ttl(Duration::from_secs(30)))
        .unwrap();
    assert_eq!(
        asked.request.expires_at(),
        T0.saturating_add(Duration::from_secs(30))
    );
    // The default without any setting is an hour.
    assert_eq!(Limits::default().default_ttl, HOUR);
    let never_made = backend.fresh();
    for bad in [Duration::from_secs(1), Duration::from_secs(8 * 24 * 3600)] {
        let refused = never_made
            .builder()
            .limits(Limits::default().default_ttl(bad))
            .open()
            .unwrap_err();
        assert!(
            matches!(
                refused,
                Error::InvalidInput {
                    field: "default_ttl",
                    ..
                }
            ),
            "{refused:?}"
        );
    }
    // A refused setting creates nothing.
    assert_eq!(
        backend.contents(&never_made),
        std::collections::BTreeMap::new()
    );
}

/// The health check names what the store did not write, and changes nothing: a fresh store
/// is healthy, and one holding a stray entry is not, with that entry named.
pub fn the_health_check_names_what_the_store_did_not_write(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let _ = fx.approved("a request", None, None);
    let report = fx.gate.check_health().expect("the check runs");
    assert!(report.is_healthy(), "{report:?}");
    let stray = backend.add_stray(&fx.store);
    let report = fx.gate.check_health().expect("the check runs");
    assert_eq!(report.stray, [stray], "{report:?}");
    assert!(!report.is_healthy());
    assert!(
        report.unreadable.is_empty() && report.audit.is_ok(),
        "{report:?}"
    );
}

/// A wait on a pending request ends when a human decides it, with the decision, whoever
/// decides and however the store tells the watcher (its events, or polling when it has none).
pub fn a_waiter_wakes_with_the_decision(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let id = fx.ask("wait for me", None, None);
    let watch = fx.gate.watch();
    let waiter = std::thread::spawn(move || {
        // Bounded by the decision below; the time is only a ceiling for a broken store.
        watch.wait_for_decision(id, Duration::from_secs(120))
    });
    // Another gate on the same store, as a human's process would have.
    fx.reopen().approve(id, &Decision::by("alice")).unwrap();
    match waiter.join().expect("the waiter ran").expect("the wait") {
        approval_gate::Waited::Decided(report) => {
            assert_eq!(report.request().status(), Status::Approved);
        }
        approval_gate::Waited::TimedOut(report) => panic!("not woken: {report:?}"),
    }
}
