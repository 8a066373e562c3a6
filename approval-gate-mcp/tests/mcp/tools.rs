//! Every tool on its happy path and on each refusal, over real stdio.

use std::time::Duration;

use approval_gate::{Decision, Limits, NewRequest, RequestId};
use serde_json::{Value, json};

use crate::support::{Reply, Session, file};

const ACTION: &str = "send email to alice@example.com, subject: Invoice 1042";

fn invoice() -> Value {
    json!({ "to": "alice@example.com", "subject": "Invoice 1042", "cents": 125_000 })
}

/// Files the invoice request over MCP, checking the answer.
async fn request_invoice(session: &Session) -> RequestId {
    let requested = session
        .call(
            "request_approval",
            json!({
                "action": ACTION,
                "reason": "the invoice is due",
                "requestedBy": "billing-agent",
                "ttlSeconds": 600,
                "operation": "smtp.send",
                "payload": invoice(),
            }),
        )
        .await
        .ok();
    let id: RequestId = requested["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(requested["status"], "pending");
    assert_eq!(requested["effectiveStatus"], "pending");
    assert_eq!(requested["deduplicated"], false);
    assert_eq!(requested["operation"], "smtp.send");
    assert_eq!(requested["payloadDigest"].as_str().unwrap().len(), 64);
    assert_eq!(
        requested["approveCommand"],
        format!("approval-gate approve {id}")
    );
    assert!(
        requested["note"]
            .as_str()
            .unwrap()
            .contains(&format!("`approval-gate approve {id}`"))
    );
    id
}

async fn consume(
    session: &Session,
    id: RequestId,
    operation: Option<&str>,
    payload: Value,
) -> Reply {
    consume_as(session, id, ACTION, operation, payload).await
}

async fn consume_as(
    session: &Session,
    id: RequestId,
    action: &str,
    operation: Option<&str>,
    payload: Value,
) -> Reply {
    let mut arguments = json!({ "id": id.to_string(), "action": action, "payload": payload });
    if let Some(operation) = operation {
        arguments["operation"] = json!(operation);
    }
    session.call("consume_approval", arguments).await
}

#[tokio::test]
async fn requests_are_filed_once_and_checked() {
    let session = Session::start().await;
    let id = request_invoice(&session).await;
    // Asking again while pending files nothing new (the seed's spellings work too).
    let again = session
        .call(
            "request_approval",
            json!({
                "action": ACTION,
                "reason": "asking twice",
                "requested_by": "billing-agent",
                "ttl_seconds": 600,
                "operation": "smtp.send",
                "payload": invoice(),
            }),
        )
        .await
        .ok();
    assert_eq!(again["id"], id.to_string());
    assert_eq!(again["deduplicated"], true);

    let checked = session
        .call("check_approval", json!({ "id": id.to_string() }))
        .await
        .ok();
    assert_eq!(checked["effectiveStatus"], "pending");
    assert_eq!(checked["requestedBy"], "billing-agent");
    assert_eq!(checked["payload"], invoice());
    // Consuming before a decision is refused and spends nothing.
    consume(&session, id, Some("smtp.send"), invoice())
        .await
        .refused("not_approved");
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_approval_is_consumed_once_for_exactly_what_was_approved() {
    let session = Session::start().await;
    let id = request_invoice(&session).await;
    session
        .gate()
        .approve(id, &Decision::by("alice").reason("looks right"))
        .unwrap();
    let waited = session
        .call("wait_for_approval", json!({ "id": id.to_string() }))
        .await
        .ok();
    assert_eq!(waited["status"], "approved");
    assert_eq!(waited["effectiveStatus"], "approved_unconsumed");
    assert_eq!(waited["decidedBy"], "alice");
    assert!(
        waited["note"]
            .as_str()
            .unwrap()
            .contains("consume_approval")
    );

    // Mismatches are refused and do not spend the approval.
    let mismatch = consume_as(
        &session,
        id,
        "send email to mallory@example.com",
        Some("smtp.send"),
        invoice(),
    )
    .await
    .refused("action_mismatch");
    assert_eq!(mismatch["effectiveStatus"], "approved_unconsumed");
    consume(&session, id, Some("smtp.delete"), invoice())
        .await
        .refused("operation_mismatch");
    consume(&session, id, None, invoice())
        .await
        .refused("operation_mismatch");
    let mut other = invoice();
    other["to"] = json!("mallory@example.com");
    consume(&session, id, Some("smtp.send"), other)
        .await
        .refused("payload_mismatch");
    // `null` is not "no payload": it is refused before anything is compared.
    consume(&session, id, Some("smtp.send"), Value::Null)
        .await
        .refused("invalid_payload");
    session
        .call(
            "consume_approval",
            json!({ "id": id.to_string(), "action": ACTION, "operation": "smtp.send" }),
        )
        .await
        .refused("payload_mismatch");

    // Key order is not part of the payload: the canonical form is.
    let reordered =
        json!({ "cents": 125_000, "subject": "Invoice 1042", "to": "alice@example.com" });
    let consumed = consume(&session, id, Some("smtp.send"), reordered.clone())
        .await
        .ok();
    assert_eq!(consumed["ok"], true);
    assert_eq!(consumed["effectiveStatus"], "consumed");
    let replay = consume(&session, id, Some("smtp.send"), reordered)
        .await
        .refused("already_consumed");
    assert_eq!(replay["effectiveStatus"], "consumed");

    let checked = session
        .call("check_approval", json!({ "id": id.to_string() }))
        .await
        .ok();
    assert_eq!(checked["effectiveStatus"], "consumed");
    session
        .call("wait_for_approval", json!({ "id": id.to_string() }))
        .await
        .refused("already_consumed");
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn deny_is_allowed_and_ends_everything() {
    let session = Session::start().await;
    let id = session.request("delete the staging database").await;
    let denied = session
        .call(
            "decide_approval",
            json!({ "id": id.to_string(), "approve": false, "reason": "not today" }),
        )
        .await
        .ok();
    assert_eq!(denied["status"], "denied");
    assert_eq!(denied["effectiveStatus"], "denied");
    assert_eq!(denied["decisionReason"], "not today");
    assert!(
        denied["decidedBy"]
            .as_str()
            .unwrap()
            .starts_with("agent via approval-gate-mcp")
    );

    let waited = session
        .call("wait_for_approval", json!({ "id": id.to_string() }))
        .await
        .refused("denied");
    assert_eq!(waited["effectiveStatus"], "denied");
    assert!(waited["message"].as_str().unwrap().contains("not today"));
    session
        .call(
            "consume_approval",
            json!({ "id": id.to_string(), "action": "delete the staging database" }),
        )
        .await
        .refused("denied");
    let again = session
        .call(
            "decide_approval",
            json!({ "id": id.to_string(), "approve": false }),
        )
        .await
        .refused("wrong_state");
    assert_eq!(again["effectiveStatus"], "denied");
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_human_denial_reaches_the_agent_with_its_reason() {
    let session = Session::start().await;
    let id = session.request("publish the release").await;
    session
        .gate()
        .deny(id, &Decision::by("alice").reason("wrong recipient"))
        .unwrap();
    let refusal = session
        .call("wait_for_approval", json!({ "id": id.to_string() }))
        .await
        .refused("denied");
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .contains("wrong recipient")
    );
    assert_eq!(refusal["id"], id.to_string());
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn revoked_and_expired_are_told_apart() {
    let session = Session::start().await;
    let gate = session.gate();

    let revoked = file(&gate, NewRequest::new("deploy v2", "release day"));
    gate.approve(revoked, &Decision::by("alice")).unwrap();
    gate.revoke(revoked, &Decision::by("alice").reason("changed my mind"))
        .unwrap();
    session
        .call("wait_for_approval", json!({ "id": revoked.to_string() }))
        .await
        .refused("revoked");
    session
        .call(
            "consume_approval",
            json!({ "id": revoked.to_string(), "action": "deploy v2" }),
        )
        .await
        .refused("revoked");

    // Filed an hour ago with a ten-minute life: expired before anyone decided.
    let past = session.gate_in_the_past(Duration::from_secs(3600));
    let expired = file(
        &past,
        NewRequest::new("pay invoice 7", "due").ttl(Duration::from_secs(600)),
    );
    let checked = session
        .call("check_approval", json!({ "id": expired.to_string() }))
        .await
        .ok();
    assert_eq!(checked["effectiveStatus"], "expired");
    session
        .call("wait_for_approval", json!({ "id": expired.to_string() }))
        .await
        .refused("expired");
    session
        .call(
            "consume_approval",
            json!({ "id": expired.to_string(), "action": "pay invoice 7" }),
        )
        .await
        .refused("expired");
    session
        .call(
            "decide_approval",
            json!({ "id": expired.to_string(), "approve": false }),
        )
        .await
        .refused("expired");

    // Approved in time, never used, and now past its expiry.
    let stale = file(
        &past,
        NewRequest::new("pay invoice 8", "due").ttl(Duration::from_secs(600)),
    );
    past.approve(stale, &Decision::by("alice")).unwrap();
    let waited = session
        .call("wait_for_approval", json!({ "id": stale.to_string() }))
        .await
        .refused("approval_expired");
    assert_eq!(waited["effectiveStatus"], "approved_expired");
    session
        .call(
            "consume_approval",
            json!({ "id": stale.to_string(), "action": "pay invoice 8" }),
        )
        .await
        .refused("approval_expired");
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn unknown_and_malformed_ids_are_refused() {
    let session = Session::start().await;
    let nobody = "0123456789ab";
    for (tool, arguments) in [
        ("check_approval", json!({ "id": nobody })),
        ("wait_for_approval", json!({ "id": nobody })),
        ("consume_approval", json!({ "id": nobody, "action": "x" })),
        ("decide_approval", json!({ "id": nobody, "approve": false })),
    ] {
        let refusal = session.call(tool, arguments).await.refused("not_found");
        assert_eq!(refusal["id"], nobody, "{tool}");
    }
    for bad in [
        "../x",
        "A1B2C3D4E5F6",
        "",
        "a1b2c3d4e5f6a",
        "a1b2c3d4e5f6\n",
        "../../etc/passwd",
    ] {
        for (tool, arguments) in [
            ("check_approval", json!({ "id": bad })),
            ("wait_for_approval", json!({ "id": bad })),
            ("consume_approval", json!({ "id": bad, "action": "x" })),
            ("decide_approval", json!({ "id": bad, "approve": false })),
            ("list_pending", json!({ "after": bad })),
        ] {
            session.call(tool, arguments).await.refused("invalid_id");
        }
    }
    session
        .call("list_pending", json!({ "after": nobody }))
        .await
        .refused("not_found");
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn list_pending_pages_with_a_cursor() {
    let session = Session::start().await;
    let mut filed = Vec::new();
    for n in 0..3 {
        filed.push(session.request(&format!("action {n}")).await.to_string());
    }
    let first = session
        .call("list_pending", json!({ "limit": 2 }))
        .await
        .ok();
    let items = first["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert!(
        items
            .iter()
            .all(|i| i["effectiveStatus"] == "pending" && i["authorizesExecution"] == false)
    );
    let cursor = first["nextAfter"].as_str().unwrap();
    let second = session
        .call("list_pending", json!({ "limit": 2, "after": cursor }))
        .await
        .ok();
    assert_eq!(second["items"].as_array().unwrap().len(), 1);
    assert!(second["nextAfter"].is_null());
    let mut seen: Vec<String> = items
        .iter()
        .chain(second["items"].as_array().unwrap())
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect();
    seen.sort();
    filed.sort();
    assert_eq!(seen, filed);

    let all = session.call("list_pending", json!({})).await.ok();
    assert_eq!(all["items"].as_array().unwrap().len(), 3);
    for limit in [0, 101] {
        session
            .call("list_pending", json!({ "limit": limit }))
            .await
            .refused("invalid_arguments");
    }
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn bad_input_is_refused_with_the_library_reason() {
    let session = Session::start().await;
    let cases = [
        (json!({ "action": "", "reason": "r" }), "invalid_input"),
        (json!({ "action": "a", "reason": "   " }), "invalid_input"),
        (
            json!({ "action": "a", "reason": "r", "ttlSeconds": 9 }),
            "invalid_input",
        ),
        (
            json!({ "action": "a", "reason": "r", "ttlSeconds": 604_801 }),
            "invalid_input",
        ),
        (
            json!({ "action": "a", "reason": "r", "operation": "smtp send" }),
            "invalid_input",
        ),
        (
            json!({ "action": "a", "reason": "r", "requestedBy": "" }),
            "invalid_input",
        ),
        (
            json!({ "action": "a", "reason": "r", "payload": 9_007_199_254_740_993_u64 }),
            "invalid_payload",
        ),
        (
            json!({ "action": "a", "reason": "r", "payload": { "n": 1.0 } }),
            "invalid_payload",
        ),
        (json!({ "reason": "r" }), "invalid_arguments"),
        (
            json!({ "action": "a", "reason": "r", "ttlSeconds": -5 }),
            "invalid_arguments",
        ),
        (
            json!({ "action": "a", "reason": "r", "ttlSeconds": 60.5 }),
            "invalid_arguments",
        ),
    ];
    for (arguments, code) in cases {
        session
            .call("request_approval", arguments)
            .await
            .refused(code);
    }
    let id = session.request("x").await.to_string();
    for timeout in [0, 3601] {
        session
            .call(
                "wait_for_approval",
                json!({ "id": id, "timeoutSeconds": timeout }),
            )
            .await
            .refused("invalid_arguments");
    }
    // A tool that does not exist is a protocol error, not a tool result.
    let unknown = session
        .try_call("approve_approval", json!({ "id": id }))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_full_queue_refuses_new_requests_but_not_decisions() {
    let session = Session::start().await;
    // The server keeps the default cap; fill it with the library.
    let gate = session.gate();
    let cap = 100;
    assert_eq!(Limits::default(), Limits::default().max_pending(cap));
    let mut first = None;
    for n in 0..cap {
        let id = file(
            &gate,
            NewRequest::new(format!("queued {n}"), "filling the queue"),
        );
        first.get_or_insert(id);
    }
    let refusal = session
        .call(
            "request_approval",
            json!({ "action": "one more", "reason": "r" }),
        )
        .await
        .refused("queue_full");
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .contains("approval queue full")
    );
    // A decision still goes through, and makes room.
    let first = first.unwrap().to_string();
    session
        .call("decide_approval", json!({ "id": first, "approve": false }))
        .await
        .ok();
    session
        .call(
            "request_approval",
            json!({ "action": "one more", "reason": "r" }),
        )
        .await
        .ok();
    session.client.cancel().await.unwrap();
}
