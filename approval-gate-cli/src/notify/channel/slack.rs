//! Slack: a Block Kit message to an incoming webhook.
//!
//! ```toml
//! [notify.channels.team]
//! type = "slack"
//! url = { env = "SLACK_WEBHOOK_URL" }   # or { file = "/etc/approval-gate/slack-url" }
//! ```
//!
//! An incoming webhook's URL (`https://hooks.slack.com/services/…`) is itself the credential:
//! anyone who has it may post to the channel. So it is a secret, read from a file or the
//! environment when the notifier starts, never shown in a log, an error or `Debug`. It must be
//! `https://` (plain `http://` only to a loopback host, for a relay or a test).
//!
//! The message ([Block Kit](https://docs.slack.dev/block-kit/), posted as JSON as
//! <https://docs.slack.dev/messaging/sending-messages-using-incoming-webhooks> shows): a
//! header (why it is sent, and the operation), a section of fields (operation, requester,
//! payload digest, expiry, request id), the action, and a link button "Open the request" to the
//! request's page, or, without `public_url`, a line saying to set it. The `text` beside the
//! blocks is the fallback Slack shows in notifications.
//!
//! Escaping. Every agent-supplied string is [`text::shown`] (invisible and bidi characters
//! made visible, cut at [`text::ACTION_SHOWN`] or [`text::FIELD_SHOWN`]) and goes into a
//! `plain_text` object with `"emoji": false`, which Slack shows as written: no link, mention,
//! bold "approved", or emoji in it ever renders
//! (<https://docs.slack.dev/reference/block-kit/composition-objects/text-object>). The one
//! place Slack parses markup is the `text` fallback: there the operation is escaped by
//! [`text::slack_mrkdwn`] (`&`, `<`, `>` as entities, as
//! <https://docs.slack.dev/messaging/formatting-message-text#escaping> says; emphasis
//! characters and `@` as look-alikes), and the action is left out. Block Kit's limits hold by
//! construction: a header is at most 150 characters
//! (<https://docs.slack.dev/reference/block-kit/blocks/header-block>), a field at most 2,000
//! and a section's text at most 3,000
//! (<https://docs.slack.dev/reference/block-kit/blocks/section-block>), a button's label at
//! most 75.
//!
//! What it cannot do. It only links: a button that approved or denied would need a Slack app
//! with a signing secret to prove to us who pressed it (an incoming webhook has neither), and
//! approving needs the passkey on the page anyway. Slack's incoming webhooks have no
//! idempotency key, so a retry after an answer lost on the way back shows the message twice;
//! the header block carries the delivery key as its `block_id`, so a relay in between can
//! drop a repeat.

use std::fmt;

use serde_json::{Value, json};
use url::Url;

use super::super::message::{Delivery, Message};
use super::super::text::{self, ACTION_SHOWN, FIELD_SHOWN, shown};
use super::{Channel, Failure, http, table};

/// The longest header Block Kit accepts.
pub(crate) const HEADER_MAX: usize = 150;

/// A Slack incoming webhook.
pub(crate) struct Slack {
    name: String,
    /// The webhook's URL: a credential.
    url: Url,
}

impl fmt::Debug for Slack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slack")
            .field("name", &self.name)
            .field("url", &"(secret)")
            .finish()
    }
}

impl Slack {
    /// The channel `name` from its table: `url = { file = "PATH" }` or `{ env = "VAR" }`,
    /// read now. Errors start with the key they are about (`.url: ...`).
    pub(crate) fn from_table(name: &str, table: &toml::Table) -> Result<Self, String> {
        table::only(table, "slack", &["url"])?;
        let source = table::secret(table, "url")?.ok_or_else(|| {
            ".url: missing: the incoming webhook's URL, as url = { env = \"VAR\" } or \
             url = { file = \"PATH\" }"
                .to_owned()
        })?;
        let secret = source.read().map_err(|e| format!(".url: {e}"))?;
        let url = http::check_url(secret.expose().trim())
            .map_err(|e| format!(".url (from {source}): {e}"))?;
        Ok(Self {
            name: name.to_owned(),
            url,
        })
    }
}

impl Channel for Slack {
    fn name(&self) -> &str {
        &self.name
    }

    fn send(&self, message: &Message, delivery: &Delivery<'_>) -> Result<(), Failure> {
        let body = body(message, delivery.key).to_string();
        http::post(
            &self.url,
            &[("content-type", "application/json; charset=utf-8")],
            body.as_bytes(),
        )
    }
}

/// A `plain_text` object Slack shows as written, emoji codes included.
fn plain(text: &str) -> Value {
    json!({ "type": "plain_text", "text": text, "emoji": false })
}

/// The Block Kit message about `message`, its header's `block_id` the delivery `key`.
pub(crate) fn body(message: &Message, key: &str) -> Value {
    let headline = text::headline(message.kind);
    let operation = message
        .operation
        .as_deref()
        .map_or_else(|| "(no operation)".to_owned(), |op| shown(op, FIELD_SHOWN));
    let requester = message
        .requester
        .as_deref()
        .map_or_else(|| "(not given)".to_owned(), |who| shown(who, FIELD_SHOWN));
    let digest = message.digest.as_deref().unwrap_or("(no payload)");
    let field = |label: &str, value: &str| plain(&format!("{label}\n{value}"));
    let mut blocks = vec![
        json!({
            "type": "header",
            "block_id": key,
            // Fits by construction (a headline and a field); the cut only makes it certain.
            "text": plain(&text::cut(&format!("{headline}: {operation}"), HEADER_MAX)),
        }),
        json!({
            "type": "section",
            "fields": [
                field("Operation", &operation),
                field("Requester", &requester),
                field("Payload digest", digest),
                field("Expires", &message.expires_at),
                field("Request", message.id.as_str()),
            ],
        }),
        json!({
            "type": "section",
            "text": plain(&format!("Action: {}", shown(&message.action, ACTION_SHOWN))),
        }),
    ];
    blocks.push(match &message.link {
        Some(link) => json!({
            "type": "actions",
            "elements": [{
                "type": "button",
                "action_id": "open_request",
                "text": plain("Open the request"),
                "url": link,
            }],
        }),
        None => json!({ "type": "context", "elements": [plain(text::NO_LINK)] }),
    });
    blocks.push(json!({ "type": "context", "elements": [plain(text::DECIDE_ON_THE_PAGE)] }));
    let fallback = text::slack_mrkdwn(&format!(
        "{headline}: {operation} (request {}, expires {})",
        message.id, message.expires_at
    ));
    json!({ "text": fallback, "blocks": blocks })
}

#[cfg(test)]
mod tests;
