//! What a client learns before calling anything: server identity, policy, tool schemas.

use serde_json::{Value, json};

use crate::support::Session;

#[tokio::test]
async fn initialize_names_the_server_and_states_the_policy() {
    let session = Session::start().await;
    let info = session.client.peer_info().expect("initialized");
    let server = info.server_info.as_ref().expect("server info");
    assert_eq!(server.name, "approval-gate");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    assert!(info.capabilities.tools.is_some());
    let instructions = info.instructions.as_deref().unwrap();
    for phrase in [
        "request_approval",
        "wait_for_approval",
        "consume_approval",
        "ok: true",
        "cannot approve",
        "Never call decide_approval for your own requests",
    ] {
        assert!(
            instructions.contains(phrase),
            "instructions lack {phrase:?}"
        );
    }
    session.client.cancel().await.unwrap();
}

/// (name, required arguments, read-only, destructive, idempotent)
const TOOLS: [(&str, &[&str], bool, bool, bool); 6] = [
    (
        "request_approval",
        &["action", "reason"],
        false,
        false,
        true,
    ),
    ("check_approval", &["id"], true, false, true),
    ("wait_for_approval", &["id"], true, false, true),
    ("list_pending", &[], true, false, true),
    ("consume_approval", &["action", "id"], false, true, false),
    ("decide_approval", &["approve", "id"], false, true, true),
];

#[tokio::test]
async fn every_tool_has_schemas_and_honest_annotations() {
    let session = Session::start().await;
    let tools = session.client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, TOOLS.map(|t| t.0));
    for (tool, (name, required, read_only, destructive, idempotent)) in tools.iter().zip(TOOLS) {
        let input = Value::Object(tool.input_schema.as_ref().clone());
        assert_eq!(input["type"], "object", "{name}");
        assert_eq!(
            input["additionalProperties"], false,
            "{name} refuses unknown arguments"
        );
        let mut got: Vec<&str> = input["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        got.sort_unstable();
        assert_eq!(got, required, "{name} required arguments");
        for (argument, schema) in input["properties"].as_object().unwrap() {
            assert!(
                schema["description"].as_str().is_some_and(|d| d.len() > 10),
                "{name}.{argument} is described"
            );
        }

        let output = Value::Object(
            tool.output_schema
                .as_ref()
                .expect("output schema")
                .as_ref()
                .clone(),
        );
        assert_eq!(output["type"], "object", "{name}");
        let shapes = output["anyOf"].as_array().expect("answer or refusal");
        assert_eq!(shapes.len(), 2, "{name}");
        // Every shape pins authorizesExecution to false.
        for definition in output["$defs"].as_object().unwrap().values() {
            if let Some(flag) = definition["properties"].get("authorizesExecution") {
                assert_eq!(flag["const"], false, "{name}");
            }
        }
        assert!(
            output["$defs"]["Refusal"]["required"]
                .as_array()
                .unwrap()
                .contains(&json!("code"))
        );

        let hints = tool.annotations.as_ref().expect("annotations");
        assert_eq!(hints.read_only_hint, Some(read_only), "{name} read-only");
        assert_eq!(
            hints.destructive_hint,
            Some(destructive),
            "{name} destructive"
        );
        assert_eq!(hints.idempotent_hint, Some(idempotent), "{name} idempotent");
        assert_eq!(hints.open_world_hint, Some(false), "{name} open world");
        assert!(tool.description.as_deref().is_some_and(|d| d.len() > 80));
    }

    let schema_of = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        Value::Object(tool.input_schema.as_ref().clone())
    };
    // Bounds are in the schemas, not only in the code.
    let request = schema_of("request_approval");
    assert_eq!(request["properties"]["action"]["maxLength"], 4096);
    assert_eq!(request["properties"]["ttlSeconds"]["minimum"], 10);
    assert_eq!(request["properties"]["ttlSeconds"]["maximum"], 604_800);
    let wait = schema_of("wait_for_approval");
    assert_eq!(wait["properties"]["timeoutSeconds"]["maximum"], 3600);
    assert_eq!(wait["properties"]["id"]["pattern"], "^[0-9a-f]{12}$");
    assert_eq!(
        schema_of("list_pending")["properties"]["limit"]["maximum"],
        100
    );
    assert_eq!(
        schema_of("decide_approval")["properties"]["approve"]["const"],
        false
    );
    // A quorum being gathered is part of the answer's shape, k (approvals) of M.
    for name in ["check_approval", "wait_for_approval"] {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let output = Value::Object(tool.output_schema.as_ref().unwrap().as_ref().clone());
        let shapes = output["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .chain(output["$defs"].as_object().unwrap().values());
        let answer = shapes
            .filter_map(|shape| match shape["$ref"].as_str() {
                Some(reference) => output["$defs"].get(reference.rsplit('/').next()?),
                None => Some(shape),
            })
            .find(|shape| shape["properties"].get("note").is_some())
            .unwrap_or_else(|| panic!("{name}: no answer with a note in {output:#}"));
        for field in ["requiredApprovals", "approvals"] {
            assert!(
                answer["properties"].get(field).is_some(),
                "{name}: {field} missing from {answer:#}"
            );
        }
    }
    session.client.cancel().await.unwrap();
}

/// A request is one JSON shape: the MCP answers and `approval-gate --json` both serialize the
/// library's report, so every field agrees, byte for byte, apart from the MCP answer's note.
#[tokio::test]
async fn the_cli_and_the_mcp_answers_show_a_request_in_one_shape() {
    let session = Session::start().await;
    let gate = session.gate();
    let payload = approval_gate::CanonicalPayload::from_json_text(
        r#"{"to":"alice@example.com","amount":1.5,"note":"caf\u00e9"}"#,
    )
    .unwrap();
    let id = gate
        .request_approval(
            approval_gate::NewRequest::new("send the invoice", "it is due")
                .requested_by("billing-agent")
                .operation("smtp.send")
                .payload(payload),
        )
        .unwrap()
        .request
        .id();
    gate.approve(id, &approval_gate::Decision::by("alice").reason("fine"))
        .unwrap();

    let mut answer = session
        .call("check_approval", json!({ "id": id.to_string() }))
        .await
        .ok();
    assert!(answer["note"].is_string());
    answer.as_object_mut().unwrap().remove("note");

    let cli = std::process::Command::new(approval_gate_tests::workspace_binary("approval-gate"))
        .args(["--store", session.store.location()])
        .args(["show", "--json", id.as_str()])
        .output()
        .unwrap();
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    let shown: Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(shown, answer);
    // And both are the library's own serialization.
    let report = gate.status(id).unwrap();
    assert_eq!(serde_json::to_value(&report).unwrap(), shown);
    assert_eq!(shown["effectiveStatus"], "approved_unconsumed");
    assert_eq!(shown["decidedBy"], "alice");
    assert!(
        shown.get("version").is_none(),
        "the stored format stays inside"
    );
    session.client.cancel().await.unwrap();
}
