//! What a channel is asked to deliver: one request, why it is being told, and the key that
//! makes a repeated delivery recognisable.

use std::fmt;

use approval_gate::{Request, RequestId};

/// Why a request is told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// It was filed and waits for a decision.
    Filed,
    /// It is still undecided and expires soon.
    Reminder,
    /// It is still undecided after the escalation's delay: the on-call channels hear of it.
    Escalation,
}

impl Kind {
    /// Its name in idempotency keys, ledgers and JSON: `filed`, `reminder`, `escalation`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Filed => "filed",
            Kind::Reminder => "reminder",
            Kind::Escalation => "escalation",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One request as a message shows it. The strings marked agent-supplied are raw: a channel
/// escapes and cuts them by its own rules ([`super::text`]) before they leave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Message {
    /// The request.
    pub(crate) id: RequestId,
    /// Why it is told.
    pub(crate) kind: Kind,
    /// Its operation, if it names one (agent-supplied, though checked against the name rules).
    pub(crate) operation: Option<String>,
    /// Its one-line action (agent-supplied).
    pub(crate) action: String,
    /// Who it says asked (agent-supplied).
    pub(crate) requester: Option<String>,
    /// The first 16 hex digits of its payload digest, if it has a payload: enough for a person
    /// to compare with the page, not a secret.
    pub(crate) digest: Option<String>,
    /// When it expires, RFC 3339 in UTC.
    pub(crate) expires_at: String,
    /// Its page on `approval-gate serve`, if `public_url` is set: where a passkey approves.
    pub(crate) link: Option<String>,
}

/// How many hex digits of the payload digest a message shows.
pub(crate) const DIGEST_SHOWN: usize = 16;

impl Message {
    /// The message about `request`, told for `kind`, linking to `link`.
    pub(crate) fn new(request: &Request, kind: Kind, link: Option<String>) -> Self {
        Self {
            id: request.id(),
            kind,
            operation: request.operation().map(str::to_owned),
            action: request.action().to_owned(),
            requester: request.requested_by().map(str::to_owned),
            digest: request
                .payload_digest()
                .map(|digest| digest.to_hex()[..DIGEST_SHOWN].to_owned()),
            expires_at: request.expires_at().to_string(),
            link,
        }
    }
}

/// One attempt to deliver one message on one channel.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Delivery<'a> {
    /// The same for every attempt of this message on this channel, and different for any
    /// other: `<request id>.<channel>.<kind>`. A receiver that has seen it may drop the message
    /// (the webhook's `webhook-id`, email's `Message-ID`, ntfy's and Slack's own where they
    /// have one).
    pub(crate) key: &'a str,
    /// 1 for the first attempt.
    pub(crate) attempt: u32,
}

/// The idempotency key of `kind` about `id` on the channel named `channel`.
pub(crate) fn delivery_key(id: RequestId, channel: &str, kind: Kind) -> String {
    format!("{id}.{channel}.{kind}")
}
