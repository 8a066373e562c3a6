//! A shell command per message, as `watch --notify-cmd` runs one (the same code):
//! `sh -c COMMAND` with the request in the environment only (`APPROVAL_GATE_ID`,
//! `APPROVAL_GATE_ACTION` escaped, `APPROVAL_GATE_URL` if `public_url` is set), plus
//! `APPROVAL_GATE_KIND` (`filed`, `reminder`, `escalation`), `APPROVAL_GATE_KEY` (the
//! delivery key, the same on every attempt) and `APPROVAL_GATE_ATTEMPT` (from 1).
//!
//! ```toml
//! [notify.channels.desktop]
//! type = "command"
//! command = "notify-send 'approval waiting' \"$APPROVAL_GATE_ACTION\""
//! ```
//!
//! Exit 0 is delivered; any other end is tried again later, and so is a command still running
//! after [`TIME_LIMIT`], which is killed with its process group.

use std::os::unix::process::CommandExt as _;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use super::{Channel, Failure};
use crate::notify::message::{Delivery, Message};
use crate::notify_cmd::notify_command;

/// How long one run may take.
pub(crate) const TIME_LIMIT: Duration = Duration::from_secs(30);

/// A command channel.
#[derive(Debug)]
pub(crate) struct ShellCommand {
    name: String,
    command: String,
    limit: Duration,
}

impl ShellCommand {
    /// The channel `[notify.channels.NAME]` describes (`command`). Errors start with the key
    /// they are about (`.command: ...`).
    pub(crate) fn from_table(name: &str, table: &toml::Table) -> Result<Self, String> {
        if let Some(key) = table.keys().find(|key| key.as_str() != "command") {
            return Err(format!(
                ".{key}: unknown key: a command channel holds command"
            ));
        }
        let command = match table.get("command") {
            Some(toml::Value::String(command)) if !command.trim().is_empty() => command.clone(),
            Some(_) => return Err(".command: must be a shell command in a string".to_owned()),
            None => return Err(".command: missing: the shell command to run".to_owned()),
        };
        Ok(Self {
            name: name.to_owned(),
            command,
            limit: TIME_LIMIT,
        })
    }
}

impl Channel for ShellCommand {
    fn name(&self) -> &str {
        &self.name
    }

    fn send(&self, message: &Message, delivery: &Delivery<'_>) -> Result<(), Failure> {
        let mut command = notify_command(
            &self.command,
            message.id,
            &message.action,
            message.link.as_deref(),
        );
        command
            .env("APPROVAL_GATE_KIND", message.kind.as_str())
            .env("APPROVAL_GATE_KEY", delivery.key)
            .env("APPROVAL_GATE_ATTEMPT", delivery.attempt.to_string())
            // Its own group, so that a command over time is killed with what it started.
            .process_group(0);
        let mut child = command
            .spawn()
            .map_err(|e| Failure::Retry(format!("the command could not start: {e}")))?;
        let pid = child.id();
        let (done, ended) = mpsc::channel();
        thread::spawn(move || {
            let _ = done.send(child.wait());
        });
        let Ok(status) = ended.recv_timeout(self.limit) else {
            if let Some(group) = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
            // Reaped by its thread once killed.
            let _ = ended.recv();
            return Err(Failure::Retry(format!(
                "the command ran over {} s and was killed",
                self.limit.as_secs_f64()
            )));
        };
        match status {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(Failure::Retry(format!("the command failed ({status})"))),
            Err(e) => Err(Failure::Retry(format!("cannot wait for the command: {e}"))),
        }
    }
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;
