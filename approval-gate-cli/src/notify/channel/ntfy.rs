//! ntfy: a push notification through an [ntfy](https://ntfy.sh) server's publish API.
//!
//! ```toml
//! [notify.channels.phone]
//! type = "ntfy"
//! server = "https://ntfy.example.com"     # optional, default https://ntfy.sh
//! topic = { env = "NTFY_TOPIC" }          # or a plain string: "approvals-3f9c..."
//! token = { file = "/etc/approval-gate/ntfy-token" }   # optional: Authorization: Bearer
//! priority = 4                            # optional, 1 (min) to 5 (max); the server's default 3
//! ```
//!
//! On a public server anyone who knows a topic may read it ("the topic is essentially a
//! password", <https://docs.ntfy.sh/publish/>), so `topic` may be a secret read from a file or
//! the environment; a plain string is accepted too, for a server with access control. Topic
//! names are `[-_A-Za-z0-9]{1,64}`, as ntfy requires. `token` is an access token sent as
//! `Authorization: Bearer` (<https://docs.ntfy.sh/publish/#access-tokens>). `server` must be
//! `https://` (plain `http://` only to a loopback host) and carry no credentials.
//!
//! The message is published as JSON to the server's root URL
//! (<https://docs.ntfy.sh/publish/#publish-as-json>): `topic`, `title` (why it is sent, and
//! the operation), `message` (action, operation, requester, payload digest, expiry, request
//! id, the page's link), `tags` (an emoji by why it is sent), `priority`, `click` (tapping the
//! notification opens the page) and one `view` action button "Open the request"
//! (<https://docs.ntfy.sh/publish/#action-buttons>), `markdown: false`. So no agent text is
//! ever in an HTTP header (where ntfy's header form would put the title), nothing in it is
//! rendered as Markdown, and the only link in the actions and `click` is the page's.
//!
//! Escaping. Every agent-supplied string is [`text::shown`]: invisible and bidi characters
//! made visible, line breaks as `\n`, cut at [`text::ACTION_SHOWN`] or [`text::FIELD_SHOWN`];
//! JSON's own escaping does the rest. An agent cannot add a line (a fake "Approved by") or a
//! button. A URL the agent writes into its action is shown as the text it is; some clients
//! make such text tappable, but it can never be labelled as something else.
//!
//! Repeats. Each delivery carries `sequence_id`, derived from its delivery key (the key with
//! `.` as `_`, at most 56 characters of `[-_a-z0-9]`): on ntfy 2.16 and later a second publish
//! with the same sequence id replaces the first notification instead of adding one
//! (<https://docs.ntfy.sh/publish/#updating-deleting-notifications>), so a retry after an
//! answer lost on the way back shows one notification. Older servers ignore the field.
//!
//! What it cannot do: approve or deny. An ntfy action button cannot prove to us who pressed
//! it, so the only one is a link to the page, where approving needs the passkey.

use std::fmt;

use serde_json::{Value, json};
use url::Url;

use super::super::message::{Delivery, Kind, Message};
use super::super::secret::{Secret, SecretSource};
use super::super::text::{self, ACTION_SHOWN, FIELD_SHOWN, shown};
use super::{Channel, Failure, http, table};

/// The server when the table names none.
pub(crate) const DEFAULT_SERVER: &str = "https://ntfy.sh/";

/// An ntfy topic on a server.
pub(crate) struct Ntfy {
    name: String,
    /// The server's root URL, where JSON is published.
    server: Url,
    topic: String,
    /// Whether `topic` came from a secret source (and so is never shown).
    topic_secret: bool,
    token: Option<Secret>,
    priority: Option<u8>,
}

impl fmt::Debug for Ntfy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let topic = if self.topic_secret {
            "(secret)"
        } else {
            &self.topic
        };
        f.debug_struct("Ntfy")
            .field("name", &self.name)
            .field("server", &self.server.as_str())
            .field("topic", &topic)
            .field("token", &self.token.as_ref().map(|_| "(secret)"))
            .field("priority", &self.priority)
            .finish()
    }
}

