//! The MCP server: one handler, six tools, and no way to approve.

use std::sync::Arc;
use std::time::Duration;

use approval_gate::{
    Binding, CanonicalPayload, Decision, EffectiveStatus, Error, Gate, NewRequest, RequestId,
    StatusReport,
};
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::agent_gate::{AgentGate, Failure};
use super::answer::{
    Const, Consumed, NotAuthorized, Outcome, PendingItem, PendingPage, Refusal, Requested,
    StatusAnswer, note,
};
use super::inbound::RawPayload;
use super::tools::{
    self, CHECK_APPROVAL, CONSUME_APPROVAL, CheckApprovalArgs, ConsumeApprovalArgs,
    DECIDE_APPROVAL, DEFAULT_PAGE, DEFAULT_WAIT_SECONDS, DecideApprovalArgs, LIST_PENDING,
    ListPendingArgs, MAX_PAGE, MAX_WAIT_SECONDS, REQUEST_APPROVAL, RequestApprovalArgs,
    WAIT_FOR_APPROVAL, WaitForApprovalArgs,
};
use super::wait::{Changes, Progress, WaitEnd, Waiter};

/// The agent policy of the seed README, sent to the client as the server's instructions.
pub(crate) const INSTRUCTIONS: &str = "approval-gate makes consequential actions wait for a \
human decision. Before any outbound or destructive action (send, publish, delete, purchase, \
deploy), call request_approval with the exact action text (and the operation and payload you \
will run), then call wait_for_approval. A human approves or denies in their own terminal with \
the approval-gate CLI; these tools cannot approve. When wait_for_approval returns approved, \
call consume_approval with the same id and exact action text (and the same operation and \
payload), and proceed only if it returns ok: true, doing exactly what was approved, once. \
Pending, denied, expired, revoked, timed out or any error means no: do not proceed. Never call \
decide_approval for your own requests. No answer authorizes execution by itself \
(authorizesExecution is always false).";

impl From<Failure> for Refusal {
    fn from(failure: Failure) -> Self {
        Refusal::failure(&failure)
    }
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Self {
        Refusal::error(&error)
    }
}

/// The approval-gate MCP server.
#[derive(Debug, Clone)]
pub(crate) struct Server {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    gate: AgentGate,
    changes: Changes,
    tools: Vec<Tool>,
    /// Cancelled when the client's input ends: waits stop at once.
    shutdown: CancellationToken,
}

impl Server {
    pub(crate) fn new(gate: Gate, shutdown: CancellationToken) -> Self {
        let gate = AgentGate::new(gate);
        let changes = Changes::watch(&gate.requests_dir());
        Self {
            shared: Arc::new(Shared {
                gate,
                changes,
                tools: tools::catalogue(),
                shutdown,
            }),
        }
    }

    fn gate(&self) -> &AgentGate {
        &self.shared.gate
    }

    async fn request_approval(
        &self,
        arguments: Value,
        raw: Option<&RawPayload>,
    ) -> Result<Requested, Refusal> {
        let args: RequestApprovalArgs = parse(arguments)?;
        let mut new = NewRequest::new(args.action, args.reason);
        if let Some(who) = args.requested_by {
            new = new.requested_by(who);
        }
        if let Some(seconds) = args.ttl_seconds {
            new = new.ttl(Duration::from_secs(seconds));
        }
        if let Some(operation) = args.operation {
            new = new.operation(operation);
        }
        if let Some(payload) = canonical(args.payload.as_ref(), raw)? {
            new = new.payload(payload);
        }
        let submitted = self.gate().request(new).await?;
        let request = &submitted.request;
        let id = request.id();
        Ok(Requested {
            id: id.to_string(),
            status: "pending",
            effective_status: EffectiveStatus::Pending.as_str(),
            authorizes_execution: NotAuthorized::default(),
            expires_at: request.expires_at().to_string(),
            operation: request.operation().map(str::to_owned),
            payload_digest: request.payload_digest().map(|d| d.to_hex()),
            deduplicated: submitted.deduplicated,
            approve_command: format!("approval-gate approve {id}"),
            note: format!(
                "request {id} is pending: not approved. Ask the human to review it and run \
                 `approval-gate approve {id}` (or `approval-gate deny {id}`) in their own \
                 terminal, then call wait_for_approval with this id. Do not proceed before \
                 consume_approval returns ok: true."
            ),
        })
    }

