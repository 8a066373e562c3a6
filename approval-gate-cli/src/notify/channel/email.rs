//! Email: a message through an SMTP relay, with lettre, on the smtp example's TLS rules.
//!
//! ```toml
//! [notify.channels.mail]
//! type = "email"
//! smtp = "smtps://approvals%40example.com@smtp.example.com:465"   # the user, never the password
//! password = { env = "SMTP_PASSWORD" }                          # or { file = "PATH" }
//! from = "approval-gate <approvals@example.com>"
//! to = ["alice@example.com", "Bob <bob@example.com>"]
//! ca_file = "/etc/approval-gate/relay-ca.pem"                   # optional: a private relay's CA
//! ```
//!
//! `smtp` is `smtps://user@host:465` (implicit TLS), `smtp://user@host:587?tls=required`
//! (STARTTLS) or `smtp://host:25` (a local relay, no password); what is refused, and why, is in
//! [`relay`]. The password is read when the notifier starts; a user name with `@` in it is
//! written `%40` in the URL.
//!
//! The message: `Subject: [approval-gate] <why>: <operation> — <action>` (at most
//! [`SUBJECT_MAX`] characters), `Message-ID: <delivery-key@approval-gate.invalid>` (the same
//! for every attempt of one delivery, so a mail system that has seen it may drop a repeat), a
//! text/plain part and an HTML alternative (`multipart/alternative`, RFC 2046 §5.1.4) with the
//! action, operation, requester, payload digest, expiry, request id and the page's link as a
//! plain link, or, without `public_url`, a line saying to set it.
//!
//! Escaping. Every agent-supplied string is [`text::shown`] first (invisible and bidi
//! characters made visible, line breaks as `\n`, cut at [`text::ACTION_SHOWN`],
//! [`text::FIELD_SHOWN`], or [`SUBJECT_ACTION_SHOWN`] in the subject), so no CR or LF ever
//! reaches a header: an action `x\r\nBcc: victim@example.com` is a subject showing `\r\n`, not
//! a new header (header injection, <https://owasp.org/www-community/attacks/Email_Injection>),
//! and lettre encodes any non-ASCII header as RFC 2047 words. In the HTML part the same text
//! is also HTML-escaped ([`text::html`]), so `</b><script>` is text, and the only link is the
//! page's. A URL the agent writes is text; a mail client may make it clickable, but it is
//! never labelled as something else.
//!
//! SMTP answers: a 4xx (transient) is a [`Failure::Retry`], a 5xx (permanent) a
//! [`Failure::Permanent`]; a refused or broken connection, a timeout ([`relay::TIMEOUT`] per
//! command) or a TLS failure may be passing, and is retried.
//!
//! What it cannot do: approve or deny. A link in a mail is fetched by scanners, so it only
//! opens the page, where approving needs the passkey, and nothing decides on a GET.

mod relay;

use std::fmt::{self, Write as _};
use std::path::Path;

use lettre::message::{Mailbox, MultiPart};
use lettre::{SmtpTransport, Transport as _};

use super::super::message::{Delivery, Message};
use super::super::text::{self, ACTION_SHOWN, FIELD_SHOWN, shown};
use super::{Channel, Failure, table};

/// The longest subject: the prefix, the longest headline and operation and
/// [`SUBJECT_ACTION_SHOWN`] characters of the action fit.
pub(crate) const SUBJECT_MAX: usize = 200;
/// The most characters of the action the subject shows; the body shows [`ACTION_SHOWN`].
pub(crate) const SUBJECT_ACTION_SHOWN: usize = 60;
/// The most recipients one channel sends to.
const MAX_RECIPIENTS: usize = 50;

/// An email channel: a relay, a sender and recipients.
pub(crate) struct Email {
    name: String,
    transport: SmtpTransport,
    /// The relay's URL as it may be shown (it never holds the password).
    relay: String,
    from: Mailbox,
    to: Vec<Mailbox>,
}

impl fmt::Debug for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Email")
            .field("name", &self.name)
            .field("relay", &self.relay)
            .field("from", &self.from.to_string())
            .field("to", &self.to.len())
            .finish_non_exhaustive()
    }
}