impl Ntfy {
    /// The channel `name` from its table (`server`, `topic`, `token`, `priority`); secrets
    /// are read now. Errors start with the key they are about (`.topic: ...`).
    pub(crate) fn from_table(name: &str, table: &toml::Table) -> Result<Self, String> {
        table::only(table, "ntfy", &["server", "topic", "token", "priority"])?;
        let server = server(table::string(table, "server")?.unwrap_or(DEFAULT_SERVER))?;
        let (topic, topic_secret) = match table.get("topic") {
            None => return Err(".topic: missing: the topic to publish to".to_owned()),
            Some(toml::Value::String(topic)) => (check_topic(topic, None)?, false),
            Some(value) => {
                let source = SecretSource::from_toml(value)
                    .map_err(|e| format!(".topic: must be a string or {e}"))?;
                let secret = source.read().map_err(|e| format!(".topic: {e}"))?;
                (check_topic(secret.expose().trim(), Some(&source))?, true)
            }
        };
        let token = match table::secret(table, "token")? {
            Some(source) => {
                let token = source.read().map_err(|e| format!(".token: {e}"))?;
                if !token.expose().bytes().all(|b| b.is_ascii_graphic()) {
                    return Err(format!(
                        ".token (from {source}): has a space, line break or other character an \
                         HTTP header cannot carry"
                    ));
                }
                Some(token)
            }
            None => None,
        };
        let priority = match table.get("priority") {
            None => None,
            Some(toml::Value::Integer(p @ 1..=5)) => Some(u8::try_from(*p).unwrap_or(3)),
            Some(_) => return Err(".priority: must be a whole number from 1 to 5".to_owned()),
        };
        Ok(Self {
            name: name.to_owned(),
            server,
            topic,
            topic_secret,
            token,
            priority,
        })
    }
}

/// The server's root URL from `text`: https (or loopback http), no credentials, query or
/// fragment, ending in `/`.
fn server(text: &str) -> Result<Url, String> {
    let mut url = http::check_url(text).map_err(|e| format!(".server: {e}"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(".server: must not carry credentials: use token = { file | env }".to_owned());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(".server: must be the server's root URL, without ? or #".to_owned());
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

/// `topic` if it is a valid ntfy topic name; the error names a secret's source, never its
/// value.
fn check_topic(topic: &str, source: Option<&SecretSource>) -> Result<String, String> {
    let valid = (1..=64).contains(&topic.len())
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if valid {
        return Ok(topic.to_owned());
    }
    let which = source.map_or_else(|| format!("{topic:?}"), |s| format!("the topic from {s}"));
    Err(format!(
        ".topic: {which} is not a topic name: 1 to 64 letters, digits, - and _"
    ))
}

impl Channel for Ntfy {
    fn name(&self) -> &str {
        &self.name
    }

    fn send(&self, message: &Message, delivery: &Delivery<'_>) -> Result<(), Failure> {
        let body = body(message, &self.topic, self.priority, delivery.key).to_string();
        let bearer = self
            .token
            .as_ref()
            .map(|t| format!("Bearer {}", t.expose()));
        let mut headers = vec![("content-type", "application/json; charset=utf-8")];
        if let Some(bearer) = &bearer {
            headers.push(("authorization", bearer));
        }
        http::post(&self.server, &headers, body.as_bytes())
    }
}

/// The `sequence_id` of a delivery: its key, `.` as `_`. Unambiguous, because a key is a
/// 12-hex-digit id, a channel name and a kind without `_`.
pub(crate) fn sequence_id(key: &str) -> String {
    key.replace('.', "_")
}

/// The ntfy tag (an emoji's name) for why a message is sent.
fn tag(kind: Kind) -> &'static str {
    match kind {
        Kind::Filed => "hourglass_flowing_sand",
        Kind::Reminder => "alarm_clock",
        Kind::Escalation => "rotating_light",
    }
}

/// The JSON published about `message` to `topic`.
pub(crate) fn body(message: &Message, topic: &str, priority: Option<u8>, key: &str) -> Value {
    let operation = message
        .operation
        .as_deref()
        .map_or_else(|| "(no operation)".to_owned(), |op| shown(op, FIELD_SHOWN));
    let requester = message
        .requester
        .as_deref()
        .map_or_else(|| "(not given)".to_owned(), |who| shown(who, FIELD_SHOWN));
    let page = message.link.as_deref().unwrap_or(text::NO_LINK);
    let lines = [
        format!("Action: {}", shown(&message.action, ACTION_SHOWN)),
        format!("Operation: {operation}"),
        format!("Requester: {requester}"),
        format!(
            "Payload digest: {}",
            message.digest.as_deref().unwrap_or("(no payload)")
        ),
        format!("Expires: {}", message.expires_at),
        format!("Request: {}", message.id),
        format!("Page: {page}"),
        text::DECIDE_ON_THE_PAGE.to_owned(),
    ];
    let mut body = json!({
        "topic": topic,
        "title": format!("{}: {operation}", text::headline(message.kind)),
        "message": lines.join("\n"),
        "tags": [tag(message.kind)],
        "markdown": false,
        "sequence_id": sequence_id(key),
    });
    if let Some(priority) = priority {
        body["priority"] = json!(priority);
    }
    if let Some(link) = &message.link {
        body["click"] = json!(link);
        body["actions"] = json!([{
            "action": "view",
            "label": "Open the request",
            "url": link,
            "clear": false,
        }]);
    }
    body
}

#[cfg(test)]
mod tests;
