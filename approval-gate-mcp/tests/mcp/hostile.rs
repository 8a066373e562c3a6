//! Hostile input gets an `isError` result or a JSON-RPC error, never a crash, and never a
//! change in the store.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::{BIN, Session, assert_unchanged, backend, fresh_store};

fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(1), |inner, _| json!({ "a": inner }))
}

/// (tool, arguments, expected refusal code) for arguments no agent should send.
type Case = (&'static str, Value, &'static str);

fn hostile_requests() -> Vec<Case> {
    let huge = "x".repeat(5000);
    let request = |extra: Value| {
        let mut arguments = json!({ "action": "send the report", "reason": "weekly" });
        arguments
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        arguments
    };
    vec![
        (
            "request_approval",
            request(json!({ "action": huge })),
            "invalid_input",
        ),
        (
            "request_approval",
            request(json!({ "reason": huge })),
            "invalid_input",
        ),
        (
            "request_approval",
            request(json!({ "requestedBy": huge })),
            "invalid_input",
        ),
        (
            "request_approval",
            request(json!({ "operation": huge })),
            "invalid_input",
        ),
        (
            "request_approval",
            request(json!({ "action": "send\u{0}the report" })),
            "invalid_input",
        ),
        (
            "request_approval",
            request(json!({ "payload": "p".repeat(70 * 1024) })),
            "invalid_payload",
        ),
        (
            "request_approval",
            request(json!({ "payload": nested(40) })),
            "invalid_payload",
        ),
        (
            "request_approval",
            request(json!({ "payload": { "to": "a\u{0}b" } })),
            "invalid_payload",
        ),
        (
            "request_approval",
            request(json!({ "payload": { "k\u{0}": 1 } })),
            "invalid_payload",
        ),
        (
            "request_approval",
            request(json!({ "payload": [1u64 << 60] })),
            "invalid_payload",
        ),
        (
            "request_approval",
            request(json!({ "action": 5 })),
            "invalid_arguments",
        ),
        (
            "request_approval",
            request(json!({ "action": ["a"] })),
            "invalid_arguments",
        ),
        (
            "request_approval",
            request(json!({ "ttlSeconds": "3600" })),
            "invalid_arguments",
        ),
        (
            "request_approval",
            request(json!({ "ttlSeconds": 1e300 })),
            "invalid_arguments",
        ),
        (
            "request_approval",
            request(json!({ "operation": {} })),
            "invalid_arguments",
        ),
        (
            "request_approval",
            request(json!({ "unknown": 1 })),
            "invalid_arguments",
        ),
        (
            "request_approval",
            request(json!({ "ttlSeconds": 60, "ttl_seconds": 60 })),
            "invalid_arguments",
        ),
    ]
}

/// Issue 22, finding 13: operation names spelled to dodge a quorum pattern (`payments.*=2`).
fn dodging_names() -> Vec<Case> {
    [
        "Payments.transfer",
        "payments-transfer",
        "PAYMENTS.TRANSFER",
        "payments..transfer",
    ]
    .into_iter()
    .map(|name| {
        let arguments = json!({ "action": "pay", "reason": "rent", "operation": name });
        ("request_approval", arguments, "invalid_input")
    })
    .collect()
}

fn hostile_lookups(pending: &str) -> Vec<Case> {
    let huge = "x".repeat(5000);
    vec![
        (
            "check_approval",
            json!({ "id": pending, "extra": true }),
            "invalid_arguments",
        ),
        (
            "check_approval",
            json!({ "id": 123_456_789_012_u64 }),
            "invalid_arguments",
        ),
        ("check_approval", json!({ "id": huge }), "invalid_id"),
        (
            "check_approval",
            json!({ "id": "../requests/../../x" }),
            "invalid_id",
        ),
        (
            "check_approval",
            json!({ "id": "a1b2c3d4e5f\u{0}" }),
            "invalid_id",
        ),
        (
            "wait_for_approval",
            json!({ "id": pending, "timeoutSeconds": -1 }),
            "invalid_arguments",
        ),
        (
            "wait_for_approval",
            json!({ "id": pending, "timeoutSeconds": u64::MAX }),
            "invalid_arguments",
        ),
        (
            "list_pending",
            json!({ "limit": "ten" }),
            "invalid_arguments",
        ),
        (
            "list_pending",
            json!({ "limit": u64::MAX }),
            "invalid_arguments",
        ),
        (
            "consume_approval",
            json!({ "id": pending }),
            "invalid_arguments",
        ),
        (
            "consume_approval",
            json!({ "id": "../x", "action": "send the report" }),
            "invalid_id",
        ),
        (
            "decide_approval",
            json!({ "id": pending, "approve": false, "reason": huge }),
            "invalid_input",
        ),
        (
            "decide_approval",
            json!({ "id": pending, "approve": false, "reason": "no\u{0}" }),
            "invalid_input",
        ),
        (
            "decide_approval",
            json!({ "id": "../x", "approve": false }),
            "invalid_id",
        ),
    ]
}

