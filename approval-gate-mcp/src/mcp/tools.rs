//! What the tools take: argument types (their input schemas), their bounds, and the output
//! schema of every answer. The tools themselves, with names, descriptions and annotations,
//! are the `#[tool]` methods in [`super::server`].
//!
//! Argument types refuse unknown fields, so a call that smuggles in `"status": "approved"`
//! or `"force": true` is refused, not half-read. The argument names of approval-gate-mcp
//! (Node), which this server succeeds (`requested_by`, `ttl_seconds`, `timeout_seconds`,
//! `poll_seconds`, `cursor`), are accepted as aliases, one spelling per call, and listed in
//! the input schemas as deprecated properties ([`Spellings`]).

use std::borrow::Cow;
use std::sync::Arc;

use approval_gate::limits::{
    MAX_ACTION_BYTES, MAX_NAME_BYTES, MAX_OPERATION_BYTES, MAX_REASON_BYTES, MAX_TTL, MIN_TTL,
};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::model::JsonObject;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::refusal::{Outcome, Refusal};

/// Default and bounds of `wait_for_approval`'s `timeoutSeconds`.
pub(crate) const DEFAULT_WAIT_SECONDS: u64 = 300;
pub(crate) const MAX_WAIT_SECONDS: u64 = 3600;
/// Bounds of `wait_for_approval`'s `pollSeconds`, the Node predecessor's.
pub(crate) const MIN_POLL_SECONDS: u64 = 1;
pub(crate) const MAX_POLL_SECONDS: u64 = 60;
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
    /// (7 days). Default: the operator's setting, 3600 unless they chose another.
    #[serde(default, alias = "ttl_seconds")]
    #[schemars(range(min = MIN_TTL_SECONDS, max = MAX_TTL_SECONDS))]
    pub(crate) ttl_seconds: Option<u64>,
    /// The operation the approval is bound to, e.g. "smtp.send": lowercase ASCII letters,
    /// digits and `_` in segments joined by dots, at most 128 bytes (one spelling per name:
    /// quorum patterns match it exactly). Consuming requires the same operation.
    #[serde(default)]
    #[schemars(length(min = 1, max = MAX_OPERATION_BYTES), regex(pattern = approval_gate::OPERATION_NAME_PATTERN))]
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
    /// Accepted for agents written for approval-gate-mcp (Node), where it set how often the
    /// wait re-read the request: 1 to 60. Ignored: this server wakes on the store's change
    /// events (and re-reads on its own schedule in case one is lost), so it answers as soon
    /// as a human decides, sooner than any polling interval would.
    #[serde(default, alias = "poll_seconds")]
    #[schemars(range(min = MIN_POLL_SECONDS, max = MAX_POLL_SECONDS))]
    pub(crate) poll_seconds: Option<u64>,
}

/// Arguments of `list_pending`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListPendingArgs {
    /// Largest page: 1 to 100. Default 20.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_PAGE))]
    pub(crate) limit: Option<u64>,
    /// Start after this request id: the previous page's nextAfter (or nextCursor, the same
    /// value).
    #[serde(default, alias = "cursor")]
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

/// The Node predecessor's spellings of a tool's arguments, accepted besides ours (serde
/// aliases): `(theirs, ours)`. The input schema lists each as a deprecated property with our
/// property's bounds, so a client that checks calls against the schema lets the
/// predecessor's calls through, and one that writes calls from it is steered to ours.
pub(crate) trait Spellings {
    const ALIASES: &'static [(&'static str, &'static str)] = &[];
}

impl Spellings for RequestApprovalArgs {
    const ALIASES: &'static [(&'static str, &'static str)] = &[
        ("requested_by", "requestedBy"),
        ("ttl_seconds", "ttlSeconds"),
    ];
}

impl Spellings for CheckApprovalArgs {}

impl Spellings for WaitForApprovalArgs {
    const ALIASES: &'static [(&'static str, &'static str)] = &[
        ("timeout_seconds", "timeoutSeconds"),
        ("poll_seconds", "pollSeconds"),
    ];
}

impl Spellings for ListPendingArgs {
    const ALIASES: &'static [(&'static str, &'static str)] = &[("cursor", "after")];
}

impl Spellings for ConsumeApprovalArgs {}

impl Spellings for DecideApprovalArgs {}

/// Adds `T`'s aliases to the properties of its input schema.
fn list_aliases<T: Spellings>(schema: &mut JsonObject) {
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
    for (theirs, ours) in T::ALIASES {
        let Some(Value::Object(mut alias)) = properties.get(*ours).cloned() else {
            continue;
        };
        alias.insert(
            "description".to_owned(),
            Value::from(format!(
                "The same as `{ours}`, under the name approval-gate-mcp (Node) gave it; \
                 give one or the other, not both."
            )),
        );
        alias.insert("deprecated".to_owned(), Value::Bool(true));
        properties.insert((*theirs).to_owned(), Value::Object(alias));
    }
}

/// A tool's arguments: decoded into `T`, or the `invalid_arguments` refusal saying why not.
///
/// rmcp answers arguments that do not decode with a bare text error; an agent gets a
/// structured refusal with a stable code instead. The input schema is `T`'s.
pub(crate) struct Args<T>(pub(crate) Result<T, Refusal>);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Args<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self(
            T::deserialize(deserializer).map_err(Refusal::arguments),
        ))
    }
}

impl<T: JsonSchema + Spellings> JsonSchema for Args<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = T::json_schema(generator);
        if let Some(object) = schema.as_object_mut() {
            unwrap_descriptions(object);
            list_aliases::<T>(object);
        }
        schema
    }
}

/// The output schema of a tool answering `T`: `T`, or a refusal.
pub(crate) fn output_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let mut schema = schema_for_output::<Outcome<T>>().as_ref().clone();
    // Clients of the 2025 revisions of MCP expect an object schema at the root.
    schema.insert("type".to_owned(), Value::from("object"));
    unwrap_descriptions(&mut schema);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_that_do_not_decode_become_a_refusal() {
        let args: Args<CheckApprovalArgs> =
            serde_json::from_value(serde_json::json!({ "id": 5 })).unwrap();
        let refusal = serde_json::to_value(args.0.unwrap_err()).unwrap();
        assert_eq!(refusal["code"], "invalid_arguments");
        assert!(
            refusal["message"]
                .as_str()
                .unwrap()
                .contains("expected a string")
        );
        let args: Args<CheckApprovalArgs> =
            serde_json::from_value(serde_json::json!({ "id": "a1b2c3d4e5f6" })).unwrap();
        assert_eq!(args.0.unwrap().id, "a1b2c3d4e5f6");
    }

    #[test]
    fn schemas_read_as_one_line_per_description() {
        fn descriptions(value: &Value, found: &mut Vec<String>) {
            match value {
                Value::Object(object) => {
                    for (key, value) in object {
                        match value {
                            Value::String(text) if key == "description" => found.push(text.clone()),
                            other => descriptions(other, found),
                        }
                    }
                }
                Value::Array(items) => items.iter().for_each(|v| descriptions(v, found)),
                _ => {}
            }
        }
        let input = rmcp::handler::server::common::schema_for_input::<
            rmcp::handler::server::wrapper::Parameters<Args<RequestApprovalArgs>>,
        >()
        .unwrap();
        let output = output_schema::<super::super::answer::StatusAnswer>();
        let mut found = Vec::new();
        descriptions(&Value::Object(input.as_ref().clone()), &mut found);
        descriptions(&Value::Object(output.as_ref().clone()), &mut found);
        assert!(found.len() > 10);
        assert!(found.iter().all(|d| !d.contains('\n')), "{found:?}");
    }
}
