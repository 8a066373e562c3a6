//! The config file's `[notify]` table: the channels, the reminder and the escalation rules.
//!
//! ```toml
//! [notify]
//! reminder_before = "10m"          # one reminder this long before expiry
//! [notify.channels.ops]            # a channel: its name is [a-z0-9_-]{1,32}
//! type = "webhook"                 # webhook | command | slack | ntfy | email
//! operations = ["payments.*"]      # which requests it hears of (default: all)
//! on_call = false                  # true: it hears only of escalations
//! # ... the type's own keys
//! [[notify.escalate]]
//! operations = "payments.*"        # a pattern, or a list of them
//! after = "15m"                    # still undecided this long after filing:
//! channels = ["oncall"]            # also tell these channels
//! ```
//!
//! Everything is checked when the notifier starts, secrets read included: a mistake stops it
//! with the key named, never a message lost later.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use approval_gate::settings::{check_operation_pattern, operation_matches};

use super::channel::Channel;
use super::channel::command::ShellCommand;
use super::channel::email::Email;
use super::channel::ntfy::Ntfy;
use super::channel::slack::Slack;
use super::channel::webhook::Webhook;

/// The longest delay taken for a reminder or an escalation: longer than any request lives.
const MAX_DELAY: Duration = Duration::from_secs(31 * 24 * 60 * 60);

/// The longest channel name.
const MAX_NAME: usize = 32;

/// What `[notify]` configures.
#[derive(Debug)]
pub(crate) struct Config {
    /// The channels, in name order.
    pub(crate) channels: Vec<Configured>,
    /// One reminder this long before a request expires, on each channel that told of it.
    pub(crate) reminder_before: Option<Duration>,
    /// Undecided this long after filing: also tell these channels.
    pub(crate) escalations: Vec<Escalation>,
}

/// One channel and which requests it hears of.
#[derive(Debug)]
pub(crate) struct Configured {
    /// Its name (`[notify.channels.NAME]`).
    pub(crate) name: String,
    /// The operation patterns of the requests it is told of when filed; `*` matches a
    /// request without an operation too.
    pub(crate) operations: Vec<String>,
    /// Whether it hears only of escalations.
    pub(crate) on_call: bool,
    /// The channel (shared with its worker).
    pub(crate) channel: Arc<dyn Channel>,
}

/// One `[[notify.escalate]]` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Escalation {
    /// The operation patterns of the requests it escalates.
    pub(crate) operations: Vec<String>,
    /// How long after filing a still undecided request is escalated.
    pub(crate) after: Duration,
    /// The channels told then.
    pub(crate) channels: Vec<String>,
}

impl Configured {
    /// Whether it is told of a request with `operation` when it is filed (and reminded).
    pub(crate) fn hears(&self, operation: Option<&str>) -> bool {
        !self.on_call
            && self
                .operations
                .iter()
                .any(|pattern| operation_matches(pattern, operation))
    }
}

impl Escalation {
    /// Whether it escalates a request with `operation`.
    pub(crate) fn covers(&self, operation: Option<&str>) -> bool {
        self.operations
            .iter()
            .any(|pattern| operation_matches(pattern, operation))
    }
}

