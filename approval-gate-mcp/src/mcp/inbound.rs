//! What one input line becomes: a message for rmcp, an error to answer, or nothing.
//!
//! Every line is checked strictly before rmcp parses it:
//!
//! - it must be UTF-8 and one JSON value (`-32700` otherwise, answered by the message's `id`
//!   when that much is readable);
//! - no object in it may repeat a key, except inside a tool's `payload` argument: which `id`,
//!   `action` or `approve` would count is not for us to guess, and `serde_json`'s `Value`
//!   would silently keep the last one;
//! - the exact text of a `tools/call` request's `payload` argument travels with the request
//!   as [`RawPayload`], so the library's strict parser canonicalizes exactly what the agent
//!   sent, and refuses duplicate keys inside the payload with its own precise message;
//! - a line that is not a valid message is answered `-32600` (notifications are never
//!   answered).

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use approval_gate::{CanonicalPayload, Error};
use rmcp::model::{ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage};
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::refusal::Refusal;

/// The exact JSON text of a `tools/call` request's `payload` argument (`None` without one),
/// attached to every `tools/call` request's extensions.
#[derive(Debug, Clone)]
pub(crate) struct RawPayload(pub(crate) Option<Arc<str>>);

/// What one input line turns into.
pub(crate) enum Inbound {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    Refuse(Option<RequestId>, ErrorData),
    Ignore,
}

pub(crate) fn classify(line: &[u8]) -> Inbound {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Inbound::Ignore;
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Inbound::Refuse(
            None,
            ErrorData::parse_error("parse error: the line is not UTF-8 text", None),
        );
    };
    let duplicate = match find_duplicate_key(text) {
        Ok(duplicate) => duplicate,
        Err(e) => {
            return Inbound::Refuse(
                sniff_id(text),
                ErrorData::parse_error(format!("parse error: {e}"), None),
            );
        }
    };
    let envelope = Envelope::of(text);
    if let Some(pointer) = duplicate {
        if envelope.is_notification() {
            tracing::debug!(%pointer, "dropping a notification with a duplicate key");
            return Inbound::Ignore;
        }
        let id = if pointer == "/id" { None } else { envelope.id };
        let code = if pointer.starts_with("/params/") {
            ErrorCode::INVALID_PARAMS
        } else {
            ErrorCode::INVALID_REQUEST
        };
        return Inbound::Refuse(
            id,
            ErrorData::new(
                code,
                format!(
                    "duplicate key at {pointer}: a key may appear only once per object; send the message again without the repeat"
                ),
                None,
            ),
        );
    }
    match serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(text) {
        Ok(mut message) => {
            attach_raw_payload(&mut message, text);
            Inbound::Message(Box::new(message))
        }
        // Notifications are never answered, not even with an error.
        Err(e) if envelope.is_notification() => {
            tracing::debug!("dropping a notification that does not parse: {e}");
            Inbound::Ignore
        }
        Err(e) => Inbound::Refuse(
            envelope.id,
            ErrorData::invalid_request(format!("invalid request: {}", clip(&e, 300)), None),
        ),
    }
}

/// The parts of a message needed to address an error reply, read leniently.
struct Envelope {
    id: Option<RequestId>,
    has_method: bool,
    has_id: bool,
}

impl Envelope {
    fn of(text: &str) -> Self {
        let value = serde_json::from_str::<serde_json::Value>(text).ok();
        let object = value.as_ref().and_then(serde_json::Value::as_object);
        let raw_id = object.and_then(|o| o.get("id"));
        Self {
            id: raw_id.and_then(|id| RequestId::deserialize(id).ok()),
            has_method: object.is_some_and(|o| o.contains_key("method")),
            has_id: raw_id.is_some(),
        }
    }

    fn is_notification(&self) -> bool {
        self.has_method && !self.has_id
    }
}

/// The top-level `id` of a message that does not parse (nesting too deep, a number out of
/// range), so the error reaches the request it answers: skipping a value checks only its
/// syntax, without depth or range limits. `None` if the id is absent, unreadable or repeated,
/// or the text is not a JSON object.
fn sniff_id(text: &str) -> Option<RequestId> {
    struct Sniff<'a>(&'a mut Vec<Option<RequestId>>);

    impl<'de> Visitor<'de> for Sniff<'_> {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON-RPC message")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == "id" {
                    let id = map.next_value::<serde_json::Value>()?;
                    self.0.push(RequestId::deserialize(id).ok());
                } else {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
            Ok(())
        }
    }

    let mut ids = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_str(text);
    // The parse is expected to fail; what was seen before the failure is what counts.
    let _ = deserializer.deserialize_map(Sniff(&mut ids));
    match ids.as_slice() {
        [id] => id.clone(),
        _ => None,
    }
}

