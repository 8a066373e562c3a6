//! `audit verify`: check the hash chain of the audit log.

use approval_gate::Gate;
use serde_json::json;

use super::Exit;
use super::output;
use super::render;

pub(crate) fn verify(gate: &Gate, json: bool) -> anyhow::Result<Exit> {
    match gate.verify_audit() {
        Ok(summary) => {
            let text = if json {
                render::json(&json!({
                    "ok": true,
                    "lines": summary.lines,
                    "lastHash": summary.last_hash,
                }))?
            } else {
                format!(
                    "audit log ok: {} lines, last hash {}\n",
                    summary.lines, summary.last_hash
                )
            };
            output::stdout(&text)?;
            Ok(Exit::Done)
        }
        Err(error) => {
            if let approval_gate::Error::AuditBroken { line, problem } = &error
                && json
            {
                let report = json!({ "ok": false, "line": line, "problem": problem });
                // The verdict is the exit code and the line on stderr; this is a courtesy.
                let _ = output::stdout(&render::json(&report)?);
            }
            Err(error.into())
        }
    }
}
