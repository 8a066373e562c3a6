//! MCP logging: the server's log reaches the client at the level the client sets, and
//! nothing below it.

// rmcp marks MCP logging deprecated (SEP-2577); clients still speak it.
#![allow(deprecated)]

use std::process::Stdio;

use rmcp::model::{LoggingLevel, SetLevelRequestParams};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support::{BIN, PATIENCE, Session, fresh_store};

#[tokio::test]
async fn the_client_gets_the_log_at_the_level_it_sets_and_nothing_below() {
    let mut session = Session::start().await;
    let info = session.client.peer_info().expect("initialized");
    assert!(info.capabilities.logging.is_some(), "logging is declared");

    // Nothing is sent before the client asks: this filing logs at info.
    let unlogged = session.request("before any level").await;
    session
        .client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Warning))
        .await
        .unwrap();
    // Below the level: an info line, and the debug line of a refused call.
    let quiet = session.request("send the report").await;
    session
        .call("check_approval", json!({ "id": "not-an-id" }))
        .await
        .refused("invalid_id");
    // At the level: a warning.
    session
        .call(
            "decide_approval",
            json!({ "id": quiet.to_string(), "approve": true }),
        )
        .await
        .refused("approve_not_allowed");
    // The log is sent in order, so the first notification proves the ones before it were
    // never queued.
    let warning = session.next_log().await;
    assert_eq!(warning.level, LoggingLevel::Warning, "{warning:?}");
    assert!(
        warning
            .logger
            .as_deref()
            .is_some_and(|l| l.starts_with("approval_gate_mcp"))
    );
    assert_eq!(
        warning.data["message"],
        "refused an agent's attempt to approve"
    );
    assert_eq!(warning.data["id"], quiet.to_string());

    session
        .client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .unwrap();
    let filed = session.request("now logged").await;
    let info = session.next_log().await;
    assert_eq!(info.level, LoggingLevel::Info, "{info:?}");
    assert_eq!(info.data["message"], "request filed", "{info:?}");
    assert_eq!(info.data["id"], filed.to_string());
    assert_ne!(info.data["id"], unlogged.to_string());
    session.client.cancel().await.unwrap();
}

/// A refused line is logged too, and the log goes out as `notifications/message` on stdout,
/// between the protocol's own lines.
#[tokio::test]
async fn a_refused_line_is_logged_to_the_client() {
    let store = fresh_store();
    let mut child = tokio::process::Command::new(BIN)
        .env("APPROVAL_GATE_STORE", store.location())
        .env_remove("APPROVAL_GATE_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = async |line: &str| {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    };
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        // Refused before any level is set: not logged to the client.
        "{not json",
        r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}"#,
    ] {
        send(line).await;
    }
    let mut seen = Vec::new();
    let mut next_until = async |done: &dyn Fn(&Value) -> bool| {
        tokio::time::timeout(PATIENCE, async {
            loop {
                let line = stdout
                    .next_line()
                    .await
                    .unwrap()
                    .expect("the server serves");
                let message: Value = serde_json::from_str(&line).unwrap();
                seen.push(message.clone());
                if done(&message) {
                    return message;
                }
            }
        })
        .await
        .expect("the awaited message")
    };
    let set = next_until(&|m| m["id"] == 2).await;
    assert_eq!(set["result"], json!({}), "{set}");
    // Handled once the level is set.
    send(r#"{"jsonrpc":"2.0","id":3,"id":4,"method":"tools/list"}"#).await;
    let refusal = next_until(&|m| {
        m["method"] == "notifications/message"
            && m["params"]["data"]["message"] == "refusing a line"
    })
    .await;
    assert_eq!(refusal["params"]["level"], "debug");
    assert_eq!(
        refusal["params"]["logger"],
        "approval_gate_mcp::mcp::transport"
    );
    // The second refused line (-32600), not the first (-32700, before the level was set).
    assert_eq!(refusal["params"]["data"]["code"], -32600, "{refusal}");
    drop(stdin);
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}
