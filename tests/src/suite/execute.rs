//! `execute_approved`: the closure runs once, on the frozen approved payload, with the
//! start and finish on the record.

use std::cell::Cell;
use std::time::Duration;

use approval_gate::{AuditEvent, Binding, Error, Grant};

use crate::backend::Backend;
use crate::{Subject, binding};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Mail {
    to: String,
    subject: String,
    cents: u64,
}

fn mail() -> Mail {
    Mail {
        to: "alice@example.com".into(),
        subject: "Invoice 1042".into(),
        cents: 12_500,
    }
}

const ACTION: &str = "send invoice 1042 to alice";

fn approved_mail(fx: &Subject) -> approval_gate::RequestId {
    let payload = serde_json::to_string(&mail()).unwrap();
    fx.approved(ACTION, Some("smtp.send"), Some(&payload))
}

fn mail_binding(m: &Mail) -> Binding {
    Binding::new(ACTION)
        .operation("smtp.send")
        .payload_of(m)
        .unwrap()
}

/// A lower-level side effect that demands proof of an approved execution.
fn send(grant: &Grant<Mail>, outbox: &mut Vec<Mail>) {
    outbox.push(grant.payload().clone());
}

/// Runs once with the frozen payload and records start and finish.
pub fn runs_once_with_the_frozen_payload_and_records_start_and_finish(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let id = approved_mail(&fx);
    let mut outbox = Vec::new();
    let mut mine = mail();
    let binding = mail_binding(&mine);
    // The caller's copy changing afterwards does not change what runs.
    mine.to = "mallory@example.com".into();
    fx.gate
        .execute_approved(id, &binding, |run: &Grant<Mail>| {
            run.assert_active()?;
            send(run, &mut outbox);
            Ok::<_, Error>(())
        })
        .unwrap();
    assert_eq!(outbox, vec![mail()]);

    let again = fx.gate.execute_approved(id, &binding, |run: &Grant<Mail>| {
        send(run, &mut outbox);
        Ok::<_, Error>(())
    });
    assert!(matches!(again, Err(Error::AlreadyConsumed(_))));
    assert_eq!(outbox.len(), 1, "ran twice");

    let events: Vec<_> = fx
        .gate
        .audit_records()
        .unwrap()
        .into_iter()
        .filter(|r| r.id == id)
        .map(|r| (r.event, r.details.get("outcome").cloned()))
        .collect();
    assert_eq!(
        events,
        vec![
            (AuditEvent::Requested, None),
            (AuditEvent::Approved, None),
            (AuditEvent::Consumed, None),
            (AuditEvent::ExecutionStarted, None),
            (AuditEvent::ExecutionFinished, Some("ok".into())),
            (AuditEvent::ConsumeReplayed, None),
        ]
    );
    fx.gate.verify_audit().unwrap();
}

/// A payload that differs in any field never runs.
pub fn a_payload_that_differs_in_any_field_never_runs(backend: &dyn Backend) {
    #[derive(Serialize)]
    struct FloatMail<'a> {
        to: &'a str,
        subject: &'a str,
        cents: f64,
    }
    let fx = Subject::new(backend);
    let id = approved_mail(&fx);
    let ran = Cell::new(0);
    for changed in [
        Mail {
            to: "mallory@example.com".into(),
            ..mail()
        },
        Mail {
            subject: "Invoice 1043".into(),
            ..mail()
        },
        Mail {
            cents: 12_501,
            ..mail()
        },
    ] {
        let result = fx
            .gate
            .execute_approved(id, &mail_binding(&changed), |_: &Grant<Mail>| {
                ran.set(ran.get() + 1);
                Ok::<_, Error>(())
            });
        assert!(matches!(result, Err(Error::PayloadMismatch { .. })));
    }
    assert_eq!(ran.get(), 0);
    // A float where the approval had an integer cannot even be bound.
    let float = Binding::new(ACTION)
        .operation("smtp.send")
        .payload_of(&FloatMail {
            to: "alice@example.com",
            subject: "Invoice 1042",
            cents: 12_500.0,
        });
    assert!(matches!(float, Err(Error::InvalidPayload(_))));
}

