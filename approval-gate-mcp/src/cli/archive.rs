//! `archive`: move finished, old requests out of the live store.

use std::fmt::Write as _;

use approval_gate::Gate;
use approval_gate::limits::MIN_ARCHIVE_AGE_DAYS;

use super::Exit;
use super::output;
use crate::display::escape;

pub(crate) fn archive(gate: &Gate, older_than_days: u32, dry_run: bool) -> anyhow::Result<Exit> {
    if older_than_days < MIN_ARCHIVE_AGE_DAYS {
        output::stderr_line(&format!(
            "approval-gate: note: only requests created and expired at least \
             {MIN_ARCHIVE_AGE_DAYS} days ago are archived"
        ));
    }
    let report = if dry_run {
        gate.plan_archive(older_than_days)?
    } else {
        gate.archive(older_than_days)?
    };
    let ids = &report.archived;
    let verb = if dry_run { "would archive" } else { "archived" };
    let mut text = String::new();
    for id in ids {
        let _ = writeln!(text, "{verb} {id}");
    }
    for record in &report.skipped {
        let _ = writeln!(
            text,
            "skipped {}: unreadable ({}); see `approval-gate doctor`",
            record.id(),
            escape(record.problem())
        );
    }
    let noun = if ids.len() == 1 {
        "request"
    } else {
        "requests"
    };
    let _ = write!(text, "{verb} {} {noun}", ids.len());
    if !report.skipped.is_empty() {
        let _ = write!(text, ", skipped {} unreadable", report.skipped.len());
    }
    text.push_str(if dry_run {
        " (dry run: nothing changed)\n"
    } else {
        "\n"
    });
    output::stdout(&text)?;
    Ok(Exit::Done)
}