fn clip(text: &impl fmt::Display, max: usize) -> String {
    let text = text.to_string();
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

fn attach_raw_payload(message: &mut RxJsonRpcMessage<RoleServer>, text: &str) {
    #[derive(Deserialize)]
    struct Call<'a> {
        #[serde(borrow)]
        params: Params<'a>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow, default)]
        arguments: Option<Arguments<'a>>,
    }
    #[derive(Deserialize)]
    struct Arguments<'a> {
        #[serde(borrow, default)]
        payload: Option<&'a RawValue>,
    }

    let JsonRpcMessage::Request(request) = message else {
        return;
    };
    let ClientRequest::CallToolRequest(call) = &mut request.request else {
        return;
    };
    let raw = match serde_json::from_str::<Call<'_>>(text) {
        Ok(Call {
            params:
                Params {
                    arguments: Some(Arguments { payload: Some(raw) }),
                },
        }) => Some(raw.get().into()),
        _ => None,
    };
    call.extensions.insert(RawPayload(raw));
}

/// Checks that `text` is one JSON value and returns the JSON Pointer of the first object key
/// that repeats, except inside `/params/arguments/payload` (the library judges payloads).
///
/// Nesting is bounded by `serde_json`'s recursion limit, which fails the parse.
fn find_duplicate_key(text: &str) -> Result<Option<String>, serde_json::Error> {
    let mut scan = Scan::default();
    let mut deserializer = serde_json::Deserializer::from_str(text);
    Node {
        scan: &mut scan,
        in_payload: false,
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(scan.duplicate)
}

#[derive(Default)]
struct Scan {
    path: Vec<String>,
    duplicate: Option<String>,
}

impl Scan {
    fn at_arguments(&self) -> bool {
        matches!(self.path.as_slice(), [p, a] if p == "params" && a == "arguments")
    }

    fn pointer(&self, key: &str) -> String {
        let mut pointer = String::new();
        for token in self.path.iter().map(String::as_str).chain([key]) {
            pointer.push('/');
            pointer.push_str(&token.replace('~', "~0").replace('/', "~1"));
        }
        pointer
    }
}

struct Node<'a> {
    scan: &'a mut Scan,
    in_payload: bool,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Node { scan, in_payload } = self;
        let mut index = 0usize;
        loop {
            if !in_payload {
                scan.path.push(index.to_string());
            }
            let more = seq.next_element_seed(Node {
                scan: &mut *scan,
                in_payload,
            })?;
            if !in_payload {
                scan.path.pop();
            }
            if more.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Node { scan, in_payload } = self;
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let child_in_payload = in_payload || (scan.at_arguments() && key == "payload");
            if !in_payload {
                if seen.contains(&key) {
                    if scan.duplicate.is_none() {
                        scan.duplicate = Some(scan.pointer(&key));
                    }
                } else {
                    seen.insert(key.clone());
                }
                scan.path.push(key);
            }
            map.next_value_seed(Node {
                scan: &mut *scan,
                in_payload: child_in_payload,
            })?;
            if !in_payload {
                scan.path.pop();
            }
        }
        Ok(())
    }
}

/// The payload in canonical form; `None` when absent. A `null` payload is refused by the
/// library, as everywhere.
///
/// The raw text, when the transport supplied it, is what the agent sent: the library's strict
/// parser refuses its duplicate keys, which the decoded `Value` has already collapsed.
pub(crate) fn canonical(
    value: Option<&Value>,
    raw: &RawPayload,
) -> Result<Option<CanonicalPayload>, Refusal> {
    payload_of(value, raw).map_err(|e| Refusal::error(&e))
}

