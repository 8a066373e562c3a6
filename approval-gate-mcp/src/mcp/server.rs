//! The MCP server: six tools on rmcp's tool router, and no way to approve.
//!
//! Each tool is one `#[tool]` method below: its name, description, annotations and output
//! schema in the attribute, its arguments (and so its input schema) in the `Parameters`
//! type. Adding a tool is adding a method.

use std::sync::Arc;
use std::time::Duration;

use approval_gate::{Binding, Decision, EffectiveStatus, Gate, NewRequest, RequestId, Watch};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::Tool;
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{tool, tool_router};
use tokio_util::sync::CancellationToken;

use self::handler::decided_by;
use super::agent_gate::AgentGate;
use super::answer::{
    Const, Consumed, Left, NotAuthorized, PendingItem, PendingPage, Requested, StatusAnswer,
    by_allowance,
};
use super::inbound::{RawPayload, canonical, payload_of};
use super::log::ClientLog;
use super::page::PageLinks;
use super::refusal::{Refusal, decided_no, timed_out};
use super::tools::{
    Args, CheckApprovalArgs, ConsumeApprovalArgs, DEFAULT_PAGE, DEFAULT_WAIT_SECONDS,
    DecideApprovalArgs, ListPendingArgs, MAX_PAGE, MAX_POLL_SECONDS, MAX_WAIT_SECONDS,
    MIN_POLL_SECONDS, RequestApprovalArgs, WaitForApprovalArgs, output_schema,
};
use super::wait::{Progress, WaitEnd, Waiter};

mod handler;

/// The approval-gate MCP server.
#[derive(Debug, Clone)]
pub(crate) struct Server {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    gate: AgentGate,
    /// One watcher of the store, shared by every wait.
    watch: Watch,
    router: ToolRouter<Server>,
    /// The tools in the order `tools/list` gives them.
    listed: Vec<Tool>,
    log: ClientLog,
    /// The web page's links, when the operator named its origin.
    links: Option<PageLinks>,
    /// Cancelled when the client's input ends: waits stop at once.
    shutdown: CancellationToken,
}

/// `tools/list` gives the tools in the order of a request's life; a tool not named here
/// comes after these, by name.
const LISTING_ORDER: [&str; 6] = [
    "request_approval",
    "check_approval",
    "wait_for_approval",
    "list_pending",
    "consume_approval",
    "decide_approval",
];

/// What every tool answers: its structured content, or a refusal with `isError: true`.
type Answer<T> = Result<Json<T>, Refusal>;

impl Server {
    pub(crate) fn new(
        gate: Gate,
        shutdown: CancellationToken,
        log: ClientLog,
        links: Option<PageLinks>,
    ) -> Self {
        let watch = gate.watch();
        match watch.polling() {
            None => tracing::debug!("watching for decisions"),
            Some(why) => tracing::warn!(
                "waits poll every {:?} instead of following events: {why}",
                watch.fallback()
            ),
        }
        let gate = AgentGate::new(gate);
        let router = Self::tool_router();
        let mut listed = router.list_all();
        listed.sort_by_key(|tool| {
            LISTING_ORDER
                .iter()
                .position(|name| *name == tool.name)
                .unwrap_or(LISTING_ORDER.len())
        });
        Self {
            shared: Arc::new(Shared {
                gate,
                watch,
                router,
                listed,
                log,
                links,
                shutdown,
            }),
        }
    }

    fn gate(&self) -> &AgentGate {
        &self.shared.gate
    }

    /// The answer for `report`, with what is left of the allowance that approved it, if one
    /// did (one more read, only for such requests).
    async fn answer(&self, report: &approval_gate::StatusReport) -> StatusAnswer {
        let allowance = match report.request().allowance() {
            Some(by) => self.gate().allowance(by).await,
            None => None,
        };
        StatusAnswer::of(report, allowance.as_ref())
    }
}