#[tokio::test]
async fn hostile_arguments_are_refused_and_change_nothing() {
    let session = Session::start().await;
    let pending = session.request("send the report").await.to_string();
    let before = backend().contents(&session.store);
    for (tool, arguments, code) in hostile_requests()
        .into_iter()
        .chain(dodging_names())
        .chain(hostile_lookups(&pending))
    {
        let refusal = session.call(tool, arguments).await.refused(code);
        assert!(
            refusal["message"].as_str().unwrap().len() < 2000,
            "messages stay short"
        );
    }
    assert_unchanged(&session.store, &before, "hostile arguments");
    // A consume of a well-formed id with a payload that cannot be canonical is refused like
    // any other consume, and leaves its line like any other refusal: nothing else changes.
    session
        .call(
            "consume_approval",
            json!({ "id": pending, "action": "send the report", "payload": nested(40) }),
        )
        .await
        .refused("invalid_payload");
    let last = session.store.gate().audit_records().unwrap().pop().unwrap();
    assert_eq!(
        (last.event, last.id.to_string(), &last.details["reason"]),
        (
            approval_gate::AuditEvent::ConsumeRefused,
            pending.clone(),
            &json!("invalid_payload")
        )
    );
    let checked = session
        .call("check_approval", json!({ "id": pending }))
        .await
        .ok();
    assert_eq!(checked["effectiveStatus"], "pending");
    session.client.cancel().await.unwrap();
}

/// Raw lines, written with a plain process: what no well-behaved client would send.
#[test]
fn malformed_lines_get_json_rpc_errors_and_the_server_serves_on() {
    let store = fresh_store();
    let before = backend().contents(&store);

    let call = |id: u64, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"request_approval","arguments":{arguments}}}}}"#
        )
    };
    let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    let mut input: Vec<Vec<u8>> = vec![
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#.to_vec(),
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
        b"{this is not json".to_vec(),
        b"\xff\xfe\x00 not utf-8".to_vec(),
        b"[1, 2".to_vec(),
        vec![b'x'; 5 * 1024 * 1024],
        br#"{"jsonrpc":"2.0","id":2,"id":3,"method":"tools/list"}"#.to_vec(),
        call(4, r#"{"action":"a","action":"b","reason":"r"}"#).into_bytes(),
        call(5, r#"{"action":"a","reason":"r","payload":{"to":"alice","to":"mallory"}}"#).into_bytes(),
        call(6, &format!(r#"{{"action":"a","reason":"r","payload":{deep}}}"#)).into_bytes(),
        br#"{"jsonrpc":"2.0","id":7,"method":"no/such/method"}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":8,"nonsense":true}"#.to_vec(),
        call(9, r#"{"action":"a","reason":"r","payload":{"n":1e400}}"#).into_bytes(),
        br#"{"jsonrpc":"2.0","id":99,"method":"tools/list"}"#.to_vec(),
    ];
    for line in &mut input {
        line.push(b'\n');
    }

    let mut child = Command::new(BIN)
        .env("APPROVAL_GATE_STORE", store.location())
        .env_remove("APPROVAL_GATE_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for line in input {
            stdin.write_all(&line).unwrap();
        }
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        output.status.success(),
        "clean exit at end of input: {:?}",
        output.status
    );

    let replies: Vec<Value> = String::from_utf8(output.stdout)
        .expect("stdout is protocol text")
        .lines()
        .map(|line| serde_json::from_str(line).expect("every stdout line is JSON"))
        .collect();
    let error_code = |reply: &Value| reply["error"]["code"].as_i64();
    let without_id: Vec<i64> = replies
        .iter()
        .filter(|r| r.get("id").is_none_or(Value::is_null))
        .filter_map(error_code)
        .collect();
    // Three unparsable lines, then the oversized line and the one with two ids.
    assert_eq!(without_id, [-32700, -32700, -32700, -32600, -32600]);
    let by_id = |id: u64| {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no reply to {id}: {replies:?}"))
    };
    assert_eq!(error_code(by_id(4)), Some(-32602), "duplicate argument");
    assert!(
        by_id(4)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/params/arguments/action")
    );
    let payload = &by_id(5)["result"];
    assert_eq!(payload["isError"], true);
    assert_eq!(payload["structuredContent"]["code"], "invalid_payload");
    assert!(
        payload["structuredContent"]["message"]
            .as_str()
            .unwrap()
            .contains("duplicate object key")
    );
    // Too deep or out of range for any JSON reader: answered by id, read that far.
    assert_eq!(error_code(by_id(6)), Some(-32700));
    assert_eq!(error_code(by_id(9)), Some(-32700));
    assert_eq!(error_code(by_id(7)), Some(-32601));
    assert_eq!(error_code(by_id(8)), Some(-32600));
    let tools = by_id(99)["result"]["tools"]
        .as_array()
        .expect("still serving");
    assert_eq!(tools.len(), 6);

    assert_unchanged(&store, &before, "malformed lines");
}
