//! A real `approval-gate-mcp` process, a real MCP client (rmcp's), and the library as the
//! human at the other end of the store.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use approval_gate::{Clock, Gate, ManualClock, NewRequest, RequestId, SystemClock};
use approval_gate_tests::backend::{Backend, Directory, Postgres, Store};
#[allow(deprecated, reason = "MCP logging: deprecated by rmcp, tested here")]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{CallToolRequestParams, CallToolResult, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::ChildStderr;
use tokio::sync::mpsc;

/// The server binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_approval-gate-mcp");

/// Guard against a hung test, never a latency assertion.
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

/// The kind of store the suite runs against, from `APPROVAL_GATE_MCP_TEST_STORE`: `dir` (the
/// default) or `postgres` (on the test server, `APPROVAL_GATE_TEST_PG` or a private cluster).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Dir,
    Postgres,
}

pub(crate) fn kind() -> Kind {
    let chosen = std::env::var_os("APPROVAL_GATE_MCP_TEST_STORE").unwrap_or_default();
    match chosen.to_string_lossy().as_ref() {
        "" | "dir" => Kind::Dir,
        "postgres" => Kind::Postgres,
        other => panic!("APPROVAL_GATE_MCP_TEST_STORE: {other:?} is neither `dir` nor `postgres`"),
    }
}

/// The backend of [`kind`], for its own looks at a store (contents, tampering).
pub(crate) fn backend() -> &'static dyn Backend {
    match kind() {
        Kind::Dir => &Directory,
        Kind::Postgres => &Postgres,
    }
}

/// A fresh store of [`kind`], created by the human's side first, as `approval-gate` would.
pub(crate) fn fresh_store() -> Store {
    let store = backend().fresh();
    drop(store.gate());
    store
}

/// Forwards progress and log notifications to the test.
#[derive(Clone)]
pub(crate) struct Client {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    #[allow(deprecated, reason = "MCP logging: deprecated by rmcp, tested here")]
    logs: mpsc::UnboundedSender<LoggingMessageNotificationParam>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }

    #[allow(deprecated, reason = "MCP logging: deprecated by rmcp, tested here")]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.logs.send(params);
    }
}

/// A running server on a fresh store, connected to a client.
pub(crate) struct Session {
    pub(crate) client: RunningService<RoleClient, Client>,
    pub(crate) progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    #[allow(deprecated, reason = "MCP logging: deprecated by rmcp, tested here")]
    pub(crate) logs: mpsc::UnboundedReceiver<LoggingMessageNotificationParam>,
    pub(crate) stderr: Option<Lines<BufReader<ChildStderr>>>,
    pub(crate) store: Store,
    /// The server's config home.
    _config: TempDir,
}

impl Session {
    pub(crate) async fn start() -> Self {
        Self::start_with_log(None).await
    }

    /// With `log`, the server logs at that filter and its stderr is readable.
    pub(crate) async fn start_with_log(log: Option<&str>) -> Self {
        Self::start_configured(log, |_, _, _| {}).await
    }