#[tool_router]
impl Server {
    #[tool(
        title = "Request approval",
        description = "Ask a human to approve a consequential action (send, delete, publish, \
            spend, deploy) before doing it. Files a pending request bound to the exact action \
            text and, if given, the operation and JSON payload you intend to run, and returns \
            its id, its expiry and the `approval-gate approve <id>` command the human runs in \
            their own terminal. While an identical request is pending, it is returned instead \
            of a new one (deduplicated: true). This authorizes nothing: call wait_for_approval \
            next, unless an allowance a human signed approved it as it was filed (allowance: \
            its id; status approved): then consume it. Refusals (isError) carry a code: invalid_arguments, invalid_input, \
            invalid_payload, queue_full, creation_limit.",
        output_schema = output_schema::<Requested>(),
        // De-duplication makes a retry while pending harmless.
        annotations(
            title = "Request approval",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn request_approval(
        &self,
        Parameters(Args(args)): Parameters<Args<RequestApprovalArgs>>,
        Extension(raw): Extension<RawPayload>,
    ) -> Answer<Requested> {
        let args = args?;
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
        if let Some(payload) = canonical(args.payload.as_ref(), &raw)? {
            new = new.payload(payload);
        }
        let submitted = self.gate().request(new).await?;
        let request = &submitted.request;
        let id = request.id();
        tracing::info!(%id, deduplicated = submitted.deduplicated, "request filed");
        let allowance = request.allowance();
        let left = match allowance {
            Some(by) => Left::of(self.gate().allowance(by).await.as_ref()),
            None => Left::default(),
        };
        let note = match allowance {
            Some(by) => by_allowance(id, by),
            None => format!(
                "request {id} is pending: not approved. Ask the human to review it and run \
                 `approval-gate approve {id}` (or `approval-gate deny {id}`) in their own \
                 terminal, then call wait_for_approval with this id. Do not proceed before \
                 consume_approval returns ok: true."
            ),
        };
        Ok(Json(Requested {
            id: id.to_string(),
            status: request.status(),
            effective_status: if allowance.is_some() {
                EffectiveStatus::ApprovedUnconsumed
            } else {
                EffectiveStatus::Pending
            },
            authorizes_execution: NotAuthorized::default(),
            expires_at: request.expires_at(),
            operation: request.operation().map(str::to_owned),
            payload_digest: request.payload_digest(),
            deduplicated: submitted.deduplicated,
            allowance: allowance.map(|a| a.to_string()),
            left,
            approve_command: format!("approval-gate approve {id}"),
            note,
        }))
    }

    #[tool(
        title = "Check approval",
        description = "Report where an approval request stands: status and effectiveStatus \
            (pending, approved_unconsumed, approved_expired, consumed, denied, expired, \
            revoked), with a note on what to do; for a request an allowance a human signed \
            approved as it was filed, which one (allowance) and what it has left \
            (allowanceUsesLeft, allowanceBudgetLeft). Never an authorization: authorizesExecution \
            is always false, and only a successful consume_approval counts. Refusals (isError) \
            carry a code: invalid_arguments, invalid_id, not_found, archived.",
        output_schema = output_schema::<StatusAnswer>(),
        annotations(
            title = "Check approval",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn check_approval(
        &self,
        Parameters(Args(args)): Parameters<Args<CheckApprovalArgs>>,
    ) -> Answer<StatusAnswer> {
        let id = RequestId::parse(&args?.id)?;
        let report = self.gate().status(id).await?;
        Ok(Json(self.answer(&report).await))
    }

    #[tool(
        title = "Wait for approval",
        description = "Wait until a human decides the request or it expires, for at most \
            timeoutSeconds (default 300). Returns as soon as the decision is made. Only \
            effectiveStatus approved_unconsumed is a success, and even then call \
            consume_approval before acting. Everything else is an error result whose code \
            says why: timeout (still pending, NOT approved: do not proceed; wait again if you \
            like; it also carries the request's fields with status: pending and a note, as \
            approval-gate-mcp (Node) answered), denied, expired, revoked, already_consumed, \
            approval_expired, not_found, shutting_down. pollSeconds (poll_seconds) is \
            accepted and ignored: the wait follows the store's events. Sends progress \
            notifications when the call carries a progress token; stops when cancelled.",
        output_schema = output_schema::<StatusAnswer>(),
        annotations(
            title = "Wait for approval",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn wait_for_approval(
        &self,
        Parameters(Args(args)): Parameters<Args<WaitForApprovalArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer<StatusAnswer> {
        let args = args?;
        let seconds = args.timeout_seconds.unwrap_or(DEFAULT_WAIT_SECONDS);
        if !(1..=MAX_WAIT_SECONDS).contains(&seconds) {
            return Err(Refusal::arguments(format_args!(
                "timeoutSeconds is {seconds}; it must be 1 to {MAX_WAIT_SECONDS}"
            )));
        }
        // Checked as the predecessor checked it, then ignored: waits follow the store's events.
        if let Some(poll) = args.poll_seconds
            && !(MIN_POLL_SECONDS..=MAX_POLL_SECONDS).contains(&poll)
        {
            return Err(Refusal::arguments(format_args!(
                "pollSeconds is {poll}; it must be {MIN_POLL_SECONDS} to {MAX_POLL_SECONDS}"
            )));
        }
        let id = RequestId::parse(&args.id)?;
        // Only a link for the user to open, and only to a request that is waiting: whatever
        // the client answers decides nothing.
        if let Some(links) = &self.shared.links
            && links.may_offer(id, &context)
            && self
                .gate()
                .status(id)
                .await
                .is_ok_and(|report| report.effective_status() == EffectiveStatus::Pending)
        {
            links.offer(id, &context);
        }
        let progress = context.meta.get_progress_token().map(|token| Progress {
            peer: context.peer.clone(),
            token,
        });
        let waiter = Waiter {
            watch: &self.shared.watch,
            shutdown: &self.shared.shutdown,
        };
        let end = waiter
            .wait(id, Duration::from_secs(seconds), &context.ct, progress)
            .await;
        tracing::debug!(%id, ?end, "wait ended");
        match end {
            WaitEnd::Decided(report) | WaitEnd::TimedOut(report)
                if report.effective_status() == EffectiveStatus::ApprovedUnconsumed =>
            {
                Ok(Json(self.answer(&report).await))
            }
            WaitEnd::TimedOut(report) if report.effective_status() == EffectiveStatus::Pending => {
                Err(timed_out(&report, seconds))
            }
            WaitEnd::Decided(report) | WaitEnd::TimedOut(report) => Err(decided_no(&report)),
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

    #[tool(
        title = "List pending approvals",
        description = "List requests waiting for a human decision, oldest first, one page at \
            a time (limit 1 to 100, default 20). Pass the answer's nextAfter as `after` to get \
            the next page; nextAfter is null on the last page (nextCursor and `cursor` are the \
            same, under approval-gate-mcp (Node) 0.4's names). A request whose record cannot \
            be read is listed first with unreadable: true and its id: it refuses everything \
            until a human repairs it, so do not proceed with it.",
        output_schema = output_schema::<PendingPage>(),
        annotations(
            title = "List pending approvals",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_pending(
        &self,
        Parameters(Args(args)): Parameters<Args<ListPendingArgs>>,
    ) -> Answer<PendingPage> {
        let args = args?;
        let limit = args.limit.unwrap_or(DEFAULT_PAGE as u64);
        let limit = usize::try_from(limit)
            .ok()
            .filter(|l| (1..=MAX_PAGE).contains(l))
            .ok_or_else(|| {
                Refusal::arguments(format_args!("limit is {limit}; it must be 1 to {MAX_PAGE}"))
            })?;
        let after = args.after.as_deref().map(RequestId::parse).transpose()?;
        let page = self.gate().list_pending(after, limit).await?;
        let next = page.next_after.map(|id| id.to_string());
        Ok(Json(PendingPage {
            items: page.items.iter().map(PendingItem::of).collect(),
            next_after: next.clone(),
            next_cursor: next,
            authorizes_execution: NotAuthorized::default(),
        }))
    }

    #[tool(
        title = "Consume approval",
        description = "Spend an approved request, exactly once: ok: true only if a human \
            approved it, it was not consumed, revoked or expired, and action, operation and \
            payload are exactly the approved ones (a mismatch is refused and does not spend \
            it). Otherwise ok: false, as an error result whose code says why (not_approved, \
            denied, expired, revoked, already_consumed, approval_expired, action_mismatch, \
            operation_mismatch, payload_mismatch, ...). For the agent's own policy only: this \
            answer is never proof of approval for trusted code, which consumes the approval \
            itself (execute_approved in the approval-gate library); do not call this when \
            such code will act on the approval, or it will find the approval spent.",
        output_schema = output_schema::<Consumed>(),
        annotations(
            title = "Consume approval",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn consume_approval(
        &self,
        Parameters(Args(args)): Parameters<Args<ConsumeApprovalArgs>>,
        Extension(raw): Extension<RawPayload>,
    ) -> Answer<Consumed> {
        let args = args?;
        let id = RequestId::parse(&args.id)?;
        let binding = payload_of(args.payload.as_ref(), &raw).map(|payload| {
            let mut binding = Binding::new(args.action);
            if let Some(operation) = args.operation {
                binding = binding.operation(operation);
            }
            if let Some(payload) = payload {
                binding = binding.payload(payload);
            }
            binding
        });
        self.gate().consume(id, binding).await?;
        tracing::info!(%id, "approval consumed by an agent");
        Ok(Json(Consumed {
            ok: Const,
            id: id.to_string(),
            effective_status: EffectiveStatus::Consumed,
            authorizes_execution: NotAuthorized::default(),
            note: format!(
                "the approval of request {id} is now spent, by this call. Under your policy you \
                 may now do exactly the approved action, once. This answer is not proof of \
                 approval for any other program."
            ),
        }))
    }

    #[tool(
        title = "Deny approval",
        description = "Deny a pending request (approve: false). These tools can never \
            approve: approve: true is refused (code approve_not_allowed) and changes nothing; \
            only a human approves, in their own terminal, with `approval-gate approve <id>`. \
            Other refusals: invalid_arguments, invalid_id, not_found, expired, wrong_state.",
        output_schema = output_schema::<StatusAnswer>(),
        // A denial cannot be undone; denying twice changes nothing more.
        annotations(
            title = "Deny approval",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn decide_approval(
        &self,
        Parameters(Args(args)): Parameters<Args<DecideApprovalArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer<StatusAnswer> {
        let args = args?;
        if args.approve {
            // Refused before anything else is looked at: nothing reaches the store.
            let id = RequestId::parse(&args.id).ok();
            let target = id.map_or_else(|| "<id>".to_owned(), |id| id.to_string());
            tracing::warn!(id = %target, "refused an agent's attempt to approve");
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
        let mut decision = Decision::by(decided_by(&context));
        if let Some(reason) = args.reason {
            decision = decision.reason(reason);
        }
        let report = self.gate().deny(id, decision).await?;
        tracing::info!(%id, "request denied by an agent");
        Ok(Json(StatusAnswer::of(&report, None)))
    }
}
