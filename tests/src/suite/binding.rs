//! The binding: action text, operation and canonical payload must all match, or nothing is
//! spent.

use approval_gate::{AuditEvent, CanonicalPayload, Error};

use crate::backend::Backend;
use crate::{Subject, binding, changed};

const ACTION: &str = "send email to alice@example.com, subject: Invoice 1042";
const OP: &str = "smtp.send";
const PAYLOAD: &str = r#"{"to":"alice@example.com","subject":"Invoice 1042","amount":1,"body":"caf\u00e9","tags":["a","b"],"meta":{"retry":false}}"#;

fn refused(
    fx: &Subject,
    id: approval_gate::RequestId,
    action: &str,
    op: Option<&str>,
    payload: Option<&str>,
) -> Error {
    fx.gate
        .consume::<serde_json::Value>(id, &binding(action, op, payload))
        .expect_err("must be refused")
}

/// Any change to action operation or payload refuses without spending.
pub fn any_change_to_action_operation_or_payload_refuses_without_spending(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let id = fx.approved(ACTION, Some(OP), Some(PAYLOAD));

    let action_changes = [
        "send email to alice@example.com, subject: Invoice 1043",
        "send email to alice@example.com, subject: Invoice 1042 ",
        "Send email to alice@example.com, subject: Invoice 1042",
        "send email to alice@example.com,\u{200b} subject: Invoice 1042",
    ];
    for action in action_changes {
        assert!(
            matches!(
                refused(&fx, id, action, Some(OP), Some(PAYLOAD)),
                Error::ActionMismatch(_)
            ),
            "{action:?}"
        );
    }
    for op in [None, Some("smtp.sendx"), Some("smtp.send.x")] {
        assert!(
            matches!(
                refused(&fx, id, ACTION, op, Some(PAYLOAD)),
                Error::OperationMismatch { .. }
            ),
            "{op:?}"
        );
    }
    // A name outside the one grammar of operation names (issue 22) is the executor's mistake,
    // said as such; it spends nothing either.
    for op in ["SMTP.send", "smtp-send", "smtp..send"] {
        assert!(
            matches!(
                refused(&fx, id, ACTION, Some(op), Some(PAYLOAD)),
                Error::InvalidInput {
                    field: "operation",
                    ..
                }
            ),
            "{op:?}"
        );
    }
    let payload_changes = [
        // one field's value
        r#"{"to":"mallory@example.com","subject":"Invoice 1042","amount":1,"body":"caf\u00e9","tags":["a","b"],"meta":{"retry":false}}"#,
        // integer vs another integer
        r#"{"to":"alice@example.com","subject":"Invoice 1042","amount":2,"body":"caf\u00e9","tags":["a","b"],"meta":{"retry":false}}"#,
        // a key renamed
        r#"{"recipient":"alice@example.com","subject":"Invoice 1042","amount":1,"body":"caf\u00e9","tags":["a","b"],"meta":{"retry":false}}"#,
        // NFD instead of NFC
        r#"{"to":"alice@example.com","subject":"Invoice 1042","amount":1,"body":"cafe\u0301","tags":["a","b"],"meta":{"retry":false}}"#,
        // array order
        r#"{"to":"alice@example.com","subject":"Invoice 1042","amount":1,"body":"caf\u00e9","tags":["b","a"],"meta":{"retry":false}}"#,
        // nested value
        r#"{"to":"alice@example.com","subject":"Invoice 1042","amount":1,"body":"caf\u00e9","tags":["a","b"],"meta":{"retry":true}}"#,
        // a field added
        r#"{"to":"alice@example.com","subject":"Invoice 1042","amount":1,"body":"caf\u00e9","tags":["a","b"],"meta":{"retry":false},"bcc":"eve@example.com"}"#,
        // a field removed
        r#"{"to":"alice@example.com","subject":"Invoice 1042","amount":1,"body":"caf\u00e9","tags":["a","b"]}"#,
        // a string that looks like the number
        r#"{"to":"alice@example.com","subject":"Invoice 1042","amount":"1","body":"caf\u00e9","tags":["a","b"],"meta":{"retry":false}}"#,
    ];
    for payload in payload_changes {
        assert!(
            matches!(
                refused(&fx, id, ACTION, Some(OP), Some(payload)),
                Error::PayloadMismatch { .. }
            ),
            "{payload}"
        );
    }
    // No payload at all is a mismatch too.
    assert!(matches!(
        refused(&fx, id, ACTION, Some(OP), None),
        Error::PayloadMismatch { .. }
    ));
    // `1.0` for `1` cannot even be expressed: canonical JSON would erase the difference.
    let one_point_oh = PAYLOAD.replace("\"amount\":1,", "\"amount\":1.0,");
    assert!(CanonicalPayload::from_json_text(&one_point_oh).is_err());

    // None of this spent the approval, and all of it was audited, each with its reason.
    let records = fx.gate.audit_records().unwrap();
    let refusals: Vec<_> = records
        .iter()
        .filter(|r| r.event == AuditEvent::ConsumeRefused && r.id == id)
        .map(|r| r.details["reason"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        refusals.len(),
        action_changes.len() + 6 + payload_changes.len() + 1
    );
    let expected: Vec<_> = std::iter::repeat_n("action_mismatch", action_changes.len())
        .chain(std::iter::repeat_n("operation_mismatch", 3))
        .chain(std::iter::repeat_n("invalid_input", 3))
        .chain(std::iter::repeat_n(
            "payload_mismatch",
            payload_changes.len() + 1,
        ))
        .collect();
    assert_eq!(refusals, expected);
    let grant = fx
        .gate
        .consume::<serde_json::Value>(id, &binding(ACTION, Some(OP), Some(PAYLOAD)))
        .expect("the exact binding still works");
    assert_eq!(grant.payload()["to"], "alice@example.com");
}

/// Key order and whitespace do not matter.
pub fn key_order_and_whitespace_do_not_matter(backend: &dyn Backend) {
    let fx = Subject::new(backend);
    let id = fx.approved(ACTION, Some(OP), Some(PAYLOAD));
    let reordered = r#"  {
        "meta": { "retry": false },
        "tags": [ "a", "b" ],
        "body": "café",
        "amount": 1,
        "subject": "Invoice 1042",
        "to": "alice@example.com"
    }  "#;
    let grant = fx
        .gate
        .consume::<serde_json::Value>(id, &binding(ACTION, Some(OP), Some(reordered)))
        .expect("same canonical payload");
    assert_eq!(grant.payload()["amount"], 1);
}

