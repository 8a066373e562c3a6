//! `#[requires_approval]` at run time, on a real store: the body runs once, on the approved
//! payload, after an approval, and never otherwise.
//!
//! This file is also the clippy test of the expansion: it is built by
//! `cargo clippy --all-targets -- -D warnings` with the workspace's pedantic lints.
#![cfg(feature = "macros")]

use std::cell::RefCell;
use std::time::Duration;

use approval_gate::limits::DEFAULT_TTL;
use approval_gate::{
    AuditEvent, CanonicalPayload, Claim, Decision, Error, Gate, Grant, ManualClock, NewRequest,
    RequestId, Timestamp, requires_approval,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tempfile::TempDir;

const ACTION: &str = "send invoice 1042 to alice@example.com";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Email {
    to: String,
    subject: String,
    body: String,
    cents: u64,
}

fn invoice() -> Email {
    Email {
        to: "alice@example.com".into(),
        subject: "Invoice 1042".into(),
        body: "Please pay by Friday.".into(),
        cents: 12_500,
    }
}

#[derive(Debug, thiserror::Error)]
enum SendError {
    #[error(transparent)]
    Gate(#[from] Error),
    #[error("smtp refused the message: {0}")]
    Smtp(String),
}

impl SendError {
    fn gate(&self) -> &Error {
        match self {
            Self::Gate(error) => error,
            Self::Smtp(message) => panic!("expected a refusal by the gate, got smtp: {message}"),
        }
    }
}

/// The lower-level side effect: it demands proof of an approved execution.
fn transport(grant: &Grant<Email>, outbox: &RefCell<Vec<Email>>) -> Result<(), SendError> {
    if grant.payload().to.ends_with("@bounce.example") {
        return Err(SendError::Smtp("mailbox unavailable".into()));
    }
    outbox.borrow_mut().push(grant.payload().clone());
    Ok(())
}

#[derive(Default)]
struct Mailer {
    outbox: RefCell<Vec<Email>>,
}

impl Mailer {
    /// `&self`, sync, with `?` and an early `return` in the body.
    #[requires_approval(operation = "smtp.send")]
    fn send(&self, #[payload] email: Email, approval: Claim<'_>) -> Result<usize, SendError> {
        if email.subject.is_empty() {
            return Err(SendError::Smtp("empty subject".into()));
        }
        approval.assert_active()?;
        transport(approval, &self.outbox)?;
        Ok(self.outbox.borrow().len())
    }

    /// Runs `before_sending` between the start of the execution and the side effect.
    #[requires_approval(operation = "smtp.send")]
    fn send_after(
        &self,
        #[payload] _email: Email,
        approval: Claim<'_>,
        before_sending: impl FnOnce(),
    ) -> Result<(), SendError> {
        before_sending();
        approval.assert_active()?;
        transport(approval, &self.outbox)
    }

    #[requires_approval(operation = "smtp.send")]
    async fn send_async(
        &self,
        #[payload] email: Email,
        approval: Claim<'_>,
    ) -> Result<String, SendError> {
        tokio::task::yield_now().await;
        approval.assert_active()?;
        transport(approval, &self.outbox)?;
        Ok(email.to.clone())
    }

    /// Same payload type, another operation: an approval for `smtp.send` does not fit.
    #[requires_approval(operation = "smtp.delete")]
    fn delete(&self, #[payload] email: Email, approval: Claim<'_>) -> Result<(), SendError> {
        approval.assert_active()?;
        self.outbox.borrow_mut().retain(|sent| sent != email);
        Ok(())
    }
}

/// `&mut self` and `self` receivers.
#[derive(Default)]
struct Batch {
    sent: Vec<Email>,
}

impl Batch {
    #[requires_approval(operation = "smtp.send")]
    fn push(&mut self, #[payload] email: Email, approval: Claim<'_>) -> Result<(), Error> {
        approval.assert_active()?;
        self.sent.push(email.clone());
        Ok(())
    }

    #[requires_approval(operation = "smtp.send")]
    fn finish(self, #[payload] email: Email, approval: Claim<'_>) -> Result<Vec<Email>, Error> {
        approval.assert_active()?;
        let mut sent = self.sent;
        sent.push(email.clone());
        Ok(sent)
    }
}

/// A generic function with a where clause.
#[requires_approval(operation = "ledger.append")]
fn append<T>(#[payload] entry: T, approval: Claim<'_>, ledger: &mut Vec<T>) -> Result<usize, Error>
where
    T: Serialize + DeserializeOwned + Clone,
{
    approval.assert_active()?;
    ledger.push(entry.clone());
    Ok(ledger.len())
}

/// A payload with a field the approval does not cover.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Note {
    text: String,
    #[serde(skip)]
    scratch: String,
}

#[requires_approval(operation = "note.echo")]
fn echo(#[payload] note: Note, approval: Claim<'_>) -> Result<Note, Error> {
    approval.assert_active()?;
    Ok(note.clone())
}

struct Fixture {
    _dir: TempDir,
    gate: Gate,
    clock: ManualClock,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = ManualClock::new(Timestamp::from_unix_millis(1_796_000_000_000));
        let gate = Gate::builder()
            .dir(dir.path().join("gate"))
            .clock(clock.clone())
            .open()
            .expect("open gate");
        Self {
            _dir: dir,
            gate,
            clock,
        }
    }

    fn ask<T: Serialize>(&self, action: &str, operation: &str, payload: &T) -> RequestId {
        let ask = NewRequest::new(action, "the invoice is due")
            .operation(operation)
            .payload(CanonicalPayload::from_serialize(payload).expect("payload"));
        self.gate
            .request_approval(ask)
            .expect("request")
            .request
            .id()
    }

    fn approved<T: Serialize>(&self, action: &str, operation: &str, payload: &T) -> RequestId {
        let id = self.ask(action, operation, payload);
        self.gate
            .approve(id, &Decision::by("alice"))
            .expect("approve");
        id
    }

    fn approved_invoice(&self) -> RequestId {
        self.approved(ACTION, "smtp.send", &invoice())
    }

    fn approval(&self, id: RequestId) -> Claim<'_> {
        Claim::new(&self.gate, id, ACTION)
    }

    fn events(&self, id: RequestId) -> Vec<(AuditEvent, Option<String>)> {
        self.gate
            .audit_records()
            .expect("audit")
            .into_iter()
            .filter(|record| record.id == id)
            .map(|record| {
                let outcome = record.details.get("outcome").map(ToString::to_string);
                (record.event, outcome)
            })
            .collect()
    }
}

