//! The harnesses' side of a hook: what each sends on stdin, and how each must be answered.
//!
//! - Claude Code, `PreToolUse` (<https://code.claude.com/docs/en/hooks>): input `session_id`,
//!   `hook_event_name`, `tool_name`, `tool_input`, ...; an answer is
//!   `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision":
//!   "allow"|"deny", "permissionDecisionReason": ...}}`. Exit 2 blocks the call whatever
//!   stdout holds (its stderr goes to the model), and any other non-zero exit is a
//!   non-blocking error, so a deny here exits 2, and no opinion is exit 0 with nothing on
//!   stdout.
//! - Codex, `PermissionRequest` (<https://developers.openai.com/codex/hooks>): the same input
//!   fields; an answer is `{"hookSpecificOutput": {"hookEventName": "PermissionRequest",
//!   "decision": {"behavior": "allow"|"deny", "message": ...}}}` on stdout with exit 0, and a
//!   quiet exit 0 (or a failed hook) leaves the decision to Codex's own approval prompt.

use std::fmt;

use serde_json::{Value, json};

/// The agent harnesses `approval-gate hook` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Harness {
    /// Claude Code, as its `PreToolUse` hook.
    ClaudeCode,
    /// Codex, as its `PermissionRequest` hook.
    Codex,
}

impl Harness {
    /// The harness's name, for people.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
        }
    }

    /// The harness in an operation name: `hook.<slug>.<tool>`.
    pub(crate) fn slug(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude_code",
            Self::Codex => "codex",
        }
    }

    /// The hook event this command answers.
    pub(crate) fn event(self) -> &'static str {
        match self {
            Self::ClaudeCode => "PreToolUse",
            Self::Codex => "PermissionRequest",
        }
    }
}

impl fmt::Display for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One tool call, as the harness's hook input gives it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    /// The harness's session, if it says.
    pub(crate) session: Option<String>,
    /// The tool, such as `Bash` or `mcp__slack__send_message`.
    pub(crate) tool: String,
    /// The tool's input, exactly as given.
    pub(crate) input: Value,
}

/// Reads the hook input: a JSON object for this harness's event, with a tool name and a tool
/// input. Anything else is the problem, said.
pub(crate) fn parse(harness: Harness, text: &[u8]) -> Result<Call, String> {
    let value: Value =
        serde_json::from_slice(text).map_err(|e| format!("the hook input is not JSON: {e}"))?;
    let Value::Object(mut object) = value else {
        return Err("the hook input is not a JSON object".to_owned());
    };
    let event = object.get("hook_event_name").and_then(Value::as_str);
    if event != Some(harness.event()) {
        return Err(format!(
            "the hook input's hook_event_name is {}, not {}: configure `approval-gate hook {}` \
             as the {} hook",
            event.map_or_else(|| "missing".to_owned(), |e| format!("{e:?}")),
            harness.event(),
            match harness {
                Harness::ClaudeCode => "claude-code",
                Harness::Codex => "codex",
            },
            harness.event()
        ));
    }
    let tool = match object.get("tool_name") {
        Some(Value::String(tool)) if !tool.is_empty() => tool.clone(),
        _ => return Err("the hook input has no tool_name string".to_owned()),
    };
    let input = object
        .remove("tool_input")
        .ok_or_else(|| "the hook input has no tool_input".to_owned())?;
    let session = object
        .get("session_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(Call {
        session,
        tool,
        input,
    })
}

/// What the hook tells the harness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Not the gate's business: the harness's own permission flow decides.
    NoOpinion,
    /// A human approved this exact call, and the approval is now spent.
    Allow(String),
    /// Anything else, with why.
    Deny(String),
}

/// An answer as the harness reads it: stdout, a line for stderr, and the exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    /// The JSON document for stdout, if any.
    pub(crate) stdout: Option<String>,
    /// The line for stderr, if any (Claude Code gives it to the model on exit 2).
    pub(crate) stderr: Option<String>,
    /// The exit status.
    pub(crate) code: u8,
}

/// How `harness` reads `answer`.
pub(crate) fn reply(harness: Harness, answer: &Answer) -> Reply {
    let (decision, reason) = match answer {
        Answer::NoOpinion => {
            return Reply {
                stdout: None,
                stderr: None,
                code: 0,
            };
        }
        Answer::Allow(reason) => ("allow", reason),
        Answer::Deny(reason) => ("deny", reason),
    };
    let deny = decision == "deny";
    let output = match harness {
        Harness::ClaudeCode => json!({
            "hookSpecificOutput": {
                "hookEventName": harness.event(),
                "permissionDecision": decision,
                "permissionDecisionReason": reason,
            }
        }),
        Harness::Codex if deny => json!({
            "hookSpecificOutput": {
                "hookEventName": harness.event(),
                "decision": { "behavior": decision, "message": reason },
            }
        }),
        Harness::Codex => json!({
            "hookSpecificOutput": {
                "hookEventName": harness.event(),
                "decision": { "behavior": decision },
            }
        }),
    };
    Reply {
        stdout: Some(format!("{output}\n")),
        stderr: Some(format!("approval-gate: {decision}: {reason}")),
        // Claude Code blocks on exit 2 whatever stdout holds; Codex reads only exit 0's JSON.
        code: if deny && harness == Harness::ClaudeCode {
            2
        } else {
            0
        },
    }
}
