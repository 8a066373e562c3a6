//! The protocol revisions: `2025-11-25` over `initialize`, the stateless `2026-07-28` over
//! `server/discover` and per-request `_meta`, each answered with its own version; and the
//! request's page link by URL-mode elicitation, offered only to a client that declared it,
//! never taken as a decision.

use std::process::Stdio;

use approval_gate::{EffectiveStatus, NewRequest, RequestId};
use rmcp::model::{
    CallToolRequestParams, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorData, ProtocolVersion, UrlElicitationCapability,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::support::{self, BIN, PATIENCE, fresh_store};

const ORIGIN: &str = "https://approvals.example.com";

/// A server spoken to one JSON-RPC line at a time, as a client of any revision would.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    /// Every line the server wrote, in order.
    seen: Vec<Value>,
}

impl Raw {
    fn start(store: &approval_gate_tests::backend::Store, public_url: Option<&str>) -> Self {
        let mut command = tokio::process::Command::new(BIN);
        command
            .env("APPROVAL_GATE_STORE", store.location())
            .env_remove("APPROVAL_GATE_LOG")
            .env_remove("APPROVAL_GATE_PUBLIC_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(url) = public_url {
            command.args(["--public-url", url]);
        }
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            stdout,
            seen: Vec::new(),
        }
    }

    async fn send(&mut self, line: Value) {
        let stdin = self.stdin.as_mut().expect("input still open");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }

    /// The next line the server writes.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .expect("the server answers")
            .unwrap()
            .expect("the server is still writing");
        let value: Value = serde_json::from_str(&line).unwrap();
        self.seen.push(value.clone());
        value
    }

    /// Reads until the answer to request `id`.
    async fn answer(&mut self, id: u64) -> Value {
        loop {
            let line = self.next().await;
            if line["id"] == id && line.get("method").is_none() {
                return line;
            }
        }
    }

    /// Opens a `2025-11-25`-style session at `version` with `capabilities`.
    async fn initialize(&mut self, version: &str, capabilities: Value) -> Value {
        self.send(
            json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": {"name":"raw","version":"1"}}}),
        )
        .await;
        let answer = self.answer(1).await;
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await;
        answer
    }

    /// Closes the input and reads everything the server still writes until it exits.
    async fn close(mut self) -> Vec<Value> {
        drop(self.stdin.take());
        while let Ok(Some(line)) = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .unwrap()
        {
            self.seen.push(serde_json::from_str(&line).unwrap());
        }
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("the server exits")
            .unwrap();
        assert!(status.success(), "{status:?}");
        self.seen
    }
}

/// The `_meta` every request carries in the stateless revision.
fn stateless_meta(version: &str, capabilities: &Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name":"raw","version":"1"},
    })
}

fn elicitations(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|line| line["method"] == "elicitation/create")
        .collect()
}

fn file(store: &approval_gate_tests::backend::Store) -> RequestId {
    support::file(&store.gate(), NewRequest::new("ship it", "friday"))
}

#[tokio::test]
async fn initialize_answers_each_handshake_revision_with_its_own_version() {
    let store = fresh_store();
    for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        let mut raw = Raw::start(&store, None);
        let answer = raw.initialize(version, json!({})).await;
        assert_eq!(answer["result"]["protocolVersion"], version, "{answer}");
        raw.close().await;
    }
}

#[tokio::test]
async fn an_unknown_version_gets_the_latest_this_server_speaks_over_that_lifecycle() {
    let store = fresh_store();
    // Over `initialize`: the newest revision that has a handshake. 2026-07-28 has none, so
    // a client asking for it there is also answered 2025-11-25.
    for asked in ["2099-01-01", "1999-01-01", "2026-07-28"] {
        let mut raw = Raw::start(&store, None);
        let answer = raw.initialize(asked, json!({})).await;
        assert_eq!(
            answer["result"]["protocolVersion"], "2025-11-25",
            "{answer}"
        );
        raw.close().await;
    }
    // Stateless: a request naming a version this server does not speak is refused with the
    // versions it does, from which the client picks.
    let mut raw = Raw::start(&store, None);
    raw.send(json!({"jsonrpc":"2.0","id":1,"method":"server/discover",
        "params":{"_meta": stateless_meta("2099-01-01", &json!({}))}}))
        .await;
    let answer = raw.answer(1).await;
    assert_eq!(answer["error"]["code"], -32022, "{answer}");
    let supported = answer["error"]["data"]["supported"]
        .as_array()
        .expect("{answer}");
    assert!(supported.contains(&json!("2026-07-28")), "{answer}");
    assert!(supported.contains(&json!("2025-11-25")), "{answer}");
    raw.close().await;
}

