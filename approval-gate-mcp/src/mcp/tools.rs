//! The six tools as the agent sees them: names, descriptions, argument types (their input
//! schemas), output schemas and annotations.
//!
//! Argument types refuse unknown fields, so a call that smuggles in `"status": "approved"`
//! or `"force": true` is refused, not half-read. The seed's `snake_case` spellings
//! (`requested_by`, `ttl_seconds`, `timeout_seconds`) are accepted as aliases.

use std::sync::Arc;

use approval_gate::limits::{
    MAX_ACTION_BYTES, MAX_NAME_BYTES, MAX_OPERATION_BYTES, MAX_REASON_BYTES, MAX_TTL, MIN_TTL,
};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::answer::{Consumed, Outcome, PendingPage, Requested, StatusAnswer};

pub(crate) const REQUEST_APPROVAL: &str = "request_approval";
pub(crate) const CHECK_APPROVAL: &str = "check_approval";
pub(crate) const WAIT_FOR_APPROVAL: &str = "wait_for_approval";
pub(crate) const LIST_PENDING: &str = "list_pending";
pub(crate) const CONSUME_APPROVAL: &str = "consume_approval";
pub(crate) const DECIDE_APPROVAL: &str = "decide_approval";

/// Default and bounds of `wait_for_approval`'s `timeoutSeconds`.
pub(crate) const DEFAULT_WAIT_SECONDS: u64 = 300;
pub(crate) const MAX_WAIT_SECONDS: u64 = 3600;
/// Default and bound of `list_pending`'s `limit`.
pub(crate) const DEFAULT_PAGE: usize = 20;
pub(crate) const MAX_PAGE: usize = 100;

const MIN_TTL_SECONDS: u64 = MIN_TTL.as_secs();
const MAX_TTL_SECONDS: u64 = MAX_TTL.as_secs();

/// Arguments of `request_approval`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RequestApprovalArgs {
    /// The exact action a human will read and approve, e.g. "send email to
    /// alice@example.com, subject: Invoice 1042". Consuming the approval requires this text
    /// byte for byte. At most 4096 bytes.
    #[schemars(length(min = 1, max = MAX_ACTION_BYTES))]
    pub(crate) action: String,
    /// Why the action is needed, for the human deciding. At most 4096 bytes.
    #[schemars(length(min = 1, max = MAX_REASON_BYTES))]
    pub(crate) reason: String,
    /// Who is asking, e.g. the agent's name (shown to the human, not verified). At most
    /// 256 bytes.
    #[serde(default, alias = "requested_by")]
    #[schemars(length(min = 1, max = MAX_NAME_BYTES))]
    pub(crate) requested_by: Option<String>,
    /// How long the request, and an approval of it, stays usable, in seconds: 10 to 604800
    /// (7 days). Default 3600.
    #[serde(default, alias = "ttl_seconds")]
    #[schemars(range(min = MIN_TTL_SECONDS, max = MAX_TTL_SECONDS))]
    pub(crate) ttl_seconds: Option<u64>,
    /// The operation the approval is bound to, e.g. "smtp.send": ASCII letters, digits and
    /// `. _ - : /`, at most 128 bytes. Consuming requires the same operation.
    #[serde(default)]
    #[schemars(length(min = 1, max = MAX_OPERATION_BYTES), regex(pattern = r"^[A-Za-z0-9._:/-]+$"))]
    pub(crate) operation: Option<String>,
    /// The exact data the action will use (any JSON value, at most 64 KiB, nesting at most
    /// 32 deep, integers within ±(2^53-1), no duplicate keys, no NUL characters). The human
    /// sees it, and consuming requires the same value. Omit it for no payload; null is
    /// refused (null inside an object or array is fine).
    #[serde(default, deserialize_with = "present")]
    pub(crate) payload: Option<Value>,
}

/// A `payload` argument that is there, `null` included: `null` must reach the library, which
/// refuses it, rather than pass for an omitted payload. (Absent is `None` by `default`.)
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// Arguments of `check_approval`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CheckApprovalArgs {
    /// The request id returned by `request_approval` (12 lowercase hex characters).
    #[schemars(regex(pattern = r"^[0-9a-f]{12}$"))]
    pub(crate) id: String,
}