#[test]
fn body_runs_exactly_once_after_approval() {
    let fx = Fixture::new();
    let mailer = Mailer::default();
    let id = fx.approved_invoice();

    assert_eq!(mailer.send(invoice(), fx.approval(id)).unwrap(), 1);
    assert_eq!(*mailer.outbox.borrow(), vec![invoice()]);

    let replay = mailer.send(invoice(), fx.approval(id)).unwrap_err();
    assert!(matches!(replay.gate(), Error::AlreadyConsumed(got) if *got == id));
    assert_eq!(mailer.outbox.borrow().len(), 1, "the body ran twice");

    let events: Vec<_> = fx.events(id).into_iter().map(|(event, _)| event).collect();
    assert_eq!(
        events,
        [
            AuditEvent::Requested,
            AuditEvent::Approved,
            AuditEvent::Consumed,
            AuditEvent::ExecutionStarted,
            AuditEvent::ExecutionFinished,
            AuditEvent::ConsumeReplayed,
        ]
    );
}

#[test]
fn body_never_runs_without_a_usable_approval() {
    let mailer = Mailer::default();
    let refusal = |fx: &Fixture, id| mailer.send(invoice(), fx.approval(id)).unwrap_err();

    let fx = Fixture::new();
    let pending = fx.ask(ACTION, "smtp.send", &invoice());
    assert!(matches!(
        refusal(&fx, pending).gate(),
        Error::NotApproved(_)
    ));

    let fx = Fixture::new();
    let denied = fx.ask(ACTION, "smtp.send", &invoice());
    fx.gate.deny(denied, &Decision::by("alice")).unwrap();
    assert!(matches!(refusal(&fx, denied).gate(), Error::Denied(_)));

    let fx = Fixture::new();
    let expired = fx.ask(ACTION, "smtp.send", &invoice());
    fx.clock.advance(DEFAULT_TTL + Duration::from_secs(1));
    assert!(matches!(refusal(&fx, expired).gate(), Error::Expired(_)));

    let fx = Fixture::new();
    let approved_then_expired = fx.approved_invoice();
    fx.clock.advance(DEFAULT_TTL + Duration::from_secs(1));
    assert!(matches!(
        refusal(&fx, approved_then_expired).gate(),
        Error::ApprovalExpired { .. }
    ));

    let fx = Fixture::new();
    let revoked = fx.approved_invoice();
    fx.gate.revoke(revoked, &Decision::by("alice")).unwrap();
    assert!(matches!(refusal(&fx, revoked).gate(), Error::Revoked(_)));

    let fx = Fixture::new();
    let consumed = fx.approved_invoice();
    let _grant = fx
        .gate
        .consume::<Email>(
            consumed,
            &approval_gate::Binding::new(ACTION)
                .operation("smtp.send")
                .payload_of(&invoice())
                .unwrap(),
        )
        .unwrap();
    assert!(matches!(
        refusal(&fx, consumed).gate(),
        Error::AlreadyConsumed(_)
    ));

    let unknown = "0123456789ab".parse().unwrap();
    assert!(matches!(refusal(&fx, unknown).gate(), Error::NotFound(_)));

    assert!(mailer.outbox.borrow().is_empty(), "a refused body ran");
}