impl Email {
    /// The channel `name` from its table (`smtp`, `password`, `from`, `to`, `ca_file`); the
    /// password is read now. Errors start with the key they are about (`.smtp: ...`).
    pub(crate) fn from_table(name: &str, table: &toml::Table) -> Result<Self, String> {
        table::only(
            table,
            "email",
            &["smtp", "password", "from", "to", "ca_file"],
        )?;
        let smtp = table::required(table, "smtp", "the relay, such as smtps://user@host:465")?;
        let password = match table::secret(table, "password")? {
            Some(source) => Some(source.read().map_err(|e| format!(".password: {e}"))?),
            None => None,
        };
        let ca_file = table::string(table, "ca_file")?.map(Path::new);
        let (transport, relay) = relay::transport(smtp, password, ca_file)?;
        let from = mailbox(
            "from",
            table::required(table, "from", "the sender's address")?,
        )?;
        let to = match table.get("to") {
            Some(toml::Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(|item| match item {
                    toml::Value::String(address) => mailbox("to", address),
                    _ => Err(".to: must be a list of addresses (strings)".to_owned()),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(".to: must be a non-empty list of addresses".to_owned()),
            None => return Err(".to: missing: a list of addresses".to_owned()),
        };
        if to.len() > MAX_RECIPIENTS {
            return Err(format!(".to: over {MAX_RECIPIENTS} addresses"));
        }
        Ok(Self {
            name: name.to_owned(),
            transport,
            relay,
            from,
            to,
        })
    }
}

/// `address` (`a@example.com` or `Name <a@example.com>`) as a mailbox; the error names `key`.
fn mailbox(key: &str, address: &str) -> Result<Mailbox, String> {
    address
        .parse()
        .map_err(|e| format!(".{key}: {address:?} is not an email address ({e})"))
}

impl Channel for Email {
    fn name(&self) -> &str {
        &self.name
    }

    fn send(&self, message: &Message, delivery: &Delivery<'_>) -> Result<(), Failure> {
        let email = build(message, delivery.key, &self.from, &self.to)
            .map_err(|e| Failure::Permanent(format!("cannot build the email: {e}")))?;
        match self.transport.send(&email) {
            Ok(_) => Ok(()),
            Err(e) if e.is_permanent() => Err(Failure::Permanent(format!(
                "the relay refused the email: {e}"
            ))),
            Err(e) => Err(Failure::Retry(format!("the email was not sent: {e}"))),
        }
    }
}

/// What every part shows, each agent-supplied field already [`shown`].
struct Facts {
    headline: &'static str,
    fields: [(&'static str, String); 6],
}

impl Facts {
    fn of(message: &Message) -> Self {
        let optional = |value: Option<&str>, none: &str| {
            value.map_or_else(|| none.to_owned(), |v| shown(v, FIELD_SHOWN))
        };
        Self {
            headline: text::headline(message.kind),
            fields: [
                ("Action", shown(&message.action, ACTION_SHOWN)),
                (
                    "Operation",
                    optional(message.operation.as_deref(), "(no operation)"),
                ),
                (
                    "Requester",
                    optional(message.requester.as_deref(), "(not given)"),
                ),
                (
                    "Payload digest",
                    message
                        .digest
                        .clone()
                        .unwrap_or_else(|| "(no payload)".to_owned()),
                ),
                ("Expires", message.expires_at.clone()),
                ("Request", message.id.to_string()),
            ],
        }
    }
}

/// The subject: one line (every agent-supplied part [`shown`]), at most [`SUBJECT_MAX`]
/// characters.
pub(crate) fn subject(message: &Message) -> String {
    let operation = message
        .operation
        .as_deref()
        .map_or_else(|| "(no operation)".to_owned(), |op| shown(op, FIELD_SHOWN));
    let subject = format!(
        "[approval-gate] {}: {operation} — {}",
        text::headline(message.kind),
        shown(&message.action, SUBJECT_ACTION_SHOWN)
    );
    // Fits by construction; the cut only makes it certain.
    text::cut(&subject, SUBJECT_MAX)
}

/// The text/plain part.
pub(crate) fn plain(message: &Message) -> String {
    let facts = Facts::of(message);
    let mut out = format!("{}\n\n", facts.headline);
    for (label, value) in &facts.fields {
        let _ = writeln!(out, "{label}: {value}");
    }
    match &message.link {
        Some(link) => {
            let _ = write!(out, "\nOpen the request: {link}\n");
        }
        None => {
            let _ = write!(out, "\n{}\n", text::NO_LINK);
        }
    }
    let _ = write!(out, "\n{}\n", text::DECIDE_ON_THE_PAGE);
    out
}

/// The text/html part: the same facts, HTML-escaped; the page as a plain link.
pub(crate) fn html(message: &Message) -> String {
    let facts = Facts::of(message);
    let mut out = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{0}</title></head>\
         <body>\n<h1>{0}</h1>\n<table>\n",
        facts.headline
    );
    for (label, value) in &facts.fields {
        let _ = writeln!(
            out,
            "<tr><th align=\"left\">{label}</th><td>{}</td></tr>",
            text::html(value)
        );
    }
    out.push_str("</table>\n");
    match &message.link {
        Some(link) => {
            let link = text::html(link);
            let _ = writeln!(
                out,
                "<p>Open the request: <a href=\"{link}\">{link}</a></p>"
            );
        }
        None => {
            let _ = writeln!(out, "<p>{}</p>", text::html(text::NO_LINK));
        }
    }
    let _ = write!(
        out,
        "<p>{}</p>\n</body></html>\n",
        text::html(text::DECIDE_ON_THE_PAGE)
    );
    out
}

/// The email about `message`, identified by the delivery `key`.
pub(crate) fn build(
    message: &Message,
    key: &str,
    from: &Mailbox,
    to: &[Mailbox],
) -> Result<lettre::Message, lettre::error::Error> {
    let mut builder = lettre::Message::builder()
        .from(from.clone())
        .subject(subject(message))
        .message_id(Some(format!("<{key}@approval-gate.invalid>")));
    for mailbox in to {
        builder = builder.to(mailbox.clone());
    }
    builder.multipart(MultiPart::alternative_plain_html(
        plain(message),
        html(message),
    ))
}

#[cfg(test)]
mod tests;