/// Arguments of `wait_for_approval`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct WaitForApprovalArgs {
    /// The request id returned by `request_approval` (12 lowercase hex characters).
    #[schemars(regex(pattern = r"^[0-9a-f]{12}$"))]
    pub(crate) id: String,
    /// How long to wait for a decision, in seconds: 1 to 3600. Default 300.
    #[serde(default, alias = "timeout_seconds")]
    #[schemars(range(min = 1, max = MAX_WAIT_SECONDS))]
    pub(crate) timeout_seconds: Option<u64>,
}

/// Arguments of `list_pending`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListPendingArgs {
    /// Largest page: 1 to 100. Default 20.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_PAGE))]
    pub(crate) limit: Option<u64>,
    /// Start after this request id: the previous page's nextAfter.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[0-9a-f]{12}$"))]
    pub(crate) after: Option<String>,
}

/// Arguments of `consume_approval`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ConsumeApprovalArgs {
    /// The request id returned by `request_approval` (12 lowercase hex characters).
    #[schemars(regex(pattern = r"^[0-9a-f]{12}$"))]
    pub(crate) id: String,
    /// The action text, byte for byte as in the request.
    #[schemars(length(max = MAX_ACTION_BYTES))]
    pub(crate) action: String,
    /// The operation, exactly as in the request; omit if the request had none.
    #[serde(default)]
    #[schemars(length(max = MAX_OPERATION_BYTES))]
    pub(crate) operation: Option<String>,
    /// The payload, the same JSON value as in the request; omit it if it had none (null is
    /// refused).
    #[serde(default, deserialize_with = "present")]
    pub(crate) payload: Option<Value>,
}

/// Arguments of `decide_approval`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct DecideApprovalArgs {
    /// The request id (12 lowercase hex characters).
    #[schemars(regex(pattern = r"^[0-9a-f]{12}$"))]
    pub(crate) id: String,
    /// Must be false: these tools can only deny. true is refused; only a human approves,
    /// in their own terminal.
    #[schemars(extend("const" = false))]
    pub(crate) approve: bool,
    /// Why it is denied, for the audit log. At most 4096 bytes.
    #[serde(default)]
    #[schemars(length(max = MAX_REASON_BYTES))]
    pub(crate) reason: Option<String>,
}

fn output_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let mut schema = schema_for_output::<Outcome<T>>().as_ref().clone();
    // Clients of the 2025 revisions of MCP expect an object schema at the root.
    schema.insert("type".to_owned(), Value::from("object"));
    Arc::new(schema)
}

