//! The library in an application's own traces: each public operation is a span (`approval_gate`:
//! operation, request, store) ending with its outcome, and each step of the store a span
//! inside it (`store`: step, request, store) ending with its own.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use approval_gate::{Binding, Decision, Gate, NewRequest};
use tracing_subscriber::fmt::MakeWriter;

/// What the subscriber wrote.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Self;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[test]
fn each_operation_and_each_store_step_is_a_span_ending_with_its_outcome() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_max_level(tracing::Level::TRACE)
        .finish();
    let tmp = tempfile::tempdir().unwrap();
    let gate = Gate::open(tmp.path().join("g")).unwrap();
    let id = tracing::subscriber::with_default(subscriber, || {
        let id = gate
            .request_approval(NewRequest::new("send it", "agent"))
            .unwrap()
            .request
            .id();
        gate.approve(id, &Decision::by("alice")).unwrap();
        gate.consume::<()>(id, &Binding::new("something else"))
            .unwrap_err();
        let grant = gate.consume::<()>(id, &Binding::new("send it")).unwrap();
        assert_eq!(grant.id(), id);
        id
    });
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let has = |parts: &[&str]| {
        lines
            .iter()
            .any(|line| parts.iter().all(|p| line.contains(p)))
    };
    let id = format!("id=\"{id}\"");
    for (operation, outcome) in [
        ("request", "ok"),
        ("approve", "ok"),
        ("consume", "action_mismatch"),
        ("consume", "ok"),
    ] {
        assert!(
            has(&[
                "approval_gate{",
                &format!("operation=\"{operation}\""),
                "store=\"dir\"",
                &format!("outcome=\"{outcome}\""),
            ]),
            "no {operation} ending {outcome}:\n{text}"
        );
    }
    // The request's id is on its operations, filing included (known once filed).
    assert!(has(&["operation=\"request\"", &id]), "{text}");
    assert!(has(&["operation=\"approve\"", &id]), "{text}");
    // The store's steps, inside the operations.
    for step in ["file", "decide", "spend", "refuse"] {
        assert!(
            has(&["store{", &format!("step=\"{step}\""), "outcome=\"ok\""]),
            "no {step} step:\n{text}"
        );
    }
}
