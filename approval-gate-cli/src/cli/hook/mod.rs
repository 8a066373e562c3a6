//! `hook`: the gate as an agent harness's hook (Claude Code's `PreToolUse`, Codex's
//! `PermissionRequest`).
//!
//! A tool call matching the operator's `[hooks]` patterns is filed as a request whose
//! operation names the harness and the tool (`hook.claude_code.bash`) and whose payload is
//! the call's exact `tool_input`; the hook waits for the decision until a little before the
//! harness's own timeout, consumes an approval bound to that same action, operation and
//! payload, and answers allow. A call matching no pattern gets no opinion. Everything else
//! (malformed input, a bad setting, a store error, a timeout, a panic) answers deny, in the
//! harness's own words: never an exit the harness could read as allow.

use std::io::Read as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use approval_gate::limits::{
    MAX_ACTION_BYTES, MAX_NAME_BYTES, MAX_OPERATION_BYTES, MAX_REASON_BYTES,
};
use approval_gate::settings::BASH_TOOL;
use approval_gate::{
    Binding, CanonicalPayload, EffectiveStatus, Gate, NewRequest, StatusReport, Waited,
};
use serde_json::Value;

mod harness;

pub(crate) use harness::Harness;
use harness::{Answer, Call, parse, reply};

use crate::settings::{Settings, SettingsError};
use crate::term::Exit;
use crate::term::display::escape;
use crate::term::output;

/// Most bytes of hook input read: far more than any tool call (a payload is at most 64 KiB),
/// so that a call matching no pattern, whatever its size, still gets no opinion.
const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// The arguments of `approval-gate hook`.
#[derive(Debug, clap::Args)]
pub(crate) struct HookArgs {
    /// The harness whose hook this is.
    #[arg(value_enum)]
    pub(crate) harness: Harness,
    /// The harness's timeout for this hook (seconds, or a duration such as 10m): the hook
    /// answers deny a little before it runs out [default: `timeout` in the config file's
    /// [hooks], else 60].
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    pub(crate) timeout: Option<Duration>,
}

/// `600` (seconds) or `10m`, from 1 s to 24 h.
fn parse_timeout(text: &str) -> Result<Duration, String> {
    let timeout = if text.bytes().all(|b| b.is_ascii_digit()) && !text.is_empty() {
        text.parse()
            .map(Duration::from_secs)
            .map_err(|e| e.to_string())?
    } else {
        humantime::parse_duration(text).map_err(|e| format!("{text:?}: {e}"))?
    };
    if timeout < Duration::from_secs(1) || timeout > Duration::from_secs(24 * 60 * 60) {
        return Err(format!("{text:?} is outside 1s to 24h"));
    }
    Ok(timeout)
}

/// Runs the hook: reads stdin, answers on stdout and stderr, and exits as the harness needs.
/// Never fails: every error is a deny.
pub(crate) fn hook(settings: Result<Settings, SettingsError>, args: &HookArgs) -> Exit {
    let started = Instant::now();
    let harness = args.harness;
    let answer = catch_unwind(AssertUnwindSafe(|| answer(settings, args, started)))
        .unwrap_or_else(|_| Answer::Deny("the hook failed unexpectedly (a panic): denied".into()));
    let reply = reply(harness, &answer);
    if let Some(line) = &reply.stderr {
        output::stderr_line(line);
    }
    if let Some(text) = &reply.stdout {
        // If the harness has gone, nobody is left to allow anything.
        let _ = output::stdout(text);
    }
    if reply.code == 0 {
        Exit::Done
    } else {
        Exit::Status(reply.code)
    }
}

/// The answer to the call on stdin.
fn answer(settings: Result<Settings, SettingsError>, args: &HookArgs, started: Instant) -> Answer {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin()
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut input)
    {
        return Answer::Deny(format!("cannot read the hook input: {e}"));
    }
    if input.len() as u64 > MAX_INPUT_BYTES {
        return Answer::Deny(format!(
            "the hook input is larger than {MAX_INPUT_BYTES} bytes"
        ));
    }
    let call = match parse(args.harness, &input) {
        Ok(call) => call,
        Err(problem) => return Answer::Deny(problem),
    };
    let settings = match settings {
        Ok(settings) => settings,
        Err(e) => return Answer::Deny(format!("the settings cannot be used: {e}")),
    };
    let rules = &settings.hooks.value;
    let Some(pattern) = rules.matching(&call.tool, &call.input) else {
        return Answer::NoOpinion;
    };
    let timeout = args.timeout.unwrap_or(rules.timeout);
    let deadline = started + timeout.saturating_sub(margin(timeout));
    let guarded = Guarded::new(args.harness, &call, pattern);
    match guarded.ask(&settings, deadline) {
        Ok(answer) | Err(answer) => answer,
    }
}

/// How long before the harness's timeout the hook answers: a tenth of it, from 0.5 s to 5 s.
fn margin(timeout: Duration) -> Duration {
    (timeout / 10).clamp(Duration::from_millis(500), Duration::from_secs(5))
}

