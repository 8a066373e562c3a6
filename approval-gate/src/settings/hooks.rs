//! The `[hooks]` table of the config file: which tool calls of an agent harness
//! (`approval-gate hook claude-code`, `approval-gate hook codex`) wait for a human.
//!
//! ```toml
//! [hooks]
//! tools = ["mcp__*__send*", "Write"]    # every call of these tools
//! commands = ["git push*", "rm -rf*"]   # `Bash` calls whose command matches
//! timeout = "600s"                      # the harness's own hook timeout
//! ```
//!
//! Patterns are the quorum table's globs (`*` any text, `?` one character), matched against
//! the whole tool name or the whole command, case-sensitively. A call matching none is not
//! the gate's business: the hook answers quickly with no opinion.

use std::time::Duration;

use serde_json::Value;

use crate::policy::glob;

use super::read::Read;

/// The tool whose `command` input [`HookRules::commands`] match.
pub const BASH_TOOL: &str = "Bash";

/// The harness's hook timeout unless said: Claude Code's default for a command hook (60 s).
/// The hook answers a little before it runs out (see `approval-gate hook --help`).
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest hook timeout taken: a harness that waits longer than a day is not waiting
/// for a hook.
const MAX_HOOK_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// Which tool calls of an agent harness need an approval, and how long the hook may wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRules {
    /// Tool-name patterns: any call of a matching tool needs an approval.
    pub tools: Vec<String>,
    /// Command patterns: a [`BASH_TOOL`] call whose `command` matches needs an approval.
    pub commands: Vec<String>,
    /// The harness's own timeout for the hook: the hook answers before it runs out.
    pub timeout: Duration,
}

impl Default for HookRules {
    fn default() -> Self {
        Self {
            tools: Vec::new(),
            commands: Vec::new(),
            timeout: DEFAULT_HOOK_TIMEOUT,
        }
    }
}

impl HookRules {
    /// The pattern a call of `tool` with `input` matches, if any: a tool pattern, else, for
    /// [`BASH_TOOL`], a command pattern on its `command` string.
    #[must_use]
    pub fn matching(&self, tool: &str, input: &Value) -> Option<&str> {
        let hit = |name: &str, patterns: &'_ [String]| -> Option<usize> {
            patterns
                .iter()
                .position(|pattern| glob(name.as_bytes(), pattern.as_bytes()))
        };
        if let Some(i) = hit(tool, &self.tools) {
            return Some(&self.tools[i]);
        }
        if tool != BASH_TOOL {
            return None;
        }
        let command = input.get("command").and_then(Value::as_str)?;
        hit(command.trim_start(), &self.commands).map(|i| self.commands[i].as_str())
    }
}

/// The `[hooks]` table; it is read from the config file only.
pub(super) const HOOKS: Read<HookRules> = Read {
    empty: "set [hooks] in the config file",
    text: |_| Err("is read from the config file's [hooks] table only".to_owned()),
    file: read_table,
};

fn read_table(value: &toml::Value) -> Result<HookRules, String> {
    let table = value.as_table().ok_or_else(|| {
        format!(
            "expected a table such as [hooks] commands = [\"git push*\"], got {} {value}",
            value.type_str()
        )
    })?;
    let mut rules = HookRules::default();
    for (key, value) in table {
        match key.as_str() {
            "tools" => rules.tools = patterns(key, value)?,
            "commands" => rules.commands = patterns(key, value)?,
            "timeout" => rules.timeout = timeout(value)?,
            other => {
                return Err(format!(
                    "unknown key {other:?}: the keys are tools, commands, timeout"
                ));
            }
        }
    }
    Ok(rules)
}

fn patterns(key: &str, value: &toml::Value) -> Result<Vec<String>, String> {
    let list = value
        .as_array()
        .ok_or_else(|| format!("{key}: expected a list of patterns in strings"))?;
    list.iter()
        .map(|pattern| match pattern.as_str() {
            Some("") => Err(format!(
                "{key}: an empty pattern matches nothing; remove it"
            )),
            Some(text) => Ok(text.to_owned()),
            None => Err(format!(
                "{key}: expected a pattern in a string, got {pattern}"
            )),
        })
        .collect()
}

fn timeout(value: &toml::Value) -> Result<Duration, String> {
    let text = value.as_str().ok_or_else(|| {
        format!("timeout: expected a duration in a string such as \"55s\", got {value}")
    })?;
    let timeout = humantime::parse_duration(text)
        .map_err(|e| format!("timeout: {text:?} is not a duration such as \"55s\": {e}"))?;
    if timeout < Duration::from_secs(1) || timeout > MAX_HOOK_TIMEOUT {
        return Err(format!("timeout: {text:?} is outside 1s to 24h"));
    }
    Ok(timeout)
}

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;