    /// `configure` adds to the server's command line and environment, given the store and
    /// the config home: the default config file is `<config home>/approval-gate/config.toml`.
    pub(crate) async fn start_configured(
        log: Option<&str>,
        configure: impl FnOnce(&mut tokio::process::Command, &Store, &Path),
    ) -> Self {
        let config = tempfile::tempdir().unwrap();
        let store = fresh_store();
        let mut command = tokio::process::Command::new(BIN);
        command.env_remove("APPROVAL_GATE_LOG");
        operator_settings_of_this_test_only(&mut command, config.path());
        command.env("APPROVAL_GATE_STORE", store.location());
        if let Some(log) = log {
            command.env("APPROVAL_GATE_LOG", log);
        }
        configure(&mut command, &store, config.path());
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(if log.is_some() {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .spawn()
            .unwrap();
        let (tx, progress) = mpsc::unbounded_channel();
        let (log_tx, logs) = mpsc::unbounded_channel();
        let client = Client {
            progress: tx,
            logs: log_tx,
        }
        .serve(transport)
        .await
        .unwrap();
        Self {
            client,
            progress,
            logs,
            stderr: stderr.map(|s| BufReader::new(s).lines()),
            store,
            _config: config,
        }
    }

    /// The store, as the human's side (the library) sees it.
    pub(crate) fn gate(&self) -> Gate {
        self.store.builder().open().unwrap()
    }

    /// A gate whose clock runs `behind` the real one: what it files is older than it looks.
    pub(crate) fn gate_in_the_past(&self, behind: Duration) -> Gate {
        self.store
            .builder()
            .clock(ManualClock::new(SystemClock.now().saturating_sub(behind)))
            .open()
            .unwrap()
    }

    pub(crate) async fn try_call(
        &self,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ServiceError> {
        let Value::Object(arguments) = arguments else {
            panic!("arguments must be an object");
        };
        self.client
            .peer()
            .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
            .await
    }

    /// Calls a tool; the result's structured content and whether it is an error.
    pub(crate) async fn call(&self, tool: &str, arguments: Value) -> Reply {
        Reply::of(self.try_call(tool, arguments).await.unwrap())
    }

    /// Files a request over MCP and returns its id.
    pub(crate) async fn request(&self, action: &str) -> RequestId {
        let reply = self
            .call(
                "request_approval",
                serde_json::json!({ "action": action, "reason": "the test needs it" }),
            )
            .await
            .ok();
        reply["id"].as_str().unwrap().parse().unwrap()
    }

    /// Waits (at most [`PATIENCE`]) for a stderr line containing every one of `needles`.
    pub(crate) async fn stderr_line_with(&mut self, needles: &[&str]) -> String {
        let lines = self.stderr.as_mut().expect("started with a log filter");
        tokio::time::timeout(PATIENCE, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if needles.iter().all(|n| line.contains(n)) {
                    return line;
                }
            }
            panic!("stderr ended without a line containing {needles:?}");
        })
        .await
        .expect("the expected log line")
    }

    /// The next log notification (at most [`PATIENCE`]).
    #[allow(deprecated, reason = "MCP logging: deprecated by rmcp, tested here")]
    pub(crate) async fn next_log(&mut self) -> LoggingMessageNotificationParam {
        tokio::time::timeout(PATIENCE, self.logs.recv())
            .await
            .expect("a log notification")
            .expect("the client is running")
    }

    /// The next progress notification (at most [`PATIENCE`]).
    pub(crate) async fn next_progress(&mut self) -> ProgressNotificationParam {
        tokio::time::timeout(PATIENCE, self.progress.recv())
            .await
            .expect("a progress notification")
            .expect("the client is running")
    }
}

/// A tool result, decoded.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) is_error: bool,
    pub(crate) content: Value,
}

impl Reply {
    pub(crate) fn of(result: CallToolResult) -> Self {
        let content = result.structured_content.expect("structured content");
        // The text block carries the same JSON, for clients that read only text.
        let text = result.content[0]
            .as_text()
            .expect("a text block")
            .text
            .clone();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), content);
        // Whatever the answer, it never authorizes execution.
        assert_eq!(
            content["authorizesExecution"],
            Value::Bool(false),
            "{content}"
        );
        Self {
            is_error: result.is_error == Some(true),
            content,
        }
    }

    /// The content of a success; panics on a refusal.
    #[track_caller]
    pub(crate) fn ok(self) -> Value {
        assert!(!self.is_error, "expected success, got {}", self.content);
        self.content
    }

    /// The content of a refusal with `code`; panics otherwise.
    #[track_caller]
    pub(crate) fn refused(self, code: &str) -> Value {
        assert!(
            self.is_error,
            "expected refusal {code}, got {}",
            self.content
        );
        assert_eq!(self.content["code"], code, "{}", self.content);
        assert_eq!(self.content["ok"], false);
        assert!(
            self.content["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
        // The predecessor's agents test `error`: every refusal carries it, as the message.
        assert_eq!(
            self.content["error"], self.content["message"],
            "{}",
            self.content
        );
        self.content
    }
}

/// The operator's environment of the machine running the tests never reaches the server;
/// its default config file is `<config_home>/approval-gate/config.toml`.
pub(crate) fn operator_settings_of_this_test_only(
    command: &mut tokio::process::Command,
    config_home: &Path,
) {
    for name in [
        "APPROVAL_GATE_STORE",
        "APPROVAL_GATE_DIR",
        "APPROVAL_GATE_CONFIG",
        "APPROVAL_GATE_MAX_PENDING",
        "APPROVAL_GATE_MAX_REQUESTS",
        "APPROVAL_GATE_DEFAULT_TTL",
        "APPROVAL_GATE_APPROVERS",
        "APPROVAL_GATE_QUORUM",
        "APPROVAL_GATE_SIGNING_KEY",
    ] {
        command.env_remove(name);
    }
    command.env("XDG_CONFIG_HOME", config_home);
}

/// Asserts that `store` holds what it held `before` (its backend's
/// [`contents`](Backend::contents)): to prove nothing changed.
#[track_caller]
pub(crate) fn assert_unchanged(
    store: &Store,
    before: &std::collections::BTreeMap<String, Vec<u8>>,
    what: &str,
) {
    let changed = approval_gate_tests::changed(before, &backend().contents(store));
    assert!(changed.is_empty(), "{what}: {changed:?} changed");
}

/// Files a request directly with the library.
pub(crate) fn file(gate: &Gate, new: NewRequest) -> RequestId {
    gate.request_approval(new).unwrap().request.id()
}