impl Config {
    /// The `[notify]` table of the config file at `path` (already checked by the settings:
    /// owned by this user or root, not writable by others).
    pub(crate) fn from_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the config file {}: {e}", path.display()))?;
        let table: toml::Table = text
            .parse()
            .map_err(|e| format!("config file {}: {e}", path.display()))?;
        let notify = table.get("notify").ok_or_else(|| {
            format!(
                "the config file {} has no [notify] table: name at least one channel, such as \
                 [notify.channels.ops] with type = \"webhook\" (see docs/notify.md)",
                path.display()
            )
        })?;
        let notify = notify
            .as_table()
            .ok_or_else(|| "notify: must be a table".to_owned())?;
        Self::from_table(notify).map_err(|e| format!("config file {}: {e}", path.display()))
    }

    /// Reads the `[notify]` table; errors name the key, as `notify.channels.ops.url: ...`.
    pub(crate) fn from_table(table: &toml::Table) -> Result<Self, String> {
        for key in table.keys() {
            if !matches!(key.as_str(), "reminder_before" | "channels" | "escalate") {
                return Err(format!(
                    "notify.{key}: unknown key: [notify] holds reminder_before, channels and \
                     escalate"
                ));
            }
        }
        let reminder_before = table
            .get("reminder_before")
            .map(|value| delay(value).map_err(|e| format!("notify.reminder_before: {e}")))
            .transpose()?;
        let channels = match table.get("channels") {
            Some(toml::Value::Table(channels)) if !channels.is_empty() => channels,
            Some(toml::Value::Table(_)) | None => {
                return Err("notify.channels: no channel: name at least one, such as \
                     [notify.channels.ops] with type = \"webhook\""
                    .to_owned());
            }
            Some(other) => {
                return Err(format!(
                    "notify.channels: must be a table of channels, not a {}",
                    other.type_str()
                ));
            }
        };
        let channels = channels
            .iter()
            .map(|(name, value)| {
                configured(name, value).map_err(|e| format!("notify.channels.{name}{e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let escalations = match table.get("escalate") {
            None => Vec::new(),
            Some(toml::Value::Array(rules)) => rules
                .iter()
                .enumerate()
                .map(|(i, rule)| {
                    escalation(rule, &channels).map_err(|e| format!("notify.escalate[{i}]{e}"))
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(format!(
                    "notify.escalate: must be [[notify.escalate]] tables, not a {}",
                    other.type_str()
                ));
            }
        };
        Ok(Self {
            channels,
            reminder_before,
            escalations,
        })
    }
}

/// `[notify.channels.NAME]`; an error starts with `.key: ` or `: `.
fn configured(name: &str, value: &toml::Value) -> Result<Configured, String> {
    check_name(name).map_err(|e| format!(": {e}"))?;
    let mut table = value
        .as_table()
        .ok_or_else(|| format!(": must be a table, not a {}", value.type_str()))?
        .clone();
    let kind = match table.remove("type") {
        Some(toml::Value::String(kind)) => kind,
        Some(other) => {
            return Err(format!(
                ".type: must be a string, not a {}",
                other.type_str()
            ));
        }
        None => {
            return Err(".type: missing: webhook, command, slack, ntfy or email".to_owned());
        }
    };
    let operations = match table.remove("operations") {
        None => vec!["*".to_owned()],
        Some(value) => patterns(&value).map_err(|e| format!(".operations: {e}"))?,
    };
    let on_call = match table.remove("on_call") {
        None => false,
        Some(toml::Value::Boolean(on_call)) => on_call,
        Some(other) => {
            return Err(format!(
                ".on_call: must be true or false, not a {}",
                other.type_str()
            ));
        }
    };
    let channel = Arc::from(build(&kind, name, &table)?);
    Ok(Configured {
        name: name.to_owned(),
        operations,
        on_call,
        channel,
    })
}

/// The channel of type `kind`, from its own keys; an error starts with `.key: ` or `: `.
fn build(kind: &str, name: &str, table: &toml::Table) -> Result<Box<dyn Channel>, String> {
    // Each constructor names the key it refuses, without the channel's path: added here.
    let keyed = |e: String| {
        if e.starts_with('.') {
            e
        } else {
            format!(": {e}")
        }
    };
    match kind {
        "webhook" => Ok(Box::new(Webhook::from_table(name, table).map_err(keyed)?)),
        "command" => Ok(Box::new(
            ShellCommand::from_table(name, table).map_err(keyed)?,
        )),
        "slack" => Ok(Box::new(Slack::from_table(name, table).map_err(keyed)?)),
        "ntfy" => Ok(Box::new(Ntfy::from_table(name, table).map_err(keyed)?)),
        "email" => Ok(Box::new(Email::from_table(name, table).map_err(keyed)?)),
        other => Err(format!(
            ".type: unknown channel type {other:?}: webhook, command, slack, ntfy or email"
        )),
    }
}

/// `[[notify.escalate]]`; an error starts with `.key: ` or `: `.
fn escalation(rule: &toml::Value, channels: &[Configured]) -> Result<Escalation, String> {
    let rule = rule
        .as_table()
        .ok_or_else(|| format!(": must be a table, not a {}", rule.type_str()))?;
    for key in rule.keys() {
        if !matches!(key.as_str(), "operations" | "after" | "channels") {
            return Err(format!(
                ".{key}: unknown key: an escalation holds operations, after and channels"
            ));
        }
    }
    let operations = match rule.get("operations") {
        None => vec!["*".to_owned()],
        Some(value) => patterns(value).map_err(|e| format!(".operations: {e}"))?,
    };
    let after = delay(
        rule.get("after")
            .ok_or(".after: missing: such as \"15m\"")?,
    )
    .map_err(|e| format!(".after: {e}"))?;
    let names = match rule.get("channels") {
        Some(toml::Value::Array(names)) if !names.is_empty() => names,
        _ => return Err(".channels: must be a list of channel names, such as [\"oncall\"]".into()),
    };
    let mut told = Vec::new();
    for name in names {
        let name = name
            .as_str()
            .ok_or(".channels: must be a list of channel names")?;
        if !channels.iter().any(|channel| channel.name == name) {
            return Err(format!(
                ".channels: no channel is named {name:?}: define [notify.channels.{name}]"
            ));
        }
        told.push(name.to_owned());
    }
    Ok(Escalation {
        operations,
        after,
        channels: told,
    })
}

/// A channel name: `[a-z0-9_-]{1,32}` (it is part of delivery keys and ledger lines).
fn check_name(name: &str) -> Result<(), String> {
    let good = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'));
    if good {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a channel name: 1 to {MAX_NAME} of a-z, 0-9, _ and -"
        ))
    }
}

/// A pattern or a list of them, each checked as the quorum table's.
fn patterns(value: &toml::Value) -> Result<Vec<String>, String> {
    let list = match value {
        toml::Value::String(one) => vec![one.clone()],
        toml::Value::Array(many) if !many.is_empty() => many
            .iter()
            .map(|p| p.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or("must be a pattern or a list of patterns, such as [\"payments.*\"]")?,
        _ => {
            return Err("must be a pattern or a list of patterns, such as [\"payments.*\"]".into());
        }
    };
    for pattern in &list {
        check_operation_pattern(pattern)?;
    }
    Ok(list)
}

/// A delay such as `"15m"`: more than nothing, at most [`MAX_DELAY`].
fn delay(value: &toml::Value) -> Result<Duration, String> {
    let text = value.as_str().ok_or_else(|| {
        format!(
            "must be a duration such as \"15m\", not a {}",
            value.type_str()
        )
    })?;
    let delay = humantime::parse_duration(text)
        .map_err(|e| format!("{text:?} is not a duration such as \"15m\": {e}"))?;
    if delay.is_zero() || delay > MAX_DELAY {
        return Err(format!("{text:?} must be more than 0 and at most 31 days"));
    }
    Ok(delay)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