#[tokio::test]
async fn the_stateless_revision_discovers_and_calls_without_a_session() {
    let store = fresh_store();
    let mut raw = Raw::start(&store, None);
    raw.send(json!({"jsonrpc":"2.0","id":1,"method":"server/discover",
        "params":{"_meta": stateless_meta("2026-07-28", &json!({}))}}))
        .await;
    let discovered = raw.answer(1).await;
    let versions = discovered["result"]["supportedVersions"]
        .as_array()
        .expect("{discovered}");
    assert!(versions.contains(&json!("2026-07-28")), "{discovered}");
    assert!(versions.contains(&json!("2025-11-25")), "{discovered}");
    raw.send(
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
        "name":"request_approval",
        "arguments":{"action":"ship it","reason":"friday"},
        "_meta": stateless_meta("2026-07-28", &json!({}))}}),
    )
    .await;
    let filed = raw.answer(2).await;
    assert_eq!(filed["result"]["isError"], false, "{filed}");
    assert_eq!(filed["result"]["resultType"], "complete", "{filed}");
    assert_eq!(filed["result"]["structuredContent"]["status"], "pending");
    // A request without its metadata is refused: the stateless revision has no session.
    raw.send(
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
        "name":"list_pending","arguments":{}}}),
    )
    .await;
    let bare = raw.answer(3).await;
    assert_eq!(bare["error"]["code"], -32602, "{bare}");
    raw.close().await;
}

#[tokio::test]
async fn rmcp_clients_of_each_revision_get_that_revision() {
    let store = fresh_store();
    let command = || {
        let mut command = tokio::process::Command::new(BIN);
        command
            .env("APPROVAL_GATE_STORE", store.location())
            .env_remove("APPROVAL_GATE_LOG");
        TokioChildProcess::new(command).unwrap()
    };
    // 2025-11-25, over `initialize`.
    let mut info = ClientConfig::default();
    info.protocol_version = ProtocolVersion::V_2025_11_25;
    let client = info.serve(command()).await.unwrap();
    assert_eq!(
        client.peer().peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2025_11_25
    );
    let tools = client.peer().list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 6);
    client.cancel().await.unwrap();
    // 2026-07-28, stateless: `server/discover`, then metadata on every request.
    let client = ClientConfig::default()
        .serve_with_lifecycle(
            command(),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    assert_eq!(
        client.peer().peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    let tools = client.peer().list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 6);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_url_mode_client_is_handed_the_page_link_and_its_accept_approves_nothing() {
    let store = fresh_store();
    let id = file(&store);
    let mut raw = Raw::start(&store, Some(ORIGIN));
    let opened = raw
        .initialize("2025-11-25", json!({"elicitation": {"url": {}}}))
        .await;
    assert_eq!(opened["result"]["protocolVersion"], "2025-11-25");
    raw.send(
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
        "name":"wait_for_approval","arguments":{"id": id.to_string(),"timeoutSeconds":3600}}}),
    )
    .await;
    let asked = loop {
        let line = raw.next().await;
        if line["method"] == "elicitation/create" {
            break line;
        }
    };
    assert_eq!(asked["params"]["mode"], "url", "{asked}");
    assert_eq!(
        asked["params"]["url"],
        format!("{ORIGIN}/requests/{id}"),
        "{asked}"
    );
    assert!(asked["params"]["elicitationId"].is_string(), "{asked}");
    // The client "accepts": the user agreed to open the page. That is no decision.
    raw.send(json!({"jsonrpc":"2.0","id": asked["id"],"result":{"action":"accept"}}))
        .await;
    raw.send(
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
        "name":"check_approval","arguments":{"id": id.to_string()}}}),
    )
    .await;
    let checked = raw.answer(3).await;
    assert_eq!(
        checked["result"]["structuredContent"]["effectiveStatus"], "pending",
        "{checked}"
    );
    // The wait goes on until the input closes, and ends pending, not approved.
    let lines = raw.close().await;
    let wait = lines
        .iter()
        .find(|line| line["id"] == 2 && line.get("method").is_none())
        .expect("the wait answered");
    assert_eq!(wait["result"]["structuredContent"]["code"], "shutting_down");
    assert_eq!(elicitations(&lines).len(), 1, "offered once");
    let report = store.gate().status(id).unwrap();
    assert_eq!(report.effective_status(), EffectiveStatus::Pending);
}

