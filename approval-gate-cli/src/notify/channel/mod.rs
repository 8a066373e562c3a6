//! The channels a message goes out on. Each is configured by its own `[notify.channels.NAME]`
//! table and reads its secrets from files or the environment ([`super::secret`]).

pub(crate) mod command;
pub(crate) mod email;
pub(crate) mod http;
pub(crate) mod ntfy;
pub(crate) mod slack;
mod table;
#[cfg(test)]
pub(crate) mod test_messages;
pub(crate) mod webhook;

use super::message::{Delivery, Message};

/// Why a delivery did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// It may work later: a connection refused or reset, a timeout, HTTP 408, 429 or 5xx, an
    /// SMTP 4xx. The notifier tries again after a backoff.
    Retry(String),
    /// It will not work as configured: HTTP 4xx other than 408 and 429, an SMTP 5xx, a
    /// message the channel refuses. The delivery goes to the dead-letter list at once.
    Permanent(String),
}

impl Failure {
    /// What went wrong, in words (never a secret).
    pub(crate) fn reason(&self) -> &str {
        match self {
            Failure::Retry(reason) | Failure::Permanent(reason) => reason,
        }
    }
}

/// A way to tell a person. A channel carries no decision power: it sends, and at most links
/// to the page.
pub(crate) trait Channel: Send + Sync + std::fmt::Debug {
    /// The name the config file gives it (`[notify.channels.NAME]`): in keys, ledgers, logs.
    fn name(&self) -> &str;
    /// Sends `message` once, bounded by the channel's own timeout; [`Delivery::key`] lets the
    /// receiver recognise a repeat.
    fn send(&self, message: &Message, delivery: &Delivery<'_>) -> Result<(), Failure>;
}
