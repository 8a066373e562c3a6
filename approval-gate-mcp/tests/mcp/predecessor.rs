//! An agent written for approval-gate-mcp (Node), the project this one succeeds, works against
//! this server unchanged: the predecessor's own example calls (its README, its v0.1.0 tool
//! definitions, its 0.4 README), with its argument names, get answers carrying every field it
//! answered with. Ours are a superset; where they cannot be (a bare array from
//! `list_pending`, operation names), the difference is the one documented in `docs/mcp.md`.
//!
//! The calls are written here by hand from the predecessor's documentation; none of its code
//! is in this repository.

use approval_gate::Decision;
use serde_json::{Value, json};

use crate::support::{Reply, Session};

/// The predecessor's README example: an agent about to email a customer.
const ACTION: &str = "send email to alice@example.com, subject: Invoice 1042";

/// `2026-12-06T21:11:48.942Z`: `Date.prototype.toISOString()`, as the predecessor wrote
/// every time.
#[track_caller]
fn assert_iso_millis(value: &Value) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("{value} is a string"));
    let shape: String = text
        .chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect();
    assert_eq!(shape, "9999-99-99T99:99:99.999Z", "{text}");
}

/// The predecessor's record fields, as its `check_approval` answered them.
#[track_caller]
fn assert_record(answer: &Value, id: &str, status: &str) {
    assert_eq!(answer["id"], id, "{answer}");
    assert_eq!(answer["status"], status, "{answer}");
    assert_eq!(answer["action"], ACTION, "{answer}");
    assert_eq!(answer["reason"], "customer asked", "{answer}");
    assert_eq!(answer["requestedBy"], "agent-1", "{answer}");
    assert_iso_millis(&answer["createdAt"]);
    assert_iso_millis(&answer["expiresAt"]);
}