#[test]
fn body_never_runs_for_a_different_payload_action_or_operation() {
    let fx = Fixture::new();
    let mailer = Mailer::default();
    let id = fx.approved_invoice();

    let changed: [fn(&mut Email); 4] = [
        |e| e.to = "mallory@example.com".into(),
        |e| e.subject.push('!'),
        |e| e.body = "Pay to account 666.".into(),
        |e| e.cents += 1,
    ];
    for change in changed {
        let mut email = invoice();
        change(&mut email);
        let refusal = mailer.send(email, fx.approval(id)).unwrap_err();
        assert!(
            matches!(refusal.gate(), Error::PayloadMismatch { .. }),
            "{refusal}"
        );
    }
    let other_action = Claim::new(&fx.gate, id, "send invoice 1042 to mallory");
    let refusal = mailer.send(invoice(), other_action).unwrap_err();
    assert!(matches!(refusal.gate(), Error::ActionMismatch(_)));

    let refusal = mailer.delete(invoice(), fx.approval(id)).unwrap_err();
    assert!(matches!(
        refusal.gate(),
        Error::OperationMismatch { expected: Some(expected), got: Some(got), .. }
            if expected == "smtp.send" && got == "smtp.delete"
    ));
    assert!(mailer.outbox.borrow().is_empty(), "a mismatched body ran");

    // A mismatch does not spend the approval: the exact payload still runs, once.
    assert_eq!(mailer.send(invoice(), fx.approval(id)).unwrap(), 1);
}

#[test]
fn body_sees_the_approved_payload_not_the_callers_value() {
    let fx = Fixture::new();
    let approved = Note {
        text: "ship it".into(),
        scratch: String::new(),
    };
    let id = fx.approved("echo the note", "note.echo", &approved);

    // Equal on every approved byte, different in what the approval does not cover.
    let mine = Note {
        text: "ship it".into(),
        scratch: "caller-only state".into(),
    };
    let seen = echo(mine, Claim::new(&fx.gate, id, "echo the note")).unwrap();
    assert_eq!(seen, approved);
}

#[test]
fn expiry_right_before_the_side_effect_stops_it_and_spends_the_approval() {
    let fx = Fixture::new();
    let mailer = Mailer::default();
    let id = fx.approved_invoice();

    let wait = || fx.clock.advance(DEFAULT_TTL + Duration::from_secs(1));
    let refusal = mailer
        .send_after(invoice(), fx.approval(id), wait)
        .unwrap_err();
    assert!(matches!(refusal.gate(), Error::ApprovalExpired { .. }));
    assert!(mailer.outbox.borrow().is_empty());

    let finished = fx.events(id).pop().unwrap();
    assert_eq!(finished.0, AuditEvent::ExecutionFinished);
    assert_eq!(finished.1.as_deref(), Some("\"error\""));
    let replay = mailer.send(invoice(), fx.approval(id)).unwrap_err();
    assert!(matches!(replay.gate(), Error::AlreadyConsumed(_)));
}

