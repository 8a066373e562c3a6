//! `doctor`: what in the store needs a human's attention. It changes nothing.

use std::fmt::Write as _;

use approval_gate::{DeadLetter, Error, Gate, HealthReport};
use serde_json::{Value, json};

use crate::settings::Settings;
use crate::term::Exit;
use crate::term::display::escape;
use crate::term::output;
use crate::term::render;

pub(crate) fn doctor(settings: &Settings, gate: &Gate, json: bool) -> anyhow::Result<Exit> {
    let report = gate.check_health()?;
    // Messages a notifier gave up on: for a human to look at, not a problem of the store. A
    // ledger that cannot be read is one, reported with the rest.
    let dead = gate.dead_letters();
    // Not a problem of the store's: a limit of the set-up, said on stderr.
    if let Some(warning) = super::ledger::rewritable_store(settings) {
        output::stderr_line(&format!("approval-gate: doctor: {warning}"));
    }
    let text = if json {
        render::json(&as_json(gate, &report, &dead))?
    } else {
        as_text(gate, &report, &dead)
    };
    output::stdout(&text)?;
    Ok(if report.is_healthy() && dead.is_ok() {
        Exit::Done
    } else {
        Exit::Refused
    })
}

fn as_json(gate: &Gate, report: &HealthReport, dead: &Result<Vec<DeadLetter>, Error>) -> Value {
    let audit = match &report.audit {
        Ok(summary) => json!({ "ok": true, "lines": summary.lines, "lastHash": summary.last_hash }),
        Err(error) => json!({ "ok": false, "code": error.code(), "message": error.to_string() }),
    };
    let stray: Vec<String> = report
        .stray
        .iter()
        .map(|path| path.to_string_lossy().into_owned())
        .collect();
    let (dead, ledger) = match dead {
        Ok(dead) => (json!(dead), json!({ "ok": true })),
        Err(error) => (
            json!([]),
            json!({ "ok": false, "code": error.code(), "message": error.to_string() }),
        ),
    };
    json!({
        "ok": report.is_healthy() && ledger["ok"] == true,
        "dir": gate.location().to_string(),
        "unreadable": report.unreadable,
        "audit": audit,
        "stray": stray,
        "deadLetters": dead,
        "notifyLedger": ledger,
    })
}

fn as_text(gate: &Gate, report: &HealthReport, dead: &Result<Vec<DeadLetter>, Error>) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "store {}", escape(&gate.location().to_string()));
    let mut problems = 0;
    for record in &report.unreadable {
        problems += 1;
        let _ = writeln!(
            text,
            "unreadable request {}: {}; it refuses everything until its record is repaired or removed",
            record.id(),
            escape(record.problem())
        );
    }
    match &report.audit {
        Ok(summary) => {
            let _ = writeln!(text, "audit log ok: {} lines", summary.lines);
        }
        Err(error) => {
            problems += 1;
            let _ = writeln!(text, "audit log: {}", escape(&error.to_string()));
        }
    }
    for path in &report.stray {
        problems += 1;
        let _ = writeln!(
            text,
            "stray entry {}: not written by approval-gate; move it out of the store",
            escape(&path.to_string_lossy())
        );
    }
    let letters = match dead {
        Ok(letters) => letters.as_slice(),
        Err(error) => {
            problems += 1;
            let _ = writeln!(
                text,
                "notifications ledger: {}; `approval-gate notify` will not start until it is \
                 repaired or moved away (its messages are then sent again)",
                escape(&error.to_string())
            );
            &[]
        }
    };
    for letter in letters {
        let _ = writeln!(
            text,
            "dead letter {} at {} after {} attempt(s): {}; `approval-gate notify` gave up on it",
            escape(&letter.key),
            letter.at,
            letter.attempts,
            escape(&letter.reason)
        );
    }
    if problems == 0 {
        text.push_str("healthy\n");
    } else {
        let noun = if problems == 1 { "problem" } else { "problems" };
        let _ = writeln!(text, "{problems} {noun} found");
    }
    text
}
