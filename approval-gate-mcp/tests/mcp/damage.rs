//! A JSON `null` payload is refused at the door, and an unreadable record spoils only itself.

use approval_gate::{Decision, NewRequest};
use serde_json::json;

use crate::support::{Kind, Session, assert_unchanged, backend, file, kind};

#[tokio::test]
async fn a_null_payload_is_refused_and_nothing_is_filed_or_spent() {
    let session = Session::start().await;
    let before = backend().contents(&session.store);
    let refused = session
        .call(
            "request_approval",
            json!({ "action": "a", "reason": "r", "payload": null }),
        )
        .await
        .refused("invalid_payload");
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains("omit the payload"), "{message}");
    assert_unchanged(&session.store, &before, "nothing was filed");

    // Every other JSON type at the top level is a payload, shown back as sent.
    for payload in [
        json!({"a": null}),
        json!([null]),
        json!("s"),
        json!(1.5),
        json!(false),
    ] {
        let filed = session
            .call(
                "request_approval",
                json!({ "action": format!("do {payload}"), "reason": "r", "payload": payload }),
            )
            .await
            .ok();
        let id = filed["id"].as_str().unwrap();
        let checked = session
            .call("check_approval", json!({ "id": id }))
            .await
            .ok();
        assert_eq!(checked["payload"], payload);
    }

    // Consuming with `null` for a request without a payload is refused, not read as "none",
    // and spends nothing.
    let gate = session.gate();
    let id = file(&gate, NewRequest::new("no payload", "r"));
    gate.approve(id, &Decision::by("human")).unwrap();
    session
        .call(
            "consume_approval",
            json!({ "id": id.to_string(), "action": "no payload", "payload": null }),
        )
        .await
        .refused("invalid_payload");
    session
        .call(
            "consume_approval",
            json!({ "id": id.to_string(), "action": "no payload" }),
        )
        .await
        .ok();
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn list_pending_shows_an_unreadable_record_and_every_other_request() {
    let session = Session::start().await;
    let gate = session.gate();
    let victim = file(&gate, NewRequest::new("victim", "r"));
    let other = file(&gate, NewRequest::new("other", "r"));
    // Each store's own kind of damage: a torn file on disk; a row that is valid JSON but no
    // request record (the database checks JSON syntax itself).
    match kind() {
        Kind::Dir => {
            let record = approval_gate_tests::backend::Directory::dir(&session.store)
                .join("requests")
                .join(format!("{victim}.json"));
            std::fs::write(&record, b"{\"version\":1,").unwrap();
        }
        Kind::Postgres => backend().tamper(&session.store, victim, &mut |record| {
            *record = json!({ "version": 1 });
        }),
    }

    let page = session.call("list_pending", json!({})).await.ok();
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{page}");
    assert_eq!(items[0]["id"], victim.to_string());
    assert_eq!(items[0]["unreadable"], true);
    assert_eq!(items[0]["authorizesExecution"], false);
    assert!(
        items[0]["problem"]
            .as_str()
            .unwrap()
            .contains("not a valid request record")
    );
    assert_eq!(items[1]["id"], other.to_string());
    assert_eq!(items[1]["effectiveStatus"], "pending");

    // Paging goes through it like any other entry.
    let first = session
        .call("list_pending", json!({ "limit": 1 }))
        .await
        .ok();
    assert_eq!(first["items"][0]["id"], victim.to_string());
    let second = session
        .call(
            "list_pending",
            json!({ "limit": 1, "after": first["nextAfter"] }),
        )
        .await
        .ok();
    assert_eq!(second["items"][0]["id"], other.to_string());
    assert!(second["nextAfter"].is_null());

    // Its id refuses everything with its own code; the others work.
    let id = victim.to_string();
    for (tool, arguments) in [
        ("check_approval", json!({ "id": id })),
        (
            "wait_for_approval",
            json!({ "id": id, "timeoutSeconds": 1 }),
        ),
        ("consume_approval", json!({ "id": id, "action": "victim" })),
        ("decide_approval", json!({ "id": id, "approve": false })),
    ] {
        let refused = session.call(tool, arguments).await.refused("unreadable");
        assert_eq!(refused["id"], id, "{tool}");
    }
    session.request("a new one").await;
    session
        .call(
            "decide_approval",
            json!({ "id": other.to_string(), "approve": false }),
        )
        .await
        .ok();
    session.client.cancel().await.unwrap();
}
