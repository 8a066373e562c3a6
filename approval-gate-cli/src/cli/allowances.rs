//! `allowances` and `revoke-allowance`: what the humans have allowed, with what each has
//! counted, and taking one back. Making one is signing it: `allow` (`allow.rs`).

use std::fmt::Write as _;

use approval_gate::{AllowanceReport, Gate, RequestId};
use serde_json::Value;

use crate::cli::decide::decision;
use crate::term::Exit;
use crate::term::display::escape_truncated;
use crate::term::output;
use crate::term::render;

/// Lists every allowance, the newest last: its id, whether it is active, its operation, its
/// uses and budget left, and what it allows in words (strings from it escaped as anything an
/// agent wrote).
pub(crate) fn list(gate: &Gate, json: bool) -> anyhow::Result<Exit> {
    let all = gate.allowances()?;
    if json {
        let body = Value::Array(all.iter().map(AllowanceReport::to_json).collect());
        output::stdout(&render::json(&body)?)?;
        return Ok(Exit::Done);
    }
    if all.is_empty() {
        output::stdout("no allowances\n")?;
        return Ok(Exit::Done);
    }
    let room = output::width().saturating_sub(8).max(24);
    let mut text = String::new();
    for report in &all {
        text.push_str(&line(report, room));
    }
    output::stdout(&text)?;
    Ok(Exit::Done)
}

fn line(report: &AllowanceReport, room: usize) -> String {
    let allowance = &report.allowance.allowance;
    let state = if report.revoked {
        "revoked".to_owned()
    } else if report.ended {
        "ended".to_owned()
    } else if report.signatures_missing > 0 {
        let n = report.signatures_missing;
        let plural = if n == 1 { "" } else { "s" };
        format!("proposed, needs {n} more signature{plural},")
    } else {
        "active".to_owned()
    };
    let mut counts = format!("{} used", report.usage.uses);
    if let Some(left) = report.uses_left() {
        let _ = write!(counts, ", {left} left");
    }
    if let Some(left) = report.budget_left() {
        let _ = write!(counts, ", budget {} spent, {left} left", report.usage.spent);
    }
    let principals: Vec<&str> = report
        .allowance
        .signatures
        .iter()
        .map(|s| s.principal.as_str())
        .collect();
    let mut text = format!(
        "{} {state} {}: {counts}; signed by {}\n",
        allowance.id(),
        escape_truncated(&allowance.terms().operation, room),
        escape_truncated(&principals.join(", "), room),
    );
    for words in allowance.describe().iter().skip(1) {
        let _ = writeln!(text, "    {}", escape_truncated(words, room));
    }
    text
}

/// Revokes an allowance at once: no use not yet counted is approved by it. Saying no needs no
/// terminal.
pub(crate) fn revoke(gate: &Gate, id: RequestId, reason: &str, json: bool) -> anyhow::Result<Exit> {
    let report = gate.revoke_allowance(id, &decision(reason))?;
    if json {
        output::stdout(&render::json(&report.to_json())?)?;
    } else {
        output::stdout(&format!(
            "revoked allowance {id} ({} used)\n",
            report.usage.uses
        ))?;
    }
    Ok(Exit::Done)
}
