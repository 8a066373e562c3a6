//! What is due for one pending request: derived from the request and the config, never
//! stored. Each message is due at a time: when filed; `reminder_before` its expiry; an
//! escalation's `after` its filing. The ledger says which were already sent.

use approval_gate::{Request, Timestamp};

use super::config::Config;
use super::message::Kind;

/// One message due on one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Due {
    /// The channel's index in [`Config::channels`].
    pub(crate) channel: usize,
    /// Why it is told.
    pub(crate) kind: Kind,
    /// From when.
    pub(crate) at: Timestamp,
}

/// Every message about `request` (pending) on every channel, each once:
/// - filed, at filing, on each channel that hears of its operation (not on-call ones);
/// - a reminder `reminder_before` its expiry on the same channels, if that is after filing;
/// - an escalation `after` filing on each channel an escalation rule covering its operation
///   names (the earliest rule's), if that is before its expiry.
pub(crate) fn due(config: &Config, request: &Request) -> Vec<Due> {
    let operation = request.operation();
    let created = request.created_at();
    let expires = request.expires_at();
    let mut due = Vec::new();
    for (channel, configured) in config.channels.iter().enumerate() {
        if !configured.hears(operation) {
            continue;
        }
        due.push(Due {
            channel,
            kind: Kind::Filed,
            at: created,
        });
        if let Some(before) = config.reminder_before {
            let at = expires.saturating_sub(before);
            if at > created {
                due.push(Due {
                    channel,
                    kind: Kind::Reminder,
                    at,
                });
            }
        }
    }
    for rule in config.escalations.iter().filter(|r| r.covers(operation)) {
        let at = created.saturating_add(rule.after);
        if at >= expires {
            continue;
        }
        for name in &rule.channels {
            let Some(channel) = config.channels.iter().position(|c| &c.name == name) else {
                continue;
            };
            match due
                .iter_mut()
                .find(|d| d.channel == channel && d.kind == Kind::Escalation)
            {
                Some(earlier) => earlier.at = earlier.at.min(at),
                None => due.push(Due {
                    channel,
                    kind: Kind::Escalation,
                    at,
                }),
            }
        }
    }
    due
}

#[cfg(test)]
#[path = "due_tests.rs"]
mod tests;