/// `request_approval` exactly as the predecessor's tool took it (`snake_case` names).
async fn file_as_the_predecessor(session: &Session) -> String {
    let answer = session
        .call(
            "request_approval",
            json!({
                "action": ACTION,
                "reason": "customer asked",
                "requested_by": "agent-1",
                "ttl_seconds": 3600,
            }),
        )
        .await
        .ok();
    // The predecessor answered {id, status, expiresAt, note}.
    let id = answer["id"].as_str().expect("an id").to_owned();
    assert_eq!(id.len(), 12);
    assert!(
        id.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert_eq!(answer["status"], "pending");
    assert_iso_millis(&answer["expiresAt"]);
    let note = answer["note"].as_str().expect("a note");
    assert!(
        note.contains(&format!("approval-gate approve {id}")),
        "{note}"
    );
    id
}

#[tokio::test]
async fn the_v010_flow_request_check_wait_deny_answers_the_predecessors_fields() {
    let session = Session::start().await;
    let id = file_as_the_predecessor(&session).await;

    let checked = session
        .call("check_approval", json!({ "id": id }))
        .await
        .ok();
    assert_record(&checked, &id, "pending");
    assert_eq!(checked["effectiveStatus"], "pending");
    assert!(checked.get("decidedAt").is_none());

    // The human approves, in their own terminal; `wait_for_approval {id}` (the README's call,
    // defaults for the rest) answers the record, status exactly `approved`.
    let human = session.gate();
    human
        .approve(
            id.parse().unwrap(),
            &Decision::by("alice").reason("looks right"),
        )
        .unwrap();
    let waited = session
        .call("wait_for_approval", json!({ "id": id }))
        .await
        .ok();
    assert_record(&waited, &id, "approved");
    assert_eq!(waited["effectiveStatus"], "approved_unconsumed");
    assert_eq!(waited["decisionReason"], "looks right");
    assert_iso_millis(&waited["decidedAt"]);

    // `decide_approval` with the predecessor's arguments: a deny is recorded with its reason.
    let other = file_other(&session).await;
    let denied = session
        .call(
            "decide_approval",
            json!({ "id": other, "approve": false, "reason": "wrong recipient" }),
        )
        .await
        .ok();
    assert_eq!(denied["id"], other);
    assert_eq!(denied["status"], "denied");
    assert_eq!(denied["decisionReason"], "wrong recipient");
    assert_iso_millis(&denied["decidedAt"]);

    // Waiting on it: the predecessor answered the record; ours is a refusal that carries it.
    let waited = session
        .call("wait_for_approval", json!({ "id": other }))
        .await
        .refused("denied");
    assert_eq!(waited["status"], "denied");
    assert_eq!(waited["action"], "deny me");
    assert_eq!(waited["decisionReason"], "wrong recipient");
    assert_eq!(waited["decidedAt"], denied["decidedAt"]);
    assert_eq!(waited["createdAt"], denied["createdAt"]);
    assert!(waited["note"].as_str().unwrap().contains("do not proceed"));
    session.client.cancel().await.unwrap();
}

async fn file_other(session: &Session) -> String {
    let answer = session
        .call(
            "request_approval",
            json!({ "action": "deny me", "reason": "r" }),
        )
        .await
        .ok();
    answer["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_timed_out_wait_carries_the_request_with_status_pending_and_a_note() {
    let session = Session::start().await;
    let id = file_as_the_predecessor(&session).await;
    // The predecessor's full argument list, `poll_seconds` included.
    let reply = session
        .call(
            "wait_for_approval",
            json!({ "id": id, "timeout_seconds": 1, "poll_seconds": 1 }),
        )
        .await;
    // Ours stays a refusal (isError, ok: false, code timeout) ...
    let timeout = reply.refused("timeout");
    assert_eq!(timeout["effectiveStatus"], "pending");
    // ... and answers what the predecessor answered: the record, status pending, and a note
    // saying not approved, do not proceed.
    assert_record(&timeout, &id, "pending");
    let note = timeout["note"].as_str().expect("a note").to_lowercase();
    assert!(note.contains("not approved"), "{note}");
    assert!(note.contains("do not proceed"), "{note}");
    assert!(timeout.get("decidedAt").is_none());
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn poll_seconds_is_accepted_in_the_predecessors_bounds() {
    let session = Session::start().await;
    let id = file_as_the_predecessor(&session).await;
    session
        .gate()
        .deny(id.parse().unwrap(), &Decision::by("alice"))
        .unwrap();
    for arguments in [
        json!({ "id": id, "poll_seconds": 1 }),
        json!({ "id": id, "poll_seconds": 60 }),
        json!({ "id": id, "pollSeconds": 5, "timeoutSeconds": 10 }),
    ] {
        // Accepted: the wait runs and answers the decision.
        let denied = session
            .call("wait_for_approval", arguments.clone())
            .await
            .refused("denied");
        assert_eq!(denied["id"], id, "{arguments}");
    }
    for arguments in [
        json!({ "id": id, "poll_seconds": 0 }),
        json!({ "id": id, "poll_seconds": 61 }),
        json!({ "id": id, "poll_seconds": 1.5 }),
        json!({ "id": id, "poll_seconds": 1, "pollSeconds": 1 }),
    ] {
        session
            .call("wait_for_approval", arguments)
            .await
            .refused("invalid_arguments");
    }
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn every_refusal_says_error_as_the_predecessor_did() {
    let session = Session::start().await;
    // The predecessor: {"error": "No request with id 000000000000"}.
    for tool in ["check_approval", "wait_for_approval"] {
        let missing = session
            .call(tool, json!({ "id": "000000000000" }))
            .await
            .refused("not_found");
        let error = missing["error"].as_str().expect("an error field");
        assert!(error.contains("000000000000"), "{tool}: {error}");
        assert_eq!(missing["error"], missing["message"]);
    }
    // Every other kind of refusal carries it too (the shared `refused` helper checks
    // `error` on every refusal of this suite).
    let id = file_as_the_predecessor(&session).await;
    let approve = session
        .call(
            "decide_approval",
            json!({ "id": id, "approve": true, "reason": "ok" }),
        )
        .await
        .refused("approve_not_allowed");
    assert!(
        approve["error"]
            .as_str()
            .unwrap()
            .contains(&format!("approval-gate approve {id}"))
    );
    let unknown = session
        .call("check_approval", json!({ "id": id, "status": "approved" }))
        .await
        .refused("invalid_arguments");
    assert!(unknown["error"].as_str().unwrap().contains("status"));
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn list_pending_pages_with_cursor_and_next_cursor() {
    let session = Session::start().await;
    let first = file_as_the_predecessor(&session).await;
    let second = file_other(&session).await;

    // v0.1.0 took no arguments; 0.4 answered {items, nextCursor}.
    let all = session.call("list_pending", json!({})).await.ok();
    let ids: Vec<&Value> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["id"])
        .collect();
    assert_eq!(ids, [&json!(first), &json!(second)]);
    assert!(all["nextCursor"].is_null(), "{all}");
    assert_record(&all["items"][0], &first, "pending");

    let page = session
        .call("list_pending", json!({ "limit": 1 }))
        .await
        .ok();
    assert_eq!(page["items"][0]["id"], first);
    assert_eq!(page["nextCursor"], first);
    assert_eq!(page["nextCursor"], page["nextAfter"]);
    let next = session
        .call(
            "list_pending",
            json!({ "limit": 1, "cursor": page["nextCursor"] }),
        )
        .await
        .ok();
    assert_eq!(next["items"][0]["id"], second);
    assert_eq!(next["items"].as_array().unwrap().len(), 1);

    // One spelling at a time: which one counts is not for the server to guess.
    session
        .call("list_pending", json!({ "cursor": first, "after": first }))
        .await
        .refused("invalid_arguments");
    session
        .call("list_pending", json!({ "cursor": "not-a-cursor" }))
        .await
        .refused("invalid_id");
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_04_consume_call_spends_once_with_ok() {
    let session = Session::start().await;
    let id = file_as_the_predecessor(&session).await;
    session
        .gate()
        .approve(id.parse().unwrap(), &Decision::by("alice"))
        .unwrap();
    // The 0.4 README: consume_approval {id, action}; proceed only if it returns ok: true.
    let consumed = session
        .call("consume_approval", json!({ "id": id, "action": ACTION }))
        .await
        .ok();
    assert_eq!(consumed["ok"], true);
    assert_eq!(consumed["id"], id);
    let again = session
        .call("consume_approval", json!({ "id": id, "action": ACTION }))
        .await
        .refused("already_consumed");
    assert_eq!(again["ok"], false);
    assert!(again["error"].is_string());
    // A wait on the spent approval: its record says approved, so the refusal carries no
    // record at all; an agent that acts on `status: "approved"` finds none.
    let waited = session
        .call("wait_for_approval", json!({ "id": id }))
        .await
        .refused("already_consumed");
    assert_eq!(waited["effectiveStatus"], "consumed");
    for field in ["status", "action", "note", "decidedAt"] {
        assert!(waited.get(field).is_none(), "{field} in {waited}");
    }

    // With an operation and a payload, as 0.4's consume_approval took them.
    let bound = session
        .call(
            "request_approval",
            json!({
                "action": ACTION,
                "reason": "customer asked",
                "operation": "smtp.send",
                "payload": { "to": "alice@example.com", "subject": "Invoice 1042" },
            }),
        )
        .await
        .ok();
    let bound_id = bound["id"].as_str().unwrap();
    session
        .gate()
        .approve(bound_id.parse().unwrap(), &Decision::by("alice"))
        .unwrap();
    let consumed = session
        .call(
            "consume_approval",
            json!({
                "id": bound_id,
                "action": ACTION,
                "operation": "smtp.send",
                "payload": { "subject": "Invoice 1042", "to": "alice@example.com" },
            }),
        )
        .await
        .ok();
    assert_eq!(consumed["ok"], true);
    session.client.cancel().await.unwrap();
}

/// The one known difference: the predecessor allowed `A-Z a-z 0-9 . _ : / -` in operation
/// names; ours are lowercase segments joined by dots (quorum patterns match them byte for
/// byte). Such a name is refused when filed, and the refusal names the rule.
#[tokio::test]
async fn a_predecessor_operation_name_outside_ours_is_refused_naming_the_rule() {
    let session = Session::start().await;
    for name in ["SMTP.send", "smtp:send", "mail/send", "smtp-send"] {
        let refusal = session
            .call(
                "request_approval",
                json!({ "action": ACTION, "reason": "r", "operation": name }),
            )
            .await
            .refused("invalid_input");
        let error = refusal["error"].as_str().unwrap();
        assert!(error.contains("operation"), "{name}: {error}");
        assert!(error.contains("lowercase"), "{name}: {error}");
    }
    session.client.cancel().await.unwrap();
}

/// An MCP client that builds calls from `tools/list` finds every argument name the
/// predecessor's tools took, so a schema-checking client accepts the predecessor's calls.
#[tokio::test]
async fn the_schemas_list_every_predecessor_argument_name() {
    let session = Session::start().await;
    let tools = session.client.peer().list_all_tools().await.unwrap();
    let expected: [(&str, &[&str]); 6] = [
        (
            "request_approval",
            &["action", "reason", "requested_by", "ttl_seconds"],
        ),
        ("check_approval", &["id"]),
        (
            "wait_for_approval",
            &["id", "timeout_seconds", "poll_seconds"],
        ),
        ("list_pending", &["limit", "cursor"]),
        (
            "consume_approval",
            &["id", "action", "operation", "payload"],
        ),
        ("decide_approval", &["id", "approve", "reason"]),
    ];
    for (name, arguments) in expected {
        let tool = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is listed"));
        let properties = &tool.input_schema["properties"];
        for argument in arguments {
            let schema = &properties[*argument];
            assert!(schema.is_object(), "{name} lists {argument}: {properties}");
        }
    }
    // Their spellings are listed as deprecated, with our bounds: the predecessor's.
    let input = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        Value::Object(tool.input_schema.as_ref().clone())
    };
    let wait = input("wait_for_approval");
    for alias in ["poll_seconds", "timeout_seconds"] {
        assert_eq!(wait["properties"][alias]["deprecated"], true, "{alias}");
    }
    assert_eq!(wait["properties"]["poll_seconds"]["minimum"], 1);
    assert_eq!(wait["properties"]["poll_seconds"]["maximum"], 60);
    assert_eq!(wait["properties"]["pollSeconds"]["maximum"], 60);
    assert_eq!(wait["properties"]["timeout_seconds"]["maximum"], 3600);
    let request = input("request_approval");
    assert_eq!(request["properties"]["ttl_seconds"]["minimum"], 10);
    assert_eq!(request["properties"]["ttl_seconds"]["maximum"], 604_800);
    assert_eq!(request["properties"]["requested_by"]["maxLength"], 256);
    let list = input("list_pending");
    assert_eq!(list["properties"]["cursor"]["pattern"], "^[0-9a-f]{12}$");
    assert!(
        list["properties"]["cursor"]["description"]
            .as_str()
            .unwrap()
            .contains("`after`")
    );
    let tool = tools
        .iter()
        .find(|t| t.name == "wait_for_approval")
        .unwrap();
    let output = Value::Object(tool.output_schema.as_ref().unwrap().as_ref().clone());
    let refusal = &output["$defs"]["Refusal"]["properties"];
    // A refusal's status can never be `approved`, and its schema says so.
    assert_eq!(
        refusal["status"]["enum"],
        json!(["pending", "denied", "expired", "revoked"]),
        "{refusal}"
    );
    for field in [
        "error",
        "note",
        "action",
        "reason",
        "createdAt",
        "expiresAt",
    ] {
        assert!(refusal.get(field).is_some(), "{field} in {refusal}");
    }
    let page = tools.iter().find(|t| t.name == "list_pending").unwrap();
    let output = Value::Object(page.output_schema.as_ref().unwrap().as_ref().clone());
    assert!(
        output["$defs"]["PendingPage"]["properties"]
            .get("nextCursor")
            .is_some(),
        "{output}"
    );
    session.client.cancel().await.unwrap();
}

/// What the predecessor's own driver checked: an answer is one text block of JSON, whatever
/// else comes with it.
#[tokio::test]
async fn every_answer_is_also_json_text() {
    let session = Session::start().await;
    let id = file_as_the_predecessor(&session).await;
    let result = session
        .try_call("check_approval", json!({ "id": id }))
        .await
        .unwrap();
    let text = &result.content[0].as_text().expect("a text block").text;
    let parsed: Value = serde_json::from_str(text).unwrap();
    assert_eq!(parsed["status"], "pending");
    // `Reply::of` holds the text and the structured content equal.
    Reply::of(result).ok();
    session.client.cancel().await.unwrap();
}