#[test]
fn errors_from_the_body_are_returned_and_recorded_never_retried() {
    let fx = Fixture::new();
    let mailer = Mailer::default();
    let bounce = Email {
        to: "nobody@bounce.example".into(),
        ..invoice()
    };
    let id = fx.approved(ACTION, "smtp.send", &bounce);

    let error = mailer.send(bounce.clone(), fx.approval(id)).unwrap_err();
    assert!(matches!(error, SendError::Smtp(_)), "{error}");
    assert_eq!(fx.events(id).pop().unwrap().1.as_deref(), Some("\"error\""));
    let replay = mailer.send(bounce, fx.approval(id)).unwrap_err();
    assert!(matches!(replay.gate(), Error::AlreadyConsumed(_)));
}

#[test]
fn receivers_by_mut_reference_and_by_value() {
    let fx = Fixture::new();
    let first = fx.approved_invoice();
    let second_email = Email {
        cents: 99,
        ..invoice()
    };
    let second = fx.approved(ACTION, "smtp.send", &second_email);

    let mut batch = Batch::default();
    batch.push(invoice(), fx.approval(first)).unwrap();
    assert!(matches!(
        batch.push(invoice(), fx.approval(first)),
        Err(Error::AlreadyConsumed(_))
    ));
    let sent = batch
        .finish(second_email.clone(), fx.approval(second))
        .unwrap();
    assert_eq!(sent, vec![invoice(), second_email]);
}

#[test]
fn generic_function() {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Entry {
        account: String,
        cents: i64,
    }
    let fx = Fixture::new();
    let entry = Entry {
        account: "rent".into(),
        cents: -90_000,
    };
    let id = fx.approved("append rent to the ledger", "ledger.append", &entry);
    let approval = || Claim::new(&fx.gate, id, "append rent to the ledger");

    let mut ledger = Vec::new();
    let wrong = Entry {
        cents: -9_000_000,
        ..entry.clone()
    };
    assert!(matches!(
        append(wrong, approval(), &mut ledger),
        Err(Error::PayloadMismatch { .. })
    ));
    assert_eq!(append(entry.clone(), approval(), &mut ledger).unwrap(), 1);
    assert!(matches!(
        append(entry.clone(), approval(), &mut ledger),
        Err(Error::AlreadyConsumed(_))
    ));
    assert_eq!(ledger, vec![entry]);
}

#[tokio::test]
async fn async_body_runs_once_after_approval_and_never_otherwise() {
    let fx = Fixture::new();
    let mailer = Mailer::default();
    let id = fx.approved_invoice();

    let mut mine = invoice();
    let pending = mailer.send_async(mine.clone(), fx.approval(id));
    // The caller's own copy changing after the call has no bearing on what runs.
    mine.to = "mallory@example.com".into();
    drop(mine);
    assert_eq!(pending.await.unwrap(), "alice@example.com");
    assert_eq!(*mailer.outbox.borrow(), vec![invoice()]);

    let replay = mailer.send_async(invoice(), fx.approval(id)).await;
    assert!(matches!(
        replay.unwrap_err().gate(),
        Error::AlreadyConsumed(_)
    ));

    let fx = Fixture::new();
    let denied = fx.ask(ACTION, "smtp.send", &invoice());
    fx.gate.deny(denied, &Decision::by("alice")).unwrap();
    let refusal = mailer.send_async(invoice(), fx.approval(denied)).await;
    assert!(matches!(refusal.unwrap_err().gate(), Error::Denied(_)));

    let fx = Fixture::new();
    let id = fx.approved_invoice();
    let changed = Email {
        cents: 1,
        ..invoice()
    };
    let refusal = mailer.send_async(changed, fx.approval(id)).await;
    assert!(matches!(
        refusal.unwrap_err().gate(),
        Error::PayloadMismatch { .. }
    ));
    assert_eq!(mailer.outbox.borrow().len(), 1, "a refused async body ran");
}

#[test]
fn guarded_async_functions_are_send() {
    fn assert_send<F: Send>(_: &F) {}
    struct SyncMailer;
    impl SyncMailer {
        #[requires_approval(operation = "smtp.send")]
        async fn send(&self, #[payload] email: Email, approval: Claim<'_>) -> Result<(), Error> {
            approval.assert_active()?;
            tokio::task::yield_now().await;
            drop(email.clone());
            Ok(())
        }
    }
    let fx = Fixture::new();
    let id = fx.approved_invoice();
    let future = SyncMailer.send(invoice(), fx.approval(id));
    assert_send(&future);
}