#[tokio::test]
async fn the_page_link_is_offered_once_per_request_and_session() {
    let store = fresh_store();
    let id = file(&store);
    let mut raw = Raw::start(&store, Some(ORIGIN));
    raw.initialize("2025-11-25", json!({"elicitation": {"url": {}}}))
        .await;
    for call in [2, 3] {
        raw.send(
            json!({"jsonrpc":"2.0","id":call,"method":"tools/call","params":{
            "name":"wait_for_approval","arguments":{"id": id.to_string(),"timeoutSeconds":1}}}),
        )
        .await;
        loop {
            let line = raw.next().await;
            if line["method"] == "elicitation/create" {
                raw.send(json!({"jsonrpc":"2.0","id": line["id"],"result":{"action":"accept"}}))
                    .await;
            } else if line["id"] == call && line.get("method").is_none() {
                assert_eq!(
                    line["result"]["structuredContent"]["code"], "timeout",
                    "{line}"
                );
                break;
            }
        }
    }
    let lines = raw.close().await;
    assert_eq!(elicitations(&lines).len(), 1);
    let report = store.gate().status(id).unwrap();
    assert_eq!(report.effective_status(), EffectiveStatus::Pending);
}

#[tokio::test]
async fn no_page_link_without_url_mode_a_public_url_or_a_revision_that_allows_it() {
    let store = fresh_store();
    let id = file(&store);
    let cases: [(Option<&str>, &str, Value); 5] = [
        // The client declared no elicitation, or form mode only.
        (Some(ORIGIN), "2025-11-25", json!({})),
        (
            Some(ORIGIN),
            "2025-11-25",
            json!({"elicitation": {"form": {}}}),
        ),
        // An empty elicitation capability means form mode.
        (Some(ORIGIN), "2025-11-25", json!({"elicitation": {}})),
        // URL mode, but the operator named no page.
        (None, "2025-11-25", json!({"elicitation": {"url": {}}})),
        // Stateless: no request from server to client (checked below, with `_meta`).
        (
            Some(ORIGIN),
            "stateless",
            json!({"elicitation": {"url": {}}}),
        ),
    ];
    for (public_url, version, capabilities) in cases {
        let mut raw = Raw::start(&store, public_url);
        let mut params = json!({"name":"wait_for_approval",
            "arguments":{"id": id.to_string(),"timeoutSeconds":1}});
        if version == "stateless" {
            params["_meta"] = stateless_meta("2026-07-28", &capabilities);
        } else {
            raw.initialize(version, capabilities.clone()).await;
        }
        raw.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":params}))
            .await;
        let wait = raw.answer(2).await;
        assert_eq!(
            wait["result"]["structuredContent"]["code"], "timeout",
            "{version} {capabilities}: {wait}"
        );
        let lines = raw.close().await;
        assert!(
            elicitations(&lines).is_empty(),
            "{public_url:?} {version} {capabilities}: {lines:?}"
        );
    }
}

#[tokio::test]
async fn a_bad_public_url_is_a_usage_error() {
    let store = fresh_store();
    for bad in [
        "http://approvals.example.com",
        "https://approvals.example.com/queue",
        "https://user:pw@approvals.example.com",
        "https://approvals.example.com/?a=b",
        "approvals.example.com",
    ] {
        let output = tokio::process::Command::new(BIN)
            .env("APPROVAL_GATE_STORE", store.location())
            .args(["--public-url", bad])
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{bad}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--public-url"), "{stderr}");
    }
}

#[tokio::test]
async fn without_the_flag_the_public_url_comes_from_the_settings() {
    let store = fresh_store();
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(&config, "public_url = \"http://approvals.example.com\"\n").unwrap();
    // Plain http to a host name is no origin the page is served at: refused as a bad flag
    // would be, which shows the config file's key was read.
    let output = tokio::process::Command::new(BIN)
        .env("APPROVAL_GATE_STORE", store.location())
        .env("APPROVAL_GATE_CONFIG", &config)
        .env_remove("APPROVAL_GATE_PUBLIC_URL")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("http://approvals.example.com"), "{stderr}");
}