/// A matching call, as the request it becomes.
struct Guarded {
    action: String,
    reason: String,
    requester: String,
    operation: String,
    payload: Result<CanonicalPayload, String>,
}

impl Guarded {
    fn new(harness: Harness, call: &Call, pattern: &str) -> Self {
        let command = (call.tool == BASH_TOOL)
            .then(|| call.input.get("command").and_then(Value::as_str))
            .flatten();
        let action = match command {
            Some(command) => format!("{harness} runs a command: {command}"),
            None => format!(
                "{harness} calls the tool {} (its input is the payload)",
                call.tool
            ),
        };
        let mut reason = format!("the call matches the hook pattern {pattern:?}");
        if let Some(description) = call.input.get("description").and_then(Value::as_str) {
            reason.push_str("; the agent says: ");
            reason.push_str(description);
        }
        let requester = match &call.session {
            Some(session) => format!("{} session {session}", harness.slug()),
            None => harness.slug().to_owned(),
        };
        Self {
            action: cut(action, MAX_ACTION_BYTES),
            reason: cut(reason, MAX_REASON_BYTES),
            requester: cut(requester, MAX_NAME_BYTES),
            operation: operation(harness, &call.tool),
            payload: CanonicalPayload::from_value(&call.input)
                .map_err(|e| format!("the tool input cannot be a payload: {e}")),
        }
    }

    /// Files the request, waits until `deadline`, and consumes an approval.
    fn ask(self, settings: &Settings, deadline: Instant) -> Result<Answer, Answer> {
        let payload = self.payload.map_err(Answer::Deny)?;
        let store = |e: approval_gate::Error| Answer::Deny(format!("the store: {e}"));
        let gate = settings.open().map_err(store)?;
        let new = NewRequest::new(&self.action, &self.reason)
            .requested_by(&self.requester)
            .operation(&self.operation)
            .payload(payload.clone());
        let id = gate.request_approval(new).map_err(store)?.request.id();
        output::stderr_line(&format!(
            "approval-gate: waiting for a decision on request {id}: {}",
            escape(&self.action)
        ));
        let left = deadline.saturating_duration_since(Instant::now());
        let waited = gate.wait_for_decision(id, left).map_err(store)?;
        let report = match waited {
            Waited::Decided(report) => report,
            Waited::TimedOut(_) => {
                return Err(Answer::Deny(format!(
                    "no decision on request {id} before the hook's timeout: denied. It is still \
                     pending: a retry of the same call waits on it again (a longer hook timeout \
                     gives the approver more time)"
                )));
            }
        };
        let binding = Binding::new(&self.action)
            .operation(&self.operation)
            .payload(payload);
        decided(&gate, &report, &binding)
    }
}

/// The answer to a decided request: allow only once its approval is consumed, bound to this
/// exact call.
fn decided(gate: &Gate, report: &StatusReport, binding: &Binding) -> Result<Answer, Answer> {
    let request = report.request();
    let id = request.id();
    let by = request
        .decided_by()
        .map_or_else(String::new, |who| format!(" by {}", escape(who)));
    let why = request
        .decision_reason()
        .filter(|reason| !reason.is_empty())
        .map_or_else(String::new, |reason| format!(": {}", escape(reason)));
    match report.effective_status() {
        EffectiveStatus::ApprovedUnconsumed => {
            let grant = gate.consume::<Value>(id, binding).map_err(|e| {
                Answer::Deny(format!("request {id} was approved but cannot be used: {e}"))
            })?;
            // The approval is spent: the harness, not this process, runs the tool.
            drop(grant);
            Ok(Answer::Allow(format!("request {id} approved{by}{why}")))
        }
        // Another call sharing the request (the same call, made twice while it waited) used
        // the approval first: this one is not authorized.
        EffectiveStatus::Consumed => Err(Answer::Deny(format!(
            "request {id} was approved{by}, but its approval is already used and cannot be used \
             again: an approval allows one call"
        ))),
        EffectiveStatus::Denied => Err(Answer::Deny(format!("request {id} denied{by}{why}"))),
        other => Err(Answer::Deny(format!(
            "request {id} is {}: not approved",
            other.as_str().replace('_', " ")
        ))),
    }
}

/// `hook.<harness>.<tool>`: the tool's name lowercased, every character outside `a-z0-9_`
/// made `_`, cut to the library's limit. Tools differing only there share an operation; the
/// action and the payload still bind each call.
fn operation(harness: Harness, tool: &str) -> String {
    let mut name = format!("hook.{}.", harness.slug());
    let tool: String = tool
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '_') => c,
            _ => '_',
        })
        .collect();
    name.push_str(&tool);
    name.truncate(MAX_OPERATION_BYTES);
    name
}

/// `text` with any NUL written `\\0` (the library refuses NULs in text), cut on a
/// character boundary to at most `max` bytes.
fn cut(text: String, max: usize) -> String {
    let mut text = if text.contains('\0') {
        text.replace('\0', "\\0")
    } else {
        text
    };
    if text.len() > max {
        let mut end = max.saturating_sub('…'.len_utf8());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests;