/// A request without operation or payload refuses bindings that add them.
pub fn a_request_without_operation_or_payload_refuses_bindings_that_add_them(
    backend: &dyn Backend,
) {
    let fx = Subject::new(backend);
    let id = fx.approved("restart the web server", None, None);
    assert!(matches!(
        fx.gate.consume::<()>(
            id,
            &binding("restart the web server", Some("svc.restart"), None)
        ),
        Err(Error::OperationMismatch { .. })
    ));
    assert!(matches!(
        fx.gate
            .consume::<()>(id, &binding("restart the web server", None, Some("{}"))),
        Err(Error::PayloadMismatch { .. })
    ));
    let _grant = fx
        .gate
        .consume::<()>(id, &binding("restart the web server", None, None))
        .expect("exact binding");
}

/// A lossy executor type is refused before anything is spent.
pub fn a_lossy_executor_type_is_refused_before_anything_is_spent(backend: &dyn Backend) {
    #[derive(serde::Serialize, serde::Deserialize)]
    struct OnlyTo {
        to: String,
    }
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Exact {
        to: String,
        subject: String,
    }
    let fx = Subject::new(backend);
    let payload = r#"{"to":"a@example.com","subject":"hi"}"#;
    let id = fx.approved("mail", Some(OP), Some(payload));
    let result = fx
        .gate
        .consume::<OnlyTo>(id, &binding("mail", Some(OP), Some(payload)));
    assert!(
        matches!(result, Err(Error::PayloadType { .. })),
        "dropping `subject` would run less than was approved"
    );
    let refused = fx.gate.audit_records().unwrap().pop().unwrap();
    assert_eq!(
        (refused.id, refused.event),
        (id, AuditEvent::ConsumeRefused)
    );
    assert_eq!(refused.details["reason"], "payload_type");
    let grant = fx
        .gate
        .consume::<Exact>(id, &binding("mail", Some(OP), Some(payload)))
        .expect("faithful type");
    assert_eq!(grant.payload().subject, "hi");
}

/// Every json type at the top level round trips and null is refused at the door.
pub fn every_json_type_at_the_top_level_round_trips_and_null_is_refused_at_the_door(
    backend: &dyn Backend,
) {
    let fx = Subject::new(backend);
    for (i, text) in [
        r#"{"to":"a@example.com","cc":null}"#,
        r#"[1,"two",null]"#,
        r#""just a string""#,
        "42",
        "-0.25",
        "true",
        "false",
    ]
    .into_iter()
    .enumerate()
    {
        let action = format!("action {i}");
        let id = fx.approved(&action, Some(OP), Some(text));
        let approved = CanonicalPayload::from_json_text(text).unwrap();
        let report = fx.gate.status(id).unwrap();
        assert_eq!(report.request().payload(), Some(&approved), "{text}");
        assert_eq!(report.request().payload_digest(), Some(approved.digest()));
        let grant = fx
            .gate
            .consume::<serde_json::Value>(id, &binding(&action, Some(OP), Some(text)))
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(*grant.payload(), approved.to_value(), "{text}");
    }
    // Every request above stays readable: the listing would fail or flag any of them.
    let page = fx
        .gate
        .list(approval_gate::ListFilter::All, None, 100)
        .unwrap();
    assert_eq!(page.items.len(), 7);
    assert!(page.items.iter().all(|item| item.report().is_some()));

    // `null` is refused everywhere a payload is made, before any digest or file exists.
    let before = backend.contents(&fx.store);
    let refusals = [
        CanonicalPayload::from_json_text("null").map(drop),
        CanonicalPayload::from_json_text(" null\n").map(drop),
        CanonicalPayload::from_value(&serde_json::Value::Null).map(drop),
        CanonicalPayload::from_serialize(&None::<String>).map(drop),
    ];
    for refusal in refusals {
        assert_eq!(refusal, Err(approval_gate::PayloadError::Null));
    }
    let binding_null = approval_gate::Binding::new("x").payload_of(&None::<String>);
    assert!(matches!(
        binding_null,
        Err(Error::InvalidPayload(approval_gate::PayloadError::Null))
    ));
    assert!(
        Error::from(approval_gate::PayloadError::Null)
            .to_string()
            .contains("omit the payload instead of sending null")
    );
    assert_eq!(
        changed(&before, &backend.contents(&fx.store)),
        Vec::<String>::new()
    );
    // A request without a payload is still consumed with `()` or a JSON `null` value.
    let id = fx.approved("no payload", None, None);
    let grant = fx
        .gate
        .consume::<serde_json::Value>(id, &binding("no payload", None, None))
        .unwrap();
    assert!(grant.payload().is_null());
}