/// Rustdoc wraps lines; the agent reading a description should not see the wrapping.
fn unwrap_descriptions(schema: &mut JsonObject) {
    fn walk(value: &mut Value) {
        match value {
            Value::Object(object) => unwrap_descriptions(object),
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    for (key, value) in schema.iter_mut() {
        match value {
            Value::String(text) if key == "description" => *text = text.replace('\n', " "),
            other => walk(other),
        }
    }
}

fn tidy(schema: &Arc<JsonObject>) -> Arc<JsonObject> {
    let mut schema = schema.as_ref().clone();
    unwrap_descriptions(&mut schema);
    Arc::new(schema)
}

struct Hints {
    read_only: bool,
    destructive: bool,
    idempotent: bool,
}

fn tool<Args, Out>(
    name: &'static str,
    title: &str,
    description: &'static str,
    hints: &Hints,
) -> Tool
where
    Args: JsonSchema + 'static,
    Out: JsonSchema + 'static,
{
    let mut tool = Tool::new(name, description, Arc::new(JsonObject::new()))
        .with_input_schema::<Args>()
        .with_raw_output_schema(tidy(&output_schema::<Out>()))
        .with_title(title)
        .with_annotations(
            ToolAnnotations::with_title(title)
                .read_only(hints.read_only)
                .destructive(hints.destructive)
                .idempotent(hints.idempotent)
                // Everything happens in the local approval store.
                .open_world(false),
        );
    tool.input_schema = tidy(&tool.input_schema);
    tool
}

/// Every tool, in the order they are listed.
pub(crate) fn catalogue() -> Vec<Tool> {
    let looks = Hints {
        read_only: true,
        destructive: false,
        idempotent: true,
    };
    vec![
        tool::<RequestApprovalArgs, Requested>(
            REQUEST_APPROVAL,
            "Request approval",
            "Ask a human to approve a consequential action (send, delete, publish, spend, deploy) \
             before doing it. Files a pending request bound to the exact action text and, if \
             given, the operation and JSON payload you intend to run, and returns its id, its \
             expiry and the `approval-gate approve <id>` command the human runs in their own \
             terminal. While an identical request is pending, it is returned instead of a new \
             one (deduplicated: true). This authorizes nothing: call wait_for_approval next. \
             Refusals (isError) carry a code: invalid_arguments, invalid_input, \
             invalid_payload, queue_full, creation_limit.",
            // De-duplication makes a retry while pending harmless.
            &Hints {
                read_only: false,
                destructive: false,
                idempotent: true,
            },
        ),
        tool::<CheckApprovalArgs, StatusAnswer>(
            CHECK_APPROVAL,
            "Check approval",
            "Report where an approval request stands: status and effectiveStatus (pending, \
             approved_unconsumed, approved_expired, consumed, denied, expired, revoked), with \
             a note on what to do. Never an authorization: authorizesExecution is always \
             false, and only a successful consume_approval counts. Refusals (isError) carry a \
             code: invalid_arguments, invalid_id, not_found, archived.",
            &looks,
        ),
        tool::<WaitForApprovalArgs, StatusAnswer>(
            WAIT_FOR_APPROVAL,
            "Wait for approval",
            "Wait until a human decides the request or it expires, for at most timeoutSeconds \
             (default 300). Returns as soon as the decision is made. Only effectiveStatus \
             approved_unconsumed is a success, and even then call consume_approval before \
             acting. Everything else is an error result whose code says why: timeout (still \
             pending, NOT approved: do not proceed; wait again if you like), denied, expired, \
             revoked, already_consumed, approval_expired, not_found, shutting_down. Sends \
             progress notifications when the call carries a progress token; stops when \
             cancelled.",
            &looks,
        ),
        tool::<ListPendingArgs, PendingPage>(
            LIST_PENDING,
            "List pending approvals",
            "List requests waiting for a human decision, oldest first, one page at a time \
             (limit 1 to 100, default 20). Pass the answer's nextAfter as `after` to get the \
             next page; nextAfter is null on the last page. A request whose record cannot be \
             read is listed first with unreadable: true and its id: it refuses everything \
             until a human repairs it, so do not proceed with it.",
            &looks,
        ),
        tool::<ConsumeApprovalArgs, Consumed>(
            CONSUME_APPROVAL,
            "Consume approval",
            "Spend an approved request, exactly once: ok: true only if a human approved it, it \
             was not consumed, revoked or expired, and action, operation and payload are \
             exactly the approved ones (a mismatch is refused and does not spend it). \
             Otherwise ok: false, as an error result whose code says why (not_approved, \
             denied, expired, revoked, already_consumed, approval_expired, action_mismatch, \
             operation_mismatch, payload_mismatch, ...). For the agent's own policy only: this \
             answer is never proof of approval for trusted code, which consumes the approval \
             itself (execute_approved in the approval-gate library); do not call this when \
             such code will act on the approval, or it will find the approval spent.",
            &Hints {
                read_only: false,
                destructive: true,
                idempotent: false,
            },
        ),
        tool::<DecideApprovalArgs, StatusAnswer>(
            DECIDE_APPROVAL,
            "Deny approval",
            "Deny a pending request (approve: false). These tools can never approve: \
             approve: true is refused (code approve_not_allowed) and changes nothing; only a \
             human approves, in their own terminal, with `approval-gate approve <id>`. Other \
             refusals: invalid_arguments, invalid_id, not_found, expired, wrong_state.",
            // A denial cannot be undone; denying twice changes nothing more.
            &Hints {
                read_only: false,
                destructive: true,
                idempotent: true,
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_object_schemas_and_annotations() {
        let tools = catalogue();
        assert_eq!(tools.len(), 6);
        for tool in &tools {
            assert_eq!(tool.input_schema.get("type"), Some(&Value::from("object")));
            assert_eq!(
                tool.input_schema.get("additionalProperties"),
                Some(&Value::Bool(false)),
                "{} refuses unknown arguments",
                tool.name
            );
            let output = tool.output_schema.as_ref().expect("output schema");
            assert_eq!(output.get("type"), Some(&Value::from("object")));
            assert!(output.contains_key("anyOf"), "{}", tool.name);
            let hints = tool.annotations.as_ref().expect("annotations");
            assert_eq!(hints.open_world_hint, Some(false));
        }
    }
}