/// An rmcp client that declared URL-mode elicitation, and accepts every elicitation.
#[derive(Clone)]
struct Accepting {
    asked: tokio::sync::mpsc::UnboundedSender<ElicitRequestParams>,
}

impl ClientHandler for Accepting {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.protocol_version = ProtocolVersion::V_2025_11_25;
        info.capabilities.elicitation =
            Some(ElicitationCapability::new().with_url(UrlElicitationCapability::new()));
        info
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let _ = self.asked.send(request);
        Ok(ElicitResult::new(ElicitationAction::Accept))
    }
}

fn server_with_page(store: &approval_gate_tests::backend::Store) -> TokioChildProcess {
    let mut command = tokio::process::Command::new(BIN);
    command
        .env("APPROVAL_GATE_STORE", store.location())
        .env_remove("APPROVAL_GATE_LOG")
        .args(["--public-url", ORIGIN]);
    TokioChildProcess::new(command).unwrap()
}

fn wait_call(id: RequestId, seconds: u64) -> CallToolRequestParams {
    let Value::Object(arguments) = json!({"id": id.to_string(), "timeoutSeconds": seconds}) else {
        unreachable!()
    };
    CallToolRequestParams::new("wait_for_approval").with_arguments(arguments)
}

#[tokio::test]
async fn rmcp_s_client_accepting_the_page_link_approves_nothing() {
    let store = fresh_store();
    let id = file(&store);
    let (tx, mut asked) = tokio::sync::mpsc::unbounded_channel();
    let client = Accepting { asked: tx }
        .serve(server_with_page(&store))
        .await
        .unwrap();
    let peer = client.peer().clone();
    let waiting = tokio::spawn(async move { peer.call_tool(wait_call(id, 3600)).await });
    let request = tokio::time::timeout(PATIENCE, asked.recv())
        .await
        .expect("the page link is offered")
        .unwrap();
    let ElicitRequestParams::UrlElicitationParams { url, .. } = request else {
        panic!("a URL-mode elicitation: {request:?}");
    };
    assert_eq!(url, format!("{ORIGIN}/requests/{id}"));
    let Value::Object(arguments) = json!({"id": id.to_string()}) else {
        unreachable!()
    };
    let checked = client
        .peer()
        .call_tool(CallToolRequestParams::new("check_approval").with_arguments(arguments))
        .await
        .unwrap();
    let checked = checked.structured_content.unwrap();
    assert_eq!(checked["effectiveStatus"], "pending", "{checked}");
    client.cancel().await.unwrap();
    let _ = waiting.await;
    let report = store.gate().status(id).unwrap();
    assert_eq!(report.effective_status(), EffectiveStatus::Pending);
}

#[tokio::test]
async fn rmcp_s_stateless_client_is_never_asked() {
    let store = fresh_store();
    let id = file(&store);
    let (tx, mut asked) = tokio::sync::mpsc::unbounded_channel();
    let client = Accepting { asked: tx }
        .serve_with_lifecycle(
            server_with_page(&store),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    let waited = client.peer().call_tool(wait_call(id, 1)).await.unwrap();
    assert_eq!(
        waited.structured_content.unwrap()["code"],
        "timeout",
        "still pending"
    );
    client.cancel().await.unwrap();
    assert!(asked.try_recv().is_err(), "no elicitation in 2026-07-28");
}

#[tokio::test]
async fn no_page_link_for_a_request_that_is_not_waiting() {
    let store = fresh_store();
    let denied = file(&store);
    store
        .gate()
        .deny(denied, &approval_gate::Decision::by("alice"))
        .unwrap();
    let unknown: RequestId = "0123456789ab".parse().unwrap();
    let mut raw = Raw::start(&store, Some(ORIGIN));
    raw.initialize("2025-11-25", json!({"elicitation": {"url": {}}}))
        .await;
    for (call, id, code) in [(2, denied, "denied"), (3, unknown, "not_found")] {
        raw.send(
            json!({"jsonrpc":"2.0","id":call,"method":"tools/call","params":{
            "name":"wait_for_approval","arguments":{"id": id.to_string(),"timeoutSeconds":1}}}),
        )
        .await;
        let wait = raw.answer(call).await;
        assert_eq!(wait["result"]["structuredContent"]["code"], code, "{wait}");
    }
    let lines = raw.close().await;
    assert!(elicitations(&lines).is_empty(), "{lines:?}");
}