    async fn check_approval(&self, arguments: Value) -> Result<StatusAnswer, Refusal> {
        let args: CheckApprovalArgs = parse(arguments)?;
        let id = RequestId::parse(&args.id)?;
        let report = self.gate().status(id).await?;
        Ok(StatusAnswer::of(&report))
    }

    async fn wait_for_approval(
        &self,
        arguments: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<StatusAnswer, Refusal> {
        let args: WaitForApprovalArgs = parse(arguments)?;
        let seconds = args.timeout_seconds.unwrap_or(DEFAULT_WAIT_SECONDS);
        if !(1..=MAX_WAIT_SECONDS).contains(&seconds) {
            return Err(Refusal::arguments(format_args!(
                "timeoutSeconds is {seconds}; it must be 1 to {MAX_WAIT_SECONDS}"
            )));
        }
        let id = RequestId::parse(&args.id)?;
        let progress = context.meta.get_progress_token().map(|token| Progress {
            peer: context.peer.clone(),
            token,
        });
        let waiter = Waiter {
            gate: self.gate(),
            changes: &self.shared.changes,
            shutdown: &self.shared.shutdown,
        };
        let end = waiter
            .wait(id, Duration::from_secs(seconds), &context.ct, progress)
            .await;
        tracing::debug!(%id, ?end, "wait ended");
        match end {
            WaitEnd::Decided(report)
                if report.effective_status() == EffectiveStatus::ApprovedUnconsumed =>
            {
                Ok(StatusAnswer::of(&report))
            }
            WaitEnd::Decided(report) => Err(decided_no(&report)),
            WaitEnd::TimedOut => Err(Refusal::new(
                "timeout",
                format!(
                    "still pending: not approved. No human decided request {id} within \
                     {seconds} s; do not proceed. Call wait_for_approval again to keep waiting."
                ),
            )
            .id(id)
            .status(EffectiveStatus::Pending)),
            WaitEnd::ShuttingDown => Err(Refusal::new(
                "shutting_down",
                format!(
                    "the server is shutting down: request {id} is still pending, not approved; \
                     do not proceed"
                ),
            )
            .id(id)
            .status(EffectiveStatus::Pending)),
            // The client has stopped listening; this answer is for the record.
            WaitEnd::Cancelled => Err(Refusal::new(
                "cancelled",
                format!("the wait was cancelled: request {id} is still pending, not approved"),
            )
            .id(id)),
            WaitEnd::Failed(failure) => Err(failure.into()),
        }
    }

    async fn list_pending(&self, arguments: Value) -> Result<PendingPage, Refusal> {
        let args: ListPendingArgs = parse(arguments)?;
        let limit = args.limit.unwrap_or(DEFAULT_PAGE as u64);
        let limit = usize::try_from(limit)
            .ok()
            .filter(|l| (1..=MAX_PAGE).contains(l))
            .ok_or_else(|| {
                Refusal::arguments(format_args!("limit is {limit}; it must be 1 to {MAX_PAGE}"))
            })?;
        let after = args.after.as_deref().map(RequestId::parse).transpose()?;
        let page = self.gate().list_pending(after, limit).await?;
        Ok(PendingPage {
            items: page.items.iter().map(PendingItem::of).collect(),
            next_after: page.next_after.map(|id| id.to_string()),
            authorizes_execution: NotAuthorized::default(),
        })
    }

    async fn consume_approval(
        &self,
        arguments: Value,
        raw: Option<&RawPayload>,
    ) -> Result<Consumed, Refusal> {
        let args: ConsumeApprovalArgs = parse(arguments)?;
        let id = RequestId::parse(&args.id)?;
        let mut binding = Binding::new(args.action);
        if let Some(operation) = args.operation {
            binding = binding.operation(operation);
        }
        if let Some(payload) = canonical(args.payload.as_ref(), raw)? {
            binding = binding.payload(payload);
        }
        self.gate().consume(id, binding).await?;
        Ok(Consumed {
            ok: Const,
            id: id.to_string(),
            effective_status: EffectiveStatus::Consumed.as_str(),
            authorizes_execution: NotAuthorized::default(),
            note: format!(
                "the approval of request {id} is now spent, by this call. Under your policy you \
                 may now do exactly the approved action, once. This answer is not proof of \
                 approval for any other program."
            ),
        })
    }

    async fn decide_approval(
        &self,
        arguments: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<StatusAnswer, Refusal> {
        let args: DecideApprovalArgs = parse(arguments)?;
        if args.approve {
            // Refused before anything else is looked at: nothing reaches the store.
            let id = RequestId::parse(&args.id).ok();
            let target = id.map_or_else(|| "<id>".to_owned(), |id| id.to_string());
            let refusal = Refusal::new(
                "approve_not_allowed",
                format!(
                    "refused: these tools can never approve, and nothing changed. Only a human \
                     can approve, in their own terminal: `approval-gate approve {target}`."
                ),
            );
            return Err(match id {
                Some(id) => refusal.id(id),
                None => refusal,
            });
        }
        let id = RequestId::parse(&args.id)?;
        let mut decision = Decision::by(decided_by(context));
        if let Some(reason) = args.reason {
            decision = decision.reason(reason);
        }
        let report = self.gate().deny(id, decision).await?;
        Ok(StatusAnswer::of(&report))
    }
}

fn respond<T: serde::Serialize>(result: Result<T, Refusal>) -> CallToolResult {
    Outcome::from(result).into_call_result()
}

/// Decoded arguments, or an `invalid_arguments` refusal naming the problem.
fn parse<T: DeserializeOwned>(arguments: Value) -> Result<T, Refusal> {
    serde_json::from_value(arguments).map_err(Refusal::arguments)
}

/// The payload in canonical form; `None` when absent. A `null` payload is refused by the
/// library, as everywhere.
///
/// The raw text, when the transport supplied it, is what the agent sent: the library's strict
/// parser refuses its duplicate keys, which the decoded `Value` has already collapsed.
fn canonical(
    value: Option<&Value>,
    raw: Option<&RawPayload>,
) -> Result<Option<CanonicalPayload>, Refusal> {
    let Some(value) = value else {
        return Ok(None);
    };
    let payload = match raw {
        Some(raw) => CanonicalPayload::from_json_text(&raw.0),
        None => CanonicalPayload::from_value(value),
    };
    payload
        .map(Some)
        .map_err(|e| Refusal::error(&Error::from(e)))
}

/// A wait that ended in anything but an approval ready to consume.
fn decided_no(report: &StatusReport) -> Refusal {
    let id = report.request().id();
    let status = report.effective_status();
    let code = match status {
        EffectiveStatus::Denied => "denied",
        EffectiveStatus::Expired => "expired",
        EffectiveStatus::Revoked => "revoked",
        EffectiveStatus::Consumed => "already_consumed",
        EffectiveStatus::ApprovedExpired => "approval_expired",
        EffectiveStatus::Pending | EffectiveStatus::ApprovedUnconsumed => "internal",
    };
    let mut message = format!("request {id}: {}", note(id, status));
    if let Some(reason) = report.request().decision_reason() {
        message.push_str("; the decision's reason: ");
        message.push_str(reason);
    }
    Refusal::new(code, message).id(id).status(status)
}

/// The audit log's `decidedBy` for a denial over MCP: plainly not a human at the CLI.
fn decided_by(context: &RequestContext<RoleServer>) -> String {
    let client: String = context
        .client_info()
        .map(|info| info.name)
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(64)
        .collect();
    if client.trim().is_empty() {
        "agent via approval-gate-mcp".to_owned()
    } else {
        format!("agent via approval-gate-mcp ({client})")
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("approval-gate", env!("CARGO_PKG_VERSION"))
                    .with_title("Approval Gate"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.shared.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let raw = context.extensions.get::<RawPayload>().cloned();
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let result = match request.name.as_ref() {
            REQUEST_APPROVAL => respond(self.request_approval(arguments, raw.as_ref()).await),
            CHECK_APPROVAL => respond(self.check_approval(arguments).await),
            WAIT_FOR_APPROVAL => respond(self.wait_for_approval(arguments, &context).await),
            LIST_PENDING => respond(self.list_pending(arguments).await),
            CONSUME_APPROVAL => respond(self.consume_approval(arguments, raw.as_ref()).await),
            DECIDE_APPROVAL => respond(self.decide_approval(arguments, &context).await),
            other => {
                let name: String = other.chars().take(64).collect();
                return Err(ErrorData::invalid_params(
                    format!("unknown tool {name:?}; call tools/list for the tools"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}
