//! `audit verify`: check the hash chain of the audit log and what its lines say; `audit
//! reanchor`: accept it as it is after its anchor was lost.

use approval_gate::{Gate, os_user};
use serde_json::json;

use crate::term::display::escape;
use crate::term::output;
use crate::term::render;
use crate::term::{Exit, Refusal};

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
        // With --json, the error object carries the line and the problem.
        Err(error) => Err(error.into()),
    }
}

pub(crate) fn reanchor(gate: &Gate, yes: bool, json: bool) -> anyhow::Result<Exit> {
    if !yes {
        let found = match gate.verify_audit() {
            Ok(summary) => format!(
                "the audit log verifies ({} lines): nothing to re-anchor",
                summary.lines
            ),
            // Its lines and anchor agree: what they say is for a human to look into.
            Err(error @ approval_gate::Error::AuditInconsistent { .. }) => format!(
                "{error}. Re-anchoring repairs a lost or disagreeing anchor, not what the lines say: find out who wrote that line"
            ),
            Err(error) => format!(
                "{error}. Re-anchoring accepts the log as it is now as the whole history; look at it first, then run `approval-gate audit reanchor --yes`"
            ),
        };
        return Err(Refusal::new("not_reanchored", format!("not re-anchored: {found}")).into());
    }
    let done = gate.reanchor_audit(&os_user())?;
    let text = if json {
        render::json(&done)?
    } else {
        let previous = done
            .previous_anchor
            .map_or_else(|| "none".to_owned(), |seq| format!("line {seq}"));
        format!(
            "audit log re-anchored by {}: found {} lines (last hash {}), old anchor {previous}, {} torn bytes cut; recorded as line {}\nproblem was: {}\n",
            escape(&os_user()),
            done.found_lines,
            done.found_last_hash,
            done.torn_bytes_cut,
            done.seq,
            escape(&done.problem),
        )
    };
    output::stdout(&text)?;
    Ok(Exit::Done)
}