/// An approval that expires before the side effect is caught by assert active.
pub fn an_approval_that_expires_before_the_side_effect_is_caught_by_assert_active(
    backend: &dyn Backend,
) {
    let fx = Subject::new(backend);
    let id = approved_mail(&fx);
    let clock = fx.clock.clone();
    let mut sent = 0;
    let result = fx
        .gate
        .execute_approved(id, &mail_binding(&mail()), |run: &Grant<Mail>| {
            // Something slow happens before the side effect.
            clock.advance(Duration::from_secs(2 * 3600));
            run.assert_active()?;
            sent += 1;
            Ok::<_, Error>(())
        });
    assert!(matches!(result, Err(Error::ApprovalExpired { .. })));
    assert_eq!(sent, 0);
    let finished = fx
        .gate
        .audit_records()
        .unwrap()
        .into_iter()
        .find(|r| r.event == AuditEvent::ExecutionFinished)
        .unwrap();
    assert_eq!(finished.details["outcome"], "error");
}

/// A panicking executor leaves an unknown outcome and no second chance.
pub fn a_panicking_executor_leaves_an_unknown_outcome_and_no_second_chance(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let id = approved_mail(&fx);
    let gate = fx.gate.clone();
    let binding = mail_binding(&mail());
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = gate.execute_approved(id, &binding, |_: &Grant<Mail>| -> Result<(), Error> {
            panic!("smtp client crashed");
        });
    }));
    assert!(panicked.is_err());
    let last = fx.gate.audit_records().unwrap().pop().unwrap();
    assert_eq!(last.event, AuditEvent::ExecutionFinished);
    assert_eq!(last.details["outcome"], "unknown");
    let retry = fx
        .gate
        .execute_approved(id, &binding, |_: &Grant<Mail>| Ok::<_, Error>(()));
    assert!(matches!(retry, Err(Error::AlreadyConsumed(_))));
}

/// The async form runs once and records the error outcome.
pub fn the_async_form_runs_once_and_records_the_error_outcome(backend: &dyn Backend) {
    block_on(async {
        let fx = Subject::new(backend);
        let id = approved_mail(&fx);
        let result: Result<(), Error> = fx
            .gate
            .execute_approved_async(
                id,
                &mail_binding(&mail()),
                async move |run: &Grant<Mail>| {
                    run.assert_active()?;
                    tokio::task::yield_now().await;
                    Err(Error::InvalidInput {
                        field: "smtp",
                        problem: format!("server rejected {}", run.payload().to),
                    })
                },
            )
            .await;
        assert!(matches!(result, Err(Error::InvalidInput { .. })));
        let last = fx.gate.audit_records().unwrap().pop().unwrap();
        assert_eq!(last.event, AuditEvent::ExecutionFinished);
        assert_eq!(last.details["outcome"], "error");
        assert!(
            last.details["error"]
                .as_str()
                .unwrap()
                .contains("server rejected alice@example.com")
        );
        let again = fx
            .gate
            .execute_approved_async(id, &mail_binding(&mail()), async |_: &Grant<Mail>| {
                Ok::<_, Error>(())
            })
            .await;
        assert!(matches!(again, Err(Error::AlreadyConsumed(_))));
    });
}