/// [`canonical`], refused as the library's error.
pub(crate) fn payload_of(
    value: Option<&Value>,
    raw: &RawPayload,
) -> Result<Option<CanonicalPayload>, Error> {
    let Some(value) = value else {
        return Ok(None);
    };
    let payload = match &raw.0 {
        Some(text) => CanonicalPayload::from_json_text(text),
        None => CanonicalPayload::from_value(value),
    };
    payload.map(Some).map_err(Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_duplicates_outside_the_payload_only() {
        let dup = |text: &str| find_duplicate_key(text).unwrap();
        assert_eq!(dup(r#"{"a":1,"b":{"c":[{"d":1,"e":2}]}}"#), None);
        assert_eq!(dup(r#"{"id":1,"id":2}"#).as_deref(), Some("/id"));
        assert_eq!(
            dup(r#"{"params":{"arguments":{"action":"a","action":"b"}}}"#).as_deref(),
            Some("/params/arguments/action")
        );
        assert_eq!(
            dup(r#"{"params":{"arguments":{"payload":{"to":1,"to":2}}}}"#),
            None,
            "the library refuses duplicates inside the payload itself"
        );
        assert_eq!(
            dup(r#"{"params":{"arguments":{"payload":1,"payload":2}}}"#).as_deref(),
            Some("/params/arguments/payload")
        );
        assert_eq!(
            dup(r#"{"x":[{"a/b":1,"a/b":1}]}"#).as_deref(),
            Some("/x/0/a~1b")
        );
        assert!(find_duplicate_key("{").is_err());
        assert!(find_duplicate_key("{} {}").is_err());
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(find_duplicate_key(&deep).is_err(), "nesting is bounded");
    }

    #[test]
    fn classifies_lines() {
        assert!(matches!(classify(b"\r\n"), Inbound::Ignore));
        assert!(matches!(
            classify(b"not json\n"),
            Inbound::Refuse(None, ref e) if e.code == ErrorCode::PARSE_ERROR
        ));
        assert!(matches!(
            classify(b"\xff\n"),
            Inbound::Refuse(None, ref e) if e.code == ErrorCode::PARSE_ERROR
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","name":"y"}}"#),
            Inbound::Refuse(Some(RequestId::Number(7)), ref e) if e.code == ErrorCode::INVALID_PARAMS
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":"a","nonsense":true}"#),
            Inbound::Refuse(Some(RequestId::String(_)), ref e) if e.code == ErrorCode::INVALID_REQUEST
        ));
        assert!(matches!(
            classify(
                br#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{"a":1,"a":2}}"#
            ),
            Inbound::Ignore
        ));
    }

    #[test]
    fn answers_unparsable_requests_by_id_when_it_can() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":"x7","params":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(matches!(
            classify(deep.as_bytes()),
            Inbound::Refuse(Some(RequestId::String(ref id)), ref e)
                if &**id == "x7" && e.code == ErrorCode::PARSE_ERROR
        ));
        assert!(matches!(
            classify(br#"{"id":1,"id":2,"x":1e400}"#),
            Inbound::Refuse(None, _)
        ));
        assert!(matches!(
            classify(br#"{"x":1e400,"id":3}"#),
            Inbound::Refuse(Some(RequestId::Number(3)), _)
        ));
        let id_after_the_fault =
            format!(r#"{{"x":{}{},"id":4}}"#, "[".repeat(200), "]".repeat(200));
        assert!(matches!(
            classify(id_after_the_fault.as_bytes()),
            Inbound::Refuse(Some(RequestId::Number(4)), _)
        ));
    }

    #[test]
    fn carries_the_raw_payload_text() {
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"request_approval","arguments":{"payload":{"b" : 1,"a":[1.50]}}}}"#;
        let Inbound::Message(message) = classify(line) else {
            panic!("expected a message");
        };
        let JsonRpcMessage::Request(request) = *message else {
            panic!("expected a request");
        };
        let ClientRequest::CallToolRequest(call) = request.request else {
            panic!("expected tools/call");
        };
        let raw = call.extensions.get::<RawPayload>().expect("raw payload");
        assert_eq!(raw.0.as_deref(), Some(r#"{"b" : 1,"a":[1.50]}"#));

        let line = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"check_approval","arguments":{"id":"a"}}}"#;
        let Inbound::Message(message) = classify(line) else {
            panic!("expected a message");
        };
        let JsonRpcMessage::Request(request) = *message else {
            panic!("expected a request");
        };
        let ClientRequest::CallToolRequest(call) = request.request else {
            panic!("expected tools/call");
        };
        let raw = call
            .extensions
            .get::<RawPayload>()
            .expect("every call carries one");
        assert_eq!(raw.0, None);
    }
}
