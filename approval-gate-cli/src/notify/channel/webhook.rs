//! A signed generic webhook, by the Standard Webhooks scheme
//! (<https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md>):
//! a JSON POST with the headers `webhook-id` (the delivery key, the same on every attempt, so
//! a receiver drops a repeat), `webhook-timestamp` (unix seconds of this attempt) and
//! `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the
//! key, given as `whsec_` and its base64).
//!
//! ```toml
//! [notify.channels.ops]
//! type = "webhook"
//! url = "https://hooks.example.com/approvals"
//! secret = { file = "/etc/approval-gate/webhook.key" }   # whsec_...
//! ```
//!
//! The body is `{"type": "approval.requested" | "approval.reminder" | "approval.escalated",
//! "timestamp": RFC 3339, "data": {"id", "operation", "action", "requester", "digest",
//! "expires_at", "url"}}`. JSON escaping is this channel's rule; the agent's text is still cut
//! ([`text::ACTION_SHOWN`], [`text::FIELD_SHOWN`]) so a receiver that shows it whole shows
//! what the other channels show.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use approval_gate::{Clock as _, SystemClock};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac as _};
use serde_json::json;
use sha2::Sha256;
use url::Url;

use super::{Channel, Failure, http};
use crate::notify::message::{Delivery, Kind, Message};
use crate::notify::secret::SecretSource;
use crate::notify::text;

/// The prefix of a Standard Webhooks key.
const KEY_PREFIX: &str = "whsec_";
/// The key sizes the spec allows, in bytes.
const KEY_BYTES: std::ops::RangeInclusive<usize> = 24..=64;

/// A webhook channel.
pub(crate) struct Webhook {
    name: String,
    url: Url,
    key: Vec<u8>,
}

impl fmt::Debug for Webhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Neither the key nor the URL's path (which may carry a token).
        f.debug_struct("Webhook")
            .field("name", &self.name)
            .field("host", &self.url.host_str())
            .finish_non_exhaustive()
    }
}

impl Webhook {
    /// The channel `[notify.channels.NAME]` describes (`url`, `secret`), its key read now.
    /// Errors start with the key they are about (`.url: ...`).
    pub(crate) fn from_table(name: &str, table: &toml::Table) -> Result<Self, String> {
        if let Some(key) = table
            .keys()
            .find(|key| !matches!(key.as_str(), "url" | "secret"))
        {
            return Err(format!(
                ".{key}: unknown key: a webhook channel holds url and secret"
            ));
        }
        let url = match table.get("url") {
            Some(toml::Value::String(url)) => {
                http::check_url(url).map_err(|e| format!(".url: {e}"))?
            }
            Some(_) => return Err(".url: must be a string".to_owned()),
            None => return Err(".url: missing: the receiver's https:// URL".to_owned()),
        };
        let source = table
            .get("secret")
            .ok_or_else(|| ".secret: missing: { file = \"PATH\" } or { env = \"VAR\" }".to_owned())
            .and_then(|value| {
                SecretSource::from_toml(value).map_err(|e| format!(".secret: {e}"))
            })?;
        let secret = source.read().map_err(|e| format!(".secret: {e}"))?;
        let key = decode_key(secret.expose()).map_err(|e| format!(".secret ({source}): {e}"))?;
        Ok(Self {
            name: name.to_owned(),
            url,
            key,
        })
    }
}

impl Channel for Webhook {
    fn name(&self) -> &str {
        &self.name
    }

    fn send(&self, message: &Message, delivery: &Delivery<'_>) -> Result<(), Failure> {
        let body = body(message, &SystemClock.now().to_string());
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs())
            .to_string();
        let signature = sign(&self.key, delivery.key, &timestamp, &body);
        http::post(
            &self.url,
            &[
                ("content-type", "application/json"),
                ("webhook-id", delivery.key),
                ("webhook-timestamp", &timestamp),
                ("webhook-signature", &signature),
            ],
            &body,
        )
    }
}

/// The event type of a message of `kind`.
fn event_type(kind: Kind) -> &'static str {
    match kind {
        Kind::Filed => "approval.requested",
        Kind::Reminder => "approval.reminder",
        Kind::Escalation => "approval.escalated",
    }
}

/// The JSON body, stamped `now` (RFC 3339).
pub(crate) fn body(message: &Message, now: &str) -> Vec<u8> {
    let field = |value: &Option<String>| value.as_deref().map(|v| text::cut(v, text::FIELD_SHOWN));
    let body = json!({
        "type": event_type(message.kind),
        "timestamp": now,
        "data": {
            "id": message.id.to_string(),
            "operation": field(&message.operation),
            "action": text::cut(&message.action, text::ACTION_SHOWN),
            "requester": field(&message.requester),
            "digest": message.digest,
            "expires_at": message.expires_at,
            "url": message.link,
        },
    });
    body.to_string().into_bytes()
}

/// `whsec_` and base64 of 24 to 64 bytes: the HMAC key. The error never quotes the secret.
fn decode_key(secret: &str) -> Result<Vec<u8>, String> {
    let encoded = secret.strip_prefix(KEY_PREFIX).ok_or(
        "is not a Standard Webhooks key: whsec_ and base64, such as whsec_$(openssl rand -base64 32)",
    )?;
    let key = STANDARD
        .decode(encoded.trim())
        .map_err(|_| "is not whsec_ and base64: the part after whsec_ does not decode")?;
    if !KEY_BYTES.contains(&key.len()) {
        return Err(format!(
            "decodes to {} bytes; a key is {} to {} (openssl rand -base64 32)",
            key.len(),
            KEY_BYTES.start(),
            KEY_BYTES.end()
        ));
    }
    Ok(key)
}

/// `v1,` and base64(HMAC-SHA256(key, `id.timestamp.body`)).
pub(crate) fn sign(key: &[u8], id: &str, timestamp: &str, body: &[u8]) -> String {
    // HMAC takes a key of any length.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        unreachable!("HMAC accepts every key length")
    };
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
#[path = "webhook_tests.rs"]
pub(super) mod tests;