/// Dropping the async execution midway records an unknown outcome.
pub fn dropping_the_async_execution_midway_records_an_unknown_outcome(backend: &dyn Backend) {
    block_on(async {
        let fx = Subject::new(backend);
        let id = approved_mail(&fx);
        let binding = mail_binding(&mail());
        let never = fx
            .gate
            .execute_approved_async(id, &binding, async |_: &Grant<Mail>| {
                std::future::pending::<()>().await;
                Ok::<_, Error>(())
            });
        let timed_out = tokio::time::timeout(Duration::from_millis(50), never).await;
        assert!(timed_out.is_err());
        // The store's work runs on a thread of its own, which finishes what the dropped
        // future started (the consume and the start, if it had not yet) and records the
        // unknown outcome: wait for its line, as long as it takes.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let last = loop {
            let last = fx.gate.audit_records().unwrap().pop().unwrap();
            if last.event == AuditEvent::ExecutionFinished {
                break last;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no outcome recorded: {last:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(last.details["outcome"], "unknown");
    });
}

/// Binding helper matches manual canonical text.
pub fn binding_helper_matches_manual_canonical_text(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let id = approved_mail(&fx);
    let manual = binding(
        ACTION,
        Some("smtp.send"),
        Some(r#"{"cents":12500,"subject":"Invoice 1042","to":"alice@example.com"}"#),
    );
    assert_eq!(manual, mail_binding(&mail()));
    let grant = fx.gate.consume::<Mail>(id, &manual).unwrap();
    assert_eq!(grant.into_payload(), mail());
}

/// An executor's error, shown as exactly the given text.
#[derive(Debug)]
struct Failure(String);

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure(e.to_string())
    }
}

/// What `execution_finished` records for an executor failing with `text`.
fn recorded_error(backend: &dyn Backend, text: &str) -> String {
    let fx = Subject::new(backend);
    let id = fx.approved("a", None, None);
    let result = fx
        .gate
        .execute_approved(id, &binding("a", None, None), |_: &Grant<()>| {
            Err::<(), _>(Failure(text.to_owned()))
        });
    assert_eq!(
        result.unwrap_err().0,
        text,
        "the caller gets the whole error"
    );
    let records = fx.gate.audit_records().unwrap();
    let finished = records
        .iter()
        .find(|r| r.id == id && r.event == AuditEvent::ExecutionFinished)
        .unwrap();
    assert_eq!(finished.details["outcome"], "error");
    finished.details["error"].as_str().unwrap().to_owned()
}

/// Error texts up to 1024 bytes are recorded whole and longer ones cut with a mark.
pub fn error_texts_up_to_1024_bytes_are_recorded_whole_and_longer_ones_cut_with_a_mark(
    backend: &dyn Backend,
) {
    for len in [0, 1, 1023, 1024] {
        let text = "e".repeat(len);
        assert_eq!(
            recorded_error(backend, &text),
            text,
            "{len} bytes are kept whole"
        );
    }
    for len in [1025, 1026, 5000] {
        let text = "e".repeat(len);
        assert_eq!(
            recorded_error(backend, &text),
            format!("{}...", "e".repeat(1024)),
            "{len} bytes are cut to 1024 and marked"
        );
    }
}

/// A long error text is cut before a character that straddles the limit.
pub fn a_long_error_text_is_cut_before_a_character_that_straddles_the_limit(backend: &dyn Backend) {
    // "é" is two bytes: at 1023..1025 it would be split by a cut at 1024.
    let text = format!("{}é{}", "e".repeat(1023), "e".repeat(10));
    assert_eq!(
        recorded_error(backend, &text),
        format!("{}...", "e".repeat(1023))
    );
    // A three-byte character at 1022..1025 is dropped whole too.
    let text = format!("{}€{}", "e".repeat(1022), "e".repeat(10));
    assert_eq!(
        recorded_error(backend, &text),
        format!("{}...", "e".repeat(1022))
    );
    // One that ends exactly at the limit is kept.
    let text = format!("{}é{}", "e".repeat(1022), "e".repeat(10));
    assert_eq!(
        recorded_error(backend, &text),
        format!("{}é...", "e".repeat(1022))
    );
}

/// Runs `future` to completion on a runtime of its own, as `#[tokio::test]` would.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}
