//! No tool, argument or sequence of calls over MCP produces an approved request.

use approval_gate::limits::MAX_PAGE;
use approval_gate::{AuditEvent, ListFilter, Status};
use serde_json::{Value, json};

use crate::support::{Session, backend};

/// Every way to ask `decide_approval` for a yes: each must be refused.
fn approve_attempts(target: &str) -> Vec<Value> {
    vec![
        json!({ "id": target, "approve": true }),
        json!({ "id": target, "approve": true, "reason": "the human said yes" }),
        json!({ "id": "not-an-id", "approve": true }),
        json!({ "approve": true }),
        json!({ "id": target, "approve": "true" }),
        json!({ "id": target, "approve": 1 }),
        json!({ "id": target, "approve": [true] }),
        json!({ "id": target, "approve": null }),
        json!({ "id": target }),
        json!({ "id": target, "approve": false, "status": "approved" }),
        json!({ "id": target, "approve": false, "decision": "approve" }),
        json!({ "id": target, "approve": false, "approved": true }),
        json!({ "id": target, "Approve": true }),
    ]
}

/// Fields that would make a request arrive pre-approved, if they were read.
fn smuggled_fields(target: &str) -> Vec<Value> {
    vec![
        json!({ "status": "approved" }),
        json!({ "approved": true }),
        json!({ "decidedBy": "alice" }),
        json!({ "decidedAt": "2026-01-01T00:00:00.000Z" }),
        json!({ "effectiveStatus": "approved_unconsumed" }),
        json!({ "authorizesExecution": true }),
        json!({ "id": target }),
    ]
}

#[tokio::test]
async fn nothing_over_mcp_approves() {
    let session = Session::start().await;
    let target = session
        .request("wire $10,000 to account 42")
        .await
        .to_string();
    for arguments in approve_attempts(&target) {
        let reply = session.call("decide_approval", arguments.clone()).await;
        assert!(
            reply.is_error,
            "{arguments} must be refused: {}",
            reply.content
        );
    }
    let refusal = session
        .call("decide_approval", json!({ "id": target, "approve": true }))
        .await
        .refused("approve_not_allowed");
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .contains(&format!("`approval-gate approve {target}`")),
        "names the human's command: {refusal}"
    );
    for extra in smuggled_fields(&target) {
        let mut arguments = json!({ "action": "wire $10,000 to account 42", "reason": "r" });
        arguments
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        session
            .call("request_approval", arguments)
            .await
            .refused("invalid_arguments");
    }
    // Consuming, checking and waiting never move a request forward either.
    session
        .call(
            "consume_approval",
            json!({ "id": target, "action": "wire $10,000 to account 42" }),
        )
        .await
        .refused("not_approved");
    session
        .call(
            "wait_for_approval",
            json!({ "id": target, "timeoutSeconds": 1 }),
        )
        .await
        .refused("timeout");
    for tool in [
        "approve_approval",
        "approve",
        "approve_request",
        "set_status",
    ] {
        assert!(
            session
                .try_call(tool, json!({ "id": target }))
                .await
                .is_err(),
            "{tool}"
        );
    }
    let checked = session
        .call("check_approval", json!({ "id": target }))
        .await
        .ok();
    assert_eq!(checked["status"], "pending");
    assert_nothing_was_approved(&session);
    session.client.cancel().await.unwrap();
}

/// The store agrees: nothing approved, and no approval ever recorded.
fn assert_nothing_was_approved(session: &Session) {
    let gate = session.gate();
    let all = gate.list(ListFilter::All, None, MAX_PAGE).unwrap();
    assert!(!all.items.is_empty());
    assert!(
        all.items
            .iter()
            .all(|item| item.report().unwrap().request().status() != Status::Approved)
    );
    assert!(
        gate.list(ListFilter::Approved, None, MAX_PAGE)
            .unwrap()
            .items
            .is_empty()
    );
    let records = gate.audit_records().unwrap();
    assert!(records.iter().all(|r| r.event != AuditEvent::Approved));
    gate.verify_audit().unwrap();
    // And past the gate, in what the store itself holds: every audit line (a line of the
    // directory store's log, a row of the database's) names its event, none of them approved.
    let mut events = 0;
    for (name, bytes) in backend().contents(&session.store) {
        for line in String::from_utf8_lossy(&bytes).lines() {
            if let Ok(Value::Object(record)) = serde_json::from_str(line)
                && let Some(event) = record.get("event")
            {
                events += 1;
                assert_ne!(event, "approved", "{name}: {line}");
            }
        }
    }
    assert_eq!(events, records.len(), "every audit record was seen");
}
