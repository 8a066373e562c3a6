//! `wait_for_approval`: decided, expired, timed out, cancelled, shut down, a hundred at once.

use std::collections::HashSet;
use std::process::Stdio;
use std::time::Duration;

use approval_gate::{Decision, NewRequest, RequestId};
use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::task::JoinSet;

use crate::support::{BIN, PATIENCE, Reply, Session, file, fresh_store};

fn wait_params(id: RequestId, timeout_seconds: u64) -> CallToolRequestParams {
    let Value::Object(arguments) =
        json!({ "id": id.to_string(), "timeoutSeconds": timeout_seconds })
    else {
        unreachable!()
    };
    CallToolRequestParams::new("wait_for_approval").with_arguments(arguments)
}

#[tokio::test]
async fn a_timeout_is_still_pending_not_approved() {
    let session = Session::start().await;
    let id = session.request("send the newsletter").await;
    let refusal = session
        .call(
            "wait_for_approval",
            json!({ "id": id.to_string(), "timeoutSeconds": 1 }),
        )
        .await
        .refused("timeout");
    assert_eq!(refusal["effectiveStatus"], "pending");
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .contains("still pending: not approved")
    );
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_request_expiring_mid_wait_ends_the_wait() {
    let session = Session::start().await;
    // Ten seconds to live, filed eight and a half seconds ago.
    let past = session.gate_in_the_past(Duration::from_millis(8_500));
    let id = file(
        &past,
        NewRequest::new("rotate the keys", "quarterly").ttl(Duration::from_secs(10)),
    );
    let refusal = session
        .call(
            "wait_for_approval",
            json!({ "id": id.to_string(), "timeoutSeconds": 60 }),
        )
        .await
        .refused("expired");
    assert_eq!(refusal["effectiveStatus"], "expired");
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_wait_stops_it_on_the_server() {
    let mut session = Session::start_with_log(Some("approval_gate_mcp=debug")).await;
    let id = session.request("drop the old tables").await;
    let handle = session
        .client
        .peer()
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(wait_params(id, 3600))),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    // The first progress notification says the wait is running.
    let progress = session.next_progress().await;
    assert_eq!(progress.progress_token, handle.progress_token);
    assert_eq!(progress.total, Some(3600.0));
    assert!(
        progress
            .message
            .unwrap()
            .contains(&format!("approval-gate approve {id}"))
    );

    handle
        .cancel(Some("the user changed the plan".into()))
        .await
        .unwrap();
    session
        .stderr_line_with(&["wait ended", &id.to_string(), "Cancelled"])
        .await;

    // The server serves on, and the request is untouched.
    let checked = session
        .call("check_approval", json!({ "id": id.to_string() }))
        .await
        .ok();
    assert_eq!(checked["effectiveStatus"], "pending");
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_hundred_waits_all_return_when_decided() {
    let mut session = Session::start().await;
    let gate = session.gate();
    let ids: Vec<RequestId> = (0..100)
        .map(|n| file(&gate, NewRequest::new(format!("action {n}"), "load")))
        .collect();
    let mut waits = JoinSet::new();
    for (n, &id) in ids.iter().enumerate() {
        let peer = session.client.peer().clone();
        waits.spawn(async move { (n, id, peer.call_tool(wait_params(id, 600)).await) });
    }
    // Every wait reports progress once it is watching its request.
    let mut watching = HashSet::new();
    while watching.len() < ids.len() {
        watching.insert(session.next_progress().await.progress_token);
    }
    // The human decides them all, half yes, half no, from another "terminal".
    let human = tokio::task::spawn_blocking({
        let ids = ids.clone();
        move || {
            for (n, id) in ids.into_iter().enumerate() {
                let decision = Decision::by("alice");
                if n % 2 == 0 {
                    gate.approve(id, &decision).unwrap();
                } else {
                    gate.deny(id, &decision).unwrap();
                }
            }
        }
    });
    human.await.unwrap();
    let mut answered = 0;
    while let Some(joined) = tokio::time::timeout(PATIENCE, waits.join_next())
        .await
        .expect("every wait answers")
    {
        let (n, id, result) = joined.unwrap();
        let reply = Reply::of(result.unwrap());
        if n % 2 == 0 {
            let answer = reply.ok();
            assert_eq!(answer["effectiveStatus"], "approved_unconsumed");
            assert_eq!(answer["id"], id.to_string());
        } else {
            reply.refused("denied");
        }
        answered += 1;
    }
    assert_eq!(answered, ids.len());
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn closing_the_input_ends_pending_waits_and_the_server() {
    let store = fresh_store();
    let id = file(&store.gate(), NewRequest::new("ship it", "friday"));
    let mut child = tokio::process::Command::new(BIN)
        .env("APPROVAL_GATE_STORE", store.location())
        .env_remove("APPROVAL_GATE_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait_for_approval","arguments":{"id": id.to_string(),"timeoutSeconds":3600}}}),
    ];
    for line in lines {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    drop(stdin);
    let output = tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .expect("the server exits")
        .unwrap();
    assert!(output.status.success(), "{:?}", output.status);
    let replies: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let wait = replies
        .iter()
        .find(|r| r["id"] == 2)
        .expect("the wait answered");
    assert_eq!(wait["result"]["isError"], true);
    assert_eq!(wait["result"]["structuredContent"]["code"], "shutting_down");
    assert_eq!(
        wait["result"]["structuredContent"]["effectiveStatus"],
        "pending"
    );
}
